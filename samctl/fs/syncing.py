"""Durability: fsync of files and folders, and batches that defer them to one ``syncfs`` per barrier.

Invariants:
- Outside a batch, a file written is fsynced before its rename and its folder after it.
- Inside ``sync_batch()`` (Linux), those fsyncs are deferred to the batch's ``barrier()``, one ``syncfs``
  for everything written since: a move of many conversations pays for durability a few times, not a
  dozen times each.  Until a barrier, writes in a batch may reach the disk in any order.
- A worker process writing for a batch of its parent's (``synced_by_parent``) leaves its fsyncs to the
  parent's barriers: a ``syncfs`` of a file system writes out every process's writes on it, and the
  parent notes the folders.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any

from samctl.fs import faults


def skip_fsync() -> bool:
    """True only in samctl's own test suite (tests/conftest.py sets SAMCTL_TEST_NO_FSYNC=1; the tests of
    durability unset it): an fsync there only waits on the disk.  Never set it for real use."""
    return os.environ.get("SAMCTL_TEST_NO_FSYNC") == "1"


def fsync_dir(path) -> None:
    if skip_fsync():
        return
    if _batch is not None:
        _batch.note_path(path)
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def libc(name: str):
    """The C library's function ``name`` (errno kept) and ctypes, or (None, None) where there is none."""
    if not sys.platform.startswith("linux"):
        return None, None
    try:
        import ctypes  # (lazy: ctypes: not loaded by ls or --help)

        return getattr(ctypes.CDLL(None, use_errno=True), name), ctypes
    except (OSError, AttributeError):  # an old glibc, or another libc
        return None, None


def fsync_file(fd: int) -> None:
    """fsync a file just written, or leave it to the running batch's next barrier."""
    if _batch is not None:
        _batch.note_fd(fd)
    elif not skip_fsync():
        os.fsync(fd)


def _load_syncfs():
    fn, ctypes = libc("syncfs")
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_int]

    def syncfs(fd: int) -> None:
        if fn(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

    return syncfs


_UNSET = object()


syncfs: Any = _UNSET  # syncfs(fd) for the file system of fd, or None where there is none (set on first use)


_batch = None


class SyncBatch:
    """The file systems written to since the last barrier, one open descriptor each.

    While the caller writes, a background thread writes out what is already
    dirty (one ``syncfs`` at a time, after every ``EARLY`` bytes of files
    noted), so a barrier finds little left to wait for: the disk works while
    samctl computes.  Only a barrier's own ``syncfs``, made after the last
    write it covers, promises anything; the early ones are an optimisation,
    and their errors are left for it to report.
    """

    EARLY = 4 << 20  # bytes of files noted between two background writebacks
    EARLY_USEFUL = 0.001  # seconds: a writeback faster than this had nothing to wait for (tmpfs): no more

    def __init__(self):
        self.fds: dict = {}  # st_dev -> fd
        self.folders: set = set()  # folders noted already (a move notes the same few many times)
        self.dirty = False
        self.noted = 0  # bytes of files noted since the last writeback started
        self.early = None  # the running background writeback (a thread), if any
        self.early_on = True

    def note_fd(self, fd: int) -> None:
        st = os.fstat(fd)
        self.dirty = True
        if st.st_dev not in self.fds:
            self.fds[st.st_dev] = os.dup(fd)
        self._count(st.st_size)

    def _count(self, nbytes: int) -> None:
        """``nbytes`` more written: start a background writeback after every ``EARLY`` bytes."""
        self.noted += nbytes
        if self.noted >= self.EARLY and self.early_on and (self.early is None or not self.early.is_alive()):
            self._start_early()

    def _start_early(self) -> None:
        self.noted = 0
        import threading  # (lazy: not loaded by ls or --help)

        self.early = threading.Thread(
            target=self._write_back, args=(list(self.fds.values()),), name="samctl-writeback", daemon=True
        )
        self.early.start()

    def _write_back(self, fds: list) -> None:
        t = time.perf_counter()
        for fd in fds:
            try:
                syncfs(fd)
            except OSError:
                pass  # the barrier's own syncfs reports it
        if time.perf_counter() - t < self.EARLY_USEFUL:
            self.early_on = False

    def _wait_early(self) -> None:
        if self.early is not None:
            self.early.join()
            self.early = None

    def note_path(self, path) -> None:
        self.dirty = True
        if path in self.folders:
            return
        self.folders.add(path)
        try:
            dev = os.stat(path).st_dev
            if dev not in self.fds:
                self.fds[dev] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            pass  # gone already: its parent, noted too, carries the change

    def note_written(self, folder, nbytes: int) -> None:
        """Another process (a worker) wrote ``nbytes`` under ``folder`` for this batch."""
        self.note_path(folder)
        self._count(nbytes)

    def barrier(self) -> None:
        """Everything written in the batch so far is on disk when this returns."""
        faults.step("sync")
        self.flush()

    def flush(self) -> None:
        self._wait_early()
        if self.dirty:
            for fd in self.fds.values():
                syncfs(fd)
            self.dirty = False
            self.noted = 0

    def close(self) -> None:
        self._wait_early()  # it uses the descriptors
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


class _NoBatch:
    """What ``sync_batch`` yields where writes are not deferred: every write fsyncs itself."""

    def barrier(self) -> None:
        faults.step("sync")

    def note_written(self, folder, nbytes: int) -> None:
        pass  # (each of those writes was fsynced by the process that made it)


def batch_defers() -> bool:
    """True inside a ``sync_batch`` whose barriers are ``syncfs`` calls (which write out what
    other processes wrote on that file system too)."""
    return isinstance(_batch, SyncBatch)


class _ByParent:
    """``_batch`` in a worker writing for its parent's batch: nothing to note, nothing to fsync."""

    def note_fd(self, fd: int) -> None:
        pass

    def note_path(self, path) -> None:
        pass


@contextlib.contextmanager
def synced_by_parent(defer: bool):
    """In a worker process: with ``defer`` (the parent's ``batch_defers()``), the block's writes
    are left to the parent's next barrier, which must cover the folders written in (the parent
    notes them: ``note_written``); without, they fsync as usual."""
    global _batch
    before = _batch
    _batch = _ByParent() if defer else None
    try:
        yield
    finally:
        _batch = before


@contextlib.contextmanager
def sync_batch():
    """Defer the fsyncs of the writes in the block to the barriers the caller places.

    Yields an object with ``barrier()``.  The block's last writes are made
    durable when it ends normally.  Without syncfs (not Linux), or inside
    another batch, writes fsync as usual and barriers only mark the faults.step.
    """
    global _batch, syncfs
    if syncfs is _UNSET:
        syncfs = _load_syncfs()
    if _batch is not None or syncfs is None:
        yield _batch or _NoBatch()
        return
    batch = _batch = SyncBatch()
    try:
        yield batch
        batch.flush()
    finally:
        _batch = None
        batch.close()
