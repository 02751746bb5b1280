"""The browser's first frame, written by samctl before Textual is imported.

Why: Python, Textual's import and an App's start take about 280 ms before Textual's first frame reaches
the terminal, and samctl's own start (its CLI, opening the stores) comes on top.  The newest rows kept
from the last run (``tui.firstrows``) fill a screen, so samctl writes that screen itself, laid out as the
main screen lays it out (``rows.line``, ``rows.list_status``), and Textual's first frame then replaces
it cell for cell (docs/browse.md has the figures).

Invariants: written only to a terminal (stdin and stdout, a TERM that is not ``dumb``, at least
``MIN_SIZE``) and only with kept rows; every cell goes through ``rows.cells`` (``one_line``), so no
control character from a store is written.  The frame goes to the alternate screen, the cursor hidden,
and the input stops echoing and editing lines (a key typed before Textual starts waits for it,
unechoed).  ``Painted.restore`` puts back the terminal's modes as they were before, and leaves the
alternate screen itself when Textual never took it over (an error before its start).
"""

from __future__ import annotations

import os
import time

try:
    import termios
except ImportError:  # (Windows: no first frame of samctl's own)
    termios = None  # type: ignore[assignment]

from samctl.tui import rows as R

MIN_SIZE = (40, 6)  # columns, lines: below this, Textual's own first frame is all there is
ENTER = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"  # the alternate screen, cursor hidden, cleared
LEAVE = "\x1b[?25h\x1b[?1049l"
PLACEHOLDER = "type to filter (title, project, store); s: search the index"  # the box's, in app.MainScreen


class Painted:
    """A frame on the terminal: ``restore`` puts the terminal back as it was."""

    def __init__(self, fd: int, out: int, attrs: list):
        self.fd, self.out, self.attrs = fd, out, attrs

    def restore(self, screen_taken: bool) -> None:
        """The input's modes as before; and, unless Textual took the screen over (and so left it), the
        main screen and the cursor back."""
        try:
            if not screen_taken:
                os.write(self.out, LEAVE.encode())
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.attrs)
        except (OSError, termios.error):
            pass  # (the terminal went away)


def frame(first: list, stores: int, width: int, height: int, now: float) -> list[str]:
    """The lines of the first frame: the filter box, the list's header and rows (the first under the
    cursor), the status line; ``first``: [(store, meta)] newest first."""
    rows = R.ordered([R.Row.of(store, meta) for store, meta in first])
    hidden = () if any(r.project for r in rows) else (1,)
    fits = height - 4  # rows under the list's header
    inner = width - R.SCROLLBAR if len(rows) > fits else width  # (Textual's scrollbar takes the rest)
    lines = [R.fit("filter: " + PLACEHOLDER, width), R.line([n for n, _ in R.COLUMNS], hidden, inner)]
    lines += [R.line(R.cells(r, now), hidden, inner) for r in rows[:fits]]
    lines += [""] * (height - 2 - len(lines))
    lines.append(R.fit(R.list_status(True, 0, stores, len(rows), len(rows), "updated", False), width))
    return lines


def paint(first: list, stores: int, fd: int = 0, out: int = 1) -> Painted | None:
    """Write the first frame to ``out`` when it and ``fd`` (the input) are a terminal and rows were kept;
    None when not."""
    if not first or termios is None or os.environ.get("TERM", "dumb") == "dumb":
        return None
    try:
        if not (os.isatty(fd) and os.isatty(out)):
            return None
        width, height = os.get_terminal_size(out)
        if width < MIN_SIZE[0] or height < MIN_SIZE[1]:
            return None
        lines = frame(first, stores, width, height, time.time())  # (before the terminal is touched)
        attrs = termios.tcgetattr(fd)
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~(termios.ECHO | termios.ICANON)  # (lflag: keys wait for Textual, unechoed)
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except (OSError, ValueError, termios.error):
        return None
    # the box dim, the header bold, the cursor's row and the status line reversed; each line placed
    box, header, rows, status = lines[0], lines[1], lines[2:-1], lines[-1]
    text = [ENTER, f"\x1b[2m{box}\x1b[22m", f"\x1b[2;1H\x1b[1m{header}\x1b[22m"]
    text += [f"\x1b[{y};1H\x1b[7m{row}\x1b[27m" if y == 3 else f"\x1b[{y};1H{row}" for y, row in enumerate(rows, 3)]
    text.append(f"\x1b[{height - 1};1H\x1b[7m{status}\x1b[27m")
    painted = Painted(fd, out, attrs)
    data = memoryview("".join(text).encode())
    try:
        while data:
            data = data[os.write(out, data) :]
    except OSError:
        painted.restore(False)
        return None
    return painted
