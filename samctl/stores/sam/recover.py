"""Plan the recovery of one SAM conversation (sam.md §5.2, §5.4, §5.7, §14 "recover").

Sources, in the spec's order: the file itself (decoded message by message
when it no longer parses, so one bad message no longer loses the whole
conversation), ``conversation.json.tmp`` (SAM writes it non-atomically, so it
may be truncated), the migrated legacy backups
``conversations/backups/conversations_migrated_*.json`` (newest first), and an
export package the user names with ``--from``.  The first source that yields a
conversation is the base; later sources add only the messages (by id) it
lacks.  The result then goes through ``repair.repair_conversation`` and is
written in SAM's strict form (``encode.conversation_bytes``).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from samctl.errors import FileProblem, SamctlError, UsageError
from samctl.fs import filemodes, reading
from samctl.model import NothingToRecover, RecoveryPlan, refuse_over_cap
from samctl.stores import dupkeys
from samctl.stores.sam import encode, repair, schema


def _msg_id(m) -> str | None:
    return m.get("id").upper() if isinstance(m, dict) and isinstance(m.get("id"), str) else None


def _from_file(path: Path, cap: int, notes: list, label: str):
    """``(doc or None, parsed)`` for a conversation.json-like file: ``parsed`` is True when the
    file is a JSON object with a message array as it stands, False when ``doc`` was salvaged from
    it piece by piece (its messages, at least)."""
    try:
        data = reading.read_capped(path, cap)
    except FileProblem as exc:
        if exc.code != "missing":
            notes.append(f"{label}: {exc.message}")
        return None, False
    try:
        doc = orjson.loads(data)
        if isinstance(doc, dict):
            if "messages" in doc and isinstance(doc["messages"], list):
                repeated = dupkeys.anywhere(data) if label == "conversation.json" else []
                if repeated:  # (SAM may refuse it: the file is written again, the last value of each kept)
                    notes.append(f"{label}: {dupkeys.say(repeated)}; rewritten with the last value of each")
                return doc, not repeated
            # valid JSON without its array: a damaged key ("messagfs") leaves the elements in the text
            msgs = repair.salvage_messages(data)
            if not msgs:
                return doc, True
            notes.append(f"{label}: no message array; salvaged {len(msgs)} messages piece by piece")
            return dict(doc, messages=msgs), False
        notes.append(f"{label}: top level is not an object")
    except orjson.JSONDecodeError as exc:
        why = (
            "holds a number beyond the range of a Double"
            if str(exc).startswith("number is infinity")
            else "not valid JSON"
        )
    else:
        why = "not valid JSON"
    text = data.decode("utf-8", errors="replace")
    top = repair.salvage_top_level(text)
    if repair.looks_like_message(top):  # no top-level key line survived: these are a message's keys
        notes.append(f"{label}: none of the conversation's own fields survived (id, title, dates are rebuilt)")
        top = {}
    msgs = repair.salvage_messages(text)
    if not top and not msgs:
        notes.append(f"{label}: nothing could be salvaged")
        return None, False
    doc = dict(top)
    doc["messages"] = msgs
    notes.append(f"{label}: {why}; salvaged {len(msgs)} messages piece by piece")
    return doc, False


def _from_backups(conv_dir: Path, cid: str, cap: int, notes: list):
    out = []
    backups = conv_dir / "backups"
    try:
        names = sorted(
            (p for p in backups.iterdir() if p.name.startswith("conversations_migrated_") and p.name.endswith(".json")),
            reverse=True,
        )
    except OSError:
        return out
    for p in names:
        try:
            arr = orjson.loads(reading.read_capped(p, cap))
        except (FileProblem, orjson.JSONDecodeError):
            notes.append(f"{p.name}: unreadable legacy backup, skipped")
            continue
        for d in arr if isinstance(arr, list) else ():
            if isinstance(d, dict) and isinstance(d.get("id"), str) and d["id"].upper() == cid:
                out.append((str(p), d))
    return out


def _from_package(path, cid: str, cap: int) -> dict | None:
    try:
        pkg = orjson.loads(reading.read_capped(Path(path), cap))
    except FileProblem as exc:
        raise UsageError(f"{path}: {exc.message}") from None
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"{path}: not a SAM export package (not JSON: {str(exc)[:80]})") from None
    packages = (
        pkg.get("conversations") if isinstance(pkg, dict) and isinstance(pkg.get("conversations"), list) else [pkg]
    )
    for p in packages:
        conv = p.get("conversation") if isinstance(p, dict) else None
        if isinstance(conv, dict) and isinstance(conv.get("id"), str) and conv["id"].upper() == cid:
            return conv
    if not any(isinstance(p, dict) and "conversation" in p for p in packages):
        raise UsageError(f"{path}: not a SAM export package (no formatVersion/conversation)")
    raise UsageError(f"{path} does not contain conversation {cid}")


def inputs(store, cid: str, from_file=None) -> list:
    """Every path ``plan_recovery`` may read (folders too: a file added to one changes its mtime)."""
    folder, backups = store.folder(cid), store.conv_dir / "backups"
    paths = [folder, *_entries(folder), backups, *_entries(backups), store.conv_dir / "conversations.json"]
    return paths + ([Path(from_file)] if from_file is not None else [])


def _entries(folder: Path) -> list:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def plan_recovery(store, cid: str, from_file=None) -> RecoveryPlan:
    folder = store.folder(cid)
    target = folder / "conversation.json"
    cap = store.caps.snapshot
    refuse_over_cap(target, cap, "SAM")  # (SAM reads a file of any size)
    notes: list = []
    sources: list = []
    current, parsed = _from_file(target, cap, notes, "conversation.json")
    if current is not None:
        sources.append((str(target), current))
    tmp_path = folder / "conversation.json.tmp"
    tmp, tmp_whole = _from_file(tmp_path, cap, notes, "conversation.json.tmp")
    if tmp is not None:
        # SAM writes the .tmp, then swaps it in (sam.md §5.2): a whole one is the save that did not
        # make it, newer than the file; a cut one only adds the messages the file lacks
        sources.insert(0 if tmp_whole else len(sources), (str(tmp_path), tmp))
    sources += _from_backups(store.conv_dir, cid, cap, notes)
    legacy = (
        store.legacy_docs([]).get(cid)
        if filemodes.lstat(target) is not None and store.parse_file(target)[0] is None
        else None
    )
    if legacy is not None:  # what SAM shows while the file does not decode (sam.md §5.3), and show/search too
        sources.append((str(store.conv_dir / "conversations.json"), legacy))
    if from_file is not None:
        sources.append((str(from_file), _from_package(from_file, cid, cap)))
    if not sources:
        raise NothingToRecover(
            f"nothing to recover {cid} from: " + ("; ".join(notes) or "no file"),
            hint="give a SAM export package with --from FILE",
        )
    base_src, base = sources[0]
    merged = dict(base)
    msgs = (
        [m for m in (base.get("messages") or []) if isinstance(m, dict)]
        if isinstance(base.get("messages"), list)
        else []
    )
    have = {_msg_id(m) for m in msgs}
    gained = []
    for src, doc in sources[1:]:
        extra = (
            [m for m in (doc.get("messages") or []) if isinstance(m, dict) and _msg_id(m) not in have]
            if isinstance(doc.get("messages"), list)
            else []
        )
        for m in extra:
            have.add(_msg_id(m))
        if extra:
            gained.append(f"+{len(extra)} messages from {Path(src).name}")
            msgs += extra
        for k, v in doc.items():  # fill top-level keys the base lost
            merged.setdefault(k, v)
    if gained:
        # SAM sorts by lastModified ?? timestamp on load (sam.md §4.5.1); do the same for added messages
        msgs.sort(key=lambda m: str(m.get("lastModified") or m.get("timestamp") or ""))
    if msgs or isinstance(base.get("messages"), list):
        merged["messages"] = msgs  # (else repair says what the base held instead of an array)
    st = filemodes.lstat(target)
    fixed, changes = repair.repair_conversation(
        merged,
        fallback_id=cid,
        fallback_title=_fallback_title(store, folder, msgs),
        fallback_epoch=st.st_mtime if st else None,
    )
    problems = [p for p in schema.validate_conversation(fixed) if p.severity == "error"]
    if problems:  # repair promises this never happens; refuse rather than write a file SAM skips
        raise SamctlError(f"could not make {cid} loadable: {problems[0].where}: {problems[0].reason}")
    plan = RecoveryPlan(
        cid=cid,
        target=target,
        source=base_src,
        new_bytes=None,
        messages_before=len(current["messages"]) if current and isinstance(current.get("messages"), list) else None,
        messages_after=len(fixed["messages"]),
    )
    plan.changes = notes + gained + changes
    # the file stays only if it parses as it is and holds exactly what was checked above (then it
    # loads: validation is a function of the JSON value); a salvaged one is not JSON, whatever it held
    if not parsed or _strict(current) is None or _strict(fixed) != _strict(current):
        plan.new_bytes = encode.conversation_bytes(fixed)
    if tmp is not None:  # what it held is in the document now: kept as a .bak, it no longer looks pending
        plan.set_aside.append(tmp_path)
        plan.change_in_place("conversation.json.tmp: kept as a .bak (its messages are in the document)")
    return plan


def _strict(doc) -> bytes | None:
    """A comparison that tells 128000.0 from 128000 (Python's == does not).

    None for a document no JSON text can hold (a lone surrogate salvaged by a
    lenient parser, nesting past orjson's limit): it never equals a repaired one.
    """
    try:
        return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError
        return None


def _fallback_title(store, folder: Path, msgs: list) -> str:
    """The title when the file lost it (it sorts after ``messages``, so a torn file loses it first):
    samctl's meta cache remembers it; else the first user message, as a person would name it."""
    title = store.cached_title(folder.name)
    if title:
        return title
    for m in msgs:
        if m.get("isFromUser") is True and isinstance(m.get("content"), str) and m["content"].strip():
            return " ".join(m["content"].split())[:50]
    return repair.DEFAULT_TITLE
