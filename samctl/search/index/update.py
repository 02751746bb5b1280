"""Bringing the index up to date: refresh, compaction, hiding archived copies, clean-up; and
``read_segments``, which ``memory`` also builds its parts with (``--no-index``).

Writers hold the index lock; a refresh is incremental and bounded in memory; a segment is in place before
the manifest names it; an error leaves the previous index as it was.

Design notes: docs/search-index.md, "search/index/update.py".
"""

from __future__ import annotations

import bisect
import contextlib
import os
import secrets
import shutil
import stat
import tempfile
import time
from pathlib import Path

from samctl import lock
from samctl.fs import reading, removing, writing
from samctl.gcpause import gc_paused
from samctl.lock import flock_waiting
from samctl.model import WARNING, Finding
from samctl.search.index import checked
from samctl.search.index.format import (
    ARCHIVED,
    INDEX_VERSION,
    MANIFEST_MAGIC,
    MESSAGE,
    TERMS_NAME,
    TOKEN_HASH_NAME,
    BadIndex,
    home_problem,
    index_dir,
    load_numpy,
)
from samctl.search.index.manifest import HEAD, alive_mask, encode_manifest, write_manifest_bytes
from samctl.search.index.opened import Index, open_index, try_open
from samctl.search.index.rows import read_all
from samctl.search.index.segment import POSTING_BYTES, ROW_BYTES, Segment, SegmentWriter
from samctl.search.index.sources import discover, stale
from samctl.stores.sources import TRANSIENT_CODES

MAX_SEGMENTS = 6
DEAD_FRACTION = 0.1  # a segment with more of its rows dead is rewritten (a search pays for its dead rows) ...
REWRITE_AT_ONCE = 4  # ... this many a refresh, most decayed first ...
ROTTEN_FRACTION = 0.3  # ... and every one with more than this dead (see ``_to_rewrite``)
SEGMENT_BYTES = 64 << 20  # a segment is cut (between sources) once it holds this much: what a build or
# rewrite holds in memory at a time is bounded by it, whatever the size of the store
LOCK_WAIT = 600.0  # seconds to wait for another samctl that is refreshing the index


@contextlib.contextmanager
def _writer_lock(d: Path, wait: float = LOCK_WAIT, progress=None):
    fd = lock.open_lock_file(d / "lock")
    try:
        flock_waiting(
            fd,
            wait,
            lambda: BadIndex("another samctl has been refreshing the index for too long"),
            None
            if progress is None
            else lambda: progress.note("waiting for another samctl that is updating the index"),
        )
        yield
    finally:
        lock.unlock(fd)


def _new_segment_path(d: Path) -> Path:
    return d / f"seg-{secrets.token_hex(12)}.seg"


def _finding_rows(findings: list) -> list:
    return [[f.code, f.path, f.reason, f.severity, f.conversation] for f in findings]


def _read_into(
    new_writer,
    store,
    todo: list,
    current: dict,
    convs: dict,
    progress=None,
    jobs: int | None = None,
    cap: int | None = None,
) -> tuple[dict, list]:
    """Read the sources ``todo`` into segments made by ``new_writer()``: (the manifest entry of each
    source, by key; what ``finish`` returned for each segment, in order).  With ``cap``, a segment
    is finished and the next one started once it holds ``cap`` bytes (``read_segments``).  If
    anything fails, the segments already finished are removed again."""
    entries, done, folders = {}, [], []

    def tracked():
        w = new_writer()
        if not folders and w.path is not None:
            folders.append(w.path.parent)  # (the folder only: holding the writers held every segment's rows)
        return w

    try:
        for part, finished in read_segments(tracked, store, todo, current, convs, progress, jobs, cap):
            entries.update(part)
            done.append(finished)
    except BaseException:
        _unlink_finished(folders[0] if folders else None, done)
        raise
    return entries, done


