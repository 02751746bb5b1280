"""SAM's import/export packages (sam.md §10.1, §10.2): build them from the model, read them back.

Everything built here is what SAM's strict decoder accepts; a SAM conversation goes in as stored, a mermaid
session is converted; no I/O.

Design notes: docs/stores.md, "stores/sam/package.py".
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator

from samctl import __version__
from samctl.importance import importance
from samctl.stores.sam.encode import package_bytes
from samctl.stores.sam.schema import format_date, parse_date
from samctl.timeparse import parse_timestamp

FORMAT_VERSION = "1.0"

# Where ConversationData holds dates (sam.md §4.1-§4.4); "*" is every element of an array.
DATE_PATHS = (
    ("created",),
    ("updated",),
    ("messages", "*", "timestamp"),
    ("messages", "*", "lastModified"),
    ("performanceMetrics", "*", "timestamp"),
    ("settings", "telemetry", "lastUpdated"),
)


def sam_version() -> str:
    return f"samctl {__version__}"


def whole_second(value):
    """A SAM date string rewritten as whole-second UTC ``Z``; anything unparseable unchanged."""
    t = parse_date(value) if isinstance(value, str) else None
    if t is None:
        return value
    try:
        return format_date(t)
    except ValueError:
        return value


def _normalise(node, path: tuple) -> None:
    head, rest = path[0], path[1:]
    if head == "*":
        if isinstance(node, list):
            for item in node:
                _normalise(item, rest)
        return
    if not isinstance(node, dict) or head not in node:
        return
    if rest:
        _normalise(node[head], rest)
    else:
        node[head] = whole_second(node[head])


def _copy(value):
    """A deep copy of a JSON value, iterative so any nesting depth is fine (copy.deepcopy recurses)."""
    if not isinstance(value, (dict, list)):
        return value
    root = {} if isinstance(value, dict) else []
    stack = [(value, root)]
    while stack:
        src, dst = stack.pop()
        for k, v in src.items() if isinstance(src, dict) else enumerate(src):
            if isinstance(v, (dict, list)):
                new = {} if isinstance(v, dict) else []
                stack.append((v, new))
                v = new
            if isinstance(dst, dict):
                dst[k] = v
            else:
                dst.append(v)
    return root


def strict_conversation(doc: dict) -> dict:
    """A copy of a stored SAM ConversationData with every date in SAM's strict form."""
    out = _copy(doc)
    for p in DATE_PATHS:
        _normalise(out, p)
    if isinstance(out.get("id"), str):
        out["id"] = out["id"].upper()
    return out


# -- memories -------------------------------------------------------------------------------


def _field(row, *names):
    for n in names:
        if isinstance(row, dict):
            if n in row:
                return row[n]
        elif hasattr(row, n):
            return getattr(row, n)
    return None


def exported_memory(row) -> dict:
    """ExportedMemory (sam.md §10.1) of one memory.db row (a samctl.stores.sam.memorydb row or a dict).

    ``created_at`` in memory.db is ``yyyy-MM-dd'T'HH:mm:ss.SSS`` UTC without a zone
    (sam.md §7.3); the package wants a JSON date, so it becomes whole-second ``Z``.
    """
    created = _field(row, "created_at", "createdAt", "created")
    if isinstance(created, str) and parse_date(created) is None:
        created = created + "Z"  # the zone-less SQLite form is UTC
    elif isinstance(created, (int, float)) and not isinstance(created, bool):
        created = format_date(created)
    tags = _field(row, "tags")
    if isinstance(tags, str):
        tags = [t for t in tags.split(",")] if tags else []
    return {
        "id": str(_field(row, "id")).upper(),
        "content": _field(row, "content") or "",
        "contentType": _field(row, "content_type", "contentType") or "message",
        "importance": float(_field(row, "importance") or 0.0),
        "createdAt": whole_second(created),
        "tags": list(tags or []),
    }


def memories_sorted(rows: Iterable) -> list[dict]:
    """ExportedMemory dicts in ``getAllMemories`` order: ``created_at`` descending (sam.md §7.8)."""
    out = [exported_memory(r) for r in rows]
    out.sort(key=lambda m: m["createdAt"] or "", reverse=True)
    return out


# -- packages -------------------------------------------------------------------------------


def single_package(
    conversation: dict, memories: list | None, exported_at: str, version: str | None = None, folder: dict | None = None
) -> dict:
    pkg = {
        "formatVersion": FORMAT_VERSION,
        "exportedAt": exported_at,
        "samVersion": version or sam_version(),
        "conversation": conversation,
        "memories": list(memories or []),
    }
    if folder:
        pkg["folder"] = folder
    return pkg


def bulk_package(packages: list, exported_at: str, version: str | None = None) -> dict:
    return {
        "formatVersion": FORMAT_VERSION,
        "exportedAt": exported_at,
        "samVersion": version or sam_version(),
        "conversationCount": len(packages),
        "conversations": packages,
    }


def bulk_stream(
    package_chunks: Iterable[bytes], count: int, exported_at: str, version: str | None = None
) -> Iterator[bytes]:
    """The bytes of ``bulk_package`` written piece by piece, one encoded package at a time.

    ``package_chunks`` are ``package_bytes(single_package(...))`` outputs and ``count``
    their number.  The result is byte-identical to ``package_bytes(bulk_package(...))``
    (a test holds it to that), but only one conversation is in memory at once.
    """
    head = package_bytes(bulk_package([], exported_at, version))
    # head is {"conversationCount" : 0, "conversations" : [], "exportedAt" ...}: split at the array.
    marker = b'"conversations" : []'
    before, after = head.split(marker, 1)
    before = before.replace(b'"conversationCount" : 0', f'"conversationCount" : {count}'.encode(), 1)
    n = 0
    for chunk in package_chunks:
        yield (before + b'"conversations" : [\n') if n == 0 else b",\n"
        # Every newline in encoded JSON is structural (newlines in strings are escaped),
        # so indenting each line by two levels nests the package exactly as the encoder would.
        yield b"\n".join(b"    " + line for line in chunk.split(b"\n"))
        n += 1
    if n != count:
        raise ValueError(f"bulk package announced {count} conversations but got {n}")
    yield (before + marker + after) if n == 0 else (b"\n  ]" + after)


