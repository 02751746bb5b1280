"""Issue #20 finding 8: ``search --exact`` on a conversation of many messages.  A common word in
150,000 messages made a Hit (checksum, text, title) of every matching row tied on the date, and
``-c`` decoded the whole conversation to find its shared topic: 8 s and 14 s.  Now only the rows
that can be among the results become Hits, and ``-c`` reads only the topic."""

from __future__ import annotations

import math
import random

import pytest

from samctl.search import dispatch as sx
from samctl.search import sam_scoring
from samctl.search.index import rows as ixrows
from samctl.search.index.segment import SegmentWriter
from samctl.stores import open_store
from tests.conftest import make_fixtures as mf
from tests.search_helpers import age

BIG = "E0000000-0000-4000-8000-0000000000E1"


@pytest.fixture
def many(sam_demo):
    ts = "2026-01-02T03:04:05Z"  # every message the same date: all tied on (whole, date)
    msgs = [
        mf.sam_message(f"A{i:07X}-0000-4000-8000-000000000001", "user", f"note {i} about Portland trips", ts)
        for i in range(2000)
    ]
    mf._write(
        sam_demo / "conversations" / BIG / "conversation.json", mf.sam_dumps(mf.sam_doc(BIG, "many", msgs, ts, ts))
    )
    age(sam_demo)
    return sam_demo


@pytest.mark.parametrize("use_index", [True, False])
def test_exact_makes_hits_only_for_the_results(many, monkeypatch, use_index):
    made = []
    real = sx._hit
    monkeypatch.setattr(sx, "_hit", lambda *a: made.append(a) or real(*a))
    store = open_store(str(many))
    got = sx.search(store, sx.SearchQuery(text="portland", exact=True, limit=7, use_index=use_index), [])
    assert len(got) == 7 and all("portland" in h.text.lower() for h in got)
    keys = [sx._exact_key(h.exact == "whole", h.date_ts if h.date_ts is not None else -math.inf, h) for h in got]
    assert keys == sorted(keys)
    assert len(made) <= 7 + 1  # the old code: one per match tied on the date, 2,000 here


def test_exact_results_are_the_same_with_and_without_the_index(many):
    store = open_store(str(many))
    for limit in (1, 5, 50):
        a = sx.search(store, sx.SearchQuery(text="portland", exact=True, limit=limit), [])
        b = sx.search(store, sx.SearchQuery(text="portland", exact=True, limit=limit, use_index=False), [])
        assert [h.to_dict() for h in a] == [h.to_dict() for h in b]
        assert [(h.conversation_id, h.position) for h in a if h.conversation_id == BIG] == sorted(
            (h.conversation_id, h.position) for h in a if h.conversation_id == BIG
        )


def test_rows_holding_finds_what_a_row_by_row_test_finds():
    rnd = random.Random(7)
    for _ in range(200):
        texts = ["".join(rnd.choice("aAbB ") for _ in range(rnd.randint(1, 6))) for _ in range(rnd.randint(1, 12))]
        texts = [t for t in texts if t.strip()] or ["a"]
        b = ixrows.Batch("k")
        for i, t in enumerate(texts):
            b.add(1, 1, 0, "C", i, None, 0.5, 0, f"r{i}", t)
        w = SegmentWriter("/r")
        w.add_chunk(ixrows.process([b]))
        seg = w.finish()
        import numpy as np

        mask = np.array([rnd.random() < 0.7 for _ in texts])
        needle = "".join(rnd.choice("ab") for _ in range(rnd.randint(1, 3)))
        got = sx._rows_holding(seg, mask, needle.encode()).tolist()
        assert got == [i for i, t in enumerate(texts) if mask[i] and needle in sam_scoring.fold(t)], (texts, needle)


def test_a_conversation_named_with_c_is_not_decoded_to_find_its_topic(sam_demo, monkeypatch):
    from samctl.stores.sam.store import SamStore

    store = open_store(str(sam_demo))
    want = sx.resolve_scope(store, ["C2A1"])

    def no_load(*a, **k):
        raise AssertionError("the whole conversation was loaded")

    monkeypatch.setattr(SamStore, "load", no_load)
    got = sx.resolve_scope(open_store(str(sam_demo)), ["C2A1"])
    assert got == want and len(got) == 2  # the conversation and its shared topic
