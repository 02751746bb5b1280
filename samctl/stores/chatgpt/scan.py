"""Reading a ChatGPT export's top-level JSON array one conversation at a time, within a memory bound.

``iter_items(read, cap)`` splits the array into its elements' bytes without parsing them: a regex
skips everything up to the next bracket, strings included (escapes and all), so only brackets
cost a Python step (scalars directly in the array are skipped).  Memory: one read buffer (1 MiB, doubling only while one string is
longer) plus the element being collected, at most ``cap`` bytes; a longer element is skipped (its
bytes dropped as they stream past, a long string included, wherever it sits in the element) and
reported, and so is one nested deeper than ``values.MAX_DEPTH``.  Nesting depth is a counter, not recursion.

An export parsed whole holds every conversation's objects at once, several times the file's size; this
scan holds about the largest conversation's (times the parser's expansion) plus the buffer (figures:
docs/other-assistants.md, bench/README.md).
"""

from __future__ import annotations

import re

from samctl.stores.values import MAX_DEPTH

CHUNK = 1 << 20
# everything up to the next bracket, strings included (a string cut by the buffer's end stops it at its quote)
_SKIP = re.compile(rb'(?:[^\[\]{}"]+|"[^"\\]*(?:\\.[^"\\]*)*")*', re.S)
_STR = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_STR_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.S)  # a string's inside, up to its quote (or a cut escape)
_WS = b" \t\r\n"


class Item:
    """One element of the array: its index, byte offset, bytes (None when skipped) and why skipped."""

    __slots__ = ("index", "offset", "data", "problem")

    def __init__(self, index, offset, data, problem=None):
        self.index, self.offset, self.data, self.problem = index, offset, data, problem


class End:
    """What ended the scan: ``problem`` None for a well-formed array, else (code, reason)."""

    def __init__(self):
        self.problem = None


def iter_items(read, cap: int, end: End | None = None):
    """Yield an Item per top-level element of the JSON array read by ``read(n)``; ``end.problem`` says
    afterwards whether the array was cut short (``truncated``) or was not an array (``not-array``)."""
    end = end if end is not None else End()
    buf = bytearray()
    base = pos = depth = 0
    start = -1  # where the current element began in buf; -1 when none is being kept
    skipping = None  # why the current element is being skipped: "too-large" or "too-deep"
    in_string = False  # inside a string no element keeps: streamed past, never buffered whole
    index = 0
    want = CHUNK
    eof = False
    item_offset = 0
    opened = False
    while True:
        if pos >= len(buf) or want:
            if eof:
                if depth > 0 or in_string:
                    end.problem = (
                        "truncated",
                        f"the data ends at byte {base + len(buf)}, inside conversation "
                        f"{index}: what came before it was read",
                    )
                elif not opened:
                    end.problem = ("not-array", "empty, or no JSON array in it")
                return
            keep = start if start >= 0 else pos
            if keep:
                del buf[:keep]
                base += keep
                pos -= keep
                if start >= 0:
                    start = 0
            chunk = read(max(want, CHUNK))
            want = 0
            if not chunk:
                eof = True
                continue
            buf += chunk
            continue
        if in_string:  # the rest of a string that is not kept: up to its closing quote, or the buffer's end
            pos = _STR_BODY.match(buf, pos).end()
            if pos < len(buf) and buf[pos] == 0x22:
                pos += 1
                in_string = False
            elif pos < len(buf):  # a backslash the buffer cut: keep it for the next read
                want = CHUNK
            continue
        pos = _SKIP.match(buf, pos).end()
        if pos >= len(buf):
            continue
        c = buf[pos]
        if c == 0x22:  # a string the buffer cut
            if start >= 0 and len(buf) - start > cap:
                skipping, start = "too-large", -1
            if start >= 0:  # kept: read on (doubling, so a long string costs linear time)
                want = 2 * (len(buf) - start)
            else:  # not kept: streamed past
                in_string = True
                pos += 1
            continue
        elif c in b"[{":
            if depth == 0:
                if opened or c != 0x5B or base == 0 and bytes(buf[:pos]).lstrip(b"\xef\xbb\xbf").strip(_WS):
                    end.problem = (
                        "not-array",
                        "not a JSON array of conversations"
                        if not opened
                        else f"more data after the array, at byte {base + pos}; ignored",
                    )
                    return
                opened = True
            depth += 1
            if depth == 2:
                start, skipping, item_offset = pos, None, base + pos
            elif depth > MAX_DEPTH + 1 and start >= 0:
                skipping, start = "too-deep", -1
            pos += 1
        else:
            depth -= 1
            pos += 1
            if depth == 1:
                if skipping == "too-large":
                    yield Item(
                        index,
                        item_offset,
                        None,
                        (
                            "too-large",
                            f"conversation {index} is over the {cap}-byte cap; skipped (see --max-file-size)",
                        ),
                    )
                elif skipping:
                    yield Item(
                        index,
                        item_offset,
                        None,
                        ("too-deep", f"conversation {index} nests values over {MAX_DEPTH} levels deep; skipped"),
                    )
                else:
                    data = bytes(buf[start:pos])
                    yield Item(
                        index,
                        item_offset,
                        data,
                        None if data[:1] == b"{" else ("not-object", "an array, not a conversation object"),
                    )
                start, index = -1, index + 1
            elif depth == 0:
                return
            elif depth < 0:
                end.problem = ("bad-json", f"unbalanced bracket at byte {base + pos - 1}")
                return
        if start >= 0 and pos - start > cap:
            skipping, start = "too-large", -1
