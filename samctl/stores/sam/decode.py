"""Lenient decoding of SAM's conversation.json into the neutral model.

Reads what SAM accepts and more (fractional dates, nulls, unknown keys, odd
types): whatever can be shown is shown.  Whether SAM itself would load the
file is a separate question answered by samctl.stores.sam.schema.
"""

from __future__ import annotations

import math
import time

from samctl.model import PARSE_LATER, ConversationMeta, Message, tool_calls_from_openai
from samctl.timeparse import format_utc, parse_timestamp


def _str(v, default=""):
    return v if isinstance(v, str) else default


def _bool(v):
    return v is True


_ROLE_OF_TYPE = {"toolExecution": "tool", "thinking": "reasoning", "systemStatus": "system"}


def role_of(m: dict) -> str:
    """sam.md §4.3 recommended mapping: user / tool / reasoning / assistant."""
    if m.get("isFromUser") is True:
        return "user"
    t = m.get("type")
    return _ROLE_OF_TYPE.get(t, "assistant") if isinstance(t, str) else "assistant"


def hidden_by_ui(m: dict) -> bool:
    """What SAM's UI hides (sam.md §10.4): system-generated turns and empty messages."""
    if m.get("isSystemGenerated") is True:
        return True
    content = _str(m.get("content"))
    lead = content.lstrip()
    if lead and lead[0] != "<":  # a first visible character no tag can hold: shown, without the replaces
        return False
    content = content.replace("<think>", "").replace("</think>", "").strip()
    if content:
        return False
    if m.get("type") == "toolExecution" or _bool(m.get("isToolMessage")) and m.get("type") != "thinking":
        return False
    if m.get("type") == "thinking" and _str(m.get("reasoningContent")).strip():
        return False
    if isinstance(m.get("contentParts"), list) and m["contentParts"]:
        return False
    return True


def message(m) -> Message | None:
    if not isinstance(m, dict):
        return None
    get = m.get  # (each field read once, without a helper call: this runs for every message of an export)
    content, ts, mid, kind = get("content"), get("timestamp"), get("id"), get("type")
    calls, call_id, name, status = get("toolCalls"), get("toolCallId"), get("toolName"), get("toolStatus")
    imp, reasoning, parts = get("importance"), get("reasoningContent"), get("contentParts")
    return Message(  # (by position, in MESSAGE_FIELDS order: keywords cost a tenth of an export)
        role_of(m),  # role
        content if isinstance(content, str) else "",  # content
        ts if isinstance(ts, str) else None,  # timestamp
        PARSE_LATER,  # timestamp_ts
        mid if isinstance(mid, str) else None,  # id
        tool_calls_from_openai(calls) if calls else [],  # tool_calls (nothing to read in a falsy value)
        call_id if isinstance(call_id, str) else None,  # tool_call_id
        name if isinstance(name, str) else None,  # tool_name
        status if isinstance(status, str) else None,  # tool_status
        reasoning if isinstance(reasoning, str) and reasoning else None,  # reasoning
        kind if isinstance(kind, str) else None,  # kind
        float(imp) if isinstance(imp, (int, float)) and not isinstance(imp, bool) else None,  # importance
        hidden_by_ui(m),  # hidden
        False,  # marker
        get("isPinned") is True,  # pinned
        [],  # actions
        content_parts(parts) if parts else [],  # attachments (likewise)
        m,  # raw
    )


def message_rows(msgs: list, conversation_id: str, include_hidden: bool) -> list[dict]:
    """The JSON line of each message an export shows (``Message.to_dict`` after the conversation's id,
    store and the place among the messages shown), made without a Message: what ``message`` and
    ``to_dict`` make, field for field and in the same order (a test holds the two paths together)."""
    rows = []
    for m in msgs:
        if not isinstance(m, dict):
            continue
        hidden = hidden_by_ui(m)
        if hidden and not include_hidden:
            continue
        get = m.get
        content, ts, mid, kind = get("content"), get("timestamp"), get("id"), get("type")
        d = {
            "conversation_id": conversation_id,
            "store": "sam",
            "seq": len(rows),
            "id": mid if isinstance(mid, str) else None,
            "role": role_of(m),
            "content": content if isinstance(content, str) else "",
            "timestamp": ts if isinstance(ts, str) else None,
            "kind": kind if isinstance(kind, str) else None,
        }
        v = get("toolCalls")
        if v:
            calls = tool_calls_from_openai(v)
            if calls:
                d["tool_calls"] = [{"id": t.id, "name": t.name, "arguments": t.arguments} for t in calls]
        for key, field in _OPTIONAL_TEXTS:
            v = get(key)
            if isinstance(v, str):
                d[field] = v
        v = get("reasoningContent")
        if isinstance(v, str) and v:
            d["reasoning"] = v
        v = get("importance")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            d["importance"] = float(v)
        v = get("contentParts")
        if v:
            v = content_parts(v)
            if v:
                d["attachments"] = v
        d["hidden"] = hidden
        d["pinned"] = get("isPinned") is True
        rows.append(d)
    return rows


