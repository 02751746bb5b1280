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

import hashlib
import operator
import os
import threading
import time
from pathlib import Path

import orjson

from samctl import fsafe
from samctl.errors import FileProblem
from samctl.model import Finding

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


def _digest(groups: list) -> str:
    """One digest of ``_sig`` of every folder of ``groups`` = [[parent, [name, ...]], ...], in order: each
    parent's names are stated through one descriptor of it (looked up there alone, not along the whole
    path), as ``lstat`` would (the last name not followed).  A folder that cannot be stated counts as "-"."""
    h = hashlib.blake2b(digest_size=16)
    get = operator.attrgetter("st_mtime_ns", "st_ctime_ns", "st_ino", "st_size")
    for parent, names in groups:
        try:
            fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            h.update(b"-" * len(names))
            continue
        try:
            for name in names:
                try:
                    h.update(b"%d:%d:%d:%d;" % get(os.stat(name, dir_fd=fd, follow_symlinks=False)))
                except OSError:
                    h.update(b"-")
        finally:
            os.close(fd)
        h.update(b"/")
    return h.hexdigest()


def manifest_sig(d: Path) -> str | None:
    """The signature of the index's manifest (None: absent); a manifest is replaced by a rename, so a
    manifest read while this stays the same is the one there."""
    return _sig(str(d / "manifest"))


def _folders(current: dict) -> list:
    """Every folder holding a source file, and the folder above each, by the folder above them:
    [[parent, [name, ...]], ...], sorted."""
    # (each path's folder by rpartition, then dirname once per distinct one: what dirname gives each
    # path with a slash, for 200,000 paths in 20 ms instead of 140)
    heads = {p.rpartition("/")[0] for src in current.values() for p in src.paths}
    parents = {os.path.dirname(h + "/_") for h in heads}
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
    folders = _folders(current)
    record = {"at": time.time(), "manifest": manifest_sig(d), "folders": folders,
              "digest": _digest(folders), "discovery": [[f.code, f.path, f.reason, f.severity, f.conversation]
                                                        for f in discovery],
              "order": [k for k in current if k in with_findings]}
    try:
        fsafe.write_atomic(d / RECORD, orjson.dumps(record))
    except OSError:
        pass


class Recent:
    """A full check that still holds if its folders are as it saw them: ``found`` (discovery findings),
    ``order`` (of the sources with findings).  The folders are stated in a thread started at once, so
    that a search can rank meanwhile (10,000 SAM conversation folders: 20 ms); ``holds()`` waits for it."""

    def __init__(self, found: list, order: list, folders: list, digest: str):
        self.found, self.order = found, order
        self._same: list = []
        self._thread = threading.Thread(target=self._compare, args=(folders, digest), daemon=True,
                                        name="samctl-checked")
        self._thread.start()

    def _compare(self, folders: list, digest: str) -> None:
        try:
            self._same.append(_digest(folders) == digest)
        except (TypeError, ValueError, OSError):  # (a record whose folders are not [str, [str, ...]])
            self._same.append(False)

    def holds(self) -> bool:
        self._thread.join()
        return bool(self._same and self._same[0])


def recent(d: Path) -> Recent | None:
    """The last full check if it may still hold (``Recent.holds`` says whether it does), else None."""
    try:
        r = orjson.loads(fsafe.read_capped(d / RECORD, 1 << 30))
        if not (0 <= time.time() - r["at"] <= recheck_seconds()) or r["manifest"] != manifest_sig(d):
            return None
        folders, digest = r["folders"], r["digest"]
        if not (isinstance(folders, list) and isinstance(digest, str) and folders):
            return None
        return Recent([Finding(*row) for row in r["discovery"]], r["order"], folders, digest)
    except (OSError, FileProblem, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def forget(d: Path) -> None:
    try:
        fsafe.unlink(d / RECORD)
    except OSError:
        pass
