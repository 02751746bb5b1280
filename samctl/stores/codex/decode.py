"""Codex CLI rollouts (docs/formats/codex.md) as samctl's model.

``decode_rollout`` is a plain function (bytes in, Conversation and findings out), for every generation:
G0 (the TypeScript CLI's one JSON document), G1 (early Rust: a bare SessionMeta line, then bare response
items and ``record_type`` markers), G2/G3 (``{timestamp, type, payload}`` lines; G3 is G2 compressed, which
the store undoes).  Invariants:
- never raises on file content; what it cannot use is a Finding, the rest still reads;
- user and assistant text is shown once: from the ``event_msg`` stream (what the person typed, what the
  agent said) when the file has one, else from the ``response_item`` messages; the injected context
  (``samctl.injected.CODEX``) is kept hidden either way (``show --all``);
- tool calls and results come from the response items, joined by ``call_id``;
- turns that ``thread_rolled_back`` dropped stay, hidden (``show --all``); unknown record, item and event
  types are shown as such (hidden) with an info finding.
"""

from __future__ import annotations

import re

import orjson

from samctl.injected import CODEX, first_typed
from samctl.model import INFO, WARNING, Conversation, ConversationMeta, Finding, Message, ToolCall
from samctl.stores.jsonlines import compact, parse_lines
from samctl.stores.values import as_list, as_text
from samctl.timeparse import parse_timestamp

STORE = "codex"
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
NAME_RE = re.compile(
    r"rollout-(.+)-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"\.(jsonl|jsonl\.zst|json)\Z"
)

_QUIET_EVENTS = {
    "token_count",
    "task_started",
    "task_complete",
    "turn_started",
    "turn_complete",
    "context_compacted",
    "agent_reasoning_raw_content",
    "agent_reasoning_section_break",
    "entered_review_mode",
    "exited_review_mode",
    "undo_completed",
    "patch_apply_end",
    "image_generation_end",
    "item_completed",
    "error",
    "exec_command_end",
    "mcp_tool_call_end",
    "web_search_end",
    "view_image_tool_call",
    "plan_update",
    "session_configured",
    "warning",
    "stream_error",
    "background_event",
    "thread_goal_updated",
    "thread_settings_applied",
    "realtime_conversation_closed",
    "sub_agent_activity",
}
# events of Codex's Extended persistence mode named by family: collaboration tools (collab_agent_spawn_end,
# collab_waiting_end, ...) and dynamic tools (dynamic_tool_call_request, ..._end); their calls and results
# are also response items, so the events add nothing to show
_QUIET_EVENT_FAMILIES = (("collab_", "_end"), ("dynamic_tool_call_", ""))
_QUIET_ITEMS = {
    "ghost_snapshot",
    "compaction",
    "compaction_summary",
    "compaction_trigger",
    "context_compaction",
    "additional_tools",
}


def _str(v) -> str | None:
    return v if isinstance(v, str) else None


def decode_rollout(
    data: bytes,
    path: str,
    cid: str,
    *,
    index_title: str | None = None,
    size: int | None = None,
    fresh: bool = False,
    line_cap: int | None = None,
) -> tuple[Conversation, list[Finding]]:
    """The thread in ``data`` (file ``path``, id ``cid``) and what could not be read of it.
    ``index_title``: the thread's name in ``session_index.jsonl``, if any (it wins)."""
    findings: list = []
    records = _records(data, path, cid, findings, fresh, line_cap)
    d = _Decoder(path, cid, findings)
    has_events = any(
        t == "event_msg" and isinstance(p, dict) and p.get("type") in ("user_message", "agent_message")
        for _, t, p in records
    )
    d.events_reasoning = any(
        t == "event_msg" and isinstance(p, dict) and p.get("type") == "agent_reasoning" for _, t, p in records
    )
    d.events = has_events
    for ts_text, t, p in records:
        d.record(ts_text, t, p)
    d.flush_reasoning()
    for kind, n in d.unknown.items():
        findings.append(
            Finding(
                "unknown-type",
                path,
                f"{n} record{'s' if n != 1 else ''} of unknown type {kind[:80]!r} kept (shown with --all)",
                INFO,
                cid,
            )
        )
    msgs = d.messages
    first_user = first_typed(m.content for m in msgs if m.role == "user" and not m.hidden)
    title = index_title or d.thread_name or first_user or "(untitled)"
    times = d.times
    created = (
        (parse_timestamp(d.start), d.start)
        if d.start and parse_timestamp(d.start) is not None
        else (min(times) if times else (None, None))
    )
    updated = max(times) if times else created
    meta = ConversationMeta(
        STORE,
        cid,
        " ".join(title.split())[:200] or "(untitled)",
        created[1],
        updated[1],
        created[0],
        updated[0],
        sum(1 for m in msgs if not m.hidden),
        len(data) if size is None else size,
        False,
        path,
    )
    meta.project, meta.branch = thread_place(d.session_meta)
    meta.model = d.model
    raw = {
        "session_meta": d.session_meta,
        "records": [{"timestamp": ts, "type": t, "payload": p} for ts, t, p in records],
    }
    return Conversation(meta=meta, messages=msgs, raw=raw, model=d.model, source=path), findings


