"""check: the read-only fsck of a whole store (``fix`` applies only safe fixes).

Returns every finding (it never stops at the first), sorted by path (stable:
one file's findings keep their order), and the list of changes made; the caller decides the exit code: PARTIAL if any finding is an error or
a warning, OK if there are none or only informational ones.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field

from samctl.attic import entries as attic
from samctl.lock import ensure_app_idle, store_lock
from samctl.model import WARNING
from samctl.said import Suggestion, said


@dataclass
class CheckReport:
    findings: list = field(default_factory=list)
    fixes: list = field(default_factory=list)

    @property
    def problems(self) -> list:
        return [f for f in self.findings if f.severity != "info"]

    def summary(self) -> dict:
        by_sev = Counter(f.severity for f in self.findings)
        by_code = Counter(f.code for f in self.findings)
        return {
            "errors": by_sev.get("error", 0),
            "warnings": by_sev.get("warning", 0),
            "info": by_sev.get("info", 0),
            "fixed": len(self.fixes),
            "by_code": dict(sorted(by_code.items())),
        }


def check(store, fix: bool = False, force: bool = False, lock_wait: float = 0.0) -> CheckReport:
    """Every finding of ``store``; with ``fix``, under samctl's lock, after making sure the owning
    app is not using the store (SAM running: Busy unless ``force``; a live mermaid session's
    files are left alone unless ``force``, each said so)."""
    from samctl.attic import journal as repair  # (lazy: not loaded by ls or --help)

    report = CheckReport()
    if not fix:
        report.fixes = store.check(report.findings)
        pending = repair.pending_moves(store)
    else:
        ensure_app_idle(store, (), force)  # before the lock: a refusal writes nothing
        with store_lock(store, lock_wait):
            ensure_app_idle(store, (), force)
            # interrupted moves first, as every writing command does: what is fixed is the settled store
            done, pending = repair.settle_first(store)
            report.fixes = [f"attic: {line}" for line in done]
            report.fixes += store.check(report.findings, fix=True, force=force)
            # (what settling had to leave; an unsafe attic folder is said once)
            pending += [f for f in repair.pending_moves(store) if f.code != "attic-unsafe"]
    report.findings += pending
    from samctl.attic.kept import shrunk_since_kept  # (lazy: as journal above)

    report.findings += shrunk_since_kept(store)
    _missing_scopes_in_attic(store, report.findings)
    mark_held(report.findings, {f.conversation for f in pending if f.code == "pending-move" and f.conversation})
    # in path order, not the folder's listing order: two runs (or two copies of a tree) diff cleanly
    report.findings.sort(key=lambda f: str(f.path))
    return report


def _missing_scopes_in_attic(store, findings: list) -> None:
    """A ``scope-missing`` scope (a shared memory scope a conversation names, not in the store) that the
    attic holds is a warning naming the way back; one it does not hold, the app starts empty."""
    missing = [f for f in findings if f.code == "scope-missing"]
    if not missing:
        return

    in_attic = attic.named_ids(store, attic.RESTORABLE)
    for f in missing:
        scope = os.path.basename(f.path)
        if scope in in_attic:
            f.severity = WARNING
            f.reason = said(
                f.reason, " but in the attic: `", Suggestion("restore", scope, store), "` brings its memories back"
            )
        else:
            f.reason += (
                f" and not in the attic: {store.app_name} starts it empty when it next stores a memory "
                "(memories it had, if any, are gone)"
            )


_RECOVER_ADVICE = re.compile(r"[;,]?\s*\(?(?:try )?`samctl recover [^`]*`[^;()]*\)?")


def mark_held(findings: list, held: set) -> None:
    """A conversation a pending move holds is half in the attic: its other findings are that
    move's traces, so they point at the move, not at ``recover`` (a rebuild the move would undo)."""
    for f in findings:
        if f.conversation in held and f.code != "pending-move" and "samctl recover" in f.reason:
            f.reason = (
                _RECOVER_ADVICE.sub("", f.reason) + " (an interrupted move holds this conversation: see pending-move)"
            )
