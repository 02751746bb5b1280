"""rm, archive and purge: moving conversations out of the store (restore: ``attic/restore.py``).

A crash at any instant leaves each conversation complete in the store or in the attic: journal record,
archive checked, manifest (the commit point), originals removed, record dropped.  Purge uses the owning
app's own delete.

Design notes: docs/attic.md, "attic/lifecycle.py".
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from samctl.attic import entries as atticmod
from samctl.attic import tarzst
from samctl.attic.journal import aside_name, drop_journal, put_back, settle, write_batch
from samctl.attic.targets import Report, Selection, Target, attic_view, still_matching, topic_refs
from samctl.errors import Busy, NotFound, SamctlError
from samctl.fs import faults, filemodes, removing, syncing, writing
from samctl.lock import ensure_app_idle, store_lock, would_refuse
from samctl.model import ERROR, WARNING, Finding
from samctl.said import Suggestion, said
from samctl.stores import workers
from samctl.stores.resolve import resolve_many

# --- out: rm / archive ------------------------------------------------------------------


def reason(exc: SamctlError | OSError) -> str:
    """One line for a finding about a conversation that could not be moved."""
    return exc.message if isinstance(exc, SamctlError) else f"{exc.strerror}: {exc.filename}"


def _info(t: Target, scope_of: dict | None) -> dict:
    info = {"title": t.title, "updated": t.updated, "pinned": t.pinned}
    if scope_of is not None:  # SAM: which scope's memories it needs back (see topic_refs)
        info["shared_topic"] = scope_of.get(t.id)
    return info


BATCH = 1024  # conversations moved per round of barriers: the work a crash could leave to repair


@dataclass
class _Out:
    """One conversation on its way out: what it is, its files as first seen, its entry-to-be."""

    target: Target
    paths: list
    before: dict
    stem: str
    now: float
    entry: atticmod.Entry | None = None
    drops: list = field(default_factory=list)  # a copy (state "kept"): the older kept entries it replaces

    @property
    def total(self) -> int:
        return sum(b[1] for b in self.before.values())

    def record(self, store, state: str) -> dict:
        if state == KEPT:  # (another op: repair must never remove the originals of a copy)
            return {
                "op": "copy",
                "stem": self.stem,
                "id": self.target.id,
                "state": state,
                "files": [tarzst.member_name(store, p) for p in self.paths],
                "drops": [e.stem for e in self.drops],
            }
        return {
            "op": "out",
            "stem": self.stem,
            "id": self.target.id,
            "state": state,
            "files": [tarzst.member_name(store, p) for p in self.paths],
        }


KEPT = "kept"  # the state of a copy (``archive --copy``): the originals stay where they are


def move_out_many(store, targets: list, state: str, refs=None, now: float | None = None, drops: dict | None = None):
    """Move ``targets`` into the attic, ``BATCH`` at a time: ``(moved, failed)`` as lists of
    ``(target, Entry, None or (the originals left in the store, the error that left them))``
    and ``(target, SamctlError or OSError)``: a conversation none of whose originals could be
    removed is not moved (its new entry goes again).

    ``state`` KEPT copies instead: the originals stay, and once the batch's entries are
    committed the older kept entries of each (``drops``: id -> entries) are dropped.

    The module docstring's order holds for each conversation; a batch has one
    journal record, and its fsyncs are shared (``syncing.sync_batch``), with a
    barrier wherever the order must reach the disk: the record, then the
    archives and their manifests (the commit point), then the removals of the
    originals, then the record goes.  An archive and its manifest may reach
    the disk in either order: until the commit point no original is touched,
    and ``repair`` drops an entry whose archive did not make it.
    """
    moved, failed = [], []
    scope_of = None if refs is None else {cid: scope for scope, users in refs.items() for cid in users}
    for i in range(0, len(targets), BATCH):
        batch = targets[i : i + BATCH]
        try:
            attic = atticmod.ensure_attic(store)
        except (SamctlError, OSError) as exc:
            if not i:  # no attic: the command cannot do its job at all (exit 1), not one conversation's problem
                raise (
                    exc
                    if isinstance(exc, SamctlError)
                    else SamctlError(
                        f"cannot make the attic {atticmod.attic_dir(store)}: {reason(exc)}; nothing was moved"
                    )
                ) from None
            failed += [(t, exc) for t in batch]
            continue
        with syncing.sync_batch() as sync:
            outs, taken = [], set()
            for t in batch:
                try:
                    outs.append(_plan_out(store, attic, t, state, refs, now, taken))
                    outs[-1].drops = (drops or {}).get(t.id, [])
                except (SamctlError, OSError) as exc:
                    failed.append((t, exc))
            if not outs:
                continue
            try:
                record = write_batch(attic, [o.record(store, state) for o in outs])
            except (SamctlError, OSError) as exc:
                failed += [(o.target, exc) for o in outs]
                continue
            sync.barrier()  # the record is on disk before any entry: repair knows what the batch was
            committed = []
            for o, built in zip(outs, _built(store, outs)):
                try:
                    o.entry = atticmod.pack(
                        store,
                        o.target.id,
                        state,
                        o.paths,
                        _info(o.target, scope_of),
                        now=o.now,
                        stem=o.stem,
                        attic=attic,
                        total=o.total,
                        built=built,
                    )
                    committed.append(o)
                except (SamctlError, OSError) as exc:
                    failed.append((o.target, exc))
            sync.barrier()  # the commit point: every archive and manifest is on disk before any original goes
            for o in committed:
                if state == KEPT:
                    _drop_older(o)
                    moved.append((o.target, o.entry, None))
                    continue
                try:
                    _remove_originals(store, attic, o.stem, o.paths, _unchanged(o))
                    moved.append((o.target, o.entry, None))
                except (SamctlError, OSError) as exc:
                    left = [p for p in o.paths if filemodes.lstat(p) is not None]
                    if len(left) < len(o.paths):  # whole in the attic, partly still in the store: say so
                        moved.append((o.target, o.entry, (left, exc)))
                        continue
                    try:  # none of it went: the move is undone, the conversation stays whole in the store
                        atticmod.drop(o.entry)
                    except (SamctlError, OSError):
                        pass  # (the record stays until the batch ends; repair knows the entry is a copy)
                    failed.append((o.target, exc))
            sync.barrier()  # the removals are on disk before the record goes
            drop_journal(attic, record)
    return moved, failed


PARALLEL_PACK = 64 if sys.platform.startswith("linux") else 1024  # a batch this big is read and compressed in
# worker processes (where they are forked: a spawned one costs far more to start)
PACK_PART = 32  # ... at most this many conversations to a unit of work
PACK_PART_BYTES = 4 << 20  # ... and a unit ends once it holds this much: a bound on what waits in memory


def _built(store, outs: list):
    """``attic.build`` of each of ``outs``, in order: in worker processes for a batch of at least
    ``PARALLEL_PACK`` (while this process writes what they built), else here.  Each reads its
    files after they were planned (``_plan_out``), so ``_unchanged`` still catches a change made
    after the read."""
    items = [(o.paths, o.total, atticmod.LEVEL) for o in outs]
    # (what a unit of work holds: a streamed one comes back as a None)
    return workers.ordered_items(
        store,
        atticmod.build,
        items,
        PARALLEL_PACK,
        PACK_PART,
        PACK_PART_BYTES,
        weight=lambda item: item[1] if item[1] <= tarzst.SMALL else 0,
    )


def _drop_older(o: _Out) -> None:
    """A copy is committed (verified, manifest durable): the older kept copies of its conversation go.
    One that cannot be removed now stays (the next copy of that conversation drops it)."""
    for e in o.drops:
        try:
            atticmod.drop(e)
        except (SamctlError, OSError):
            pass


def _plan_out(store, attic: Path, t: Target, state: str, refs, now, taken: set) -> _Out:
    """``t``'s files and their stamps, and a fresh entry name (not in ``taken``, which gets it)."""
    stats: dict = {}
    paths = store.conversation_files(t.id, refs, stats)
    if not paths:
        raise NotFound(f"no files of {t.id} in {store.conv_dir}")
    before = {p: (st.st_ino, st.st_size, st.st_mtime_ns) for p, st in stats.items()}
    now = time.time() if now is None else now
    stem = atticmod.new_stem(attic, t.id, state, now, taken)
    taken.add(stem)
    return _Out(t, paths, before, stem, now)


