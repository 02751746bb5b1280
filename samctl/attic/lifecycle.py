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
from samctl.attic import tarscan, tarzst
from samctl.attic.journal import aside_name, drop_journal, put_back, settle, sha256_file, write_batch
from samctl.errors import Busy, FileProblem, NotFound, SamctlError, UsageError
from samctl.fs import faults, filemodes, removing, syncing, writing
from samctl.lock import ensure_app_idle, store_lock, would_refuse
from samctl.model import ERROR, INFO, WARNING, Finding, last_activity, recency, title_key
from samctl.said import Suggestion, said
from samctl.stores import workers
from samctl.stores.resolve import Listed, resolve_many


@dataclass
class Target:
    id: str
    title: str = "?"
    updated: str | None = None
    updated_ts: float | None = None
    messages: int | None = None
    pinned: bool = False
    size: int | None = None
    active_ts: float | None = None  # last activity (model.last_activity): what --older-than goes by

    @classmethod
    def of(cls, cid: str, m, messages: int | None) -> Target:
        """The Target of a conversation's ConversationMeta ``m``."""
        return cls(
            cid,
            m.title,
            m.updated or m.created,
            m.updated_ts or m.created_ts,
            messages,
            m.pinned,
            m.size,
            last_activity(m),
        )

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "updated": self.updated,
            "message_count": self.messages,
            "pinned": self.pinned,
            "size": self.size,
        }


@dataclass
class Selection:
    targets: list = field(default_factory=list)
    skipped: list = field(default_factory=list)  # (id, why)
    findings: list = field(default_factory=list)
    explicit: bool = False  # the user named the ids (no filter)
    in_store: set | None = None  # the store's ids as select listed them (preflight needs them too)
    problems: list = field(default_factory=list)  # Findings (errors): chosen, but a file problem keeps them (exit 3)


@dataclass
class Report:
    items: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    repaired: list = field(default_factory=list)
    dry_run: bool = False
    kept: list = field(default_factory=list)  # {id, reason}: what a filter found and left alone (pinned, ...)

    @property
    def failed(self) -> list:
        return [f for f in self.findings if f.severity == ERROR]

    def to_dict(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "items": self.items,
            "kept": self.kept,
            "repaired": self.repaired,
            "findings": [f.to_dict() for f in self.findings],
        }


def attic_view(store, ids, both: bool = False) -> Listed:
    """The store as ``resolve_id`` sees it with the attic's ids (or, ``both``, store + attic)."""
    if both:
        return Listed(
            store,
            ids,
            where=f"{store.conv_dir} or {atticmod.attic_dir(store)}",
            hint=said("`", Suggestion("ls"), "` and `", Suggestion("attic"), "` list them"),
        )
    return Listed(store, ids, where=atticmod.attic_dir(store), hint=said("`", Suggestion("attic"), "` lists them"))


# --- selection ------------------------------------------------------------------------


def select(
    store,
    ids=(),
    older_than: float | None = None,
    empty: bool = False,
    title: str | None = None,
    include_pinned: bool = False,
    keep_last: int | None = None,
    now: float | None = None,
) -> Selection:
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
    # the store is listed once here, and preflight reuses it: 100,000 ids list in a good part of a second
    if ids:
        view = Listed(store)
        sel.in_store = set(view.all_ids())
        chosen = resolve_many(view, ids)
        sel.explicit = not filtered
    elif filtered:
        chosen = list(metas)
        if empty:
            sel.in_store = set(store.all_ids())
            chosen += [i for i in sorted(sel.in_store) if i not in metas]
    else:
        raise UsageError(
            "name the conversations to act on, or select them with --older-than, --empty or --title",
            hint=said("`", Suggestion("ls"), "` lists them"),
        )
    keep = set()
    if keep_last:
        newest = sorted(metas.values(), key=recency, reverse=True)
        keep = {m.id for m in newest[:keep_last]}
    needle = title_key(title) if title is not None else None
    pinned_named = []
    for cid in chosen:
        m = metas.get(cid)
        t = Target.of(cid, m, m.message_count) if m is not None else _target_without_meta(store, cid, sel.findings)
        if cid in keep:
            sel.skipped.append((cid, f"one of the {keep_last} most recent"))
            continue
        if older_than is not None and (
            t.updated_ts is None or t.updated_ts > now - older_than or (t.active_ts or 0.0) > now - older_than
        ):
            continue
        if needle is not None and needle not in title_key(t.title or ""):
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
        raise SamctlError(
            f"{', '.join(pinned_named[:3])} {'is' if len(pinned_named) == 1 else 'are'} pinned in SAM; "
            "nothing was removed",
            hint="pass --include-pinned to remove pinned conversations too",
        )
    return sel


