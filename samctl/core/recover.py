"""recover: bring back a conversation whose file is missing, corrupt, or behind its history.

The store plans (a RecoveryPlan); this carries it out so that a crash leaves the old or the new file
complete: a torn tail goes to a ``.torn`` sibling, the old file is kept as a ``.bak``, the new one is
written atomically.  ``--to`` and ``dry_run`` change nothing in the store.

Design notes: docs/recovery.md, "core/recover.py".
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from samctl.attic import journal as repair
from samctl.errors import NotFound, SamctlError, UsageError
from samctl.fs import faults, filemodes, reading, safepaths, syncing, writing
from samctl.lock import ensure_app_idle, store_lock, would_refuse
from samctl.model import WARNING, Finding, RecoveryPlan
from samctl.said import Suggestion, said
from samctl.stores import logtail as tail
from samctl.stores.resolve import resolve_id


def backup_path(target: Path, suffix: str = "bak") -> Path:
    return tail.sibling(target, suffix)


def _refuse_unless_file(path: Path) -> None:
    """Only a regular file (or nothing) is ever replaced: never a folder, a FIFO, a device or a symlink."""
    st = filemodes.lstat(path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise SamctlError(
            f"{path} is {filemodes.describe_mode(st.st_mode)}, not a file; samctl does not replace it, "
            "so nothing was written",
            hint=said("move it aside (see `", Suggestion("check"), "`), then recover again"),
        )


def execute(plan: RecoveryPlan, to: Path | None = None) -> RecoveryPlan:
    """Carry out ``plan`` (see the module docstring for the order)."""
    if to is None:
        if plan.new_bytes is not None:
            _refuse_unless_file(plan.target)
        for path in [p for p, _ in plan.sidecars] + plan.set_aside:
            _refuse_unless_file(path)
    if to is not None:
        dest = Path(to)
        data = plan.new_bytes if plan.new_bytes is not None else reading.read_capped(plan.target, 1 << 31)
        writing.write_atomic(dest, data)
        plan.written.append(dest)
        return plan
    if plan.tail is not None:
        torn = tail.apply(plan.tail)
        if torn is not None:
            plan.written.append(torn)
    if plan.new_bytes is not None:
        if filemodes.lstat(plan.target) is not None:
            try:
                old = reading.read_capped(plan.target, 1 << 31)
            except Exception:  # noqa: BLE001 - a FIFO or the like: nothing to keep
                old = None
            if old is not None:
                bak = backup_path(plan.target)
                faults.step("bak")
                writing.write_atomic(bak, old)
                plan.written.append(bak)
        writing.write_atomic(plan.target, plan.new_bytes)
        plan.written.append(plan.target)
    for path, data in plan.sidecars:
        writing.write_atomic(path, data)
        plan.written.append(path)
    for path in plan.set_aside:  # after the new file: a crash before this leaves it for the next recover
        bak = backup_path(path)
        writing.move_new(path, bak)
        os.chmod(bak, 0o600)
        syncing.fsync_dir(bak.parent)
        plan.written.append(bak)
    return plan


def destination(store, plan: RecoveryPlan, to) -> Path:
    """The file ``--to`` names (a folder gets the conversation's own file name); UsageError if it
    is inside the store, or through a symlink leads there (writing it would replace a conversation
    with no .bak, no lock and no check that the app is idle), or its folder does not exist.
    ``-`` is refused: elsewhere it means stdout, here it would make a file named ``-``."""
    if str(to) == "-":
        raise UsageError(
            "--to - would write a file named '-' (recover writes files, not stdout); nothing was written",
            hint="give a file or folder, e.g. --to /tmp/recovered.json (./- if you want that name)",
        )
    dest = Path(to)
    if dest.is_dir():
        dest = dest / plan.target.name
    if safepaths.is_inside(store.root_real, dest):
        raise UsageError(
            f"{dest} is inside the store ({store.conv_dir}); --to writes the recovered document "
            "elsewhere, so nothing was written",
            hint="give a path outside the store, or recover in place without --to",
        )
    if not dest.parent.is_dir():
        raise UsageError(
            f"{dest.parent} does not exist (or is not a folder); nothing was written",
            hint="create the folder first, or give one that exists",
        )
    return dest


def recover(
    store,
    text: str,
    *,
    dry_run: bool = False,
    to=None,
    use=None,
    from_file=None,
    force: bool = False,
    lock_wait: float = 0.0,
) -> RecoveryPlan:
    """Plan and (unless ``dry_run``) carry out the recovery of one conversation."""
    cid = resolve_id(store, text)
    source = store.recovery_source(use=use, from_file=from_file)
    stamps = _stamps(store.recovery_inputs(cid, source))  # before the plan reads them
    held = to is None and cid in repair.pending_ids(store)  # half moved: the move is settled first
    try:
        plan = store.plan_recovery(cid, source)  # read-only; errors surface before the lock
    except SamctlError as exc:
        if not held:
            raise
        if dry_run:
            exc.hint = said(
                "an interrupted move holds it: `",
                Suggestion("attic --repair"),
                "` finishes or undoes it; then try again",
            )
            raise
        plan = None  # (what a half-moved conversation lacks: planned again once the move is settled)
    if to is not None:
        to = destination(store, plan, to)
        plan.document_only()
    if plan is not None and (dry_run or (plan.nothing_to_do and to is None and not held)):
        if dry_run and to is None and not plan.nothing_to_do:  # (--to writes outside the store: nothing refuses)
            plan.warnings = would_refuse(store, [cid], force)
        if dry_run and held:
            plan.warnings.append(
                Finding(
                    "pending-move",
                    str(plan.target),
                    f"an interrupted move holds {cid}: the real "
                    "run finishes or undoes it first, which changes what there is to recover",
                    WARNING,
                    cid,
                )
            )
        return plan
    if to is not None:
        return execute(plan, to=to)
    ensure_app_idle(store, [cid], force)
    with store_lock(store, lock_wait):
        repaired, left = repair.settle_first(store)  # as every writing command does, before it reads what to write
        if cid in repair.pending_ids(store):
            raise SamctlError(
                f"an interrupted move of {cid} could not be settled; nothing was recovered",
                hint=said(
                    "`", Suggestion("attic"), "` says what is wrong; `", Suggestion("attic --repair"), "` tries again"
                ),
            )
        if plan is None or repaired or _stamps(store.recovery_inputs(cid, source)) != stamps:  # moved on
            try:
                plan = store.plan_recovery(cid, source)
            except SamctlError:  # (NotFound, or "nothing to recover")
                if not held or cid in set(store.all_ids()):
                    raise
                raise NotFound(
                    f"{cid} was on its way to the attic when a samctl was interrupted; that move is now "
                    "finished, so there is nothing in the store to recover",
                    hint=said("`", Suggestion("restore", cid), "` brings it back"),
                ) from None
        plan = execute(plan)
        plan.repaired, plan.warnings = repaired, plan.warnings + left
        return plan


def _stamps(paths: list) -> list:
    """What tells a changed file from an unchanged one without reading it (ctime too: a write
    that keeps the size and puts the mtime back still moves the ctime)."""
    out = []
    for p in paths:
        st = filemodes.lstat(p)
        out.append((str(p), None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)))
    return out
