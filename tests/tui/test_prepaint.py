"""samctl's own first frame of `samctl browse` (samctl/tui/prepaint.py): the kept rows laid out as Textual's
first frame lays them out, written only to a terminal, with no control character from a store; the
terminal's modes put back as they were; keys typed on it reach the browser; Textual does not blank it."""

from __future__ import annotations

import asyncio
import dataclasses
import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest
from rich.cells import cell_len

from samctl.model import ConversationMeta
from samctl.tui import firstrows, prepaint
from samctl.tui import rows as R
from tests.conftest import fingerprint
from tests.tui.conftest import NOW

pytest.importorskip("textual")

from samctl.tui.app import BrowseApp  # noqa: E402
from tests.tui.test_browse import settle  # noqa: E402


def kept_rows(stores) -> list:
    """[(store, meta)] newest first, as firstrows keeps them after a listing."""
    pairs = [(s, m) for s in stores for m in s.list_metas([])]
    return [(r.store, r.meta) for r in R.ordered([R.Row.of(s, m) for s, m in pairs])]


def many(kept: list, n: int) -> list:
    """``n`` rows made of ``kept``'s, each its own id, newest first: more than a screen holds."""
    out = []
    for i in range(n):
        store, meta = kept[i % len(kept)]
        out.append((store, dataclasses.replace(meta, id=f"{meta.id}-{i}", updated_ts=NOW - 60 * (i + 1))))
    return out


@pytest.mark.parametrize("size", [(80, 24), (110, 30), (160, 48)])
@pytest.mark.parametrize("longer", [False, True], ids=["fits", "longer than the screen"])
def test_the_frame_is_what_textual_paints_first(stores, size, longer):
    """Line for line, the list and the status line of samctl's frame are those of the browser's first
    frame over the same kept rows (the listing held back, as it is while Textual starts); with more rows
    than the screen holds too, where Textual's scrollbar takes the list's last columns."""
    kept = kept_rows(stores)
    if longer:
        kept = many(kept, 60)
    width, height = size
    lines = prepaint.frame(kept, len(stores), width, height, NOW)
    assert len(lines) == height - 1 and all(cell_len(x) <= width for x in lines)

    gate = threading.Event()
    for s in stores:
        real = s.list_metas
        s.list_metas = lambda findings, real=real: (gate.wait(10), real(findings))[1]
    app = BrowseApp(stores, now=NOW, first=kept)
    painted: list = []

    async def go():
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            lst = app.main.query_one("#list")
            painted.extend(lst.render_line(y).text for y in range(lst.size.height))
            painted.append(str(app.main.query_one("#status").render()))
            gate.set()
            await settle(pilot)

    asyncio.run(go())
    assert painted[0].split() == ["STORE", "PROJECT", "WHEN", "MSGS", "TITLE"]
    assert [x.rstrip() for x in painted[:-1]] == [x.rstrip() for x in lines[1:-1]]
    assert painted[-1] == lines[-1].rstrip() and f"loading 0/5 stores… {len(kept)} of {len(kept)}" in painted[-1]
    assert kept[0][1].title in lines[2]


def test_a_hostile_title_writes_no_control_character(stores):
    store = stores[0]
    evil = "\x1b]52;c;ZXZpbA==\x07\x1b[2Jok\x9b31m\r\nnext\u202e"
    meta = ConversationMeta(store.name, "A", evil, updated_ts=NOW - 60, message_count=1, project="\x1b[31mp")
    lines = prepaint.frame([(store, meta)], 1, 200, 10, NOW)
    text = "".join(lines)
    assert not re.search(r"[\x00-\x1f\x7f-\x9f\u202e]", text) and "ok" in text


@pytest.fixture
def pty_io(monkeypatch):
    """A new pseudo-terminal of 100x20, its TERM one that is not dumb: (master fd, slave fd)."""
    monkeypatch.setenv("TERM", "xterm-256color")
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 20, 100, 0, 0))
    yield master, slave
    os.close(master)
    os.close(slave)