def matching(
    store,
    ids,
    older_than: float | None = None,
    empty: bool = False,
    title: str | None = None,
    include_pinned: bool = False,
    keep_last: int | None = None,
    attic_too: bool = False,
) -> set:
    """Which of ``ids`` (selected and confirmed before samctl's lock) the same selection still picks.

    Called under the lock: another samctl may have moved, purged or restored some while this one
    waited (or the app changed them).  Named ids must still be in the store (``attic_too``: or
    named by an attic entry, as purge takes them); filters are applied again.
    """
    store.forget_listing()
    in_store = set(store.all_ids())
    here = [cid for cid in ids if cid in in_store]
    out = set()
    if attic_too:
        named = atticmod.named_ids(store, atticmod.STATES)
        out = {cid for cid in ids if cid not in in_store and cid in named}
    if not here or (older_than is None and not empty and title is None and not keep_last):
        return out | set(here)
    sel = select(store, here, older_than, empty, title, include_pinned, keep_last)
    return out | {t.id for t in sel.targets}


def still_matching(report: Report, targets: list, again) -> list:
    """``targets`` that ``again(ids)`` (``matching``, under the lock) still picks; see ``gone_meanwhile``."""
    if again is None:
        return targets
    keep = gone_meanwhile(report, [t.id for t in targets], again([t.id for t in targets]))
    return [t for t in targets if t.id in keep]


def gone_meanwhile(report: Report, ids: list, keep: set) -> set:
    """``keep``; the ``ids`` not in it (taken by another samctl, or changed, while this one waited
    for the lock) are one info line of ``report``, which says so when nothing is left to do."""
    gone = [cid for cid in ids if cid not in keep]
    if gone:
        more = f" and {len(gone) - 3} more" if len(gone) > 3 else ""
        report.findings.append(
            Finding(
                "gone-meanwhile",
                ", ".join(gone[:3]) + more,
                f"{len(gone)} of the {len(ids)} confirmed conversation{'s' if len(ids) != 1 else ''} no longer "
                "match (moved or changed meanwhile: by another samctl while this one waited for the lock, by the app, "
                "or by settling an interrupted move first): "
                + ("left alone" if len(gone) < len(ids) else "nothing left to do"),
                INFO,
            )
        )
    return keep


def _target_without_meta(store, cid: str, findings: list) -> Target:
    """A Target for a conversation the listing does not show (message-less, or unreadable)."""
    local: list = []
    try:
        conv = store.load(cid, local)
    except (SamctlError, OSError):
        conv = None
    if conv is None:
        return Target(cid, "?")
    return Target.of(cid, conv.meta, len(conv.messages))


def _is_empty(store, cid: str, t: Target) -> bool:
    """SAM's "delete empty": no messages, not pinned, not using shared data; mermaid: a message-less snapshot."""
    if t.messages != 0:
        return False
    return store.empty_is_deletable(cid)


def preflight(store, sel: Selection, purge: bool = False, ignore_unreadable: bool = False) -> None:
    """Drop targets that cannot be moved (a scope in use, a symlink inside, ...), read-only.

    A file problem (a symlink or a special file inside) is a problem, named or
    found by a filter: an error in ``sel.problems`` (the others go on; exit 3).
    A rule that keeps it (a scope in use, a legacy-only conversation): named
    ids, the first is raised (nothing is done); filter results, each is moved
    to ``sel.skipped`` with the reason.
    """
    refs = topic_refs(store, [t.id for t in sel.targets], ignore_unreadable)
    in_store = sel.in_store if sel.in_store is not None else set(store.all_ids())
    ok = []
    for t in sel.targets:
        if t.id not in in_store or (purge and store.purge_takes_anything):
            ok.append(t)
            continue
        try:
            store.conversation_files(t.id, refs)
        except FileProblem as exc:
            verb = "purged" if purge else "moved"
            sel.problems.append(Finding(f"not-{verb}", t.id, f"{exc.message}; nothing was {verb}", ERROR, t.id))
            continue
        except SamctlError as exc:
            if sel.explicit:
                raise SamctlError(f"{exc.message}; nothing was changed", exc.hint) from None
            sel.skipped.append((t.id, exc.message))
            continue
        ok.append(t)
    sel.targets = ok


