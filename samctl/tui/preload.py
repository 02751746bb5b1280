"""The listing of ``samctl browse``, started in a child process before Textual is imported.

Why: importing Textual and listing a large archive each take hundreds of milliseconds of one core; run
one after the other they add up before the first row can be painted.  ``start`` forks a child (the parent
has no thread yet, so the fork is safe) that lists the stores while the parent imports Textual and builds
its screen; the parent reads what the child sends in a worker thread.

The child sends, store by store, in the stores' order, pickled frames of a length prefix and a tuple:
``("head", i, metas)``: the first ``HEAD`` conversations of store ``i`` when it has more (newest first:
enough to paint a screen before the whole list is unpacked), then ``("all", i, metas, findings)``: all of them.  A meta travels as the tuple of its fields (pickling
100,000 dataclass instances costs ten times more than their tuples).  Invariants:
the child writes nothing but frames to its pipe, never touches the terminal, and leaves with
``os._exit`` (no ``atexit`` handler or buffered output of the parent's runs twice); a store the child
did not finish (it died, was killed, or a frame is malformed) is simply absent from ``frames()``, and the
caller lists it itself.  Without ``os.fork`` (Windows), ``start`` returns None and the caller lists in a
thread, as it does when the list is loaded again.  The child runs at a lower priority (nice 10): on a
busy machine it takes no CPU from Textual's start, on an idle one it has a core of its own.  Besides
time, it keeps the browser's keys quick while a large archive is listed: a thread listing there would
hold the interpreter's lock for most of a second at a time (the listing cache's parse).
"""

from __future__ import annotations

import dataclasses
import gc
import os
import pickle
import signal
import struct
from operator import attrgetter

from samctl.core.listing import ListQuery, list_across
from samctl.errors import SamctlError
from samctl.model import ERROR, ConversationMeta, Finding

HEAD = 200  # conversations of a store sent before the rest: more than a screen holds
_LEN = struct.Struct("<Q")
# (positional: the constructor's order; a cached ls row is ls's alone)
FIELDS = tuple(f.name for f in dataclasses.fields(ConversationMeta) if f.name != "json_row")


def list_store(store) -> tuple[list, list]:
    """A store's conversations, newest first, and the findings; a store that fails is one finding."""
    findings: list = []
    try:
        metas = list_across([store], ListQuery(), findings)
    except SamctlError as exc:
        metas = []
        findings.append(Finding("store-unreadable", str(store.conv_dir), exc.message, ERROR))
    except Exception as exc:  # noqa: BLE001 - (one store's bug: the others are still listed)
        if os.environ.get("SAMCTL_DEBUG") == "1":
            raise
        metas = []
        findings.append(
            Finding("store-unreadable", str(store.conv_dir), f"internal error: {type(exc).__name__}: {exc}", ERROR)
        )
    return metas, findings


class Preload:
    """A child listing ``stores``; ``frames()`` yields what it sent, ``close()`` ends it."""

    def __init__(self, pid: int, fd: int):
        self.pid, self.fd = pid, fd

    def frames(self):
        """Each frame the child sent, as it comes (blocking: call it from a worker thread)."""
        try:
            with os.fdopen(self.fd, "rb", closefd=False) as f:
                while True:
                    head = f.read(_LEN.size)
                    if len(head) < _LEN.size:
                        return
                    (n,) = _LEN.unpack(head)
                    body = f.read(n)
                    if len(body) < n:
                        return
                    try:
                        frame = pickle.loads(body)
                        frame = (*frame[:2], [ConversationMeta(*t) for t in frame[2]], *frame[3:])
                    except Exception:  # noqa: BLE001 - (a frame that does not load: the rest is listed here)
                        return
                    yield frame
        except OSError:
            return

    def stop(self) -> None:
        """Stop the child if it still runs: ``frames()`` then ends at what it sent whole."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except OSError:
                pass

    def close(self) -> None:
        """Stop the child if it still runs, and reap it (idempotent)."""
        if self.pid:
            self.stop()
            try:
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = 0
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1


def start(stores: list) -> Preload | None:
    """Fork a child listing ``stores`` (call before any thread is started); None where it cannot."""
    if not stores or not hasattr(os, "fork"):
        return None
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid:
        os.close(w)
        return Preload(pid, r)
    code = 0
    try:  # the child
        gc.disable()  # (a short life making many acyclic objects: nothing for the collector to find)
        try:
            os.nice(10)  # (the parent's start first: see the module's docstring)
        except OSError:
            pass
        os.close(r)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # (the parent decides when it ends)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        get = attrgetter(*FIELDS)
        with os.fdopen(w, "wb") as out:
            for i, store in enumerate(stores):
                metas, findings = list_store(store)
                frames = [("all", i, metas, findings)]
                if len(metas) > HEAD:
                    frames.insert(0, ("head", i, metas[:HEAD]))
                for frame in frames:
                    frame = (*frame[:2], [get(m) for m in frame[2]], *frame[3:])
                    body = pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL)
                    out.write(_LEN.pack(len(body)))
                    out.write(body)
                    out.flush()
    except BaseException:  # noqa: BLE001 - (whatever happens, the child leaves without running the parent's code)
        code = 1
    os._exit(code)
