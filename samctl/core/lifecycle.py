"""rm, archive, restore and purge: moving conversations between the store and the attic.

Nothing is lost: every move is ordered so that a crash at any instant leaves
each conversation complete in the store or in the attic (core/attic.py).

- **Out** (``rm``, ``archive``): write a journal record, write the archive
  (temp, fsync, rename), re-read it and check every hash, write its manifest
  (the commit point), check the originals did not change meanwhile, remove
  them (SAM: the folder is first renamed out of ``conversations/`` in one
  step), drop the journal record.
- **Restore**: extract into a private staging folder, checking every hash
  (and, with ``as_new``, rewrite the id inside the copies), write a journal
  record, move each file to its name without ever replacing anything
  (``fsafe.move_new``: bytes, mode and mtime come along), then drop the
  attic entry (manifest first), then the journal record and the staging
  folder.
- **Purge** destroys with the owning app's own delete semantics (the store
  modules' ``purge``), plus the conversation's attic entries.

Moves of many conversations go in batches that share one journal record,
one staging folder and their fsyncs (``fsafe.sync_batch``): the order above
holds for each conversation, with a barrier wherever it must reach the disk.
A crash leaves the batch's record in ``samctl-attic/.journal``;
``core/repair.py`` finishes or undoes each move it describes.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from samctl import fsafe
from samctl.core import attic as atticmod
from samctl.core import tarscan, tarzst
from samctl.core.lock import ensure_app_idle, store_lock
from samctl.core.model import ERROR, Finding
from samctl.core.repair import drop_journal, place, repair, write_batch, write_journal
from samctl.core.resolve import Listed, resolve_id, resolve_many
from samctl.errors import NotFound, SamctlError, UsageError


@dataclass
class Target:
    id: str
    title: str = "?"
    updated: str | None = None
    updated_ts: float | None = None
    messages: int | None = None
    pinned: bool = False
    size: int | None = None

    def to_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "updated": self.updated, "messages": self.messages,
                "pinned": self.pinned, "size": self.size}


@dataclass
class Selection:
    targets: list = field(default_factory=list)
    skipped: list = field(default_factory=list)  # (id, why)
    findings: list = field(default_factory=list)
    explicit: bool = False  # the user named the ids (no filter)


@dataclass
class Report:
    items: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    repaired: list = field(default_factory=list)
    dry_run: bool = False

    @property
    def failed(self) -> list:
        return [f for f in self.findings if f.severity == ERROR]

    def to_dict(self) -> dict:
        return {"dry_run": self.dry_run, "items": self.items, "repaired": self.repaired,
                "findings": [f.to_dict() for f in self.findings]}


def _attic_view(store, ids) -> Listed:
    """The store as ``resolve_id`` sees it with the attic's ids (or store + attic)."""
    return Listed(store, ids, where=atticmod.attic_dir(store))


# --- selection ------------------------------------------------------------------------

def select(store, ids=(), older_than: float | None = None, empty: bool = False, title: str | None = None,
           include_pinned: bool = False, keep_last: int | None = None, now: float | None = None) -> Selection:
    """The conversations a command would act on (read-only).

    Named ids are resolved like everywhere else (exact, then unique prefix);
    filters narrow them, or pick from the whole store when no id is named.
    A named pinned SAM conversation is an error without ``include_pinned``;
    pinned ones a filter finds are skipped.
    """
    now = time.time() if now is None else now
    sel = Selection()
    metas = {m.id: m for m in store.list_metas(sel.findings)}
    filtered = older_than is not None or empty or title is not None
    if ids:
        chosen = resolve_many(store, ids)
        sel.explicit = not filtered
    elif filtered:
        chosen = list(metas)
        if empty:
            chosen += [i for i in store.all_ids() if i not in metas]
    else:
        raise UsageError("name the conversations to act on, or select them with --older-than, --empty or --title",
                         hint="`samctl ls` lists them")
    keep = set()
    if keep_last:
        newest = sorted(metas.values(), key=lambda m: m.updated_ts or m.created_ts or 0.0, reverse=True)
        keep = {m.id for m in newest[:keep_last]}
    needle = title.casefold() if title is not None else None
    pinned_named = []
    for cid in chosen:
        m = metas.get(cid)
        t = Target(cid)
        if m is not None:
            t = Target(cid, m.title, m.updated or m.created, m.updated_ts or m.created_ts, m.message_count, m.pinned,
                       m.size)
        else:
            t = _target_without_meta(store, cid, sel.findings)
        if cid in keep:
            sel.skipped.append((cid, f"one of the {keep_last} most recent"))
            continue
        if older_than is not None and (t.updated_ts is None or t.updated_ts > now - older_than
                                       or _last_activity(store, cid, t) > now - older_than):
            continue
        if needle is not None and needle not in (t.title or "").casefold():
            continue
        if empty and not _is_empty(store, cid, t):
            continue
        if t.pinned and not include_pinned:
            if ids and not filtered:
                pinned_named.append(cid)
            else:
                sel.skipped.append((cid, "pinned (use --include-pinned)"))
            continue
        sel.targets.append(t)
    if pinned_named:
        raise SamctlError(f"{', '.join(pinned_named[:3])} {'is' if len(pinned_named) == 1 else 'are'} pinned in SAM; "
                          "nothing was removed", hint="pass --include-pinned to remove pinned conversations too")
    return sel


