"""compact: the one maintenance command for cron; the only step besides ``rm --purge`` that destroys.

Under samctl's lock, in order: settle interrupted moves, purge old ``deleted`` entries, cut torn log tails
and rewrite big idle logs, remove stale temps and samctl's own old copies (no other file), VACUUM SAM's
databases. A log rewrite never loses or duplicates an event: it is undone when a writer appended meanwhile.

Design notes: docs/attic.md, "attic/compact.py".
"""

from __future__ import annotations

import calendar
import hashlib
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from samctl.attic import entries as atticmod
from samctl.attic import tarzst
from samctl.attic.journal import drop_journal, pending, settle, write_journal
from samctl.errors import SamctlError
from samctl.fs import filemodes, reading, removing, writing
from samctl.lock import ensure_app_idle, store_lock, would_refuse
from samctl.model import ERROR, INFO, WARNING, Finding
from samctl.said import Suggestion, said

# The only names compact removes (fullmatch): what samctl itself writes, or the store's own writer.
_BACKUP_RE = re.compile(r".+\.([0-9]{8}T[0-9]{6}Z)\.(bak|torn)(\.[0-9]+)?")  # tail.sibling: <name>.<UTC time>.bak[.n]
_TEMP_RE = re.compile(r"\..+\.[0-9]+\.[0-9]+\.tmp")  # writing.tmp_name, mermaid's own: .<name>.<pid>.<n>.tmp
SETTLE_SECONDS = 0.05
LIVE_WATCH_SECONDS = 1.0  # how long the replaced log is watched when a session is live right after the swap
READ_CAP = 1 << 31  # compact reads logs past mermaid's cap: rescuing those is its job


@dataclass
class CompactOptions:
    grace: float = 30 * 86400.0
    log_threshold: int = reading.LOG_CAP // 2
    idle: float = 60.0
    dry_run: bool = False
    force: bool = False
    lock_wait: float = 0.0
    level: int = atticmod.LEVEL
    now: float | None = None
    ignore_unreadable: bool = False  # SAM: purge a deleted scope even while a conversation cannot be read


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
        self.actions.append(
            {"kind": kind, "path": str(path), "bytes_before": before, "bytes_after": after, "detail": detail, **sizes}
        )

    def counts(self) -> dict:
        out: dict = {}
        for a in self.actions:
            out[a["kind"]] = out.get(a["kind"], 0) + 1
        return out

    def to_dict(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "actions": self.actions,
            "repaired": self.repaired,
            "findings": [f.to_dict() for f in self.findings],
            "counts": self.counts(),
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
        }


def _usage(store) -> int:
    """Bytes of the regular files under the store's conversations folder and its attic (symlinks
    not followed, unreadable folders skipped)."""
    total = 0
    todo = [store.conv_dir, atticmod.attic_dir(store)]
    while todo:
        try:
            it = os.scandir(todo.pop())
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    if e.is_dir(follow_symlinks=False):
                        todo.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        total += e.stat(follow_symlinks=False).st_size
                except OSError:
                    continue  # (gone since it was listed)
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
    if store.has_event_logs:
        _logs(store, opts, rep, now, progress)
    for folder in store.maintenance_folders():
        _sweep_folder(store, folder, opts, rep, now)
    _vacuum(store, opts, rep, progress)


# --- attic ------------------------------------------------------------------------------


def _purge_attic(store, opts, rep, now) -> None:
    findings: list = []
    scopes = None  # (scope -> users, unreadable conversations), read once an entry is due; () without scopes
    for e in atticmod.list_entries(store, findings, ("deleted",)):
        if e.when_ts > now - opts.grace:
            continue
        if scopes is None:
            unreadable: list = []
            refs = store.topic_refs(unreadable)
            scopes = (refs, [] if opts.ignore_unreadable else unreadable) if refs is not None else ()
        kept = _kept_scope(e, scopes) if scopes else None
        if kept is not None:
            findings.append(kept)
        elif e.extra.get("pinned") is True:  # only rm --purge --include-pinned
            findings.append(
                Finding(
                    "kept-pinned",
                    str(e.tar_path),
                    said(
                        f"{e.id} was pinned in SAM; kept past the grace (`",
                        Suggestion("rm --purge --include-pinned", "ID"),
                        "` removes it)",
                    ),
                    INFO,
                    e.id,
                )
            )
        else:
            st = filemodes.lstat(e.manifest_path)  # (the manifest goes too: a dry run's estimate counts it)
            size = e.tar_size + (st.st_size if st is not None else 0)
            if not opts.dry_run:
                atticmod.drop(e)
            rep.add("purge-entry", e.tar_path, size, 0, f"{e.id} deleted {e.when}")
    rep.findings.extend(findings)


