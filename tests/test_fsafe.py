import errno
import os
import stat
import time

import pytest

from samctl.errors import FileProblem, UnsafePath
from samctl.fs import faults, filemodes, reading, removing, safepaths, syncing, writing


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "a\\b", "x\0y", "/etc/passwd", "a" * 256])
def test_check_component_refuses_anything_but_one_plain_name(name):
    with pytest.raises(UnsafePath):
        safepaths.check_component(name)


def test_check_component_accepts_plain_names():
    assert safepaths.check_component("20260101_120000_001.json") == "20260101_120000_001.json"


def test_read_capped_reads_a_file_at_the_cap(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 100)
    assert reading.read_capped(p, 100) == b"x" * 100


def test_read_capped_refuses_one_byte_over_before_reading(tmp_path):
    p = tmp_path / "f"
    with open(p, "wb") as f:
        f.truncate(reading.SNAPSHOT_CAP + 1)  # sparse, as mermaid's own test
    with pytest.raises(FileProblem) as e:
        reading.read_capped(p, reading.SNAPSHOT_CAP)
    assert e.value.code == "too-large"
    assert "67108865 bytes" in e.value.message


@pytest.mark.parametrize(
    "kind,code", [("missing", "missing"), ("symlink", "symlink"), ("fifo", "not-regular"), ("dir", "not-regular")]
)
def test_read_capped_refuses_what_is_not_a_regular_file(tmp_path, kind, code):
    p = tmp_path / "f"
    if kind == "symlink":
        (tmp_path / "target").write_text("{}")
        os.symlink(tmp_path / "target", p)
    elif kind == "fifo":
        os.mkfifo(p)  # must not block
    elif kind == "dir":
        p.mkdir()
    with pytest.raises(FileProblem) as e:
        reading.read_capped(p, 1000)
    assert e.value.code == code


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_read_capped_reports_unreadable(tmp_path):
    p = tmp_path / "f"
    p.write_text("x")
    p.chmod(0)
    with pytest.raises(FileProblem) as e:
        reading.read_capped(p, 10)
    assert e.value.code == "unreadable"


def test_write_atomic_creates_0600_and_leaves_no_temp(tmp_path):
    p = tmp_path / "a.json"
    p.write_text("old")
    p.chmod(0o644)
    writing.write_atomic(p, b"new")
    writing.write_atomic(p, b"newer")
    assert p.read_bytes() == b"newer"
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["a.json"]


@pytest.mark.parametrize("step", ["tmp-write", "fsync", "rename", "dir-fsync"])
def test_write_atomic_interrupted_at_any_step_leaves_old_or_new(tmp_path, step, monkeypatch):
    p = tmp_path / "a.json"
    p.write_bytes(b"old")

    def boom(s):
        if s == step:
            raise RuntimeError("injected")

    monkeypatch.setattr(faults, "fault_hook", boom)
    with pytest.raises(RuntimeError):
        writing.write_atomic(p, b"new")
    assert p.read_bytes() in (b"old", b"new")
    if step != "dir-fsync":
        assert p.read_bytes() == b"old"
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


def test_temp_name_is_the_one_mermaids_sweeper_knows(tmp_path):
    name = writing.tmp_name("20260101_120000_001.json")
    assert name.startswith(".20260101_120000_001.json.")
    assert name.endswith(".tmp")
    pid, n = name[len(".20260101_120000_001.json.") : -4].split(".")
    assert int(pid) == os.getpid() and int(n) >= 0


def test_stale_temps_only_old_temps_of_that_target(tmp_path):
    old = tmp_path / ".x.json.1.0.tmp"
    fresh = tmp_path / ".x.json.1.1.tmp"
    other = tmp_path / ".y.json.1.0.tmp"
    for p in (old, fresh, other, tmp_path / "x.json"):
        p.write_text("")
    t = time.time() - 4000
    os.utime(old, (t, t))
    os.utime(other, (t, t))
    os.utime(tmp_path / "x.json", (t, t))
    assert writing.stale_temps(tmp_path, "x.json") == [old]
    assert sorted(writing.stale_temps(tmp_path)) == sorted([old, other])


