"""The README's exit-code table, row by row: real scenarios for several commands each, the
command's message, and (where it applies) that nothing changed on disk.  Then the rule a pipe adds:
a reader that goes away (``samctl check | head -1``) never changes the exit code (issue #20,
finding 9)."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from samctl import errors
from tests.cli.test_lifecycle import API, MID, MID2, PINNED, SID, attic_of, conv, tree_state
from tests.conftest import REPO, fingerprint

BROKEN_ID = "20260101_000001_000"  # build_broken_mermaid: a snapshot that is not JSON


def test_the_table_is_the_one_in_errors_and_the_readme():
    """Every row tested below is a row of the README's table, which is errors.EXIT_CODES."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Exit codes") :]
    rows = [int(m.group(1)) for m in re.finditer(r"^\| ([0-9]+) \|", section[: section.index("\n\n", 200)], re.M)]
    assert rows == [code for code, _ in errors.EXIT_CODES] == [0, 1, 2, 3, 4, 5, 130]


# --- 0: done, nothing wrong found ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("ls",),
        ("show", MID),
        ("check",),
        ("log", MID),
        ("search", "budget"),
        ("stats",),
        ("attic",),
        ("export", MID, "--to", "markdown"),
        ("index",),
        ("completion", "bash"),
    ],
    ids=lambda a: a[0],
)
def test_0_read_only_commands_on_a_healthy_mermaid_store(run, mermaid_demo, args):
    fp = fingerprint(conv(mermaid_demo))
    r = run("--root", mermaid_demo, *args)
    assert r.exit_code == 0, r.output
    assert fingerprint(conv(mermaid_demo)) == fp


@pytest.mark.parametrize(
    "args", [("ls",), ("show", SID), ("check",), ("search", "portland"), ("stats",)], ids=lambda a: a[0]
)
def test_0_read_only_commands_on_a_healthy_sam_store(run, sam_demo, args):
    r = run("--root", sam_demo, *args)
    assert r.exit_code == 0, r.output


def test_0_writing_commands_that_did_their_job(run, mermaid_demo):
    for args in (
        ("rm", MID),
        ("restore", MID),
        ("archive", MID),
        ("restore", MID),
        ("compact",),
        ("attic", "--repair"),
        ("check", "--fix"),
        ("recover", MID, "--dry-run"),
    ):
        r = run("--root", mermaid_demo, *args)
        assert r.exit_code == 0, (args, r.output)


# --- 1: failed: the command could not do its job ----------------------------------------------------


def test_1_a_named_pinned_conversation_is_refused(run, sam_demo):
    fp = tree_state(sam_demo)
    for args in (("rm", PINNED), ("archive", PINNED), ("rm", "--purge", PINNED, "--yes")):
        r = run("--root", sam_demo, *args)
        assert r.exit_code == 1 and "pinned" in r.stderr and "nothing was" in r.stderr, (args, r.output)
    assert tree_state(sam_demo) == fp


def test_1_restore_of_a_conversation_that_exists_again(run, mermaid_demo):
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    (conv(mermaid_demo) / f"{MID}.json").write_bytes(b"{}")
    fp = tree_state(mermaid_demo)
    r = run("--root", mermaid_demo, "restore", MID)
    assert r.exit_code == 1 and "exists" in r.stderr
    assert tree_state(mermaid_demo) == fp


def test_1_export_to_a_place_that_cannot_be_written(run, mermaid_demo, tmp_path):
    (tmp_path / "a-file").write_text("x")
    for args in (
        ("export", MID, "--to", "markdown", "-o", tmp_path / "a-file" / "out.md"),
        ("export", "--all", "--to", "html", "-o", tmp_path / "a-file" / "pages"),
    ):
        r = run("--root", mermaid_demo, *args)
        assert r.exit_code == 1 and "samctl: error:" in r.stderr, (args, r.output)


