"""A search in quick succession trusts the last full check of the store (search/index/checked.py):
what it still sees at once (files added, removed, saved by rename), what it sees only after
SAMCTL_INDEX_RECHECK seconds (a file changed in place), and that it reports the same findings."""

from __future__ import annotations

import json
import os
import time

import pytest

from samctl.search import index as ix
from samctl.stores import open_store
from tests.search_helpers import age


@pytest.fixture
def mermaid(mermaid_demo, monkeypatch):
    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "30")
    monkeypatch.setenv("SAMCTL_DEBUG", "1")
    age(mermaid_demo)
    return mermaid_demo


def texts(run, root, query):
    r = run("--root", root, "search", query, "--format", "json", "-n", "100")
    hits = json.loads(r.stdout)
    assert r.exit_code in ((0, 3) if hits else (1, 3)), r.stderr  # (nothing matches: 1, as grep)
    return [h["text"] for h in hits], r.stderr


def _snapshot(root):
    """The session that talks about a budget."""
    return next(p for p in sorted((root / ".mermaid" / "conversations").glob("*.json")) if "budget" in p.read_text())


def test_a_snapshot_saved_by_rename_is_seen_at_once(run, mermaid):
    texts(run, mermaid, "budget")
    snap = _snapshot(mermaid)
    doc = json.loads(snap.read_text())
    doc["messages"][0]["content"] = "a quokka joined the standup"
    tmp = snap.with_name(".x.tmp")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, snap)
    age(mermaid)
    got, _ = texts(run, mermaid, "quokka")
    assert got and "quokka" in got[0]


def test_a_file_changed_in_place_is_seen_after_the_recheck_time(run, mermaid, monkeypatch):
    texts(run, mermaid, "budget")
    assert (ix.index_dir(open_store(str(mermaid))) / "checked").exists()
    snap = _snapshot(mermaid)
    doc = json.loads(snap.read_text())
    doc["messages"][0]["content"] = "a wombat joined the standup"
    with open(snap, "r+") as f:  # in place: the folder does not change
        f.write(json.dumps(doc))
        f.truncate()
    age(mermaid)
    assert texts(run, mermaid, "wombat")[0] == []  # within SAMCTL_INDEX_RECHECK: the last check holds
    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "0")
    got, _ = texts(run, mermaid, "wombat")
    assert got and "wombat" in got[0]


def test_the_record_expires(run, mermaid, monkeypatch):
    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "0.5")
    texts(run, mermaid, "budget")
    snap = _snapshot(mermaid)
    with open(snap, "r+") as f:
        data = f.read().replace("budget", "gadget")
        f.seek(0)
        f.write(data)
    age(mermaid)
    time.sleep(0.6)
    got, _ = texts(run, mermaid, "gadget")
    assert got


def test_a_removed_session_is_gone_at_once(run, mermaid):
    before, _ = texts(run, mermaid, "budget")
    snap = _snapshot(mermaid)
    for p in snap.parent.glob(snap.stem + ".*"):
        p.unlink()
    after, _ = texts(run, mermaid, "budget")
    assert len(after) < len(before)


def test_the_quick_path_reports_the_same_findings(run, mermaid):
    bad = mermaid / ".mermaid" / "conversations" / "20990101_000000_001.json"
    bad.write_text("{not json")
    age(mermaid)
    _, first = texts(run, mermaid, "budget")
    _, again = texts(run, mermaid, "budget")
    assert "bad-snapshot" in first or "bad-json" in first or "20990101_000000_001" in first
    assert again == first


def test_a_racy_file_means_no_record(run, mermaid):
    snap = _snapshot(mermaid)
    os.utime(snap)  # modified just now: indexed without a signature, read again next time
    texts(run, mermaid, "budget")
    assert not (ix.index_dir(open_store(str(mermaid))) / "checked").exists()


