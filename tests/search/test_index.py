"""The disposable search index: where it lives, that it is never trusted, incremental refresh,
concurrent builders, compaction, `samctl index`."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from samctl.fs import userdirs
from samctl.search import dispatch as sx
from samctl.search import index as ix
from samctl.search.index import update as ixupdate
from samctl.stores import open_store
from tests.conftest import fingerprint
from tests.search_helpers import SAM_ID, TOPIC, age, insert_memory

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def sam(sam_demo, monkeypatch):
    age(sam_demo)
    monkeypatch.setenv("SAMCTL_DEBUG", "1")
    return sam_demo


def refresh(root, **kw):
    findings: list = []
    idx = ix.refresh(open_store(str(root)), findings, **kw)
    return idx, findings


def query(root, text="budget", **kw):
    findings: list = []
    q = sx.SearchQuery(text=text, threshold=-10.0, limit=1000, **kw)
    return [(h.kind, h.conversation_id, h.ref, h.score) for h in sx.search(open_store(str(root)), q, findings)]


def _old(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def files_of(d):
    return sorted(p.name for p in d.iterdir())


def test_index_lives_in_the_cache_private(sam):
    before = fingerprint(sam)
    idx, findings = refresh(sam)
    assert findings == [] and idx.rebuilt
    d = ix.index_dir(open_store(str(sam)))
    assert d.parent == userdirs.cache_dir()
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    for p in d.iterdir():
        assert stat.S_IMODE(os.lstat(p).st_mode) == 0o600, p
    names = files_of(d)
    assert "manifest" in names and any(n.endswith(".seg") for n in names)
    assert fingerprint(sam) == before  # building the index writes nothing into the store
    idx2, _ = refresh(sam)
    assert not idx2.rebuilt and idx2.read == []  # warm: nothing re-read
    assert idx2.rows == idx.rows > 0


def test_a_store_without_rows(tmp_path, monkeypatch, run):
    from samctl.stores.sam.memorydb import create_memory_db

    monkeypatch.setenv("SAMCTL_DEBUG", "1")
    base = tmp_path / "SAM"
    (base / "conversations" / SAM_ID).mkdir(parents=True)
    create_memory_db(base / "conversations" / SAM_ID / "memory.db", [])
    age(base)
    idx, findings = refresh(base)
    assert idx.rows == 0 and findings == [] and idx.segments == []
    r = run("--root", base, "search", "budget")
    assert r.exit_code == 1 and "no matches" in r.stderr
    assert json.loads(run("--root", base, "index", "--format", "json").stdout)["stores"][0]["valid"] is True


def test_no_cache_writes_no_index(sam, run):
    cache = userdirs.cache_dir()
    r = run("--root", sam, "--no-cache", "search", "budget")
    assert r.exit_code == 0, r.stderr
    assert not list(cache.glob("search-*"))


def _segment(d):
    return next(p for p in d.iterdir() if p.name.endswith(".seg"))


def _section_at(seg, name):
    """Where section ``name`` of the segment file ``seg`` starts (its header, before the trailer, says)."""
    raw = seg.read_bytes()
    hoff, hlen, _crc, _magic = ix.TRAILER.unpack_from(raw, len(raw) - ix.TRAILER.size)
    return json.loads(raw[hoff : hoff + hlen])["sections"][name][0]


# A blob's offsets are checked when a query first reads them (Segment.offsets), not when it is opened.
LAZY_CORRUPTIONS = {
    "text offsets going down": lambda d: _flip(_segment(d), _section_at(_segment(d), "text_off") + 8 * 3 + 7),
    "ref offsets past the end": lambda d: _flip(_segment(d), _section_at(_segment(d), "ref_off") + 8 * 2 + 6),
    "text offsets all past the end": lambda d: _flip(_segment(d), _section_at(_segment(d), "text_off") + 8 * 1 + 7),
}

CORRUPTIONS = {
    "truncated segment": lambda d: os.truncate(_segment(d), os.path.getsize(_segment(d)) // 2),
    "garbage segment": lambda d: _segment(d).write_bytes(os.urandom(4096)),
    "missing segment": lambda d: _segment(d).unlink(),
    "garbage manifest": lambda d: (d / "manifest").write_bytes(b"\x00garbage" * 100),
    "empty manifest": lambda d: (d / "manifest").write_bytes(b""),
    "truncated manifest": lambda d: os.truncate(d / "manifest", 40),
    "wrong version": lambda d: _patch_manifest(d, v=ix.INDEX_VERSION + 1),
    "wrong body version": lambda d: _patch_manifest(d, body_v=0),
    "flipped manifest byte": lambda d: _flip(d / "manifest", 30),
    "flipped byte of the manifest's source table": lambda d: _flip(d / "manifest", _table_at(d, "src") + 3),
    "flipped byte of the manifest's titles": lambda d: _flip(d / "manifest", _table_at(d, 2) + 3),
    "flipped byte of the manifest's notes": lambda d: _flip(d / "manifest", _table_at(d, 1) + 3),
    "flipped last manifest byte": lambda d: _flip(d / "manifest", os.path.getsize(d / "manifest") - 1),
    "flipped segment header": lambda d: _flip(_segment(d), os.path.getsize(_segment(d)) - 40),
    # dead ranges that are not [start, end] pairs of integers within the segment (written with a good checksum)
    "dead range past the rows": lambda d: _patch_manifest(d, dead=lambda n: [[0, 1], [n - 1, n + 1]]),
    "dead range reversed": lambda d: _patch_manifest(d, dead=lambda n: [[2, 1]]),
    "dead range below 0": lambda d: _patch_manifest(d, dead=lambda n: [[-1, 1]] * 20),
    "dead range of a bool": lambda d: _patch_manifest(d, dead=lambda n: [[0, True]]),
    "dead range of a float": lambda d: _patch_manifest(d, dead=lambda n: [[0, 1.0]]),
    "dead range of 3 numbers": lambda d: _patch_manifest(d, dead=lambda n: [[0, 1, 2]]),
    "dead range of a string": lambda d: _patch_manifest(d, dead=lambda n: ["01"]),
    "dead ranges of a dict": lambda d: _patch_manifest(d, dead=lambda n: {"0": 1}),
    "dead range beyond int64": lambda d: _patch_manifest(d, dead=lambda n: [[0, 1 << 63]]),
    # a source's conversations (src["infos"]: position -> ids) that are not that
    "infos of a position past the sources": lambda d: _patch_manifest(d, infos=lambda n: {str(n): ["x"]}),
    "infos of a key that is no position": lambda d: _patch_manifest(d, infos=lambda n: {"-1": ["x"]}),
    "infos that are not a list": lambda d: _patch_manifest(d, infos=lambda n: {"0": "x"}),
    "infos holding a number": lambda d: _patch_manifest(d, infos=lambda n: {"0": ["x", 1]}),
    "infos that are a list": lambda d: _patch_manifest(d, infos=lambda n: [["x"]]),
}


def _flip(p, offset):
    data = bytearray(p.read_bytes())
    data[offset] ^= 0xFF
    p.write_bytes(bytes(data))


def _table_at(d, i):
    """Where the manifest's table ``i`` starts (the head's line, then a line per table: "src" (0),
    "notes" (1), then each bucket of the conversation table)."""
    raw = (d / "manifest").read_bytes()
    lines = raw[16:].split(b"\n")
    return 16 + sum(len(x) + 1 for x in lines[: 1 + (0 if i == "src" else i)])


def _patch_manifest(d, v=None, body_v=None, dead=None, infos=None):
    raw = (d / "manifest").read_bytes()
    head, src, notes, *conv = raw[16:].split(b"\n")
    body = {
        **json.loads(head),
        "src": json.loads(src),
        "notes": json.loads(notes),
        "conv": [json.loads(b) for b in conv],
    }
    if body_v is not None:
        body["v"] = body_v
    if dead is not None:
        body["segments"][0]["dead"] = dead(body["segments"][0]["rows"])
    if infos is not None:
        body["src"]["infos"] = infos(len(body["src"]["keys"]))
    ix.write_manifest_bytes(d / "manifest", body, version=v if v is not None else ix.INDEX_VERSION)


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_a_corrupt_index_is_rebuilt_never_trusted(sam, name):
    want = query(sam)
    idx, _ = refresh(sam)
    d = ix.index_dir(open_store(str(sam)))
    CORRUPTIONS[name](d)
    idx, findings = refresh(sam)
    assert idx.rebuilt, name
    assert findings == []  # rebuilt silently
    assert query(sam) == want


def test_a_full_check_keeps_none_of_the_tables_it_decoded(sam, monkeypatch):
    """A full check decodes and checks every table of the manifest (for 100,000 sources, hundreds of MiB
    of objects, which a search then held while it ranked); the index it returns keeps none of them and
    decodes each again, checked, when read: the same sources, titles and findings, and a table whose
    bytes changed since is refused."""
    from samctl.search.index.manifest import Manifest, read_manifest

    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "0")  # (every refresh checks fully)
    checks: list = []
    real_check = Manifest.check
    monkeypatch.setattr(Manifest, "check", lambda self: checks.append(self) or real_check(self))
    want = query(sam)
    idx, findings = refresh(sam)
    m = idx.manifest
    assert checks and checks[-1] is m  # (every table was decoded, then)
    assert m._raw and all(m._tables[k] is m._raw[k] for k in m._raw)
    assert m._sources is None and m._sig is None and m._convs is None
    store = open_store(str(sam))
    fresh = read_manifest(ix.index_dir(store) / "manifest", store)
    assert m.sources() == fresh.sources() and m.ids_titles_folded() == fresh.ids_titles_folded()
    assert query(sam) == want and refresh(sam)[1] == findings
    m.forget_decoded()
    at = len(m.mapped) - 2  # (a byte of the last table: the file is changed in place, under the map)
    with open(ix.index_dir(store) / "manifest", "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(b"0" if byte != b"0" else b"1")
    m.check()  # (every table was found good before: not decoded again for that)
    with pytest.raises(ix.BadIndex):
        m.ids_titles_folded()  # (read: checked again)


@pytest.mark.parametrize("name", sorted(LAZY_CORRUPTIONS))
def test_offsets_found_wrong_by_a_query_make_it_rebuild(sam, name, monkeypatch):
    """Found when a hit is read: the search rebuilds the index and answers as before."""
    monkeypatch.delenv("SAMCTL_DEBUG")  # (which makes a broken index raise)
    want = query(sam)
    refresh(sam)
    d = ix.index_dir(open_store(str(sam)))
    before = {p.name for p in d.iterdir()}
    LAZY_CORRUPTIONS[name](d)
    assert query(sam) == want
    assert {p.name for p in d.iterdir() if p.name.endswith(".seg")}.isdisjoint(before)  # rebuilt


@pytest.mark.parametrize("error", [IndexError, KeyError, ValueError])
def test_a_ranking_bug_on_a_whole_index_costs_one_rebuild_not_two(sam, error, monkeypatch):
    """An error that is no index's, raised again by an index just rebuilt whose every byte matches its
    checksum, is samctl's own: shown at once, not after a third build in a temporary folder."""
    from samctl.search import fulltext

    monkeypatch.delenv("SAMCTL_DEBUG")
    refresh(sam)
    builds = []
    real_refresh = ix.refresh

    def counted(store, findings, **kw):
        builds.append((kw.get("rebuild"), kw.get("home") is not None))
        return real_refresh(store, findings, **kw)

    def broken(*a, **kw):
        raise error("a ranking bug")

    monkeypatch.setattr(ix, "refresh", counted)
    monkeypatch.setattr(fulltext, "search", broken)
    with pytest.raises(error, match="a ranking bug"):
        query(sam)
    assert builds == [(False, False), (True, False)]  # the index as it was, then rebuilt once


