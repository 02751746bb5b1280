"""fsck of a mermaid conversations folder (mermaid.md §10 "verify").

Keeps going after every problem.  Without ``fix`` nothing is written and no
file is opened for writing.  With ``fix`` only safe repairs are made: modes
tightened to 0600/0700 and ``.meta`` sidecars rebuilt from their snapshot,
byte-compatible with mermaid's own.
"""

from __future__ import annotations

import os
import shlex
import stat
import time

import orjson

from samctl.errors import FileProblem
from samctl.fs import filemodes, reading, writing
from samctl.model import ERROR, INFO, WARNING, Finding
from samctl.said import Suggestion, said
from samctl.stores import dupkeys, treecheck, workers
from samctl.stores.mermaid import decode, eventlog, structs
from samctl.stores.mermaid.decode import CONFLICT_RE, MERMAID_ID_RE, TMP_RE, Rejected, short_reason
from samctl.stores.mermaid.envelope import parse_rfc3339

_SAMCTL_LEFTOVER = (".torn", ".bak")


def check_tree(store, findings: list, fix: bool, force: bool = False) -> list[str]:
    """Every finding of the store; with ``fix``, the safe fixes, never to the files of a session
    mermaid has open (its scratch lock held) unless ``force``: those are reported instead."""
    fixes: list[str] = []
    live: dict[str, bool] = {}

    def fixing(cid: str) -> bool:
        if not fix or force:
            return fix
        if cid not in live:
            live[cid] = store.session_is_live(cid)
            if live[cid]:
                findings.append(
                    Finding(
                        "skipped-live",
                        str(store.path(cid, "json")),
                        "mermaid has this session open: check --fix left its files alone",
                        INFO,
                        cid,
                    )
                )
        return not live[cid]

    root = store.conv_dir
    treecheck.root(store, findings, fixes, fix)
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        findings.append(Finding("unreadable", str(root), f"cannot list the folder: {exc.strerror}"))
        return fixes
    by_id: dict[str, dict[str, os.DirEntry]] = {}
    now = time.time()
    for e in entries:
        p = e.path
        try:
            st = e.stat(follow_symlinks=False)
        except OSError as exc:
            findings.append(Finding("unreadable", p, f"cannot stat: {exc.strerror}"))
            continue
        if stat.S_ISLNK(st.st_mode):
            treecheck.symlink(store.root_real, p, findings)
            continue
        m = CONFLICT_RE.match(e.name)
        if m:  # before the id rule: a 0.26+ ``<id>.<pid>.<n>.conflict.jsonl`` ends in .jsonl too
            what = (
                "a 0.26+ writer's diverted log (docs/formats/mermaid.md §9): compare it, then adopt its fold"
                if m.group(2)
                else "a concurrent writer's diverted copy: compare it, then adopt it"
            )
            use = Suggestion("recover", m.group(1), rest=f"--use {shlex.quote(p)}")
            findings.append(Finding("conflict", p, said(f"{what} with `", use, "` or remove it"), WARNING, m.group(1)))
            treecheck.mode(p, st, findings, fixes, fix)
            continue
        stem, _, ext = e.name.rpartition(".")
        if ext in ("json", "meta", "jsonl") and MERMAID_ID_RE.match(stem):
            by_id.setdefault(stem, {})[ext] = (p, st)
            if not stat.S_ISREG(st.st_mode):
                findings.append(
                    Finding(
                        "not-regular", p, f"is {filemodes.describe_mode(st.st_mode)}, not a file", conversation=stem
                    )
                )
            else:
                treecheck.mode(p, st, findings, fixes, fixing(stem), stem)
            continue
        if ext in ("json", "meta", "jsonl") and stem and not stem.startswith("."):
            findings.append(Finding("bad-id", p, f"{stem[:40]!r} is not a valid id ({store.id_rule})"))
            continue
        m = TMP_RE.match(e.name)
        if m:
            age = now - st.st_mtime
            if age >= writing.STALE_TMP_SECONDS:
                findings.append(
                    Finding("stale-tmp", p, f"temp file left by an interrupted write {int(age)} s ago", WARNING)
                )
            continue
        if e.name.endswith(_SAMCTL_LEFTOVER):
            findings.append(
                Finding(
                    "samctl-backup",
                    p,
                    said("a copy samctl keeps (recover, check --fix); `", Suggestion("compact"), "` removes it later"),
                    INFO,
                )
            )
            treecheck.mode(p, st, findings, fixes, fix)
            continue
        findings.append(Finding("unknown-file", p, "not a file mermaid writes; left alone", INFO))
    ids = sorted(by_id)
    if fix:
        for cid in ids:
            _check_conversation(store, cid, by_id[cid], findings, fixes, fixing(cid))
        return fixes
    # without --fix every session is only read: in worker processes when there are many
    sessions = [(cid, by_id[cid]) for cid in ids]
    for found in workers.ordered_items(
        store, _check_read_only, sessions, PARALLEL_MIN_PARTS * CHECK_CHUNK, CHECK_CHUNK
    ):
        findings.extend(found)
    return fixes