def _unchanged(o: _Out) -> list:
    """The originals' lstat results; raise (after dropping the entry) if one changed since it was archived."""
    stats = []
    for path in o.paths:
        st = filemodes.lstat(path)
        if st is None or (st.st_ino, st.st_size, st.st_mtime_ns) != o.before[path]:
            atticmod.drop(o.entry)
            raise SamctlError(
                f"{path} changed while samctl was archiving it; nothing was moved",
                hint="make sure the app is not using it, then try again",
            )
        stats.append(st)
    return stats


def _removal_order(paths: list) -> list:
    """Files the app lists by first (mermaid's sidecar, SAM's conversation.json), the rest after."""

    def key(p: Path):
        n = p.name
        return (0 if n.endswith(".meta") else 1 if n.endswith(".json") else 2, str(p))

    return sorted(paths, key=key)


def _remove_originals(store, attic: Path, stem: str, paths: list, stats: list) -> None:
    """Remove the originals (``stats``: their lstat results, just checked unchanged)."""
    if store.moves_only:
        _remove_watched(store, stem, paths, stats)
        return
    first = paths[0]
    if stat.S_ISDIR(stats[0].st_mode) and first.parent == store.conv_dir:
        # SAM: the whole folder leaves conversations/ in one rename, then is deleted.
        trash = attic / atticmod.STAGING / f"{stem}.trash"
        faults.step("rename")
        try:
            writing.rename(first, trash)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise  # (a read-only conversations folder: nothing may be deleted in place either)
            trash = first  # another file system: delete in place
        syncing.fsync_dir(store.conv_dir)
        removing.remove_tree(trash)
        return
    files = [p for p, st in zip(paths, stats) if not stat.S_ISDIR(st.st_mode)]
    for p in _removal_order(files):
        removing.remove(p)
    for p in sorted((p for p in paths if p not in files), key=lambda p: -len(p.parts)):
        removing.remove_dir_if_empty(p)
    syncing.fsync_dir(store.conv_dir)


