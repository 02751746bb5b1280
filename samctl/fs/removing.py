"""Removing files and folder trees, never through a symlink, each removal a fault-injection step.

Invariants:
- ``remove``/``remove_tree`` never follow a symlink: a link is removed, not what it points to.
- ``remove_tree`` removes files first, then folders bottom up; a folder its owner cannot write is made
  writable to be emptied, and one that cannot be listed raises rather than being left full.
- ``unlink`` (samctl's own cache) is not a fault step; ``remove`` (a store's files) is.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from samctl.fs import faults, filemodes, syncing


def remove_empty_dirs(folders: list) -> None:
    """Undo ``make_private_dir``'s ``created`` list: each folder goes, innermost first, if it is
    still empty (anything someone put there meanwhile keeps it)."""
    for p in reversed(folders):
        try:
            os.rmdir(p)
        except OSError:
            return


def remove_dir_if_empty(path: str | os.PathLike) -> bool:
    """Remove ``path`` if it is an empty folder; False when it could not be (not empty, gone, refused)."""
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def unlink(path: str | os.PathLike, missing_ok: bool = True) -> bool:
    """Unlink one file, of samctl's own cache (no fault faults.step).  True if it was there; raises other OSErrors."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        if not missing_ok:
            raise
        return False
    return True


def remove(path: str | os.PathLike, missing_ok: bool = True) -> bool:
    """Unlink one file (never a folder, never through a symlink). True if it was there."""
    faults.step("unlink")
    return unlink(path, missing_ok)


def remove_tree(path: str | os.PathLike, sync_parent: bool = True) -> None:
    """rm -r without following symlinks: files first, then folders, bottom up.  A folder without
    write permission for its owner (a read-only sub-folder) is made writable to be emptied: a user
    who is not root could not remove what is in it otherwise."""
    path = Path(path)
    st = filemodes.lstat(path)
    if st is None:
        return
    if not stat.S_ISDIR(st.st_mode):
        remove(path)
        return
    try:
        _remove_dir_tree(path)
    except PermissionError:
        _owner_may_write(path)
        _remove_dir_tree(path)  # what the first pass removed is gone; this removes the rest
    if sync_parent:
        syncing.fsync_dir(path.parent)


def _owner_may_write(top: Path) -> None:
    """Give ``top`` and every folder under it (not through links) u+rwx, each before it is listed,
    so that it can be emptied."""

    def writable(p) -> None:
        st = os.lstat(p)
        if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o700 != 0o700:
            os.chmod(p, stat.S_IMODE(st.st_mode) | 0o700)

    writable(top)
    for dirpath, dirnames, _ in os.walk(top, topdown=True, followlinks=False):
        for d in dirnames:  # (before os.walk lists it)
            writable(os.path.join(dirpath, d))


def _raise(exc: OSError) -> None:
    if not isinstance(exc, FileNotFoundError):  # (gone meanwhile: nothing to remove)
        raise exc


def _remove_dir_tree(path: Path) -> None:
    # a folder that cannot be listed raises (PermissionError), rather than being skipped and left full
    for dirpath, dirnames, filenames in os.walk(path, topdown=False, followlinks=False, onerror=_raise):
        for name in filenames:
            remove(os.path.join(dirpath, name))
        for name in dirnames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                remove(p)
            else:
                faults.step("rmdir")
                os.rmdir(p)
    faults.step("rmdir")
    os.rmdir(path)