def read_segments(
    new_writer,
    store,
    todo: list,
    current: dict,
    convs: dict,
    progress=None,
    jobs: int | None = None,
    cap: int | None = None,
):
    """Yield, segment by segment as each is finished, (the manifest entries of its sources, by key;
    what ``finish`` returned): the sources ``todo``, read in order into segments made by
    ``new_writer()``.  With ``cap``, a segment is finished once it holds ``cap`` bytes, between
    chunks of sources (a source's rows are in one segment).  The infos of the conversations go to
    ``convs``.  A source keeps its signature unless it was modified moments before or could not be
    read for a passing reason.  The segment being written when this fails (or is closed early) is
    discarded."""
    entries = {}
    w = new_writer()
    try:
        for chunk in read_all(store, todo, progress, jobs):
            if cap is not None and w.rows and w.estimate() >= cap:
                finished, w = w.finish(), None
                yield entries, finished
                entries, finished = {}, None  # (nothing of the segment handed over is held from here on)
                w = new_writer()
            start = w.add_chunk(chunk)
            for key, n, fnd, infos in zip(chunk.keys, chunk.counts, chunk.findings, chunk.infos):
                src = current[key]
                trusted = src.trusted and not any(f.code in TRANSIENT_CODES for f in fnd)
                entries[key] = {
                    "kind": src.kind,
                    "conv": src.conv,
                    "sig": src.sig if trusted else None,
                    "seg": w.name,
                    "start": start,
                    "end": start + n,
                    "findings": _finding_rows(fnd),
                    "infos": [i["id"] for i in infos],
                }
                for info in infos:
                    convs[info["id"]] = info
                start += n
        finished, w = w.finish(), None
        yield entries, finished
    finally:
        if w is not None:
            w.discard()


def _unlink_finished(folder: Path | None, infos: list) -> None:
    """Remove the segments a failed build or rewrite had already renamed into place in ``folder``
    (None: built in memory): no manifest names them (``_gc`` would remove them at the next refresh)."""
    if folder is None:
        return
    for info in infos:
        removing.remove(folder / info["name"])


def refresh(
    store,
    findings: list,
    *,
    scope: set | None = None,
    rebuild: bool = False,
    progress=None,
    jobs: int | None = None,
    home: Path | None = None,
    pending: list | None = None,
    child_check: bool = False,
    compact: bool = False,
) -> Index:
    """``_refresh`` with Python's cyclic collector paused: a refresh builds and drops a few hundred
    thousand small dicts and strings (the manifest's tables, every source's signature), none of them
    in a cycle, so the collector's passes over them would find nothing to free and only cost time."""
    with gc_paused():
        return _refresh(
            store,
            findings,
            scope=scope,
            rebuild=rebuild,
            progress=progress,
            jobs=jobs,
            home=home,
            pending=pending,
            child_check=child_check,
            compact=compact,
        )


