"""A search without the index (``--no-index``, ``--no-cache``) builds the same index in a temporary
folder and removes it: its results, scores and findings are those of the index, for every ranking."""

from __future__ import annotations

import itertools
import json
import os

import pytest

from bench import gen_archive as gen
from samctl.search import dispatch as sx
from samctl.search.index import rows as ixrows
from samctl.stores import open_store
from samctl.stores.sam.memorydb import create_archive_db
from tests.search_helpers import age

QUERIES = ("budget", "quokka deadline", "café plan", "trip", "the", "zanzibar ferry")


def _hits(root, text, *, use_index, exact=False, limit=10, where="all", since=None, cache=True, rank="bm25"):
    findings: list = []
    store = open_store(str(root), cache=cache)
    q = sx.SearchQuery(
        text=text,
        where=where,
        threshold=0.05 if not exact else 0.3,
        limit=limit,
        exact=exact,
        since=since,
        use_index=use_index,
        rank=rank,
    )
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
        msgs = [
            {
                "id": f"BBBBBBBB-0000-4000-8000-{i:06d}{j:06d}",
                "content": text,
                "isFromUser": j % 2 == 0,
                "timestamp": 808063980.5 + j,
                "role": "user" if j % 2 == 0 else "assistant",
            }
            for j, text in enumerate(kept + lost)
        ]
        create_archive_db(
            folder / "context_archive.db",
            [
                {
                    "id": f"AAAAAAAA-0000-4000-8000-{i:012d}",
                    "conversation_id": folder.name.upper(),
                    "messages": msgs,
                    "time_start": "2026-08-10T14:13:00.500",
                    "time_end": "2026-08-10T14:13:10.000",
                    "summary": "s",
                    "key_topics": ["zanzibar"],
                    "token_count": 20,
                    "created_at": "2026-08-10T14:13:10.000",
                }
            ],
        )
    age(base)
    return base / "SAM"


@pytest.fixture
def tiny_parts(monkeypatch):
    """Every source read on its own, and almost no candidates beyond the limit: every cut is taken."""
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    monkeypatch.setattr(sx, "RESCORE_MARGIN", 1)


@pytest.mark.parametrize("which", ["sam", "mermaid"])
def test_no_index_gives_the_results_of_the_index(which, tmp_path, tiny_parts, monkeypatch):
    if which == "sam":
        root = _sam_with_archives(tmp_path / "s")
    else:
        gen.make_mermaid(tmp_path / "m", 30, seed=2, jobs=1, progress=False)
        age(tmp_path / "m")
        root = tmp_path / "m"
    compared = 0
    for text, (exact, rank), limit, where in itertools.product(
        QUERIES, ((False, "bm25"), (False, "sam"), (True, "bm25")), (1, 2, 7), ("all", "messages")
    ):
        indexed = _hits(root, text, use_index=True, exact=exact, limit=limit, where=where, rank=rank)
        parts = _hits(root, text, use_index=False, exact=exact, limit=limit, where=where, rank=rank)
        assert parts == indexed, (text, exact, limit, where)
        compared += len(indexed[0])
    assert compared > 100  # the queries find things, and the cuts had something to cut
    if which == "sam":  # the archive rows are there: hidden when a copy, found when lost
        every, _ = _hits(root, "zanzibar ferry budget note", use_index=False, limit=1000, where="messages")
        kinds = [h["kind"] for h in every]
        assert kinds.count("archived") >= 3 * 5 and all(
            h["text"].startswith("zanzibar") for h in every if h["kind"] == "archived"
        )


def test_no_cache_searches_a_temporary_index_and_leaves_nothing(tmp_path, tiny_parts, monkeypatch):
    root = _sam_with_archives(tmp_path / "s")
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    monkeypatch.setenv("TMPDIR", str(tmp))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    for rank in ("bm25", "sam"):
        got = _hits(root, "budget", use_index=True, cache=False, rank=rank)
        assert got[0] and not cache.exists() and not list(tmp.iterdir())


def test_an_archived_copy_of_a_legacy_message_is_hidden(tmp_path, tiny_parts, monkeypatch):
    """A folder whose conversation.json is gone keeps its context_archive.db, and the legacy
    conversations.json holds that conversation: its messages hide the archived copies of them, in
    parts as in the index, since every archive is read after every other source (discover lists
    the legacy file last)."""
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


def test_an_archived_copy_of_a_message_in_an_oddly_named_folder_is_hidden(tmp_path, tiny_parts, monkeypatch):
    """SAM loads a conversation.json from a folder not named by a UUID (discover lists those after
    every UUID folder); the conversation's own folder keeps its context_archive.db."""
    root = _sam_with_archives(tmp_path / "s")
    conv_dir = root / "conversations"
    folder = sorted(p for p in conv_dir.iterdir() if (p / "context_archive.db").exists())[0]
    doc = json.loads((folder / "conversation.json").read_text())
    lost = "zanzibar ferry budget note 0 0"  # archived in that folder (see _sam_with_archives)
    doc["messages"].append(dict(doc["messages"][0], id="DDDDDDDD-0000-4000-8000-000000000001", content=lost))
    (conv_dir / "zz-odd").mkdir()
    (conv_dir / "zz-odd" / "conversation.json").write_text(json.dumps(doc))
    (folder / "conversation.json").unlink()
    age(root)
    indexed = _hits(root, lost, use_index=True, limit=50, where="messages")
    assert [h["kind"] for h in indexed[0] if h["text"] == lost] == ["message"]
    assert _hits(root, lost, use_index=False, limit=50, where="messages") == indexed


