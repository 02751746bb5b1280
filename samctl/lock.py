"""samctl's own write lock, and the owning-app guard every writing command uses.

- ``store_lock(store, wait)``: an exclusive ``flock`` on ``<base>/.samctl/lock``
  (0600 in a 0700 folder).  Two samctl runs that write never interleave; a
  second one waits up to ``wait`` seconds, then raises Busy (exit 5).  The
  lock is released when the process dies, so a crash never leaves it stuck.
- ``flock_waiting(fd, wait, timed_out, waiting)``: the waiting ``flock`` of both ``store_lock``
  and the search index's writer lock (``search.index.update``); a descriptor it locked is in
  ``fsafe.HELD_LOCKS`` until ``fsafe.unlock``, so that a forked worker closes its copy
  (``fsafe.close_inherited_locks``): a worker never keeps a lock after its parent is gone.
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

from samctl import fsafe
from samctl.errors import Busy, SamctlError, UnsafePath
from samctl.model import WARNING, Finding


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
            fsafe.HELD_LOCKS.add(fd)
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
    st = fsafe.lstat(folder)
    if st is not None and (stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode)):
        raise UnsafePath(
            f"{folder} is {fsafe.describe_mode(st.st_mode)}, not samctl's lock folder; nothing was written",
            hint="move it out of the way; samctl never writes through a symlink",
        )
    path = folder / "lock"
    try:
        fsafe.make_private_dir(folder)
        fd = fsafe.open_lock_file(path, nonblock=True)
    except OSError as exc:
        st = fsafe.lstat(path)
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise UnsafePath(
                f"{path} is {fsafe.describe_mode(st.st_mode)}, not samctl's lock file; nothing was written",
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
    return fsafe.flock_held(samctl_dir(store) / "lock")


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
        fsafe.unlock(fd)  # closing the descriptor releases the flock


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
