"""BM25 ranking of conversation messages, with conversation-aware evidence.

Statistics are global and computed at query time, so an index refreshed in parts ranks like one built from
scratch; ties are broken by row number.

Design notes: docs/search-index.md, "search/bm25.py".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from dataclasses import field as _field

import numpy as np

from samctl.search import halves, subset
from samctl.search import text as tx

FIELDS = ("text", "date", "conv")  # conv: one document per conversation, not per row
ROLES = {"user": 0, "assistant": 1}  # other roles (tool, system) are 2: never an addressee side


@dataclass(frozen=True)
class Params:
    """Ranking parameters; the defaults are the ones bench/bench_relevance.py measured best."""

    k1: float = 1.0
    b: float = 0.6
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
    diversify_free: int = 1  # ... when j > free: a conversation's first rows keep their score
    ctx_len: float = 50.0  # a row longer than this many terms neither gives nor takes full neighbour evidence:
    # both are x min(1, ctx_len / length).  A short turn ("Yes, last week") is read in its neighbours' light;
    # a long one (an assistant's reply repeating the question's words) stands on its own words, and must
    # not lift the short turns around it above the turn that said the thing (0: off)
    reply: float = 0.9  # an assistant row's score x this: people search for what they said or were told,
    # and a reply that repeats their words outranks them otherwise
    addressee_by_words: bool = True  # the addressee skew counts per word each side says, not per row: a
    # side that writes 8x longer rows says every topic word more often, without naming anyone
    name_weight: float = 0.75  # a query word that names a side weighs this much in the text BM25: it is
    # said in the other side's turns (addressing the named one), so it is the side, not the topic, it tells


BASELINE = Params(
    k1=1.2,
    b=0.75,
    date=0,
    prev=0,
    next=0,
    prev2=0,
    next2=0,
    conversation=0,
    addressee=0,
    diversify=0,
    name_weight=1,
    ctx_len=0,
    reply=1,
    addressee_by_words=False,
)
# Every score array's type.  A query reads and writes arrays of every row several times (2.3 M rows
# over the bench's four stores): float32 halves those bytes and doubles what numpy does per instruction,
# and a ranking needs no more than its 7 digits (figures: bench/README.md, "float32 scores").
SCORE = np.float32
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
        self._memo: dict = {}  # what ranking derives from the rows alone, valid while _cache is

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
            return np.empty(0, np.int64), np.empty(0, SCORE)
        return np.fromiter(post.keys(), np.int64, len(post)), np.fromiter(post.values(), SCORE, len(post))

    def keys(self, fld: str) -> int:
        """How many keys field FLD has: rows (text, date) or conversations (conv)."""
        return len(self._rows_of) if fld == "conv" else len(self._group)

    def background(self, fld: str) -> tuple:
        """(keys, summed length) that count in FLD's statistics beside ``lengths``: none here."""
        return 0, 0

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
        """(same, conversation, role) arrays over every row number: ``same[i]``: row i-1 is row i's previous
        turn (a conversation's rows are added together); conversation -1: none / removed."""
        if self._cache is None:
            prev = np.asarray(self._prev, np.int64)
            same = (prev >= 0) & (prev == np.arange(prev.size) - 1)
            self._cache = (same, np.asarray(self._group, np.int64), np.asarray(self._role, np.int64))
            self._lens = {}
            self._memo = {}
        return self._cache

    @property
    def memo(self) -> dict:
        """Arrays ranking derives from the rows alone (``rows``, ``lengths``), kept until a change."""
        self.rows()
        return self._memo

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
        self.memo: dict = {}

    @classmethod
    def from_corpus(cls, corpus: Corpus) -> FrozenCorpus:
        arrays, vocab = {}, {}
        for fld in FIELDS:
            terms = sorted(corpus._post[fld])
            vocab[fld] = {t: i for i, t in enumerate(terms)}
            posts = [sorted(corpus._post[fld][t].items()) for t in terms]
            arrays[f"{fld}.offsets"] = np.cumsum([0] + [len(p) for p in posts], dtype=np.int64)
            arrays[f"{fld}.keys"] = np.fromiter((k for p in posts for k, _ in p), np.int64)
            arrays[f"{fld}.tfs"] = np.fromiter((tf for p in posts for _, tf in p), np.float32)
            arrays[f"{fld}.lengths"], arrays[f"{fld}.live"] = corpus.lengths(fld)
        arrays.update(prev=np.asarray(corpus._prev, np.int64), next=np.asarray(corpus._next, np.int64))
        arrays.update(zip(("group", "role"), corpus.rows()[1:]))
        return cls(arrays, vocab)

    def postings(self, fld: str, term: str):
        i = self.vocab[fld].get(term)
        if i is None:
            return np.empty(0, np.int64), np.empty(0, SCORE)
        a, b = self.arrays[f"{fld}.offsets"][i : i + 2]
        return self.arrays[f"{fld}.keys"][a:b], self.arrays[f"{fld}.tfs"][a:b]  # (float32: as bm25 reads them)

    def keys(self, fld: str) -> int:
        return int(self.arrays[f"{fld}.lengths"].size)

    def lengths(self, fld: str):
        return self.arrays[f"{fld}.lengths"], self.arrays[f"{fld}.live"]

    def background(self, fld: str) -> tuple:
        return 0, 0

    def rows(self):
        prev = self.arrays["prev"]
        return (prev >= 0) & (prev == np.arange(prev.size) - 1), self.arrays["group"], self.arrays["role"]

    @property
    def size(self) -> int:
        return int(self.arrays["prev"].size)