def test_1_a_question_answered_no(run, mermaid_demo, monkeypatch):
    monkeypatch.setattr("samctl.cli.writeopts.stdin_is_tty", lambda: True)
    fp = tree_state(mermaid_demo)
    for args in (("rm", "--older-than", "1d"), ("archive", "--older-than", "1d"), ("rm", MID, "--purge")):
        r = run("--root", mermaid_demo, *args, input="n\n")
        assert r.exit_code == 1 and "nothing was changed" in r.stderr, (args, r.output)
    assert tree_state(mermaid_demo) == fp


def test_1_no_attic_can_be_made(run, mermaid_demo, folder_write_rule):
    """The attic's folder cannot be created: the command's own failure, not one conversation's (exit 1)."""
    (mermaid_demo / ".mermaid" / ".samctl").mkdir(mode=0o700)
    os.chmod(mermaid_demo / ".mermaid", 0o555)
    try:
        fp = fingerprint(conv(mermaid_demo))
        for args in (("rm", MID), ("archive", "--older-than", "1d", "--yes")):
            r = run("--root", mermaid_demo, *args)
            assert r.exit_code == 1 and "cannot make the attic" in r.stderr and "nothing was moved" in r.stderr, (
                args,
                r.output,
            )
            assert fingerprint(conv(mermaid_demo)) == fp
    finally:
        os.chmod(mermaid_demo / ".mermaid", 0o700)


@pytest.mark.parametrize("args", [("ls",), ("stats",), ("export", "--all", "--to", "jsonl")], ids=lambda a: a[0])
def test_1_an_internal_error_is_one_line(run, mermaid_demo, monkeypatch, args):
    from samctl.stores.mermaid.store import MermaidStore

    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(MermaidStore, "all_ids", boom)
    monkeypatch.setattr(MermaidStore, "list_metas", boom)
    r = run("--root", mermaid_demo, "--no-cache", *args)
    assert r.exit_code == 1 and "internal error: RuntimeError: boom" in r.stderr and "Traceback" not in r.stderr


# --- 2: usage error ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,says",
    [
        (("ls", "--sort", "bogus"), "Invalid value"),
        (("show", "../../etc/passwd"), "is not a mermaid conversation id"),
        (("show", "2026081"), "ambiguous"),
        (("rm", MID, MID2), "--yes"),
        (("compact", "--log-threshold", "0"), "is not a size"),
        (("search", "x", "--threshold", "nan"), "--threshold"),
        (("export", "--to", "markdown"), ""),
        (("log",), "Missing argument"),
    ],
    ids=lambda a: a[0] if isinstance(a, tuple) else None,
)
def test_2_usage_errors(run, mermaid_demo, args, says):
    fp = tree_state(mermaid_demo)
    r = run("--root", mermaid_demo, *args)
    assert r.exit_code == 2 and says in r.stderr, r.output
    assert tree_state(mermaid_demo) == fp


# --- 3: partial: done, but some files were corrupt or skipped -------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("check",),
        ("ls",),
        ("export", "--all", "--to", "jsonl"),
        ("log", "20260101_000014_000"),
        ("search", "hello", "--no-index"),
        ("stats",),
    ],
    ids=lambda a: a[0],
)
def test_3_read_only_commands_on_a_broken_mermaid_store(run, mermaid_broken, args):
    root, _ = mermaid_broken
    fp = fingerprint(root)
    r = run("--root", root, *args)
    assert r.exit_code == 3, r.output
    assert fingerprint(root) == fp


def test_3_show_from_the_log_when_the_snapshot_is_corrupt(run, mermaid_demo):
    (conv(mermaid_demo) / f"{MID}.json").write_bytes(b"{ not json")
    r = run("--root", mermaid_demo, "show", MID)
    assert r.exit_code == 3 and r.stdout and "bad-json" in r.stderr, r.output


def test_3_check_on_a_broken_sam_store(run, sam_broken):
    root, _ = sam_broken
    assert run("--root", root, "check").exit_code == 3


