"""``fulltext._best_rows`` meets rows in runs (arrays) with the copies gate; what it takes, and the copies it
remembers, are those of meeting the rows one at a time, as this file's reference does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from samctl.search import fulltext, grouped


class Gate(grouped.Copies):
    """``Copies`` whose copy keys are given (KEYS[row]) rather than read from an index."""

    def __init__(self, keys):
        super().__init__(type("Corpus", (), {"np": np})())
        self.keys = np.asarray(keys, np.int64)

    def ids(self, rows):
        return self.keys[np.asarray(rows, np.int64)]


class Plan:
    def __init__(self, phrased: bool):
        self.phrases, self.tools, self.excluded_phrases = (["x"] if phrased else []), [], []


def reference(score, cand, limit, keys, passes, ties):
    """The rows taken and the copies remembered, meeting the rows one by one, best first."""
    order = cand[np.lexsort((cand, -score[cand]))].tolist()
    out, first, copies = [], {}, {}
    for r in order:
        if out and len(out) >= limit and score[r] < score[out[-1]]:
            break
        if len(out) >= limit + ties:
            break
        if passes is not None and not passes[r]:
            continue
        if keys[r] in first:
            copies.setdefault(first[keys[r]], []).append(r)
            continue
        first[keys[r]] = r
        out.append(r)
    return out, copies


# (score, key, whether its text holds the phrase) of each row
ROWS = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6), st.booleans()), min_size=1, max_size=140)


def _walks(score, keys, limit, ties, passes, *cands):
    """``_best_rows`` over each of CANDS in turn (the first ``complete`` only when it is the last), going on
    while the walk before gave up, with one gate and the rows taken: (what the last walk gave, the gate)."""
    verdicts = type("Test", (), {"many": staticmethod(lambda texts: [passes[int(t)] for t in texts])})()
    gate, taken = Gate(keys), []
    corpus = type("Corpus", (), {"np": np})()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fulltext, "MAX_TIES", ties)
        mp.setattr(fulltext, "_row_text", lambda corpus, r: str(r))
        mp.setattr(fulltext, "phrase_test", lambda p: verdicts)
        for i, cand in enumerate(cands):
            complete = i == len(cands) - 1
            got = fulltext._best_rows(corpus, score, cand, limit, Plan(passes is not None), complete, gate, taken)
            if got is not None:
                break
    return got, gate


def _check(got, gate, want, copies) -> None:
    assert got == want
    assert {r: sorted(np.concatenate(c).tolist()) for r, c in gate.copies.items()} == {
        r: sorted(c) for r, c in copies.items()
    }


@settings(max_examples=300, deadline=None)
@given(data=ROWS, limit=st.integers(0, 12), ties=st.integers(0, 6), phrased=st.booleans())
def test_runs_take_what_one_row_at_a_time_takes(data, limit, ties, phrased):
    """Up to 140 rows: runs of 32, 64 and the rest (the walk's first order holds them all)."""
    score = np.array([float(s) for s, _, _ in data])
    keys = [k for _, k, _ in data]
    passes = [p for _, _, p in data] if phrased else None
    cand = np.flatnonzero(score > 0)
    _check(*_walks(score, keys, limit, ties, passes, cand), *reference(score, cand, limit, keys, passes, ties))


@settings(max_examples=300, deadline=None)
@given(data=ROWS, limit=st.integers(0, 12), ties=st.integers(0, 6), phrased=st.booleans(), floor=st.integers(1, 5))
@example(data=[(1, 0, True), (2, 0, False)], limit=0, ties=1, phrased=True, floor=2)  # (none taken above it)
def test_a_walk_that_goes_on_below_a_floor_takes_what_one_walk_takes(data, limit, ties, phrased, floor):
    """The rows at or above a floor walked first (``complete`` False); when too few are taken there, the
    walk goes on below it with the same gate and rows taken (``search``): what one walk over all takes."""
    score = np.array([float(s) for s, _, _ in data])
    keys = [k for _, k, _ in data]
    passes = [p for _, _, p in data] if phrased else None
    above, below = np.flatnonzero(score >= floor), np.flatnonzero((score > 0) & (score < floor))
    want = reference(score, np.flatnonzero(score > 0), limit, keys, passes, ties)
    _check(*_walks(score, keys, limit, ties, passes, above, below), *want)


@settings(max_examples=100, deadline=None)
@given(
    scores=st.lists(st.integers(0, 3), min_size=150, max_size=400),
    copies=st.integers(1, 40),
    limit=st.integers(0, 12),
    ties=st.integers(0, 6),
)
def test_rows_tied_across_the_walks_widening_order_are_met_in_order(scores, copies, limit, ties):
    """More rows than the walk's first order holds, most of them tied: each widening of the order keeps
    the rows met before as its first rows (a tie is never cut between two widenings)."""
    score = np.array(scores, float)
    keys = [i % copies for i in range(len(scores))]
    cand = np.flatnonzero(score > 0)
    _check(*_walks(score, keys, limit, ties, None, cand), *reference(score, cand, limit, keys, None, ties))