def _remove_watched(store, stem: str, paths: list, stats: list) -> None:
    """Remove the originals of another app's session, which the app may open and write at any moment
    (it has no lock): no line written during the move may be lost.

    1. Each file is renamed aside, in its folder, to a hidden name the app never opens (``.<name>.<stem>.moving``):
       from then on a writer that opens the session by its name opens nothing of the moved inode.
    2. Then each must be as archived (inode, size, mtime), held open by no other process (a writer
       that opened it before the rename, as Codex's recorder does on resume), and its name must not have
       come back (an appender that opens and closes per line, as Claude Code does, creates it again).
    3. Only then are the set-aside files unlinked.  Otherwise every file is put back (``journal.put_back``: what
       an appender wrote to a recreated file is appended to the original, so nothing ends split) and
       Busy is raised: nothing was moved, and the new entry is dropped by the caller."""
    files = [(p, st) for p, st in zip(paths, stats) if not stat.S_ISDIR(st.st_mode)]
    aside: list = []
    try:
        for p, st in files:
            q = aside_name(p, stem)
            faults.step("set-aside")
            os.rename(p, q)
            aside.append((p, q, st))
        faults.step("watch")
        why = _written_meanwhile(store, aside)
    except OSError as exc:
        why = f"it could not be set aside: {exc.strerror or exc}"
    if why is not None:
        for p, q, _ in reversed(aside):
            put_back(p, q)
        for p, q, _ in aside:
            syncing.fsync_dir(p.parent)
        raise Busy(
            f"{paths[0]}: {why} while samctl moved it; it is back as it was and nothing was moved",
            hint=f"{store.app_name} is using it: wait until it is idle, then try again",
        )
    for p, q, _ in aside:
        removing.remove(q)
    for p in sorted((p for p, st in zip(paths, stats) if stat.S_ISDIR(st.st_mode)), key=lambda p: -len(p.parts)):
        removing.remove_dir_if_empty(p)
    for folder in {p.parent for p, _ in files}:
        syncing.fsync_dir(folder)


