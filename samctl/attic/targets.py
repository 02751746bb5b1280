"""What rm, archive and purge act on: the conversations a command picks (``select``, and again under the
lock: ``matching``), those it must leave (``preflight``, ``keep_live``), the shared-topic scopes their
memories live in (``topic_refs``), and the report a command returns.  Read-only: nothing here writes.

Design notes: docs/attic.md, "attic/lifecycle.py".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from samctl.attic import entries as atticmod
from samctl.attic import tarscan
from samctl.errors import FileProblem, SamctlError, UsageError
from samctl.fs import filemodes
from samctl.model import ERROR, INFO, Finding, last_activity, recency, title_key
from samctl.said import Suggestion, said
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
