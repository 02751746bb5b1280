"""Keeping sessions before their app deletes them (#23): rm, archive, archive --copy and restore for the
Claude Code and Codex CLI stores, whose attic lives in samctl's data folder; kept copies of SAM and
mermaid conversations too."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from tests.cli.readonly_stores import demo_copy
from tests.conftest import fingerprint

C1 = "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"  # Claude Code: with a subagents folder
C2 = "5d1e7f20-8a9b-4c3d-9e8f-7a6b5c4d3e2f"
X1 = "019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f"  # Codex: sessions/2026/02/10
XZ = "019c5f00-1111-7222-8333-444455556666"  # Codex: a .jsonl.zst rollout
OLD = time.time() - 40 * 86400


def _age(root: Path, when: float = OLD) -> None:
    """Every file and folder under ``root`` last written ``when`` (not live; past Claude Code's cleanup)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            os.utime(os.path.join(dirpath, n), (when, when), follow_symlinks=False)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A home folder with Claude Code's and Codex's demo trees; samctl's data folder is the XDG default in it."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    shutil.copytree(demo_copy(tmp_path, "claude_code"), h / ".claude")
    shutil.copytree(demo_copy(tmp_path, "codex"), h / ".codex")
    _age(h)
    return h


def _session(home: Path, cid: str = C1) -> Path:
    return next((home / ".claude" / "projects").glob(f"*/{cid}.jsonl"))


def _rollout(home: Path, cid: str = X1) -> Path:
    return next(p for p in (home / ".codex").rglob(f"rollout-*{cid}*") if p.is_file())


def _attic(home: Path, kind: str) -> Path:
    folders = list((home / ".local" / "share" / "samctl" / "attic" / kind).iterdir())
    assert len(folders) == 1, folders
    return folders[0]


def _entries(home: Path, kind: str, state: str = "kept") -> list[str]:
    return sorted(p.name[: -len(".manifest.json")] for p in _attic(home, kind).glob(f"*.{state}.*.manifest.json"))


def _files(root: Path) -> dict:
    return {k: v for k, v in fingerprint(root).items() if not stat.S_ISDIR(v[0])}


ROOTS = {"claude-code": (".claude", C1, _session), "codex": (".codex", X1, _rollout)}


# --- archive --copy ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(ROOTS))
def test_copy_keeps_a_verified_copy_in_the_data_folder_and_leaves_the_store_alone(home, run, kind):
    folder, cid, _ = ROOTS[kind]
    root = home / folder
    before = fingerprint(root)
    r = run("--root", root, "archive", "--copy", "--older-than", "20d")
    assert r.exit_code == 0, r.stderr
    assert f"kept: {cid}" in r.stdout and "restore ID" in r.stderr
    assert fingerprint(root) == before  # not a byte, mode or mtime of the app's files changed
    assert not (root / ".samctl").exists() and not (root / "samctl-attic").exists()
    attic = _attic(home, kind)
    assert attic.parent == home / ".local" / "share" / "samctl" / "attic" / kind
    for p in [home / ".local" / "share" / "samctl", *attic.parents[:3], *(q for q in attic.rglob("*"))]:
        want = 0o700 if p.is_dir() else 0o600
        assert stat.S_IMODE(p.lstat().st_mode) == want, p
    assert any(e.startswith(cid) for e in _entries(home, kind))
    v = run("--root", root, "attic", "--verify", "--state", "kept")
    assert v.exit_code == 0 and f"{cid}.kept." in v.stdout, v.stderr
    assert fingerprint(root) == before


def test_the_cron_line_is_silent_and_needs_no_terminal(home, run):
    r = run("--root", home / ".claude" / "projects", "archive", "--copy", "--older-than", "20d", "-q")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")
    assert len(_entries(home, "claude-code")) == 2
    again = run("--root", home / ".claude" / "projects", "archive", "--copy", "--older-than", "20d", "-q")
    assert (again.exit_code, again.stdout, again.stderr) == (0, "", "")
    # the same root named as ~/.claude shares the attic
    assert run("--root", home / ".claude", "attic", "--state", "kept").stdout.count(".kept.") == 2


def test_a_second_run_copies_only_what_changed_and_drops_the_older_copy(home, run):
    root = home / ".claude"
    assert run("--root", root, "archive", "--copy", "--older-than", "20d").exit_code == 0
    first = _entries(home, "claude-code")
    changed, touched = _session(home, C1), _session(home, C2)
    with open(changed, "ab") as f:
        f.write(b'{"type":"summary","summary":"later","leafUuid":"x"}\n')
    os.utime(changed, (OLD + 60, OLD + 60))
    os.utime(touched, (OLD + 120, OLD + 120))  # only its mtime moved: the same bytes are not copied again
    time.sleep(1.1)  # (a new entry's name is stamped by the second)
    r = run("--root", root, "archive", "--copy", "--older-than", "20d")
    assert r.exit_code == 0, r.stderr
    assert f"kept: {C1}" in r.stdout and C2 not in r.stdout
    assert f"unchanged since the newest kept copy: {C2}" in r.stderr
    now = _entries(home, "claude-code")
    assert len(now) == 2 and [e for e in now if e.startswith(C2)] == [e for e in first if e.startswith(C2)]
    assert [e for e in now if e.startswith(C1)] != [e for e in first if e.startswith(C1)]
    assert run("--root", root, "attic", "--verify").exit_code == 0


def test_the_older_copy_stays_when_the_new_one_does_not_verify(home, run, monkeypatch):
    from samctl.attic import tarscan
    from samctl.model import Finding

    root = home / ".claude"
    assert run("--root", root, "archive", "--copy", C1).exit_code == 0
    first = _entries(home, "claude-code")
    with open(_session(home), "ab") as f:
        f.write(b'{"type":"summary","summary":"later","leafUuid":"x"}\n')
    os.utime(_session(home), (OLD, OLD))
    attic_before = _files(_attic(home, "claude-code"))
    monkeypatch.setattr(tarscan, "check_written", lambda entry, written: [Finding("attic-tampered", "x", "bad read")])
    time.sleep(1.1)
    r = run("--root", root, "archive", "--copy", C1)
    assert r.exit_code == 3
    assert (
        f"error: not-kept: {C1}: the archive of {C1} did not read back as written (bad read); nothing was "
        "copied" in r.stderr
    )
    assert _entries(home, "claude-code") == first
    assert _files(_attic(home, "claude-code")) == attic_before  # (its folders' mtimes moved: a journal came and went)


def test_compact_never_purges_kept_entries(home, run):
    root = home / ".claude"
    assert run("--root", root, "archive", "--copy", C1).exit_code == 0
    assert run("--root", root, "rm", C2).exit_code == 0
    r = run("--root", root, "compact", "--grace", "0d", "-v")
    assert r.exit_code == 0, r.stderr
    assert "1 attic entry purged" in r.stdout
    assert len(_entries(home, "claude-code")) == 1 and _entries(home, "claude-code", "deleted") == []
    assert _session(home, C1).exists()


def test_copy_of_mermaid_and_sam_conversations_too(run, mermaid_demo, sam_demo):
    for root in (mermaid_demo, sam_demo):
        before = fingerprint(root)
        r = run("--root", root, "archive", "--copy", "--older-than", "1d", "-q")
        assert (r.exit_code, r.stderr) == (0, ""), r.stderr
        listed = run("--root", root, "attic", "--state", "kept", "--format", "jsonl").stdout.splitlines()
        assert listed and all('"state":"kept"' in line for line in listed)
        after = fingerprint(root)
        assert {k: v for k, v in after.items() if k not in before and "samctl" not in k} == {}
        assert all(after[k] == v for k, v in before.items() if k not in (".", "conversations", ".mermaid"))


# --- restore -------------------------------------------------------------------------------------


def test_restore_brings_a_kept_copy_back_after_the_app_deleted_it_and_keeps_the_copy(home, run):
    root = home / ".claude"
    session = _session(home)
    folder = session.parent / C1
    original = fingerprint(session.parent)
    assert run("--root", root, "archive", "--copy", C1).exit_code == 0
    kept = _entries(home, "claude-code")
    shutil.rmtree(session.parent)  # Claude Code's cleanup: the session, its folder, then the empty project
    r = run("--root", root, "restore", C1[:8])
    assert r.exit_code == 0, r.stderr
    assert f"restored: {C1}" in r.stdout
    assert "warning: app-cleanup:" in r.stderr and "cleanupPeriodDays" in r.stderr and "--touch" in r.stderr
    restored = fingerprint(session.parent)
    assert {k: v for k, v in restored.items() if k != "."} == {
        k: v for k, v in original.items() if k == session.name or k.startswith(C1)
    }
    assert folder.is_dir() and _entries(home, "claude-code") == kept  # the backup stays
    again = run("--root", root, "restore", C1)
    assert again.exit_code == 0 and f"already in the store with the kept copy's bytes: {C1}" in again.stderr
    assert fingerprint(session.parent) == restored


def test_restore_touch_sets_the_mtime_to_now_and_says_no_warning(home, run):
    root = home / ".claude"
    assert run("--root", root, "archive", "--copy", C1).exit_code == 0
    session = _session(home)
    session.unlink()
    r = run("--root", root, "restore", C1, "--touch")
    assert r.exit_code == 0 and "app-cleanup" not in r.stderr, r.stderr
    assert abs(session.stat().st_mtime - time.time()) < 60


def test_restore_refuses_over_a_changed_original_and_changes_nothing(home, run):
    root = home / ".claude"
    assert run("--root", root, "archive", "--copy", C1).exit_code == 0
    with open(_session(home), "ab") as f:
        f.write(b"{}\n")
    os.utime(_session(home), (OLD, OLD))
    before = fingerprint(home)
    r = run("--root", root, "restore", C1)
    assert r.exit_code == 1
    assert r.stderr.startswith(f"samctl: error: {C1} exists in the store again (")
    assert "holds other bytes than the kept copy" in r.stderr
    assert fingerprint(home) == before


def test_restore_as_new_is_refused_for_another_apps_session(home, run):
    root = home / ".claude"
    assert run("--root", root, "rm", C2).exit_code == 0
    before = fingerprint(home)
    r = run("--root", root, "restore", C2, "--as-new")
    assert r.exit_code == 2 and "samctl does not give Claude Code sessions new ids" in r.stderr
    assert fingerprint(home) == before


# --- rm -------------------------------------------------------------------------------------------


def test_rm_and_restore_a_claude_code_session_with_its_folder(home, run):
    root = home / ".claude"
    project = _session(home).parent
    before = fingerprint(project)
    r = run("--root", root, "rm", C1)
    assert r.exit_code == 0, r.stderr
    assert not (project / f"{C1}.jsonl").exists() and not (project / C1).exists()
    assert C1 not in run("--root", root, "ls").stdout
    r = run("--root", root, "restore", C1)
    assert r.exit_code == 0, r.stderr
    assert {k: v for k, v in fingerprint(project).items() if k != "."} == {k: v for k, v in before.items() if k != "."}
    assert _entries(home, "claude-code", "deleted") == []


def test_rm_moves_a_codex_rollout_and_its_zst_twin(home, run):
    root = home / ".codex"
    zst = _rollout(home, XZ)
    plain = zst.with_name(zst.name[:-4])
    shutil.copy2(zst, plain)  # (a plain twin: the store reads it, and the .zst must go with it)
    import zstandard

    plain.write_bytes(zstandard.ZstdDecompressor().decompressobj().decompress(zst.read_bytes()))
    os.utime(plain, (OLD, OLD))
    r = run("--root", root, "rm", XZ)
    assert r.exit_code == 0, r.stderr
    assert not zst.exists() and not plain.exists() and XZ not in run("--root", root, "ls").stdout
    assert run("--root", root, "restore", XZ).exit_code == 0
    assert zst.exists() and plain.exists()
    r = run("--root", root, "restore", XZ)  # a deleted entry is dropped once back
    assert r.exit_code == 4


def test_rm_purge_removes_the_session_its_folder_and_its_copies(home, run):
    root = home / ".claude"
    assert run("--root", root, "archive", "--copy", C1).exit_code == 0
    r = run("--root", root, "rm", "--purge", C1, "--yes")
    assert r.exit_code == 0, r.stderr
    project = home / ".claude" / "projects" / "-home-ana-api"
    assert not (project / f"{C1}.jsonl").exists() and not (project / C1).exists()
    assert _entries(home, "claude-code") == []


# --- live sessions --------------------------------------------------------------------------------


def test_a_session_written_lately_is_left_alone_unless_force(home, run):
    root = home / ".claude"
    os.utime(_session(home), None)  # written just now
    before = fingerprint(root)
    r = run("--root", root, "archive", "--copy", "--older-than", "20d")
    assert r.exit_code == 0
    assert f"kept: {C1}: Claude Code may be writing this session: changed in the last 10 minutes" in r.stderr
    assert f"kept: {C2} ->" in r.stdout and C1 not in r.stdout
    for argv in (["rm", C1], ["archive", "--copy", C1]):
        snap = fingerprint(home)
        r = run("--root", root, *argv)
        assert r.exit_code == 5 and f"Claude Code may be writing {C1}" in r.stderr and "--force" in r.stderr
        assert fingerprint(home) == snap
    r = run("--root", root, "archive", "--copy", C1, "--force")
    assert r.exit_code == 0 and f"kept: {C1}" in r.stdout
    assert fingerprint(root) == before  # copies leave the app's files as they were


def test_the_live_window_is_an_environment_variable(home, run, monkeypatch):
    os.utime(_session(home), (time.time() - 120, time.time() - 120))
    monkeypatch.setenv("SAMCTL_LIVE_MINUTES", "1")
    assert run("--root", home / ".claude", "rm", C1).exit_code == 0


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_session_open_in_a_process_is_live(home, run):
    with open(_session(home), "rb"):
        r = run("--root", home / ".claude", "rm", C1)
    assert r.exit_code == 5 and "open in a running process" in r.stderr
    assert _session(home).exists()


# --- where the attic is, and what refuses ----------------------------------------------------------


def test_a_data_folder_inside_the_apps_folder_is_refused(home, run, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".claude" / "data"))
    before = fingerprint(home)
    r = run("--root", home / ".claude", "rm", C1)
    assert r.exit_code == 2 and "is inside Claude Code's folder" in r.stderr and "XDG_DATA_HOME" in r.stderr
    assert fingerprint(home) == before


