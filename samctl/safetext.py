"""Text made safe for a terminal: every control character that could drive it written as an escape.

A transcript, a title or a file name is printed as stored except for these, so hostile text can
never move the cursor, retitle the window, hide a line or reorder what a line shows.
"""

from __future__ import annotations

import re

# C0 (newline and tab are kept by safe_text's default), DEL, and all of C1: terminals that accept 8-bit
# controls act on U+0090 DCS, U+009B CSI, U+009D OSC... exactly as on ESC P, ESC [, ESC ].
# U+2028/U+2029 are line breaks to some viewers and not to a terminal, so they could make one line read as two.
# The bidi embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069) reorder what follows them on
# the terminal line (Trojan Source, CVE-2021-42574): a title could make a line show something it does not say.
_CTRL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CTRL_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(m) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def safe_text(s: str, lines: bool = True) -> str:
    """``s`` with every control character written as an escape; ``lines=False`` escapes newline and tab too
    (for what must stay on one line, such as a finding)."""
    return (_CTRL if lines else _CTRL_LINE).sub(_escape, s)


def one_line(s) -> str:
    """``s`` (None reads as "") for one cell of a table: whitespace runs, newlines included, made one space,
    then ``safe_text``."""
    return safe_text(" ".join(str(s if s is not None else "").split()))


def quoted(text, width: int = 60) -> str:
    """``repr(text)`` cut to about ``width`` characters and still closed, saying how long it was:
    a 100,000-character argument is quoted as ``'FFFF…' (100000 characters)``."""
    r = repr(text)
    if len(r) <= width:
        return r
    return f"{r[: width - 2]}…{r[-1]} ({len(text)} characters)"