def bm25(corpus, fld: str, terms, params: Params = BASELINE, weights=None) -> np.ndarray:
    """Okapi BM25 of every key of field FLD for TERMS (a term repeated counts once), WEIGHTS[term] x each term's.

    Only the keys holding a term are computed (a rare word costs its postings, not the corpus)."""
    found = [(t, corpus.postings(fld, t)) for t in dict.fromkeys(terms)]
    found = [(t, keys, tfs) for t, (keys, tfs) in found if keys.size]
    if not found:
        return np.zeros(corpus.keys(fld), SCORE)
    lens, live = corpus.lengths(fld)
    bg_n, bg_total = corpus.background(fld)  # (keys not among these rows that count all the same)
    memo = getattr(corpus, "memo", {})
    alive, total = subset.alive_and_length(corpus, fld)
    n = alive + bg_n
    if n == 0:
        return np.zeros(lens.size, SCORE)
    mean = (total + bg_total) / n or 1.0  # (lengths are 0 where not alive; integers: exact)

    def norm_of(lengths):  # (one formula for every key's norms and a few keys')
        return (params.k1 * (1 - params.b + params.b * lengths / mean)).astype(SCORE)

    norms = None
    if len(found) > 1 or found[0][1].size * 8 > lens.size:  # (one rare term: its keys' norms alone)
        got = memo.get(("norm", fld, params.k1, params.b))  # (the last mean's only: it moves with the corpus)
        if got is not None and got[0] == mean:
            norms = got[1]
        else:
            norms = norm_of(lens)
            memo[("norm", fld, params.k1, params.b)] = (mean, norms)
    scores = np.zeros(lens.size, SCORE)
    for term, k, tfs in found:
        idf = np.log(1 + (n - k.size + 0.5) / (k.size + 0.5))
        w = 1.0 if weights is None else weights.get(term, 1.0)
        norm = norm_of(lens[k]) if norms is None else norms.take(k, mode="wrap")
        # w * idf * tfs * (k1 + 1) / (tfs + norm), in that order, in arrays of its own
        tfs = tfs.astype(SCORE, copy=False)
        part = np.multiply(tfs, SCORE(w * idf))
        part *= SCORE(params.k1 + 1)
        part /= np.add(tfs, norm, out=norm)
        # (each key's parts added in the terms' order, from 0.0: 0.0 + x is x; numpy's add.at of
        # float32 is quicker than reading, adding and writing by fancy indexing, or a bincount)
        np.add.at(scores, k, part)
    return scores