def test_an_attic_that_is_a_symlink_is_refused(home, run, tmp_path):
    root = home / ".claude"
    assert run("--root", root, "archive", "--copy", C2).exit_code == 0
    attic = _attic(home, "claude-code")
    shutil.rmtree(attic)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", attic)
    before = fingerprint(root)
    r = run("--root", root, "archive", "--copy", C1)
    assert r.exit_code == 2 and "not samctl's attic folder" in r.stderr
    assert fingerprint(root) == before and list((tmp_path / "elsewhere").iterdir()) == [] and attic.is_symlink()


@pytest.mark.parametrize("name", ["llm", "chatgpt"])
def test_read_only_stores_refuse_copies_and_change_nothing(tmp_path, run, name):
    tree = demo_copy(tmp_path, name)
    root = tree / "chatgpt-export.zip" if name == "chatgpt" else tree
    before = fingerprint(tree)
    r = run("--root", root, "archive", "--copy", "--older-than", "1d")
    assert r.exit_code == 2 and "samctl only reads it, and archive writes" in r.stderr
    assert fingerprint(tree) == before


def test_a_session_with_a_twin_in_another_project_is_not_moved(home, run):
    """Moving one of two files with the same id would show the other, and its restore would be refused."""
    other = home / ".claude" / "projects" / "-home-ana-other"
    other.mkdir()
    shutil.copy2(_session(home), other / f"{C1}.jsonl")
    before = fingerprint(home)
    r = run("--root", home / ".claude", "rm", C1)
    assert r.exit_code == 3 and f"error: not-moved: {C1}: session {C1} is also in" in r.stderr
    assert "samctl moves a session only while one file holds its id" in r.stderr
    assert fingerprint(home) == before


