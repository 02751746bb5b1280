"""A search without the index (``--no-index``, ``--no-cache``) reads the store into an index in
memory one part at a time and keeps only each part's best candidates: its results, scores and
findings are those of the index, whatever the parts and however tight the cut of candidates."""

from __future__ import annotations

import itertools
import json

import pytest

from bench import gen_archive as gen
from samctl.core import search as sx
from samctl.core.index import memory as ixmemory
from samctl.core.index import rows as ixrows
from samctl.formats import open_store
from samctl.formats.sam.memorydb import create_archive_db
from tests.search_helpers import age

QUERIES = ("budget", "quokka deadline", "café plan", "trip", "the", "zanzibar ferry")


def _hits(root, text, *, use_index, exact=False, limit=10, where="all", since=None, cache=True):
    findings: list = []
    store = open_store(str(root), cache=cache)
    q = sx.SearchQuery(text=text, where=where, threshold=0.05 if not exact else 0.3, limit=limit, exact=exact,
                       since=since, use_index=use_index)
    got = sx.search(store, q, findings)
    return [h.to_dict() for h in got], [f.line() for f in findings]


def _sam_with_archives(base):
    """Generated SAM conversations; some with a context_archive.db holding copies of messages the
    conversation still has (hidden) and messages it lost (searched), and a legacy conversations.json
    whose conversation an archive copies (the legacy file is read last by discover, first here)."""
    gen.make_sam(base, 14, memories_per_conversation=12, seed=5, jobs=1, progress=False)
    conv_dir = base / "SAM" / "conversations"
    folders = sorted(p for p in conv_dir.iterdir() if p.is_dir())
    for i, folder in enumerate(folders[::3]):
        doc = json.loads((folder / "conversation.json").read_text())
        kept = [m["content"] for m in doc["messages"] if isinstance(m.get("content"), str) and m["content"]][:2]
        lost = [f"zanzibar ferry budget note {i} {j}" for j in range(3)]
        msgs = [{"id": f"BBBBBBBB-0000-4000-8000-{i:06d}{j:06d}", "content": text, "isFromUser": j % 2 == 0,
                 "timestamp": 808063980.5 + j, "role": "user" if j % 2 == 0 else "assistant"}
                for j, text in enumerate(kept + lost)]
        create_archive_db(folder / "context_archive.db", [{
            "id": f"AAAAAAAA-0000-4000-8000-{i:012d}", "conversation_id": folder.name.upper(), "messages": msgs,
            "time_start": "2026-08-10T14:13:00.500", "time_end": "2026-08-10T14:13:10.000", "summary": "s",
            "key_topics": ["zanzibar"], "token_count": 20, "created_at": "2026-08-10T14:13:10.000"}])
    age(base)
    return base / "SAM"


@pytest.fixture
def tiny_parts(monkeypatch):
    """Every source a part of its own, and almost no candidates beyond the limit: every cut is taken."""
    monkeypatch.setattr(ixmemory, "PART_BYTES", 1)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    monkeypatch.setattr(sx, "RESCORE_MARGIN", 1)


def _parts_seen(monkeypatch):
    seen = []
    real = ixmemory.parts

    def counting(*a, **k):
        for idx in real(*a, **k):
            seen.append(idx)
            yield idx

    monkeypatch.setattr(ixmemory, "parts", counting)
    return seen


@pytest.mark.parametrize("which", ["sam", "mermaid"])
def test_parts_give_the_results_of_the_index(which, tmp_path, tiny_parts, monkeypatch):
    if which == "sam":
        root = _sam_with_archives(tmp_path / "s")
    else:
        gen.make_mermaid(tmp_path / "m", 30, seed=2, jobs=1, progress=False)
        age(tmp_path / "m")
        root = tmp_path / "m"
    seen = _parts_seen(monkeypatch)
    compared = 0
    for text, exact, limit, where in itertools.product(QUERIES, (False, True), (1, 2, 7), ("all", "messages")):
        indexed = _hits(root, text, use_index=True, exact=exact, limit=limit, where=where)
        seen.clear()
        parts = _hits(root, text, use_index=False, exact=exact, limit=limit, where=where)
        assert len(seen) > 10  # (many parts, each one source)
        assert parts == indexed, (text, exact, limit, where)
        compared += len(indexed[0])
    assert compared > 100  # the queries find things, and the cuts had something to cut
    if which == "sam":  # the archive rows are there: hidden when a copy, found when lost
        every, _ = _hits(root, "zanzibar ferry budget note", use_index=False, limit=1000, where="messages")
        kinds = [h["kind"] for h in every]
        assert kinds.count("archived") >= 3 * 5 and all(h["text"].startswith("zanzibar") for h in every
                                                         if h["kind"] == "archived")


