"""Reading a file samctl did not write: capped, never through a symlink, never blocking on a FIFO.

Invariants:
- Reads never follow a symlink at the last component (``O_NOFOLLOW``), never block on a FIFO
  (``O_NONBLOCK``), refuse anything that is not a regular file, and refuse files larger than the cap
  *before* reading them (and a file that grows past it while being read).
- Every refusal is a ``FileProblem`` with a code (missing, symlink, unreadable, not-regular,
  too-large), never a bare OSError, except from the raw ``open_*_fd`` helpers, which say so.
"""

from __future__ import annotations

import errno
import os
import stat

from samctl.errors import FileProblem
from samctl.fs import filemodes

MIB = 1 << 20


SNAPSHOT_CAP = 64 * MIB  # mermaid's own snapshot cap (67,108,864 bytes)


LOG_CAP = 128 * MIB  # mermaid's own event-log cap (134,217,728 bytes)


def _problem_for_oserror(exc: OSError, path) -> FileProblem:
    if exc.errno == errno.ENOENT:
        return FileProblem("missing", path, "file does not exist")
    if exc.errno == errno.ELOOP:
        return FileProblem("symlink", path, "is a symlink (samctl does not follow symlinks)")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return FileProblem("unreadable", path, "permission denied")
    if exc.errno == errno.EISDIR:
        return FileProblem("not-regular", path, "is a directory, not a file")
    return FileProblem("unreadable", path, f"cannot read: {exc.strerror or exc}")


def read_capped(path: str | os.PathLike, cap: int) -> bytes:
    """Read a whole regular file of at most ``cap`` bytes.

    Raises FileProblem with code missing/symlink/unreadable/not-regular/too-large.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _problem_for_oserror(exc, path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileProblem("not-regular", path, f"is not a regular file ({filemodes.describe_mode(st.st_mode)})")
        if st.st_size > cap:
            raise FileProblem("too-large", path, f"{st.st_size} bytes is over the {cap}-byte cap")
        chunks: list[bytes] = []
        left = cap + 1  # one more than the cap: notices a file that grew while we read
        while left > 0:
            # The whole file in one read (one buffer, no join to copy it); 16 MiB at a time
            # only for what it grew by while we read.
            want = min(left, st.st_size + 1 if not chunks else 1 << 24)
            try:
                b = os.read(fd, want)
            except OSError as exc:
                raise _problem_for_oserror(exc, path) from None
            if not b:
                break
            chunks.append(b)
            left -= len(b)
            if len(b) < want:
                break  # a short read of a regular file is its end: saves a syscall per small file
        data = b"".join(chunks)
        if len(data) > cap:
            raise FileProblem("too-large", path, f"grew past the {cap}-byte cap while being read")
        return data
    finally:
        os.close(fd)


def open_regular(path: str | os.PathLike):
    """Open a regular file for streamed reading (no symlink, no FIFO): ``(file, stat)``.

    Raises FileProblem like ``read_capped``.  For files too big to read whole.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _problem_for_oserror(exc, path) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FileProblem("not-regular", path, f"is not a regular file ({filemodes.describe_mode(st.st_mode)})")
    return os.fdopen(fd, "rb", buffering=0), st


def sha256_of(path: str | os.PathLike) -> tuple[int, str]:
    """``(size, sha256 hex)`` of a regular file's bytes, read in 1 MiB pieces; FileProblem like
    ``open_regular``."""
    f, _ = open_regular(path)
    try:
        return sha256_of_file(f)
    finally:
        f.close()


def sha256_of_file(f) -> tuple[int, str]:
    """``(size, sha256 hex)`` of the rest of the open binary file ``f``, read in 1 MiB pieces."""
    import hashlib  # (lazy: not loaded by ls or --help)

    h, n = hashlib.sha256(), 0
    while b := f.read(MIB):
        h.update(b)
        n += len(b)
    return n, h.hexdigest()


def open_read_fd(path: str | os.PathLike, nofollow: bool = True) -> int:
    """A read-only fd (``O_CLOEXEC``; ``O_NOFOLLOW`` unless told): for fstat/fsync/mmap of a file samctl
    checks itself.  ``O_NONBLOCK``: a FIFO put in the file's place never blocks the open (the caller's
    fstat then finds it is not a regular file; a regular file ignores the flag).  Raises OSError."""
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (os.O_NOFOLLOW if nofollow else 0))


def open_dir_fd(path: str | os.PathLike) -> int:
    """A read-only fd of a folder, for ``*at`` calls relative to it.  Raises OSError."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
