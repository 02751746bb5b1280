"""A store path samctl may not read (issue 20, finding 2), run as a user other than root.

- A folder on the way to the store that samctl may not read (SAM base, ``conversations/``, a mermaid
  project, ``.mermaid``, ``.mermaid/conversations``): every command says "permission denied: PATH",
  naming that folder, and exits 4; never an internal error; nothing on disk changes.
- A symlink loop given as ``--root`` is called one.
- A SAM conversation folder samctl may not enter is "unreadable" (never also a leftover), and
  ``show`` of it says permission denied.
- A home or cache folder samctl cannot use: the command runs without the cache and says so once.
"""

from __future__ import annotations

import os

import orjson
import pytest

from tests import unprivileged as nobody
from tests.conftest import fingerprint, make_fixtures

S2 = "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"

pytestmark = pytest.mark.skipif(nobody.skip_reason() is not None, reason=str(nobody.skip_reason()))

COMMANDS = [
    ("ls",),
    ("show", "{id}", "--no-pager"),
    ("check",),
    ("check", "--format", "json"),
    ("search", "budget"),
    ("attic",),
    ("attic", "--verify"),
    ("stats",),
    ("export", "--all", "--to", "jsonl"),
    ("index",),
    ("compact", "--dry-run"),
    ("rm", "--older-than", "1d", "--dry-run"),
    ("recover", "{id}", "--dry-run"),
]


@pytest.fixture
def trees():
    work = nobody.workdir()
    make_fixtures.build_demo_sam(work / "SAM")
    make_fixtures.build_demo_mermaid(work / "proj")
    (work / "home").mkdir()
    nobody.give(work)
    yield work
    nobody.cleanup(work)


# (what --root gets, the folder made unreadable, an id in that store), relative to the work folder
LEVELS = {
    "sam-base": ("SAM", "SAM", S2),
    "sam-base-given-conversations": ("SAM/conversations", "SAM", S2),
    "sam-conversations": ("SAM", "SAM/conversations", S2),
    "sam-conversations-given": ("SAM/conversations", "SAM/conversations", S2),
    "mermaid-project": ("proj", "proj", make_fixtures.MERMAID_ID),
    "mermaid-dotmermaid": ("proj", "proj/.mermaid", make_fixtures.MERMAID_ID),
    "mermaid-conversations": ("proj", "proj/.mermaid/conversations", make_fixtures.MERMAID_ID),
    "mermaid-conversations-given": (
        "proj/.mermaid/conversations",
        "proj/.mermaid/conversations",
        make_fixtures.MERMAID_ID,
    ),
}


# The README's test command runs one case of each class (each store, a store's own folder and its
# conversations folder, named or found, closed and exec-only); .ci/run runs them all (-m slow).
FAST_LEVELS = {
    ("sam-base", 0o000),
    ("sam-conversations-given", 0o100),
    ("mermaid-dotmermaid", 0o000),
    ("mermaid-conversations", 0o100),
}
CLOSED = [
    pytest.param(level, mode, marks=() if (level, mode) in FAST_LEVELS else pytest.mark.slow, id=f"{level}-{name}")
    for level in LEVELS
    for mode, name in ((0o000, "closed"), (0o100, "exec-only"))
]


@pytest.mark.parametrize("level, mode", CLOSED)
def test_every_command_says_permission_denied_for_a_closed_store_folder(trees, level, mode):
    # was: "internal error: PermissionError ... this is a bug" (exit 1) from store detection, or, for
    # conversations/, a mix of exit 4 (ls), 3 (check) and 0 (attic, compact)
    root, closed, cid = LEVELS[level]
    if mode == 0o100 and closed in ("SAM", "proj", "proj/.mermaid"):
        pytest.skip("a folder samctl may enter but not list is a store only if its contents need no listing")
    before, was = fingerprint(trees), os.stat(trees / closed).st_mode
    os.chmod(trees / closed, mode)
    try:
        for args in COMMANDS:
            r = nobody.run(["--root", trees / root, *(a.replace("{id}", cid) for a in args)], trees / "home")
            assert "internal error" not in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
            assert r.returncode == 4, (args, r.returncode, r.stderr)
            assert r.stderr.splitlines()[0] == f"samctl: error: permission denied: {trees / closed}", (args, r.stderr)
            assert r.stdout == "", args
    finally:
        os.chmod(trees / closed, was)
    assert fingerprint(trees) == before


