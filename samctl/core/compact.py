"""compact: the one maintenance command for cron; the only step besides ``rm --purge`` that destroys.

In order, under samctl's lock:

1. finish moves a crash interrupted (``repair.repair``);
2. purge ``deleted`` attic entries older than the grace period (``archived``
   entries and ``history`` segments are kept: archiving is a decision to keep);
3. mermaid: for each session that is not live (its scratch lock is free, also
   with ``force``: mermaid caches an open session's seq cursor) and
   whose log has not changed for ``idle`` seconds: cut a torn tail back to the
   last newline (the cut bytes go to a 0600 ``.torn`` sibling first; a complete
   unterminated last line gets its newline instead), then, if the log is over
   ``log_threshold`` (default half mermaid's 128 MiB cap), rewrite it: the old
   log becomes a ``history`` segment in the attic and a fresh log holds what
   mermaid itself writes as a backfill (started, reset, input, state, tasks),
   folding to the same conversation but for its ``compactions`` records (a
   backfill has no place for them; the snapshot and the history segment keep them).
   Only when the fresh log plus the segment take less than the old log: else
   the log is left as it is, and an info finding (``log-kept``) says why;
4. remove stale temp files by the store's own rule (mermaid and samctl:
   ``.<name>.<pid>.<n>.tmp`` older than 3600 s; SAM also: ``<file>.tmp`` and
   ``ltm.json.tmp.<pid>`` older than 3600 s, except ``conversation.json.tmp``,
   which is a recovery source) and samctl's own ``<name>.<UTC time>.bak``/``.torn``
   copies older than the grace period.  No other file is ever removed: a
   user's ``notes.bak`` or ``.x.tmp`` stays;
5. SAM: VACUUM ``memory.db``/``context_archive.db`` files that have free pages,
   only when SAM is not running (the whole command refuses with "busy"
   otherwise, unless ``force``).

**The log-rewrite rule** (mermaid appends with ``O_APPEND`` and no lock): the
old log is read through a descriptor that stays open; its bytes become the
history segment (written, verified, committed first); the new log is written
to a temp sibling and fsynced.  Right before the swap no mermaid process may
hold the session's scratch lock (asked again: the read and the packing take
a while) and the log must still be the same inode with the same size as when
read, else nothing is swapped and the log is tried again on the next run.
After the swap compact waits a moment (a second if a session is live by then)
and looks at the old inode again: if a writer that had it open appended in
between, the swap is undone -- the old bytes, what was appended to the old
file, and what was appended to the new file are written back, in that order,
and the history segment is dropped.  So no event is lost or duplicated.  (An
append batch opened before the swap and written after that watch is the case
this cannot see: a session starting within microseconds of the rename whose
first write then waits a second, or a writer other than mermaid that holds the
log open without mermaid's scratch lock.)
"""

from __future__ import annotations

import calendar
import hashlib
import os
import re
import sqlite3
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from samctl import fsafe
from samctl.core import attic as atticmod
from samctl.core.lock import ensure_app_idle, store_lock, would_refuse
from samctl.core.model import INFO, WARNING, Finding
from samctl.core.repair import drop_journal, pending, settle, write_journal
from samctl.errors import SamctlError

# The only names compact removes (fullmatch): what samctl itself writes, or the store's own writer.
_BACKUP_RE = re.compile(r".+\.([0-9]{8}T[0-9]{6}Z)\.(bak|torn)(\.[0-9]+)?")  # tail.sibling: <name>.<UTC time>.bak[.n]
_TEMP_RE = re.compile(r"\..+\.[0-9]+\.[0-9]+\.tmp")  # fsafe.tmp_name, mermaid's own: .<name>.<pid>.<n>.tmp
_SAM_TEMP_RE = re.compile(r"[^.].*\.tmp(\.[0-9]+)?")  # SAM's: <file>.tmp, ltm.json.tmp.<pid> (spec §5.2, §6)
SETTLE_SECONDS = 0.05
LIVE_WATCH_SECONDS = 1.0  # how long the replaced log is watched when a session is live right after the swap
READ_CAP = 1 << 31  # compact reads logs past mermaid's cap: rescuing those is its job