def _symlinked_memory_db(sam_demo: Path, cid: str, tmp_path: Path) -> None:
    db = conv(sam_demo) / cid / "memory.db"
    elsewhere = tmp_path / f"{cid}-memory.db"
    os.replace(db, elsewhere)
    os.symlink(elsewhere, db)


@pytest.mark.parametrize("how", ["named", "selected"])
def test_3_archive_that_cannot_move_a_conversation_with_a_symlinked_memory_db(run, sam_demo, tmp_path, how):
    """Issue #20, finding 9: it was kept, listed as if by choice, and the run exited 0 (selected) or
    1 (named). A problem of a conversation the command was given is exit 3, and the rest still goes."""
    _symlinked_memory_db(sam_demo, SID, tmp_path)
    before = fingerprint(conv(sam_demo) / SID)
    args = ("archive", "--older-than", "30d", "--yes") if how == "selected" else ("archive", SID, API, "--yes")
    r = run("--root", sam_demo, *args)
    assert r.exit_code == 3, r.output
    assert f"not-moved: {SID}" in r.stderr and "symlink" in r.stderr and "nothing was moved" in r.stderr
    assert f"archived: {API}" in r.stdout and not (conv(sam_demo) / API).exists()
    assert fingerprint(conv(sam_demo) / SID) == before
    r = run("--root", sam_demo, "archive", SID)  # alone: nothing is done, and it says why
    assert r.exit_code == 3 and "not-moved" in r.stderr and "nothing was changed" in r.stderr, r.output
    assert fingerprint(conv(sam_demo) / SID) == before


@pytest.mark.parametrize(
    "args",
    [("archive", SID), ("archive", "--older-than", "30d", "--title", "Portland", "--yes"), ("rm", SID)],
    ids=["named", "selected", "rm"],
)
def test_3_a_conversation_with_an_unreadable_file_is_not_moved(run, sam_demo, monkeypatch, args):
    """The same problem found while reading (a file this user cannot read) exited 1; it is exit 3."""
    db = str(conv(sam_demo) / SID / "memory.db")
    real_open = os.open

    def unreadable(path, flags, *a, **k):
        if os.fspath(path) == db:
            raise PermissionError(13, "Permission denied", db)
        return real_open(path, flags, *a, **k)

    before = fingerprint(conv(sam_demo))
    monkeypatch.setattr(os, "open", unreadable)
    r = run("--root", sam_demo, *args)
    assert r.exit_code == 3, r.output
    assert f"not-moved: {SID}" in r.stderr and "permission denied" in r.stderr and "nothing was moved" in r.stderr
    assert fingerprint(conv(sam_demo)) == before


def test_3_the_dry_run_says_it_too(run, sam_demo, tmp_path):
    _symlinked_memory_db(sam_demo, SID, tmp_path)
    fp = tree_state(sam_demo)
    for args in (
        ("archive", "--older-than", "30d", "--dry-run"),
        ("rm", SID, "--dry-run"),
        ("rm", "--older-than", "30d", "--dry-run", "--format", "json"),
    ):
        r = run("--root", sam_demo, *args)
        assert r.exit_code == 3 and "not-moved" in r.output and "symlink" in r.output, (args, r.output)
    assert tree_state(sam_demo) == fp


def test_3_purge_that_cannot_purge_one(run, sam_demo, tmp_path):
    _symlinked_memory_db(sam_demo, SID, tmp_path)
    r = run("--root", sam_demo, "rm", "--purge", SID, API, "--yes")
    assert r.exit_code == 3 and f"not-purged: {SID}" in r.stderr and f"purged: {API}" in r.stdout, r.output
    assert (conv(sam_demo) / SID / "conversation.json").exists()