def _sam_of_12(base):
    """A SAM tree of 12 conversations, each in its folder; their ids."""
    from fixtures import make_fixtures as mf

    mf.build_demo_sam(base)
    ids = [f"00000000-0000-4000-8000-{i:012d}" for i in range(12)]
    for i, cid in enumerate(ids):
        msg = mf.sam_message(
            f"10000000-0000-4000-8000-{i:012d}", "user", f"note {i} about the ledger", "2026-09-02T08:30:00Z"
        )
        mf._write(
            base / "conversations" / cid / "conversation.json",
            mf.sam_dumps(mf.sam_doc(cid, f"note {i}", [msg], "2026-09-02T08:29:50Z", "2026-09-02T08:31:05Z")),
        )
    age(base)
    return ids


def test_a_sam_conversation_saved_by_rename_is_seen_at_once_among_many(run, tmp_path, monkeypatch):
    """SAM keeps each conversation in a folder of its own: the quick path states every one of them
    (through one descriptor of their parent when there are many), and sees one file replaced."""
    from fixtures import make_fixtures as mf

    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "30")
    base = tmp_path / "SAM"
    ids = _sam_of_12(base)
    assert len(texts(run, base, "ledger")[0]) == 12
    assert (ix.index_dir(open_store(str(base))) / "checked").exists()
    path = base / "conversations" / ids[7] / "conversation.json"
    doc = json.loads(path.read_text())
    doc["messages"][0]["content"] = "a quokka joined the standup"
    tmp = path.with_name(".x.tmp")
    tmp.write_text(mf.sam_dumps(doc))
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    age(base)
    got, _ = texts(run, base, "quokka")
    assert got == ["a quokka joined the standup"]
    assert len(texts(run, base, "ledger")[0]) == 11


def test_a_store_opened_by_a_relative_root_is_trusted_from_another_folder(run, tmp_path, monkeypatch):
    """The record names its folders from the root folder: a store searched as ``--root SAM`` from one
    folder, then as ``--root a/SAM`` from the one above, is trusted there (no full check)."""
    from samctl.search.index import checked

    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "30")
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "cache"))
    _sam_of_12(tmp_path / "a" / "SAM")
    monkeypatch.chdir(tmp_path / "a")
    assert len(texts(run, "SAM", "ledger")[0]) == 12
    monkeypatch.chdir(tmp_path)
    quick = checked.recent(ix.index_dir(open_store("a/SAM")))
    assert quick is not None and quick.holds()


def test_a_file_named_from_its_own_folder_is_watched_there(tmp_path, monkeypatch):
    """A store given as a bare file name from the folder holding it (``--root export.zip``): the record
    watches that folder, so the last full check holds until the file is replaced there."""
    from types import SimpleNamespace

    from samctl.search.index import checked

    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "30")
    (tmp_path / "dl").mkdir()
    (tmp_path / "dl" / "export.zip").write_bytes(b"one")
    (tmp_path / "idx").mkdir()
    monkeypatch.chdir(tmp_path / "dl")
    checked.save(tmp_path / "idx", {"k": SimpleNamespace(trusted=True, paths=["export.zip"])}, [], set())
    assert checked.recent(tmp_path / "idx").holds()
    (tmp_path / "dl" / "new.zip").write_bytes(b"two")
    os.replace(tmp_path / "dl" / "new.zip", tmp_path / "dl" / "export.zip")
    assert not checked.recent(tmp_path / "idx").holds()


def test_no_record_is_saved_from_a_folder_that_was_removed(tmp_path, monkeypatch):
    """The record's folders are named from the root folder, which needs this process's folder: from
    one removed meanwhile, no record (a full check next time), and no error."""
    from types import SimpleNamespace

    from samctl.search.index import checked

    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "30")
    (tmp_path / "conv" / "c1").mkdir(parents=True)
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    src = SimpleNamespace(trusted=True, paths=[str(tmp_path / "conv" / "c1" / "conversation.json")])
    checked.save(tmp_path, {"c1": src}, [], set())
    assert not (tmp_path / checked.RECORD).exists()