def _target_without_meta(store, cid: str, findings: list) -> Target:
    """A Target for a conversation the listing does not show (message-less, or unreadable)."""
    local: list = []
    try:
        conv = store.load(cid, local)
    except (SamctlError, OSError):
        conv = None
    if conv is None:
        return Target(cid, "?")
    m = conv.meta
    return Target(cid, m.title, m.updated or m.created, m.updated_ts or m.created_ts, len(conv.messages), m.pinned,
                  m.size)


def _last_activity(store, cid: str, t: Target) -> float:
    """When the conversation was last used.  SAM's ``updated`` is not touched by ordinary message traffic
    (spec §4.1), so the newest message time counts too; mermaid's ``updated_at`` already is that."""
    best = t.updated_ts or 0.0
    if store.name != "sam":
        return best
    from samctl.core.timeparse import parse_timestamp

    doc, _ = store._parse(store.folder(cid) / "conversation.json")
    msgs = doc.get("messages") if isinstance(doc, dict) else None
    for m in msgs if isinstance(msgs, list) else ():
        if isinstance(m, dict):
            for k in ("lastModified", "timestamp"):
                ts = parse_timestamp(m.get(k))
                if ts is not None and ts > best:
                    best = ts
    return best


def _is_empty(store, cid: str, t: Target) -> bool:
    """SAM's "delete empty": no messages, not pinned, not using shared data; mermaid: a message-less snapshot."""
    if t.messages != 0:
        return False
    if store.name == "sam":
        from samctl.formats.sam import decode

        doc, _ = store._parse(store.folder(cid) / "conversation.json")
        return doc is not None and decode.shared_topic_id(doc) is None
    return True


def preflight(store, sel: Selection, purge: bool = False) -> None:
    """Drop targets that cannot be moved (a scope in use, a symlink inside, ...), read-only.

    Named ids: the first such problem is raised (nothing is done); filter
    results: each is moved to ``sel.skipped`` with the reason.
    """
    refs = store.topic_refs() if store.name == "sam" else None
    in_store = set(store.all_ids())
    ok = []
    for t in sel.targets:
        if t.id not in in_store or (purge and store.name == "mermaid"):  # mermaid's delete takes anything
            ok.append(t)
            continue
        try:
            store.conversation_files(t.id, refs)
        except SamctlError as exc:
            if sel.explicit:
                raise SamctlError(f"{exc.message}; nothing was changed", exc.hint) from None
            sel.skipped.append((t.id, exc.message))
            continue
        ok.append(t)
    sel.targets = ok


# --- out: rm / archive ------------------------------------------------------------------

def _reason(exc: SamctlError | OSError) -> str:
    """One line for a finding about a conversation that could not be moved."""
    return exc.message if isinstance(exc, SamctlError) else f"{exc.strerror}: {exc.filename}"


def _info(t: Target) -> dict:
    return {"title": t.title, "updated": t.updated, "pinned": t.pinned}


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

    def record(self, store, state: str) -> dict:
        return {"op": "out", "stem": self.stem, "id": self.target.id, "state": state,
                "files": [tarzst.member_name(store, p) for p in self.paths]}