def test_exclusions_are_listed_and_keep_exit_0(run, sam_demo):
    """Pinned and --keep-last are choices the user made: listed as kept, and the exit code says nothing."""
    r = run("--root", sam_demo, "archive", "--older-than", "30d", "--dry-run")
    assert r.exit_code == 0 and f"kept: {PINNED}: pinned" in r.stderr, r.output
    r = run("--root", sam_demo, "archive", "--older-than", "30d", "--keep-last", "2", "--yes")
    assert r.exit_code == 0 and r.stderr.count("most recent") == 2 and "archived: " in r.stdout, r.output


def test_3_compact_with_a_log_it_cannot_rewrite(run, mermaid_demo):
    from tests.cli.test_compact import LONG, age, long_session

    c = conv(mermaid_demo)
    long_session(c)
    with open(c / f"{LONG}.jsonl", "ab") as f:
        f.write(b"not json\n")
    age(c.iterdir(), 7200)
    r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K")
    assert r.exit_code == 3 and "compact-skipped" in r.stderr


def test_3_restore_of_a_damaged_entry(run, mermaid_demo):
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    [tar] = attic_of(mermaid_demo).glob(f"{MID}.*.tar.zst")
    data = bytearray(tar.read_bytes())
    data[-20] ^= 0xFF
    tar.write_bytes(bytes(data))
    r = run("--root", mermaid_demo, "attic", "--verify")
    assert r.exit_code == 3, r.output
    for args in (("restore", MID), ("restore", MID, MID2)):  # one named, or several: exit 3 (it was 1 alone)
        r = run("--root", mermaid_demo, *args)
        assert r.exit_code == 3 and "not-restored: " in r.stderr and "damaged" in r.stderr, r.output
        assert not (conv(mermaid_demo) / f"{MID}.json").exists()
        assert run("--root", mermaid_demo, "rm", MID2).exit_code in (0, 4)


# --- 4: not found ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("show", "20250101_000000_000"),
        ("log", "20250101_000000_000"),
        ("export", "20250101_000000_000", "--to", "json"),
        ("rm", "20250101_000000_000"),
        ("restore", MID),
        ("recover", "20250101_000000_000"),
    ],
    ids=lambda a: a[0],
)
def test_4_no_such_conversation(run, mermaid_demo, args):
    fp = tree_state(mermaid_demo)
    r = run("--root", mermaid_demo, *args)
    assert r.exit_code == 4 and "samctl: error:" in r.stderr, r.output
    assert tree_state(mermaid_demo) == fp


@pytest.mark.parametrize("args", [("ls",), ("check",), ("compact",), ("attic",)], ids=lambda a: a[0])
def test_4_no_store_at_the_root(run, tmp_path, args):
    r = run("--root", tmp_path / "nothing-here", *args)
    assert r.exit_code == 4 and "samctl: error:" in r.stderr, r.output
    assert not (tmp_path / "nothing-here").exists()


# --- 5: busy ----------------------------------------------------------------------------------------


