"""Repair a torn log tail so the app's next append is not glued onto the fragment (docs/formats/mermaid.md §4.3).

A torn last line (no ``\\n``) is cut back to the last newline, its bytes kept
first in a 0600 ``<log>.<UTC time>.torn`` sibling; a last line that is a
complete event but lacks its newline gets the newline instead.  The caller
must have made sure the app does not have the log open; the log's size
is checked again right before the change so a concurrent append is never cut.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from samctl.errors import SamctlError
from samctl.fs import faults, filemodes, reading, writing
from samctl.said import Suggestion, said


@dataclass
class TailRepair:
    log: Path
    size: int  # the log's size when it was read: refuse to touch it if it changed
    offset: int  # keep bytes [0, offset)
    add_newline: bool  # the unterminated last line is a complete event: terminate it instead


def plan(log: Path, read) -> TailRepair | None:
    """The repair a LogRead calls for, or None when the tail is whole."""
    if read.stop != "torn-tail":
        return None
    return TailRepair(Path(log), read.size, read.last_newline_offset, read.tail_complete)


def sibling(path: Path, suffix: str) -> Path:
    """``<name>.<UTC time>.<suffix>``, unique in the folder."""
    base = path.with_name(f"{path.name}.{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.{suffix}")
    p = base
    n = 0
    while filemodes.lstat(p) is not None:
        n += 1
        if n > 999:
            raise SamctlError(
                f"too many {suffix} files next to {path}",
                hint=said("run `", Suggestion("compact"), "` to clear old ones"),
            )
        p = base.with_name(f"{base.name}.{n}")
    return p


def apply(tail: TailRepair) -> Path | None:
    """Carry out the repair; return the ``.torn`` file written (None when a newline was added)."""
    st = filemodes.lstat(tail.log)
    if st is None or st.st_size != tail.size:
        raise SamctlError(
            f"{tail.log} changed while samctl was reading it (another writer?); nothing was trimmed",
            hint="make sure mermaid is not using the session, then run the command again",
        )
    if tail.add_newline:
        fd = writing.open_append_fd(tail.log)
        try:
            os.write(fd, b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        return None
    with open(tail.log, "rb") as f:
        f.seek(tail.offset)
        cut = f.read()
    torn = sibling(tail.log, "torn")
    writing.write_atomic(torn, cut)
    faults.step("truncate")
    os.truncate(tail.log, tail.offset)
    fd = reading.open_read_fd(tail.log)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return torn
