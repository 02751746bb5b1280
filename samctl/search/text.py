"""Tokenizer for search: lowercase, accents folded, Porter stems, stop words, CJK/Thai n-grams.

``tokens(text)`` gives the index terms of a text, in order; ``query_terms(text)`` the terms of a
query with stop words dropped unless the query has nothing else.  Both sides use the same
function, so a word is found exactly when its stem is.  Invariants: pure (no state), deterministic,
never raises on any ``str`` (NUL, lone surrogates, RTL, emoji included).
"""

from __future__ import annotations

import codecs
import functools
import re
import time
import unicodedata

TERMS_NAME = "fold-porter-cjk2-v1"  # names what tokens() gives: change it whenever tokens() changes

# Words of text in scripts written without spaces: Han, Hiragana, Katakana, Hangul, Thai.
_NOSPACE = (
    "\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
    "\u1100-\u11ff\u3130-\u318f\uff66-\uff9f"
)
_NOSPACE_RUN = re.compile(f"[{_NOSPACE}]+")
# Word characters (a regular-expression class): \w plus the marks inside words of Hebrew, Arabic, Indic, Thai, Lao, Myanmar, Khmer.
WORD_CHARS = "[\\w\u0591-\u05bd\u05bf-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0900-\u0dff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]"
_W = WORD_CHARS
# A word: word characters, with inner hyphens, apostrophes or dots kept together (spotter-dov, don't, v1.2).
_TOKEN = re.compile(f"{_W}+(?:[-'.]{_W}+)*")
# _TOKEN for a text known to be ASCII: the same matches there (no class beyond \w holds an ASCII
# character), found about 1.5x faster (tokenizing is a fifth of an index build).
_ASCII_TOKEN = re.compile(r"\w+(?:[-'.]\w+)*", re.ASCII)