def test_a_shared_topic_is_named_as_in_the_index(run, sam_demo, tmp_path):
    """A topic's memories are titled after the first conversation that names it, in discover's order:
    here a folder's, not the legacy file's (which parts read before every archive)."""
    conv_dir = sam_demo / "conversations"
    with_topic = [
        p
        for p in conv_dir.glob("*/conversation.json")
        if (json.loads(p.read_text()).get("settings") or {}).get("sharedTopicId")
    ]
    assert with_topic
    doc = json.loads(with_topic[0].read_text())
    doc["settings"]["sharedTopicName"] = "Folder Name"
    with_topic[0].write_text(json.dumps(doc))
    legacy = dict(
        doc,
        id="0A0A0A0A-0000-4000-8000-000000000001",
        title="Legacy chat",
        settings=dict(doc["settings"], sharedTopicName="Legacy Name"),
    )
    (conv_dir / "conversations.json").write_text(json.dumps([legacy]))
    age(sam_demo)
    args = ("--root", sam_demo, "search", "Q3 budget maximum", "--in", "memories", "--format", "json", "-n", "3")
    indexed = run(*args)
    assert indexed.exit_code == 0 and "Folder Name (shared topic)" in indexed.stdout
    assert (run(*args, "--no-index").stdout, run(*args, "--no-index").exit_code) == (indexed.stdout, 0)


def test_near_ties_beyond_the_margin_are_cut_as_in_the_index(tmp_path, monkeypatch):
    """Hundreds of copies of one message, more than RESCORE_MARGIN beyond the limit, so the cut keeps
    "the best approximations": which those are must not depend on how the rows are split (the
    approximate score of a row is computed the same way wherever it sits)."""
    gen.make_sam(tmp_path / "t", 45, memories_per_conversation=1, seed=6, jobs=1, progress=False)
    conv_dir = tmp_path / "t" / "SAM" / "conversations"
    for i, f in enumerate(sorted(p for p in conv_dir.iterdir() if (p / "conversation.json").exists())):
        d = json.loads((f / "conversation.json").read_text())
        if i == 0:  # an odd number of rows in its own part: the copy is the last row of its matrix
            n = sum(1 for m in d["messages"] if isinstance(m.get("content"), str) and m["content"].strip())
            d["messages"] = d["messages"][:-1] if n % 2 == 1 else d["messages"]
        d["messages"] += [
            dict(d["messages"][0], id=f"CCCCCCCC-0000-4000-8000-{i:06d}{j:06d}", content="quokka zebra lantern")
            for j in range(1 if i == 0 else 20)
        ]
        (f / "conversation.json").write_text(json.dumps(d))
    age(tmp_path / "t")
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    for text in ("lantern zebra trip", "tiger zebra festival", "zebra river budget", "lantern quokka tiger moth"):
        for limit in (1, 3):
            for rank in ("bm25", "sam"):
                indexed = _hits(tmp_path / "t" / "SAM", text, use_index=True, limit=limit, where="messages", rank=rank)
                assert (
                    _hits(tmp_path / "t" / "SAM", text, use_index=False, limit=limit, where="messages", rank=rank)
                    == indexed
                )
    # --exact: 880 matches with one date; each part keeps only its first ``limit`` in the results' order
    kept = []
    real = sx._candidates
    monkeypatch.setattr(sx, "_candidates", lambda *a: kept.append(len((c := real(*a))[0].hits)) or c)
    indexed = _hits(tmp_path / "t" / "SAM", "quokka zebra lantern", use_index=True, exact=True, limit=2)
    assert kept == [2] and len(indexed[0]) == 2
    assert _hits(tmp_path / "t" / "SAM", "quokka zebra lantern", use_index=False, exact=True, limit=2) == indexed


def test_an_approximate_score_does_not_depend_on_how_the_rows_are_split(monkeypatch):
    import numpy as np

    rng = np.random.default_rng(7)
    v = rng.standard_normal((1000, 256), dtype=np.float32)
    q = rng.standard_normal(256).astype(np.float32)
    whole = sx._dots(v, q)
    monkeypatch.setattr(sx, "DOTS_CHUNK", 7)  # (split among threads)
    assert np.array_equal(sx._dots(v, q), whole)
    for a, b in ((0, 1), (3, 999), (500, 1000), (1, 2)):
        assert np.array_equal(sx._dots(v[a:b], q), whole[a:b])
    rows = np.array([5, 77, 998])
    assert np.array_equal(sx._dots(v[rows], q), whole[rows])
    assert np.allclose(whole, v.astype(np.float64) @ q.astype(np.float64), atol=sx.EPS / 10)


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


def test_findings_keep_their_order_when_the_index_reads_a_file_again(tmp_path):
    """A refresh puts the sources it read again last in the index; the findings still come in
    discover's order, search after search, as without the index."""
    import time

    root = _sam_with_archives(tmp_path / "s")
    conv_dir = root / "conversations"
    folders = sorted(p for p in conv_dir.iterdir() if p.is_dir())
    first_bad = folders[1] / "conversation.json"
    first_bad.write_text("{not json")
    (folders[-2] / "memory.db").write_bytes(b"not a database" * 100)
    age(root)
    before = _hits(root, "budget", use_index=True)[1]
    assert len(before) >= 2 and first_bad.name in before[0] and str(folders[1]) in before[0]
    first_bad.write_text("{not json")  # saved again, as broken: read again by the next refresh
    t = time.time() - 1800
    os.utime(first_bad, (t, t))
    assert _hits(root, "budget", use_index=True)[1] == before
    assert _hits(root, "budget", use_index=False)[1] == before
