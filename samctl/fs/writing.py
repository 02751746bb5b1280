"""Writing: atomic replacement, temp files for multi-step moves, and new names that never replace.

Invariants:
- Writes go to a temp sibling named ``.<name>.<pid>.<n>.tmp`` (the name mermaid's own sweeper knows),
  are fsynced, renamed over the target, and the folder is fsynced (``syncing``: perhaps at a batch's
  barrier).  A crash at any instant leaves either the old file or the new one complete.
- Files are created 0600, folders 0700, never through a symlink (``O_NOFOLLOW``, ``O_EXCL``).
- ``place_new``/``move_new`` never replace an existing target (FileExistsError).
- Each function that changes the disk calls ``faults.step`` first; the raw helpers (``make_dir``,
  ``open_append_fd``, ``rename``) do not: a caller that changes a store's files calls it itself.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat
import time
from pathlib import Path
from typing import Any

from samctl.fs import faults, removing, safepaths, syncing
from samctl.fs.filemodes import DIR_MODE, FILE_MODE

STALE_TMP_SECONDS = 3600  # mermaid's sweeper rule


_tmp_counter = itertools.count()


def tmp_name(name: str) -> str:
    return f".{name}.{os.getpid()}.{next(_tmp_counter)}.tmp"


def _temp_sibling(path) -> tuple[str, str]:
    """(the folder of ``path``, a fresh temp name beside it), as strings: no path objects on hot paths."""
    parent, name = os.path.split(os.fspath(path))
    return parent, os.path.join(parent, tmp_name(safepaths.check_component(name)))


def write_atomic(path: str | os.PathLike, data: bytes, mode: int = FILE_MODE) -> None:
    """Write ``data`` to ``path`` atomically: temp sibling, fsync, rename, dir fsync.

    A crash at any instant leaves either the old file or the new one complete.
    The target's folder must exist; it is not created here.
    """
    parent, tmp = _temp_sibling(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        try:
            faults.step("tmp-write")
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fchmod(fd, mode)  # the umask may have taken bits we want, never adds any
            faults.step("fsync")
            syncing.fsync_file(fd)
        finally:
            os.close(fd)
        faults.step("rename")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    faults.step("dir-fsync")
    syncing.fsync_dir(parent)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: int = FILE_MODE):
    """``write_atomic`` for output written in pieces: yields a binary file.

    The data appears at ``path`` (fsynced, renamed, folder fsynced) only when
    the ``with`` block ends normally; on any exception the temp is removed and
    the old file, if any, is left as it was.  Built on ``create_temp``,
    ``finish_temp`` and ``commit_temp`` (same fault-injection steps).
    """
    tmp, f = create_temp(path, mode)
    try:
        yield f
        finish_temp(f, mode)
        commit_temp(tmp, path)
    except BaseException:
        f.close()
        discard_temp(tmp)
        raise


def make_private_dir(path: str | os.PathLike, created: list | None = None) -> Path:
    """mkdir -p with 0700 on every folder it creates; an existing folder is left as is.
    ``created``, if given, gets each folder this call made, outermost first."""
    path = Path(path)
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for p in reversed(missing):
        try:
            os.mkdir(p, DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(p, DIR_MODE)
        if created is not None:
            created.append(p)
    return path


def stale_temps(parent: str | os.PathLike, name: str | None = None, now: float | None = None):
    """Paths of ``.<name>.*.tmp`` temps in ``parent`` older than mermaid's 3600 s rule.

    With ``name`` None, every ``.*.tmp`` temp is considered.
    """
    now = time.time() if now is None else now
    prefix = f".{name}." if name else "."
    out: list[Path] = []
    try:
        entries = list(os.scandir(os.fspath(parent)))
    except OSError:
        return out
    for e in entries:
        if e.name.startswith(prefix) and e.name.endswith(".tmp") and len(e.name) > len(prefix) + 4:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and now - st.st_mtime >= STALE_TMP_SECONDS:
                out.append(Path(e.path))
    return out


def create_temp(path: str | os.PathLike, mode: int = FILE_MODE, buffering: int = 1 << 20):
    """Open a fresh temp sibling of ``path`` (``.<name>.<pid>.<n>.tmp``) for writing.

    Returns ``(tmp_path, binary file)`` (unbuffered with ``buffering=0``: use
    ``write_all``).  Finish it with ``finish_temp`` and then ``commit_temp`` (or
    ``discard_temp``); nothing appears at ``path`` before ``commit_temp``.
    """
    _, tmp = _temp_sibling(path)
    faults.step("tmp-write")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    return tmp, os.fdopen(fd, "wb", buffering=buffering)


def finish_temp(f, mode: int = FILE_MODE, mtime_ns: int | None = None) -> None:
    """Flush, chmod (and, given ``mtime_ns``, set both times) and fsync a file from ``create_temp``, then close it."""
    try:
        f.flush()
        os.fchmod(f.fileno(), mode)
        if mtime_ns is not None:
            os.utime(f.fileno(), ns=(mtime_ns, mtime_ns))
        faults.step("fsync")
        syncing.fsync_file(f.fileno())
    finally:
        f.close()


def commit_temp(tmp: str | os.PathLike, path: str | os.PathLike, sync_dir: bool = True) -> None:
    """Rename a finished temp over ``path`` and fsync the folder.

    ``sync_dir=False`` leaves the folder's fsync to the caller's next commit in
    the same folder (one fsync makes both renames durable).  If the rename does
    not happen (it fails, or samctl is stopped just before it), the temp is
    removed: nothing else would removing.remove it.
    """
    try:
        faults.step("rename")
        os.replace(tmp, path)
    except BaseException:
        discard_temp(tmp)
        raise
    if sync_dir:
        faults.step("dir-fsync")
        syncing.fsync_dir(os.path.dirname(os.fspath(path)))


def discard_temp(tmp: str | os.PathLike) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def write_temp(path: str | os.PathLike, data: bytes, mode: int = FILE_MODE) -> Path:
    """A finished (fsynced) temp sibling of ``path`` holding ``data``; not yet renamed."""
    tmp, f = create_temp(path, mode)
    try:
        f.write(data)
        finish_temp(f, mode)
    except BaseException:
        f.close()
        discard_temp(tmp)
        raise
    return tmp


def open_append_fd(path: str | os.PathLike) -> int:
    """A write-only, append-only fd of an existing file, never through a symlink.  Raises OSError."""
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)


def make_dir(path: str | os.PathLike) -> None:
    """Create one folder, 0700 (its parent must exist).  Raises OSError (FileExistsError if it is there)."""
    os.mkdir(path, DIR_MODE)


def touch(path: str | os.PathLike) -> None:
    """Set a file's mtime (and atime) to now, never through a symlink.  Raises OSError."""
    faults.step("utime")
    os.utime(path, follow_symlinks=False)


