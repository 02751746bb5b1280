"""What the browser's action keys do, through the same functions the commands call (never a copy of
their rules): export as ``samctl export`` does, move to the attic as ``samctl rm ID`` does (the
owning app idle, samctl's lock, a live session refused), restore as ``samctl restore`` does.
Each returns a short line for the status bar or raises ``SamctlError`` with the command's message.
"""

from __future__ import annotations

import os
import shlex

from samctl.errors import SamctlError, UsageError
from samctl.model import ERROR, Finding

# The attic and export modules (zstandard, the renderers) are imported by the action that needs them:
# the browser's first paint does not wait for them.


def export_one(store, cid: str, fmt: str, output: str) -> str:
    """``samctl export CID --to FMT -o OUTPUT`` on ``store``: the line it would print."""
    from samctl.core import export as core  # (lazy: at the first export)

    findings: list = []
    plan = core.plan_output(output, fmt, False, store)  # (refuses a path inside the app's folder)
    res = core.export(store, [cid], fmt, plan, findings)
    bad = [f for f in findings if f.severity == ERROR]
    if bad or not res.files:
        raise UsageError(bad[0].reason if bad else f"{cid} could not be exported; nothing was written")
    return f"exported {cid} as {fmt} to {res.destination}"


def default_output(cid: str, fmt: str) -> str:
    """Where an export goes unless the user types another path: the current folder, named by the id."""
    from samctl.core.export import EXTENSIONS  # (lazy: at the first export)

    return os.path.join(os.getcwd(), cid + EXTENSIONS[fmt])


def writable(store) -> bool:
    """Whether samctl may move this store's conversations (read-only stores: never)."""
    return not store.read_only


def move_to_attic(store, cid: str) -> str:
    """``samctl rm CID`` (confirmed): select, preflight, then ``lifecycle.remove``, which refuses while
    the app is using the store or the session is live (exit 5's message), and nothing moves."""
    from samctl.attic import entries as atticmod  # (lazy: at the first move)
    from samctl.attic import lifecycle, targets  # (lazy: as entries)

    if not writable(store):
        raise UsageError(f"{store.describe()}: samctl only reads it, and rm writes; nothing was done")
    sel = targets.select(store, [cid])
    targets.preflight(store, sel)
    targets.keep_live(store, sel)
    if not sel.targets:
        raise UsageError(f"{cid}: nothing to move; nothing was changed")

    def again(confirmed):  # under the lock, as rm: another samctl may have taken it meanwhile
        return targets.matching(store, confirmed)

    report = lifecycle.remove(store, sel.targets, "deleted", again=again)
    report.findings[:0] = sel.problems
    if report.failed:
        raise UsageError(report.failed[0].reason)
    if not report.items:
        raise UsageError(f"{cid} was not moved; nothing was changed")
    return f"moved {cid} to the attic ({atticmod.attic_dir(store)}); r in the attic view (a) restores it"


def attic_entries(stores: list, findings: list) -> list:
    """Every attic entry of the stores that have an attic, newest first, as (store, entry) pairs."""
    from samctl.attic import entries as atticmod  # (lazy: when the attic view opens)

    out = []
    for store in stores:
        if store.read_only:
            continue
        try:
            out += [(store, e) for e in atticmod.list_entries(store, findings)]
        except SamctlError as exc:
            findings.append(Finding("attic-unreadable", str(store.conv_dir), exc.message, ERROR))
    out.sort(key=lambda se: se[1].when_ts, reverse=True)
    return out


def restore_entry(store, entry) -> str:
    """``samctl restore --entry STEM``: the entry's conversation back exactly, or the command's refusal."""
    from samctl.attic import restore  # (lazy: at the first restore)

    report = restore.restore_many(store, [entry])
    if report.failed:
        raise UsageError(report.failed[0].reason)
    return f"restored {entry.id} from {entry.stem}"


def resume_command(store, cid: str) -> str:
    """The command that resumes the conversation in its app, as ``samctl resume`` prints it, where the
    store declares one; else the samctl command that shows it."""
    from samctl.core.load import load_resolved  # (lazy: only the copy loads a conversation)
    from samctl.core.resume import resume_line  # (lazy: as above)

    conv = load_resolved(store, cid, [])
    if conv is not None and conv.resume:
        return resume_line(conv.resume)
    return f"samctl --root {shlex.quote(str(store.conv_dir))} show {cid}"