def ranked_terms(query: str, extra_terms=()) -> list[str]:
    """The index terms QUERY is ranked by (``text.query_terms``), and ``extra_terms`` (e.g. a prefix's)."""
    return tx.query_terms(query) + list(extra_terms) if query else list(extra_terms)


def parts(corpus, query: str, params: Params = Params(), extra_terms=(), info: dict | None = None) -> dict:
    """Every row's score and its parts for QUERY (and index terms ``extra_terms``, e.g. a prefix's):
    own, date, context, conversation, addressee, diversity, reply, score.  ``info``, when given, gets
    "floor": a score at or above which every row diversity weighed lies (0 if none), and "pool": those
    rows (sorted), among which are all that score at least "floor" (diversity only lowers their scores).

    Arrays are added in place where the sum is not a part itself: a query over a million rows is
    mostly memory traffic, and every new array costs its pages.  When the query's words are in few
    conversations, only their rows are ranked (``subset.py``: the same scores)."""
    terms = ranked_terms(query, extra_terms)
    if not isinstance(corpus, subset.Subset):
        rows = subset.evidence_rows(corpus, terms, bool(params.date))
        if rows is not None:
            got = parts(subset.Subset(corpus, rows), query, params, extra_terms, info)
            if info is not None and "pool" in info:
                info["pool"] = rows[info["pool"]]
            return {k: _spread(v, rows, corpus.size) for k, v in got.items()}
    same, group, role = corpus.rows()
    sides, names = (
        _addressed(corpus, terms, role, params) if params.addressee or params.name_weight != 1 else (np.zeros(2), set())
    )
    own = bm25(corpus, "text", terms, params, dict.fromkeys(names, params.name_weight))
    zero = _zeros(corpus.size)  # (a part that is 0 everywhere: read-only, no pages of its own)
    date = zero
    base = own
    if params.date and any(corpus.postings("date", t)[0].size for t in dict.fromkeys(terms)):
        date = params.date * bm25(corpus, "date", terms, params)
        base = own + date
    nz = int(np.count_nonzero(base))  # s > 0 exactly where a row or a neighbour has evidence
    context, s, best = _with_context(corpus, base, same, params, nz)
    conv, addressee, reply, best = _with_shares(corpus, s, best, terms, sides, params, nz)
    diversity = zero
    if params.diversify and nz:
        diversity = np.zeros(corpus.size, SCORE)
        cand, cut = _diversity(s, group, params, diversity, best)
        s[cand] += diversity[cand]
        if info is not None:
            info["floor"], info["pool"] = cut, cand
    return {
        "own": own,
        "date": date,
        "context": context,
        "conversation": conv,
        "addressee": addressee,
        "diversity": diversity,
        "reply": reply,
        "score": s,
    }


def _with_context(corpus, base, same, params, nz: int):
    """(context, base + context, the best of those or None): each row's share of its neighbours' ``base``
    (``_shares``: damped for long rows), over every row in two halves at once when most rows are concerned."""
    n = corpus.size
    if not (params.prev or params.next or params.prev2 or params.next2) or not nz:
        return _zeros(n), base.copy(), None
    lengths = corpus.lengths("text")[0] if params.ctx_len else None
    at = _sparse(base, same, nz) if n > 2 else None
    if at is not None:  # (few rows concerned: theirs alone)
        context = _sparse_context(base, same, params, at, lengths)
        return context, base + context, None
    if n > 2:
        # every row: in two halves at once (each row's values computed alone, as one pass would)
        shares = _shares(same, params, corpus.memo, lengths)
        context, s = np.empty(n, SCORE), np.empty(n, SCORE)

        def first(a, b):
            _context_rows(base, shares, context, a, b)
            np.add(base[a:b], context[a:b], out=s[a:b])
            return s[a:b].max()  # (each block's best score: the best is theirs)

        return context, s, max(halves.run(n, first))
    context = _context(base, same, params, nz, corpus.memo, lengths)
    return context, base + context, None


