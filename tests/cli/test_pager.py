"""show's pager behaves as git's (issue #33): LESS=FRX unless LESS is set, SAMCTL_PAGER before PAGER,
--no-pager; tested on a pseudo-terminal with a pager that records what it was given."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

SAM_ID = "8B58CBC4"


def _show(tmp_path, root, env: dict, *args) -> str:
    """Run ``samctl show`` on a pseudo-terminal; what the recording pager saw (or '' if none ran)."""
    seen = tmp_path / "seen"
    seen.unlink(missing_ok=True)
    pager = tmp_path / "pager.sh"
    pager.write_text(f'#!/bin/sh\necho "LESS=$LESS ARGS=$*" > {seen}\ncat > /dev/null\n')
    pager.chmod(0o755)
    main, sub = pty.openpty()
    full = {k: v for k, v in os.environ.items() if k not in ("LESS", "PAGER", "SAMCTL_PAGER")}
    full.update({k: (str(pager) if v == "@pager" else v) for k, v in env.items()})
    p = subprocess.Popen(
        [sys.executable, "-m", "samctl", "--root", str(root), "show", SAM_ID, *args],
        stdin=sub,
        stdout=sub,
        stderr=sub,
        env=full,
        close_fds=True,
    )
    os.close(sub)
    while True:
        try:
            if not os.read(main, 65536):
                break
        except OSError:
            break
    p.wait(timeout=60)
    os.close(main)
    return seen.read_text() if seen.exists() else ""


def test_less_gets_frx_unless_less_is_set(tmp_path, sam_demo):
    assert _show(tmp_path, sam_demo, {"PAGER": "@pager"}).startswith("LESS=FRX ")
    assert _show(tmp_path, sam_demo, {"PAGER": "@pager", "LESS": "-S"}).startswith("LESS=-S ")


def test_samctl_pager_wins_over_pager_and_no_pager_runs_none(tmp_path, sam_demo):
    assert _show(tmp_path, sam_demo, {"SAMCTL_PAGER": "@pager", "PAGER": "/bin/false"}).startswith("LESS=FRX")
    assert _show(tmp_path, sam_demo, {"PAGER": "@pager"}, "--no-pager") == ""