@pytest.mark.parametrize("child", [False, True], ids=["thread", "child process"])
def test_many_folders_stated_while_ranking_see_a_file_replaced(run, tmp_path, monkeypatch, child):
    """Past OUT_OF_LINE_AT folders the record is checked in a thread or a child process
    (folderstate.py): either sees one conversation.json replaced, and holds when nothing changed."""
    from samctl.search.index import checked

    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "30")
    monkeypatch.setattr(checked, "OUT_OF_LINE_AT", 1)
    base = tmp_path / "SAM"
    ids = _sam_of_12(base)
    assert len(texts(run, base, "ledger")[0]) == 12
    d = ix.index_dir(open_store(str(base)))
    quick = checked.recent(d, child)
    assert (quick._child is not None) == child and (quick._thread is not None) != child
    assert quick.holds() and quick.holds()  # (asked twice: the same answer)
    path = base / "conversations" / ids[3] / "conversation.json"
    tmp = path.with_name(".x.tmp")
    tmp.write_bytes(path.read_bytes())
    os.replace(tmp, path)
    assert not checked.recent(d, child).holds()


@pytest.mark.parametrize("child", [False, True], ids=["no child", "child process"])
def test_the_ranking_keeps_to_one_thread_while_a_child_states_folders(tmp_path, monkeypatch, child):
    """Two stores searched together, one's folders stated by a child process (on the other core): the
    ranking's passes stay in the search's thread until it is done; without a child they are split."""
    from samctl.search import dispatch, halves
    from samctl.search.hits import SearchQuery
    from samctl.search.index import checked
    from samctl.search.query import parse

    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "30")
    monkeypatch.setattr(checked, "OUT_OF_LINE_AT", 1 if child else 1 << 30)
    monkeypatch.setattr(halves, "MIN_ROWS", 1)
    roots = [tmp_path / "a" / "SAM", tmp_path / "b" / "SAM"]
    for r in roots:
        _sam_of_12(r)
    alone, real = [], halves.run
    monkeypatch.setattr(
        halves, "run", lambda *a, **k: alone.append(getattr(halves._LOCAL, "alone", False)) or real(*a, **k)
    )

    def search():
        alone.clear()
        q = SearchQuery(text="ledger note", limit=30)
        hits = dispatch.search([open_store(str(r)) for r in roots], q, [], None, parse(q.text))
        assert len(hits) == 12  # (the same conversations in both: each one hit)
        return alone[:]

    search()  # (full checks, recorded)
    got = search()  # (trusting them while the folders are stated)
    assert got and (all(got) if child else not any(got))
    assert not getattr(halves._LOCAL, "alone", False)  # (as it was, after the search)


def test_a_child_answer_for_another_record_does_not_hold(tmp_path, monkeypatch):
    """The child reads the record itself: one replaced after it was read here (another samctl's
    full check) gives the other digest, which does not count."""
    from samctl.search.index import checked, folderstate

    monkeypatch.setattr(checked, "OUT_OF_LINE_AT", 1)
    for i in range(3):
        (tmp_path / "f" / str(i)).mkdir(parents=True)
    folders = [[str(tmp_path / "f"), ["0", "1", "2"]]]
    saved = folderstate.digest(folders)
    body = folderstate.pack(saved, folders)
    record = tmp_path / "checked"
    record.write_bytes(b"{}\n" + body)
    assert checked.Recent([], [], 3, body, saved, record, child=True).holds()
    assert not checked.Recent([], [], 3, body, "0" * 32, record, child=True).holds()
    assert not checked.Recent([], [], 3, body, "0" * 32, record, child=False).holds()


def _record(tmp_path, folders):
    """A record of ``folders`` as they are now, written at tmp_path/checked: (path, body, digest)."""
    from samctl.search.index import folderstate

    saved = folderstate.digest(folders)
    body = folderstate.pack(saved, folders)
    (tmp_path / "checked").write_bytes(b"{}\n" + body)
    return tmp_path / "checked", body, saved


def _gone(pid: int) -> bool:
    """Whether no process ``pid`` is left (none, or none but a zombie nobody waits for)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.fixture
def one_stater(monkeypatch):
    """This test's staters alone: none kept by an earlier test, each left ended."""
    from samctl.search.index import checked

    monkeypatch.setattr(checked, "OUT_OF_LINE_AT", 1)
    monkeypatch.setattr(checked, "_IDLE", [])
    yield checked._IDLE
    for stater in checked._IDLE:
        stater.end()