CHECK_CHUNK = 64  # sessions per unit of work handed to a worker process
PARALLEL_MIN_PARTS = 8  # fewer sessions than 8 units of work: checked here, no worker processes


def _check_read_only(store, session: tuple) -> list:
    """The findings of one session ``(id, {ext: (path, lstat)})``, checked without fixing."""
    found: list = []
    _check_conversation(store, *session, found, [], False)
    return found


def _check_conversation(store, cid: str, files: dict, findings: list, fixes: list, fix: bool) -> None:
    snap = files.get("json")
    meta = files.get("meta")
    log = files.get("jsonl")
    doc = None
    if snap and stat.S_ISREG(snap[1].st_mode):
        local: list = []
        doc = store.read_snapshot(snap[0], local, strict=True)
        for f in local:
            f.conversation = cid
        findings.extend(local)
        if doc is not None and not doc["messages"]:
            findings.append(
                Finding(
                    "empty", snap[0], "has no messages: mermaid never writes such a file and skips it", WARNING, cid
                )
            )
    if doc is not None and doc["id"] != cid:
        doc = None  # the snapshot names another id: a sidecar built from it would be wrong too
    if meta and stat.S_ISREG(meta[1].st_mode):
        _check_meta(store, cid, meta[0], snap, doc, findings, fixes, fix)
    elif doc is not None and doc["messages"] and not meta:
        if fix:
            fixes.append(_write_meta(store, cid, doc))
        else:
            findings.append(
                Finding(
                    "meta-missing", snap[0], "no .meta sidecar: listing must parse the whole snapshot", WARNING, cid
                )
            )
    if log and stat.S_ISREG(log[1].st_mode):
        _check_log(store, cid, log[0], doc, findings, fixes, fix, hidden=not snap and not meta)


def _write_meta(store, cid: str, doc: dict, old: bytes | None = None) -> str:
    """Rebuild a sidecar from the snapshot (``old``: the sidecar's bytes, whose unredacted title stays)."""
    from samctl.stores.mermaid import encode  # (lazy: not loaded by ls or --help)

    path = store.path(cid, "meta")
    writing.write_atomic(path, encode.meta_bytes(encode.meta_dict(doc, sidecar_title(old))))
    return f"{path}: rebuilt from the snapshot"


def sidecar_title(data: bytes | None):
    """The title in a sidecar's bytes, or None if they hold none."""
    try:
        m = orjson.loads(data) if data is not None else None
    except orjson.JSONDecodeError:
        return None
    return m.get("title") if type(m) is dict else None