@dataclass
class CompactOptions:
    grace: float = 30 * 86400.0
    log_threshold: int = fsafe.LOG_CAP // 2
    idle: float = 60.0
    dry_run: bool = False
    force: bool = False
    lock_wait: float = 0.0
    level: int = atticmod.LEVEL
    now: float | None = None


@dataclass
class CompactReport:
    actions: list = field(default_factory=list)  # dicts: kind, path, bytes_before, bytes_after, detail
    findings: list = field(default_factory=list)
    repaired: list = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0
    dry_run: bool = False

    def add(self, kind: str, path, before: int = 0, after: int = 0, detail: str = "", **sizes) -> None:
        """``bytes_after`` is everything the action leaves (a rewritten log: the fresh log plus its history
        segment); ``sizes`` gives the parts (``log_after``, ``history``)."""
        self.actions.append({"kind": kind, "path": str(path), "bytes_before": before, "bytes_after": after,
                             "detail": detail, **sizes})

    def counts(self) -> dict:
        out: dict = {}
        for a in self.actions:
            out[a["kind"]] = out.get(a["kind"], 0) + 1
        return out

    def to_dict(self) -> dict:
        return {"dry_run": self.dry_run, "actions": self.actions, "repaired": self.repaired,
                "findings": [f.to_dict() for f in self.findings], "counts": self.counts(),
                "bytes_before": self.bytes_before, "bytes_after": self.bytes_after}


def _usage(store) -> int:
    total = 0
    for top in (store.conv_dir, atticmod.attic_dir(store)):
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            for n in filenames:
                st = fsafe.lstat(os.path.join(dirpath, n))
                if st is not None and stat.S_ISREG(st.st_mode):
                    total += st.st_size
    return total


def compact(store, opts: CompactOptions, progress=None) -> CompactReport:
    """Run every maintenance step (see the module docstring); ``progress(done, total, what)`` if given."""
    rep = CompactReport(dry_run=opts.dry_run)
    now = time.time() if opts.now is None else opts.now
    rep.bytes_before = _usage(store)
    if opts.dry_run:
        rep.findings += would_refuse(store, [], opts.force)
        rep.findings.extend(pending(store))
        _run_steps(store, opts, rep, now, progress)
        rep.bytes_after = rep.bytes_before - sum(a["bytes_before"] - a["bytes_after"] for a in rep.actions)
        return rep
    ensure_app_idle(store, [], opts.force)
    with store_lock(store, opts.lock_wait):
        ensure_app_idle(store, [], opts.force)
        rep.repaired, left = settle(store, full=True)
        rep.findings += left
        _run_steps(store, opts, rep, now, progress)
    rep.bytes_after = _usage(store)
    return rep


def _run_steps(store, opts, rep, now, progress) -> None:
    _purge_attic(store, opts, rep, now)
    if store.name == "mermaid":
        _mermaid_logs(store, opts, rep, now, progress)
        _mermaid_leftovers(store, opts, rep, now)
    else:
        _sam_leftovers(store, opts, rep, now)
        _sam_vacuum(store, opts, rep, progress)


# --- attic ------------------------------------------------------------------------------

def _purge_attic(store, opts, rep, now) -> None:
    findings: list = []
    for e in atticmod.list_entries(store, findings, ("deleted",)):
        if e.when_ts > now - opts.grace:
            continue
        if e.extra.get("pinned") is True:  # only rm --purge --include-pinned
            findings.append(Finding("kept-pinned", str(e.tar_path), f"{e.id} was pinned in SAM; kept past the grace "
                                    "(`samctl rm --purge --include-pinned ID` removes it)", INFO, e.id))
        else:
            st = fsafe.lstat(e.manifest_path)  # (the manifest goes too: a dry run's estimate counts it)
            size = e.tar_size + (st.st_size if st is not None else 0)
            if not opts.dry_run:
                atticmod.drop(e)
            rep.add("purge-entry", e.tar_path, size, 0, f"{e.id} deleted {e.when}")
    rep.findings.extend(findings)