def _refresh(
    store,
    findings: list,
    *,
    scope: set | None,
    rebuild: bool,
    progress,
    jobs: int | None,
    home: Path | None,
    pending: list | None,
    child_check: bool = False,
    compact: bool = False,
) -> Index:
    """The store's index, brought up to date for ``scope`` (all sources when None).

    Appends discovery findings and the findings of every source in scope (stored with the index,
    so an unchanged bad file is still reported) to ``findings``.  Raises BadIndex only when the
    index cannot be written (the caller then searches without it).  ``home``: another folder
    than the store's own in the cache (a throw-away index).  ``Index.replaced``: the bytes of an
    index of an older samctl found there and replaced (0 if none).  ``pending``: when given, the
    last full check may be trusted before its folders are stated; its ``checked.Recent`` is
    appended, and the caller must see ``holds()`` before using what it found (else refresh again
    without ``pending``); ``child_check``: its folders may be stated by a child process (``checked.Recent``:
    for a caller with much to do meanwhile).  ``compact`` (``samctl index --compact``): then every segment
    holding dead rows rewritten and the small ones merged, whatever their share (``_to_rewrite``): a
    search passes over no dead row; no file is read again for it.  ``Index.compacted``: (segments
    rewritten, dead rows they held).
    """
    d = home or index_dir(store)
    why = None if home is not None else home_problem(d)
    if why is not None:  # never read, written or cleaned: this run's index is a temporary one
        findings.append(Finding("cache-unsafe", str(d), f"{why}; this search used a temporary index", WARNING))
        tmp = tempfile.mkdtemp(prefix="samctl-search-")
        try:  # (the segments stay mapped once their folder is gone)
            return _refresh(
                store, findings, scope=scope, rebuild=True, progress=progress, jobs=jobs, home=Path(tmp), pending=None
            )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if scope is None and not rebuild and not compact:
        quick = checked.recent(d, child_check and pending is not None)
        idx = try_open(store, d) if quick is not None else None
        if idx is not None and (pending is not None or quick.holds()):
            if pending is not None:
                pending.append(quick)
            findings.extend(quick.found)
            findings.extend(idx.findings(None, quick.order))
            return idx
        if quick is not None:
            quick.holds()  # (its thread finished before any worker process is forked)
    disc: list = []
    current = discover(store, disc, scope)
    findings.extend(disc)
    before = checked.manifest_sig(d)
    idx = None if rebuild else try_open(store, d, whole=True)
    if idx is not None:
        changed, removed = stale(idx.manifest, current, scope)
        if not changed and not removed and not (compact and _to_rewrite(idx.manifest.segments, everything=True)):
            if scope is None:
                checked.save(d, current, disc, _with_findings(idx))
            findings.extend(idx.findings(scope, current))
            idx.manifest.forget_decoded()  # (what the check read: not what a search reads)
            return idx
    old = _older_version_bytes(d)
    try:
        writing.make_private_dir(d)
        with _writer_lock(d, progress=progress):
            if not rebuild and (idx is None or before is None or checked.manifest_sig(d) != before):
                idx = try_open(store, d, whole=True)  # (another samctl may have changed it meanwhile)
            changed, removed = stale(idx.manifest if idx else None, current, scope)
            compacted = (0, 0)
            if idx is None or changed or removed or (compact and _to_rewrite(idx.manifest.segments, everything=True)):
                compacted = _update(store, d, idx, current, changed, removed, progress, jobs, everything=compact)
            new = open_index(store, d)
    except OSError as exc:
        raise BadIndex(f"cannot write the index in {d}: {exc.strerror or exc}") from None
    new.read = sorted(changed)
    new.removed = sorted(removed)
    new.rebuilt = idx is None
    new.replaced = old
    new.compacted = compacted
    if scope is None:
        checked.save(d, current, disc, _with_findings(new))
    findings.extend(new.findings(scope, current))  # (in discover's order, whatever was read again)
    new.manifest.forget_decoded()
    return new


def _with_findings(idx: Index) -> set:
    return idx.manifest.keys_with_findings()


def _older_version_bytes(d: Path) -> int:
    """The size of the index in ``d`` if an older samctl wrote it (its files are replaced), else 0."""
    try:
        fd = reading.open_read_fd(d / "manifest")  # (never through a link, and a FIFO does not block)
        try:
            head = os.read(fd, 12) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        finally:
            os.close(fd)
        if head[:8] != MANIFEST_MAGIC or int.from_bytes(head[8:12], "little") >= INDEX_VERSION:
            return 0
        return sum(os.lstat(d / n).st_size for n in os.listdir(d))
    except OSError:
        return 0


def _update(
    store,
    d: Path,
    idx: Index | None,
    current: dict,
    changed: list,
    removed: list,
    progress,
    jobs,
    everything: bool = False,
) -> tuple[int, int]:
    """Read ``changed`` again, drop ``removed``, compact (``_to_rewrite``; ``everything``: every segment with a
    dead row) and write the manifest: (segments rewritten, dead rows they held)."""
    now = time.time()
    root = store.root_real
    if idx is None:
        man = {
            "v": INDEX_VERSION,
            "root": root,
            "store": store.name,
            "terms": TERMS_NAME,
            "token_hash": TOKEN_HASH_NAME,
            "created": now,
            "updated": now,
            "segments": [],
            "hidden": {},
            "sources": {},
            "convs": {},
        }
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
    entries: dict = {}
    infos: list = []
    if changed:
        todo = [current[k] for k in changed]
        entries, infos = _read_into(
            lambda: SegmentWriter(root, _new_segment_path(d)),
            store,
            todo,
            current,
            man["convs"],
            progress,
            jobs,
            cap=SEGMENT_BYTES,
        )
    try:
        man, compacted = _settle(d, root, man, segs, infos, entries, everything)
    except BaseException:
        _unlink_finished(d, infos)  # no manifest names them yet: the index stays as it was
        raise
    man["updated"] = now
    write_manifest_bytes(d / "manifest", encode_manifest(man))
    _gc(d, {s["name"] for s in man["segments"]})
    return compacted


