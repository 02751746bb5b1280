"""The last full check of a store against its index, so that a search in quick succession skips it.

A full check lists and stats every source file (``discover``: 2-3 s for 100,000 mermaid sessions).
A search skips it, and trusts the index as it is, only when all of this holds:
- the last full check found the index up to date, no file changed moments before (racy), and it is
  at most ``RECHECK`` seconds old (``SAMCTL_INDEX_RECHECK``; 0 turns the quick path off);
- the manifest is the one that check saw (same inode, size, mtime);
- every folder holding a source file, and the folder above it, has the mtime, ctime and inode it had:
  a file created, removed or replaced by a rename there (how mermaid and SAM save) changes them.
So a file added, removed or saved by rename is seen at once, and one changed in place (an appended
log, a SQLite database) at most ``RECHECK`` seconds later.  The record is a file ``checked`` beside
the manifest, written atomically; anything odd about it means a full check.

Design notes: docs/search-index.md, "search/index/checked.py".
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import weakref
from pathlib import Path

import orjson

from samctl.errors import FileProblem
from samctl.fs import reading, removing, writing
from samctl.model import Finding
from samctl.search.index import folderstate
from samctl.search.index.folderstate import digest, pack, unpack

RECORD = "checked"


def recheck_seconds() -> float:
    try:
        v = float(os.environ.get("SAMCTL_INDEX_RECHECK", "30"))
    except ValueError:
        return 30.0
    return v if v == v and v >= 0 else 30.0


def _sig(path: str) -> str | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return f"{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{st.st_size}"


def manifest_sig(d: Path) -> str | None:
    """The signature of the index's manifest (None: absent); a manifest is replaced by a rename, so a
    manifest read while this stays the same is the one there."""
    return _sig(str(d / "manifest"))


def _folders(current: dict) -> list:
    """Every folder holding a source file, and the folder above each, by the folder above them:
    [[parent, [name, ...]], ...], sorted; from the root folder (a store opened by a relative path is
    the same store from another folder), joined to this process's folder as the kernel would resolve
    them (no ".." taken away by hand: a link before it leads elsewhere)."""
    here = os.getcwd()
    # (each path's folder by rpartition, then dirname once per distinct one: the same as dirname of each
    # path with a slash, with one dirname call per folder rather than per file; a bare name is in ``here``)
    heads = {p.rpartition("/")[0] if "/" in p else None for src in current.values() for p in src.paths}
    parents = {here if h is None else os.path.join(here, os.path.dirname(h + "/_")) for h in heads}
    groups: dict = {}
    for f in sorted(parents | {os.path.dirname(p) for p in parents}):
        up, name = os.path.split(f)
        if name:  # (the root folder has no folder above it: left out)
            groups.setdefault(up, []).append(name)
    return [[up, names] for up, names in groups.items()]


def save(d: Path, current: dict, discovery: list, with_findings: set) -> None:
    """Record a full check that found the index in ``d`` up to date for every source in ``current``
    (none racy), with the discovery's findings and the order of the sources ``with_findings``; an
    unwritable record only costs the next search time."""
    if recheck_seconds() <= 0 or not all(s.trusted for s in current.values()):
        return
    try:
        folders = _folders(current)
    except OSError:  # (this process's folder was removed: no record, a full check next time)
        return
    saved = digest(folders)
    head = {
        "at": time.time(),
        "manifest": manifest_sig(d),
        "digest": saved,
        "names": sum(len(names) for _parent, names in folders),
        "discovery": [[f.code, f.path, f.reason, f.severity, f.conversation] for f in discovery],
        "order": [k for k in current if k in with_findings],
    }
    try:  # (the head on a line of its own: a search reads it, and the folders only where it states them)
        writing.write_atomic(d / RECORD, orjson.dumps(head) + b"\n" + pack(saved, folders))
    except (OSError, UnicodeError, TypeError):  # (orjson refuses a surrogate: no record, a full check next time)
        pass


class Recent:
    """A full check that still holds if its folders are as it saw them: ``found`` (discovery findings),
    ``order`` (of the sources with findings); ``holds()`` says whether they are.

    A few folders are stated at once.  Many (``OUT_OF_LINE_AT`` or more) are stated while the search
    ranks: in a thread, or, with ``child``, by a child process (``_Stater``: ``folderstate.py``, which
    reads the record at ``path``) on the other core.  The caller asks for a child when several stores
    are searched: in a thread each ``stat`` waits for its turn of the GIL against the ranking, while a
    child does not slow the ranking; its start (once per process: one that answered is kept for the
    next search) is hidden by the ranking of several stores, not by a single store's.  A thread does
    it, too, when no child can be started (figures: docs/search-index.md, bench/README.md)."""

    def __init__(self, found: list, order: list, names: int, body: bytes, saved: str, path: Path, child: bool = False):
        self.found, self.order = found, order
        self._saved = saved
        self._same: list = []
        self._thread = self._child = None
        if names < OUT_OF_LINE_AT:
            self._compare(body)
            return
        self._child = _spawn(path) if child else None
        if self._child is None:
            self._thread = threading.Thread(target=self._compare, args=(body,), daemon=True, name="samctl-checked")
            self._thread.start()

    def _compare(self, body: bytes) -> None:
        try:
            packed, groups = unpack(body)
            self._same.append(packed == self._saved and digest(groups) == self._saved)
        except (TypeError, ValueError, OSError):  # (a record whose folders are not packed as they should)
            self._same.append(False)

    @property
    def stating(self) -> bool:
        """Whether a child process states the folders (until ``holds()``)."""
        return self._child is not None

    def holds(self) -> bool:
        if self._child is not None:
            said = self._child.answer()
            # (the record it read was the one read here: another samctl may have replaced it since)
            self._same.append(said == b"1 " + self._saved.encode())
            if said:
                _keep(self._child)
            else:
                self._child.end()
            self._child = None
        if self._thread is not None:
            self._thread.join()
        return bool(self._same and self._same[0])


OUT_OF_LINE_AT = 1000  # folders: fewer are stated at once (cheaper than starting anything), more while the search ranks

_IDLE: list = []  # a ``_Stater`` of this process that answered, kept for its next search


def _spawn(path: Path):
    """A ``_Stater`` asked about the record ``path`` (this process's idle one, else a new one), or None
    when none can be started.  Python isolated (-I) and without site (-S): it imports the standard
    library only."""
    if getattr(sys, "frozen", False) or not sys.executable or not hasattr(os, "posix_spawn"):
        return None
    while _IDLE:
        try:
            stater = _IDLE.pop()
        except IndexError:  # (another thread's search took it meanwhile)
            break
        if stater.owner == os.getpid() and stater.ask(path):
            return stater
        stater.end()  # (it ended, or it is the stater of the process this one was forked from)
    try:
        stater = _Stater([sys.executable, "-I", "-S", "-B", folderstate.__file__])
    except (OSError, ValueError):
        return None
    if stater.ask(path):
        return stater
    stater.end()
    return None


def _keep(stater) -> None:
    """``stater``, which answered, kept for the next search (one is enough: another is ended)."""
    if _IDLE:
        stater.end()
    else:
        _IDLE.append(stater)


class _Stater:
    """``folderstate.py`` serving requests in a process of its own, started by ``posix_spawn`` (no fork
    of this process's memory, no import of ``subprocess``: the start is on the search's path).  Asked
    once (``ask``), it is read once (``answer``) before it is asked again: only then is it kept
    (``_keep``), so no answer is ever read for another request.  It ends when its stdin closes; this
    process kills it and waits for it when it ends it (``end``), drops it, or exits."""

    def __init__(self, argv: list):
        to_child, to_us = os.pipe(), os.pipe()  # (all four close on exec: the child's are copies)
        try:
            pid = os.posix_spawn(
                argv[0],
                argv,
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, to_child[0], 0),
                    (os.POSIX_SPAWN_DUP2, to_us[1], 1),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                ],
            )
        except BaseException:
            _close(to_child[1], to_us[0])
            raise
        finally:
            _close(to_child[0], to_us[1])
        self.owner, self.pid = os.getpid(), pid
        self._w, self._r = to_child[1], to_us[0]
        self.end = weakref.finalize(self, _end, self._w, self._r, pid, self.owner)  # (never a zombie)

    def ask(self, path: Path) -> bool:
        """Write the request for the record ``path`` (from this process's folder); False if it cannot be."""
        try:
            request = os.getcwdb() + b"\0" + os.fsencode(path) + b"\0"
            while request:
                request = request[os.write(self._w, request) :]
        except (OSError, ValueError):
            return False
        return True

    def answer(self) -> bytes:
        """Its line for the request, without the newline, or b"" if it ended without one."""
        said = b""
        try:
            while not said.endswith(b"\n"):
                chunk = os.read(self._r, 1 << 16)
                if not chunk:
                    return b""
                said += chunk
        except OSError:
            return b""
        return said[:-1]


def _close(*fds: int) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _end(w: int, r: int, pid: int, owner: int) -> None:
    """Close the pipes; then, in the process that started it (not a copy forked from it), kill the
    stater and wait for it (it holds nothing: stating reads only)."""
    _close(w, r)
    if os.getpid() != owner:
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def recent(d: Path, child: bool = False) -> Recent | None:
    """The last full check if it may still hold (``Recent.holds`` says whether it does), else None;
    ``child``: many folders are stated by a child process (``Recent``)."""
    try:
        head, _, body = reading.read_capped(d / RECORD, 1 << 30).partition(b"\n")
        r = orjson.loads(head)
        if not (0 <= time.time() - r["at"] <= recheck_seconds()) or r["manifest"] != manifest_sig(d):
            return None
        names, saved = r["names"], r["digest"]
        if not (type(names) is int and isinstance(saved, str) and body):
            return None
        return Recent([Finding(*row) for row in r["discovery"]], r["order"], names, body, saved, d / RECORD, child)
    except (OSError, FileProblem, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def forget(d: Path) -> None:
    try:
        removing.unlink(d / RECORD)
    except OSError:
        pass