def test_a_stater_that_answered_states_the_next_record_and_sees_a_change(tmp_path, one_stater):
    """The child that answered is kept, and states the next record asked of it (no interpreter
    started again): a folder renamed into since is seen, by the same process."""
    from samctl.search.index import checked

    for i in range(3):
        (tmp_path / "f" / str(i)).mkdir(parents=True)
    folders = [[str(tmp_path / "f"), ["0", "1", "2"]]]
    path, body, saved = _record(tmp_path, folders)
    first = checked.Recent([], [], 3, body, saved, path, child=True)
    pid = first._child.pid
    assert first.holds() and [s.pid for s in one_stater] == [pid]
    again = checked.Recent([], [], 3, body, saved, path, child=True)
    assert again._child.pid == pid and not one_stater and again.holds()
    (tmp_path / "f" / "1" / "x.tmp").write_text("x")
    os.replace(tmp_path / "f" / "1" / "x.tmp", tmp_path / "f" / "1" / "conversation.json")
    changed = checked.Recent([], [], 3, body, saved, path, child=True)
    assert changed._child.pid == pid and not changed.holds()
    assert [s.pid for s in one_stater] == [pid]


def test_a_kept_stater_reads_relative_paths_from_the_askers_folder(tmp_path, monkeypatch, one_stater):
    """A record's folders may be relative (a store opened by a relative --root): a kept stater reads
    them from the folder of the process that asks now, not the one it was started in."""
    from samctl.search.index import checked

    for side in ("a", "b"):
        (tmp_path / side / "f" / "0").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a")
    path, body, saved = _record(tmp_path, [["f", ["0"]]])
    assert checked.Recent([], [], 1, body, saved, path, child=True).holds() and one_stater
    monkeypatch.chdir(tmp_path / "b")  # (another folder f/0: another inode)
    assert not checked.Recent([], [], 1, body, saved, path, child=True).holds()
    monkeypatch.chdir(tmp_path / "a")
    assert checked.Recent([], [], 1, body, saved, path, child=True).holds()