def _settle(d: Path, root: str, man: dict, segs: dict, infos: list, entries: dict, everything: bool = False):
    """(``man`` with the new segments ``infos`` (and their sources, ``entries``) in, the segments no row is
    alive in out, and what ``_to_rewrite`` picks rewritten; (segments rewritten, dead rows they held))."""
    for info in infos:
        if info["rows"]:
            man["segments"].append(info)
        else:
            writing.discard_temp(d / info["name"])
    for key, e in entries.items():
        if e["end"] == e["start"]:
            e["seg"], e["start"], e["end"] = None, 0, 0
        man["sources"][key] = e
    for s in man["segments"]:
        s["dead"] = _merge_ranges(s["dead"])
    man["segments"] = [s for s in man["segments"] if _dead_count(s) < s["rows"]]
    live = {s["name"] for s in man["segments"]}
    for e in man["sources"].values():
        if e["seg"] not in live:
            e["seg"], e["start"], e["end"] = None, 0, 0
    opened = [segs.get(s["name"]) or Segment.open(d / s["name"], root, s) for s in man["segments"]]
    rewrite = _to_rewrite(man["segments"], everything)
    dropped = sum(_dead_count(s) for s in man["segments"] if s["name"] in rewrite)
    if rewrite:
        man, opened = _rewrite(d, root, man, opened, rewrite)
    man["hidden"] = _hidden(man, opened)
    return man, (len(rewrite), dropped)


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


