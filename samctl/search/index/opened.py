"""The opened index: a checked manifest with its segments and which of their rows are alive; and
what ``samctl index`` reports about it.

Data model
----------
``Index``: the ``Manifest``, the opened ``Segment`` list (each with its ``alive`` mask: not in a
dead range, not hidden), the count of alive rows, and what the refresh that produced it did
(``read``, ``removed``, ``rebuilt``).  The query path (``search.dispatch``) works on this: candidate
selection over ``meta``, BM25 over the term postings (``search.corpus``).

Invariants
----------
- Readers take no lock: a segment is never changed once renamed into place and the manifest is
  replaced atomically, so ``open_index`` sees one consistent version, or, having lost a race with
  the garbage collector (a segment it names is gone), reads the manifest once more.
- ``open_index`` never refreshes and never writes; anything it cannot trust raises BadIndex.
- ``state(verify=True)`` also checks every byte of every segment.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from pathlib import Path

from samctl.model import Finding
from samctl.search.index.format import KINDS, BadIndex, home_problem, index_dir, load_numpy
from samctl.search.index.manifest import Manifest, alive_mask, dead_rows, read_manifest
from samctl.search.index.segment import Segment
from samctl.search.index.sources import discover, stale


class Index:
    """Segments with their alive masks, and the manifest (sources, conversation titles).

    ``read``/``removed``: source keys read again / dropped by the refresh that produced it;
    ``rebuilt``: it was built from nothing (no index, or one that could not be trusted).
    """

    def __init__(self, manifest: Manifest, segments: list[Segment], path: Path | None = None):
        np = load_numpy()
        self.manifest = manifest
        self.segments = segments
        self.path = path
        self.read: list[str] = []
        self.removed: list[str] = []
        self.rebuilt = False
        self.replaced = 0
        self.compacted = (0, 0)  # (segments rewritten, dead rows they held) by ``refresh(compact=True)``
        dead = {s["name"]: s["dead"] for s in manifest.segments}
        kept = manifest.memo.setdefault("alive", {})  # segment -> (dead rows, alive, all alive, count)
        for seg in segments:
            got = kept.get(seg.name)
            if got is None or got[1].size != seg.rows:
                ranges = dead.get(seg.name, ())
                # (expanded once, from the array read_manifest checked: the conversations' lengths use them too)
                rows = dead_rows(manifest.dead_arrays.get(seg.name, ranges)) if ranges else None
                alive = alive_mask(seg.rows, ranges, rows)
                h = manifest.hidden.get(seg.name)
                if h:
                    alive[np.asarray(h, dtype=np.int64)] = False
                alive.setflags(write=False)  # (shared by every open of this manifest)
                every = not ranges and not h
                got = kept[seg.name] = (rows, alive, every, seg.rows if every else int(np.count_nonzero(alive)))
            seg.dead_rows, seg.alive, seg.all_alive = got[0], got[1], got[2]
        self.rows = sum(kept[s.name][3] for s in segments)

    def title_of(self, cid: str) -> str:
        return self.manifest.title_of(cid)

    def findings(self, scope: set | None = None, order=None) -> list[Finding]:
        return self.manifest.findings(scope, order)


# Index folder -> {segment name: (identity, Segment)} of the last open in this process, so that a process
# searching many times (browse, a bench) maps and checks each segment once.  A segment file is never
# changed once in place; its identity is what the manifest says of it (size, header checksum) and the
# file's stat (inode, size, times): a file replaced or written in place is opened again.  Each open
# holds only the segments its manifest names (those dropped are unmapped); at most _KEPT_FOLDERS folders.
_OPENED: dict = {}
_KEPT_FOLDERS = 8
_LOCK = threading.Lock()  # (what is kept is shared by the threads of a process)


def _segments(d: Path, m: Manifest, root: str) -> list[Segment]:
    """The segments manifest ``m`` names, each a copy of the one opened (its alive mask is per open).
    (Two searches at once in one process: each finds what the other left, or opens again.)"""
    before = _OPENED.pop(str(d), {})
    now, out = {}, []
    for info in m.segments:
        path = d / info["name"]
        try:
            st = os.stat(path)
        except OSError:
            raise BadIndex(f"{info['name']}: missing") from None
        ident = (root, info["size"], info["hcrc"], st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        got = before.get(info["name"])
        seg = got[1] if got is not None and got[0] == ident else Segment.open(path, root, info)
        now[info["name"]] = (ident, seg)
        out.append(copy.copy(seg))
    with _LOCK:
        while len(_OPENED) >= _KEPT_FOLDERS:
            _OPENED.pop(next(iter(_OPENED)), None)
        _OPENED[str(d)] = now
    return out


# Index folder -> (identity, Manifest) of the last read in this process: a manifest is replaced by a
# rename, never written in place; its identity is the file's stat (inode, size, times) and the store
# it was checked for.  What is derived from it alone is kept with it (``Manifest.memo``).
_MANIFESTS: dict = {}


def _manifest(d: Path, store) -> Manifest:
    path = d / "manifest"
    try:
        st = os.stat(path)
    except OSError:
        st = None
    ident = None
    if st is not None:
        ident = (store.root_real, store.name, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        got = _MANIFESTS.get(str(d))
        if got is not None and got[0] == ident:
            return got[1]
    m = read_manifest(path, store)
    if ident is not None:
        with _LOCK:
            while len(_MANIFESTS) >= _KEPT_FOLDERS:
                _MANIFESTS.pop(next(iter(_MANIFESTS)), None)
            _MANIFESTS[str(d)] = (ident, m)
    return m


def open_index(store, d: Path | None = None) -> Index:
    """The index as it is on disk in ``d`` (default: the store's, in the cache); raises BadIndex."""
    d = d or index_dir(store)
    for attempt in range(2):
        m = _manifest(d, store)
        try:
            return Index(m, _segments(d, m, store.root_real), d)
        except BadIndex:
            if attempt:
                raise
            # a refresh may have replaced the manifest and removed the segments it named
            continue
    raise BadIndex("unreachable")  # pragma: no cover


def try_open(store, d: Path | None = None, whole: bool = False) -> Index | None:
    """The index, or None when it cannot be used; ``whole``: its manifest's tables checked too (else
    when first used)."""
    try:
        idx = open_index(store, d)
        if whole:
            idx.manifest.check()
        return idx
    except BadIndex:
        return None


# ---------------------------------------------------------------------------------------------
# State (samctl index)


def state(store, verify: bool = True) -> dict:
    """What ``samctl index`` shows: where the index is, whether it can be used, its rows, files,
    size, age, and which sources changed since it was updated."""
    d = index_dir(store)
    out = {
        "path": str(d),
        "store": store.name,
        "root": store.root_real,
        "exists": (d / "manifest").exists(),
        "valid": False,
        "problems": [],
        "segments": 0,
        "rows": {k: 0 for k in KINDS},
        "dead": 0,
        "files": 0,
        "files_with_findings": 0,
        "size": 0,
        "created": None,
        "updated": None,
        "age": None,
        "stale": [],
    }
    try:
        out["size"] = sum(os.lstat(d / n).st_size for n in os.listdir(d))
    except OSError:
        pass
    why = home_problem(d)
    if why is not None:  # (never read through: ``home_problem``)
        out["problems"].append(why)
        return out
    if not out["exists"]:
        return out
    try:
        idx = open_index(store)
    except BadIndex as exc:
        out["problems"].append(str(exc))
        return out
    m = idx.manifest
    problems = []
    if verify:
        try:
            idx.manifest.check()
        except BadIndex as exc:
            problems.append(str(exc))
        for seg in idx.segments:
            problems += seg.verify()
    np = load_numpy()
    for seg in idx.segments:
        counts = np.bincount(seg.meta["kind"][seg.alive], minlength=len(KINDS))
        for k, name in enumerate(KINDS):
            out["rows"][name] += int(counts[k])
        out["dead"] += int(seg.rows - seg.alive.sum())
    out.update(
        valid=not problems,
        problems=problems,
        segments=len(idx.segments),
        created=m["created"],
        updated=m["updated"],
        age=max(0.0, time.time() - m["updated"]),
    )
    out["files"] = sum(1 if sig is None else sum(part != "-" for part in sig.split("|")) for sig in m.src["sigs"])
    out["files_with_findings"] = len(m.body["findings"])
    current = discover(store, [])
    changed, removed = stale(m, current, None)
    for k in changed:
        known = m.sig_map()
        reason = (
            "new"
            if k not in known
            else ("unsettled: changed moments before indexing, or unreadable" if known[k] is None else "changed")
        )
        out["stale"].append({"key": k, "reason": reason})
    out["stale"] += [{"key": k, "reason": "removed"} for k in removed]
    return out