def move_out_many(store, targets: list, state: str, refs=None, now: float | None = None):
    """Move ``targets`` into the attic, ``BATCH`` at a time: ``(moved, failed)`` as lists of
    ``(target, Entry)`` and ``(target, SamctlError or OSError)``.

    The module docstring's order holds for each conversation; a batch has one
    journal record, and its fsyncs are shared (``fsafe.sync_batch``), with a
    barrier wherever the order must reach the disk: the record, then the
    archives and their manifests (the commit point), then the removals of the
    originals, then the record goes.  An archive and its manifest may reach
    the disk in either order: until the commit point no original is touched,
    and ``repair`` drops an entry whose archive did not make it.
    """
    moved, failed = [], []
    for i in range(0, len(targets), BATCH):
        batch = targets[i:i + BATCH]
        try:
            attic = atticmod.ensure_attic(store)
        except (SamctlError, OSError) as exc:
            failed += [(t, exc) for t in batch]
            continue
        with fsafe.sync_batch() as sync:
            outs, taken = [], set()
            for t in batch:
                try:
                    outs.append(_plan_out(store, attic, t, state, refs, now, taken))
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
            for o in outs:
                try:
                    o.entry = atticmod.pack(store, o.target.id, state, o.paths, _info(o.target), now=o.now,
                                            stem=o.stem, attic=attic, total=sum(b[1] for b in o.before.values()))
                    committed.append(o)
                except (SamctlError, OSError) as exc:
                    failed.append((o.target, exc))
            sync.barrier()  # the commit point: every archive and manifest is on disk before any original goes
            for o in committed:
                try:
                    _remove_originals(store, attic, o.stem, o.paths, _unchanged(o))
                    moved.append((o.target, o.entry))
                except (SamctlError, OSError) as exc:
                    failed.append((o.target, exc))
            sync.barrier()  # the removals are on disk before the record goes
            drop_journal(attic, record)
    return moved, failed


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
        st = fsafe.lstat(path)
        if st is None or (st.st_ino, st.st_size, st.st_mtime_ns) != o.before[path]:
            atticmod.drop(o.entry)
            raise SamctlError(f"{path} changed while samctl was archiving it; nothing was moved",
                              hint="make sure the app is not using it, then try again")
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
    first = paths[0]
    if stat.S_ISDIR(stats[0].st_mode) and first.parent == store.conv_dir:
        # SAM: the whole folder leaves conversations/ in one rename, then is deleted.
        trash = attic / atticmod.STAGING / f"{stem}.trash"
        fsafe._step("rename")
        try:
            os.rename(first, trash)
        except OSError:
            trash = first  # another file system: delete in place
        fsafe.fsync_dir(store.conv_dir)
        fsafe.remove_tree(trash)
        return
    files = [p for p, st in zip(paths, stats) if not stat.S_ISDIR(st.st_mode)]
    for p in _removal_order(files):
        fsafe.remove(p)
    for p in sorted((p for p in paths if p not in files), key=lambda p: -len(p.parts)):
        try:
            os.rmdir(p)
        except OSError:
            pass
    fsafe.fsync_dir(store.conv_dir)


def remove(store, targets: list, state: str, *, dry_run: bool = False, force: bool = False,
           lock_wait: float = 0.0, now: float | None = None) -> Report:
    """Move ``targets`` into the attic as ``state`` (deleted or archived)."""
    report = Report(dry_run=dry_run)
    if dry_run:
        for t in targets:
            report.items.append(dict(t.to_dict(), action=f"would be {state}"))
        return report
    ensure_app_idle(store, [t.id for t in targets], force)  # before the lock: a refusal writes nothing
    with store_lock(store, lock_wait):
        ensure_app_idle(store, [t.id for t in targets], force)
        report.repaired = repair(store)
        refs = store.topic_refs() if store.name == "sam" else None
        moved, failed = move_out_many(store, targets, state, refs, now)
        for t, exc in failed:
            report.findings.append(Finding("not-moved", t.id, _reason(exc), ERROR, t.id))
        for t, entry in moved:
            report.items.append(dict(t.to_dict(), action=state, entry=entry.stem, bytes=entry.original_size,
                                     stored=entry.tar_size))
    return report


# --- purge ----------------------------------------------------------------------------

