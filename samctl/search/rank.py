"""BM25 ranking of conversation messages, with conversation-aware evidence.

Statistics are global and computed at query time, so an index refreshed in parts ranks like one built from
scratch; ties are broken by row number.

Design notes: docs/search-index.md, "search/rank.py".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field as _field

import numpy as np

from samctl.search import text as tx

FIELDS = ("text", "date", "conv")  # conv: one document per conversation, not per row
ROLES = {"user": 0, "assistant": 1}  # other roles (tool, system) are 2: never an addressee side


@dataclass(frozen=True)
class Params:
    """Ranking parameters; the defaults are the ones bench/bench_relevance.py measured best."""
    k1: float = 0.9
    b: float = 0.4
    date: float = 1.0  # weight of the date field
    prev: float = 0.6  # share of the previous turn's score
    next: float = 0.4  # share of the next turn's score
    prev2: float = 0.3  # two turns before
    next2: float = 0.2  # two turns after
    conversation: float = 0.5  # weight of the conversation-level BM25 (scaled to the best row)
    addressee: float = 0.7  # score x (1 + addressee x matched names of that side)
    addressee_skew: float = 20.0  # a word names side X if the other side has it in >= skew x the rows X has it in
    addressee_min_rows: int = 10  # ... and in at least this many rows
    diversify: float = 0.05  # the j-th best row of a conversation (from 0) scores / (1 + diversify x (j - free))
    diversify_free: int = 3  # ... when j > free: a conversation's first rows keep their score
    name_weight: float = 0.75  # a query word that names a side weighs this much in the text BM25: it is
    # said in the other side's turns (addressing the named one), so it is the side, not the topic, it tells


BASELINE = Params(k1=1.2, b=0.75, date=0, prev=0, next=0, prev2=0, next2=0, conversation=0, addressee=0,
                  diversify=0, name_weight=1)
DIVERSIFY_POOL = 1000  # diversity is applied among this many best rows and their ties (a cost bound)


@dataclass
class Message:
    """What ranking needs of a message: its text, role (user/assistant/...) and time (epoch seconds)."""
    text: str
    role: str = "user"
    ts: float | None = None
    extra: list = _field(default_factory=list)  # more index terms (e.g. a title), optional


class Corpus:
    """In-memory postings for the three fields, row neighbours, conversation and role of each row.

    ``add_conversation(messages)`` appends one conversation; ``remove_conversation(g)`` drops it from
    every statistic (a refresh removes a changed conversation and adds it again).
    """

    def __init__(self):
        self._post = {f: {} for f in FIELDS}  # field -> term -> {row or conversation: tf}
        self._len = {f: {} for f in FIELDS}  # field -> row or conversation -> length
        self._group: list[int] = []  # row -> conversation (-1: removed)
        self._role: list[int] = []
        self._prev: list[int] = []
        self._next: list[int] = []
        self._rows_of: list[list[int]] = []
        self._cache = None  # rows() arrays; None after any change
        self._lens: dict = {}  # field -> lengths(), valid while _cache is

    def _index(self, fld: str, key: int, terms: list[str]) -> None:
        for term, tf in Counter(terms).items():
            self._post[fld].setdefault(term, {})[key] = tf
        self._len[fld][key] = len(terms)

    def add_conversation(self, messages) -> int:
        """Index MESSAGES (``Message`` or plain strings) as one conversation; returns its number."""
        g, rows, conv_terms = len(self._rows_of), [], []
        for m in messages:
            m = m if isinstance(m, Message) else Message(m)
            row = len(self._group)
            terms = tx.tokens(m.text) + [t for e in m.extra for t in tx.tokens(e)]
            self._index("text", row, terms)
            self._index("date", row, tx.date_terms(m.ts))
            conv_terms += terms
            self._group.append(g)
            self._role.append(ROLES.get(m.role, 2))
            self._prev.append(rows[-1] if rows else -1)
            self._next.append(-1)
            if rows:
                self._next[rows[-1]] = row
            rows.append(row)
        self._index("conv", g, conv_terms)
        self._rows_of.append(rows)
        self._cache = None
        return g

    def remove_conversation(self, g: int) -> None:
        gone = set(self._rows_of[g])
        for fld, keys in (("text", gone), ("date", gone), ("conv", {g})):
            for term in list(self._post[fld]):
                post = self._post[fld][term]
                for k in keys & post.keys():
                    del post[k]
                if not post:
                    del self._post[fld][term]
            for k in keys:
                self._len[fld].pop(k, None)
        for r in gone:
            self._group[r] = -1
            self._prev[r] = self._next[r] = -1
        self._rows_of[g] = []
        self._cache = None

    # -- what ranking reads (an impact index provides the same)
    def postings(self, fld: str, term: str):
        """(keys, tfs) of TERM in field FLD: rows for text/date, conversations for conv."""
        post = self._post[fld].get(term)
        if not post:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        return np.fromiter(post.keys(), np.int64, len(post)), np.fromiter(post.values(), np.float64, len(post))

    def lengths(self, fld: str):
        """(lengths by key, live mask): every row (text, date) or conversation (conv)."""
        if self._cache is None:
            self.rows()
        if fld not in self._lens:
            self._lens[fld] = self._lengths(fld)
        return self._lens[fld]

    def _lengths(self, fld: str):
        n = len(self._group) if fld != "conv" else len(self._rows_of)
        lens, live = np.zeros(n), np.zeros(n, bool)
        d = self._len[fld]
        if d:
            keys = np.fromiter(d.keys(), np.int64, len(d))
            lens[keys] = np.fromiter(d.values(), np.float64, len(d))
            live[keys] = True
        return lens, live

    def rows(self):
        """(prev, next, conversation, role) arrays over every row number (-1: none / removed)."""
        if self._cache is None:
            self._cache = tuple(np.asarray(a, np.int64) for a in (self._prev, self._next, self._group, self._role))
            self._lens = {}
        return self._cache

    @property
    def size(self) -> int:
        return len(self._group)


class FrozenCorpus:
    """The ranking interface over flat arrays (CSR postings per field), as an on-disk index would hold them.

    ``arrays`` maps names to numpy arrays (``np.save``-able, so they can be memory-mapped): per field F,
    ``F.offsets``/``F.keys``/``F.tfs`` (term i's postings are ``keys[offsets[i]:offsets[i+1]]``),
    ``F.lengths``, ``F.live``; and ``prev``, ``next``, ``group``, ``role``.  ``vocab`` maps field -> term -> i.
    """

    def __init__(self, arrays: dict, vocab: dict):
        self.arrays, self.vocab = arrays, vocab

    @classmethod
    def from_corpus(cls, corpus: Corpus) -> "FrozenCorpus":
        arrays, vocab = {}, {}
        for fld in FIELDS:
            terms = sorted(corpus._post[fld])
            vocab[fld] = {t: i for i, t in enumerate(terms)}
            posts = [sorted(corpus._post[fld][t].items()) for t in terms]
            arrays[f"{fld}.offsets"] = np.cumsum([0] + [len(p) for p in posts], dtype=np.int64)
            arrays[f"{fld}.keys"] = np.fromiter((k for p in posts for k, _ in p), np.int64)
            arrays[f"{fld}.tfs"] = np.fromiter((tf for p in posts for _, tf in p), np.float32)
            arrays[f"{fld}.lengths"], arrays[f"{fld}.live"] = corpus.lengths(fld)
        arrays.update(zip(("prev", "next", "group", "role"), corpus.rows()))
        return cls(arrays, vocab)

    def postings(self, fld: str, term: str):
        i = self.vocab[fld].get(term)
        if i is None:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        a, b = self.arrays[f"{fld}.offsets"][i:i + 2]
        return self.arrays[f"{fld}.keys"][a:b], self.arrays[f"{fld}.tfs"][a:b].astype(np.float64)

    def lengths(self, fld: str):
        return self.arrays[f"{fld}.lengths"], self.arrays[f"{fld}.live"]

    def rows(self):
        return tuple(self.arrays[k] for k in ("prev", "next", "group", "role"))

    @property
    def size(self) -> int:
        return int(self.arrays["prev"].size)


def bm25(corpus, fld: str, terms, params: Params = BASELINE, weights=None) -> np.ndarray:
    """Okapi BM25 of every key of field FLD for TERMS (a term repeated counts once), WEIGHTS[term] x each term's."""
    lens, live = corpus.lengths(fld)
    scores = np.zeros(lens.size)
    n = int(live.sum())
    if n == 0:
        return scores
    norm = params.k1 * (1 - params.b + params.b * lens / (lens[live].mean() or 1.0))
    for term in dict.fromkeys(terms):
        keys, tfs = corpus.postings(fld, term)
        if keys.size:
            idf = np.log(1 + (n - keys.size + 0.5) / (keys.size + 0.5))
            w = 1.0 if weights is None else weights.get(term, 1.0)
            scores[keys] += w * idf * tfs * (params.k1 + 1) / (tfs + norm[keys])
    return scores


def parts(corpus, query: str, params: Params = Params(), extra_terms=()) -> dict:
    """Every row's score and its parts for QUERY (and index terms ``extra_terms``, e.g. a prefix's):
    own, date, context, conversation, addressee, diversity, score."""
    terms = tx.query_terms(query) + list(extra_terms) if query else list(extra_terms)
    prev, nxt, group, role = corpus.rows()
    sides, names = (_addressed(corpus, terms, role, params) if params.addressee or params.name_weight != 1
                    else (np.zeros(2), set()))
    own = bm25(corpus, "text", terms, params, dict.fromkeys(names, params.name_weight))
    date = params.date * bm25(corpus, "date", terms, params) if params.date else np.zeros(corpus.size)
    base = np.append(own + date, 0.0)  # index -1 (no neighbour) reads the 0 at the end
    prev2, next2 = np.append(prev, -1)[prev], np.append(nxt, -1)[nxt]
    context = (params.prev * base[prev] + params.next * base[nxt] + params.prev2 * base[prev2]
               + params.next2 * base[next2])
    s = own + date + context
    conv = np.zeros(corpus.size)
    if params.conversation and s.any():
        cs = bm25(corpus, "conv", terms, params)
        if cs.any():
            conv = params.conversation * (cs / cs.max() * s.max())[np.maximum(group, 0)] * (group >= 0)
    s = s + conv
    addressee = np.zeros(corpus.size)
    if params.addressee and s.any() and sides.any():
        addressee = s * params.addressee * np.append(sides, 0.0)[np.minimum(role, 2)]
    s = s + addressee
    diversity = _diversity(s, group, params) if params.diversify and s.any() else np.zeros(corpus.size)
    return {"own": own, "date": date, "context": context, "conversation": conv, "addressee": addressee,
            "diversity": diversity, "score": s + diversity}


def _diversity(s, group, params) -> np.ndarray:
    """What each of the best rows loses for the better rows of its conversation before it (<= 0).

    Diminishing returns per conversation: the evidence for a question is often spread over several
    conversations, and a conversation's context and conversation-level score lift many of its rows at once.
    """
    out = np.zeros(s.size)
    k = min(DIVERSIFY_POOL, int((s > 0).sum()))
    cut = np.partition(s, s.size - k)[s.size - k]
    cand = np.flatnonzero(s >= cut)  # (cut > 0) with all ties at the cut: row numbers never decide who is in
    g = group[cand]
    g = np.where(g >= 0, g, -1 - cand)  # a row of no conversation (a memory) is a group of its own
    order = np.lexsort((cand, -s[cand], g))  # by conversation, best first (ties by row, as top_k)
    gs = g[order]
    first = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
    j = np.empty(cand.size, np.int64)
    j[order] = np.arange(gs.size) - np.repeat(first, np.diff(np.r_[first, gs.size]))
    kept = s[cand] / (1 + params.diversify * np.maximum(j - params.diversify_free, 0))
    out[cand] = kept - s[cand]
    return out


def _addressed(corpus, terms, role, params):
    """Per side (user, assistant): how many query words name it; and the set of those words.

    A word names a side when the other side says it often and that side itself (almost) never: the way
    people address each other ("Thanks, Mel!").  A topic one side talks about more is said by both, so
    it must not count (it would favour the side that does *not* talk about it).
    """
    sides, names = np.zeros(2), set()
    for term in dict.fromkeys(terms):
        rows, _ = corpus.postings("text", term)
        if rows.size < params.addressee_min_rows:  # (a shortcut: too rare to be a name)
            continue
        said = np.bincount(role[rows], minlength=3)[:2]
        for side in (0, 1):
            if said[1 - side] >= max(params.addressee_min_rows, params.addressee_skew * said[side]):
                sides[side] += 1
                names.add(term)
    return sides, names


def score(corpus, query: str, params: Params = Params()) -> np.ndarray:
    """Every row's score for QUERY (0 where nothing matches)."""
    return parts(corpus, query, params)["score"]


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the K best scores, best first, ties by row number; rows scoring 0 are left out."""
    k = min(k, int((scores > 0).sum()))
    if k <= 0:
        return np.empty(0, np.int64)
    cut = np.partition(scores, scores.size - k)[scores.size - k]  # the k-th best score
    cand = np.flatnonzero(scores >= cut)
    return cand[np.lexsort((cand, -scores[cand]))][:k]


def search(corpus, query: str, k: int = 10, params: Params = Params()) -> list[tuple[int, float]]:
    """The K best (row, score) for QUERY."""
    s = score(corpus, query, params)
    return [(int(r), float(s[r])) for r in top_k(s, k)]
