"""samctl's own write lock, and the owning-app guard every writing command uses.

- ``store_lock(store, wait)``: an exclusive ``flock`` on ``<base>/.samctl/lock``
  (0600 in a 0700 folder).  Two samctl runs that write never interleave; a
  second one waits up to ``wait`` seconds, then raises Busy (exit 5).  The
  lock is released when the process dies, so a crash never leaves it stuck.
- ``flock_waiting(fd, wait, timed_out, waiting)``: the waiting ``flock`` of both ``store_lock``
  and the search index's writer lock (``core.index.update``).
- ``ensure_app_idle(store, ids, force)``: raises Busy when the owning app is
  using what a command would touch (SAM: a running SAM process; mermaid: the
  session's scratch ``.lock`` held), unless ``force``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from samctl import fsafe
from samctl.errors import Busy


def samctl_dir(store) -> Path:
    return store.base / ".samctl"


def flock_waiting(fd: int, wait: float, timed_out, waiting=None) -> None:
    """Take an exclusive ``flock`` on ``fd``, trying every 50 ms for up to ``wait`` seconds; then
    raise ``timed_out()``.  ``waiting()``, if given, is called once, when the lock is first found held."""
    deadline = time.monotonic() + max(0.0, wait)
    told = waiting is None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise timed_out() from None
            if not told:
                waiting()
                told = True
            time.sleep(0.05)


@contextlib.contextmanager
def store_lock(store, wait: float = 0.0):
    folder = fsafe.make_private_dir(samctl_dir(store))
    path = folder / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        flock_waiting(fd, wait, lambda: Busy(f"another samctl is writing to {store.conv_dir}",
                                             hint="wait for it to finish, or pass --lock-wait SECONDS"))
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass
        yield path
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def ensure_app_idle(store, ids=(), force: bool = False) -> None:
    if force:
        return
    if store.name == "sam":
        if store.app_is_running():
            raise Busy("SAM is running: it holds every conversation in memory and would overwrite changes",
                       hint="quit SAM first, or pass --force if you are sure it is not using this store")
        return
    live = store.live_sessions(ids)
    if live:
        raise Busy(f"mermaid has {', '.join(live[:3])} open (its scratch lock is held)",
                   hint="close that mermaid session first, or pass --force")