def _written_meanwhile(store, aside: list) -> str | None:
    """Why a set-aside file may have been written since it was archived, in words, or None."""
    for p, q, st in aside:
        now = os.lstat(q)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (st.st_ino, st.st_size, st.st_mtime_ns):
            return "it was written"
        if os.path.lexists(p):
            return "it was written again"
    if store.held_open({os.path.realpath(q) for _, q, _ in aside}):
        return "a process holds it open"
    return None


@contextlib.contextmanager
def under_lock(store, report: Report, targets: list, force: bool, lock_wait: float, ignore_unreadable: bool, again):
    """What every move out does first: the app idle (asked before the lock too: a refusal writes
    nothing), the store's lock, interrupted moves settled, the targets picked again under the lock
    (``still_matching``); yields (those targets, the shared-topic references among them)."""
    ensure_app_idle(store, [t.id for t in targets], force)
    with store_lock(store, lock_wait):
        ensure_app_idle(store, [t.id for t in targets], force)
        report.repaired, left = settle(store)
        report.findings += left
        targets = still_matching(report, targets, again)
        yield targets, topic_refs(store, [t.id for t in targets], ignore_unreadable)


def remove(
    store,
    targets: list,
    state: str,
    *,
    dry_run: bool = False,
    force: bool = False,
    lock_wait: float = 0.0,
    now: float | None = None,
    ignore_unreadable: bool = False,
    again=None,
) -> Report:
    """Move ``targets`` into the attic as ``state`` (deleted or archived); with ``again``, only
    those it still picks once the lock is held (``still_matching``)."""
    report = Report(dry_run=dry_run)
    if dry_run:
        for t in targets:
            report.items.append(dict(t.to_dict(), action=f"would be {state}"))
        report.findings += would_refuse(store, [t.id for t in targets], force)
        return report
    with under_lock(store, report, targets, force, lock_wait, ignore_unreadable, again) as (targets, refs):
        moved, failed = move_out_many(store, targets, state, refs, now)
        for t, exc in failed:
            why = reason(exc)
            report.findings.append(
                Finding(
                    "not-moved", t.id, why if "nothing was moved" in why else f"{why}; nothing was moved", ERROR, t.id
                )
            )
        for t, entry, partly in moved:
            report.items.append(
                dict(t.to_dict(), action=state, entry=entry.stem, bytes=entry.original_size, stored=entry.tar_size)
            )
            if partly and not partly[0]:  # gone from the store: only the copy on its way out stayed behind
                report.findings.append(
                    Finding(
                        "trash-left",
                        t.id,
                        said(
                            f"{t.id} is whole in the attic ({entry.stem}) and gone from the store, but its removed "
                            f"copy in the attic's staging folder could not be cleared: {reason(partly[1])}; `",
                            Suggestion("attic --repair"),
                            "` tries again",
                        ),
                        WARNING,
                        t.id,
                    )
                )
            elif partly:
                left, exc = partly
                report.findings.append(
                    Finding(
                        "partly-removed",
                        t.id,
                        f"{t.id} is whole in the attic ({entry.stem}), but "
                        f"{', '.join(str(p) for p in left[:3])} could not be removed from the store: {reason(exc)}",
                        ERROR,
                        t.id,
                    )
                )
    return report


# --- purge ----------------------------------------------------------------------------


def resolve_for_purge(store, texts) -> list[str]:
    """Ids of the store or of the attic (a conversation already deleted can be purged from the attic)."""
    ids = set(store.all_ids()) | atticmod.named_ids(store, atticmod.STATES)
    return resolve_many(attic_view(store, ids, both=True), texts)


