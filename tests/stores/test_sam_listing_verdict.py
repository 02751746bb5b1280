"""A load after a listing in the same process (``export --all``) skips SAM's decodability walk for a
file the listing found decodable, and only while the file is as the listing saw it: size, mtime and
ctime (issue #32).  A file changed since, even to the same size with its mtime put back, is walked
again and its rejection reported."""

from __future__ import annotations

import os
import time

import orjson
import pytest

from samctl.stores import metacache
from samctl.stores.sam import store as sam_store
from tests.conftest import make_fixtures

RACY = 0.05  # seconds: the racy window these tests use, so that a file need not be two seconds old


@pytest.fixture
def aged_sam(tmp_path, monkeypatch):
    """The demo SAM tree, its files older than the (shortened) racy window: the listing keeps their ctime."""
    monkeypatch.setattr(sam_store, "RACY_SECONDS", RACY)
    monkeypatch.setattr(metacache, "RACY_SECONDS", RACY)
    monkeypatch.setattr(sam_store, "_DECODABLE", {}, raising=False)
    base = tmp_path / "SAM"
    make_fixtures.build_demo_sam(base)
    time.sleep(2 * RACY)
    return base


def _walks(monkeypatch) -> list:
    calls: list = []
    real = sam_store._first_rejection
    monkeypatch.setattr(sam_store, "_first_rejection", lambda doc: calls.append(1) or real(doc))
    return calls


def test_export_after_a_warm_listing_walks_no_decodable_file(run, aged_sam, monkeypatch):
    assert run("--root", aged_sam, "ls").exit_code == 0  # (fills the listing cache)
    before = run("--root", aged_sam, "export", "--all", "--to", "jsonl")
    monkeypatch.setattr(sam_store, "_DECODABLE", {}, raising=False)
    walks = _walks(monkeypatch)
    r = run("--root", aged_sam, "export", "--all", "--to", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert walks == []
    assert (r.stdout, r.stderr) == (before.stdout, before.stderr)
    assert r.stdout.count("\n") > 3


def _store(base):
    from samctl.stores import open_store

    return open_store(str(base))


def _rejected_same_size(path) -> None:
    """Rewrite ``path`` so that SAM refuses it (a message id that is not a UUID), same size, mtime put back."""
    st = os.stat(path)
    data = path.read_bytes()
    doc = orjson.loads(data)
    good = doc["messages"][0]["id"]
    bad = "X" + good[1:]
    assert len(bad) == len(good)
    new = data.replace(good.encode(), bad.encode(), 1)
    assert len(new) == len(data) and new != data
    path.write_bytes(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns


def test_a_file_changed_after_the_listing_is_walked_again(aged_sam, monkeypatch):
    store = _store(aged_sam)
    metas = store.list_metas([])
    assert metas
    cid = metas[0].id
    path = aged_sam / "conversations" / cid / "conversation.json"
    _rejected_same_size(path)
    walks = _walks(monkeypatch)
    found: list = []
    conv = store.load_listed(cid, found)
    assert conv is not None
    assert walks == [1]
    assert [f.code for f in found] == ["sam-reject"], found
    assert "SAM would skip this conversation" in found[0].reason


def test_an_unchanged_file_is_not_walked_and_a_fresh_process_walks_it(aged_sam, monkeypatch):
    store = _store(aged_sam)
    cid = store.list_metas([])[0].id
    walks = _walks(monkeypatch)
    found: list = []
    assert store.load_listed(cid, found) is not None
    assert walks == [] and found == []
    monkeypatch.setattr(sam_store, "_DECODABLE", {}, raising=False)  # (what a process that listed nothing knows)
    assert _store(aged_sam).load_listed(cid, found) is not None
    assert walks == [1] and found == []


def test_a_load_judges_each_message_hidden_once_and_counts_what_ls_counts(tmp_path, monkeypatch):
    """The meta's message count comes from the messages the load decodes, not from a second pass."""
    from samctl.stores.sam import decode

    base = tmp_path / "SAM"
    make_fixtures.build_demo_sam(base)
    store = _store(base)
    cid = store.list_metas([])[0].id
    path = base / "conversations" / cid / "conversation.json"
    doc = orjson.loads(path.read_bytes())
    extra = [dict(doc["messages"][0], content="", id=doc["messages"][0]["id"][:-1] + "0"), 7, "text", None]
    extra.append(dict(doc["messages"][0], isSystemGenerated=True, id=doc["messages"][0]["id"][:-1] + "1"))
    doc["messages"] += extra
    path.write_bytes(orjson.dumps(doc))
    calls: list = []
    real = decode.hidden_by_ui
    monkeypatch.setattr(decode, "hidden_by_ui", lambda m: calls.append(1) or real(m))
    conv = store.load_listed(cid, [])
    dicts = [m for m in doc["messages"] if isinstance(m, dict)]
    assert len(calls) == len(dicts) == len(conv.messages)
    monkeypatch.setattr(decode, "hidden_by_ui", real)
    assert conv.meta.message_count == decode.shown_count(doc["messages"]) <= len(dicts) - 2


def test_a_load_after_the_listing_has_the_meta_a_load_without_it_makes(aged_sam, monkeypatch):
    """The load takes the listing's row for an unchanged file instead of deriving the meta again: the
    same meta, field by field, whether the row was just scanned or came from the cache."""
    for _ in ("scanned", "cached"):
        store = _store(aged_sam)
        metas = store.list_metas([])
        assert len(metas) >= 3
        listed = {m.id: store.load_listed(m.id, []).meta for m in metas}
        monkeypatch.setattr(sam_store, "_DECODABLE", {}, raising=False)
        alone = {m.id: _store(aged_sam).load_listed(m.id, []).meta for m in metas}
        assert listed == alone
        assert all(m.path.endswith("conversation.json") and m.message_count is not None for m in listed.values())


def test_a_chmod_after_the_listing_is_read_again_once_and_then_skipped(run, aged_sam, monkeypatch):
    """A chmod (``check --fix`` tightens modes) changes every ctime and no size or mtime: the cached
    rows stay fresh but their ctime is stale, so without a new scan no later load could skip its walk
    and ``rm`` would parse every file for its topic.  The next listing reads such a file again (once)."""
    assert run("--root", aged_sam, "ls").exit_code == 0  # (fills the listing cache)
    files = sorted((aged_sam / "conversations").glob("*/conversation.json"))
    assert files
    for p in files:
        os.chmod(p, 0o400)
        os.chmod(p, 0o600)
    time.sleep(2 * RACY)
    monkeypatch.setattr(sam_store, "_DECODABLE", {}, raising=False)
    scans: list = []
    real_scan = sam_store.SamStore._scan
    monkeypatch.setattr(sam_store.SamStore, "_scan", lambda self, *a: scans.append(1) or real_scan(self, *a))
    assert run("--root", aged_sam, "ls").exit_code == 0
    assert len(scans) == len(files)  # read again, once each: the new ctime is cached
    monkeypatch.setattr(sam_store, "_DECODABLE", {}, raising=False)
    scans.clear()
    walks = _walks(monkeypatch)
    r = run("--root", aged_sam, "export", "--all", "--to", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert scans == [] and walks == []