class Refs(dict):
    """``topic_refs``'s answer: scope -> users, and ``unreadable``, the conversations whose scope
    cannot be known (empty when the caller chose to ignore them); while there is one, a folder
    without conversation.json is never removed (``stores/sam/lifecycle.conversation_files``)."""

    unreadable: list = []


def keep_live(store, sel: Selection, force: bool = False) -> None:
    """Conversations a filter found that the app has open (``Store.live_sessions``) are kept and
    listed, as pinned ones are: an exclusion, not a problem (the exit code does not change).
    Named ones are left in: the move refuses them (exit 5) unless ``force``."""
    if force or sel.explicit or not sel.targets:
        return
    live = set(store.live_sessions([t.id for t in sel.targets]))
    sel.skipped += [(t.id, store.live_note()) for t in sel.targets if t.id in live]
    sel.targets = [t for t in sel.targets if t.id not in live]


def topic_refs(store, ids, ignore_unreadable: bool = False) -> Refs | None:
    """SAM: shared-topic scope -> the conversations whose memories live there (None for mermaid).

    Those in the store, and, for the ``ids`` whose folder is there (a scope
    only, or a conversation's own folder that is also a scope), the deleted and
    archived ones in the attic too: a conversation that can be restored needs
    its memories when it comes back.  ``ignore_unreadable`` (``--ignore-unreadable``):
    conversations that cannot be read do not stop a scope from going.
    """
    unreadable: list = []
    found = store.topic_refs(unreadable)
    if found is None:
        return None
    refs = Refs(found)
    refs.unreadable = [] if ignore_unreadable else unreadable
    scopes = {cid for cid in ids if filemodes.lstat(store.folder(cid)) is not None}
    if scopes:
        # a manifest naming its scope is parsed only if it names one of these (a byte search: an
        # attic of thousands costs reads, not parses); older ones, which do not say, always are
        needles = [cid.upper().encode() for cid in scopes]

        def may_use(data: bytes) -> bool:
            return b'"shared_topic"' not in data or any(x in data.upper() for x in needles)

        for e in atticmod.list_entries(store, [], atticmod.RESTORABLE, want_bytes=may_use):
            topic = e.extra["shared_topic"] if "shared_topic" in e.extra else _archived_topic(store, e)
            if topic in scopes:
                refs.setdefault(topic, set()).add(e.id)
    return refs


def _archived_topic(store, e: atticmod.Entry) -> str | None:
    """The scope named by the conversation.json inside ``e`` (manifests before 2026-11-30 do not
    say); None if the entry cannot be read (it cannot be restored either)."""
    name, found = f"{e.id}/conversation.json", []

    def sink(m, ti, chunks) -> bool:
        data = b"".join(chunks)
        if m.name == name:
            found.append(data)
        return True

    if not any(m.name == name for m in e.members) or tarscan.scan(e, sink, check_tar_first=True):
        return None
    return store.shared_topic(found[0]) if found else None


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
def _locked(store, report: Report, targets: list, force: bool, lock_wait: float, ignore_unreadable: bool, again):
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
    with _locked(store, report, targets, force, lock_wait, ignore_unreadable, again) as (targets, refs):
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


# --- copy: archive --copy -------------------------------------------------------------------


def keep(
    store,
    targets: list,
    *,
    dry_run: bool = False,
    force: bool = False,
    lock_wait: float = 0.0,
    now: float | None = None,
    ignore_unreadable: bool = False,
    again=None,
) -> Report:
    """Put a verified copy of each of ``targets`` in the attic as a *kept* entry, leaving the originals
    where they are (``archive --copy``).  A conversation whose files are as its newest kept entry holds
    them (names, sizes, and mtimes or else content) is not copied again (an ``unchanged`` item); a new
    copy, once committed, replaces its older kept entries.  The same journal, order and checks as a
    move, but nothing of the store is ever removed."""
    report = Report(dry_run=dry_run)
    if dry_run:
        changed, same, _ = _changed(store, targets, None)
        report.items += [dict(t.to_dict(), action="unchanged", entry=e.stem) for t, e in same]
        report.items += [dict(t.to_dict(), action="would be kept") for t in changed]
        report.findings += would_refuse(store, [t.id for t in changed], force)
        return report
    with _locked(store, report, targets, force, lock_wait, ignore_unreadable, again) as (targets, refs):
        changed, same, older = _changed(store, targets, refs)
        report.items += [dict(t.to_dict(), action="unchanged", entry=e.stem) for t, e in same]
        kept_too = {t.id: [e for e in older[t.id] if _shrunk(store, t.id, e, refs)] for t in changed}
        older = {cid: [e for e in es if e not in kept_too[cid]] for cid, es in older.items()}
        for cid, es in kept_too.items():
            for e in es:
                report.findings.append(
                    _shrank_finding(
                        cid, e, _shrunk(store, cid, e, refs), "the new copy is kept beside it; neither is dropped"
                    )
                )
        moved, failed = move_out_many(store, changed, KEPT, refs, now, drops=older)
        for t, exc in failed:
            why = reason(exc).replace("nothing was moved", "nothing was copied")
            report.findings.append(
                Finding(
                    "not-kept", t.id, why if "nothing was copied" in why else f"{why}; nothing was copied", ERROR, t.id
                )
            )
        for t, entry, _ in moved:
            report.items.append(
                dict(t.to_dict(), action=KEPT, entry=entry.stem, bytes=entry.original_size, stored=entry.tar_size)
            )
    return report