def _check_meta(store, cid, p, snap, doc, findings, fixes, fix) -> None:
    try:
        data = reading.read_capped(p, store.caps.other)
        m = orjson.loads(data)
        decode.check_meta(m)
        found = structs.repeated_fields(data, "meta", m)
        if found:
            raise Rejected(f"{dupkeys.say(found)} (serde refuses a repeated field)")
    except FileProblem as exc:
        findings.append(Finding(exc.code, p, exc.message, conversation=cid))
        return
    except (orjson.JSONDecodeError, Rejected) as exc:
        if doc is not None and fix:
            fixes.append(_write_meta(store, cid, doc, data))
        else:
            findings.append(
                Finding("bad-meta", p, f"mermaid cannot read this sidecar: {short_reason(exc)}", conversation=cid)
            )
        return
    if snap is None:
        findings.append(
            Finding(
                "meta-orphan",
                p,
                said(
                    "sidecar without a snapshot: mermaid still lists it, but loading fails unless the log folds (try `",
                    Suggestion("recover", cid),
                    "`)",
                ),
                conversation=cid,
            )
        )
        return
    if doc is None:
        return  # the snapshot's own finding says why
    from samctl.stores.mermaid import encode  # (lazy: not loaded by ls or --help)

    want = encode.meta_dict(doc)
    diffs = [k for k in want if k != "title" and m.get(k) != want[k]]
    if m.get("id") != cid:
        diffs.insert(0, "id")
    if diffs:
        if fix:
            fixes.append(_write_meta(store, cid, doc, data))
        else:
            findings.append(
                Finding("meta-stale", p, f"sidecar disagrees with the snapshot on {', '.join(diffs)}", WARNING, cid)
            )


def _check_log(store, cid, p, doc, findings, fixes, fix, hidden: bool) -> None:
    """The log's own problems, then how its fold compares with the snapshot ``doc``.

    ``hidden``: the session has neither ``.json`` nor ``.meta``, so mermaid 0.25's
    listing and ``--continue`` never show it (mermaid.md §6).
    """
    try:
        read, data = eventlog.read_log_bytes(p, store.caps.log)
    except FileProblem as exc:
        findings.append(Finding(exc.code, p, exc.message, conversation=cid))
        return
    if read.stop == "torn-tail":
        from samctl.stores import logtail as tail  # (lazy: not loaded by ls or --help)

        if fix and not store.session_is_live(cid):
            torn = tail.apply(tail.plan(p, read))
            fixes.append(f"{p}: torn tail " + (f"cut (bytes kept in {torn})" if torn else "terminated with a newline"))
        else:
            live = (
                " (not trimmed: mermaid has the session open)"
                if fix
                else said(" (`", Suggestion("recover", cid), "` trims it)")
            )
            findings.append(Finding("log-torn-tail", p, said(read.reason, live), WARNING, cid))
    findings.extend(log_findings(cid, p, read))
    dup = _repeated_in_log(data, read)
    if dup:
        findings.append(
            Finding(
                "log-duplicate-key",
                p,
                f"{dup}: mermaid stops reading the log there (serde refuses "
                "a repeated field), so a recovery from the log ends before it",
                ERROR,
                cid,
            )
        )
    if not read.usable or (doc is None and not hidden):
        return
    folded = eventlog.fold(read.events)
    if folded is None:
        return
    if hidden and folded["messages"] and folded["id"] == cid:
        # A warning, not an error: nothing is corrupt or lost (the log folds, mermaid still loads
        # it by id, mermaid.md §6 "Recovery", and 0.26+ lists it, mermaid.md §9), but 0.25 never shows it. A log
        # without messages is no finding: message-less sessions are never persisted (mermaid.md §5).
        findings.append(
            Finding(
                "log-only",
                p,
                said(
                    f"the log holds {len(folded['messages'])} messages but there is "
                    "neither a snapshot nor a sidecar, so mermaid does not list this session; `",
                    Suggestion("recover", cid),
                    "` rebuilds them",
                ),
                WARNING,
                cid,
            )
        )
    if doc is None:
        return
    keys = diverged_keys(folded, doc, read.events)
    if keys:
        detail = ", ".join(keys[:6])
        if "messages" in keys:
            detail += f" (log has {len(folded['messages'])} messages, snapshot {len(doc['messages'])})"
        findings.append(
            Finding("log-diverged", p, f"the log's fold differs from the snapshot on {detail}", WARNING, cid)
        )