def _to_rewrite(segments: list, everything: bool = False) -> set:
    """The segments to rewrite now (empty: none); ``everything``: every one holding a dead row, and the
    small ones if there are two or more (``samctl index --compact``).

    A segment with more than ``DEAD_FRACTION`` of its rows dead is rewritten (with what is alive
    in it): the ``REWRITE_AT_ONCE`` most decayed of them, and every one past ``ROTTEN_FRACTION``
    (changes spread over a store decay every segment at the same pace: the rest wait for the next
    refreshes rather than one refresh rewriting the whole index).  The small segments refreshes
    leave are merged once there are more than ``MAX_SEGMENTS`` of them besides the "sealed" ones
    (those of ``SEGMENT_BYTES / 2`` or more, and the biggest).  So a refresh that read a few files
    never pays for rewriting a big segment that has not decayed, and no rewrite holds more than one
    ``SEGMENT_BYTES`` segment in memory at a time (``_rewrite``).
    """
    if not segments:
        return set()
    biggest = max(segments, key=lambda s: s["size"])["name"]
    small = {s["name"] for s in segments if s["size"] < SEGMENT_BYTES // 2} - {biggest}
    if everything:
        return {s["name"] for s in segments if s["dead"]} | (small if len(small) > 1 else set())
    decayed = sorted(
        (s for s in segments if _dead_count(s) > DEAD_FRACTION * s["rows"]), key=lambda s: -_dead_count(s) / s["rows"]
    )
    out = {
        s["name"] for i, s in enumerate(decayed) if i < REWRITE_AT_ONCE or _dead_count(s) > ROTTEN_FRACTION * s["rows"]
    }
    if len(small) > MAX_SEGMENTS - 1:
        out |= small
    return out


def _rewrite(d: Path, root: str, man: dict, opened: list[Segment], names: set):
    """Rewrite the alive rows of the segments in ``names``, in order, into new segments of about
    ``SEGMENT_BYTES`` each, cut between sources (a source bigger than that goes alone); the other
    segments stay as they are, and the sources in the rewritten ones are renumbered."""
    np = load_numpy()
    cuts_of: dict = {}  # segment -> the rows where a source starts: the only places a segment may be cut
    for e in man["sources"].values():
        if e["seg"] in names and e["end"] > e["start"]:
            cuts_of.setdefault(e["seg"], []).append(e["start"])
    pieces: dict = {}  # old segment -> [(first row, end row, new segment, its first row there)]
    done: list = []
    w = None
    try:
        for entry, seg in zip(man["segments"], opened):
            if entry["name"] not in names:
                continue
            alive = alive_mask(seg.rows, entry["dead"])
            idx = np.flatnonzero(alive)
            if not len(idx):
                continue
            keys, prow, tfs = _postings(seg)
            per_row = np.bincount(prow, minlength=seg.rows)
            cum = np.zeros(seg.rows + 1, dtype=np.int64)  # bytes of rows [0, i) in a segment file
            np.cumsum(_row_bytes(seg, per_row), out=cum[1:])
            npost = np.zeros(seg.rows + 1, dtype=np.int64)  # postings of rows [0, i)
            np.cumsum(per_row, out=npost[1:])
            cuts = np.unique(np.asarray(cuts_of.get(seg.name, []), dtype=np.int64))
            vocab = seg.terms()
            conv_map = None
            fed: list = []  # pieces of ``seg`` in ``w`` whose postings are not added yet: (first row, end, new first)
            unsent = 0  # ... and how many postings they hold
            # runs of alive rows: contiguous in every section, and whole sources (dead rows are)
            breaks = np.flatnonzero(np.diff(idx) != 1)
            starts = np.concatenate(([idx[0]], idx[breaks + 1]))
            ends = np.concatenate((idx[breaks] + 1, [idx[-1] + 1]))
            for a, b in zip(starts.tolist(), ends.tolist()):
                while a < b:
                    if w is None:
                        w, conv_map = SegmentWriter(root, _new_segment_path(d)), None
                    room = SEGMENT_BYTES - w.estimate() - POSTING_BYTES * unsent
                    c = _cut(cum, cuts, a, b, room, w.rows == 0)
                    if c is None:  # the next source does not fit: this segment is full
                        _add_postings(w, seg.rows, fed, keys, prow, tfs)
                        unsent = 0
                        done.append(w.finish())
                        w = None
                        continue
                    if conv_map is None:
                        conv_map = w.conv_map(seg.convs)
                        w.add_terms(vocab)
                    blobs, lens = {}, {}
                    for k in ("text", "ltext", "ref"):
                        blobs[k] = seg.span(k, a, c)
                        lens[k] = np.diff(seg.a[k + "_off"][a : c + 1])
                    first = w.add_rows(seg.meta[a:c], conv_map, blobs, lens)
                    fed.append((a, c, first))
                    unsent += int(npost[c] - npost[a])
                    pieces.setdefault(seg.name, []).append((a, c, w.name, first))
                    a = c
            if w is not None:
                _add_postings(w, seg.rows, fed, keys, prow, tfs)
        if w is not None:
            done.append(w.finish())
            w = None
    except BaseException:
        if w is not None:
            w.discard()
        _unlink_finished(d, done)
        raise
    for e in man["sources"].values():
        if e["seg"] in names:
            e["seg"], e["start"], e["end"] = _moved(pieces.get(e["seg"], ()), e["start"], e["end"])
    kept = [(e, s) for e, s in zip(man["segments"], opened) if e["name"] not in names]
    man["segments"] = [e for e, _ in kept]
    opened = [s for _, s in kept]
    for info in done:
        man["segments"].append(info)
        opened.append(Segment.open(d / info["name"], root, info))
    return man, opened


def _row_bytes(seg: Segment, postings_per_row):
    """About what each row of ``seg`` costs a segment file (``SegmentWriter.estimate``'s measure)."""
    np = load_numpy()
    b = np.full(seg.rows, ROW_BYTES, dtype=np.int64)
    for k in ("text", "ltext", "ref"):
        b += np.diff(seg.a[k + "_off"])
    b += POSTING_BYTES * postings_per_row
    return b


def _postings(seg: Segment):
    """(term keys, rows, counts) of every posting of ``seg`` in its order (by key, a key's rows ascending),
    those of rows past the segment's left out (they point nowhere)."""
    np = load_numpy()
    rows = seg.posting_rows()
    keys = np.repeat(seg.tok_keys, np.diff(seg.tok_ptr))
    tfs = seg.tfs()
    if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= seg.rows):
        ok = (rows >= 0) & (rows < seg.rows)
        keys, rows, tfs = keys[ok], rows[ok], tfs[ok]
    return keys, rows, tfs


