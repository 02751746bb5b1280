"""What a move of another app's sessions must never do (issue #31): lose a kept copy to a smaller one
(finding 1), lose a line written during the move (2), leave an attic whose store samctl no longer finds
(3), put samctl's attic inside the app's folder through a link (7), crash on a deep folder (12), or say
"inf minutes" (23)."""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

import pytest

from tests.adversarial.harness import fingerprint as harness_fingerprint
from tests.cli.test_keep import C1, C2, OLD, _age, _attic, _entries, _files, _session, home  # noqa: F401
from tests.conftest import fingerprint


def _undo(run, result):
    """Run the "undo with: samctl ..." command ``result`` printed, as a user pasting it would."""
    line = next(x for x in result.stderr.splitlines() + result.stdout.splitlines() if "undo with: samctl " in x)
    argv = shlex.split(line.split("undo with: samctl ", 1)[1].split(";", 1)[0])
    return run(*argv)


# --- finding 3: a store's existence is decided by its place ----------------------------------------


def test_the_undo_of_the_last_session_of_a_project_folder_works(home, run):  # noqa: F811
    project = _session(home, C2).parent
    assert [p.name for p in project.glob("*-*-*-*-*.jsonl")] == [f"{C2}.jsonl"]
    before = _files(project)
    r = run("--root", project, "rm", C2)
    assert r.exit_code == 0, r.stderr
    assert not (project / f"{C2}.jsonl").exists()
    assert run("--root", project, "attic").exit_code == 0
    u = _undo(run, r)
    assert u.exit_code == 0, u.stderr
    assert _files(project) == before


def test_a_config_folder_of_another_name_stays_the_store_once_emptied(home, run, monkeypatch):  # noqa: F811
    cc = home / "claude-config"
    (home / ".claude").rename(cc)
    for n in ("settings.json", "history.jsonl"):
        (cc / n).unlink()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cc))
    before = _files(cc)
    results = [run("--root", cc, "rm", cid) for cid in (C1, C2, "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d")]
    assert [r.exit_code for r in results] == [0, 0, 0], [r.stderr for r in results]
    assert not list(cc.rglob("*-*-*-*-*.jsonl"))
    ls = run("ls", "--format", "json")  # the machine's stores: the variable's place, found by its place
    assert ls.exit_code == 0, ls.stderr
    for r in results:
        u = _undo(run, r)
        assert u.exit_code == 0, u.stderr
    assert _files(cc) == before


# --- finding 12: a folder deeper than any move takes -----------------------------------------------


def _deep(folder: Path, levels: int = 1200) -> None:
    folder.mkdir(exist_ok=True)
    here = os.open(folder, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=here)
            nxt = os.open("d", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = nxt
        fd = os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=here)
        os.close(fd)
    finally:
        os.close(here)


def _undeep(folder: Path) -> None:
    """Remove what ``_deep`` made, bottom up without recursion (shutil.rmtree and os.walk recurse)."""
    p = folder
    while (p / "d").is_dir():
        p = p / "d"
    for f in p.iterdir():
        f.unlink()
    while p != folder:
        p.rmdir()
        p = p.parent


@pytest.fixture
def deep(home):  # noqa: F811
    folder = _session(home, C1).parent / C1
    _deep(folder)
    os.utime(folder, (OLD, OLD))
    os.utime(folder.parent, (OLD, OLD))
    yield folder
    _undeep(folder)


@pytest.mark.parametrize(
    "argv",
    [
        ["rm", "--dry-run", C1],
        ["rm", C1],
        ["archive", C1],
        ["archive", "--copy", C1],
        ["archive", "--copy", "--dry-run", C1],
        ["archive", "--yes", "--older-than", "20d"],
    ],
)
def test_a_folder_1200_deep_in_a_session_folder_is_a_finding_and_nothing_moves(home, run, argv, deep):  # noqa: F811
    folder = deep
    root = home / ".claude"
    before = harness_fingerprint(root, skip=(folder / "d",))  # (os.walk itself recurses: not into the deep tree)
    r = run("--root", root, *argv)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr[-800:]
    if "--dry-run" in argv:
        assert r.exit_code in (0, 3), r.stderr
    else:
        assert r.exit_code == 3, r.stderr
        assert "more than 16 deep" in r.stderr, r.stderr
    assert (folder / "/".join(["d"] * 1200) / "f").exists()
    after = harness_fingerprint(root, skip=(folder / "d",))
    assert {k for k in after if C1 in k and after[k] != before.get(k)} == set()