def _hold(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_5_another_samctl_holds_the_lock(run, mermaid_demo):
    assert run("--root", mermaid_demo, "rm", MID2).exit_code == 0  # (something to restore)
    fd = _hold(mermaid_demo / ".mermaid" / ".samctl" / "lock")
    try:
        fp = fingerprint(conv(mermaid_demo))
        for args in (
            ("rm", MID),
            ("archive", MID),
            ("compact",),
            ("check", "--fix"),
            ("attic", "--repair"),
            ("restore", MID2),
            ("rm", "--purge", MID, "--yes"),
        ):
            r = run("--root", mermaid_demo, *args)
            assert r.exit_code == 5 and "another samctl" in r.stderr, (args, r.output)
        assert fingerprint(conv(mermaid_demo)) == fp
    finally:
        os.close(fd)


def test_5_sam_is_running(run, sam_demo, monkeypatch):
    monkeypatch.setenv("SAMCTL_ASSUME_SAM_RUNNING", "1")
    fp = tree_state(sam_demo)
    for args in (
        ("rm", SID),
        ("archive", "--older-than", "30d", "--yes"),
        ("compact",),
        ("check", "--fix"),
        ("search", "portland", "--touch"),
        ("rm", "--purge", SID, "--yes"),
    ):
        r = run("--root", sam_demo, *args)
        assert r.exit_code == 5 and "SAM is running" in r.stderr, (args, r.output)
    assert tree_state(sam_demo) == fp


def test_5_mermaid_has_the_session_open(run, mermaid_demo):
    from samctl.stores import open_store

    fd = _hold(open_store(str(mermaid_demo)).scratch_lock_path(MID))
    try:
        (conv(mermaid_demo) / f"{MID}.json").unlink()  # (recover has something to write)
        fp = fingerprint(conv(mermaid_demo))
        for args in (("rm", MID), ("archive", MID), ("recover", MID), ("rm", "--purge", MID, "--yes")):
            r = run("--root", mermaid_demo, *args)
            assert r.exit_code == 5 and "open" in r.stderr, (args, r.output)
        assert fingerprint(conv(mermaid_demo)) == fp
    finally:
        os.close(fd)


# --- 130: interrupted ---------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [("ls",), ("check",), ("stats",), ("rm", MID), ("show", MID)], ids=lambda a: a[0])
def test_130_ctrl_c(run, mermaid_demo, monkeypatch, args):
    from samctl.fs import filemodes

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(filemodes, "lstat", interrupted)  # (every command looks at a file through it)
    fp = fingerprint(conv(mermaid_demo))
    r = run("--root", mermaid_demo, "--no-cache", *args)
    assert r.exit_code == 130 and "interrupted" in r.stderr, r.output
    assert fingerprint(conv(mermaid_demo)) == fp


def _waits_on(p: subprocess.Popen, lock: Path) -> None:
    """Until ``p`` has the lock file open (it is waiting for it), or 30 s: a signal that comes
    before samctl is running would stop Python's start-up instead."""
    deadline = time.monotonic() + (30 if os.path.isdir("/proc/self/fd") else 0)
    while time.monotonic() < deadline and p.poll() is None:
        try:
            if any(os.readlink(f"/proc/{p.pid}/fd/{fd}") == str(lock) for fd in os.listdir(f"/proc/{p.pid}/fd")):
                time.sleep(0.2)
                return
        except OSError:
            pass
        time.sleep(0.05)
    time.sleep(2)  # (no /proc: a guess)


def _ctrl_c_as_a_terminal_gives_it() -> None:
    """In the child, before samctl starts: SIGINT handled by default and not blocked, as a shell's
    foreground command has it, whatever the test runner inherited (a runner started in the
    background may have it ignored, and a thread may have it blocked)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _signal_state(pid: int) -> str:
    """The signal masks of ``pid`` (/proc), to say why a process did not stop."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return " ".join(line.strip() for line in f if line.startswith(("State", "Sig", "Shd")))
    except OSError:
        return "(no /proc)"


def test_130_ctrl_c_while_waiting_for_the_lock(mermaid_demo):
    """A real SIGINT to a real process: rm waiting for another samctl's lock stops, changing nothing."""
    fd = _hold(mermaid_demo / ".mermaid" / ".samctl" / "lock")
    try:
        fp = fingerprint(conv(mermaid_demo))
        p = subprocess.Popen(
            [sys.executable, "-m", "samctl", "--root", str(mermaid_demo), "rm", MID, "--lock-wait", "60"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_ctrl_c_as_a_terminal_gives_it,
        )
        _waits_on(p, mermaid_demo / ".mermaid" / ".samctl" / "lock")
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            state = _signal_state(p.pid) + " | this test process: " + _signal_state(os.getpid())
            p.kill()
            p.communicate()
            raise AssertionError(f"rm did not stop on SIGINT within 30 s; {state}") from None
        assert p.returncode == 130 and b"interrupted" in err, (p.returncode, err)
        assert fingerprint(conv(mermaid_demo)) == fp
    finally:
        os.close(fd)


# --- a reader that goes away ---------------------------------------------------------------------------


def _piped(root: Path, *args, stderr_too: bool = True) -> subprocess.CompletedProcess:
    """samctl writing into a pipe nobody reads any more (``samctl ... 2>&1 | head -c0``, without the race)."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run(
            [sys.executable, "-m", "samctl", "--root", str(root), *args],
            cwd=REPO,
            stdout=w,
            stderr=w if stderr_too else subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(w)


READ_ONLY = [
    ("ls",),
    ("show", MID),
    ("check",),
    ("log", MID),
    ("search", "budget"),
    ("index",),
    ("export", "--all", "--to", "jsonl"),
    ("stats",),
    ("attic",),
    ("check", "--format", "json"),
]


@pytest.mark.parametrize("args", READ_ONLY, ids=lambda a: "-".join(a[:1] + a[2:3]))
def test_a_broken_pipe_keeps_the_exit_code(run, mermaid_broken, args):
    """Issue #20, finding 9: `samctl check 2>&1 | head -1` exited 0 where the run exits 3. The command goes
    on to its end with nothing more printed, and exits as when everything is read."""
    root, _ = mermaid_broken
    want = run("--root", root, *args).exit_code
    fp = fingerprint(root)
    p = _piped(root, *args)
    assert p.returncode == want, (args, p.returncode, want)
    assert fingerprint(root) == fp


def test_a_broken_pipe_keeps_exit_3_of_every_read_only_command_that_has_it(run, mermaid_broken):
    root, _ = mermaid_broken
    for args in (("check",), ("ls",), ("export", "--all", "--to", "jsonl"), ("stats",), ("log", "20260101_000014_000")):
        assert run("--root", root, *args).exit_code == 3
        assert _piped(root, *args).returncode == 3, args


def test_a_broken_stdout_leaves_stderr_alone(mermaid_broken):
    root, _ = mermaid_broken
    p = _piped(root, "check", "--format", "json", stderr_too=False)
    assert p.returncode == 3 and b"Traceback" not in p.stderr


def test_a_broken_pipe_does_not_stop_a_writing_command(sam_demo, tmp_path):
    """archive prints its list after the move; a reader gone by then changes neither what was done
    nor the exit code (3: one conversation could not be moved)."""
    _symlinked_memory_db(sam_demo, SID, tmp_path)
    p = _piped(sam_demo, "archive", "--older-than", "30d", "--yes")
    assert p.returncode == 3
    assert not (conv(sam_demo) / API).exists() and (conv(sam_demo) / SID / "conversation.json").exists()
    assert len(list(attic_of(sam_demo).glob(f"{API}.archived.*.tar.zst"))) == 1


@pytest.mark.parametrize(
    "args",
    [
        ("archive", "--older-than", "1d", "--yes"),
        ("rm", "--older-than", "1d", "--yes"),
        ("rm", "--purge", "--older-than", "1d", "--yes"),
    ],
    ids=["archive", "rm", "purge"],
)
def test_a_session_mermaid_has_open_is_an_exclusion_for_a_filter(run, mermaid_demo, args):
    """Found by a filter, it is kept and listed, and the others go (exit 0); it refused the whole run (exit 5)."""
    from samctl.stores import open_store

    fd = _hold(open_store(str(mermaid_demo)).scratch_lock_path(MID))
    try:
        before = {p.name: p.read_bytes() for p in conv(mermaid_demo).glob(f"{MID}.*")}
        r = run("--root", mermaid_demo, *args)
        assert r.exit_code == 0, r.output
        assert f"kept: {MID}: mermaid has this session open" in r.stderr and MID2 in r.stdout
        assert {p.name: p.read_bytes() for p in conv(mermaid_demo).glob(f"{MID}.*")} == before
        assert not list(conv(mermaid_demo).glob(f"{MID2}.*"))
    finally:
        os.close(fd)
