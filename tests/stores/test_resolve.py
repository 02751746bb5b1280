"""Resolving what a user typed: exact ids win, unique prefixes resolve, and many texts list the store once."""

from __future__ import annotations

import pytest

from samctl.errors import NotFound, UsageError
from samctl.stores.resolve import Listed, resolve_id, resolve_many


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

    def holds_conversation(self, cid):
        return True

    def valid_id(self, text):
        return len(text) == 19 and self.prefix_ok(text)

    def has_id(self, cid):
        return cid in self.ids  # (a store answers this without listing)


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


def test_a_prefix_of_one_conversation_and_of_empty_folders_names_the_conversation(run, sam_demo):
    """SAM leaves folders without a conversation.json (scopes, leftovers): `show 8B58` keeps working."""
    conv = sam_demo / "conversations"
    (conv / "8B58CBC4-0000-4000-8000-000000000000").mkdir(mode=0o700)
    r = run("--root", sam_demo, "show", "8B58", "--format", "json")
    assert r.exit_code == 0 and '"8B58CBC4-ACA7-4811-AE66-C01921690310"' in r.stdout, r.output
    # two real conversations under the prefix stay ambiguous
    other = conv / "8B58CBC4-1111-4000-8000-000000000000"
    other.mkdir(mode=0o700)
    (other / "conversation.json").write_bytes(
        (conv / "8B58CBC4-ACA7-4811-AE66-C01921690310" / "conversation.json").read_bytes()
    )
    r = run("--root", sam_demo, "show", "8B58")
    assert r.exit_code == 2 and "ambiguous" in r.stderr


def test_a_folder_a_crash_left_with_only_its_tmp_still_counts(run, sam_demo):
    """The folder whose save was cut short holds conversation.json.tmp: that is what recover is for,
    so a prefix matching it and a healthy conversation stays ambiguous."""
    conv = sam_demo / "conversations"
    crashed = conv / "8B58CBC4-1111-4111-8111-111111111111"
    crashed.mkdir(mode=0o700)
    (crashed / "conversation.json.tmp").write_bytes(
        (conv / "8B58CBC4-ACA7-4811-AE66-C01921690310" / "conversation.json").read_bytes()
    )
    r = run("--root", sam_demo, "recover", "8B58", "--dry-run")
    assert r.exit_code == 2 and "ambiguous" in r.stderr, r.output


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_a_whole_id_that_is_there_resolves_without_listing_the_store(run, mermaid_demo, sam_demo, monkeypatch, which):
    """`show ID` in a store of 100,000 listed the whole folder to find an id typed in full."""
    from samctl.stores.base import Store
    from samctl.stores.mermaid.store import MermaidStore
    from samctl.stores.sam.store import SamStore

    root, cid = (
        (mermaid_demo, "20260810_140307_512")
        if which == "mermaid"
        else (sam_demo, "8B58CBC4-ACA7-4811-AE66-C01921690310")
    )
    listed = []
    assert {MermaidStore, SamStore} <= set(Store.__subclasses__())
    for cls in (MermaidStore, SamStore):
        real = cls.all_ids
        monkeypatch.setattr(cls, "all_ids", lambda self, real=real: listed.append(1) or real(self))
    r = run("--root", root, "show", cid, "--format", "json")
    assert r.exit_code == 0 and cid in r.stdout, r.output
    assert listed == []
    r = run("--root", root, "show", cid[:8], "--format", "json")  # a prefix still resolves
    assert r.exit_code == 0 and cid in r.stdout, r.output


def test_a_sam_id_whose_folder_is_named_in_lowercase_still_resolves(run, sam_demo):
    conv = sam_demo / "conversations"
    cid = "8B58CBC4-ACA7-4811-AE66-C01921690310"
    (conv / cid).rename(conv / cid.lower())
    r = run("--root", sam_demo, "show", cid, "--format", "json")
    assert r.exit_code == 0 and cid in r.stdout, r.output
