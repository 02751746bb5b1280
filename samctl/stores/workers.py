"""Work on many conversations in worker processes: one store per worker, the results in order.

Results come back in input order, as if run here; a worker reads the store (never samctl's cache), writes
nothing but restore's staging folder, holds no lock, starts no workers, and does not outlive samctl.

Design notes: docs/stores.md, "stores/workers.py".
"""

from __future__ import annotations

import collections
import gc
import itertools
import os
import signal
import sys
import threading
import time
from pathlib import Path

from samctl import gcpause, lock
from samctl.errors import SamctlError
from samctl.stores import store_class
from samctl.stores.base import Caps

MAX_JOBS = 4  # past this the disk, not the cores, is what limits a read of every file


def jobs(env: str = "SAMCTL_JOBS") -> int:
    """Worker processes to use: ``env`` if it holds a number (0 or 1: none), else the cores (at most MAX_JOBS)."""
    value = os.environ.get(env, "")
    if value.isdigit():
        return max(1, int(value))
    return max(1, min(os.cpu_count() or 1, MAX_JOBS))


_store = None  # a worker's store (None: this is not a worker)


PARENT_POLL = 0.2  # seconds between a worker's looks at whether its parent is still there


def _init(spec) -> None:
    global _store

    kind, conv, base, caps, parent = spec
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (not samctl's own handler, forked along: see cli.main)
    gc.enable()  # (a parent that paused its collector, as a refresh does, forks workers with it paused)
    lock.close_inherited_locks()
    gcpause.keep_frozen()  # (the parent froze its objects before forking: see _shared_with_workers)
    threading.Thread(target=_exit_with, args=(parent,), name="samctl-parent-watch", daemon=True).start()
    _store = store_class(kind)(Path(conv), Path(base), Caps(*caps), False)


def _exit_with(parent: int) -> None:
    """Exit this worker once ``parent`` is no longer its parent (it died, and the worker was
    handed to init or a subreaper).  Polled: there is no portable way to be told."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    os._exit(1)


def _run(fn, part):
    try:
        return fn(_store, part)
    except Exception as exc:
        import pickle  # (lazy: pickle: not loaded by ls or --help)

        try:  # what the parent will do with it: an exception it cannot rebuild breaks the whole pool
            pickle.loads(pickle.dumps(exc))
        except Exception:  # noqa: BLE001
            raise RuntimeError(f"{type(exc).__name__}: {exc}") from None
        raise


def ordered_map(store, fn, parts: list, n_jobs: int | None = None, min_parts: int = 2, ahead: int | None = None):
    """``fn(store, part)`` for each of ``parts``, in order: in ``n_jobs`` worker processes (default
    ``jobs()``), or here when there is one job or fewer than ``min_parts`` parts.  At most ``ahead``
    (default ``AHEAD``) parts per worker are given out and not yet handed back: what waits in memory."""
    n_jobs = jobs() if n_jobs is None else n_jobs
    if n_jobs <= 1 or len(parts) < max(min_parts, 2) or _store is not None:
        for part in parts:
            yield fn(store, part)
        return
    import concurrent.futures  # (lazy: concurrent: not loaded by ls or --help)
    import multiprocessing  # (lazy: multiprocessing: not loaded by ls or --help)
    from concurrent.futures.process import BrokenProcessPool  # (lazy: concurrent: not loaded by ls or --help)

    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    spec = (
        store.name,
        str(store.conv_dir),
        str(store.base),
        (store.caps.snapshot, store.caps.log, store.caps.other),
        os.getpid(),
    )
    n_jobs = min(n_jobs, len(parts))
    with concurrent.futures.ProcessPoolExecutor(n_jobs, mp_context=ctx, initializer=_init, initargs=(spec,)) as pool:
        # at most AHEAD parts per worker submitted and not yet handed back: results never pile up
        # in memory when the caller is slower than the workers (pool.map would submit them all)
        todo = iter(parts)
        try:  # (a worker's death is seen by the next submit or by its result, whichever comes first)
            gc.freeze()  # (the workers fork at the first submit: see _shared_with_workers)
            try:
                pending = collections.deque(
                    pool.submit(_run, fn, part) for part in itertools.islice(todo, (ahead or AHEAD) * n_jobs)
                )
            finally:
                gc.unfreeze()
            while pending:
                done = pending.popleft()
                part = next(todo, _END)
                if part is not _END:
                    pending.append(pool.submit(_run, fn, part))
                yield done.result()
        except BrokenProcessPool:
            raise SamctlError(
                "a worker process stopped before it finished its work (killed, or out of memory?)",
                hint="run the command again (a move it interrupted is finished "
                "first); SAMCTL_JOBS=1 does all the work in one process",
            ) from None


AHEAD = 2
_END = object()

# _shared_with_workers: a forked worker shares the parent's memory until a page is written.  Python's
# collector writes into every object it looks at, so a worker's collections copied the pages of what
# the parent held when it forked.  The parent's objects are frozen while the workers fork
# (``gc.freeze``): the workers' collections leave them be, and more of their pages stay shared (a
# build of 100,000 sessions: 77 -> 70 MiB of PSS a worker).


def ordered_items(store, fn, items: list, min_items: int, part_size: int, part_bytes: int | None = None, weight=None):
    """``fn(store, item)`` for each of ``items``, in order: in worker processes when there are at
    least ``min_items``, else right here.  A unit of work is ``part_size`` items, or fewer once
    their ``weight(item)`` (bytes it will hold) reaches ``part_bytes``: a bound on what waits in
    memory.  For a listing's cache misses (a first listing reads every file, a warm one a few),
    and the archives rm builds and the entries restore extracts."""
    parts, part, held = [], [], 0
    for item in items:
        part.append(item)
        held += weight(item) if part_bytes is not None else 0
        if len(part) == part_size or (part_bytes is not None and held >= part_bytes):
            parts.append((fn, part))
            part, held = [], 0
    if part:
        parts.append((fn, part))
    for results in ordered_map(store, _each, parts, n_jobs=None if len(items) >= min_items else 1):
        yield from results


def _each(store, part) -> list:
    fn, items = part
    return [fn(store, item) for item in items]