def _kept_scope(e, scopes) -> Finding | None:
    """Why a deleted SAM entry that is a memory scope (no conversation.json of its own) must stay:
    a conversation in the store uses it, or one that cannot be read might."""
    refs, unreadable = scopes
    users = sorted(refs.get(e.id, ()))
    if users:
        return Finding(
            "kept-scope",
            str(e.tar_path),
            said(
                f"{e.id} is the shared-topic memory scope of {', '.join(users[:3])}: kept past the grace; `",
                Suggestion("restore", e.id),
                "` brings its memories back",
            ),
            WARNING,
            e.id,
        )
    if unreadable and not any(m.name == f"{e.id}/conversation.json" for m in e.members):
        return Finding(
            "kept-scope",
            str(e.tar_path),
            said(
                f"{e.id} may be the memory scope of a conversation that cannot "
                f"be read ({_some(unreadable)}): kept past the grace (`",
                Suggestion("check"),
                "` says what is wrong; --ignore-unreadable purges it anyway)",
            ),
            ERROR,
            e.id,
        )
    return None


def _some(ids: list) -> str:
    """The first three of ``ids``, then a count, for a message."""
    more = f" and {len(ids) - 3} more" if len(ids) > 3 else ""
    return ", ".join(sorted(ids)[:3]) + more


# --- event logs --------------------------------------------------------------------------------


def _logs(store, opts, rep, now, progress) -> None:
    logs = store.event_logs()
    total = len(logs)
    for i, (cid, name) in enumerate(logs):
        if progress:
            progress(i, total, os.path.basename(name))
        st, torn = _tail(name)
        if st is None or st.st_size == 0:
            continue
        big = st.st_size > opts.log_threshold
        if not torn and not big:
            continue
        path = Path(name)
        if store.session_is_live(cid):  # even with --force: the app caches where it appends (mermaid: the seq)
            rep.findings.append(
                Finding("skipped-live", str(path), f"{store.app_name} has this session open; left alone", INFO, cid)
            )
            continue
        if now - st.st_mtime < opts.idle:
            rep.findings.append(
                Finding(
                    "skipped-busy",
                    str(path),
                    f"written in the last {opts.idle:.0f} s; left for the next run",
                    INFO,
                    cid,
                )
            )
            continue
        try:
            if torn:
                _trim_tail(store, cid, path, opts, rep)
            st = filemodes.lstat(path)
            if st is not None and st.st_size > opts.log_threshold:
                _rewrite_log(store, cid, path, opts, rep, now)
        except atticmod.Changed as exc:
            rep.findings.append(Finding("skipped-busy", str(path), exc.message, INFO, cid))
        except SamctlError as exc:
            rep.findings.append(Finding("compact-skipped", str(path), exc.message, WARNING, cid))
    if progress:
        progress(total, total, "")


def _tail(path: str) -> tuple:
    """``(stat, whether the last byte is not a newline)`` of a regular file, from one open (not torn
    when it cannot be read: its lstat then); ``(None, False)`` for anything else (missing, a symlink,
    a FIFO)."""
    try:
        fd = reading.open_read_fd(path)
    except OSError:
        st = filemodes.lstat(path)
        return (st if st is not None and stat.S_ISREG(st.st_mode) else None), False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, False
        try:
            return st, st.st_size > 0 and os.pread(fd, 1, st.st_size - 1) != b"\n"
        except OSError:
            return st, False
    finally:
        os.close(fd)