# --- mermaid logs ------------------------------------------------------------------------------

def _mermaid_logs(store, opts, rep, now, progress) -> None:
    try:
        names = sorted(n for n in os.listdir(store.conv_dir) if n.endswith(".jsonl"))
    except OSError:
        return
    total = len(names)
    for i, n in enumerate(names):
        if progress:
            progress(i, total, n)
        cid = n[:-6]
        if not store.valid_id(cid):
            continue
        path = store.conv_dir / n
        st = fsafe.lstat(path)
        if st is None or not stat.S_ISREG(st.st_mode):
            continue
        if st.st_size == 0:
            continue
        torn = _ends_torn(path)
        big = st.st_size > opts.log_threshold
        if not torn and not big:
            continue
        if store.session_is_live(cid):  # even with --force: mermaid caches the seq cursor of an open session
            rep.findings.append(Finding("skipped-live", str(path), "mermaid has this session open; left alone", INFO,
                                        cid))
            continue
        if now - st.st_mtime < opts.idle:
            rep.findings.append(Finding("skipped-busy", str(path), f"written in the last {opts.idle:.0f} s; left "
                                        "for the next run", INFO, cid))
            continue
        try:
            if torn:
                _trim_tail(store, cid, path, opts, rep)
            st = fsafe.lstat(path)
            if st is not None and st.st_size > opts.log_threshold:
                _rewrite_log(store, cid, path, opts, rep, now)
        except atticmod.Changed as exc:
            rep.findings.append(Finding("skipped-busy", str(path), exc.message, INFO, cid))
        except SamctlError as exc:
            rep.findings.append(Finding("compact-skipped", str(path), exc.message, WARNING, cid))
    if progress:
        progress(total, total, "")


def _ends_torn(path: Path) -> bool:
    try:
        f, st = fsafe.open_regular(path)
    except SamctlError:
        return False
    try:
        if st.st_size == 0:
            return False
        return os.pread(f.fileno(), 1, st.st_size - 1) != b"\n"
    finally:
        f.close()


def _trim_tail(store, cid: str, path: Path, opts, rep) -> None:
    from samctl.formats.mermaid import eventlog, tail

    read = eventlog.read_log_file(path, READ_CAP)
    fix = tail.plan(path, read)
    if fix is None:  # the read stopped before the tail: cutting it would not make the log readable
        if read.stop is not None:
            rep.findings.append(Finding("compact-skipped", str(path), f"the log ends torn, but {read.reason}; "
                                        f"left alone (`samctl check` says more)", WARNING, cid))
        return
    cut = read.size - read.last_newline_offset
    detail = "newline added to a complete last line" if fix.add_newline else f"{cut} torn bytes kept in a .torn file"
    if not opts.dry_run:
        tail.apply(fix)
    rep.add("trim-tail", path, read.size, read.size + 1 if fix.add_newline else fix.offset, detail)


def _without_compactions(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "compactions"}


