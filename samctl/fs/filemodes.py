"""What kind of file a path is, and who may use it: samctl's modes (files 0600, folders 0700).

Invariants:
- ``lstat`` never follows a symlink and never raises: a path that cannot be stated is None.
- ``tighten_mode`` only ever removes group/other bits, never adds any for them, and refuses a symlink.
"""

from __future__ import annotations

import os
import stat

from samctl.errors import UnsafePath

FILE_MODE = 0o600


DIR_MODE = 0o700


def describe_mode(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a regular file" if stat.S_ISREG(mode) else "an unknown kind of file"


def lstat(path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def mode_problem(st: os.stat_result) -> str | None:
    """A one-line reason if a file or folder is open to group/others, else None."""
    perm = stat.S_IMODE(st.st_mode)
    if perm & 0o077:
        want = DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
        return f"mode {perm:04o} lets group/others in (want {want:04o})"
    return None


def tighten_mode(path) -> int:
    """chmod a file to 0600 or a folder to 0700 (keeping owner bits); return the new mode."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(f"{path}: refusing to chmod a symlink")
    new = stat.S_IMODE(st.st_mode) & 0o700
    if stat.S_ISDIR(st.st_mode):
        new |= 0o700
    else:
        new |= 0o600
    os.chmod(path, new, follow_symlinks=False)
    return new