def test_mode_problem_and_tighten(tmp_path):
    p = tmp_path / "f"
    p.write_text("")
    p.chmod(0o644)
    assert "0644" in filemodes.mode_problem(p.stat())
    assert filemodes.tighten_mode(p) == 0o600
    assert filemodes.mode_problem(p.stat()) is None
    d = tmp_path / "d"
    d.mkdir(mode=0o755)
    d.chmod(0o755)
    assert filemodes.tighten_mode(d) == 0o700


def test_is_inside(tmp_path):
    root = str(tmp_path.resolve())
    (tmp_path / "in").write_text("")
    os.symlink("/etc", tmp_path / "out")
    assert safepaths.is_inside(root, tmp_path / "in")
    assert not safepaths.is_inside(root, tmp_path / "out")
    assert not safepaths.is_inside(root + "x", tmp_path / "in")


def test_make_private_dir(tmp_path):
    d = writing.make_private_dir(tmp_path / "a" / "b")
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700


# --- sync_batch -------------------------------------------------------------------------


def _count_fsyncs(monkeypatch):
    calls = []
    monkeypatch.delenv("SAMCTL_TEST_NO_FSYNC")  # (fsyncs counted: the real ones)
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    return calls


def test_sync_batch_defers_every_fsync_to_one_syncfs_per_barrier(tmp_path, monkeypatch):
    if syncing._load_syncfs() is None:
        pytest.skip("no syncfs here")
    fsyncs = _count_fsyncs(monkeypatch)
    syncs = []
    monkeypatch.setattr(syncing, "syncfs", lambda fd: syncs.append(os.fstat(fd).st_dev))
    steps = []
    monkeypatch.setattr(faults, "fault_hook", steps.append)
    with syncing.sync_batch() as batch:
        for i in range(20):
            writing.write_atomic(tmp_path / f"f{i}", b"x")
        assert syncs == []
        batch.barrier()
        assert syncs == [os.stat(tmp_path).st_dev]
        batch.barrier()  # nothing written since: nothing to sync
        assert len(syncs) == 1
        writing.write_atomic(tmp_path / "last", b"y")
    assert len(syncs) == 2  # the block's last writes are made durable when it ends
    assert fsyncs == [] and steps.count("sync") == 2
    assert (tmp_path / "f7").read_bytes() == b"x" and syncing._batch is None


def test_without_syncfs_a_batch_fsyncs_every_write_as_usual(tmp_path, monkeypatch):
    fsyncs = _count_fsyncs(monkeypatch)
    monkeypatch.setattr(syncing, "syncfs", None)
    with syncing.sync_batch() as batch:
        writing.write_atomic(tmp_path / "a", b"x")
        batch.barrier()
    assert len(fsyncs) == 2  # the file, then its folder