def _rewrite_log(store, cid: str, path: Path, opts, rep, now) -> None:
    from samctl.formats.mermaid import encode, eventlog

    f, st = fsafe.open_regular(path)
    fd_old = f.fileno()
    try:
        if st.st_size > READ_CAP:
            raise SamctlError(f"{st.st_size} bytes is more than compact reads ({READ_CAP}); left alone")
        data = _pread_all(fd_old, 0)
        if opts.dry_run and not data.endswith(b"\n"):  # the trim before this one was not applied: as if it were
            data = data[: data.rfind(b"\n") + 1]
        size0 = len(data)
        if not data.endswith(b"\n"):
            raise SamctlError("the log has a torn tail; left alone")
        read = eventlog.parse_log(data)
        if read.stop is not None or not read.usable:
            raise SamctlError(f"the log is not clean ({read.reason}); `samctl check` says more; left alone")
        doc = eventlog.fold(read.events)
        if doc is None:
            raise SamctlError("the log does not fold; left alone")
        events = eventlog.backfill_events(doc, read.events[-1]["ts"])
        new = b"".join(encode.log_line_bytes(e) for e in events)
        again = eventlog.parse_log(new)
        if again.stop is not None or _without_compactions(eventlog.fold(again.events) or {}) != \
                _without_compactions(doc):
            raise SamctlError("a backfill would not fold to the same conversation; left alone")
        # The old log goes to the attic: rewrite only when the fresh log and that segment together take
        # less than the old log (a big incompressible event is carried by both, and would grow the store)
        history = len(new) < size0 and _history_estimate(data, opts.level)
        if not history or len(new) + history >= size0:
            _kept(rep, path, cid, size0, len(new), history)
            return
        if opts.dry_run:
            rep.add("rewrite-log", path, size0, len(new) + history, f"{len(read.events)} events -> {len(events)}",
                    log_after=len(new), history=history)
            return
        old_sha = hashlib.sha256(data).hexdigest()
        attic = atticmod.ensure_attic(store)
        stem = atticmod.new_stem(attic, cid, "history", now)
        write_journal(attic, stem, {"op": "log", "stem": stem, "id": cid, "old_size": size0,
                                    "old_sha256": old_sha, "new_size": len(new),
                                    "new_sha256": hashlib.sha256(new).hexdigest()})
        try:
            entry = atticmod.pack(store, cid, "history", [path],
                                  {"title": doc.get("title"), "events": len(read.events)}, opts.level, now, stem)
        except BaseException:
            drop_journal(attic, stem)
            raise
        m = entry.members[0]
        if (m.size, m.sha256) != (size0, old_sha):
            _undo(entry, attic, stem)
            raise atticmod.Changed("the log changed while compact read it (someone is appending); left for the next run")
        history = _entry_bytes(entry)
        if len(new) + history >= size0:  # the estimate was close, and the real segment came out bigger
            _undo(entry, attic, stem)
            _kept(rep, path, cid, size0, len(new), history)
            return
        # Reading and packing took a while: a session may have started meanwhile (spec §1's lock)
        def live() -> bool:
            return store.session_is_live(cid)

        if live():
            _undo(entry, attic, stem)
            rep.findings.append(Finding("skipped-live", str(path), "mermaid opened this session while compact "
                                        "worked on it; left alone", INFO, cid))
            return
        # mermaid creates its log 0600 (spec §4.3); never carry setuid or group/other bits over
        swapped = _swap(path, fd_old, size0, data, new, stat.S_IMODE(st.st_mode) & 0o600, live)
        if not swapped:
            _undo(entry, attic, stem)
            rep.findings.append(Finding("skipped-busy", str(path), "the log grew while compact worked on it; "
                                        "everything was kept, it is tried again on the next run", INFO, cid))
            return
        drop_journal(attic, stem)
        rep.add("rewrite-log", path, size0, len(new) + history,
                f"{len(read.events)} events -> {len(events)}; old log kept as {entry.stem}",
                log_after=len(new), history=history)
    finally:
        f.close()


def _history_estimate(data: bytes, level: int) -> int:
    """About what the history segment of ``data`` takes in the attic: compressed, plus the tar blocks
    (mostly zeros) and the manifest."""
    from samctl.core import tarzst

    return len(tarzst.compressor(level, 0).compress(data)) + 1024


def _entry_bytes(entry) -> int:
    st = fsafe.lstat(entry.manifest_path)
    return entry.tar_size + (st.st_size if st is not None else 0)