def _repeated_in_log(data: bytes, read) -> str | None:
    """Where the first line mermaid reads has a field repeated in one of its structs, else None.
    ``data``: the log's bytes, ``read`` their parse.  The lines are parsed again only when the
    colon count says a key may repeat (check only)."""
    if not read.events:
        return None
    text = eventlog.events_text(read, data)
    if not dupkeys.may_repeat(text, read.events, lines=True):
        return None
    lines = text.split(b"\n", len(read.events))[: len(read.events)]
    if structs.repeated_fields(b"[" + b",".join(lines) + b"]", "any") == []:
        return None
    offset = 0
    for n, line in enumerate(lines):
        found = structs.repeated_fields(line, "line")
        if found:
            return f"line {n + 1} at byte {offset}: {dupkeys.say(found)}"
        offset += len(line) + 1
    return None


def log_findings(cid: str, p, read) -> list:
    """What is wrong with a read log itself, apart from a torn tail (which recover and
    ``check --fix`` cut): where reading stopped, a foreign first event, a seq that is not
    ``0..N-1`` (mermaid.md §10 "verify")."""
    out = []
    if read.stop not in (None, "torn-tail"):
        sev = WARNING if read.stop == "too-large" else ERROR
        out.append(Finding(f"log-{read.stop}", str(p), read.reason, sev, cid))
    events = read.events
    if not events:
        return out
    first = events[0].get("event", {})
    if first.get("type") == "started" and first.get("session_id") != cid:
        out.append(
            Finding(
                "log-id-mismatch",
                str(p),
                f"first event names session {str(first.get('session_id'))[:40]!r}",
                conversation=cid,
            )
        )
    for i, env in enumerate(events):
        if env.get("seq") != i:
            out.append(
                Finding("log-seq-gap", str(p), f"line {i + 1} has seq {env.get('seq')}, expected {i}", conversation=cid)
            )
            break
    return out


def diverged_keys(folded: dict, doc: dict, events: list) -> list[str]:
    """The top-level keys on which a log's fold and a snapshot differ (sorted).

    Only keys both have: a snapshot may carry keys of newer builds (checkpoint_seq,
    usage_by_model) that no event produces. A backfilled log (its second event a
    ``reset``) cannot carry earlier compaction records, so ``compactions`` is not
    compared then (mermaid.md §4.3, §10).
    """
    skip = {"compactions"} if len(events) > 1 and events[1].get("event", {}).get("type") == "reset" else set()
    return sorted(
        k
        for k in set(folded) & set(doc) - skip
        if folded[k] != doc[k] and as_instants(k, folded[k]) != as_instants(k, doc[k])
    )


def instant(value):
    """The instant an RFC 3339 string names, ``(seconds, nanoseconds)``; anything else as it is."""
    if type(value) is not str:
        return value

    t = parse_rfc3339(value)
    return value if t is None else t[:2]


def _with_instant(item, key: str):
    return dict(item, **{key: instant(item[key])}) if type(item) is dict and key in item else item


def as_instants(key, value):
    """``value``, the document's field ``key``, with its chrono timestamps as the instants they name:
    mermaid re-saves each one it loaded in the reader's offset (mermaid.md §2.7), so after a time-zone or
    daylight-saving change the snapshot and the log write one instant two ways.  Only mermaid's own
    DateTime fields (the document's created_at and updated_at, each message's timestamp, each
    compaction's created_at): metadata, tool arguments and the like are JSON values mermaid writes
    verbatim, where another offset is another value."""
    if key in ("created_at", "updated_at"):
        return instant(value)
    if key in ("messages", "compactions") and type(value) is list:
        inner = "timestamp" if key == "messages" else "created_at"
        return [_with_instant(x, inner) for x in value]
    return value