# --- finding 23: the live window in words ---------------------------------------------------------


def test_a_huge_live_window_is_said_in_finite_minutes(home, run, monkeypatch):  # noqa: F811
    monkeypatch.setenv("SAMCTL_LIVE_MINUTES", "1e308")
    before = fingerprint(home)
    r = run("--root", home / ".claude", "rm", C1)
    assert r.exit_code == 5, r.stderr
    assert "inf" not in r.stderr and "minutes" in r.stderr
    assert fingerprint(home) == before


# --- finding 7: samctl's data folder through a link into the app's folder ----------------------------


@pytest.mark.parametrize("level", ["samctl", "attic", "kind"])
def test_a_symlink_on_the_way_to_the_attic_into_the_apps_folder_is_refused(home, run, level):  # noqa: F811
    data = home / ".local" / "share" / "samctl"
    target = home / ".claude" / "stash"
    target.mkdir()
    link = {"samctl": data, "attic": data / "attic", "kind": data / "attic" / "claude-code"}[level]
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)
    before = fingerprint(home / ".claude")
    for argv in (["rm", C1], ["archive", "--copy", C1]):
        r = run("--root", home / ".claude", *argv)
        assert r.exit_code == 2, r.stderr
        assert "symlink" in r.stderr or "inside Claude Code's folder" in r.stderr, r.stderr
    assert fingerprint(home / ".claude") == before and list(target.iterdir()) == []


# --- finding 1: a kept copy is never traded for a smaller one ---------------------------------------