def read_package(data: bytes) -> list[dict]:
    """The single packages inside a SAM export file (bulk first, then single, as SAM's import).

    Raises ValueError("File is not a valid SAM conversation export") for anything else,
    including a bare conversation.json (sam.md §10.3).
    """
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise ValueError("File is not a valid SAM conversation export: not JSON") from None
    if not isinstance(doc, dict) or doc.get("formatVersion") is None:
        raise ValueError("File is not a valid SAM conversation export")
    if isinstance(doc.get("conversations"), list) and isinstance(doc.get("conversationCount"), int):
        pkgs = doc["conversations"]
    elif isinstance(doc.get("conversation"), dict):
        pkgs = [doc]
    else:
        raise ValueError("File is not a valid SAM conversation export")
    for p in pkgs:
        if not isinstance(p, dict) or not isinstance(p.get("conversation"), dict):
            raise ValueError("File is not a valid SAM conversation export: a package has no conversation")
        for key in ("formatVersion", "exportedAt", "samVersion"):
            if not isinstance(p.get(key), str):
                raise ValueError(f"File is not a valid SAM conversation export: {key} missing")
    return pkgs


# -- mermaid -> SAM ---------------------------------------------------------------------------


def _new_uuid() -> str:
    return str(uuid.uuid4()).upper()


def _date_of(msg_or_ts, fallback: str) -> str:
    t = parse_timestamp(msg_or_ts)
    if t is None:
        return fallback
    try:
        return format_date(t)
    except ValueError:
        return fallback


def default_settings(model: str) -> dict:
    """A new conversation's settings (sam.md §4.2), with the session's model."""
    return {
        "selectedModel": model,
        "temperature": 0.7,
        "topP": 1.0,
        "contextWindowSize": 8192,
        "enableReasoning": True,
        "enableTools": True,
        "thinkingEffort": "high",
        "scrollLockEnabled": True,
        "useSharedData": False,
        "draftMessage": "",
        "workspacePromptIds": [],
        "showingMemoryPanel": False,
        "showingWorkingDirectoryPanel": False,
        "showAdvancedParameters": False,
        "showingPerformanceMetrics": False,
    }


def _sam_message(
    new_id: str,
    type_: str,
    content: str,
    when: str,
    *,
    user: bool = False,
    tool: bool = False,
    pinned: bool = False,
    system_generated: bool = False,
    **extra,
) -> dict:
    m = {
        "id": new_id,
        "type": type_,
        "content": content,
        "timestamp": when,
        "lastModified": when,
        "isFromUser": user,
        "isToolMessage": tool,
        "isStreaming": False,
        "showReasoning": False,
        "isPinned": pinned,
        "isSystemGenerated": system_generated,
        "importance": importance(content, user) if type_ in ("user", "assistant") else (0.7 if user else 0.5),
    }
    m.update(extra)
    return m


def _arguments(arguments) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def from_mermaid(conv, new_uuid: Callable[[], str] = _new_uuid) -> dict:
    """A SAM ConversationData for a mermaid conversation (``samctl.model.Conversation``)."""
    created = _date_of(conv.meta.created, None) or _date_of(conv.meta.updated, "1970-01-01T00:00:00Z")
    updated = _date_of(conv.meta.updated, created)
    cid = new_uuid()
    messages: list[dict] = []
    users = 0
    for msg in conv.messages:
        when = _date_of(msg.timestamp, updated)
        if msg.role == "user":
            messages.append(
                _sam_message(
                    new_uuid(), "user", msg.content, when, user=True, pinned=users < 10, system_generated=msg.hidden
                )
            )
            users += 1
            continue
        if msg.reasoning:
            messages.append(
                _sam_message(
                    new_uuid(),
                    "thinking",
                    "",
                    when,
                    tool=True,
                    reasoningContent=msg.reasoning,
                    toolIcon="brain.head.profile",
                )
            )
        if msg.role == "tool":
            extra = {"toolStatus": "success"}
            if msg.tool_call_id:
                extra["toolCallId"] = msg.tool_call_id
            if msg.tool_name:
                extra["toolName"] = msg.tool_name
            messages.append(_sam_message(new_uuid(), "toolExecution", msg.content, when, tool=True, **extra))
        elif msg.role == "system":
            messages.append(_sam_message(new_uuid(), "systemStatus", msg.content, when, system_generated=msg.hidden))
        elif msg.content or msg.tool_calls:
            extra = {}
            if msg.tool_calls:
                extra["toolCalls"] = [
                    {
                        "id": tc.id or f"call_{uuid.uuid4().hex[:24]}",
                        "type": "function",
                        "function": {"name": tc.name, "arguments": _arguments(tc.arguments)},
                    }
                    for tc in msg.tool_calls
                ]
            messages.append(
                _sam_message(new_uuid(), "assistant", msg.content, when, system_generated=msg.hidden, **extra)
            )
    return {
        "id": cid,
        "title": conv.meta.title,
        "created": created,
        "updated": updated,
        "messages": messages,
        "settings": default_settings(conv.model or ""),
        "sessionId": cid,
        "isPinned": False,
        "isFromAPI": False,
        "enabledCustomInstructionIds": [],
        "performanceMetrics": [],
    }
