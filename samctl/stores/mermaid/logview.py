"""A mermaid session's event log as rows a person can read: seq, time, type, summary.

The reading itself (caps, prefix semantics, where and why it stopped) is ``eventlog``'s.
"""

from __future__ import annotations

from samctl.errors import NotFound
from samctl.fs import filemodes
from samctl.stores.mermaid import eventlog


def _words(text, n: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def summarize(event: dict, previous_state: dict | None = None) -> str:
    t = event.get("type")
    if t == "started":
        return f"session {event.get('session_id')} · {event.get('model_id')} · {_words(event.get('project_path'), 40)}"
    if t in ("message", "inserted_before_last"):
        m = event.get("message") or {}
        calls = m.get("tool_calls") or []
        extra = f" [+{len(calls)} tool call{'s' if len(calls) != 1 else ''}]" if calls else ""
        return f"{m.get('role')}: {_words(m.get('content', ''))}{extra}"
    if t == "action":
        a = event.get("action") or {}
        return f"{a.get('action_type')} {_words(a.get('target', ''), 40)}"
    if t == "image":
        return f"image ({len(event.get('data') or '')} base64 chars)"
    if t == "compaction":
        r = event.get("record") or {}
        return (
            f"archived {r.get('archived_message_count')} messages, kept {r.get('preserved_message_count')}"
            f" ({r.get('trigger')}, {r.get('before_tokens')} -> {r.get('after_tokens')} tokens)"
        )
    if t == "reset":
        return f"messages replaced: {len(event.get('messages') or [])}"
    if t == "state":
        if previous_state is None:
            return f"title {_words(event.get('title'), 40)!r} · {event.get('model_name')}"
        changed = sorted(
            k for k in set(event) | set(previous_state) if k != "type" and event.get(k) != previous_state.get(k)
        )
        return "changed: " + (", ".join(changed) if changed else "nothing")
    if t == "input":
        return f"prompt: {_words(event.get('text', ''))}"
    if t == "tasks":
        store = event.get("store") or {}
        return f"{len(store.get('tasks') or [])} tasks"
    return str(t)


def log_rows(store, cid: str, types: tuple = ()):
    """(path, rows, LogRead) for the log of conversation ``cid`` (NotFound when it has none)."""
    path = store.path(cid, "jsonl")
    if filemodes.lstat(path) is None:
        raise NotFound(f"conversation {cid} has no event log ({path.name})")
    read = eventlog.read_log_file(path, store.caps.log)
    rows = []
    last_state = None
    for env in read.events:
        ev = env["event"]
        summary = summarize(ev, last_state)
        if ev["type"] == "state":
            last_state = ev
        if types and ev["type"] not in types:
            continue
        rows.append({"seq": env["seq"], "ts": env["ts"], "type": ev["type"], "summary": summary, "event": ev})
    return path, rows, read