@pytest.mark.parametrize("cut", ["shorter", "emptied"])
def test_a_session_cut_short_is_copied_beside_its_full_copy_and_check_says_so(home, run, cut):  # noqa: F811
    root = home / ".claude"
    r = run("--root", root, "archive", "--copy", C1)
    assert r.exit_code == 0, r.stderr
    first = _entries(home, "claude-code")
    full = _attic(home, "claude-code") / f"{first[0]}.tar.zst"
    full_bytes = full.read_bytes()
    s = _session(home, C1)
    data = s.read_bytes()
    s.write_bytes(data[: len(data) // 3] if cut == "shorter" else b"")
    os.utime(s, (OLD + 60, OLD + 60))
    time.sleep(1.1)  # (a new entry's name is stamped by the second)
    r = run("--root", root, "archive", "--copy", "-q", C1)  # (an emptied session has no date to select by)
    assert "shrank-since-kept" in r.stderr and first[0] in r.stderr, r.stderr
    assert r.exit_code == 3, r.stderr
    now = _entries(home, "claude-code")
    assert first[0] in now and len([e for e in now if e.startswith(C1)]) == 2
    assert full.read_bytes() == full_bytes
    c = run("--root", root, "check", "--format", "json")
    assert c.exit_code == 3 and "shrank-since-kept" in c.stdout + c.stderr, c.stdout + c.stderr
    # the same session again: unchanged since its newest copy, and the full one still stays
    again = run("--root", root, "archive", "--copy", C1)
    assert again.exit_code in (0, 3) and _entries(home, "claude-code") == now


def test_a_session_that_grew_still_replaces_its_older_copy(home, run):  # noqa: F811
    root = home / ".claude"
    assert run("--root", root, "archive", "--copy", C1).exit_code == 0
    with open(_session(home, C1), "ab") as f:
        f.write(b'{"type":"summary","summary":"later","leafUuid":"x"}\n')
    os.utime(_session(home, C1), (OLD + 60, OLD + 60))
    time.sleep(1.1)
    r = run("--root", root, "archive", "--copy", C1)
    assert r.exit_code == 0 and "shrank" not in r.stderr, r.stderr
    assert len([e for e in _entries(home, "claude-code") if e.startswith(C1)]) == 1
    assert run("--root", root, "check").exit_code == 0


# --- finding 2: a line written during the move is never lost -------------------------------------------

LATE = b'{"type":"summary","summary":"written during the move","leafUuid":"late"}\n'


def _hook(monkeypatch, at: str, action):
    from samctl.fs import faults

    fired = []

    def hook(name):
        if name == at and not fired:
            fired.append(name)
            action()

    monkeypatch.setattr(faults, "fault_hook", hook)
    return fired


def _asides(project: Path) -> list:
    return sorted(p.name for p in project.rglob(".*.moving*"))


def test_an_appender_that_reopens_per_line_during_the_move_loses_nothing(home, run, monkeypatch):  # noqa: F811
    s = _session(home, C1)
    before = s.read_bytes()

    def append():
        with open(s, "ab") as f:  # (the name is free: the appender creates the file again, as Claude Code would)
            f.write(LATE)

    fired = _hook(monkeypatch, "watch", append)
    r = run("--root", home / ".claude", "rm", "--force", C1)
    assert fired and r.exit_code == 3, r.stderr
    assert "not-moved" in r.stderr and "it is back as it was" in r.stderr, r.stderr
    assert s.read_bytes() == before + LATE  # one file, in the app's order: restore is never needed
    assert _asides(s.parent) == [] and _entries(home, "claude-code", "deleted") == []


def test_a_writer_that_opened_the_session_just_before_the_move_loses_nothing(home, run, monkeypatch):  # noqa: F811
    s = _session(home, C1)
    before = s.read_bytes()
    held = []
    fired = _hook(monkeypatch, "set-aside", lambda: held.append(open(s, "ab")))  # (opened before the rename)
    r = run("--root", home / ".claude", "rm", "--force", C1)
    assert fired and r.exit_code == 3, r.stderr
    assert "a process holds it open" in r.stderr, r.stderr
    held[0].write(LATE)  # Codex's recorder writes on through the descriptor it kept
    held[0].close()
    assert s.read_bytes() == before + LATE
    assert _asides(s.parent) == [] and _entries(home, "claude-code", "deleted") == []


def test_a_write_between_the_archive_and_the_rename_is_seen(home, run, monkeypatch):  # noqa: F811
    s = _session(home, C1)
    before = s.read_bytes()

    def append():
        with open(s, "ab") as f:
            f.write(LATE)

    fired = _hook(monkeypatch, "set-aside", append)
    r = run("--root", home / ".claude", "rm", "--force", C1)
    assert fired and r.exit_code == 3, r.stderr
    assert (
        s.read_bytes() == before + LATE and _asides(s.parent) == [] and _entries(home, "claude-code", "deleted") == []
    )


def _kept_lines(home: Path) -> set:
    import io
    import tarfile

    import zstandard

    out = set()
    for tz in _attic(home, "claude-code").glob("*.tar.zst"):
        raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(tz.read_bytes())).read()
        with tarfile.open(fileobj=io.BytesIO(raw)) as t:
            for m in t.getmembers():
                if m.isfile():
                    out |= set(t.extractfile(m).read().splitlines())
    return out


@pytest.mark.parametrize("style", ["reopen-per-line", "held-open"])
def test_a_real_concurrent_writer_loses_no_line(home, run, monkeypatch, style):  # noqa: F811
    """A writer thread that starts at the last moment before samctl lets go of the file (right after its
    last check that the files are as archived), then writes a line every half millisecond."""
    import threading

    s = _session(home, C1)
    go, opened = threading.Event(), threading.Event()
    written: list = []

    def writer():
        go.wait(10)
        f = open(s, "ab") if style == "held-open" else None
        opened.set()
        for n in range(200):
            line = b'{"type":"summary","summary":"w%d","leafUuid":"x"}' % n
            if f is None:
                with open(s, "ab") as g:
                    g.write(line + b"\n")
            else:
                f.write(line + b"\n")
                f.flush()
            written.append(line)
            if n == 0:
                opened.set()
            time.sleep(0.0005)
        if f is not None:
            f.close()

    from samctl.attic import lifecycle

    last_check = lifecycle._unchanged

    def then_write(o):  # samctl's last look at the files before it lets go of them
        out = last_check(o)
        if not go.is_set():
            go.set()
            opened.wait(5)  # (the writer has the file open, or wrote its first line)
        return out

    monkeypatch.setattr(lifecycle, "_unchanged", then_write)
    t = threading.Thread(target=writer)
    t.start()
    try:
        r = run("--root", home / ".claude", "rm", "--force", C1)
    finally:
        go.set()
        t.join()
    assert "Traceback" not in r.stderr and r.exit_code in (0, 3), r.stderr
    present = set(s.read_bytes().splitlines()) if s.exists() else set()
    kept = _kept_lines(home) if _entries(home, "claude-code", "deleted") else set()
    lost = [x for x in written if x not in present and x not in kept]
    assert lost == [], f"{len(lost)} of {len(written)} lines lost ({r.exit_code}: {r.stderr[-300:]})"
    assert _asides(s.parent) == []
    if r.exit_code == 3:  # put back: one whole file, every line in it, nothing in the attic
        assert not _entries(home, "claude-code", "deleted") and all(x in present for x in written)


class _Crash(BaseException):
    """samctl killed at a step (nothing after it runs)."""


@pytest.mark.parametrize("late", [False, True])
def test_a_crash_after_the_set_aside_is_settled_by_the_next_run(home, run, monkeypatch, late):  # noqa: F811
    from samctl.fs import faults

    s = _session(home, C1)
    before = s.read_bytes()

    def crash(name):
        if name == "watch":
            if late:  # a writer that held it open wrote on before the crash
                q = next(s.parent.glob(f".{s.name}.*.moving"))
                with open(q, "ab") as f:
                    f.write(LATE)
            raise _Crash()

    monkeypatch.setattr(faults, "fault_hook", crash)
    with pytest.raises(_Crash):
        run("--root", home / ".claude", "rm", "--force", C1)
    monkeypatch.setattr(faults, "fault_hook", None)
    assert not s.exists() and _asides(s.parent)  # hidden from the app, beside the session
    r = run("--root", home / ".claude", "attic", "--repair")
    assert r.exit_code == 0, r.stderr
    assert _asides(s.parent) == []
    if late:  # the store's copy is the newer one: it is back whole, the attic's older one dropped
        assert s.read_bytes() == before + LATE and _entries(home, "claude-code", "deleted") == []
    else:  # as archived: the move is finished, and its undo brings it back
        assert not s.exists() and len(_entries(home, "claude-code", "deleted")) == 1
        assert run("--root", home / ".claude", "restore", C1).exit_code == 0 and s.read_bytes() == before


def test_a_codex_home_of_another_name_stays_the_store_once_emptied(home, run, monkeypatch):  # noqa: F811
    ch = home / "codex-home"
    (home / ".codex").rename(ch)
    for n in ("session_index.jsonl", "config.toml", "auth.json", "history.jsonl"):
        if (ch / n).exists():
            (ch / n).unlink()
    monkeypatch.setenv("CODEX_HOME", str(ch))
    ids = [x["id"] for x in __import__("json").loads(run("--root", ch, "ls", "--format", "json").stdout)]
    assert ids
    before = _files(ch)
    results = [run("--root", ch, "rm", cid) for cid in ids]
    assert {r.exit_code for r in results} == {0}, [r.stderr for r in results]
    monkeypatch.delenv("CODEX_HOME")  # (the attic alone keeps the place a store)
    for r in results:
        u = _undo(run, r)
        assert u.exit_code == 0, u.stderr
    assert _files(ch) == before