def _with_shares(corpus, s, best, terms, sides, params, nz: int):
    """(conversation, addressee, reply, the best score or None): the conversation's share, then the
    addressee's, then the reply's, each added into ``s`` in that order, in two halves at once."""
    zero = _zeros(corpus.size)
    n = corpus.size
    _same, group, role = corpus.rows()
    conv = addressee = reply = zero
    table = None
    if params.conversation and nz:
        cs = bm25(corpus, "conv", terms, params)
        if cs.any():
            top = float(s.max()) if best is None else best
            table = np.append(params.conversation * (cs / cs.max() * top), 0.0).astype(SCORE)  # (group -1: the 0)
            conv = np.empty(n, SCORE)
    sides_of = None
    if params.addressee and sides.any() and nz:
        sides_of = np.append(sides, 0.0).astype(SCORE)
        addressee = np.empty(n, SCORE)
    share = None
    if params.reply != 1 and nz:
        share = corpus.memo.get(("reply", params.reply))
        if share is None:
            share = np.where(role == ROLES["assistant"], params.reply - 1.0, 0.0).astype(SCORE)
            corpus.memo[("reply", params.reply)] = share
        reply = np.empty(n, SCORE)

    def then(a, b):  # (the conversation's share, then the addressee's, then the reply's: in that order)
        if table is not None:
            # (mode "wrap": -1 is the last, as indexing gives it; every index is in range, checked where
            # read, and numpy's default mode checks each again, at several times the cost of the take)
            np.take(table, group[a:b], out=conv[a:b], mode="wrap")
            s[a:b] += conv[a:b]
        if sides_of is not None:
            np.multiply(s[a:b], params.addressee, out=addressee[a:b])
            addressee[a:b] *= sides_of[role[a:b]]
            s[a:b] += addressee[a:b]
        if share is not None:
            np.multiply(s[a:b], share[a:b], out=reply[a:b])
            s[a:b] += reply[a:b]
        return s[a:b].max()

    if table is not None or sides_of is not None or share is not None:
        best = max(halves.run(n, then))
    return conv, addressee, reply, best


def _spread(values, rows, n: int) -> np.ndarray:
    """An array of ``n`` zeros with ``values`` at ``rows`` (a part 0 everywhere stays ``_zeros``)."""
    if values.strides == (0,):
        return _zeros(n)
    out = np.zeros(n, values.dtype)
    out[rows] = values
    return out


def _zeros(n: int) -> np.ndarray:
    """``n`` zeros, read-only, in no memory of their own (a broadcast of one 0)."""
    return np.broadcast_to(np.zeros(1, SCORE), (n,))


def _sparse(base, same, nz: int):
    """The rows ``_context`` touches when few have evidence (or few a neighbour), else None: every row."""
    n = base.size
    if nz * 32 < n:  # few rows with evidence: only their neighbours are touched (past about 1 in 32, the
        # dense passes over every row cost less than indexing the scattered ones)
        return np.flatnonzero(base)
    if np.count_nonzero(same) * 16 < n:  # few rows with a neighbour (SAM's memories have none): only
        # the rows with evidence and a neighbour, before (same[r]) or after (same[r + 1])
        at = np.flatnonzero(base)
        after = np.minimum(at + 1, n - 1)
        return at[same[at] | (same[after] & (after > at))]
    return None


def _context(base, same, params, nz: int, memo: dict | None = None, lengths=None) -> np.ndarray:
    """What each row gets from its neighbours' ``base`` scores (one and two turns before and after, in
    the same conversation): slices of the row order, since a conversation's rows are adjacent.  Each
    row adds its neighbours' shares in one order (before, after, two before, two after) on either path,
    each share ``base`` x the pair's coefficient of ``_shares`` (worked out here for the pairs touched).
    ``nz``: how many rows of ``base`` are not 0; ``lengths``: each row's, to damp long rows (None: not)."""
    n = base.size
    if n < 2 or not nz:
        return np.zeros(n, SCORE)
    at = _sparse(base, same, nz)
    if at is not None:
        return _sparse_context(base, same, params, at, lengths)
    out = np.empty(n, SCORE)
    _context_rows(base, _shares(same, params, {} if memo is None else memo, lengths), out, 0, n)
    return out