def rename(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """``os.rename`` (same file system; the caller fsyncs the folders).  Raises OSError (EXDEV across)."""
    os.rename(src, dst)


def place_new(src: str | os.PathLike, dst: str | os.PathLike, sync_dir: bool = True) -> None:
    """Give the finished file ``src`` the name ``dst`` without ever replacing an existing ``dst``.

    A hard link keeps the inode (bytes, mode, mtime); across file systems the
    bytes are copied to a temp sibling of ``dst`` first.  Raises
    FileExistsError if ``dst`` exists.  ``src`` is left in place.
    """
    faults.step("link")
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK):
            raise
        st = os.lstat(src)
        with open(src, "rb") as f:
            tmp = write_temp(dst, f.read(), stat.S_IMODE(st.st_mode))
        try:
            os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
            faults.step("link")
            os.link(tmp, dst)
        finally:
            discard_temp(tmp)
    if sync_dir:
        syncing.fsync_dir(Path(dst).parent)


def move_new(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Rename ``src`` to ``dst`` without ever replacing an existing ``dst`` (FileExistsError).

    One ``renameat2(RENAME_NOREPLACE)`` on Linux; where there is none (another
    OS, a file system without it, another device) ``place_new`` then an
    unlink of ``src``.  The caller fsyncs both folders.
    """
    global renameat2
    if renameat2 is _UNSET:
        renameat2 = _load_renameat2()
    if renameat2 is not None:
        faults.step("rename")
        try:
            renameat2(os.fspath(src), os.fspath(dst))
            return
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.ENOTSUP):
                raise
    place_new(src, dst, sync_dir=False)
    removing.remove(src)


def _load_renameat2():
    fn, ctypes = syncing.libc("renameat2")
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, noreplace = -100, 1

    def rename_noreplace(src: str, dst: str) -> None:
        if fn(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), noreplace) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), src, None, dst)

    return rename_noreplace


def create_new(path: str | os.PathLike, mode: int = FILE_MODE):
    """Create ``path`` (which must not exist) for writing, in a folder only samctl uses (staging).

    Returns an unbuffered file (writes go straight to the descriptor: use
    ``write_all``).  Finish it with ``finish_temp``; the caller fsyncs the folder.
    """
    faults.step("tmp-write")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    return os.fdopen(fd, "wb", buffering=0)


def write_all(f, data) -> None:
    """Write every byte of ``data`` to the unbuffered file ``f`` (a raw write may take fewer)."""
    view = memoryview(data)
    while view:
        view = view[f.write(view) :]


_UNSET = object()
renameat2: Any = _UNSET  # renameat2(src, dst) with RENAME_NOREPLACE, or None where there is none (set on first use)