def test_an_error_a_rebuild_cures_is_never_shown(sam, monkeypatch):
    """The first try fails, the rebuilt index answers: the search gives its hits (a broken index)."""
    from samctl.search import fulltext

    monkeypatch.delenv("SAMCTL_DEBUG")
    want = query(sam)
    real_search, calls = fulltext.search, []

    def once_broken(*a, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise IndexError("offsets of a broken segment")
        return real_search(*a, **kw)

    monkeypatch.setattr(fulltext, "search", once_broken)
    assert query(sam) == want and len(calls) == 2


def test_an_index_of_another_root_is_rebuilt(sam, tmp_path):
    other = tmp_path / "other" / "SAM"
    shutil.copytree(sam, other)
    insert_memory(
        other / "conversations" / SAM_ID / "memory.db",
        "99999999-0000-4000-8000-000000000001",
        SAM_ID,
        "only in the other tree: budget zanzibar",
        None,
    )
    age(other)
    want = query(sam)
    refresh(other)
    src = ix.index_dir(open_store(str(other)))
    dst = ix.index_dir(open_store(str(sam)))
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    idx, _ = refresh(sam)
    assert idx.rebuilt
    assert query(sam) == want
    assert "zanzibar" not in json.dumps(query(sam))


def test_incremental_refresh_rereads_only_the_changed_file(sam, monkeypatch):
    refresh(sam)
    db = sam / "conversations" / SAM_ID / "memory.db"
    insert_memory(db, "99999999-0000-4000-8000-000000000002", SAM_ID, "the budget for zanzibar", None)
    _old(db, 1800)  # changed, and older than the racy window
    opened = []
    real = ix.read_source
    monkeypatch.setattr(ix, "read_source", lambda store, src: opened.append(src.paths) or real(store, src))
    idx, _ = refresh(sam)
    assert not idx.rebuilt
    assert idx.read == [f"{SAM_ID}/memory.db"]
    assert opened == [(str(db),)]  # the only file read
    got = query(sam, "zanzibar budget")
    assert got[0][2] == "99999999-0000-4000-8000-000000000002"
    # the same answer as a fresh build
    d = ix.index_dir(open_store(str(sam)))
    shutil.rmtree(d)
    assert query(sam, "zanzibar budget") == got


def test_a_removed_conversation_leaves_the_index(sam):
    refresh(sam)
    shutil.rmtree(sam / "conversations" / SAM_ID)
    idx, _ = refresh(sam)
    assert idx.read == [] and sorted(idx.removed) == sorted([f"{SAM_ID}/conversation.json", f"{SAM_ID}/memory.db"])
    assert all(c != SAM_ID for _, c, _, _ in query(sam, "portland"))


def test_a_file_changed_within_the_racy_window_is_read_again(sam):
    refresh(sam)
    db = sam / "conversations" / SAM_ID / "memory.db"
    os.utime(db)  # now
    idx, _ = refresh(sam)
    assert idx.read == [f"{SAM_ID}/memory.db"]
    idx, _ = refresh(sam)
    assert idx.read == [f"{SAM_ID}/memory.db"]  # still too fresh to trust its (size, mtime)
    _old(db, 3600)
    idx, _ = refresh(sam)
    assert idx.read == [f"{SAM_ID}/memory.db"]
    idx, _ = refresh(sam)
    assert idx.read == []


def test_scoped_refresh_reads_only_the_scope(sam):
    store = open_store(str(sam))
    idx = ix.refresh(store, [], scope={TOPIC})
    assert idx.read == [f"{TOPIC}/memory.db"]
    idx = ix.refresh(store, [])
    assert f"{TOPIC}/memory.db" not in idx.read and f"{SAM_ID}/memory.db" in idx.read


def test_compaction_keeps_results(sam, monkeypatch):
    db = sam / "conversations" / SAM_ID / "memory.db"
    monkeypatch.setattr(ixupdate, "DEAD_FRACTION", 0.3)  # (the big segment decays with each note: not yet)
    first, _ = refresh(sam)
    base = first.segments[0].name
    for i in range(ix.MAX_SEGMENTS + 3):
        insert_memory(db, f"99999999-0000-4000-8000-{i:012d}", SAM_ID, f"budget note number {i}", None)
        _old(db, 1800 - i)
        idx, _ = refresh(sam)
        assert len(idx.segments) <= ix.MAX_SEGMENTS
        names = [s.name for s in idx.segments]
        if base in names:  # tiered: the small segments are merged, the big one is left alone ...
            assert idx.rows == first.rows + i + 1
    assert base in names and len(names) == 2
    # ... until more than DEAD_FRACTION of its rows are dead: then it is rewritten with what is alive in it
    for folder in (SAM_ID, TOPIC, "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"):  # all but the API chat: > 30% dead
        for p in (sam / "conversations" / folder).iterdir():
            _old(p, 900)
    idx, _ = refresh(sam)
    assert base not in {s.name for s in idx.segments} and len(idx.segments) <= 2  # (the re-read files: the other)
    got = query(sam)
    shutil.rmtree(ix.index_dir(open_store(str(sam))))
    assert query(sam) == got
    assert len(got) >= ix.MAX_SEGMENTS + 3


def _child_refresh(root, q):
    try:
        findings: list = []
        ix.refresh(open_store(root), findings, rebuild=True)
        q.put(("ok", len(findings)))
    except BaseException as exc:  # noqa: BLE001
        q.put(("error", repr(exc)))


def test_concurrent_builders_do_not_corrupt_the_index(sam):
    want = query(sam)
    shutil.rmtree(ix.index_dir(open_store(str(sam))))
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_child_refresh, args=(str(sam), q)) for _ in range(3)]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
    assert results == [("ok", 0)] * 3
    idx, _ = refresh(sam)
    assert not idx.rebuilt and idx.read == []
    assert query(sam) == want
    d = ix.index_dir(open_store(str(sam)))
    assert not [n for n in files_of(d) if n.endswith(".tmp")]
    assert len([n for n in files_of(d) if n.endswith(".seg")]) == 1