# English stop words (Snowball's list, trimmed to function words; pronouns and auxiliaries included).
STOP = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
now of off on once only or other our ours ourselves out over own same she should so some such than that the
their theirs them themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself yourselves s t d ll m
re ve y ain isn aren wasn weren hasn haven hadn doesn don didn won wouldn shan shouldn can't cannot couldn
mustn needn let's i'm i've i'd i'll you're you've you'd you'll he's she's it's we're we've we'd we'll
they're they've they'd they'll that's there's what's who's where's when's how's isn't aren't wasn't
weren't hasn't haven't hadn't doesn't don't didn't won't wouldn't shouldn't couldn't
""".split()
)


_ACCENTS = re.compile(
    "[\u0591-\u05bd\u05bf-\u05c7\u064b-\u065f\u0670\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]"
)


def fold(text: str) -> str:
    """Lowercase, accents removed, NFC: 'Zürich' -> 'zurich'; kana voicing marks and Hangul kept."""
    if text.isascii():
        return text.lower()
    quick = _NON_ASCII.sub(_fold_to_ascii, text)
    if quick.isascii():  # (every character folds to ASCII alone: the same as folding the whole, faster)
        return quick.lower()
    return fold_whole(text)


def folded_title(title: str | None) -> str | None:
    """TITLE as a ``title:`` filter compares it (``query.title_matches``: folded, whitespace runs one space),
    as the index keeps it; None for no title, or one holding a NUL (matched alone: ``query.titles_matching``)."""
    if not title or "\0" in title:
        return None
    return " ".join(fold(title).split())


def fold_whole(text: str) -> str:
    """``fold`` by its definition: case folding, NFKD, the marks of ``_ACCENTS`` removed, NFC."""
    text = _ACCENTS.sub("", unicodedata.normalize("NFKD", text.casefold()))
    return unicodedata.normalize("NFC", text)


_NON_ASCII = re.compile("[^\x00-\x7f]+")


@functools.lru_cache(maxsize=1)
def ascii_folds() -> dict[str, str]:
    """Character -> its ``fold_whole`` where that is ASCII without capitals (é -> e, Ö -> o, ﬁ -> fi, a
    combining accent -> ""), for the blocks where such characters are.  Folding a text whose every
    character is ASCII or here is folding each character alone: case folding and NFKD act on one
    character at a time, the marks they leave are all removed, NFC leaves ASCII as it is, and the
    ASCII left is lowered as it would have been (ℋ, which folds to H, is left out)."""
    return {
        chr(c): f
        for a, b in ((0x80, 0x370), (0x1E00, 0x1F00), (0x2000, 0x2C00), (0xFB00, 0xFB50), (0xFF00, 0xFFF0))
        for c in range(a, b)
        if (f := fold_whole(chr(c))).isascii() and f == f.lower()
    }


@functools.lru_cache(maxsize=1)
def kept_alone() -> frozenset:
    """Characters beyond ASCII that ``fold_whole`` keeps as they are wherever they stand, and that are part of
    no word: symbols and punctuation (°, €, —, “, →, emoji) and the joiners of emoji (ZWJ, variation
    selectors) with no decomposition, no case, no combining class; none of them joins a neighbour in NFC
    (the characters that do are marks, Indic vowel signs and Hangul jamo), for the blocks where they are.
    ``folded_words`` reads them as spaces when indexing (made once per process, in a few ms: the query's
    ``fold`` of a few texts does not wait for it)."""
    word = re.compile(WORD_CHARS)
    out = set()
    for a, b in (
        (0x80, 0x370),
        (0x2000, 0x2C00),
        (0x3000, 0x3040),
        (0xFE00, 0xFE10),
        (0xFF00, 0xFFF0),
        (0x1F000, 0x1FB00),
    ):
        for c in map(chr, range(a, b)):
            # (no decomposition, no case, not an accent: ``fold_whole`` keeps it, without calling it)
            if (
                (unicodedata.category(c)[0] in "SP" or c == "\u200d" or "\ufe00" <= c <= "\ufe0f")
                and not unicodedata.decomposition(c)
                and not unicodedata.combining(c)
                and c.casefold() == c.lower() == c.upper() == c
                and not _ACCENTS.match(c)
                and not word.match(c)
                and not _NOSPACE_RUN.match(c)
            ):
                out.add(c)
    return frozenset(out)


def _fold_to_ascii(m: re.Match) -> str:
    """A run of non-ASCII characters, each folded alone where that gives ASCII, else left as it is."""
    table = ascii_folds()
    g = m.group()
    return table.get(g, g) if len(g) == 1 else "".join([table.get(c, c) for c in g])


@functools.lru_cache(maxsize=1)
def _as_ascii_table() -> dict[str, str]:
    """Character -> what ``folded_words`` reads in its place: its fold alone (``ascii_folds``), a space for
    one of ``kept_alone`` (no word's, as a space), ' for the typographic apostrophes."""
    table = dict.fromkeys(kept_alone(), " ")
    table.update(ascii_folds())
    table.update({"\u2019": "'", "\u2018": "'"})
    return table


def _as_ascii(exc: UnicodeEncodeError) -> tuple[str, int]:
    """The error handler "samctl-words" of an ASCII encoding: a run of characters beyond ASCII as
    ``_as_ascii_table`` says (KeyError, out of the encoding, for a character it lacks)."""
    table = _as_ascii_table()
    return "".join([table[c] for c in exc.object[exc.start : exc.end]]), exc.end


codecs.register_error("samctl-words", _as_ascii)


def _ngrams(run: str) -> list[str]:
    """A run of a no-space script: every character and every pair of adjacent characters."""
    if len(run) == 1:
        return [run]
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]


def words(text: str) -> list[tuple[str, bool]]:
    """(word, is_ngram) in order, folded but not stemmed; apostrophes normalised to '."""
    text = fold(text.replace("\u2019", "'").replace("\u2018", "'"))
    out = []
    for w in _TOKEN.findall(text):
        if w.isascii() or not _NOSPACE_RUN.search(w):
            out.append((w, False))
            continue
        # a script without spaces: its runs as n-grams, what lies between them as words
        at = 0
        for m in _NOSPACE_RUN.finditer(w):
            out.extend((x, False) for x in _TOKEN.findall(w[at : m.start()]))
            out.extend((g, True) for g in _ngrams(m.group()))
            at = m.end()
        out.extend((x, False) for x in _TOKEN.findall(w[at:]))
    return out


@functools.lru_cache(maxsize=1 << 17)
def _terms_of(word: str) -> tuple[str, ...]:
    """Index terms of one folded word: its stem; for a compound (a-b, a.b) the whole, each part, the join."""
    if "'" in word:  # possessives and contractions: caroline's -> caroline, o'brien -> obrien
        if word in STOP:
            return (word,)
        word = word.removesuffix("'s").replace("'", "")
    if "-" in word or "." in word:  # spotter-dov: the whole, each part, and the parts joined (de-stress ~ destress)
        parts = [p for p in re.split(r"[-.]", word) if p]
        return (word, *(stem(p) for p in parts), stem("".join(parts)))
    return (stem(word),)


def tokens(text: str) -> list[str]:
    """Index terms of TEXT in order (stop words kept: a query of only stop words must still match)."""
    out: list[str] = []
    for w, gram in words(text):
        if gram:
            out.append(w)
        else:
            out.extend(_terms_of(w))
    return out


def spans(text: str, terms: set) -> list[tuple[int, int]]:
    """(start, end) in TEXT of each word whose index terms meet TERMS (for highlighting), in order."""
    out = []
    for m in _TOKEN.finditer(text):
        w = m.group()
        if w.isascii():
            hit = not terms.isdisjoint(_terms_of(w.lower()))
        else:
            hit = any((g if gram else t) in terms for g, gram in words(w) for t in ((g,) if gram else _terms_of(g)))
        if hit:
            out.append(m.span())
    return out


def matched_words(text: str, terms: set, most: int) -> list[str]:
    """Up to MOST distinct words of TEXT (as written) whose index terms meet TERMS."""
    seen: dict = {}
    for a, b in spans(text, terms):
        seen.setdefault(text[a:b].lower(), text[a:b])
        if len(seen) >= most:
            break
    return list(seen.values())


def folded_words(text: str) -> list[str] | None:
    """The words of TEXT folded as ``words`` folds them, not yet made terms (``word_terms``); None
    when TEXT holds a script written without spaces (its terms then come from ``tokens``)."""
    if text.isascii():
        return _ASCII_TOKEN.findall(text.lower())
    # Most such texts are ASCII with a few accents and symbols: the encoder finds them (a regular
    # expression reads every character again), each run made ASCII by ``_as_ascii``.
    try:
        plain = text.encode("ascii", "samctl-words")
    except KeyError:
        pass
    else:
        return _ASCII_TOKEN.findall(plain.decode("ascii").lower())
    low = fold(text.replace("\u2019", "'").replace("\u2018", "'"))  # (as ``words`` folds)
    if low.isascii():
        return _ASCII_TOKEN.findall(low)
    return None if _NOSPACE_RUN.search(low) else _TOKEN.findall(low)


def word_terms(word: str) -> tuple[str, ...]:
    """The index terms of one word of ``folded_words`` (one, or several for a compound)."""
    return _terms_of(word)


def query_terms(text: str) -> list[str]:
    """Terms of a query: stop words dropped, unless that would leave nothing (then all are kept)."""
    ws = words(text)
    kept = [t for w, gram in ws for t in ([w] if gram else _terms_of(w)) if gram or w not in STOP]
    if kept:
        return kept + query_dates(text)
    return [t for w, gram in ws for t in ([w] if gram else _terms_of(w))]


_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)