def _kept(rep, path: Path, cid: str, size0: int, new: int, history: int | bool) -> None:
    """Say (under -v) why a log over the threshold stays as it is: a rewrite would not shrink it."""
    what = f"a fresh log of {new} bytes" + (f" plus its history segment of about {history} bytes in the attic"
                                             if history else "")
    rep.findings.append(Finding("log-kept", str(path), f"over the threshold, but a rewrite would not make it "
                                f"smaller ({what}, against {size0} bytes now); left alone", INFO, cid))


def _undo(entry, attic: Path, stem: str) -> None:
    atticmod.drop(entry)
    drop_journal(attic, stem)


def _pread_all(fd: int, offset: int) -> bytes:
    chunks = []
    while True:
        b = os.pread(fd, 1 << 24, offset)
        if not b:
            return b"".join(chunks)
        chunks.append(b)
        offset += len(b)


def _settled_growth(fd: int, base: int) -> bytes:
    """Bytes appended to ``fd`` past ``base``; waits (up to a second) for a partly written line to end."""
    extra = _pread_all(fd, base)
    for _ in range(20):
        if not extra or extra.endswith(b"\n"):
            break
        time.sleep(SETTLE_SECONDS)
        extra = _pread_all(fd, base)
    return extra


def _swap(path: Path, fd_old: int, size0: int, data: bytes, new: bytes, mode: int, live=lambda: False) -> bool:
    """Put ``new`` at ``path`` unless the log grew; undo it if a late append lands in the old file.

    The old file is watched for ``SETTLE_SECONDS`` after the swap, and for
    ``LIVE_WATCH_SECONDS`` if ``live()`` says a session has the log open by
    then (it may have opened the old file at the instant of the swap, and an
    append batch it started then may land late).  Returns False when nothing
    was swapped in the end (the log grew before the swap, or the swap was
    undone because of a late append).
    """
    tmp = fsafe.write_temp(path, new, mode)
    cur, old = fsafe.lstat(path), os.fstat(fd_old)
    if cur is None or (cur.st_ino, cur.st_dev) != (old.st_ino, old.st_dev) or cur.st_size != size0 \
            or old.st_size != size0:
        fsafe.discard_temp(tmp)
        return False
    opened: list[int] = []
    try:
        fd_new = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
        opened.append(fd_new)
        fsafe.commit_temp(tmp, path)
        watch, waited = SETTLE_SECONDS, 0.0
        while True:
            time.sleep(SETTLE_SECONDS)
            waited += SETTLE_SECONDS
            if os.fstat(fd_old).st_size != size0:
                _put_back(path, mode, data, [[fd_old, size0]], fd_new, len(new), opened)
                return False
            if waited >= watch:
                if watch == LIVE_WATCH_SECONDS or not live():
                    return True
                watch = LIVE_WATCH_SECONDS
    finally:
        for fd in opened:
            os.close(fd)


def _put_back(path: Path, mode: int, content: bytes, replaced: list, cur_fd: int, cur_base: int,
              opened: list) -> None:
    """Undo a swap that raced with an appender, keeping every appended byte in the order written.

    ``content`` is the old log; ``replaced`` the files no longer at ``path``
    with how much of each is accounted for; ``cur_fd`` the file now at
    ``path``, whose bytes past ``cur_base`` were appended after it got there.
    A sequential appender writes to a replaced file before the current one.
    """
    for _ in range(100):
        for r in replaced:
            g = _settled_growth(r[0], r[1])
            content += g
            r[1] += len(g)
        tail = _settled_growth(cur_fd, cur_base)
        candidate = content + tail
        tmp = fsafe.write_temp(path, candidate, mode)
        if os.fstat(cur_fd).st_size != cur_base + len(tail):
            fsafe.discard_temp(tmp)  # more arrived meanwhile: read again
            continue
        nfd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
        opened.append(nfd)
        fsafe.commit_temp(tmp, path)
        content = candidate
        replaced.append([cur_fd, cur_base + len(tail)])
        cur_fd, cur_base = nfd, len(candidate)
        time.sleep(SETTLE_SECONDS)
        if all(os.fstat(fd).st_size == base for fd, base in replaced):
            return
    raise SamctlError(f"{path}: could not settle a log that keeps being written; its bytes are all kept")