# --- samctl index ---------------------------------------------------------------------------------


def test_index_command_state_and_rebuild(run, sam):
    r = run("--root", sam, "index", "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)["stores"][0]  # (one store: a list of one, docs/json.md)
    assert doc["exists"] is False
    r = run("--root", sam, "index", "--rebuild")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(run("--root", sam, "index", "--format", "json").stdout)["stores"][0]
    assert doc["exists"] and doc["rows"]["memory"] == 3 and doc["rows"]["message"] > 5
    assert doc["files"] >= 5 and doc["size"] > 0 and doc["stale"] == [] and doc["age"] >= 0
    assert doc["valid"] is True
    text = run("--root", sam, "index").stdout
    assert "rows:" in text and "stale:" in text and "files:" in text
    insert_memory(
        sam / "conversations" / SAM_ID / "memory.db", "99999999-0000-4000-8000-000000000009", SAM_ID, "x", None
    )
    doc = json.loads(run("--root", sam, "index", "--format", "json").stdout)["stores"][0]
    assert [s["key"] for s in doc["stale"]] == [f"{SAM_ID}/memory.db"]
    assert "1 file changed" in run("--root", sam, "index").stdout


def test_index_verify_finds_flipped_data(run, sam):
    run("--root", sam, "index", "--rebuild")
    seg = _segment(ix.index_dir(open_store(str(sam))))
    _flip(seg, 200)  # inside the vectors
    doc = json.loads(run("--root", sam, "index", "--format", "json").stdout)["stores"][0]
    assert doc["valid"] is False and doc["problems"] and doc["dropped"]
    r = run("--root", sam, "search", "budget")  # dropped: the next search rebuilds
    assert r.exit_code == 0
    doc = json.loads(run("--root", sam, "index", "--format", "json").stdout)["stores"][0]
    assert doc["valid"] is True


def test_progress_only_on_a_tty(sam):
    from samctl.cli.index import progress_printer

    class Stream:
        def __init__(self, tty):
            self.tty, self.out = tty, []

        def isatty(self):
            return self.tty

        def write(self, s):
            self.out.append(s)

        def flush(self):
            pass

    assert progress_printer(Stream(False)) is None
    s = Stream(True)
    p = progress_printer(s, interval=0, delay=0)
    ix.refresh(open_store(str(sam)), [], rebuild=True, progress=p)
    p.done()
    assert any("\r" in x for x in s.out) and "rows" in "".join(s.out)


def test_index_command_refuses_no_cache(run, sam):
    r = run("--root", sam, "--no-cache", "index")
    assert r.exit_code == 2 and "--no-cache" in r.stderr


def _section(seg_path, name):
    data = seg_path.read_bytes()
    hoff, hlen, _crc, _magic = ix.TRAILER.unpack_from(data, len(data) - ix.TRAILER.size)
    off, nbytes, *_ = json.loads(data[hoff : hoff + hlen])["sections"][name]
    return off, nbytes


@pytest.mark.parametrize("section", ["tok_rows", "meta"])
def test_garbage_inside_a_section_is_caught_when_used(sam, monkeypatch, section):
    want = query(sam)
    refresh(sam)
    seg = _segment(ix.index_dir(open_store(str(sam))))
    off, nbytes = _section(seg, section)
    data = bytearray(seg.read_bytes())
    data[off : off + nbytes] = b"\xff" * nbytes  # row -1 everywhere / every code out of range
    seg.write_bytes(bytes(data))
    monkeypatch.delenv("SAMCTL_DEBUG")
    assert query(sam) == want  # noticed while searching: rebuilt, same answer
    idx, _ = refresh(sam)
    assert not idx.rebuilt and idx.read == []


def test_an_unwritable_cache_costs_only_time(sam, tmp_path, monkeypatch, run):
    want = query(sam)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.delenv("SAMCTL_DEBUG")
    assert query(sam) == want
    r = run("--root", sam, "search", "budget")
    assert r.exit_code == 0 and r.stdout


def test_an_edit_that_puts_the_mtime_back_is_read_again(sam):
    """Same size, same mtime, same inode (an editor that saves in place, then restores the
    mtime): the ctime, which no one can set, still tells."""
    refresh(sam)
    conv = sam / "conversations" / SAM_ID / "conversation.json"
    st = conv.stat()
    data = conv.read_bytes()
    assert b"weekend trip" in data
    with open(conv, "r+b") as f:
        f.write(data.replace(b"weekend trip", b"zanzibr trip"))
    os.utime(conv, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (conv.stat().st_size, conv.stat().st_mtime_ns, conv.stat().st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    idx, _ = refresh(sam)
    assert idx.read == [f"{SAM_ID}/conversation.json"]
    assert any(c == SAM_ID for _, c, _, _ in query(sam, "zanzibr", where="messages"))


def test_update_and_rebuild_together_is_a_usage_error(run, sam):
    r = run("--root", sam, "index", "--update", "--rebuild")
    assert r.exit_code == 2 and "not both" in r.stderr
    assert not ix.index_dir(open_store(str(sam))).exists()


@pytest.mark.parametrize("how", ["--update", "--rebuild"])
def test_update_and_rebuild_report_the_files_they_could_not_read(run, sam, how):
    conv = sam / "conversations" / SAM_ID / "conversation.json"
    conv.write_bytes(conv.read_bytes()[:-100])
    _old(conv, 3600)
    r = run("--root", sam, "index", how)
    assert r.exit_code == 3, r.stderr
    assert "error: bad-json: " in r.stderr and str(conv) in r.stderr
    assert run("--root", sam, "index").exit_code == 0  # the state alone: its count of files with problems


@pytest.mark.parametrize("exact", [True, False])
def test_a_flipped_byte_in_a_shown_row_is_caught_by_the_search(run, sam, monkeypatch, exact):
    """Only samctl index reads every byte against its checksums; a search checks the rows it
    shows: edited segment text is never served as a result (the index is rebuilt)."""
    args = ["search", "--exact", "a weekend trip to"] if exact else ["search", "weekend trip"]
    want = run("--root", sam, "--no-cache", *args, "--format", "json").stdout
    assert "Plan a weekend trip to Portland" in want
    refresh(sam)
    seg = _segment(ix.index_dir(open_store(str(sam))))
    data = seg.read_bytes()
    assert data.count(b"Plan a weekend") == 1
    seg.write_bytes(data.replace(b"Plan a weekend", b"Hack a weekend"))
    monkeypatch.delenv("SAMCTL_DEBUG")
    r = run("--root", sam, *args, "--format", "json")
    assert r.exit_code == 0 and r.stdout == want and "Hack" not in r.stdout


def test_titles_are_looked_up_in_one_bucket_and_topics_named_in_order(tmp_path):
    """The manifest's conversation table is bucketed by id: every title found through its bucket, a
    shared topic named after the first conversation found in it, ``convs()`` in the order found."""
    from types import SimpleNamespace

    from samctl.search.index import manifest as mf

    convs = {}
    for i in range(1000):
        cid = f"conv-{i:04d}-é"
        convs[cid] = {
            "id": cid,
            "title": f"title {i}" if i % 7 else None,
            "topic": "T1" if i % 100 == 50 else None,
            "topic_name": f"name {i}" if i % 100 == 50 else None,
        }
    man = {
        "v": ix.INDEX_VERSION,
        "root": "/r",
        "store": "sam",
        "terms": ix.format.TERMS_NAME,
        "token_hash": ix.format.TOKEN_HASH_NAME,
        "created": 1.0,
        "updated": 1.0,
        "segments": [],
        "hidden": {},
        "sources": {},
        "convs": convs,
    }
    body = mf.encode_manifest(man)
    assert len(body["conv"]) == 4  # 1,000 conversations, about 256 a bucket
    mf.write_manifest_bytes(tmp_path / "manifest", body)
    m = mf.read_manifest(tmp_path / "manifest", SimpleNamespace(root_real="/r", name="sam"))
    assert all(m.title_of(c["id"]) == (c["title"] or "") for c in convs.values())
    assert m.title_of("T1") == "name 50 (shared topic)"
    assert m.title_of("nobody") == ""
    assert list(m.convs()) == list(convs) and m.convs() == convs


def test_index_check_reads_every_table_of_the_manifest(run, sam):
    """A title bucket no search has read yet is checked by `samctl index`, and the index dropped."""
    run("--root", sam, "index", "--rebuild")
    d = ix.index_dir(open_store(str(sam)))
    _flip(d / "manifest", _table_at(d, 2) + 3)
    doc = json.loads(run("--root", sam, "index", "--format", "json").stdout)["stores"][0]
    assert doc["valid"] is False and any("manifest" in p for p in doc["problems"]) and doc["dropped"]


def test_segments_past_the_descriptor_budget_read_through_their_map(sam, monkeypatch):
    """When a quarter of the open-files limit is taken by segments, more segments read through their
    map instead of keeping a descriptor: the same answers."""
    from samctl.search.index import opened, segment

    want = query(sam)
    monkeypatch.setattr(segment, "_FDS", [10**9])  # (every descriptor already taken)
    monkeypatch.setattr(opened, "_OPENED", {})  # (none kept from the query above: each opened again)
    idx, _ = refresh(sam)
    assert idx.segments and all(s.fd is None for s in idx.segments)
    assert query(sam) == want


@pytest.mark.parametrize("rows", [1, 7, 300])
def test_alive_mask_is_false_exactly_in_the_dead_ranges(rows):
    """Few ranges are cleared one by one, many (an index refreshed often) at once: both agree with the
    definition, for empty, overlapping, touching and whole-segment ranges."""
    import random

    from samctl.search.index.manifest import alive_mask

    rnd = random.Random(rows)
    for n in (0, 1, 3, 15, 16, 17, 200):
        dead = [sorted((rnd.randint(0, rows), rnd.randint(0, rows))) for _ in range(n)]
        want = [not any(a <= r < b for a, b in dead) for r in range(rows)]
        assert alive_mask(rows, dead).tolist() == want, (n, dead)
    assert not alive_mask(rows, [[0, rows]] * 20).any()


@pytest.mark.parametrize("tree", ["claude_code/projects", "codex"])
def test_discovery_names_each_session_by_the_file_raw_path_names(tree):
    """Discovery takes a listed session's path as the store's index holds it (no Path made for each of
    thousands): the same file ``raw_path`` names, one source per listed session."""
    store = open_store(str(REPO / "fixtures" / "demo" / tree))
    found: list = []
    sources = store.search_sources(found)
    ids = [m.id for m in store.list_metas([])]
    assert ids and sorted(sources) == sorted(ids)
    for cid, src in sources.items():
        assert src.paths == (str(store.raw_path(cid)),) == (store.source_path(cid),)
