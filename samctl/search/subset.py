"""Some rows of a corpus, ranked as a corpus of their own with the statistics of the whole.

A query whose words are in few conversations scores 0 on every other row: a row's score comes from its
own words, its neighbours' (in its conversation) and its conversation's.  ``evidence_rows`` finds the rows
that can score (those holding a query term, and every row of their conversations); ``Subset`` is the
ranking interface of ``bm25.py`` over them alone: a row's neighbours are its neighbours in the corpus when
they are among the rows (any other has no evidence to give), and the statistics (how many rows, their
mean length, the words each side says) are the whole corpus's, summed as integers, so that every score
is the same, bit for bit, as over every row.  A rare word then costs its conversations, not the corpus.
"""

from __future__ import annotations

import numpy as np

FEW = 4  # rows are ranked alone when they are at most 1 in FEW of the corpus


def alive_and_length(corpus, fld: str) -> tuple[int, float]:
    """(alive keys, their summed length) of field ``fld``'s ``lengths``, kept in the corpus's memo."""
    memo = getattr(corpus, "memo", {})
    got = memo.get(("alive and length", fld))
    if got is None:
        lens, live = corpus.lengths(fld)
        got = memo[("alive and length", fld)] = (int(np.count_nonzero(live)), float(lens.sum()))
    return got


def evidence_rows(corpus, terms, with_dates: bool):
    """The rows that can score for ``terms`` (sorted), when they are few; else None (rank every row).

    ``with_dates``: the date field counts (its postings are every row of a month: never few)."""
    n = corpus.size
    if n < 1024:
        return None
    terms = list(dict.fromkeys(terms))
    if with_dates and any(corpus.postings("date", t)[0].size for t in terms):
        return None
    held = [corpus.postings("text", t)[0] for t in terms]
    if sum(r.size for r in held) * FEW > n:
        return None
    _same, group, _role = corpus.rows()
    groups = corpus.keys("conv")
    wanted = np.zeros(groups + 1, bool)  # by conversation + 1 (0: a row of none)
    for r in held:
        wanted[group[r] + 1] = True
    wanted[0] = False
    memo = getattr(corpus, "memo", {})
    per_group = memo.get("rows by group + 1")
    if per_group is None:
        per_group = memo["rows by group + 1"] = np.bincount(group + 1, minlength=groups + 1)
    if int(per_group[wanted].sum()) * FEW > n:  # (their conversations' rows alone are too many: no pass
        # over every row to find them)
        return None
    shifted = memo.get("group + 1")
    if shifted is None:
        shifted = memo["group + 1"] = group.astype(np.int64 if groups >= 1 << 31 else np.int32) + 1
    mask = wanted.take(shifted, mode="wrap")
    for r in held:
        mask[r] = True  # (a row of no conversation holding a term: itself)
    rows = np.flatnonzero(mask)
    return rows if rows.size * FEW <= n else None


class Subset:
    """``rows`` (sorted) of ``corpus`` as a corpus (see the module's docstring): rows are numbered by their
    place in ``rows``; conversations keep their numbers."""

    def __init__(self, corpus, rows):
        self.parent, self.at = corpus, rows
        self.size = int(rows.size)
        same, group, role = corpus.rows()
        linked = same[rows]
        if rows.size:
            linked[1:] &= rows[1:] - 1 == rows[:-1]  # (a neighbour not among the rows gives nothing)
            linked[0] = False
        self._rows = (linked, group[rows], role[rows])
        self.memo: dict = {}
        parent_memo = getattr(corpus, "memo", {})
        if "words by side" in parent_memo:
            self.memo["words by side"] = parent_memo["words by side"]  # (the whole corpus's)
        elif len(role):
            self.memo["words by side"] = np.bincount(role, weights=corpus.lengths("text")[0], minlength=3)[:2]
            parent_memo["words by side"] = self.memo["words by side"]
        self._lens: dict = {}

    def rows(self):
        return self._rows

    def keys(self, fld: str) -> int:
        return self.parent.keys("conv") if fld == "conv" else self.size

    def lengths(self, fld: str):
        if fld == "conv":
            return self.parent.lengths("conv")
        if fld not in self._lens:
            lens, live = self.parent.lengths(fld)
            self._lens[fld] = (lens[self.at], live[self.at])
        return self._lens[fld]

    def background(self, fld: str) -> tuple:
        """The parent's background, and the parent's keys not among these rows (integers: exact)."""
        n, total = self.parent.background(fld)
        if fld == "conv":
            return n, total
        every, length = alive_and_length(self.parent, fld)
        lens, live = self.lengths(fld)
        kept = int(np.count_nonzero(live))
        return n + every - kept, total + int(length) - int(lens.sum())

    def postings(self, fld: str, term: str):
        keys, tfs = self.parent.postings(fld, term)
        if fld == "conv" or not keys.size:
            return keys, tfs
        at = np.searchsorted(self.at, keys)
        inside = at < self.size
        inside[inside] = self.at[at[inside]] == keys[inside]
        if not inside.all():  # (a date's rows; never a text term's: ``evidence_rows`` holds them all)
            return at[inside], tfs[inside]
        return at, tfs