def _records(data: bytes, path, cid, findings, fresh, line_cap) -> list[tuple]:
    """``(timestamp, type, payload)`` of every record, whatever the generation (G1 and G0 items are given
    the type ``response_item``, a G1 first line ``session_meta``)."""
    if path.endswith(".json"):
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            findings.append(
                Finding("bad-json", path, f"not valid JSON ({str(exc).splitlines()[0][:120]})", WARNING, cid)
            )
            return []
        if isinstance(doc, dict) and ("items" in doc or "session" in doc):  # G0 (TypeScript CLI)
            session = doc.get("session") if isinstance(doc.get("session"), dict) else {}
            out = [(_str(session.get("timestamp")), "session_meta", session)]
            items = doc.get("items") if isinstance(doc.get("items"), list) else []
            return out + [(None, "response_item", it) for it in items]
        if not isinstance(doc, dict):
            findings.append(Finding("not-object", path, "the document is not a JSON object", WARNING, cid))
            return []
        findings.append(
            Finding("unknown-shape", path, "a .json rollout without session/items; read as one line", WARNING, cid)
        )
        data = orjson.dumps(doc) + b"\n"
    rows = parse_lines(data, path, findings, line_cap=line_cap, fresh=fresh, conversation=cid)
    out = []
    for i, (n, obj) in enumerate(rows):
        if "payload" in obj and isinstance(obj.get("type"), str):
            out.append((_str(obj.get("timestamp")), obj["type"], obj["payload"]))
        elif i == 0 and "id" in obj and "type" not in obj:  # G1 first line: a bare SessionMeta
            out.append((_str(obj.get("timestamp")), "session_meta", obj))
        elif "record_type" in obj and "type" not in obj:  # G1 state marker
            continue
        elif isinstance(obj.get("type"), str):  # G1 bare response item
            out.append((_str(obj.get("timestamp")), "response_item", obj))
        else:
            out.append((_str(obj.get("timestamp")), f"?line {n}", obj))
    if out and out[0][1] != "session_meta":
        findings.append(
            Finding(
                "no-session-meta",
                path,
                "the first record is not session_meta (Codex would not list this file); read anyway",
                WARNING,
                cid,
            )
        )
    return out


