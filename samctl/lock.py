"""samctl's own write lock, and the owning-app guard every writing command uses.

- ``store_lock(store, wait)``: an exclusive ``flock`` on ``<base>/.samctl/lock``
  (0600 in a 0700 folder).  Two samctl runs that write never interleave; a
  second one waits up to ``wait`` seconds, then raises Busy (exit 5).  The
  lock is released when the process dies, so a crash never leaves it stuck.
- ``flock_waiting(fd, wait, timed_out, waiting)``: the waiting ``flock`` of both ``store_lock``
  and the search index's writer lock (``search.index.update``); a descriptor it locked is in
  ``HELD_LOCKS`` until ``unlock``, so that a forked worker closes its copy
  (``close_inherited_locks``): a worker never keeps a lock after its parent is gone.
- ``open_lock_file(path)``, ``flock_held(path)``: a lock file opened 0600 without following a symlink;
  whether some process holds an ``flock`` on a file (a probe that creates nothing).
- ``ensure_app_idle(store, ids, force)``: raises Busy when the owning app is
  using what a command would touch (SAM: a running SAM process; mermaid: the
  session's scratch ``.lock`` held), unless ``force``.
- ``would_refuse(store, ids, force)``: what a dry run says instead of either
  refusal (warnings): it changes nothing, so it never refuses.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from pathlib import Path

from samctl.errors import Busy, SamctlError, UnsafePath
from samctl.fs import filemodes, writing
from samctl.fs.filemodes import FILE_MODE
from samctl.model import WARNING, Finding


def flock_held(path: str | os.PathLike) -> bool:
    """True if some process holds an exclusive or shared ``flock`` on ``path`` right now.  A probe:
    nothing is created or written (a missing file, or one that cannot be opened, is not held)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # (releases the lock if the probe took it)
    return False


HELD_LOCKS: set = set()  # the descriptors on which this process holds an flock (``samctl.lock`` adds them)


def unlock(fd: int) -> None:
    """Close ``fd``, a descriptor in ``HELD_LOCKS``: its flock goes with the last descriptor on it."""
    HELD_LOCKS.discard(fd)
    os.close(fd)


def close_inherited_locks() -> None:
    """In a worker forked while its parent held locks: close the worker's copies of those
    descriptors.  The parent's own stay open, so its locks are as they were (an flock goes only
    when every descriptor on it is closed); but a worker that outlives a killed parent holds none,
    and the next samctl does not wait for it."""
    for fd in list(HELD_LOCKS):
        HELD_LOCKS.discard(fd)
        try:
            os.close(fd)
        except OSError:
            pass


def open_lock_file(path: str | os.PathLike, nonblock: bool = False) -> int:
    """A read-write fd of a lock file, created 0600 if missing, never through a symlink (``nonblock``: a FIFO
    put there does not block the open).  Raises OSError."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_NONBLOCK if nonblock else 0)
    return os.open(path, flags, FILE_MODE)


def samctl_dir(store) -> Path:
    """The folder of samctl's lock: ``.samctl`` in the store's base folder, or where the store says."""
    return store.lock_folder() or store.base / ".samctl"


def flock_waiting(fd: int, wait: float, timed_out, waiting=None) -> None:
    """Take an exclusive ``flock`` on ``fd``, trying every 50 ms for up to ``wait`` seconds; then
    raise ``timed_out()``.  ``waiting()``, if given, is called once, when the lock is first found held."""
    deadline = time.monotonic() + max(0.0, wait)
    told = waiting is None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            HELD_LOCKS.add(fd)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise timed_out() from None
            if not told:
                waiting()
                told = True
            time.sleep(0.05)


def _open_lock(store) -> tuple[Path, int]:
    """(the lock file, a descriptor on it): created 0600 in a 0700 ``.samctl`` folder.  Never through
    a symlink (the folder or the file), never anything but a regular file; a refusal says what is
    in the way, it is never an internal error."""
    folder = samctl_dir(store)
    st = filemodes.lstat(folder)
    if st is not None and (stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode)):
        raise UnsafePath(
            f"{folder} is {filemodes.describe_mode(st.st_mode)}, not samctl's lock folder; nothing was written",
            hint="move it out of the way; samctl never writes through a symlink",
        )
    path = folder / "lock"
    try:
        writing.make_private_dir(folder)
        fd = open_lock_file(path, nonblock=True)
    except OSError as exc:
        st = filemodes.lstat(path)
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise UnsafePath(
                f"{path} is {filemodes.describe_mode(st.st_mode)}, not samctl's lock file; nothing was written",
                hint="move it out of the way",
            ) from None
        raise SamctlError(
            f"cannot create samctl's lock {path}: {exc.strerror}; nothing was written",
            hint="samctl needs to write in the store's folder to change it",
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # (a FIFO opened without blocking)
        os.close(fd)
        raise UnsafePath(
            f"{path} is not a regular file, not samctl's lock file; nothing was written", hint="move it out of the way"
        )
    return path, fd


def held_by_another(store) -> bool:
    """True if another samctl holds the store's lock right now (read-only: nothing is created)."""
    return flock_held(samctl_dir(store) / "lock")


@contextlib.contextmanager
def store_lock(store, wait: float = 0.0):
    path, fd = _open_lock(store)
    try:
        waited = f" (waited {wait:g} s)" if wait else ""
        hint = (
            "wait for it to finish, or pass a longer --lock-wait SECONDS"
            if wait
            else "wait for it to finish, or pass --lock-wait SECONDS"
        )
        flock_waiting(fd, wait, lambda: Busy(f"another samctl is writing to {store.conv_dir}{waited}", hint=hint))
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass
        yield path
    finally:
        unlock(fd)  # closing the descriptor releases the flock


def ensure_app_idle(store, ids=(), force: bool = False) -> None:
    if force:
        return
    reason = store.busy_reason(ids)
    if reason is not None:
        raise Busy(reason[0], hint=reason[1])


def would_refuse(store, ids=(), force: bool = False) -> list:
    """Warnings for what would make the real run refuse right now (exit 5): the owning app using
    what it would touch, another samctl holding the lock.  Read-only (nothing is created)."""
    out = []
    try:
        ensure_app_idle(store, ids, force)
    except Busy as exc:
        out.append(Finding("busy", str(store.conv_dir), f"{exc.message}: the real run would refuse (exit 5)", WARNING))
    if held_by_another(store):
        out.append(
            Finding(
                "busy",
                str(store.conv_dir),
                "another samctl is writing to this store: the real run "
                "would wait --lock-wait seconds, then refuse (exit 5)",
                WARNING,
            )
        )
    return out
