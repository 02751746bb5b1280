"""restore: putting attic entries back into the store exactly (bytes, modes, mtimes), or under a fresh id.

Nothing is lost (attic/entries.py): extract into a private staging folder,
checking every hash (and, with ``as_new``, rewrite the id inside the
copies), write a journal record, move each file to its name without ever
replacing anything (``writing.move_new``: bytes, mode and mtime come along),
then drop the attic entry (manifest first), then the journal record and the
staging folder.  Entries go in batches of ``lifecycle.BATCH`` that share one
journal record, one staging folder and their fsyncs (``syncing.sync_batch``),
with a barrier wherever the order must reach the disk.  A crash leaves the
batch's record in ``samctl-attic/.journal``; ``attic/journal.py`` finishes
each move it describes.  In a big batch of small entries, worker processes
extract and check them into the staging folder (``_stage_all``); everything
after that is done here.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from samctl.attic import entries as atticmod
from samctl.attic import lifecycle, targets, tarscan, tarzst
from samctl.attic.journal import drop_journal, pending_ids, place, settle, sha256_file, write_batch, write_journal
from samctl.attic.lifecycle import reason
from samctl.attic.targets import Report, attic_view
from samctl.errors import NotFound, SamctlError, UsageError
from samctl.fs import filemodes, removing, syncing, writing
from samctl.lock import ensure_app_idle, store_lock, would_refuse
from samctl.model import ERROR, WARNING, Finding
from samctl.safetext import quoted
from samctl.said import Suggestion, said
from samctl.stores import workers
from samctl.stores.resolve import resolve_id


def find_entry(store, text: str | None, entry_name: str | None = None) -> atticmod.Entry:
    """The attic entry ``restore`` would use: the newest deleted/archived entry of the id, or the named one."""
    if entry_name:
        name = entry_name
        for suffix in (atticmod.TAR_SUFFIX, atticmod.MANIFEST_SUFFIX):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        folder, name = os.path.split(name)
        # an entry's name, or its path in this store's attic (`attic --format json` gives paths): no other path
        if (folder and os.path.realpath(folder) != os.path.realpath(atticmod.attic_dir(store))) or name in (
            "",
            ".",
            "..",
        ):
            raise UsageError(
                f"--entry {entry_name!r} is not an entry of this store's attic",
                hint=said("give the entry's name as `", Suggestion("attic"), "` lists it (or a unique prefix of it)"),
            )
        entries = atticmod.list_entries(store, [], atticmod.RESTORABLE, want=lambda stem, cid: stem.startswith(name))
        match = [e for e in entries if e.stem == name] or entries
        if len(match) != 1:
            raise (NotFound if not match else UsageError)(
                f"{'no' if not match else 'more than one'} restorable attic entry matches {entry_name!r}",
                hint=said("`", Suggestion("attic"), "` lists the entries"),
            )
        e = match[0]
        if text is not None and not e.id.startswith(store.normalize_prefix(text)):
            raise UsageError(f"entry {e.stem} holds {e.id}, not {quoted(text)}")
        return e
    if text is None:
        raise UsageError(
            "name the conversation to restore", hint=said("`", Suggestion("attic"), "` lists what can be restored")
        )
    return find_entries(store, [text])[0]


def find_entries(store, texts) -> list[atticmod.Entry]:
    """The newest deleted or archived entry of each id or prefix in ``texts``, each entry once.

    The texts are resolved against the ids the attic's files are named for;
    then only those ids' manifests are read (``list_entries`` with ``want``).
    """
    view = attic_view(store, atticmod.named_ids(store, atticmod.RESTORABLE))
    ids = [resolve_id(view, text) for text in texts]
    wanted = set(ids)
    entries = atticmod.list_entries(store, [], atticmod.RESTORABLE, want=lambda stem, cid: cid in wanted)
    newest = {e.id: e for e in entries}  # entries come oldest first: the last one of an id wins
    out: dict = {}
    for cid in ids:
        if cid not in newest:
            raise NotFound(
                f"no attic entry of {cid} can be read",
                hint=said("`", Suggestion("attic"), "` says what is wrong with it"),
            )
        out.setdefault(newest[cid].stem, newest[cid])  # one conversation named twice is restored once
    return list(out.values())


def _targets_of(store, entry: atticmod.Entry, new: str) -> list[str]:
    """Member names as they will be in the store (renamed for ``new``)."""
    old = entry.id
    out = []
    for m in entry.members:
        n = m.name
        if new != old:
            n = store.renamed_member(n, old, new)
        out.append(n)
    return out


def _collisions(store, cid: str, names: list[str], entry: atticmod.Entry) -> list[str]:
    """The store names that would stand in the way of restoring ``entry`` as ``cid``: the entry's
    files, and the files by which the app knows the conversation (``store.identity_files``).  A kept
    copy (``archive --copy``) goes back over files that still hold its bytes (``place`` leaves them)."""
    known = store.identity_files(cid)
    files = [n for n, m in zip(names, entry.members) if m.type == "file"]
    base = str(store.conv_dir) + os.sep
    out = [n for n in dict.fromkeys(files + known) if os.path.lexists(base + n)]
    if entry.state == "kept" and out:
        out = [n for n in out if n not in _same(store, names, entry)]
    return out


def _same(store, names: list, entry: atticmod.Entry) -> set:
    """The names of ``entry``'s files that are in the store with exactly the entry's bytes."""
    base = str(store.conv_dir) + os.sep
    return {
        n
        for n, m in zip(names, entry.members)
        if m.type == "file" and n is not None and sha256_file(base + n) == m.sha256
    }


def restore(
    store,
    entry: atticmod.Entry,
    *,
    as_new: bool = False,
    dry_run: bool = False,
    force: bool = False,
    lock_wait: float = 0.0,
    touch: bool = False,
) -> Report:
    """Put ``entry`` back into the store exactly (bytes, modes, mtimes), or under a fresh id with ``as_new``.

    Any failure is raised (``restore_many`` reports each failure as a finding instead)."""
    report, failed = _restore(store, [entry], as_new, dry_run, force, lock_wait, touch)
    if failed:
        raise failed[0][1]
    return report


class EntryKept(SamctlError):
    """The conversation is restored, but its attic entry could not be removed (repair retries)."""


@dataclass
class _Restore:
    entry: atticmod.Entry
    new: str
    names: list
    item: dict
    staging: Path | None = None


def restore_many(
    store,
    entries: list,
    *,
    as_new: bool = False,
    dry_run: bool = False,
    force: bool = False,
    lock_wait: float = 0.0,
    touch: bool = False,
) -> Report:
    """Restore several entries in batches that share their fsyncs (see ``_restore_batch``).

    Nothing is done if any of them exists in the store again (unless ``as_new``; a kept copy
    whose files are all still there with its bytes is an ``unchanged`` item);
    an entry that fails on the way (damaged, a file appeared) is a finding, the
    others are restored.  ``touch``: the restored files' mtimes become now.
    """
    report, failed = _restore(store, entries, as_new, dry_run, force, lock_wait, touch)
    for r, exc in failed:
        hint = getattr(exc, "hint", None)  # (what to do about a damaged entry: where it is said)
        report.findings.append(
            Finding(
                "not-restored", str(r.entry.tar_path), reason(exc) + (f"; {hint}" if hint else ""), ERROR, r.entry.id
            )
        )
    return report


def _restore(store, entries: list, as_new: bool, dry_run: bool, force: bool, lock_wait: float, touch: bool = False):
    """(report of what was restored, [(plan, error)] for each entry that failed on the way)."""
    report, failed = Report(dry_run=dry_run), []
    held = set(pending_ids(store))  # half moved by an interrupted command: settled under the lock, then checked
    plans = _restore_plans(store, entries, as_new, held)
    # what the app must not be using (a kept copy whose files are all there already is not touched)
    ids = [x for r in plans if not _all_there(store, r) for x in (r.entry.id, r.new)]
    if dry_run:
        report.items += [
            dict(r.item, action="unchanged" if _all_there(store, r) else "would be restored") for r in plans
        ]
        report.findings += would_refuse(store, ids, force)
        return report, failed
    ensure_app_idle(store, ids, force)
    with store_lock(store, lock_wait):
        ensure_app_idle(store, ids, force)
        report.repaired, left = settle(store)
        report.findings += left
        store.forget_listing()
        # another samctl (or the repair just done) may have restored or purged some meanwhile
        there = {r.entry.id for r in plans if filemodes.lstat(r.entry.manifest_path) is not None}
        targets.gone_meanwhile(report, [r.entry.id for r in plans], there)
        plans = [r for r in plans if r.entry.id in there]
        entries = [r.entry for r in plans]
        if report.repaired:  # the store moved on: what would clash now
            plans = _restore_plans(store, entries, as_new)
        if as_new and not {r.new for r in plans}.isdisjoint(store.all_ids()):
            plans = _restore_plans(store, entries, as_new)
        for r in plans:
            clash = _collisions(store, r.new, r.names, r.entry)
            if clash:
                raise SamctlError(
                    f"{', '.join(clash[:3])} exists in the store; nothing was restored",
                    hint=_clash_hint(store, r.entry),
                )
        there = [r for r in plans if _all_there(store, r)]
        report.items += [dict(r.item, action="unchanged") for r in there]
        plans = [r for r in plans if r not in there]
        for i in range(0, len(plans), lifecycle.BATCH):
            for r, exc in _restore_batch(store, plans[i : i + lifecycle.BATCH]):
                if exc is None or isinstance(exc, EntryKept):
                    if touch:
                        try:
                            _touch(store, r)
                        except OSError as touch_exc:  # restored all the same, with the mtimes it had
                            report.findings.append(
                                Finding(
                                    "not-touched",
                                    r.new,
                                    f"{r.new} is restored, but its mtime could not be set: {reason(touch_exc)}",
                                    WARNING,
                                    r.new,
                                )
                            )
                    report.items.append(
                        dict(r.item, action="restored", id=r.new, restored_from=r.entry.id, bytes=r.entry.original_size)
                    )
                if isinstance(exc, EntryKept):
                    report.findings.append(
                        Finding("entry-kept", r.entry.stem, f"{exc.message}; {exc.hint}", ERROR, r.new)
                    )
                elif exc is not None:
                    failed.append((r, exc))
    return report, failed


def _all_there(store, r: _Restore) -> bool:
    """A kept copy whose every file is in the store with its bytes: nothing to restore."""
    files = [n for n, m in zip(r.names, r.entry.members) if m.type == "file"]
    return r.entry.state == "kept" and r.new == r.entry.id and set(files) <= _same(store, r.names, r.entry)


def _clash_hint(store, entry: atticmod.Entry) -> str:
    if entry.state == "kept":
        return said(
            "the store holds other bytes than the kept copy: `",
            Suggestion("archive --copy"),
            "` keeps them too; to go back to the kept copy, move the store's files aside first",
        )
    if store.moves_only:  # (another app's sessions are never given new ids)
        return "move the store's copy aside first"
    return "restore it beside the existing one with --as-new"


def _touch(store, r: _Restore) -> None:
    """``restore --touch``: the restored files' mtimes become now (an app that deletes old files, as Claude
    Code does after ``cleanupPeriodDays``, then sees them as new)."""
    base = str(store.conv_dir) + os.sep
    for n, m in zip(r.names, r.entry.members):
        if m.type == "file" and n is not None:
            writing.touch(base + n)


def _restore_plans(store, entries: list, as_new: bool, held=()) -> list:
    """A plan per entry; SamctlError if one exists in the store again (unless ``as_new``), except
    for the ids in ``held`` (a pending move holds them: asked again once it is settled)."""
    plans = []
    # new_id(taken) avoids exactly these: the store's ids and the attic's (a later restore of
    # one of those must not find its id taken by this copy)
    taken = set(store.all_ids()) | atticmod.named_ids(store, atticmod.STATES) if as_new else set()
    for entry in entries:
        new = store.new_id(taken, like=entry.extra.get("updated")) if as_new else entry.id
        taken.add(new)
        names = _targets_of(store, entry, new)
        clash = _collisions(store, new, names, entry)
        if clash and not as_new and entry.id not in held:
            raise SamctlError(
                f"{entry.id} exists in the store again ({', '.join(clash[:3])}); nothing was restored",
                hint=_clash_hint(store, entry),
            )
        item = {
            "id": entry.id,
            "title": entry.title,
            "entry": entry.stem,
            "state": entry.state,
            "new_id": new if as_new else None,
            "files": [n for n, m in zip(names, entry.members) if m.type == "file"],
        }
        plans.append(_Restore(entry, new, names, item))
    return plans


def _restore_batch(store, plans: list) -> list:
    """Restore ``plans``; ``[(plan, None or the error)]``.

    Per entry, the order of the module docstring.  The batch has one staging
    folder and one journal record, and its fsyncs are shared, with a barrier
    wherever the order must reach the disk: the staged copies and the record,
    then the files placed in the store, then the attic entries dropped, then
    the record and the staging folder go.  An entry that could not be placed
    (a file appeared meanwhile) keeps its attic entry, its staged copy and its
    move in the record, for a person and ``samctl attic --repair``.
    """
    attic = atticmod.ensure_attic(store)
    folder = attic / atticmod.STAGING / f"{plans[0].entry.stem}.{os.getpid()}"
    if filemodes.lstat(folder) is not None:
        removing.remove_tree(folder)
    writing.make_dir(folder)
    out, staged, placed, left = [], [], [], []
    with syncing.sync_batch() as sync:
        for r, exc in _stage_all(store, folder, plans, sync):
            if exc is None:
                staged.append(r)
            else:
                out.append((r, exc))
        record = None
        if staged:
            try:
                record = write_batch(attic, [_restore_record(r, folder) for r in staged])
            except (SamctlError, OSError) as exc:
                out += [(r, exc) for r in staged]
                staged = []
        sync.barrier()  # the staged copies and the record are on disk before anything is placed
        conv_st = filemodes.lstat(store.root_real)
        for r in staged:
            try:
                conflicts = place(store, r.entry, r.staging, r.names, conv_st)
            except (SamctlError, OSError) as exc:
                out.append((r, exc))
                left.append(r)
                continue
            if conflicts:  # something appeared meanwhile: keep the entry (and its move) for a person
                out.append(
                    (
                        r,
                        SamctlError(
                            f"{', '.join(conflicts[:3])} appeared in the store while restoring {r.entry.id}; the rest was "
                            "placed and the attic entry is kept",
                            hint=said(
                                "move those files aside, then run `",
                                Suggestion("attic --repair"),
                                "` to finish the restore",
                            ),
                        ),
                    )
                )
                left.append(r)
                continue
            placed.append(r)
        sync.barrier()  # the conversations are back on disk before their attic entries go
        kept = []
        for r in placed:
            if r.entry.state == lifecycle.KEPT:  # a kept copy is a backup: it stays once restored
                continue
            try:
                atticmod.drop(r.entry)
            except OSError as exc:  # restored all the same; the move stays in the record for repair
                kept.append(
                    (
                        r,
                        EntryKept(
                            f"{r.entry.id} is restored, but its attic entry {r.entry.stem} could not be removed: {reason(exc)}",
                            hint=said("`", Suggestion("attic --repair"), "` removes it once it can"),
                        ),
                    )
                )
                left.append(r)
        sync.barrier()  # the entries are gone on disk before the record goes
        if left:
            write_journal(attic, record, {"op": "batch", "moves": [_restore_record(r, folder) for r in left]})
        else:
            removing.remove_tree(folder, sync_parent=False)  # scratch: repair sweeps it if a crash brings it back
            if record is not None:
                drop_journal(attic, record)
    kept_plans = {id(r) for r, _ in kept}
    return out + kept + [(r, None) for r in placed if id(r) not in kept_plans]


def _restore_record(r: _Restore, folder: Path) -> dict:
    staging = folder.name if r.staging is folder else f"{folder.name}/{r.staging.name}"  # (see _stage)
    return {
        "op": "restore",
        "stem": r.entry.stem,
        "id": r.entry.id,
        "new_id": r.new,
        "staging": staging,
        "names": r.names,
    }


READ_AHEAD_MIN = 64 << 10  # archives at least this big are read (and hashed) ahead on a helper thread
AHEAD = 2  # entries read ahead: a small one the helper finishes early does not leave it idle


def _read_ahead(plans: list):
    """``(plan, its archive as tarscan.read_ahead gives it, the exception, or None)``: each archive of
    ``READ_AHEAD_MIN`` or more is read, hashed and (if small) decompressed on a helper thread while
    the caller extracts the entries before it (hashlib, zstd and reads release the GIL); a smaller
    one (None) costs less to read than to hand over, and is read by the extraction itself."""

    def read(r):
        try:
            return tarscan.read_ahead(r.entry)
        except Exception as exc:  # noqa: BLE001 - raised again where the entry is extracted: it fails alone
            return exc

    def ahead(i):
        if i < len(plans) and plans[i].entry.tar_size >= READ_AHEAD_MIN:
            return pool.submit(read, plans[i])
        return None

    pool = tarzst.helper()
    queue = [ahead(i) for i in range(AHEAD)]
    for i, r in enumerate(plans):
        nxt = queue.pop(0)
        queue.append(ahead(i + AHEAD))
        yield r, nxt.result() if nxt is not None else None


PARALLEL_STAGE = 64 if sys.platform.startswith("linux") else 1024  # a batch this big is staged by worker
# processes (where they are forked: a spawned one costs far more to start)
STAGE_SMALL = 256 << 10  # ... of entries this big on average: bigger ones are bound by hashing, decompressing
# and copying, which the helper thread (_read_ahead) already does beside the writing; small ones by the work
# per file in Python, which only more processes share
STAGE_PART = 16  # ... at most this many entries to a unit of work
STAGE_PART_BYTES = 4 << 20  # ... and a unit ends once it holds this much


def _stage_all(store, folder: Path, plans: list, sync):
    """``(plan, None or the error that stopped it)`` for each of ``plans``, once it is staged
    (``_claim``, then ``_extract``), in order.  A batch of at least ``PARALLEL_STAGE`` small
    entries is extracted by worker processes, into the staging folder only (``_extract`` reads
    the attic and writes nothing else; the store is changed here, later); their writes are left
    to the batch's next barrier (``syncing.synced_by_parent``), which covers the staging folder.
    Otherwise the entries are extracted here, each archive read ahead on a helper thread.  A crash
    meanwhile leaves only the staging folder (no journal record yet), which repair sweeps."""
    claimed: set = set()
    small = sum(r.entry.original_size for r in plans) <= len(plans) * STAGE_SMALL
    if len(plans) < PARALLEL_STAGE or not small or workers.jobs() <= 1:
        for i, (r, archive) in enumerate(_read_ahead(plans)):
            try:
                _claim(folder, i, r, claimed)
                _extract(store, folder, r, archive)
                yield r, None
            except (SamctlError, OSError) as exc:
                yield r, exc
            archive = None  # let it go before the next one is waited for: at most AHEAD are held
        return
    defer = syncing.batch_defers()
    items: list = []
    for i, r in enumerate(plans):
        try:
            _claim(folder, i, r, claimed)
            items.append((folder, defer, r.entry, r.new, r.names, r.staging))
        except OSError as exc:
            items.append(exc)  # (handed back as it is)
    done = workers.ordered_items(
        store,
        _stage_one,
        items,
        PARALLEL_STAGE,
        STAGE_PART,
        STAGE_PART_BYTES,
        weight=lambda item: 0 if isinstance(item, BaseException) else item[2].original_size,
    )
    for r, result in zip(plans, done):
        if isinstance(result, BaseException):
            yield r, result
            continue
        r.names = result
        sync.note_written(r.staging, r.entry.original_size)
        yield r, None


def _stage_one(store, item):
    """In a worker: ``_extract`` one entry; its names in the store, or the error."""
    if isinstance(item, BaseException):
        return item
    folder, defer, entry, new, names, staging = item
    r = _Restore(entry, new, names, {}, staging)
    with syncing.synced_by_parent(defer):
        try:
            _extract(store, folder, r)
        except (SamctlError, OSError) as exc:
            return exc
    return r.names


def _claim(folder: Path, i: int, r: _Restore, claimed: set) -> None:
    """Where ``r``'s entry (the ``i``-th of its batch) is extracted: straight into the batch's
    staging ``folder`` unless another entry of the batch has claimed one of their top-level names
    there, or their id is being rewritten (``retarget`` works on a folder of its own): then into
    ``folder/<i>``."""
    entry = r.entry
    tops = {m.name.split("/")[0] for m in entry.members}
    if r.new == entry.id and tops.isdisjoint(claimed):
        claimed |= tops
        r.staging = folder
    else:
        r.staging = folder / str(i)
        writing.make_dir(r.staging)


def _extract(store, folder: Path, r: _Restore, archive=None) -> None:
    """Extract and check ``r``'s entry into ``r.staging`` (see ``_claim``); with an id to rewrite,
    rewrite it there, and set ``r.names``.  On failure nothing of this entry is left in ``folder``."""
    entry = r.entry
    try:
        staged = atticmod.unpack(entry, r.staging, archive=archive)
        if r.new != entry.id:
            renames = store.retarget(r.staging, staged, entry.id, r.new)
            atticmod.apply_metadata(entry, r.staging, renames)
            r.names = [None if renames.get(m.name, n) is None else n for n, m in zip(r.names, entry.members)]
    except BaseException:
        if r.staging != folder:
            removing.remove_tree(r.staging)
        raise