class _Decoder:
    def __init__(self, path, cid, findings):
        self.path, self.cid, self.findings = path, cid, findings
        self.messages: list = []
        self.times: list = []
        self.unknown: dict = {}
        self.tool_names: dict = {}
        self.turn_starts: list = []
        self.reasoning: list = []
        self.session_meta = None
        self.thread_name = None
        self.start = None
        self.model = None
        self.events = False
        self.events_reasoning = False

    def _add(self, m: Message) -> Message:
        if self.reasoning and m.role == "assistant":
            m.reasoning = "\n\n".join(self.reasoning)
            self.reasoning = []
        self.messages.append(m)
        return m

    def flush_reasoning(self) -> None:
        if self.reasoning:
            self.messages.append(Message("assistant", "", reasoning="\n\n".join(self.reasoning), kind="reasoning"))
            self.reasoning = []

    def _unknown(self, what: str, ts_text, ts, obj) -> None:
        self.unknown[what] = self.unknown.get(what, 0) + 1
        self.messages.append(
            Message(
                "system",
                f"[unknown {what[:80]}] {compact(obj)}",
                ts_text,
                ts,
                kind=f"unknown:{what[:80]}",
                hidden=True,
                raw=obj,
            )
        )

    def record(self, ts_text, t, p) -> None:
        ts = parse_timestamp(ts_text) if ts_text else None
        if ts is not None:
            self.times.append((ts, ts_text))
        if not isinstance(p, dict):
            self._unknown(f"{t} payload ({type(p).__name__})", ts_text, ts, p)
            return
        if t == "session_meta":
            if self.session_meta is None:
                self.session_meta = p
                self.start = _str(p.get("timestamp"))
                origin = _origin(p)
                if origin:
                    self.messages.append(Message("system", origin, ts_text, ts, kind="origin", raw=p))
            return
        if t == "turn_context":
            self.model = _str(p.get("model")) or self.model
            return
        if t == "compacted":
            self.flush_reasoning()
            self._add(
                Message(
                    "system",
                    "context compacted: " + (_str(p.get("message")) or ""),
                    ts_text,
                    ts,
                    kind="compacted",
                    raw=p,
                )
            )
            return
        if t == "response_item":
            self.item(p, ts_text, ts)
            return
        if t == "event_msg":
            self.event(p, ts_text, ts)
            return
        self._unknown(f"record {t}", ts_text, ts, p)

    def item(self, p, ts_text, ts) -> None:
        it = p.get("type") if isinstance(p.get("type"), str) else f"<{type(p.get('type')).__name__}>"
        if it == "message":
            role = _str(p.get("role")) or "?"
            text, atts = _content(p.get("content"))
            context = role == "user" and text.lstrip().startswith(CODEX)
            if role in ("user", "assistant") and self.events and not context:
                return  # shown from the event stream; the injected context is not there, so it is kept here
            if role == "user":
                m = self._add(
                    Message(
                        "user",
                        text,
                        ts_text,
                        ts,
                        _str(p.get("id")),
                        kind="context" if context else None,
                        hidden=context,
                        attachments=atts,
                        raw=p,
                    )
                )
                if not context:
                    self.turn_starts.append(len(self.messages) - 1)
            elif role == "assistant":
                self._add(
                    Message(
                        "assistant",
                        text,
                        ts_text,
                        ts,
                        _str(p.get("id")),
                        attachments=atts,
                        raw=p,
                        kind=_str(p.get("phase")),
                    )
                )
            else:  # developer, system: instructions the person did not type
                self._add(Message("system", text, ts_text, ts, _str(p.get("id")), kind=role[:40], hidden=True, raw=p))
        elif it == "reasoning":
            if self.events_reasoning:
                return
            parts = []
            for key in ("summary", "content"):
                part = p.get(key)
                for s in part if isinstance(part, list) else []:
                    if isinstance(s, dict) and isinstance(s.get("text"), str):
                        parts.append(s["text"])
            if parts:
                self.reasoning.append("\n".join(parts))
            elif p.get("encrypted_content"):
                self.reasoning.append("[encrypted reasoning]")
        elif it in (
            "function_call",
            "custom_tool_call",
            "local_shell_call",
            "web_search_call",
            "tool_search_call",
            "image_generation_call",
        ):
            cid = _str(p.get("call_id"))
            name = _str(p.get("name")) or {
                "local_shell_call": "local_shell",
                "web_search_call": "web_search",
                "tool_search_call": "tool_search",
                "image_generation_call": "image_generation",
            }.get(it, "?")
            if it == "function_call":
                args = p.get("arguments")
            elif it == "custom_tool_call":
                args = p.get("input")
            elif it == "tool_search_call":
                args = p.get("arguments")
            elif it == "image_generation_call":
                args = {"revised_prompt": p.get("revised_prompt")}
            else:
                args = p.get("action")
            if cid:
                self.tool_names[cid] = name
            m = Message(
                "assistant", "", ts_text, ts, _str(p.get("id")), tool_calls=[ToolCall(cid, name, args)], kind=it, raw=p
            )
            if it == "image_generation_call" and isinstance(p.get("result"), str):
                m.attachments.append({"type": "image", "bytes": len(p["result"]) * 3 // 4})
            self._add(m)
        elif it in ("function_call_output", "custom_tool_call_output", "tool_search_output"):
            cid = _str(p.get("call_id"))
            text, atts, status = _output(p.get("output") if it != "tool_search_output" else p.get("tools"))
            m = self._add(
                Message(
                    "tool",
                    text,
                    ts_text,
                    ts,
                    tool_call_id=cid,
                    tool_name=self.tool_names.get(cid),
                    tool_status=status,
                    attachments=atts,
                    raw=p,
                )
            )
            unwrap_envelope(m)
        elif it in _QUIET_ITEMS:
            return
        else:
            self._unknown(f"response item {it}", ts_text, ts, p)

    def event(self, p, ts_text, ts) -> None:
        et = p.get("type") if isinstance(p.get("type"), str) else f"<{type(p.get('type')).__name__}>"
        if et == "user_message":
            text = _str(p.get("message")) or ""
            atts = [{"type": "image", "url": u} for u in as_list(p.get("images")) if isinstance(u, str)]
            atts += [{"type": "image", "url": u} for u in as_list(p.get("local_images")) if isinstance(u, str)]
            self.flush_reasoning()
            self._add(Message("user", text, ts_text, ts, attachments=[_short_url(a) for a in atts], raw=p))
            self.turn_starts.append(len(self.messages) - 1)
        elif et == "agent_message":
            self._add(Message("assistant", _str(p.get("message")) or "", ts_text, ts, kind=_str(p.get("phase")), raw=p))
        elif et == "agent_reasoning":
            if isinstance(p.get("text"), str):
                self.reasoning.append(p["text"])
        elif et == "thread_name_updated":
            self.thread_name = _str(p.get("thread_name")) or self.thread_name
        elif et == "thread_rolled_back":
            n = p.get("num_turns")
            if isinstance(n, int) and not isinstance(n, bool) and n > 0 and self.turn_starts:
                n = min(n, len(self.turn_starts))
                cut = self.turn_starts[-n]
                del self.turn_starts[-n:]
                for m in self.messages[cut:]:
                    m.hidden = True
                    m.kind = "rolled-back"
                self.messages.append(
                    Message(
                        "system",
                        f"── {n} turn{'s' if n != 1 else ''} rolled back above ──",
                        ts_text,
                        ts,
                        kind="rolled-back",
                        hidden=True,
                        marker=True,
                        raw=p,
                    )
                )
        elif et == "turn_aborted":
            self.flush_reasoning()
            self._add(
                Message(
                    "system", f"turn aborted ({_str(p.get('reason')) or '?'})", ts_text, ts, kind="turn_aborted", raw=p
                )
            )
        elif et in _QUIET_EVENTS or any(et.startswith(a) and et.endswith(b) for a, b in _QUIET_EVENT_FAMILIES):
            return
        else:
            self._unknown(f"event {et}", ts_text, ts, p)


def thread_place(meta) -> tuple[str | None, str | None]:
    """(project, branch) from the thread's ``session_meta``: its ``cwd`` and ``git.branch``."""
    if not isinstance(meta, dict):
        return None, None
    git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
    return _str(meta.get("cwd")) or None, _str(git.get("branch")) or None


# The text header newer Codex puts before a shell result's output: ``shell``/``shell_command`` write
# "Exit code: N", "Wall time: S seconds" (and "Total output lines: N" when cut); unified exec (``exec_command``,
# ``write_stdin``) writes "Command: ..." (sometimes), "Chunk ID: X", "Wall time: S seconds", "Process exited
# with code N" or "Process running with session ID N", "Original token count: N"; then "Output:" on its own line.
# A header is only that: those lines from the first one, an exit code or a process line among them.
_HEADER_LINE = re.compile(
    r"Exit code: (?P<exit>-?\d+)|Wall time: (?P<took>\d+(?:\.\d+)?) seconds|Total output lines: \d+|Command: .*"
    r"|Chunk ID: \S*|Process exited with code (?P<pexit>-?\d+)|(?P<running>Process running with session ID \d+)"
    r"|Original token count: \d+"
)
_HEADER_FIRST = ("Exit code: ", "Command: ", "Chunk ID: ", "Process exited with code ", "Process running with ")
_HEADER_MAX = 8  # lines before "Output:"


def _unwrap_header(m: Message) -> None:
    """A shell result under Codex's text header shown as its output, with the exit code and wall time the
    header gives (a still running process keeps its line above the output); a non-zero exit is an error."""
    head, sep, body = m.content.partition("\nOutput:\n")
    if not sep and m.content.endswith("\nOutput:"):
        head, sep, body = m.content[: -len("\nOutput:")], "\n", ""
    lines = head.split("\n")
    if not sep or len(lines) > _HEADER_MAX:
        return
    found = [_HEADER_LINE.fullmatch(line) for line in lines]
    if not all(found) or not any(f["exit"] or f["pexit"] or f["running"] for f in found):
        return
    code = took = running = None
    for f in found:
        code = int(f["exit"] or f["pexit"]) if (f["exit"] or f["pexit"]) else code
        took = float(f["took"]) if f["took"] else took
        running = f["running"] or running
    m.content = f"{running}\n{body}" if running else body
    m.exit_code, m.duration = code, took
    if code:
        m.tool_status = "error"


def unwrap_envelope(m: Message) -> None:
    """A shell result Codex wrote as ``{"output": TEXT, "metadata": {"exit_code": N, "duration_seconds": S}}``
    (a JSON string), or as TEXT under its text header (``_unwrap_header``), shown as TEXT, with its exit code
    and wall time; a non-zero exit is an error."""
    text = m.content
    if text.startswith(_HEADER_FIRST):
        _unwrap_header(m)
        return
    if not text.startswith("{") or '"metadata"' not in text:
        return
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return
    if not isinstance(doc, dict) or not isinstance(doc.get("output"), str) or not isinstance(doc.get("metadata"), dict):
        return
    md = doc["metadata"]
    code, took = md.get("exit_code"), md.get("duration_seconds")
    m.content = doc["output"]
    if type(code) is int:
        m.exit_code = code
        if code != 0:
            m.tool_status = "error"
    if type(took) in (int, float) and took >= 0:
        m.duration = float(took)


def _origin(meta: dict) -> str | None:
    """One line naming the thread this one was forked from or spawned by, if its meta says so."""
    if _str(meta.get("forked_from_id")):
        return f"forked from thread {meta['forked_from_id'][:40]}"
    src = meta.get("source")
    sub = src.get("subagent") if isinstance(src, dict) else None
    spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
    if isinstance(spawn, dict) and _str(spawn.get("parent_thread_id")):
        who = ", ".join(str(spawn[k])[:40] for k in ("agent_nickname", "agent_role") if _str(spawn.get(k)))
        return f"sub-agent of thread {spawn['parent_thread_id'][:40]}" + (f" ({who})" if who else "")
    if isinstance(sub, str):
        return f"sub-agent ({sub[:40]})"
    return None


def _short_url(a: dict) -> dict:
    u = a.get("url", "")
    if u.startswith("data:"):
        return {"type": "image", "bytes": len(u) * 3 // 4}
    return a


def _content(content) -> tuple[str, list]:
    """Text and attachments of a message's ``content`` list (``input_text``/``output_text``/``input_image``)."""
    if isinstance(content, str):
        return content, []
    texts, atts = [], []
    for c in content if isinstance(content, list) else []:
        if not isinstance(c, dict):
            continue
        if isinstance(c.get("text"), str):
            texts.append(c["text"])
        elif c.get("type") == "input_image" and isinstance(c.get("image_url"), str):
            atts.append(_short_url({"type": "image", "url": c["image_url"]}))
        else:
            texts.append(f"[{as_text(c.get('type'))[:60]} part] {compact(c)}")
    return "\n".join(texts), atts


def _output(out) -> tuple[str, list, str]:
    """A tool result's text, attachments and status, from any of its three shapes."""
    if isinstance(out, str):
        return out, [], "success"
    if isinstance(out, dict):  # older: {content, success}
        text = out.get("content")
        text = text if isinstance(text, str) else _content(text)[0] if isinstance(text, list) else compact(text)
        return text, [], "error" if out.get("success") is False else "success"
    if isinstance(out, list):
        text, atts = _content(out)
        return text, atts, "success"
    return ("" if out is None else compact(out)), [], "success"