def repair_log(store, attic: Path, stem: str, rec: dict) -> str | None:
    """Settle an interrupted log rewrite (journal op ``log``) without ever losing the old log.

    What is on disk decides, not sizes (mermaid may have appended since):
    the history segment is dropped only when the log still starts with the
    old log's bytes and the segment holds exactly those (the log has every
    old event); when the log starts with the new log's bytes the swap
    happened and the segment is kept; anything else (no log, other bytes, a
    record or segment that does not say) keeps it too.  None (the record is
    left for a person) when the record names another entry.
    """
    cid = str(rec.get("id"))
    parsed = atticmod.parse_stem(stem)
    if parsed is None or parsed[:2] != (cid, "history"):
        return None  # never drop an entry a (tampered) record points at that is not this log's history
    manifest, tar = attic / (stem + atticmod.MANIFEST_SUFFIX), attic / (stem + atticmod.TAR_SUFFIX)
    for p in fsafe.stale_temps(store.conv_dir, f"{cid}.jsonl", now=float("inf")):  # at any age
        fsafe.remove(p)  # our own unfinished new log (mermaid never writes its log through a temp)
    if fsafe.lstat(manifest) is None:
        fsafe.remove(tar)
        return (f"{cid}: undid an interrupted log rewrite: its history segment was not committed (or was "
                "already dropped), so the log holds the old events")
    head, size = _log_head(store.path(cid, "jsonl"), rec)
    if head == "new":
        grown = size - rec["new_size"]
        since = f", with {grown} bytes appended since" if grown else ""
        return (f"{cid}: finished an interrupted log rewrite: the log is the new one{since}; the old log is kept "
                f"as {stem}")
    why = "the log is neither the old one nor the new one"
    if head == "old":
        try:
            entry = atticmod.load_manifest(store, manifest)
        except atticmod.AtticProblem:
            entry = None
        if entry is not None and [(m.size, m.sha256) for m in entry.members] == \
                [(rec["old_size"], rec["old_sha256"])]:
            atticmod.drop(entry)
            return (f"{cid}: undid an interrupted log rewrite: the log still holds the old log (it was never "
                    f"replaced, or was put back), so its history segment {stem} was dropped")
        why = "the segment is not the old log the record describes"
    return f"{cid}: kept the history segment {stem} of an interrupted log rewrite: {why}"


def _log_head(path: Path, rec: dict) -> tuple[str | None, int]:
    """("new" or "old" if the log starts with the bytes the record describes, else None; its size)."""
    sizes, shas = (rec.get("new_size"), rec.get("old_size")), (rec.get("new_sha256"), rec.get("old_sha256"))
    if not all(type(n) is int and n >= 0 for n in sizes) or not all(type(h) is str for h in shas):
        return None, 0
    try:
        f, st = fsafe.open_regular(path)
    except SamctlError:
        return None, 0
    try:
        for which, n, sha in (("new", sizes[0], shas[0]), ("old", sizes[1], shas[1])):  # new first: it keeps
            if _head_sha256(f.fileno(), n) == sha:
                return which, st.st_size
    finally:
        f.close()
    return None, st.st_size


def _head_sha256(fd: int, n: int) -> str | None:
    """The sha256 of the first ``n`` bytes of ``fd``; None if it holds fewer."""
    h, off = hashlib.sha256(), 0
    while off < n:
        b = os.pread(fd, min(fsafe.MIB, n - off), off)
        if not b:
            return None
        h.update(b)
        off += len(b)
    return h.hexdigest()


# --- leftovers ---------------------------------------------------------------------------------

