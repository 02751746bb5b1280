"""The search query language: ``parse(text) -> Query`` (search-engine conventions), and its pure helpers.

Syntax (``HELP`` below is the same for ``samctl search --help``): plain words are ranked and any may
match; ``+word`` is required, ``-word`` excluded (only at the start of the query or after whitespace:
``spotter-dov``, ``load-config``, ``v1.2`` and ``don't`` are single words); ``"an exact phrase"`` is
required (``+"..."`` the same, ``-"..."`` excluded); ``prefix*`` matches the words that start with it;
``role:``, ``in:``, ``title:``, ``store:`` and ``tool:`` filter.  A ``name:value`` whose name is not one of these
is a plain word (``http://x``, ``C:\\tmp``, ``12:30``).  Questions are read as people type them: a
lone ``-`` or ``+`` (a dash between words), a run of signs (``--x``), an unbalanced quote and a ``*``
that cannot end a prefix are punctuation, and the words around them are words; errors are left for
the misuse of a filter (``role:bot``) or a query that only excludes.  Invariants: pure (no I/O, no numpy, no click,
no store imported); on any ``str`` ``parse`` returns a ``Query`` or raises ``QueryError`` (a usage
error, exit 2) whose message says what is wrong and at which character (counted from 1); a query has
at most ``MAX_TERMS`` terms, so no query can make the engine do unbounded work.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from samctl.errors import UsageError
from samctl.safetext import quoted
from samctl.search.text import WORD_CHARS, fold, folded_title, tokens, words  # noqa: F401

MAX_TERMS = 256  # words (a phrase's each), prefixes and filters of one query
MIN_PREFIX = 2  # characters before a *: a shorter prefix would expand to most of the vocabulary
ROLES = ("user", "assistant", "tool")
WHERE = ("memories", "messages", "args", "all")  # args: the tool calls' names and arguments only
FILTERS = ("role", "in", "title", "store", "tool")
_FILTER = re.compile(r"([A-Za-z]+):")


class QueryError(UsageError):
    """A malformed query: the message says what is wrong and where (exit 2)."""


@dataclass(frozen=True)
class Query:
    """A parsed query.  Words and phrases are kept as typed (the engine tokenises them with
    ``text.query_terms``/``tokens``); prefixes are folded (``text.fold``) and not stemmed.

    - ``words``: ranked; any may match, more matches rank higher.
    - ``required`` (``+word``) / ``excluded`` (``-word``): a hit holds / does not hold the word's terms.
    - ``phrases`` (``"..."``, ``+"..."``): required, and ranked by their words; a hit holds each
      (``holds_phrase``).  ``excluded_phrases`` (``-"..."``): a hit holds none.
    - ``prefixes`` (``budg*``): ranked like words, any indexed word starting with one matches;
      ``required_prefixes`` (``+budg*``) / ``excluded_prefixes`` (``-budg*``).
    - ``roles``: a message's role is one of them (empty: any); ``where``: None or memories|messages|all
      (``in:``); ``titles``: the conversation's title holds each (``title_matches``); ``stores``: the
      store kind is one of them (empty: any); ``tools``: a tool call of one of these tools (empty: any row).
    """

    words: tuple = ()
    required: tuple = ()
    excluded: tuple = ()
    phrases: tuple = ()
    excluded_phrases: tuple = ()
    prefixes: tuple = ()
    required_prefixes: tuple = ()
    excluded_prefixes: tuple = ()
    roles: frozenset = frozenset()
    where: str | None = None
    titles: tuple = ()
    stores: frozenset = frozenset()
    tools: frozenset = frozenset()  # tool:NAME: a tool call of one of these tools (folded)

    @property
    def ranked_text(self) -> str:
        """The text whose terms are ranked (for ``text.query_terms``): words, required words, phrases."""
        return " ".join(self.words + self.required + self.phrases)

    def is_empty(self) -> bool:
        """True when nothing is ranked or required (only filters, or words with no letters or digits)."""
        return not (self.words or self.required or self.phrases or self.prefixes or self.required_prefixes)


def _sequence(text: str) -> list[str]:
    """The words of TEXT in order, as phrases compare them: folded, not stemmed; a compound split at its
    hyphens and dots (``Load-Config`` -> load, config); a script without spaces one character at a time."""
    out = []
    for w, gram in words(text):
        if gram:
            if len(w) == 1:  # (words() gives a run's characters, then its pairs: the pairs are redundant here)
                out.append(w)
        elif "-" in w or "." in w:
            out.extend(p for p in _COMPOUND.split(w) if p)
        else:
            out.append(w)
    return out


_COMPOUND = re.compile(r"[-.]")


def phrase_terms(phrase: str) -> list[str]:
    """The index terms of a phrase, in order (``text.tokens``): what a hit must hold to be a candidate."""
    return tokens(phrase)


def holds_phrase(text: str, phrase: str) -> bool:
    """True when TEXT holds the phrase's words consecutively, compared folded and unstemmed, with
    hyphens and dots between words' parts as spaces: ``"load config"`` finds ``Load-Config`` and
    ``"load-config"`` finds ``load config``; punctuation between words does not matter (``"hello
    world"`` finds ``Hello, world!``).  A phrase with no words is held by nothing."""
    want = _sequence(phrase)
    if not want:
        return False
    have = _sequence(text)
    n = len(want)
    first = want[0]
    for i, w in enumerate(have):
        if w == first and have[i : i + n] == want:
            return True
    return False


def phrase_test(phrase: str):
    """``holds_phrase(text, phrase)`` as a function of ``text``, faster on texts without the phrase: a
    regular expression over the folded text first (the phrase's words with only separators between them,
    a superset of what ``holds_phrase`` accepts), the word-by-word comparison only where it matches.
    Its ``many(texts)`` answers for several texts at once (see ``PhraseTest.many``)."""
    return PhraseTest(phrase)


class PhraseTest:
    """``phrase_test``'s function: ``test(text)``, and ``test.many(texts)``."""

    SEP = "\n\0\n"  # (no word character: the loose expression may cross it; ``many`` sees where it does)

    def __init__(self, phrase: str):
        self.phrase = phrase
        want = _sequence(phrase)
        between = f"(?:[^{WORD_CHARS[1:-1]}]|[-'.])*"  # what may lie between two words of the sequence
        self.loose = re.compile(between.join(re.escape(w) for w in want)) if want else None

    def __call__(self, text: str) -> bool:
        if self.loose is None:
            return False
        folded = fold(text.replace("\u2019", "'").replace("\u2018", "'"))  # (as text.words folds)
        return self.loose.search(folded) is not None and holds_phrase(text, self.phrase)

    def many(self, texts: list) -> list[bool]:
        """``[test(t) for t in texts]``, running the loose expression once over the folded texts joined.
        A text with a match of its own is touched by a match of the scan; each text touched is searched
        again within its own span (a match of the scan may cross a separator)."""
        if self.loose is None:
            return [False] * len(texts)
        # (each text folded alone, as ``test(text)`` folds it: a text that is not ASCII costs its own
        # folding, not the batch's)
        parts = [fold(t.replace("\u2019", "'").replace("\u2018", "'")) for t in texts]
        if any(self.SEP in p for p in parts):  # (a text holding the separator: one by one)
            return [self(t) for t in texts]
        starts = list(itertools.accumulate((len(p) + len(self.SEP) for p in parts), initial=0))
        folded = self.SEP.join(parts)
        maybe: set = set()
        for m in self.loose.finditer(folded):
            first = bisect.bisect_right(starts, m.start()) - 1
            last = bisect.bisect_right(starts, max(m.end() - 1, m.start())) - 1
            maybe.update(range(first, last + 1))
        out = [False] * len(texts)
        end = len(self.SEP)
        for i in maybe:  # (its own match, within its own span: what ``test(text)`` would find)
            own = self.loose.search(folded, starts[i], starts[i + 1] - end) is not None
            out[i] = own and holds_phrase(texts[i], self.phrase)
        return out


def title_matches(title: str | None, word: str) -> bool:
    """True when the title holds WORD, both folded (case, accents) and their whitespace runs made one space."""
    if not title:
        return False
    return " ".join(fold(word).split()) in " ".join(fold(title).split())


_ODD_SPACES = ("  ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")  # (ASCII space runs)


class FoldedTitles:
    """Titles and their ``folded_title`` (the index keeps them) made ready for ``titles_matching`` once,
    for a process that asks again (browse, the in-process bench): the folded titles joined, and where
    each starts."""

    def __init__(self, titles: list, folded: list):
        self.titles = titles
        self.alone = {i for i, t in enumerate(titles) if t and "\0" in t}
        self.big = "\0".join(f or "" for f in folded)
        self.starts = _starts(self.big)

    def matching(self, words: list) -> set[int]:
        return _matching(self.titles, words, self.big, self.alone, self.starts)


def titles_matching(titles: list, words: list, folded: list | None = None) -> set[int]:
    """The indexes of ``titles`` that ``title_matches(title, word)`` for every one of ``words``, folded as
    one string (a call per title costs more than the search): folding is character by character, so the
    titles joined by NUL fold to their foldings joined by NUL.  A title or word holding a NUL is matched alone.
    ``folded``: the titles' ``folded_title`` already (the index keeps them): only the words are folded."""
    if folded is not None:
        return FoldedTitles(titles, folded).matching(words)
    alone = {i for i, t in enumerate(titles) if t and "\0" in t}
    pieces = ["" if not t or i in alone else t for i, t in enumerate(titles)]
    # ASCII titles fold by lower(), all at once; the others one by one (then lower() must leave them be)
    pieces = [t if t.isascii() else fold(t) for t in pieces]
    big = "\0".join(pieces)
    lowered = big.lower()
    if len(lowered) == len(big) and all(f == f.lower() for f in pieces if not f.isascii()):
        big = lowered
    else:  # (a folding lower() would change: every title folded alone)
        big = "\0".join([fold(t) for t in pieces])
    # Each title's runs of spaces made one, as title_matches does: the titles that are not ASCII one by
    # one (a word has no space at its ends: a title's own are the same as its neighbours'), the rest at
    # once, and only if one of them has a space that is not " " or two (NUL is no space).
    if not big.isascii():
        big = "\0".join([t if t.isascii() else " ".join(t.split()) for t in big.split("\0")])
    if any(c in big for c in _ODD_SPACES):
        big = " ".join(big.split())
    return _matching(titles, words, big, alone)


def _starts(big: str) -> list[int]:
    """Where each title of BIG (titles joined by NUL) starts, and its end plus one."""
    return list(itertools.accumulate((len(t) + 1 for t in big.split("\0")), initial=0))


def _matching(titles: list, words: list, big: str, alone: set, starts: list | None = None) -> set[int]:
    """``titles_matching`` over BIG, the titles' folded forms joined by NUL ("" for those in ALONE): every
    match of a word found by one regular expression scan, its title by a binary search of the titles'
    starts (a common word is in tens of thousands of titles: no Python step per character or title)."""
    starts = _starts(big) if starts is None else starts
    out = None
    for word in words:
        w = " ".join(fold(word).split())
        if "\0" in w:
            got = {i for i, t in enumerate(titles) if title_matches(t, word)}
        elif not w:  # ("" is in every title)
            got = {i for i, t in enumerate(titles) if t}
        else:
            got = {i for i in alone if title_matches(titles[i], word)}
            got.update(bisect.bisect_right(starts, m.start()) - 1 for m in re.finditer(re.escape(w), big))
        out = got if out is None else out & got
    return out if out is not None else set(range(len(titles)))


# ---------------------------------------------------------------------------------------------- parsing


class _Parser:
    def __init__(self, text: str, stores):
        self.text = text
        self.stores = None if stores is None else sorted({fold(s) for s in stores})
        self.n = 0  # terms so far
        self.out: dict[str, list] = {
            k: []
            for k in (
                "words",
                "required",
                "excluded",
                "phrases",
                "excluded_phrases",
                "prefixes",
                "required_prefixes",
                "excluded_prefixes",
                "titles",
            )
        }
        self.roles: set = set()
        self.stores_wanted: set = set()
        self.tools: set = set()
        self.where: str | None = None
        self.where_at = 0

    def count(self, n: int = 1) -> None:
        self.n += n
        if self.n > MAX_TERMS:
            raise QueryError(
                f"the query has more than {MAX_TERMS} terms (words, phrases' words, prefixes and "
                f"filters); use fewer words"
            )

    def quote(self, i: int) -> tuple[str, int]:
        """The text between the quote at I and its closing quote, and the index after it."""
        j = self.text.find('"', i + 1)
        if j < 0:
            raise QueryError(f"unclosed quote at character {i + 1}", 'close it with another ", or leave the quote out')
        return self.text[i + 1 : j], j + 1

    def run(self) -> Query:
        text, i, size = self.text, 0, len(self.text)
        while i < size:
            if text[i].isspace():
                i += 1
                continue
            start = i
            sign = ""
            if text[i] in "+-" and (i == 0 or text[i - 1].isspace()):
                # a sign is an operator only directly before a word or a quote: a lone one (a dash
                # between words) and a run of them (--, +-) are punctuation, as in the text searched
                j = i
                while j < size and text[j] in "+-":
                    j += 1
                if j - i == 1 and j < size and not text[j].isspace():
                    sign = text[i]
                    i = j
                else:
                    i = j
                    continue
            if text[i] == '"':
                closed = self.text.find('"', i + 1)
                if closed < 0:  # an unbalanced quote is punctuation: the words after it are words
                    i += 1
                    continue
                body, i = self.text[i + 1 : closed], closed + 1
                self.phrase(body, sign, start)
                continue
            j = i
            while j < size and not text[j].isspace() and text[j] != '"':
                j += 1
            word = text[i:j]
            m = _FILTER.match(word)
            if m and m.group(1).lower() in FILTERS:
                value = word[m.end() :]
                if j < size and text[j] == '"' and not value:
                    value, j = self.quote(j)
                self.filter(m.group(1).lower(), value, sign, start, text[start:j])
            elif word.endswith("*"):
                self.prefix(word[:-1], sign, start)
            else:
                self.word(word, sign, start)
            i = j
        return self.query()

    def phrase(self, body: str, sign: str, at: int) -> None:
        n = len(_sequence(body))
        if not n:  # empty quotes, or quoted punctuation: nothing to search for, as in a text
            return
        self.count(n)
        self.out["excluded_phrases" if sign == "-" else "phrases"].append(body)

    def word(self, word: str, sign: str, at: int) -> None:
        n = len(_sequence(word))
        if not n:
            return  # punctuation alone, signed or not: nothing to search for (as the tokenizer drops it from a text)
        self.count(n)
        self.out[{"": "words", "+": "required", "-": "excluded"}[sign]].append(word)

    def prefix(self, stem: str, sign: str, at: int) -> None:
        # a * that cannot end a prefix (a lone one, a second one, after several words or a short stem) is
        # punctuation: the word before it is searched as a word
        stem = stem.rstrip("*")
        ws = words(stem)
        if not stem or not ws:
            return
        if any(gram for _, gram in ws) or len(ws) > 1 or len(ws[0][0]) < MIN_PREFIX:
            # a script without spaces is indexed as characters and their pairs, which already match
            # inside longer words: its prefix is the word itself
            self.word(stem, sign, at)
            return
        p = ws[0][0]
        self.count()
        self.out[{"": "prefixes", "+": "required_prefixes", "-": "excluded_prefixes"}[sign]].append(p)

    def filter(self, name: str, value: str, sign: str, at: int, raw: str) -> None:
        where = f"{quoted(raw)} at character {at + 1}"
        if sign:
            raise QueryError(f"{where}: a filter cannot be required or excluded (leave out the {sign})")
        self.count()
        if name == "title":
            value = value.removesuffix("*")  # (a title matches by containment: budg* is budg)
            if not value.strip():
                raise QueryError(f'{where}: title: needs a word (title:budget or title:"weekend trip")')
            self.out["titles"].append(value)
            return
        v = fold(value.strip())
        if name == "role":
            if v not in ROLES:
                raise QueryError(f"{where}: use role:user, role:assistant or role:tool")
            self.roles.add(v)
        elif name == "tool":
            if not v or not words(v):
                raise QueryError(f"{where}: tool: needs a tool's name (tool:Bash)")
            self.tools.add(v)
        elif name == "in":
            if v not in WHERE:
                raise QueryError(f"{where}: use in:memories, in:messages, in:args or in:all")
            if self.where is not None and self.where != v:
                raise QueryError(
                    f"in:{self.where} (character {self.where_at + 1}) and in:{v} (character {at + 1}): choose one"
                )
            self.where, self.where_at = v, at
        else:  # store
            v = v.replace("_", "-")
            if not v:
                raise QueryError(f"{where}: store: needs a store's name")
            if self.stores is not None and v not in self.stores:
                raise QueryError(
                    f"{where}: samctl reads "
                    + ", ".join(self.stores[:-1])
                    + (" or " if len(self.stores) > 1 else "")
                    + "".join(self.stores[-1:])
                )
            self.stores_wanted.add(v)

    def query(self) -> Query:
        o = self.out
        if (o["excluded"] or o["excluded_phrases"] or o["excluded_prefixes"]) and not (
            o["words"] or o["required"] or o["phrases"] or o["prefixes"] or o["required_prefixes"]
        ):
            raise QueryError("the query only excludes (-word); add a word to search for")
        return Query(
            **{k: tuple(v) for k, v in o.items()},
            roles=frozenset(self.roles),
            where=self.where,
            stores=frozenset(self.stores_wanted),
            tools=frozenset(self.tools),
        )


def parse(text: str, stores=None) -> Query:
    """The Query of TEXT; QueryError (exit 2) for a malformed one.  ``stores``: the store kinds samctl
    reads (``samctl.stores.STORES`` keys), for ``store:NAME``; None accepts any name (folded)."""
    return _Parser(text, stores).run()


HELP = """\b
Query language (search-engine conventions):
  portland budget    ranked words: any may match, more matches rank higher
  +budget  -draft    required word; excluded word (- only at a word's start:
                     load-config, spotter-dov, v1.2 and don't are one word)
  "weekend trip"     exact phrase (required); -"..." excludes one
  budg*              words starting with budg (2 characters at least)
  role:user          role:user|assistant|tool (repeatable: any of them)
  in:memories        in:memories|messages|args|all (args: tool calls only)
  tool:Bash          calls of that tool (its name and arguments are searched)
  title:trip         the conversation's title holds it; title:"weekend trip"
  store:mermaid      only that kind of store (repeatable)
Other name:value words (http://x, 12:30) are plain words; a lone - or +, an
unbalanced quote and a stray * are punctuation. A quoted phrase found nowhere
is searched as its words (a line on stderr says so). A query that starts
with - goes after --:  samctl search -- -draft +budget"""
