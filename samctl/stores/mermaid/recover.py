"""Plan the recovery of one mermaid session (mermaid.md §4.4, §6, §10 "recover").

A snapshot that loads is authoritative: the fold replaces it only when strictly newer and holding every
message; a message-less fold is never a source; what cannot be fixed raises LeftUnfixed (exit 3).

Design notes: docs/recovery.md, "stores/mermaid/recover.py".
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson

from samctl import errors
from samctl.errors import FileProblem, NotFound, SamctlError, UsageError
from samctl.fs import filemodes, reading
from samctl.model import NothingToRecover, RecoveryPlan, refuse_over_cap
from samctl.said import Suggestion, said
from samctl.stores import dupkeys
from samctl.stores import logtail as tailfix
from samctl.stores.base import Caps
from samctl.stores.mermaid import checks, decode, encode, eventlog, structs


class NeverPersisted(NotFound):
    """No snapshot and a log that folds to no messages: mermaid never wrote this session (mermaid.md §5)."""


class LeftUnfixed(SamctlError):
    """Nothing to write, but problems recover cannot fix remain (DESIGN: partial)."""

    exit_code = errors.PARTIAL


def _read_conflict(store, cid: str, use) -> tuple[dict, list[str]]:
    """The document a ``--use`` file holds, and notes on how it was read."""
    p = Path(use)
    notes = []
    try:
        if p.name.endswith(".jsonl"):  # a 0.26+ diverted log: a complete log, backfilled (mermaid.md §9)
            read = eventlog.read_log_file(p, store.caps.log)
            doc = eventlog.fold(read.events) if read.usable else None
            if doc is None or not doc["messages"]:
                raise UsageError(
                    f"{use}: not a log mermaid would fold: {read.reason if doc is None else 'it folds to no messages'}"
                )
            if read.stop is not None:
                notes.append(f"{p.name}: {read.reason} (its events up to there are used)")
        else:
            doc = orjson.loads(reading.read_capped(p, store.caps.snapshot))
        decode.check_snapshot(doc)
    except FileProblem as exc:
        raise UsageError(f"{use}: {exc.message}") from None
    except (orjson.JSONDecodeError, decode.Rejected) as exc:
        raise UsageError(f"{use}: not a snapshot mermaid would load: {str(exc)[:120]}") from None
    if doc["id"] != cid:
        raise UsageError(f"{use} holds session {doc['id'][:40]}, not {cid}")
    return doc, notes


def _diff_lines(old: dict | None, new: dict) -> list[str]:
    """Messages gained and lost, counted as multisets (a changed message is one lost, one gained);
    one instant written in another offset is no change (``checks.as_instants``)."""
    if old is None:
        return [f"snapshot rebuilt with {len(new['messages'])} messages"]
    a = Counter(orjson.dumps(m, option=orjson.OPT_SORT_KEYS) for m in checks.as_instants("messages", old["messages"]))
    b = Counter(orjson.dumps(m, option=orjson.OPT_SORT_KEYS) for m in checks.as_instants("messages", new["messages"]))
    out = []
    if b - a:
        out.append(f"+{sum((b - a).values())} messages not in the old document")
    if a - b:
        out.append(f"-{sum((a - b).values())} messages no longer in the new document")
    for k in sorted(set(old) | set(new)):
        if (
            k != "messages"
            and old.get(k) != new.get(k)
            and checks.as_instants(k, old.get(k)) != checks.as_instants(k, new.get(k))
        ):
            out.append(f"{k} changed")
    return out


def inputs(store, cid: str, use=None) -> list:
    """Every path ``plan_recovery`` may read (the folder too: a file added to it changes its mtime)."""
    paths = [store.conv_dir, *(store.path(cid, ext) for ext in ("json", "jsonl", "meta"))]
    return paths + ([Path(use)] if use is not None else [])


def plan_recovery(store, cid: str, use=None) -> RecoveryPlan:
    snap_path = store.path(cid, "json")
    log_path = store.path(cid, "jsonl")
    meta_path = store.path(cid, "meta")
    findings: list = []
    current_bytes = None
    snap = None
    if store.caps.snapshot < Caps().snapshot:  # a cap lowered below mermaid's own: mermaid reads the file
        refuse_over_cap(snap_path, store.caps.snapshot, "mermaid")
    if filemodes.lstat(snap_path) is not None:
        snap = store.read_snapshot(snap_path, findings, stem_must_match=True)
        if snap is not None and snap["id"] != cid:
            snap = None
        if snap is not None:
            current_bytes = reading.read_capped(snap_path, store.caps.snapshot)
    plan = RecoveryPlan(
        cid=cid,
        target=snap_path,
        source=str(snap_path),
        new_bytes=None,
        messages_before=len(snap["messages"]) if snap else None,
    )
    plan.changes += [f"snapshot unusable: {f.code}: {f.reason}" for f in findings]
    repeated = structs.repeated_fields(current_bytes, "snapshot") if current_bytes is not None else []
    if repeated:  # mermaid refuses the file; samctl read it keeping the last of each: written back so
        plan.changes.append(
            f"snapshot: {dupkeys.say(repeated)}, which mermaid refuses: rewritten with the last value of each"
        )
    unfixed: list[str] = []
    read = None
    if filemodes.lstat(log_path) is not None:
        try:
            read = eventlog.read_log_file(log_path, store.caps.log)
        except FileProblem as exc:
            unfixed.append(f"log unusable: {exc.message}")
    if read is not None:
        if read.stop == "torn-tail":
            plan.tail = tailfix.plan(log_path, read)
            plan.changes.append(f"log: {read.reason}")
            plan.change_in_place(
                "log tail: "
                + (
                    "newline added to the complete last line"
                    if read.tail_complete
                    else f"{read.size - read.last_newline_offset} torn bytes cut (kept in a .torn file)"
                )
            )
        unfixed += [f"log stays broken: {f.reason}" for f in checks.log_findings(cid, log_path, read)]
    broken = bool(unfixed)
    folded = eventlog.fold(read.events) if read is not None and read.usable else None
    if folded is not None and folded["id"] != cid:
        folded = None  # another session's log (log-id-mismatch, listed above)

    if use is not None:
        doc, notes = _read_conflict(store, cid, use)
        plan.source = str(use)
        plan.changes += notes
    elif snap is None and (folded is None or not folded["messages"]):
        if folded is not None and filemodes.lstat(snap_path) is None:
            raise NeverPersisted(
                f"nothing to recover for {cid}: there is no snapshot and its log folds to no "
                "messages; mermaid never persists a message-less session, so nothing is lost"
            )
        if folded is not None:
            plan.changes.append("log: it folds to no messages")
        raise NothingToRecover(
            f"nothing to recover {cid} from: " + "; ".join(plan.changes + unfixed or ["no snapshot and no log"]),
            hint="if you have a copy (a .conflict file or a backup), pass it with --use PATH",
        )
    elif snap is None:
        doc, plan.source = folded, f"{log_path} (folded)"
    elif folded is None:
        doc = snap
    else:
        doc, kept = _merge(snap, folded, read.events)
        if kept and not broken:  # a log read that stopped early explains the difference already
            unfixed.append(kept)
        if doc is not snap:
            plan.source = f"{log_path} (folded)"
    if doc is not snap or repeated:
        if doc is not snap:
            plan.changes += _diff_lines(snap, doc)
        new = encode.snapshot_bytes(doc)
        if new != current_bytes:
            plan.new_bytes = new
    plan.messages_after = len(doc["messages"])
    try:
        meta_now = reading.read_capped(meta_path, store.caps.other)
    except FileProblem:
        meta_now = None
    meta = encode.meta_bytes(encode.meta_dict(doc, checks.sidecar_title(meta_now)))
    if meta_now != meta and doc["messages"]:
        plan.sidecars.append((meta_path, meta))
        plan.change_in_place(".meta sidecar rebuilt")
    plan.changes += unfixed
    plan.partial = unfixed
    if unfixed and plan.nothing_to_do:
        raise LeftUnfixed(
            f"left {cid} as it is: " + "; ".join(unfixed),
            hint=(
                said(
                    "samctl never rewrites an event log; `",
                    Suggestion("log", cid),
                    "` shows its events and where mermaid stops reading: what lies beyond, and every later "
                    "append, is invisible to a fold (docs/formats/mermaid.md §4.4)",
                )
                if broken
                else said(
                    "mermaid 0.25 loads the snapshot (docs/formats/mermaid.md §0.1); `",
                    Suggestion("log", cid),
                    "` shows what the log holds",
                )
            ),
        )
    return plan


def _instant(ts: str):
    """(seconds, nanoseconds) of an RFC 3339 string (``checks.instant``), None for anything else: exact,
    where a float would tie distinct nanoseconds."""
    t = checks.instant(ts)
    return t if type(t) is tuple else None


def _message_key(m: dict) -> tuple:
    """(role, instant, text): what makes a message the same one in the snapshot and the fold."""
    role = m.get("role")
    return (role if role in eventlog.ROLES else "System", checks.instant(m.get("timestamp")), m.get("content"))


def _same_record(a, b) -> bool:
    """One compaction record, saved twice: the same id (later builds may drop fields, mermaid.md §3)."""
    if type(a) is dict and type(b) is dict and type(a.get("id")) is str:
        return a.get("id") == b.get("id")
    return a == b


def _merge(snap: dict, folded: dict, events: list) -> tuple[dict, str | None]:
    """(the document to keep, why the snapshot was kept over a fold that differs from it, else None)."""
    keys = checks.diverged_keys(folded, snap, events)
    if not keys:
        return snap, None
    t_snap, t_fold = _instant(snap["updated_at"]), _instant(folded["updated_at"])
    # Messages of the snapshot the fold lacks, ignoring later actions on them (role, time, text).
    lost = sum((Counter(map(_message_key, snap["messages"])) - Counter(map(_message_key, folded["messages"]))).values())
    if (
        lost
        and t_snap is not None
        and any(e["event"]["type"] in ("compaction", "reset") and _instant(e["event"]["at"]) > t_snap for e in events)
    ):
        lost = 0  # replaced after the snapshot was saved: the originals are earlier lines of the log
    why = []
    if not folded["messages"]:
        why.append("folds to no messages (mermaid never persists a message-less session, docs/formats/mermaid.md §5)")
    # Equal updated_at keeps the snapshot: in 0.25.0 it is authoritative (mermaid.md §0.1), and a log can
    # lack events the snapshot has, since a failed append is only a warning before the save (mermaid.md §4.3).
    if t_snap is None or t_fold is None or t_fold <= t_snap:
        why.append("is not newer than the snapshot")
    if lost:
        why.append(f"lacks {lost} message{'s' if lost > 1 else ''} the snapshot has")
    if why:
        return snap, (
            f"snapshot kept: the log's fold {' and '.join(why)}; it differs from the snapshot on "
            f"{', '.join(keys[:6])} and stays so"
        )
    doc = dict(folded)
    for k, v in snap.items():
        if k not in folded:
            doc[k] = v  # keys of newer builds (usage_by_model, ...)
    if "checkpoint_seq" in snap:
        # A 0.26+ checkpoint: "the last log seq folded into it" (mermaid.md §9); resume replays the events
        # after it, so the old watermark would apply them twice. On a gapless log the last seq is
        # the highest; the highest is the safe choice otherwise (no folded event is replayed).
        doc["checkpoint_seq"] = max(e["seq"] for e in events)
    backfilled = len(events) > 1 and events[1]["event"]["type"] == "reset"
    if backfilled and isinstance(snap.get("compactions"), list):
        # The log began after the snapshot's earlier compactions (mermaid.md §4.3): keep those records, then the
        # log's own (which a snapshot saved after them holds too, once).
        older = [r for r in snap["compactions"] if not any(_same_record(r, x) for x in folded["compactions"])]
        doc["compactions"] = older + folded["compactions"]
    return doc, None