def _trim_tail(store, cid: str, path: Path, opts, rep) -> None:
    from samctl.stores import logtail  # (lazy: not loaded by ls or --help)

    read = store.read_event_log(path, READ_CAP)
    fix = logtail.plan(path, read)
    if fix is None:  # the read stopped before the tail: cutting it would not make the log readable
        if read.stop is not None:
            rep.findings.append(
                Finding(
                    "compact-skipped",
                    str(path),
                    said(f"the log ends torn, but {read.reason}; left alone (`", Suggestion("check"), "` says more)"),
                    WARNING,
                    cid,
                )
            )
        return
    cut = read.size - read.last_newline_offset
    detail = "newline added to a complete last line" if fix.add_newline else f"{cut} torn bytes kept in a .torn file"
    if not opts.dry_run:
        logtail.apply(fix)
    rep.add("trim-tail", path, read.size, read.size + 1 if fix.add_newline else fix.offset, detail)


def _rewrite_log(store, cid: str, path: Path, opts, rep, now) -> None:
    f, st = reading.open_regular(path)
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
        fresh = store.fresh_log(data)
        new = fresh.data
        # The old log goes to the attic: rewrite only when the fresh log and that segment together take
        # less than the old log (a big incompressible event is carried by both, and would grow the store)
        history = len(new) < size0 and _history_estimate(data, opts.level)
        if not history or len(new) + history >= size0:
            _kept(rep, path, cid, size0, len(new), history)
            return
        if opts.dry_run:
            rep.add(
                "rewrite-log",
                path,
                size0,
                len(new) + history,
                f"{fresh.events_before} events -> {fresh.events_after}",
                log_after=len(new),
                history=history,
            )
            return
        old_sha = hashlib.sha256(data).hexdigest()
        attic = atticmod.ensure_attic(store)
        stem = atticmod.new_stem(attic, cid, "history", now)
        write_journal(
            attic,
            stem,
            {
                "op": "log",
                "stem": stem,
                "id": cid,
                "old_size": size0,
                "old_sha256": old_sha,
                "new_size": len(new),
                "new_sha256": hashlib.sha256(new).hexdigest(),
            },
        )
        try:
            entry = atticmod.pack(
                store,
                cid,
                "history",
                [path],
                {"title": fresh.title, "events": fresh.events_before},
                opts.level,
                now,
                stem,
            )
        except BaseException:
            drop_journal(attic, stem)
            raise
        m = entry.members[0]
        if (m.size, m.sha256) != (size0, old_sha):
            _undo(entry, attic, stem)
            raise atticmod.Changed(
                "the log changed while compact read it (someone is appending); left for the next run"
            )
        history = _entry_bytes(entry)
        if len(new) + history >= size0:  # the estimate was close, and the real segment came out bigger
            _undo(entry, attic, stem)
            _kept(rep, path, cid, size0, len(new), history)
            return

        # Reading and packing took a while: a session may have started meanwhile (docs/formats/mermaid.md §1's lock)
        def live() -> bool:
            return store.session_is_live(cid)

        if live():
            _undo(entry, attic, stem)
            rep.findings.append(
                Finding(
                    "skipped-live",
                    str(path),
                    f"{store.app_name} opened this session while compact worked on it; left alone",
                    INFO,
                    cid,
                )
            )
            return
        # the app creates its log 0600 (mermaid.md §4.3); never carry setuid or group/other bits over
        swapped = _swap(path, fd_old, size0, data, new, stat.S_IMODE(st.st_mode) & 0o600, live)
        if not swapped:
            _undo(entry, attic, stem)
            rep.findings.append(
                Finding(
                    "skipped-busy",
                    str(path),
                    "the log grew while compact worked on it; everything was kept, it is tried again on the next run",
                    INFO,
                    cid,
                )
            )
            return
        drop_journal(attic, stem)
        rep.add(
            "rewrite-log",
            path,
            size0,
            len(new) + history,
            f"{fresh.events_before} events -> {fresh.events_after}; old log kept as {entry.stem}",
            log_after=len(new),
            history=history,
        )
    finally:
        f.close()


def _history_estimate(data: bytes, level: int) -> int:
    """About what the history segment of ``data`` takes in the attic: compressed, plus the tar blocks
    (mostly zeros) and the manifest."""
    return len(tarzst.compressor(level, 0).compress(data)) + 1024


def _entry_bytes(entry) -> int:
    st = filemodes.lstat(entry.manifest_path)
    return entry.tar_size + (st.st_size if st is not None else 0)