def _old_enough(st, now: float, age: float) -> bool:
    return now - st.st_mtime >= age


def _remove_file(path: Path, st, kind: str, opts, rep, detail: str) -> None:
    if not opts.dry_run:
        try:
            fsafe.remove(path)
        except OSError as exc:
            rep.findings.append(Finding("compact-skipped", str(path), f"cannot remove: {exc.strerror}", WARNING))
            return
    rep.add(kind, path, st.st_size, 0, detail)


def _sweep_folder(folder: Path, opts, rep, now, sam: bool) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        st = fsafe.lstat(e.path)
        if st is None or not stat.S_ISREG(st.st_mode):
            continue
        n = e.name
        if _TEMP_RE.fullmatch(n) or (sam and n != "conversation.json.tmp" and _SAM_TEMP_RE.fullmatch(n)):
            # (SAM's conversation.json.tmp is a recovery source, spec §5.7)
            if _old_enough(st, now, fsafe.STALE_TMP_SECONDS):
                _remove_file(Path(e.path), st, "remove-temp", opts, rep, "stale temp file")
        elif m := _BACKUP_RE.fullmatch(n):
            # the grace runs from when the copy was made (its name), not from its mtime: recover sets
            # SAM's leftover .tmp aside by a rename, keeping that file's (perhaps old) mtime
            made = calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%SZ"))
            if _old_enough(st, now, opts.grace) and now - made >= opts.grace:
                _remove_file(Path(e.path), st, "remove-backup", opts, rep, "samctl's copy, past the grace period")


def _mermaid_leftovers(store, opts, rep, now) -> None:
    _sweep_folder(store.conv_dir, opts, rep, now, sam=False)


def _sam_leftovers(store, opts, rep, now) -> None:
    _sweep_folder(store.conv_dir, opts, rep, now, sam=True)
    for e in store._folders():
        if not e.is_symlink():
            _sweep_folder(Path(e.path), opts, rep, now, sam=True)


# --- SAM databases --------------------------------------------------------------------------------

def _sam_vacuum(store, opts, rep, progress) -> None:
    from samctl.errors import FileProblem
    from samctl.formats.sam import sqlitefile

    dbs = []
    for e in store._folders():
        for name in ("memory.db", "context_archive.db"):
            p = Path(e.path) / name
            st = fsafe.lstat(p)
            if st is not None and stat.S_ISREG(st.st_mode):
                dbs.append((p, st))
    for i, (p, st) in enumerate(dbs):
        if progress:
            progress(i, len(dbs), p.name)
        try:
            if opts.dry_run:  # read-only for real: no -shm/-wal created, no hot journal rolled back
                db = sqlitefile.open_readonly(p, timeout=0)
            else:
                db = sqlite3.connect(sqlitefile.rw_uri(p), uri=True, timeout=0,
                                     isolation_level=None)
        except FileProblem as exc:
            rep.findings.append(Finding("compact-skipped", str(p), f"cannot open: {exc.message}", WARNING))
            continue
        except sqlite3.Error as exc:
            rep.findings.append(Finding("compact-skipped", str(p), f"cannot open: {exc}", WARNING))
            continue
        try:
            free = db.execute("PRAGMA freelist_count").fetchone()[0]
            page = db.execute("PRAGMA page_size").fetchone()[0]
            if not free:
                continue
            if opts.dry_run:
                rep.add("vacuum", p, st.st_size, max(0, st.st_size - free * page), f"{free} free pages")
                continue
            fsafe._step("vacuum")
            db.execute("VACUUM")
        except sqlite3.Error as exc:
            rep.findings.append(Finding("compact-skipped", str(p), f"cannot VACUUM: {exc}", WARNING))
            continue
        finally:
            db.close()
        after = fsafe.lstat(p)
        rep.add("vacuum", p, st.st_size, after.st_size if after else 0, f"{free} free pages")
    if progress and dbs:
        progress(len(dbs), len(dbs), "")