def _sparse_context(base, same, params, at, lengths) -> np.ndarray:
    """``_context`` for the rows ``_sparse`` found (``at``): each neighbour's share added to them alone."""
    n = base.size
    out = np.zeros(n, SCORE)
    for step, w, two in (
        (1, params.prev, False),
        (-1, params.next, False),
        (2, params.prev2, True),
        (-2, params.next2, True),
    ):
        to = at + step
        ok = (to >= 0) & (to < n)
        src, to = at[ok], to[ok]
        hi = np.maximum(src, to)  # the later row of the pair (or of its last step)
        link = same[hi] & same[hi - 1] if two else same[hi]
        src, to, hi = src[link], to[link], hi[link]
        c = w if lengths is None else w * (_damp(lengths[np.minimum(src, to)], params) * _damp(lengths[hi], params))
        # (each row once per step: the dense order of additions; the share a score first, as in _shares)
        out[to] += np.asarray(c, SCORE) * base[src]
    return out


def _context_rows(base, shares, out, lo: int, hi: int) -> None:
    """``out[lo:hi]``: rows lo..hi-1's shares of their neighbours' ``base`` (all of ``base`` read).

    Each share is base x (its weight where the pair is in one conversation, else 0): x * w or 0, as
    (x * same) * w gave it; the first is written, not added to zeros (0.0 + x is x)."""
    wp, wn, wp2, wn2 = shares
    n = base.size
    tmp = np.empty(hi - lo, SCORE)  # one scratch array
    a = max(lo, 1)
    np.multiply(base[a - 1 : hi - 1], wp[a - 1 : hi - 1], out=out[a:hi])  # [i-1]: row i's previous turn
    if lo == 0:
        out[0] = 0.0
    e = min(hi, n - 1)
    if e > lo:
        t = tmp[: e - lo]
        np.multiply(base[lo + 1 : e + 1], wn[lo:e], out=t)  # [i+1]: row i's next turn
        out[lo:e] += t
    a = max(lo, 2)
    if hi > a:
        t = tmp[: hi - a]
        np.multiply(base[a - 2 : hi - 2], wp2[a - 2 : hi - 2], out=t)
        out[a:hi] += t
    e = min(hi, n - 2)
    if e > lo:
        t = tmp[: e - lo]
        np.multiply(base[lo + 2 : e + 2], wn2[lo:e], out=t)
        out[lo:e] += t


def _damp(lengths, params) -> np.ndarray:
    """How much of its neighbours' evidence a row of each of ``lengths`` gives and takes: all of it up to
    ``ctx_len`` terms, less beyond (``Params.ctx_len``)."""
    return np.minimum(1.0, params.ctx_len / np.maximum(lengths, 1.0))


def _shares(same, params, memo: dict, lengths=None) -> tuple:
    """(prev, next, prev2, next2) coefficients of each pair of rows one and two apart: the weight, x both
    rows' ``_damp`` (earlier x later) when ``lengths`` are given, where the pair is in one conversation,
    else 0.  A function of the rows alone, kept in ``memo``; ``_context`` gives the same, bit for bit."""
    key = ("shares", params.prev, params.next, params.prev2, params.next2, params.ctx_len if lengths is not None else 0)
    got = memo.get(key)
    if got is None:
        one = same[1:]
        two = same[2:] & same[1:-1]  # rows i and i+2 in one conversation
        got = tuple(
            np.where(m, w, 0.0)
            for m, w in ((one, params.prev), (one, params.next), (two, params.prev2), (two, params.next2))
        )
        if lengths is not None:
            damp = _damp(lengths, params)
            pair1, pair2 = damp[:-1] * damp[1:], damp[:-2] * damp[2:]
            got = tuple(np.multiply(w, p, out=w) for w, p in zip(got, (pair1, pair1, pair2, pair2)))
        got = tuple(w.astype(SCORE) for w in got)
        memo[key] = got
    return got