def resolve_for_purge(store, texts) -> list[str]:
    """Ids of the store or of the attic (a conversation already deleted can be purged from the attic)."""
    ids = set(store.all_ids()) | atticmod.named_ids(store, atticmod.STATES)
    return resolve_many(_attic_view(store, ids), texts)


def entries_of(store, ids, states=atticmod.STATES) -> list[atticmod.Entry]:
    """The attic entries of ``ids`` (only their manifests are read), oldest first."""
    wanted = set(ids)
    return atticmod.list_entries(store, [], states, want=lambda stem, cid: cid in wanted)


def purge(store, targets: list, *, dry_run: bool = False, force: bool = False, lock_wait: float = 0.0) -> Report:
    """Destroy ``targets`` for good: the store's files with the app's own semantics, and their attic entries."""
    report = Report(dry_run=dry_run)
    entries = entries_of(store, [t.id for t in targets])
    in_store = set(store.all_ids())
    if dry_run:
        for t in targets:
            n = sum(1 for e in entries if e.id == t.id)
            report.items.append(dict(t.to_dict(), action="would be purged", in_store=t.id in in_store,
                                     attic_entries=n))
        return report
    ensure_app_idle(store, [t.id for t in targets if t.id in in_store], force)
    with store_lock(store, lock_wait):
        ensure_app_idle(store, [t.id for t in targets if t.id in in_store], force)
        report.repaired = repair(store)
        refs = store.topic_refs() if store.name == "sam" else None
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
                report.findings.append(Finding("not-purged", t.id, _reason(exc), ERROR, t.id))
                continue
            report.items.append(dict(t.to_dict(), action="purged", removed=removed,
                                     attic_entries=[e.stem for e in dropped]))
    return report


# --- restore ---------------------------------------------------------------------------

def find_entry(store, text: str | None, entry_name: str | None = None) -> atticmod.Entry:
    """The attic entry ``restore`` would use: the newest deleted/archived entry of the id, or the named one."""
    if entry_name:
        name = entry_name
        for suffix in (atticmod.TAR_SUFFIX, atticmod.MANIFEST_SUFFIX):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        name = os.path.basename(name)
        entries = atticmod.list_entries(store, [], atticmod.RESTORABLE, want=lambda stem, cid: stem.startswith(name))
        match = [e for e in entries if e.stem == name] or entries
        if len(match) != 1:
            raise (NotFound if not match else UsageError)(
                f"{'no' if not match else 'more than one'} restorable attic entry matches {entry_name!r}",
                hint="`samctl attic` lists the entries")
        e = match[0]
        if text is not None and not e.id.startswith(store.normalize_prefix(text)):
            raise UsageError(f"entry {e.stem} holds {e.id}, not {text!r}")
        return e
    if text is None:
        raise UsageError("name the conversation to restore", hint="`samctl attic` lists what can be restored")
    return find_entries(store, [text])[0]


def find_entries(store, texts) -> list[atticmod.Entry]:
    """The newest deleted or archived entry of each id or prefix in ``texts``, each entry once.

    The texts are resolved against the ids the attic's files are named for;
    then only those ids' manifests are read (``list_entries`` with ``want``).
    """
    view = _attic_view(store, atticmod.named_ids(store, atticmod.RESTORABLE))
    ids = [resolve_id(view, text) for text in texts]
    wanted = set(ids)
    entries = atticmod.list_entries(store, [], atticmod.RESTORABLE, want=lambda stem, cid: cid in wanted)
    newest = {e.id: e for e in entries}  # entries come oldest first: the last one of an id wins
    out: dict = {}
    for cid in ids:
        if cid not in newest:
            raise NotFound(f"no attic entry of {cid} can be read", hint="`samctl attic` says what is wrong with it")
        out.setdefault(newest[cid].stem, newest[cid])  # one conversation named twice is restored once
    return list(out.values())


def _targets_of(store, entry: atticmod.Entry, new: str) -> list[str]:
    """Member names as they will be in the store (renamed for ``new``)."""
    old = entry.id
    out = []
    for m in entry.members:
        n = m.name
        if new != old:
            if store.name == "mermaid":
                n = new + n[len(old):]
            else:
                n = new + n[len(n.split("/", 1)[0]):]
        out.append(n)
    return out