def _kept(rep, path: Path, cid: str, size0: int, new: int, history: int | bool) -> None:
    """Say (under -v) why a log over the threshold stays as it is: a rewrite would not shrink it."""
    what = f"a fresh log of {new} bytes" + (
        f" plus its history segment of about {history} bytes in the attic" if history else ""
    )
    rep.findings.append(
        Finding(
            "log-kept",
            str(path),
            f"over the threshold, but a rewrite would not make it "
            f"smaller ({what}, against {size0} bytes now); left alone",
            INFO,
            cid,
        )
    )


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
    tmp = writing.write_temp(path, new, mode)
    cur, old = filemodes.lstat(path), os.fstat(fd_old)
    if (
        cur is None
        or (cur.st_ino, cur.st_dev) != (old.st_ino, old.st_dev)
        or cur.st_size != size0
        or old.st_size != size0
    ):
        writing.discard_temp(tmp)
        return False
    opened: list[int] = []
    try:
        fd_new = reading.open_read_fd(tmp, nofollow=False)
        opened.append(fd_new)
        writing.commit_temp(tmp, path)
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


def _put_back(path: Path, mode: int, content: bytes, replaced: list, cur_fd: int, cur_base: int, opened: list) -> None:
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
        tmp = writing.write_temp(path, candidate, mode)
        if os.fstat(cur_fd).st_size != cur_base + len(tail):
            writing.discard_temp(tmp)  # more arrived meanwhile: read again
            continue
        nfd = reading.open_read_fd(tmp, nofollow=False)
        opened.append(nfd)
        writing.commit_temp(tmp, path)
        content = candidate
        replaced.append([cur_fd, cur_base + len(tail)])
        cur_fd, cur_base = nfd, len(candidate)
        time.sleep(SETTLE_SECONDS)
        if all(os.fstat(fd).st_size == base for fd, base in replaced):
            return
    raise SamctlError(f"{path}: could not settle a log that keeps being written; its bytes are all kept")


# --- leftovers ---------------------------------------------------------------------------------


def _old_enough(st, now: float, age: float) -> bool:
    return now - st.st_mtime >= age


def _remove_file(path: Path, st, kind: str, opts, rep, detail: str) -> None:
    if not opts.dry_run:
        try:
            removing.remove(path)
        except OSError as exc:
            rep.findings.append(Finding("compact-skipped", str(path), f"cannot remove: {exc.strerror}", WARNING))
            return
    rep.add(kind, path, st.st_size, 0, detail)


def _sweep_folder(store, folder: Path, opts, rep, now) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        n = e.name
        # (each pattern only where its fixed part is in the name: a store folder holds tens of thousands)
        temp = n.endswith(".tmp") and _TEMP_RE.fullmatch(n) or store.is_app_temp(n)
        m = None if temp or not ("Z.bak" in n or "Z.torn" in n) else _BACKUP_RE.fullmatch(n)
        if not temp and m is None:
            continue  # (the name says it is no file of this sweep: not even stat-ed)
        st = filemodes.lstat(e.path)
        if st is None or not stat.S_ISREG(st.st_mode):
            continue
        if temp:
            if _old_enough(st, now, writing.STALE_TMP_SECONDS):
                _remove_file(Path(e.path), st, "remove-temp", opts, rep, "stale temp file")
        else:
            # the grace runs from when the copy was made (its name), not from its mtime: recover sets
            # SAM's leftover .tmp aside by a rename, keeping that file's (perhaps old) mtime
            made = calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%SZ"))
            if _old_enough(st, now, opts.grace) and now - made >= opts.grace:
                _remove_file(Path(e.path), st, "remove-backup", opts, rep, "samctl's copy, past the grace period")


# --- databases ----------------------------------------------------------------------------------


def _vacuum(store, opts, rep, progress) -> None:
    dbs = store.vacuum_candidates()
    for i, (p, st) in enumerate(dbs):
        if progress:
            progress(i, len(dbs), p.name)
        try:
            free, after = store.vacuum(p, opts.dry_run)
        except SamctlError as exc:
            rep.findings.append(Finding("compact-skipped", str(p), exc.message, WARNING))
            continue
        if free:
            rep.add("vacuum", p, st.st_size, after, f"{free} free pages")
    if progress and dbs:
        progress(len(dbs), len(dbs), "")