def _diversity(s, group, params, out, best: float | None = None):
    """Into ``out``: what each of the best rows loses for the better rows of its conversation before it
    (<= 0).  Returns (those rows, the pool's cut: every row scoring at least it is among them).

    Diminishing returns per conversation: the evidence for a question is often spread over several
    conversations, and a conversation's context and conversation-level score lift many of its rows at once.
    """
    top = _at_least(s, DIVERSIFY_POOL, best)
    vals = s[top]
    k = min(DIVERSIFY_POOL, vals.size)
    cut = np.partition(vals, vals.size - k)[vals.size - k]
    cand = top[vals >= cut]  # (cut > 0) with all ties at the cut: row numbers never decide who is in
    g = group[cand]
    g = np.where(g >= 0, g, -1 - cand)  # a row of no conversation (a memory) is a group of its own
    order = np.lexsort((cand, -s[cand], g))  # by conversation, best first (ties by row, as top_k)
    gs = g[order]
    first = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
    j = np.empty(cand.size, np.int64)
    j[order] = np.arange(gs.size) - np.repeat(first, np.diff(np.r_[first, gs.size]))
    kept = s[cand] / (1 + params.diversify * np.maximum(j - params.diversify_free, 0))
    out[cand] = kept - s[cand]
    return cand, float(cut)


def _at_least(s, k: int, best: float | None = None) -> np.ndarray:
    """Rows with a positive score, at least the ``k`` best of them (all if fewer): those above half the
    best score (``best``: s.max(), when known), a quarter, ... (a partition of them is cheaper than one
    of every row)."""
    t = (float(s.max()) if best is None else best) / 2
    for _ in range(8):
        top = rows_at_least(s, t)
        if top.size >= k:
            return top
        t /= 4
    return np.flatnonzero(s > 0)


def rows_at_least(s, t: float) -> np.ndarray:
    """``np.flatnonzero(s >= t)``, each half of the rows in its thread (at once: one step, read once)."""
    found = halves.run(s.size, lambda a, b: np.flatnonzero(s[a:b] >= t) + a, blocks=False)
    return np.concatenate(found) if found else np.flatnonzero(s >= t)


def _addressed(corpus, terms, role, params):
    """Per side (user, assistant): how many query words name it; and the set of those words.

    A word names a side when the other side says it often and that side itself (almost) never: the way
    people address each other ("Thanks, Mel!").  A topic one side talks about more is said by both, so
    it must not count (it would favour the side that does *not* talk about it).
    """
    sides, names = np.zeros(2), set()
    ratio = None  # by side: the other side's words per this side's (at least 1)
    for term in dict.fromkeys(terms):
        rows, _ = corpus.postings("text", term)
        if rows.size < params.addressee_min_rows:  # (a shortcut: too rare to be a name)
            continue
        said = np.bincount(role[rows], minlength=3)[:2]
        if ratio is None:
            ratio = np.ones(2)
            if params.addressee_by_words:
                tok = corpus.memo.get("words by side")
                if tok is None:
                    tok = corpus.memo["words by side"] = np.bincount(
                        role, weights=corpus.lengths("text")[0], minlength=3
                    )[:2]
                if tok.all():
                    ratio = np.maximum(1.0, np.array([tok[1] / tok[0], tok[0] / tok[1]]))
        for side in (0, 1):
            if said[1 - side] >= max(params.addressee_min_rows, params.addressee_skew * said[side] * ratio[side]):
                sides[side] += 1
                names.add(term)
    return sides, names


def score(corpus, query: str, params: Params = Params()) -> np.ndarray:
    """Every row's score for QUERY (0 where nothing matches)."""
    return parts(corpus, query, params)["score"]


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the K best scores, best first, ties by row number; rows scoring 0 are left out."""
    pos = scores[scores > 0]
    k = min(k, pos.size)
    if k <= 0:
        return np.empty(0, np.int64)
    cut = np.partition(pos, pos.size - k)[pos.size - k]  # the k-th best score
    cand = np.flatnonzero(scores >= cut)
    return cand[np.lexsort((cand, -scores[cand]))][:k]


def search(corpus, query: str, k: int = 10, params: Params = Params()) -> list[tuple[int, float]]:
    """The K best (row, score) for QUERY."""
    s = score(corpus, query, params)
    return [(int(r), float(s[r])) for r in top_k(s, k)]