def _collisions(store, names: list[str], entry: atticmod.Entry) -> list[str]:
    """The store names that would stand in the way: the entry's files, and the files by which
    the app knows the conversation (mermaid: any of its three; SAM: its conversation.json)."""
    if store.name == "mermaid":
        cid = names[0].split(".", 1)[0]
        known = [f"{cid}.{e}" for e in ("json", "meta", "jsonl")]
    else:
        known = [names[0].split("/", 1)[0] + "/conversation.json"]
    files = [n for n, m in zip(names, entry.members) if m.type == "file"]
    base = str(store.conv_dir) + os.sep
    return [n for n in dict.fromkeys(files + known) if os.path.lexists(base + n)]


def restore(store, entry: atticmod.Entry, *, as_new: bool = False, dry_run: bool = False, force: bool = False,
            lock_wait: float = 0.0) -> Report:
    """Put ``entry`` back into the store exactly (bytes, modes, mtimes), or under a fresh id with ``as_new``.

    Any failure is raised (``restore_many`` reports each failure as a finding instead)."""
    report, failed = _restore(store, [entry], as_new, dry_run, force, lock_wait)
    if failed:
        raise failed[0][1]
    return report


@dataclass
class _Restore:
    entry: atticmod.Entry
    new: str
    names: list
    item: dict
    staging: Path | None = None


def restore_many(store, entries: list, *, as_new: bool = False, dry_run: bool = False, force: bool = False,
                 lock_wait: float = 0.0) -> Report:
    """Restore several entries in batches that share their fsyncs (see ``_restore_batch``).

    Nothing is done if any of them exists in the store again (unless ``as_new``);
    an entry that fails on the way (damaged, a file appeared) is a finding, the
    others are restored.
    """
    report, failed = _restore(store, entries, as_new, dry_run, force, lock_wait)
    for r, exc in failed:
        report.findings.append(Finding("not-restored", r.entry.stem, _reason(exc), ERROR, r.entry.id))
    return report


def _restore(store, entries: list, as_new: bool, dry_run: bool, force: bool, lock_wait: float):
    """(report of what was restored, [(plan, error)] for each entry that failed on the way)."""
    report, failed = Report(dry_run=dry_run), []
    plans = _restore_plans(store, entries, as_new)
    if dry_run:
        report.items += [dict(r.item, action="would be restored") for r in plans]
        return report, failed
    ids = [x for r in plans for x in (r.entry.id, r.new)]
    ensure_app_idle(store, ids, force)
    with store_lock(store, lock_wait):
        ensure_app_idle(store, ids, force)
        report.repaired = repair(store)
        for r in plans:
            if fsafe.lstat(r.entry.manifest_path) is None:
                raise NotFound(f"attic entry {r.entry.stem} is gone (another samctl restored or purged it)")
        if as_new and not {r.new for r in plans}.isdisjoint(store.all_ids()):
            plans = _restore_plans(store, entries, as_new)
        for r in plans:
            clash = _collisions(store, r.names, r.entry)
            if clash:
                raise SamctlError(f"{', '.join(clash[:3])} exists in the store; nothing was restored",
                                  hint="restore it beside the existing one with --as-new")
        for i in range(0, len(plans), BATCH):
            for r, exc in _restore_batch(store, plans[i:i + BATCH]):
                if exc is None:
                    report.items.append(dict(r.item, action="restored", id=r.new, restored_from=r.entry.id,
                                             bytes=r.entry.original_size))
                else:
                    failed.append((r, exc))
    return report, failed