def test_no_cache_searches_in_parts_and_writes_nothing(tmp_path, tiny_parts, monkeypatch):
    root = _sam_with_archives(tmp_path / "s")
    cache = tmp_path / "cache"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    seen = _parts_seen(monkeypatch)
    got = _hits(root, "budget", use_index=True, cache=False)
    assert seen and got[0] and not cache.exists()


def test_an_archived_copy_of_a_legacy_message_is_hidden(tmp_path, tiny_parts, monkeypatch):
    """A folder whose conversation.json is gone keeps its context_archive.db, and the legacy
    conversations.json holds that conversation: its messages hide the archived copies of them, in
    parts as in the index, since the legacy file is read before every folder (discover lists it last)."""
    root = _sam_with_archives(tmp_path / "s")
    conv_dir = root / "conversations"
    folder = sorted(p for p in conv_dir.iterdir() if (p / "context_archive.db").exists())[0]
    doc = json.loads((folder / "conversation.json").read_text())
    (folder / "conversation.json").unlink()
    lost = "zanzibar ferry budget note 0 0"  # archived in that folder (see _sam_with_archives)
    legacy = dict(doc, id=folder.name, messages=[dict(doc["messages"][0], content=lost)])
    (conv_dir / "conversations.json").write_text(json.dumps([legacy]))
    age(root)
    indexed = _hits(root, lost, use_index=True, limit=50, where="messages")
    texts = [(h["kind"], h["conversation_id"]) for h in indexed[0] if h["text"] == lost]
    assert texts == [("message", folder.name.upper())]  # the archived copy is hidden
    assert _hits(root, lost, use_index=False, limit=50, where="messages") == indexed
    # read in discover's order, the folder's archive would come before the legacy file: shown
    monkeypatch.setattr(ixmemory, "_legacy_first", lambda sources: sources)
    texts = [h["kind"] for h in _hits(root, lost, use_index=False, limit=50, where="messages")[0]
             if h["text"] == lost]
    assert sorted(texts) == ["archived", "message"]


def test_findings_come_in_the_order_of_the_index(tmp_path, tiny_parts):
    root = _sam_with_archives(tmp_path / "s")
    conv_dir = root / "conversations"
    folders = sorted(p for p in conv_dir.iterdir() if p.is_dir())
    (folders[1] / "conversation.json").write_text("{not json")
    (folders[-2] / "memory.db").write_bytes(b"not a database" * 100)
    (conv_dir / "conversations.json").write_text("[{}]")
    age(root)
    indexed = _hits(root, "budget", use_index=True)
    parts = _hits(root, "budget", use_index=False)
    assert parts == indexed and len(parts[1]) >= 3


def test_what_a_part_holds_is_let_go(tmp_path, monkeypatch):
    """Parts are cut by size, and a search holds one at a time (the one before is no longer referenced)."""
    import gc
    import weakref

    gen.make_mermaid(tmp_path / "m", 30, seed=2, jobs=1, progress=False)
    age(tmp_path / "m")
    monkeypatch.setattr(ixmemory, "PART_BYTES", 20 << 10)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 2)  # (a part is cut between chunks of sources)
    alive = []
    real = ixmemory.parts

    def watching(*a, **k):
        refs = []
        for idx in real(*a, **k):
            gc.collect()
            alive.append(sum(r() is not None for r in refs))
            refs.append(weakref.ref(idx.segments[0]))
            yield idx

    monkeypatch.setattr(ixmemory, "parts", watching)
    _hits(tmp_path / "m", "budget", use_index=False)
    assert len(alive) > 3 and max(alive) <= 1, alive  # (the one before: the search's loop still names it)
