"""Resolving what a user typed: exact ids win, unique prefixes resolve, and many texts list the store once."""

from __future__ import annotations

import pytest

from samctl.core.resolve import Listed, resolve_id, resolve_many
from samctl.errors import NotFound, UsageError


class FakeStore:
    name = "mermaid"
    id_rule = "YYYYMMDD_HHMMSS_mmm"
    conv_dir = "/nowhere"

    def __init__(self, ids):
        self.ids = list(ids)
        self.listings = 0

    def all_ids(self):
        self.listings += 1
        return list(self.ids)

    def prefix_ok(self, text):
        return text.replace("_", "").isdigit() and len(text) <= 19

    def normalize_prefix(self, text):
        return text


def test_exact_unique_ambiguous_and_unknown():
    store = FakeStore(["20260810_140307_512", "20260812_091500_004", "20260812_091500_041"])
    assert resolve_id(store, "20260810") == "20260810_140307_512"
    assert resolve_id(store, "20260812_091500_004") == "20260812_091500_004"
    with pytest.raises(UsageError, match="ambiguous: 2 conversations match .20260812_091500_004, 20260812_091500_041"):
        resolve_id(store, "20260812")
    with pytest.raises(NotFound, match="no conversation matches '2027' in /nowhere"):
        resolve_id(store, "2027")
    with pytest.raises(UsageError, match="not a mermaid conversation id"):
        resolve_id(store, "../etc")


def test_an_exact_id_wins_over_the_longer_ids_it_prefixes():
    store = FakeStore(["20260812_091500_04", "20260812_091500_041"])
    assert resolve_id(store, "20260812_091500_04") == "20260812_091500_04"


def test_many_texts_list_the_store_once_and_keep_their_order():
    ids = [f"20260101_{i:06d}_000" for i in range(2000)]
    store = FakeStore(ids)
    texts = [ids[i] for i in range(1999, -1, -7)] + [ids[1999][:17]]
    out = resolve_many(store, texts)
    assert store.listings == 1
    assert out == list(dict.fromkeys(ids[i] for i in range(1999, -1, -7)))


def test_a_listed_view_can_carry_other_ids_and_name_another_folder():
    store = FakeStore(["20260810_140307_512"])
    view = Listed(store, ["20260101_000000_001"], where="/attic")
    assert resolve_id(view, "2026") == "20260101_000000_001"
    with pytest.raises(NotFound, match="in /attic"):
        resolve_id(view, "20260810")
    assert store.listings == 0
