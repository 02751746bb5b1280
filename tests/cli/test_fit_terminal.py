"""Tables that fit the terminal (issue #33): on a pseudo-terminal of COLUMNS=80 and 120 no line of ls, search,
attic or stores is wider than the terminal, and at 120 a title keeps at least half the width; piped, whole ids."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import pytest

from tests.cli.test_cross_store import machine  # noqa: F401 - the fixture: a home with every store
from tests.conftest import REPO


def _on_a_terminal(args, columns: int) -> list:
    main, sub = pty.openpty()
    env = dict(os.environ, COLUMNS=str(columns), NO_COLOR="1")
    p = subprocess.Popen(
        [sys.executable, "-m", "samctl", *args],
        stdin=sub,
        stdout=sub,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=os.getcwd(),
    )
    os.close(sub)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=120)
    os.close(main)
    text = re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode())
    return [ln.rstrip("\r") for ln in text.split("\n") if ln.strip()]


@pytest.mark.parametrize("columns", [80, 120])
def test_no_line_is_wider_than_the_terminal(run, machine, columns):  # noqa: F811
    from samctl.cli.common import display_width

    assert run("rm", "0b7c", "--force").exit_code == 0  # (an attic with an entry)
    for args in (["ls"], ["search", "the"], ["attic"], ["stores"]):
        lines = _on_a_terminal(args, columns)
        assert len(lines) >= 2, args
        assert max(map(display_width, lines)) <= columns, (args, [ln for ln in lines if display_width(ln) > columns])


def test_a_title_keeps_half_the_width_at_120_and_piped_ids_are_whole(run, machine, monkeypatch):  # noqa: F811
    monkeypatch.setenv("SAMCTL_ROOT", f"{machine / 'home' / '.claude'}{os.pathsep}{machine / 'home' / '.codex'}")
    head = _on_a_terminal(["ls"], 120)[0]  # (a new user's home: Claude Code and Codex)
    assert 120 - head.index("TITLE") >= 60, head
    assert "CREATED" not in head and "PIN" not in head  # (one date; no pinned conversation: no PIN column)
    llm = machine / "home" / ".config" / "io.datasette.llm" / "logs.db"  # (and one with llm added: tool calls)
    monkeypatch.setenv("SAMCTL_ROOT", os.pathsep.join([os.environ["SAMCTL_ROOT"], str(llm)]))
    assert 120 - _on_a_terminal(["ls"], 120)[0].index("TITLE") >= 60
    for args in (["search", "login"], ["search", "-l", "login"]):
        head = _on_a_terminal(args, 120)[0]
        assert 120 - head.index("TITLE") >= 60, (args, head)
    monkeypatch.delenv("SAMCTL_ROOT")
    assert "PIN" in _on_a_terminal(["ls"], 120)[0]  # (SAM has a pinned conversation)
    piped = run("ls")
    assert "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d" in piped.stdout and "CREATED" in piped.stdout
    ids = run("ls", "--ids").stdout.split()
    assert "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d" in ids and all(" " not in i for i in ids)
    assert run("ls", "--no-header").stdout.splitlines()[0].split()[0] != "ID"


def test_short_ids_are_unique_and_at_least_8():
    from samctl.cli.common import short_ids

    got = short_ids(["019c4a2e-7b1d", "019c4a31-0000", "0b7c9d2e-3f41", "20260810_140307_512", "20260810_150000_001"])
    assert got["019c4a2e-7b1d"] == "019c4a2e" and got["20260810_140307_512"] == "20260810_14"
    assert len(set(got.values())) == 5


assert REPO