def month_of(term: str) -> int | None:
    """1-12 if TERM is the index term of a month's name (as ``date_terms`` gives it), else None."""
    return next((i + 1 for i, m in enumerate(_MONTHS) if stem(m) == term), None)


_MONTH_RE = "|".join(m[:3] + r"[a-z]*" for m in _MONTHS)
_DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE}),?\s+(\d{{4}})\b")
_MONTH_FIRST = re.compile(rf"\b({_MONTH_RE})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")


def date_terms(ts: float | None) -> list[str]:
    """Terms of a message's date (UTC): its month's name, its year (as tokens() gives them) and its day (ISO)."""
    if ts is None or ts != ts:
        return []
    try:
        t = time.gmtime(ts)
    except (OverflowError, OSError, ValueError):
        return []
    return [stem(_MONTHS[t.tm_mon - 1]), str(t.tm_year), f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"]


def _day(month: str, day: str, year: str) -> list[str]:
    m = next((i for i, name in enumerate(_MONTHS) if name.startswith(month[:3])), None)
    if m is None or not 1 <= int(day) <= 31:
        return []
    return [f"{int(year):04d}-{m + 1:02d}-{int(day):02d}"]


def query_dates(text: str) -> list[str]:
    """ISO day terms of the dates a query spells out: '9 November, 2022', 'May 7th 2023'."""
    text = fold(text)
    out = [t for d, m, y in _DAY_FIRST.findall(text) for t in _day(m, d, y)]
    return out + [t for m, d, y in _MONTH_FIRST.findall(text) for t in _day(m, d, y)]


# ---------------------------------------------------------------- Porter stemmer
# M. F. Porter, "An algorithm for suffix stripping", 1980, as in his reference implementation
# (with its two departures from the paper: -bli -> -ble and -logi -> -log), the one FTS5's porter uses.


def _cons(w: str, i: int) -> bool:
    c = w[i]
    if c in "aeiou":
        return False
    if c == "y":
        return i == 0 or not _cons(w, i - 1)
    return True


def _m(s: str) -> int:
    """Porter's measure: the number of VC sequences in s."""
    n, i, size = 0, 0, len(s)
    while i < size and _cons(s, i):
        i += 1
    while True:
        while i < size and not _cons(s, i):
            i += 1
        if i >= size:
            return n
        while i < size and _cons(s, i):
            i += 1
        n += 1


def _has_vowel(s: str) -> bool:
    return any(not _cons(s, i) for i in range(len(s)))


def _double(s: str) -> bool:
    return len(s) >= 2 and s[-1] == s[-2] and _cons(s, len(s) - 1)


def _cvc(s: str) -> bool:
    n = len(s)
    return n >= 3 and _cons(s, n - 3) and not _cons(s, n - 2) and _cons(s, n - 1) and s[-1] not in "wxy"


_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""))
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def _replace(w: str, table, min_m: int) -> str:
    """The first suffix of TABLE that W ends with is replaced when the stem's measure > min_m."""
    for suf, rep in table:
        if w.endswith(suf):
            s = w[: len(w) - len(suf)]
            return s + rep if _m(s) > min_m else w
    return w