def attic_targets(store, ids, include_pinned: bool = False) -> list[Target]:
    """Targets for ids that are only in the attic (purge takes them from there), titled by their
    newest entry.  NotFound if an id has no readable entry; a pinned one (any of its entries says
    so) is an error without ``include_pinned``, as it is in the store."""
    entries = entries_of(store, ids)
    out, pinned = [], []
    for cid in ids:
        mine = [e for e in entries if e.id == cid]
        if not mine:  # only a damaged entry: samctl leaves what it cannot read for a person
            raise NotFound(
                f"no attic entry of {cid} can be read",
                hint=said("`", Suggestion("attic"), "` says what is wrong with it"),
            )
        t = Target(cid, mine[-1].title, pinned=any(e.extra.get("pinned") is True for e in mine))
        if t.pinned and not include_pinned:
            pinned.append(cid)
        out.append(t)
    if pinned:
        raise SamctlError(
            f"{', '.join(pinned[:3])} {'was' if len(pinned) == 1 else 'were'} pinned in SAM; nothing was purged",
            hint="pass --include-pinned to purge pinned conversations too",
        )
    return out


def keep_pinned_entries(store, sel: Selection, include_pinned: bool = False) -> None:
    """Purge of conversations in the store: one with an attic entry that was pinned when it went
    there (the conversation since came back unpinned) is an error when named, and skipped when a
    filter found it, unless ``include_pinned``: its pinned copy goes with it."""
    if include_pinned or not store.keeps_pinned or not sel.targets:
        return
    pinned = {e.id for e in entries_of(store, [t.id for t in sel.targets]) if e.extra.get("pinned") is True}
    if not pinned:
        return
    if sel.explicit:
        named = sorted(pinned)
        raise SamctlError(
            f"{', '.join(named[:3])} {'has' if len(named) == 1 else 'have'} an attic entry that was "
            "pinned in SAM; nothing was purged",
            hint="pass --include-pinned to purge it too",
        )
    sel.skipped += [(t.id, "its attic entry was pinned (use --include-pinned)") for t in sel.targets if t.id in pinned]
    sel.targets = [t for t in sel.targets if t.id not in pinned]


def entries_of(store, ids, states=atticmod.STATES) -> list[atticmod.Entry]:
    """The attic entries of ``ids`` (only their manifests are read), oldest first."""
    wanted = set(ids)
    return atticmod.list_entries(store, [], states, want=lambda stem, cid: cid in wanted)


def purge(
    store,
    targets: list,
    *,
    dry_run: bool = False,
    force: bool = False,
    lock_wait: float = 0.0,
    ignore_unreadable: bool = False,
    again=None,
) -> Report:
    """Destroy ``targets`` for good: the store's files with the app's own semantics, and their attic
    entries; with ``again``, only those it still picks once the lock is held (``still_matching``)."""
    report = Report(dry_run=dry_run)
    entries = entries_of(store, [t.id for t in targets])
    in_store = set(store.all_ids())
    touched = [t.id for t in targets if t.id in in_store]  # (entries only in the attic: the app never sees them)
    if dry_run:
        for t in targets:
            n = sum(1 for e in entries if e.id == t.id)
            report.items.append(dict(t.to_dict(), action="would be purged", in_store=t.id in in_store, attic_entries=n))
        report.findings += would_refuse(store, touched, force)
        return report
    ensure_app_idle(store, touched, force)
    with store_lock(store, lock_wait):
        ensure_app_idle(store, touched, force)
        report.repaired, left = settle(store)
        report.findings += left
        targets = still_matching(report, targets, again)
        refs = topic_refs(store, [t.id for t in targets], ignore_unreadable)
        entries = entries_of(store, [t.id for t in targets])
        for t in targets:
            removed = []
            try:
                if t.id in set(store.all_ids()):
                    removed = store.purge(t.id, refs)
                dropped = [e for e in entries if e.id == t.id]
                for e in dropped:
                    atticmod.drop(e)
            except (SamctlError, OSError) as exc:
                report.findings.append(Finding("not-purged", t.id, reason(exc), ERROR, t.id))
                continue
            report.items.append(
                dict(t.to_dict(), action="purged", removed=removed, attic_entries=[e.stem for e in dropped])
            )
    return report