def drain(master: int) -> bytes:
    out = b""
    while select.select([master], [], [], 0.05)[0]:
        out += os.read(master, 1 << 16)
    return out


def test_painted_on_a_terminal_then_its_modes_put_back(stores, pty_io):
    master, slave = pty_io
    before = termios.tcgetattr(slave)
    kept = kept_rows(stores)
    painted = prepaint.paint(kept, len(stores), slave, slave)
    assert painted is not None
    shown = drain(master)
    assert shown.startswith(prepaint.ENTER.encode()) and kept[0][1].title.encode() in shown
    lflag = termios.tcgetattr(slave)[3]
    assert not lflag & (termios.ECHO | termios.ICANON)  # (a key typed now waits for the browser, unechoed)
    painted.restore(screen_taken=False)  # (Textual never started: samctl leaves the screen itself)
    assert drain(master) == prepaint.LEAVE.encode() and termios.tcgetattr(slave) == before

    painted = prepaint.paint(kept, len(stores), slave, slave)
    drain(master)
    painted.restore(screen_taken=True)  # (Textual left the screen itself)
    assert drain(master) == b"" and termios.tcgetattr(slave) == before


@pytest.mark.parametrize("case", ["no rows", "dumb", "small", "piped", "input piped"])
def test_not_painted_without_rows_or_a_terminal_that_fits(stores, pty_io, monkeypatch, case):
    master, slave = pty_io
    before = termios.tcgetattr(slave)
    kept = [] if case == "no rows" else kept_rows(stores)
    monkeypatch.setenv("TERM", "dumb" if case == "dumb" else "xterm-256color")
    if case == "small":
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 5, 100, 0, 0))
    r, w = os.pipe()
    fd, out = (slave, w) if case == "piped" else (r, slave) if case == "input piped" else (slave, slave)
    assert prepaint.paint(kept, len(stores), fd, out) is None
    os.close(w)
    assert drain(master) == b"" and os.read(r, 100) == b"" and termios.tcgetattr(slave) == before
    os.close(r)


def test_the_browser_keeps_samctls_frame_and_a_key_typed_on_it_is_read(stores, demo):
    """The whole command in a terminal, the rows of a last run kept: samctl's frame comes before Textual
    starts (its mouse mode), the screen is switched to once, a `q` typed on samctl's frame quits the
    browser, and the terminal's modes after are those before."""
    firstrows.save(stores, kept_rows(stores))
    before_tree = fingerprint(demo)
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 110, 0, 0))
    modes = termios.tcgetattr(slave)
    roots = [str(demo / r) for r in ("SAM", "mermaid-project", "claude_code", "codex", "llm/logs.db")]
    env = dict(os.environ, SAMCTL_ROOT=os.pathsep.join(roots), TERM="xterm-256color", SAMCTL_LIVE_MINUTES="0")
    p = subprocess.Popen(
        [sys.executable, "-m", "samctl", "browse"], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
    )
    title = kept_rows(stores)[0][1].title.encode()
    out, typed = b"", False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and p.poll() is None:
            if select.select([master], [], [], 0.05)[0]:
                out += os.read(master, 1 << 16)
            if not typed and title in out:
                os.write(master, b"q")
                typed = True
        code = p.wait(30)
        out += drain(master)
        assert code == 0, re.sub(rb"\x1b\[[0-9;?]*[a-zA-Z]", b"", out)[-6000:].decode(errors="replace")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        after = termios.tcgetattr(slave)
        os.close(master)
        os.close(slave)
    assert typed and out.index(title) < out.index(b"\x1b[?1000h")  # (samctl's frame, then Textual's start)
    assert out.count(b"\x1b[?1049h") == 1 and out.rstrip().count(b"\x1b[?1049l") >= 1
    assert after == modes and fingerprint(demo) == before_tree