def stem(w: str) -> str:
    """Porter stem of a lowercase word; words of 1-2 letters and words with non a-z letters unchanged."""
    if len(w) <= 2 or not w.isascii() or not w.isalpha():
        return w
    # step 1a
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("ss"):
        pass
    elif w.endswith("s"):
        w = w[:-1]
    # step 1b
    if w.endswith("eed"):
        if _m(w[:-3]) > 0:
            w = w[:-1]
    else:
        for suf in ("ed", "ing"):
            if w.endswith(suf) and _has_vowel(w[: -len(suf)]):
                w = w[: -len(suf)]
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif _double(w) and w[-1] not in "lsz":
                    w = w[:-1]
                elif _m(w) == 1 and _cvc(w):
                    w += "e"
                break
    # step 1c
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    w = _replace(w, _STEP2, 0)
    w = _replace(w, _STEP3, 0)
    # step 4
    for suf in _STEP4:
        if w.endswith(suf):
            s = w[: len(w) - len(suf)]
            if suf == "ion" and not s.endswith(("s", "t")):
                continue
            if _m(s) > 1:
                w = s
            break
    # step 5
    if w.endswith("e"):
        s = w[:-1]
        if _m(s) > 1 or (_m(s) == 1 and not _cvc(s)):
            w = s
    if _m(w) > 1 and _double(w) and w.endswith("l"):
        w = w[:-1]
    return w