def _changed(store, targets: list, refs) -> tuple[list, list, dict]:
    """(targets to copy, [(target, its newest kept entry)] unchanged since that entry, id -> the kept
    entries a new copy replaces)."""
    kept: dict = {}
    for e in entries_of(store, [t.id for t in targets], (KEPT,)):
        kept.setdefault(e.id, []).append(e)
    changed, same, older = [], [], {}
    for t in targets:
        mine = kept.get(t.id, [])
        if mine and _same_files(store, t.id, mine[-1], refs):
            same.append((t, mine[-1]))
            continue
        changed.append(t)
        older[t.id] = mine
    return changed, same, older


SHRANK = "shrank-since-kept"  # the stable code of a conversation smaller or less complete than a kept copy


def _shrunk(store, cid: str, e: atticmod.Entry, refs=None) -> str | None:
    """How ``cid``'s files now hold less than kept entry ``e`` does (a file of it gone, or shorter), in
    words; None when they hold at least as much, or the conversation is gone from the store (what its
    kept copies are for).  A copy never replaces one it does not cover: a session cut short or emptied
    (a crash, a bad edit) must not cost the only full copy."""
    stats: dict = {}
    try:
        paths = store.conversation_files(cid, refs, stats)
    except (SamctlError, OSError):
        return None
    now = {tarzst.member_name(store, p): stats[p] for p in paths}
    for m in e.members:
        if m.type == "dir":
            continue
        st = now.get(m.name)
        if st is None:
            return f"{m.name} is gone"
        if st.st_size < m.size:
            return f"{m.name} has {st.st_size} bytes, {m.size} when kept"
    return None


def _shrank_finding(cid: str, e: atticmod.Entry, why: str, then: str) -> Finding:
    # (an error: a backup job's exit code must tell that a session lost what its copy holds)
    return Finding(SHRANK, cid, f"{cid} holds less than its kept copy {e.stem} ({why}); {then}", ERROR, cid)


def shrunk_since_kept(store) -> list:
    """A ``shrank-since-kept`` warning for each conversation of the store that holds less than one of its
    kept copies (``check`` says it: a session cut short while the copy still has it all)."""
    try:
        kept = atticmod.list_entries(store, [], (KEPT,))
    except (SamctlError, OSError):
        return []
    out, seen = [], set()
    for e in reversed(kept):  # (newest first: one warning per conversation, naming its newest copy it lacks)
        if e.id in seen:
            continue
        why = _shrunk(store, e.id, e)
        if why is not None:
            seen.add(e.id)
            out.append(
                _shrank_finding(
                    e.id,
                    e,
                    why,
                    said("the copy stays in the attic (`", Suggestion("attic --state kept"), "` lists it)"),
                )
            )
    return out


def _same_files(store, cid: str, e: atticmod.Entry, refs) -> bool:
    """True if ``cid``'s files are those of entry ``e``: the same names and sizes, and the same mtimes or
    else the same bytes (a file only touched is not copied again)."""
    stats: dict = {}
    try:
        paths = store.conversation_files(cid, refs, stats)
    except (SamctlError, OSError):
        return False  # (the copy says what is wrong)
    members = {m.name: m for m in e.members}
    names = {tarzst.member_name(store, p): p for p in paths}
    if names.keys() != members.keys():
        return False
    for n, p in names.items():
        m, st = members[n], stats[p]
        if m.type == "dir":
            if not stat.S_ISDIR(st.st_mode):
                return False
        elif (
            not stat.S_ISREG(st.st_mode)
            or st.st_size != m.size
            or (st.st_mtime_ns != m.mtime_ns and sha256_file(p) != m.sha256)
        ):
            return False
    return True


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