def _restore_plans(store, entries: list, as_new: bool) -> list:
    plans = []
    # new_id(taken) avoids exactly these: the store's ids and the attic's (a later restore of
    # one of those must not find its id taken by this copy)
    taken = set(store.all_ids()) | atticmod.named_ids(store, atticmod.STATES) if as_new else set()
    for entry in entries:
        new = store.new_id(taken) if as_new else entry.id
        taken.add(new)
        names = _targets_of(store, entry, new)
        clash = _collisions(store, names, entry)
        if clash and not as_new:
            raise SamctlError(f"{entry.id} exists in the store again ({', '.join(clash[:3])}); nothing was restored",
                              hint="restore it beside the existing one with --as-new")
        item = {"id": entry.id, "title": entry.title, "entry": entry.stem, "state": entry.state,
                "new_id": new if as_new else None,
                "files": [n for n, m in zip(names, entry.members) if m.type == "file"]}
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
    if fsafe.lstat(folder) is not None:
        fsafe.remove_tree(folder)
    os.mkdir(folder, fsafe.DIR_MODE)
    out, staged, placed, left = [], [], [], []
    with fsafe.sync_batch() as sync:
        claimed: set = set()
        for i, (r, archive) in enumerate(_read_ahead(plans)):
            try:
                _stage(store, folder, i, r, claimed, archive)
                staged.append(r)
            except (SamctlError, OSError) as exc:
                out.append((r, exc))
        record = None
        if staged:
            try:
                record = write_batch(attic, [_restore_record(r, folder) for r in staged])
            except (SamctlError, OSError) as exc:
                out += [(r, exc) for r in staged]
                staged = []
        sync.barrier()  # the staged copies and the record are on disk before anything is placed
        conv_st = fsafe.lstat(store.root_real)
        for r in staged:
            try:
                conflicts = place(store, r.entry, r.staging, r.names, conv_st)
            except (SamctlError, OSError) as exc:
                out.append((r, exc))
                left.append(r)
                continue
            if conflicts:  # something appeared meanwhile: keep the entry (and its move) for a person
                out.append((r, SamctlError(
                    f"{', '.join(conflicts[:3])} appeared in the store while restoring {r.entry.id}; the rest was "
                    "placed and the attic entry is kept",
                    hint="move those files aside, then run `samctl attic --repair` to finish the restore")))
                left.append(r)
                continue
            placed.append(r)
        sync.barrier()  # the conversations are back on disk before their attic entries go
        for r in placed:
            atticmod.drop(r.entry)
        sync.barrier()  # the entries are gone on disk before the record goes
        if left:
            write_journal(attic, record, {"op": "batch", "moves": [_restore_record(r, folder) for r in left]})
        else:
            fsafe.remove_tree(folder, sync_parent=False)  # scratch: repair sweeps it if a crash brings it back
            if record is not None:
                drop_journal(attic, record)
    return out + [(r, None) for r in placed]


def _restore_record(r: _Restore, folder: Path) -> dict:
    return {"op": "restore", "stem": r.entry.stem, "id": r.entry.id, "new_id": r.new,
            "staging": r.staging.relative_to(folder.parent).as_posix(), "names": r.names}


READ_AHEAD_MIN = 64 << 10  # archives at least this big are read (and hashed) ahead on a helper thread


def _read_ahead(plans: list):
    """``(plan, its archive as atticmod.read_archive gives it, the error, or None)``: each archive
    of ``READ_AHEAD_MIN`` or more is read and hashed on a helper thread while the caller extracts
    the entry before it (hashlib and reads release the GIL); a smaller one (None) costs less to
    read than to hand over, and is read by the extraction itself."""
    def read(r):
        try:
            return tarscan.read_archive(r.entry)
        except SamctlError as exc:
            return exc

    def ahead(i):
        if i < len(plans) and plans[i].entry.tar_size >= READ_AHEAD_MIN:
            return pool.submit(read, plans[i])
        return None

    pool = tarzst.helper()
    nxt = ahead(0)
    for i, r in enumerate(plans):
        archive = nxt.result() if nxt is not None else None
        nxt = ahead(i + 1)
        yield r, archive


def _stage(store, folder: Path, i: int, r: _Restore, claimed: set, archive=None) -> None:
    """Extract and check ``r``'s entry (the ``i``-th of its batch) into the batch's staging ``folder``.

    The members go straight into ``folder`` unless another entry of the batch
    has claimed one of their top-level names there, or their id is being
    rewritten (``retarget`` works on a folder of its own): then into
    ``folder/<i>``.  On failure nothing of this entry is left in ``folder``.
    """
    entry = r.entry
    tops = {m.name.split("/")[0] for m in entry.members}
    if r.new == entry.id and tops.isdisjoint(claimed):
        claimed |= tops
        r.staging = folder
    else:
        r.staging = folder / str(i)
        os.mkdir(r.staging, fsafe.DIR_MODE)
    try:
        staged = atticmod.unpack(entry, r.staging, archive=archive)
        if r.new != entry.id:
            renames = store.retarget(r.staging, staged, entry.id, r.new)
            atticmod.apply_metadata(entry, r.staging, renames)
    except BaseException:
        if r.staging != folder:
            fsafe.remove_tree(r.staging)
        raise