def test_a_failed_syncfs_is_an_error_and_the_batch_ends(tmp_path, monkeypatch):
    if syncing._load_syncfs() is None:
        pytest.skip("no syncfs here")

    def eio(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(syncing, "syncfs", eio)
    with pytest.raises(OSError):
        with syncing.sync_batch() as batch:
            writing.write_atomic(tmp_path / "a", b"x")
            batch.barrier()
    assert syncing._batch is None


def test_a_batch_writes_back_early_in_the_background_and_its_barrier_still_syncs_last(tmp_path, monkeypatch):
    """Every EARLY bytes noted, a writeback runs on another thread; a barrier waits for it, then makes
    its own syncfs after the last write (only that one promises anything).  A failing early writeback
    is not an error: the barrier's own syncfs reports what is wrong."""
    import threading

    if syncing._load_syncfs() is None:
        pytest.skip("no syncfs here")
    calls = []  # (thread name, number of files written when it ran)
    written = []

    def slow_syncfs(fd):
        calls.append((threading.current_thread().name, len(written)))
        if threading.current_thread().name == "samctl-writeback":
            time.sleep(0.02)  # counts as useful (not tmpfs-fast), so early writebacks go on
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(syncing, "syncfs", slow_syncfs)
    monkeypatch.setattr(syncing.SyncBatch, "EARLY", 100)
    with syncing.sync_batch() as batch:
        for i in range(10):
            writing.write_atomic(tmp_path / f"f{i}", b"x" * 60)
            written.append(i)
        batch.barrier()
        assert batch.early is None  # waited for
    early = [c for c in calls if c[0] == "samctl-writeback"]
    own = [c for c in calls if c[0] != "samctl-writeback"]
    assert early and early[0][1] <= 2  # started after the second file (120 bytes), while writing went on
    assert own == [(threading.main_thread().name, 10)]  # the barrier: once, after every write
    assert calls.index(own[0]) == len(calls) - 1 and syncing._batch is None


def test_early_writebacks_stop_where_they_have_nothing_to_wait_for(tmp_path, monkeypatch):
    """On tmpfs a syncfs returns at once: a batch stops starting threads for nothing."""
    import threading

    if syncing._load_syncfs() is None:
        pytest.skip("no syncfs here")
    early = []
    monkeypatch.setattr(
        syncing, "syncfs", lambda fd: early.append(1) if threading.current_thread().name == "samctl-writeback" else None
    )
    monkeypatch.setattr(syncing.SyncBatch, "EARLY", 1)
    with syncing.sync_batch() as batch:
        for i in range(20):
            writing.write_atomic(tmp_path / f"f{i}", b"x")
            if batch.early is not None:
                batch.early.join()
        assert not batch.early_on
    assert len(early) == 1


# --- move_new -------------------------------------------------------------------------------


@pytest.mark.parametrize("native", [True, False], ids=["renameat2", "link-then-unlink"])
def test_move_new_moves_and_never_replaces(tmp_path, monkeypatch, native):
    if native and writing._load_renameat2() is None:
        pytest.skip("no renameat2 here")
    if not native:
        monkeypatch.setattr(writing, "renameat2", None)
    src, dst, other = tmp_path / "src", tmp_path / "dst", tmp_path / "other"
    src.write_bytes(b"staged")
    os.chmod(src, 0o640)
    os.utime(src, ns=(1, 1_600_000_000_123_456_789))
    other.write_bytes(b"someone else's")
    with pytest.raises(FileExistsError):
        writing.move_new(src, other)
    assert other.read_bytes() == b"someone else's" and src.read_bytes() == b"staged"
    writing.move_new(src, dst)
    st = os.lstat(dst)
    assert not src.exists() and dst.read_bytes() == b"staged"
    assert (stat.S_IMODE(st.st_mode), st.st_mtime_ns) == (0o640, 1_600_000_000_123_456_789)


def test_move_new_falls_back_where_the_file_system_refuses_renameat2(tmp_path, monkeypatch):
    def einval(src, dst):
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(writing, "renameat2", einval)
    (tmp_path / "a").write_bytes(b"x")
    writing.move_new(tmp_path / "a", tmp_path / "b")
    assert sorted(os.listdir(tmp_path)) == ["b"]


def test_remove_tree_removes_read_only_folders_as_a_user_would_need(tmp_path, folder_write_rule):
    """A 0555 folder inside (a conversation's read-only sub-folder) is made writable to empty it."""
    top = tmp_path / "t"
    (top / "sub" / "deeper").mkdir(parents=True)
    (top / "sub" / "note.txt").write_text("x")
    (top / "sub" / "deeper" / "f").write_text("y")
    os.chmod(top / "sub" / "deeper", 0o555)
    os.chmod(top / "sub", 0o555)
    removing.remove_tree(top)
    assert not top.exists()


def test_remove_tree_lists_a_folder_without_read_permission_after_making_it_readable(tmp_path, monkeypatch):
    """0333 (write and search, no read): it cannot be listed until its owner may read it."""
    top = tmp_path / "t"
    top.mkdir()
    (top / "f").write_text("x")
    real_scandir = os.scandir

    def scandir(p="."):  # the kernel's rule for a user who is not root
        if not os.stat(p).st_mode & stat.S_IRUSR:
            raise PermissionError(13, "Permission denied", str(p))
        return real_scandir(p)

    monkeypatch.setattr(os, "scandir", scandir)
    os.chmod(top, 0o333)
    removing.remove_tree(top)
    assert not top.exists()


def test_the_test_only_switch_skips_fsync_and_nothing_else(tmp_path, monkeypatch):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    writing.write_atomic(tmp_path / "a", b"x")  # conftest sets SAMCTL_TEST_NO_FSYNC=1
    assert calls == [] and (tmp_path / "a").read_bytes() == b"x"
    monkeypatch.delenv("SAMCTL_TEST_NO_FSYNC")
    writing.write_atomic(tmp_path / "b", b"y")
    assert len(calls) == 2 and (tmp_path / "b").read_bytes() == b"y"  # the file, then its folder