def test_a_stater_that_died_or_was_left_unread_is_never_asked_again(tmp_path, one_stater):
    """A kept stater killed meanwhile is replaced by a new one; one asked but never read (a search
    that failed before ``holds``) is ended, not kept: its answer belongs to no later request."""
    import gc
    import signal

    from samctl.search.index import checked

    (tmp_path / "f" / "0").mkdir(parents=True)
    path, body, saved = _record(tmp_path, [[str(tmp_path / "f"), ["0"]]])
    assert checked.Recent([], [], 1, body, saved, path, child=True).holds()
    dead = one_stater[0].pid
    os.kill(dead, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not _gone(dead) and time.monotonic() < deadline:  # (the kill takes effect soon, not at once)
        time.sleep(0.01)
    quick = checked.Recent([], [], 1, body, saved, path, child=True)
    assert quick._child.pid != dead and quick.holds()
    unread = checked.Recent([], [], 1, body, saved, path, child=True)
    left = unread._child.pid
    del unread
    gc.collect()
    assert _gone(left) and left not in [s.pid for s in one_stater]
    assert checked.Recent([], [], 1, body, saved, path, child=True).holds()


def test_a_forked_copy_ending_a_stater_leaves_it_to_the_process_that_started_it(tmp_path, one_stater):
    """A worker forked from a process keeping a stater holds a copy of it: ending the copy (as the
    worker's exit would) kills nothing, and the stater still answers its own process."""
    from samctl.search.index import checked

    (tmp_path / "f" / "0").mkdir(parents=True)
    path, body, saved = _record(tmp_path, [[str(tmp_path / "f"), ["0"]]])
    assert checked.Recent([], [], 1, body, saved, path, child=True).holds()
    pid = one_stater[0].pid
    worker = os.fork()
    if worker == 0:  # pragma: no cover - the forked copy
        for stater in checked._IDLE:
            stater.end()
        os._exit(0)
    assert os.waitpid(worker, 0)[1] == 0 and not _gone(pid)
    quick = checked.Recent([], [], 1, body, saved, path, child=True)
    assert quick._child.pid == pid and quick.holds()


def test_no_stater_outlives_the_process_that_searched(tmp_path):
    """A process that searched several stores twice keeps a stater until it exits, then none is left."""
    import subprocess
    import sys

    roots = [tmp_path / "a" / "SAM", tmp_path / "b" / "SAM"]
    for r in roots:
        _sam_of_12(r)
    script = (
        "import sys\n"
        "from samctl.search import dispatch\n"
        "from samctl.search.hits import SearchQuery\n"
        "from samctl.search.index import checked\n"
        "from samctl.stores import open_store\n"
        "checked.OUT_OF_LINE_AT = 1\n"
        "for _ in range(2):\n"
        "    q = SearchQuery(text='ledger', limit=30)\n"
        "    assert len(dispatch.search([open_store(r) for r in sys.argv[1:]], q, [], None)) == 12\n"
        "print(checked._IDLE[0].pid)\n"
    )
    env = dict(os.environ, SAMCTL_INDEX_RECHECK="30", SAMCTL_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", script, *map(str, roots)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert _gone(int(r.stdout))


def test_a_child_that_cannot_start_leaves_it_to_a_thread(tmp_path, monkeypatch):
    """No Python to start (a broken interpreter path): the folders are stated in a thread instead."""
    import sys

    from samctl.search.index import checked, folderstate

    monkeypatch.setattr(checked, "OUT_OF_LINE_AT", 1)
    monkeypatch.setattr(checked, "_IDLE", [])  # (no stater an earlier search left)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    (tmp_path / "f" / "0").mkdir(parents=True)
    folders = [[str(tmp_path / "f"), ["0"]]]
    saved = folderstate.digest(folders)
    body = folderstate.pack(saved, folders)
    (tmp_path / "checked").write_bytes(b"{}\n" + body)
    quick = checked.Recent([], [], 1, body, saved, tmp_path / "checked", child=True)
    assert quick._child is None and quick._thread is not None and quick.holds()


@pytest.mark.parametrize(
    "groups",
    [
        [["/", ["a", "b"]]],
        [["", ["top"]], ["top", ["x\ny", "\u00e9t\u00e9", "with space"]]],
        [["/tmp", [os.fsdecode(b"caf\xe9")]]],
    ],
)
def test_packed_folders_read_back_as_written(groups):
    """The record's folders (NUL-separated, a count per parent): an empty parent (a relative path's
    top), newlines and undecodable bytes in names come back, and state alike as bytes or str."""
    from samctl.search.index import folderstate

    saved, back = folderstate.unpack(folderstate.pack("ab12", groups))
    assert saved == "ab12" and back == [[os.fsencode(p), [os.fsencode(n) for n in ns]] for p, ns in groups]
    assert folderstate.digest(back) == folderstate.digest(groups)


@pytest.mark.parametrize(
    "content, expected",
    [
        (None, "0"),
        (b"{}", "0"),
        (b"{}\nabc", "0"),
        (b"{}\nabc\0x\0/\0a", "0"),
        (b"{}\nabc\x002\0/\0a", "0"),
        (b"{}\nabc\x001\0/\0", "0"),
        (b"{}\n\xff\x001\0/\0a", "0"),
        (b"{}\nabc\x001\0/nowhere/at/all\0x", "0 abc"),
    ],
)
def test_folderstate_script_answers_0_for_what_it_cannot_check(tmp_path, content, expected):
    """``python -I -S -B folderstate.py``, asked about a record (from the folder the request names):
    "0" (and the record's digest when it has one) for a record missing, unreadable or malformed, and
    never fails; a second request is answered too, and it ends when its stdin does."""
    import subprocess
    import sys

    from samctl.search.index import folderstate

    record = tmp_path / "checked"
    if content is not None:
        record.write_bytes(content)
    request = os.fsencode(tmp_path) + b"\0checked\0"  # (the record's path relative to that folder)
    r = subprocess.run(
        [sys.executable, "-I", "-S", "-B", folderstate.__file__], input=request * 2, capture_output=True, cwd="/"
    )
    assert (r.returncode, r.stdout.decode(), r.stderr) == (0, f"{expected}\n" * 2, b"")


def test_a_record_over_the_cap_is_not_read(tmp_path, monkeypatch):
    """A record larger than ``RECORD_CAP`` is answered "0" (a full check), one at the cap is read."""
    from samctl.search.index import folderstate

    (tmp_path / "f" / "0").mkdir(parents=True)
    folders = [[str(tmp_path / "f"), ["0"]]]
    saved = folderstate.digest(folders)
    record = tmp_path / "checked"
    record.write_bytes(b"{}\n" + folderstate.pack(saved, folders))
    monkeypatch.setattr(folderstate, "RECORD_CAP", record.stat().st_size)
    assert folderstate.answer(os.fsencode(record)) == "1 " + saved
    monkeypatch.setattr(folderstate, "RECORD_CAP", record.stat().st_size - 1)
    assert folderstate.answer(os.fsencode(record)) == "0"


def test_folderstate_script_imports_only_modules_built_into_python(tmp_path):
    """The child's imports are on the search's path (a union search waits for it): run as it is run,
    it loads nothing beyond the interpreter's own start but built-in modules and ``_blake2``."""
    import subprocess
    import sys

    from samctl.search.index import folderstate

    probe = (
        "import sys; before = set(sys.modules); sys.path.insert(0, sys.argv[1]); import folderstate; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    here = os.path.dirname(folderstate.__file__)
    r = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", probe, here], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    extra = set(r.stdout.split()) - {"folderstate", "_blake2"}
    assert extra <= set(sys.builtin_module_names), extra


def test_mermaid_files_that_are_not_regular_files_are_findings_and_the_rest_is_found(run, mermaid, tmp_path):
    """Discovery states each session's files relative to its folder: a snapshot that is a symlink (not
    followed), a log that is a folder and a snapshot that is a FIFO are each reported with their whole
    path (exit 3), the log of a session without one counts as absent, and the other sessions are found."""
    conv = mermaid / ".mermaid" / "conversations"
    outside = tmp_path / "outside.json"
    outside.write_text(_snapshot(mermaid).read_text())
    (conv / "20990101_000000_001.json").symlink_to(outside)
    (conv / "20990101_000000_002.jsonl").mkdir()
    os.mkfifo(conv / "20990101_000000_003.json")
    before = sorted(p.name for p in conv.iterdir())
    r = run("--root", mermaid, "search", "budget", "--format", "json")
    assert r.exit_code == 3, r.stderr
    for name in ("20990101_000000_001.json", "20990101_000000_002.jsonl", "20990101_000000_003.json"):
        assert f"not-regular: {conv / name}" in r.stderr, (name, r.stderr)
    assert any("budget" in h["text"].lower() for h in json.loads(r.stdout))
    assert sorted(p.name for p in conv.iterdir()) == before


def test_mermaid_discovery_in_worker_processes_finds_what_one_process_finds(tmp_path, monkeypatch):
    """Past PARALLEL_SESSIONS sessions their files are stated by worker processes, a part each: the same
    sources in the same order (signatures, trust) and the same findings, bad files included."""
    from bench import gen_archive as gen
    from samctl.stores.mermaid import search as msearch

    root = tmp_path / "m"
    gen.make_mermaid(root, 40, seed=5, jobs=1, progress=False)
    conv = root / ".mermaid" / "conversations"
    (conv / "20990101_000000_001.json").symlink_to(tmp_path / "nowhere.json")
    (conv / "20990101_000000_002.jsonl").mkdir()
    os.mkfifo(conv / "20990101_000000_003.json")
    next(conv.glob("*.jsonl")).unlink()  # (a session with a snapshot only)
    age(root)

    def discovered():
        findings: list = []
        got = open_store(str(root)).search_sources(findings)
        return list(got.items()), [(f.code, f.path, f.severity) for f in findings]

    one = discovered()
    monkeypatch.setattr(msearch, "PARALLEL_SESSIONS", 2)
    monkeypatch.setattr(msearch, "STAT_PART", 7)
    calls = []
    real = msearch.workers.ordered_map
    monkeypatch.setattr(msearch.workers, "ordered_map", lambda *a, **k: calls.append(len(a[2])) or real(*a, **k))
    assert discovered() == one
    assert calls == [7]  # (43 sessions in parts of 7)
    assert {c for c, _, _ in one[1]} == {"not-regular"} and len(one[1]) == 3
