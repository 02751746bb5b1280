"""What the Claude Code and Codex hostile tests share for the writing commands (#23): on a hostile tree,
keep, remove and restore sessions, and hold samctl to the adversarial rules for writers."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.adversarial.harness import TALLY, fingerprint, invoke


def _files(root: Path) -> dict:
    """Every file (not folder: their mtimes move when a file leaves and comes back) with its bytes, mode, mtime."""
    return {k: v for k, v in fingerprint(root).items() if not stat.S_ISDIR(v[0])}


def move_and_back(root: Path, outside: Path, ids, secret: str, global_args=()) -> None:
    """``archive --copy``, ``rm`` and ``restore`` of each of ``ids`` (``--force``: a fixture copy is fresh, so
    live): no crash; exit 0, 3 (a file that cannot move: a link, a FIFO) or 4 (an id the hostile edit took
    away); nothing read through a link; nothing written outside the store and samctl's data folder, nothing
    there open to group or others; and in the end every file is back byte for byte, with its mode and mtime."""
    data = Path(os.environ["XDG_DATA_HOME"])
    before, elsewhere = _files(root), fingerprint(outside)
    for cid in ids:
        for argv in (["archive", "--copy", "--force", cid], ["rm", "--force", "--yes", cid], ["restore", cid]):
            TALLY.cases += 1
            o = invoke(["--root", str(root), *global_args, *argv])
            assert o.crash is None, f"{argv}: {o.crash}"
            assert o.exit_code in (0, 3, 4), f"{argv}: exit {o.exit_code}: {o.stderr[-600:]}"
            assert secret.encode() not in o.stdout and secret not in o.stderr, f"{argv} read through a symlink"
    assert _files(root) == before
    assert fingerprint(outside) == elsewhere
    for p in data.rglob("*"):
        assert not p.lstat().st_mode & 0o077, f"{p} is open to others"
