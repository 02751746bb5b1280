"""archive --copy: a verified copy of each conversation kept in the attic while the originals stay, and
the check that a conversation still holds what its kept copies hold (``shrunk_since_kept``).

Design notes: docs/attic.md, "attic/lifecycle.py".
"""

from __future__ import annotations

import stat

from samctl.attic import entries as atticmod
from samctl.attic import tarzst
from samctl.attic.journal import sha256_file
from samctl.attic.lifecycle import KEPT, entries_of, move_out_many, reason, under_lock
from samctl.attic.targets import Report
from samctl.errors import SamctlError
from samctl.lock import would_refuse
from samctl.model import ERROR, Finding
from samctl.said import Suggestion, said


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
    with under_lock(store, report, targets, force, lock_wait, ignore_unreadable, again) as (targets, refs):
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
