"""Bringing the index up to date: refresh, compaction, hiding archived copies, clean-up; and the
same rows built in memory when there is no index (``--no-index``).

Data model
----------
``refresh`` compares the sources discovered now with the manifest's (``sources.stale``), reads the
changed ones into one new segment, marks their old rows dead, and writes a new manifest.  An
archived copy of a message the conversation still has (same dedupe key) is listed in ``hidden``.

Invariants
----------
- Writers hold ``<index dir>/lock`` (flock, waiting up to ``LOCK_WAIT`` seconds); two searches
  that both find the index stale refresh it one after the other, and the second finds nothing
  left to do.  Readers take no lock (see ``opened``).
- Incremental: a source whose signature changed (or that is new) is read again into a new
  segment and its old rows become dead; removed sources only add dead rows.  A segment with no
  alive rows is dropped.  Segments are merged (compacted) when more than ``DEAD_FRACTION`` of the
  rows are dead (all of them), or when there are more than ``MAX_SEGMENTS`` (all but the biggest,
  so a search never pays for rewriting the whole index).
- A new segment is renamed into place before the manifest that names it; segments the manifest
  no longer names, and temps of dead writers, are removed afterwards (``_gc``), under the lock.
- An error while reading or writing leaves the previous index as it was: new segments are
  temps until complete, and the manifest is replaced last.  ``refresh`` raises BadIndex only
  when the index cannot be written (the caller then searches without it).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from pathlib import Path

from samctl import fsafe
from samctl.core import scoring
from samctl.core.index.format import ARCHIVED, DIM, INDEX_VERSION, MESSAGE, TOKEN_HASH_NAME, BadIndex, _np, index_dir
from samctl.core.index.manifest import HEAD, Manifest, alive_mask, encode_manifest, write_manifest_bytes
from samctl.core.index.opened import Index, open_index, try_open
from samctl.core.index.rows import _read_all
from samctl.core.index.segment import Segment, SegmentWriter
from samctl.core.index.sources import TRANSIENT_CODES, discover, stale
from samctl.core.lock import flock_waiting

MAX_SEGMENTS = 6
DEAD_FRACTION = 0.3
LOCK_WAIT = 600.0  # seconds to wait for another samctl that is refreshing the index


@contextlib.contextmanager
def _writer_lock(d: Path, wait: float = LOCK_WAIT, progress=None):
    fd = os.open(d / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        flock_waiting(fd, wait, lambda: BadIndex("another samctl has been refreshing the index for too long"),
                      None if progress is None else
                      lambda: progress.note("waiting for another samctl that is updating the index"))
        yield
    finally:
        os.close(fd)


def _new_segment_path(d: Path) -> Path:
    return d / f"seg-{secrets.token_hex(12)}.seg"


def _finding_rows(findings: list) -> list:
    return [[f.code, f.path, f.reason, f.severity, f.conversation] for f in findings]


def _read_into(w: SegmentWriter, seg_name: str, store, todo: list, current: dict, convs: dict, progress=None,
               jobs: int | None = None, keep_sigs: bool = True) -> dict:
    """Read the sources ``todo`` into ``w`` (the segment ``seg_name``): the manifest entry of each, by
    key; the infos of the conversations they hold go to ``convs``.  With ``keep_sigs`` a source
    keeps its signature unless it was modified moments before or could not be read for a passing
    reason; without, none does."""
    entries = {}
    for chunk in _read_all(store, todo, progress, jobs):
        start = w.add_chunk(chunk)
        for key, n, fnd, infos in zip(chunk.keys, chunk.counts, chunk.findings, chunk.infos):
            src = current[key]
            trusted = keep_sigs and src.trusted and not any(f.code in TRANSIENT_CODES for f in fnd)
            entries[key] = {"kind": src.kind, "conv": src.conv, "sig": src.sig if trusted else None,
                            "seg": seg_name, "start": start, "end": start + n, "findings": _finding_rows(fnd),
                            "infos": [i["id"] for i in infos]}
            for info in infos:
                convs[info["id"]] = info
            start += n
    return entries


def refresh(store, findings: list, *, scope: set | None = None, rebuild: bool = False, progress=None,
            jobs: int | None = None) -> Index:
    """The store's index, brought up to date for ``scope`` (all sources when None).

    Appends discovery findings and the findings of every source in scope (stored with the index,
    so an unchanged bad file is still reported) to ``findings``.  Raises BadIndex only when the
    index cannot be written (the caller then searches without it).
    """
    disc: list = []
    current = discover(store, disc, scope)
    findings.extend(disc)
    idx = None if rebuild else try_open(store)
    if idx is not None:
        changed, removed = stale(idx.manifest, current, scope)
        if not changed and not removed:
            findings.extend(idx.findings(scope))
            return idx
    d = index_dir(store)
    try:
        fsafe.make_private_dir(d)
        with _writer_lock(d, progress=progress):
            idx = None if rebuild else try_open(store)
            changed, removed = stale(idx.manifest if idx else None, current, scope)
            if idx is None or changed or removed:
                _update(store, d, idx, current, changed, removed, progress, jobs)
            new = open_index(store)
    except OSError as exc:
        raise BadIndex(f"cannot write the index in {d}: {exc.strerror or exc}") from None
    new.read = sorted(changed)
    new.removed = sorted(removed)
    new.rebuilt = idx is None
    findings.extend(new.findings(scope))
    return new


def _update(store, d: Path, idx: Index | None, current: dict, changed: list, removed: list, progress, jobs) -> None:
    now = time.time()
    root = store.root_real
    if idx is None:
        man = {"v": INDEX_VERSION, "root": root, "store": store.name, "hash": scoring.STABLE_HASH_NAME,
               "token_hash": TOKEN_HASH_NAME, "dim": DIM, "created": now, "updated": now, "segments": [],
               "hidden": {}, "sources": {}, "convs": {}}
        segs: dict[str, Segment] = {}
    else:
        old_man = idx.manifest
        man = {k: old_man.body[k] for k in HEAD}
        man["segments"] = [dict(s, dead=[list(x) for x in s["dead"]]) for s in old_man.segments]
        man["hidden"] = {}
        man["sources"] = dict(old_man.sources())
        man["convs"] = dict(old_man.convs())
        segs = {s.name: s for s in idx.segments}
    seg_by_name = {s["name"]: s for s in man["segments"]}
    for k in list(changed) + list(removed):
        old = man["sources"].pop(k, None)
        if old is None:
            continue
        if old["seg"] is not None and old["end"] > old["start"]:
            seg_by_name[old["seg"]]["dead"].append([old["start"], old["end"]])
        for cid in old["infos"]:
            man["convs"].pop(cid, None)
    if changed:
        todo = [current[k] for k in changed]
        w = SegmentWriter(root, _new_segment_path(d))
        try:
            entries = _read_into(w, w.path.name, store, todo, current, man["convs"], progress, jobs)
            info = w.finish()
        except BaseException:
            w.discard()
            raise
        if info["rows"]:
            man["segments"].append(info)
            seg_by_name[info["name"]] = info
        else:
            fsafe.discard_temp(d / info["name"])
        for key, e in entries.items():
            if not info["rows"]:
                e["seg"], e["start"], e["end"] = None, 0, 0
            elif e["end"] == e["start"]:
                e["seg"] = None
            man["sources"][key] = e
    for s in man["segments"]:
        s["dead"] = _merge_ranges(s["dead"])
    man["segments"] = [s for s in man["segments"] if _dead_count(s) < s["rows"]]
    live = {s["name"] for s in man["segments"]}
    for e in man["sources"].values():
        if e["seg"] not in live:
            e["seg"], e["start"], e["end"] = None, 0, 0
    opened = [segs.get(s["name"]) or Segment.open(d / s["name"], root, s) for s in man["segments"]]
    total = sum(s["rows"] for s in man["segments"])
    dead = sum(_dead_count(s) for s in man["segments"])
    if total and dead > DEAD_FRACTION * total:
        man, opened = _compact(d, root, man, opened, {s["name"] for s in man["segments"]})
    elif len(man["segments"]) > MAX_SEGMENTS:
        # merge the small segments the refreshes left; the big one is rewritten only when it has
        # accumulated enough dead rows (above), so a search never pays for the whole index
        biggest = max(man["segments"], key=lambda s: s["rows"])["name"]
        man, opened = _compact(d, root, man, opened, {s["name"] for s in man["segments"]} - {biggest})
    man["hidden"] = _hidden(man, opened)
    man["updated"] = now
    write_manifest_bytes(d / "manifest", encode_manifest(man))
    _gc(d, {s["name"] for s in man["segments"]})


def _merge_ranges(ranges: list) -> list:
    out: list = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _dead_count(s: dict) -> int:
    return sum(b - a for a, b in s["dead"])


def _compact(d: Path, root: str, man: dict, opened: list[Segment], names: set):
    """Merge the alive rows of the segments in ``names`` into one new segment (the others stay as
    they are); the sources in them are renumbered."""
    np = _np()
    w = SegmentWriter(root, _new_segment_path(d))
    remap = {}
    try:
        for entry, seg in zip(man["segments"], opened):
            if entry["name"] not in names:
                continue
            alive = alive_mask(seg.rows, entry["dead"])
            new_row = np.cumsum(alive, dtype=np.int64) - 1 + w.rows
            remap[seg.name] = new_row
            conv_map = w.conv_map(seg.convs)
            idx = np.flatnonzero(alive)
            if not len(idx):
                continue
            # runs of alive rows: contiguous in every section
            breaks = np.flatnonzero(np.diff(idx) != 1)
            starts = np.concatenate(([idx[0]], idx[breaks + 1]))
            ends = np.concatenate((idx[breaks] + 1, [idx[-1] + 1]))
            for a, b in zip(starts.tolist(), ends.tolist()):
                blobs, lens = {}, {}
                for k in ("text", "ltext", "ref"):
                    blobs[k] = seg.span(k, a, b)
                    lens[k] = np.diff(seg.a[k + "_off"][a: b + 1])
                w.add_rows(seg.meta[a:b], seg.vectors[a:b], conv_map, blobs, lens)
            rows = seg.tok_rows.astype(np.int64)
            keys = np.repeat(seg.tok_keys, np.diff(seg.tok_ptr))
            keep = alive[rows]
            w.add_postings(keys[keep], new_row[rows[keep]])
        info = w.finish()
    except BaseException:
        w.discard()
        raise
    for e in man["sources"].values():
        if e["seg"] in remap:
            if info["rows"]:
                first = int(remap[e["seg"]][e["start"]])
                e["start"], e["end"], e["seg"] = first, first + (e["end"] - e["start"]), info["name"]
            else:
                e["seg"], e["start"], e["end"] = None, 0, 0
    kept = [(e, s) for e, s in zip(man["segments"], opened) if e["name"] not in names]
    man["segments"] = [e for e, _ in kept]
    opened = [s for _, s in kept]
    if info["rows"]:
        man["segments"].append(info)
        opened.append(Segment.open(d / info["name"], root, info))
    else:
        fsafe.discard_temp(d / info["name"])
    return man, opened


def _hidden(man: dict, opened: list[Segment]) -> dict:
    """Archived copies of messages that the conversation still has: rows to hide, per segment."""
    np = _np()
    per = []
    for entry, seg in zip(man["segments"], opened):
        alive = alive_mask(seg.rows, entry["dead"])
        kind = seg.meta["kind"]
        per.append((entry["name"], seg, alive, kind))
    if not any(np.any(k == ARCHIVED) for _, _, _, k in per):
        return {}
    keys = np.unique(np.concatenate([seg.meta["dkey"][alive & (kind == MESSAGE)] for _, seg, alive, kind in per]))
    out = {}
    for name, seg, alive, kind in per:
        rows = np.flatnonzero(alive & (kind == ARCHIVED))
        dup = rows[np.isin(seg.meta["dkey"][rows], keys)]
        if len(dup):
            out[name] = dup.tolist()
    return out


def _gc(d: Path, keep: set) -> None:
    """Remove segments the manifest no longer names and temps of dead writers (we hold the lock)."""
    try:
        names = os.listdir(d)
    except OSError:
        return
    for n in names:
        if (n.endswith(".seg") and n not in keep) or (n.startswith(".seg-") and n.endswith(".tmp")) or \
                (n.startswith(".manifest.") and n.endswith(".tmp")):
            try:
                os.unlink(d / n)
            except OSError:
                pass


# Without an index: the same rows, in memory ---------------------------------------------------


def build_in_memory(store, findings: list, scope: set | None = None, progress=None) -> Index:
    """An Index of the sources in ``scope`` that lives only in memory (``--no-index``)."""
    disc: list = []
    current = discover(store, disc, scope)
    findings.extend(disc)
    w = SegmentWriter(store.root_real)
    convs = {}
    sources = _read_into(w, "(memory)", store, list(current.values()), current, convs, progress, keep_sigs=False)
    seg = w.finish()
    man = {"segments": [{"name": seg.name, "rows": seg.rows, "dead": []}], "sources": sources, "convs": convs,
           "hidden": {}}
    man["hidden"] = _hidden(man, [seg])
    idx = Index(Manifest(encode_manifest(man)), [seg])
    findings.extend(idx.findings(scope))
    return idx


def invalidate(store) -> None:
    """Drop the index (its manifest; the segments go with the next refresh's clean-up)."""
    d = index_dir(store)
    if not (d / "manifest").exists():
        return
    with _writer_lock(d):
        try:
            os.unlink(d / "manifest")
        except FileNotFoundError:
            pass
        _gc(d, set())