def _add_postings(w: SegmentWriter, nrows: int, fed: list, keys, rows, tfs) -> None:
    """Add to ``w`` the postings of the rows ``fed`` (pieces of a segment of ``nrows`` rows whose postings
    are ``keys, rows, tfs``: (first row, end, first row in ``w``)) at once, renumbered; ``fed`` is emptied.

    Taken in the segment's order, by key: the renumbering keeps each key's rows ascending, so the writer
    merges runs already sorted rather than sorting every posting again (a rewrite of 1.3 M rows spent
    half its time sorting postings by row and back)."""
    if not fed:
        return
    np = load_numpy()
    new = np.full(nrows, -1, dtype=np.int64)
    for a, c, first in fed:
        new[a:c] = np.arange(first, first + c - a)
    moved = new[rows]
    keep = moved >= 0
    w.add_postings(keys[keep], moved[keep], tfs[keep], ())
    fed.clear()


def _cut(cum, cuts, a: int, b: int, room: int, empty: bool) -> int | None:
    """Where the piece of the run ``[a, b)`` that goes into the current segment ends: ``b`` if the
    rest fits in ``room`` bytes, else the farthest source start that fits; None if not even the first
    source fits (the segment is full), unless the segment is ``empty``: then that source alone."""
    np = load_numpy()
    if cum[b] - cum[a] <= room:
        return b
    last = int(np.searchsorted(cum, cum[a] + room, side="right")) - 1  # rows [a, last) fit
    k = int(np.searchsorted(cuts, last, side="right")) - 1
    if k >= 0 and a < int(cuts[k]) < b:
        return int(cuts[k])
    if not empty:
        return None
    k = int(np.searchsorted(cuts, a, side="right"))
    return int(cuts[k]) if k < len(cuts) and int(cuts[k]) < b else b


def _moved(pieces, start: int, end: int) -> tuple:
    """(new segment, start, end) of a source that was at rows ``[start, end)`` of a rewritten segment
    (``pieces``: that segment's, in row order; a bisection, as a decayed segment may have thousands)."""
    i = bisect.bisect_right(pieces, start, key=lambda piece: piece[0]) - 1
    if i >= 0:
        a, c, name, first = pieces[i]
        if start < c:
            return name, first + start - a, first + end - a
    return None, 0, 0


def _hidden(man: dict, opened: list[Segment]) -> dict:
    """Archived copies of messages that the conversation still has: rows to hide, per segment.

    Kinds come from the one-byte column, dedupe keys (only when a segment holds archived rows) from
    the meta records read with pread: never the records through the map, whose pages would all stay
    counted as this process's memory (60 bytes a row: 240 MiB for 4 million rows)."""
    np = load_numpy()
    per = []
    for entry, seg in zip(man["segments"], opened):
        alive = alive_mask(seg.rows, entry["dead"])
        kind = seg.r_kind
        per.append((entry["name"], seg, alive, kind))
    if not any(np.any(k == ARCHIVED) for _, _, _, k in per):
        return {}
    # each segment's keys read once (8 bytes a row kept, not its 60-byte records)
    dkeys = [np.ascontiguousarray(seg.read("meta", 0, seg.rows)["dkey"]) for _, seg, _, _ in per]
    keys = np.unique(np.concatenate([d[alive & (kind == MESSAGE)] for d, (_, _, alive, kind) in zip(dkeys, per)]))
    out = {}
    for d, (name, seg, alive, kind) in zip(dkeys, per):
        rows = np.flatnonzero(alive & (kind == ARCHIVED))
        dup = rows[np.isin(d[rows], keys)]
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
        if (
            (n.endswith(".seg") and n not in keep)
            or (n.startswith(".seg-") and n.endswith(".tmp"))
            or (n.startswith(".manifest.") and n.endswith(".tmp"))
        ):
            try:
                removing.unlink(d / n)
            except OSError:
                pass


def invalidate(store) -> None:
    """Drop the index (its manifest; the segments go with the next refresh's clean-up)."""
    d = index_dir(store)
    if home_problem(d) is not None or not (d / "manifest").exists():
        return  # (a folder that is not samctl's own is never cleaned)
    with _writer_lock(d):
        removing.unlink(d / "manifest")
        _gc(d, set())
