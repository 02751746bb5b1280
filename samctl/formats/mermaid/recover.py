"""Plan the recovery of one mermaid session (spec §4.4, §6, §10 "recover").

Sources: the snapshot if it loads, the event-log fold, or a ``.conflict``
sibling the user names.  The snapshot is replaced by the fold when it is
missing, corrupt, or behind the log (the fold differs and is not older); a
backfilled log carries no earlier compaction records, so the snapshot's are
kept, and keys the fold does not know (newer builds) are carried over.
Output bytes are exactly what mermaid writes (encode.snapshot_bytes /
meta_bytes).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from samctl import fsafe
from samctl.core.recover import RecoveryPlan
from samctl.formats.mermaid import tail as tailfix
from samctl.core.timeparse import parse_timestamp
from samctl.errors import FileProblem, SamctlError, UsageError
from samctl.formats.mermaid import decode, encode, eventlog


class NothingToRecover(SamctlError):
    pass


def _read_conflict(store, cid: str, use) -> dict:
    p = Path(use)
    try:
        doc = orjson.loads(fsafe.read_capped(p, store.caps.snapshot))
        decode.check_snapshot(doc)
    except FileProblem as exc:
        raise UsageError(f"{use}: {exc.message}") from None
    except (orjson.JSONDecodeError, decode.Rejected) as exc:
        raise UsageError(f"{use}: not a snapshot mermaid would load: {str(exc)[:120]}") from None
    if doc["id"] != cid:
        raise UsageError(f"{use} holds session {doc['id'][:40]}, not {cid}")
    return doc


def _diff_lines(old: dict | None, new: dict) -> list[str]:
    if old is None:
        return [f"snapshot rebuilt with {len(new['messages'])} messages"]
    out = []
    a, b = old["messages"], new["messages"]
    common = 0
    for x, y in zip(a, b):
        if x != y:
            break
        common += 1
    if len(b) > common:
        out.append(f"+{len(b) - common} messages ({len(a)} -> {len(b)})")
    if len(a) > common:
        out.append(f"-{len(a) - common} messages no longer in the new document")
    for k in sorted(set(old) | set(new)):
        if k != "messages" and old.get(k) != new.get(k):
            out.append(f"{k} changed")
    return out


def plan_recovery(store, cid: str, use=None) -> RecoveryPlan:
    snap_path = store.path(cid, "json")
    log_path = store.path(cid, "jsonl")
    meta_path = store.path(cid, "meta")
    findings: list = []
    current_bytes = None
    snap = None
    if fsafe.lstat(snap_path) is not None:
        snap = store._read_snapshot(snap_path, findings, stem_must_match=True)
        if snap is not None and snap["id"] != cid:
            snap = None
        if snap is not None:
            current_bytes = fsafe.read_capped(snap_path, store.caps.snapshot)
    plan = RecoveryPlan(cid=cid, target=snap_path, source=str(snap_path), new_bytes=None,
                        messages_before=len(snap["messages"]) if snap else None)
    plan.changes += [f"snapshot unusable: {f.code}: {f.reason}" for f in findings]
    read = None
    if fsafe.lstat(log_path) is not None:
        try:
            read = eventlog.read_log_file(log_path, store.caps.log)
        except FileProblem as exc:
            plan.changes.append(f"log unusable: {exc.message}")
    if read is not None and read.stop is not None:
        plan.changes.append(f"log: {read.reason}")
        if read.stop == "torn-tail":
            plan.tail = tailfix.plan(log_path, read)
            plan.changes.append("log tail: " + ("newline added to the complete last line" if read.tail_complete
                                                else f"{read.size - read.last_newline_offset} torn bytes cut "
                                                     "(kept in a .torn file)"))
    folded = eventlog.fold(read.events) if read is not None and read.usable else None

    if use is not None:
        doc = _read_conflict(store, cid, use)
        plan.source = str(use)
    elif snap is None and folded is None:
        raise NothingToRecover(
            f"nothing to recover {cid} from: " + "; ".join(plan.changes or ["no snapshot and no log"]),
            hint="if you have a copy (a .conflict file or a backup), pass it with --use PATH")
    elif snap is None:
        doc, plan.source = folded, f"{log_path} (folded)"
    elif folded is None:
        doc = snap
    else:
        doc = _merge(snap, folded, read)
        if doc is not snap:
            plan.source = f"{log_path} (folded)"
    if doc is not snap:
        plan.changes += _diff_lines(snap, doc)
        new = encode.snapshot_bytes(doc)
        if new != current_bytes:
            plan.new_bytes = new
    plan.messages_after = len(doc["messages"])
    meta = encode.meta_bytes(encode.meta_dict(doc))
    try:
        meta_now = fsafe.read_capped(meta_path, store.caps.other)
    except FileProblem:
        meta_now = None
    if meta_now != meta and doc["messages"]:
        plan.sidecars.append((meta_path, meta))
        plan.changes.append(".meta sidecar rebuilt")
    return plan


def _merge(snap: dict, folded: dict, read) -> dict:
    """The fold when the snapshot is behind it; otherwise the snapshot itself."""
    common = set(snap) & set(folded)
    backfilled = len(read.events) > 1 and read.events[1]["event"]["type"] == "reset"
    skip = {"compactions"} if backfilled else set()
    if all(snap[k] == folded[k] for k in common - skip):
        return snap
    t_snap, t_fold = parse_timestamp(snap["updated_at"]), parse_timestamp(folded["updated_at"])
    if t_snap is not None and t_fold is not None and t_fold < t_snap:
        return snap  # the log is behind the snapshot: the snapshot stays authoritative (0.25.0)
    doc = dict(folded)
    for k, v in snap.items():
        if k not in folded:
            doc[k] = v  # keys of newer builds (checkpoint_seq, usage_by_model, ...)
    if backfilled and len(snap.get("compactions") or []) > len(folded["compactions"]):
        doc["compactions"] = snap["compactions"]
    return doc