def test_reading_commands_still_read_with_a_data_folder_inside_the_apps_folder(home, run, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".claude" / "data"))
    before = fingerprint(home)
    for argv in (["ls"], ["check"], ["show", C1], ["attic"]):
        r = run("--root", home / ".claude", *argv)
        assert r.exit_code == 0, (argv, r.stderr)
    r = run("--root", home / ".claude", "archive", "--copy", "--older-than", "1d", "--dry-run")
    assert r.exit_code == 2 and "is inside Claude Code's folder" in r.stderr
    assert fingerprint(home) == before


def test_a_refused_restore_says_an_interrupted_copy_is_pending(home, run):
    """Found by the fault sweep: restore refused before settling anything, and did not say a copy was pending."""
    import json

    root = home / ".claude"
    assert run("--root", root, "archive", "--copy", C1).exit_code == 0
    with open(_session(home), "ab") as f:
        f.write(b"{}\n")
    os.utime(_session(home), (OLD, OLD))
    stem = f"{C1}.kept.20260101T000000Z"
    (_attic(home, "claude-code") / ".journal" / f"batch.{stem}.json").write_text(
        json.dumps(
            {
                "op": "batch",
                "moves": [{"op": "copy", "stem": stem, "id": C1, "state": "kept", "files": [], "drops": []}],
            }
        )
    )
    before = fingerprint(home)
    r = run("--root", root, "restore", C1)
    assert r.exit_code == 1 and "exists in the store again" in r.stderr
    assert "an interrupted move is pending: `samctl --root" in r.stderr
    assert fingerprint(home) == before
    r = run("--root", root, "attic", "--repair")
    assert r.exit_code == 0 and "undid an interrupted copy" in r.stderr