@pytest.mark.parametrize("closed", [".mermaid", ".mermaid/conversations"])
def test_inside_a_project_whose_store_is_closed(trees, closed):
    # was: internal error from the default-store lookup (./.mermaid/conversations)
    os.chmod(trees / "proj" / closed, 0)
    try:
        for args in (["ls"], ["check"], ["show", make_fixtures.MERMAID_ID]):
            r = nobody.run(args, trees / "home", cwd=trees / "proj")
            assert r.returncode == 4, (args, r.stderr)
            # (inside the current folder: printed relative to it, as every path samctl prints)
            assert r.stderr.splitlines()[0] == f"samctl: error: permission denied: {closed}"
    finally:
        os.chmod(trees / "proj" / closed, 0o700)


def test_symlink_loop_as_root_is_called_one(run, tmp_path):
    # was: "no such folder"
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    r = run("--root", tmp_path / "a", "ls")
    assert r.exit_code == 4
    assert r.stderr.splitlines()[0] == f"samctl: error: {tmp_path / 'a'}: symlink loop"


def test_sam_conversation_folder_closed_is_unreadable_not_a_leftover(trees):
    # was: "unreadable" and also "leftover-dir" for the same folder; show said "no conversation"
    folder = trees / "SAM" / "conversations" / S2
    os.chmod(folder, 0)
    try:
        r = nobody.run(["--root", trees / "SAM", "check", "--format", "json"], trees / "home")
        assert r.returncode == 3, r.stderr
        about = [(f["code"], f["severity"]) for f in orjson.loads(r.stdout)["findings"] if f["path"] == str(folder)]
        assert ("unreadable", "error") in about and not any(code == "leftover-dir" for code, _ in about), about
        for args in (["show", S2, "--no-pager"], ["show", "C2A1"]):
            r = nobody.run(["--root", trees / "SAM", *args], trees / "home")
            assert r.returncode == 4, r.stderr
            assert r.stderr.splitlines()[0] == f"samctl: error: permission denied: {folder}"
        r = nobody.run(["--root", trees / "SAM", "export", "C2A1", "--to", "markdown"], trees / "home")
        assert r.returncode == 3 and f"error: unreadable: {folder}: permission denied" in r.stderr, r.stderr
        assert "removed while samctl ran" not in r.stderr
    finally:
        os.chmod(folder, 0o700)


@pytest.mark.parametrize("home", ["missing", "closed", "cache-closed"])
@pytest.mark.parametrize("args", [("ls",), ("search", "budget"), ("stats",)])
def test_an_unusable_home_or_cache_folder_means_no_cache_said_once(trees, home, args):
    # was: internal error (PermissionError) while locating the cache folder in an unreadable home
    where = trees / "home"
    if home == "missing":
        where = trees / "no-such-home"
    elif home == "closed":
        os.chmod(where, 0)
    else:
        (where / ".cache").mkdir(mode=0)
        nobody.give(where)
    before = fingerprint(trees / "SAM")
    try:
        r = nobody.run(["--root", trees / "SAM", *args], where)
    finally:
        os.chmod(trees / "home", 0o700)
    assert r.returncode == 0, r.stderr
    notes = [ln for ln in r.stderr.splitlines() if "cache" in ln]
    assert len(notes) == 1 and notes[0].startswith("warning: cache-unusable: "), r.stderr
    assert "this run uses no cache" in notes[0]
    assert r.stdout
    assert not (trees / "no-such-home").exists()
    assert fingerprint(trees / "SAM") == before