_OPTIONAL_TEXTS = (("toolCallId", "tool_call_id"), ("toolName", "tool_name"), ("toolStatus", "tool_status"))


_PART_URL = {"image_url": "image", "video_url": "video", "audio_url": "audio"}


def content_parts(parts) -> list:
    """A message's ``contentParts`` (sam.md §4.4.1) as model attachments: what can be shown of each."""
    out = []
    for p in parts if isinstance(parts, list) else ():
        t = p.get("type") if isinstance(p, dict) else None
        if t == "text" and isinstance(p.get("text"), str):
            out.append({"type": "text", "text": p["text"]})
        elif t in _PART_URL:
            v = p.get(t)
            url = v.get("url") if isinstance(v, dict) else v  # ImageURL is an object, the others a string
            if isinstance(url, str):
                out.append({"type": _PART_URL[t], "url": url})
    return out


def shown_count(msgs) -> int:
    """The messages ``show`` prints of ``msgs`` (what ``ls`` counts): those ``message`` reads that SAM's UI
    does not hide."""
    return sum(1 for m in msgs if isinstance(m, dict) and not hidden_by_ui(m)) if isinstance(msgs, list) else 0


def meta(
    doc: dict, path: str, size: int, fallback_id: str, mtime: float | None = None, shown: int | None = None
) -> ConversationMeta:
    """``mtime``: the file's, which bounds its message times (``newest_message_ts``); ``shown``:
    ``shown_count`` of its messages, if the caller has it (a load decodes them anyway)."""
    msgs = doc.get("messages")
    created = doc.get("created") if isinstance(doc.get("created"), str) else None
    updated = doc.get("updated") if isinstance(doc.get("updated"), str) else None
    return ConversationMeta(
        store="sam",
        id=doc["id"].upper() if isinstance(doc.get("id"), str) else fallback_id,
        title=_str(doc.get("title"), "(untitled)"),
        created=created,
        updated=updated,
        created_ts=parse_timestamp(created),
        updated_ts=parse_timestamp(updated),
        message_count=shown_count(msgs) if shown is None else shown,
        size=size,
        pinned=_bool(doc.get("isPinned")),
        path=path,
        active_ts=newest_message_ts(msgs, (time.time() if mtime is None else mtime) + FUTURE_SLACK)
        if isinstance(msgs, list)
        else None,
        model=model_name(doc),
    )


FUTURE_SLACK = 86400.0  # seconds a message time may be later than its file's mtime (clocks disagree)


def newest_message_ts(msgs: list, ceiling: float) -> float | None:
    """The latest ``timestamp`` or ``lastModified`` of the messages up to ``ceiling``, in epoch
    seconds (None if none).  A time later than the file was written is a wrong clock, not activity:
    it would keep one conversation first in every listing.

    SAM's own form (``2026-08-10T14:02:11Z``) orders as text, so only the latest of those is
    parsed; any other form is parsed one by one (a cold ``ls`` reads every message of every
    conversation)."""
    plain, best = "", None
    limit = format_utc(math.floor(ceiling)) or "9999"  # (SAM's own form orders as text: compared as text)
    for m in msgs:
        if type(m) is not dict:
            continue
        for k in ("timestamp", "lastModified"):
            s = m.get(k)
            if type(s) is not str:
                continue
            if len(s) == 20 and s[19] == "Z" and s[10] == "T":
                if plain < s <= limit:
                    plain = s
                continue
            t = parse_timestamp(s)
            if t is not None and t <= ceiling and (best is None or t > best):
                best = t
    t = parse_timestamp(plain) if plain else None
    if t is not None and (best is None or t > best):
        best = t
    return best


def model_name(doc: dict) -> str | None:
    s = doc.get("settings")
    if isinstance(s, dict) and isinstance(s.get("selectedModel"), str):
        return s["selectedModel"]
    return None


def shared_topic_id(doc: dict) -> str | None:
    s = doc.get("settings")
    if isinstance(s, dict) and s.get("useSharedData") is True and isinstance(s.get("sharedTopicId"), str):
        return s["sharedTopicId"].upper()
    return None
