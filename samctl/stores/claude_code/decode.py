"""Claude Code session transcripts (docs/formats/claude-code.md) as samctl's model.

``decode_session`` is a plain function (bytes in, Conversation and findings out): no file system, so it
can be fuzzed and benchmarked alone.  Invariants:
- never raises on file content; what it cannot use is a Finding, the rest still reads;
- the main branch is the app's: from the last non-sidechain user/assistant entry up ``parentUuid``
  (through ``logicalParentUuid`` across a compaction), stopping at a repeated uuid or a missing parent;
- every other entry stays reachable: side branches and sub-agent sidechains follow the main branch as
  hidden messages (``show --all``), each group after a hidden marker saying what it is;
- lines that share ``message.id`` (one streamed response) are one assistant message;
- unknown entry and block types are shown as such (hidden entries, ``[type]`` blocks), with an info finding.
"""

from __future__ import annotations

import re

from samctl.injected import CLAUDE_CODE as _INJECTED
from samctl.injected import injected, title_text
from samctl.model import INFO, WARNING, Conversation, ConversationMeta, Finding, Message, ToolCall
from samctl.stores.jsonlines import compact, parse_lines
from samctl.stores.values import as_text
from samctl.timeparse import parse_timestamp

STORE = "claude-code"
SESSION_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
AGENT_RE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")

# entries that are not conversation but may sit in the tree (kept as nodes so their children are not roots)
STRUCTURAL = {
    "attachment",
    "progress",
    "agent-setting",
    "pr-link",
    "file-history-snapshot",
    "queue-operation",
    "summary",
    "ai-title",
    "custom-title",
    "last-prompt",
    "tag",
    # session bookkeeping Claude Code 2.1 writes (no uuid, no message): the input mode, the permission
    # mode, the remote-control bridge, a latch, the running cost
    "mode",
    "permission-mode",
    "bridge-session",
    "atis-latch",
    "cost-state",
}
_WRAPPERS = _INJECTED  # (samctl/injected.py: the documented list)


def _str(v) -> str | None:
    return v if isinstance(v, str) else None


def _type(e: dict) -> str:
    """An entry's ``type``, or ``<list>``-style for one that is not a string (kept as unknown)."""
    t = e.get("type")
    return t if isinstance(t, str) else f"<{type(t).__name__}>"


def decode_session(
    data: bytes,
    path: str,
    sid: str,
    agents=(),
    *,
    size: int | None = None,
    fresh: bool = False,
    line_cap: int | None = None,
) -> tuple[Conversation, list[Finding]]:
    """The session in ``data`` (file ``path``, id ``sid``) and what could not be read of it.

    ``agents``: ``(agent id, path, bytes)`` of the sub-agent transcripts that belong to it.
    """
    findings: list = []
    rows = parse_lines(data, path, findings, line_cap=line_cap, fresh=fresh, conversation=sid)
    entries = [e for _, e in rows]
    titles = {"custom": None, "ai": None, "summary": None}
    nodes: dict = {}  # uuid -> index into entries
    dup = 0
    times: list = []
    unknown: dict = {}
    for i, e in enumerate(entries):
        t = _type(e)
        if t == "custom-title" and _str(e.get("customTitle")):
            titles["custom"] = e["customTitle"]
        elif t == "ai-title" and _str(e.get("aiTitle")):
            titles["ai"] = e["aiTitle"]
        elif t == "summary" and _str(e.get("summary")) and titles["summary"] is None:
            titles["summary"] = e["summary"]
        ts = parse_timestamp(e.get("timestamp")) if isinstance(e.get("timestamp"), str) else None
        if ts is not None:
            times.append((ts, e["timestamp"]))
        u = _str(e.get("uuid"))
        if u is not None:
            if u in nodes:
                dup += 1
            else:
                nodes[u] = i
        if t not in STRUCTURAL and t not in ("user", "assistant", "system"):
            unknown[t] = unknown.get(t, 0) + 1
    if dup:
        findings.append(
            Finding(
                "duplicate-uuid",
                path,
                f"{dup} entr{'y repeats' if dup == 1 else 'ies repeat'} "
                "an earlier uuid (a resume rewrite); the first is used",
                INFO,
                sid,
            )
        )
    for t, n in unknown.items():
        findings.append(
            Finding(
                "unknown-type",
                path,
                f"{n} entr{'y' if n == 1 else 'ies'} of unknown type {t[:60]!r} kept (shown with --all)",
                INFO,
                sid,
            )
        )

    main = _main_branch(entries, nodes, path, sid, findings)
    on_main = set(main)
    messages = _messages([entries[i] for i in main], hidden=False, findings=findings, path=path, sid=sid)
    # side branches: off-main entries of the main chain, grouped by the entry that left the main branch
    groups: dict = {}
    sidechains: dict = {}
    memo: dict = {}
    for i, e in enumerate(entries):
        if i in on_main or _str(e.get("uuid")) is None or nodes.get(e["uuid"]) != i:
            continue
        if e.get("isSidechain") is True:
            sidechains.setdefault(as_text(e.get("agentId") or "?")[:64], []).append(i)
        else:
            start, looped = _fork_of(i, entries, nodes, on_main, memo)
            groups.setdefault(start, []).append(i)
            if looped and not any(f.code == "tree-cycle" for f in findings):
                findings.append(
                    Finding(
                        "tree-cycle",
                        path,
                        f"the parent chain of {e['uuid'][:40]!r} loops (off the "
                        "main branch); that branch starts where the loop closes",
                        WARNING,
                        sid,
                    )
                )
    for n, (start, idx) in enumerate(groups.items(), 1):
        conv_entries = [entries[i] for i in idx if _type(entries[i]) not in STRUCTURAL]
        if not conv_entries:
            continue
        parent = _str(entries[start].get("parentUuid")) or "no parent"
        messages.append(_marker(f"side branch {n}: {len(idx)} entries off the main branch (after {parent})", "branch"))
        messages += _messages(conv_entries, hidden=True, findings=findings, path=path, sid=sid)
    for agent, idx in sidechains.items():
        messages.append(_marker(f"sub-agent {agent} (inline sidechain, {len(idx)} entries)", "sidechain"))
        messages += _messages([entries[i] for i in idx], hidden=True, findings=findings, path=path, sid=sid)
    for agent, apath, adata in agents:
        arows = parse_lines(adata, apath, findings, line_cap=line_cap, fresh=fresh, conversation=sid)
        messages.append(_marker(f"sub-agent {agent} ({apath})", "sidechain"))
        messages += _messages([e for _, e in arows], hidden=True, findings=findings, path=apath, sid=sid)
        for _, e in arows:
            ts = parse_timestamp(e.get("timestamp")) if isinstance(e.get("timestamp"), str) else None
            if ts is not None:
                times.append((ts, e["timestamp"]))

    title = titles["custom"] or titles["ai"] or titles["summary"] or _first_prompt(messages) or "(untitled)"
    created = min(times) if times else (None, None)
    updated = max(times) if times else (None, None)
    model = None
    for e in entries:
        if e.get("type") == "assistant" and isinstance(e.get("message"), dict):
            m = _str(e["message"].get("model"))
            if m and m != "<synthetic>":
                model = m
    meta = ConversationMeta(
        STORE,
        sid,
        " ".join(title.split())[:200] or "(untitled)",
        created[1],
        updated[1],
        created[0],
        updated[0],
        sum(1 for m in messages if not m.hidden),
        len(data) if size is None else size,
        False,
        path,
    )
    meta.project, meta.branch = session_place(entries)
    meta.continues = mark_copies(messages, sid)
    meta.copied_messages = sum(1 for m in messages if m.copied and not m.hidden)
    meta.model = model
    return Conversation(meta=meta, messages=messages, raw=entries, model=model, source=path), findings


def _main_branch(entries, nodes, path, sid, findings) -> list[int]:
    """Indexes of the main branch, root first (see the module docstring)."""
    leaf = None
    for i in range(len(entries) - 1, -1, -1):
        e = entries[i]
        if (
            e.get("type") in ("user", "assistant")
            and e.get("isSidechain") is not True
            and _str(e.get("uuid"))
            and nodes.get(e["uuid"]) == i
        ):
            leaf = i
            break
    if leaf is None:
        return []
    out, seen = [], set()
    i = leaf
    while i is not None:
        e = entries[i]
        if i in seen:
            findings.append(
                Finding(
                    "tree-cycle",
                    path,
                    f"the parent chain loops at {e['uuid'][:40]!r}; the main branch starts there",
                    WARNING,
                    sid,
                )
            )
            break
        seen.add(i)
        out.append(i)
        parent = _str(e.get("parentUuid")) or _str(e.get("logicalParentUuid"))
        if parent is None:
            break
        i = nodes.get(parent)
        if i is None:
            findings.append(
                Finding(
                    "missing-parent",
                    path,
                    f"the main branch's parent {parent[:40]!r} is not in "
                    "the file (a deleted or earlier session); it starts after it",
                    INFO,
                    sid,
                )
            )
    out.reverse()
    return out


def _fork_of(i, entries, nodes, on_main, memo: dict) -> tuple[int, bool]:
    """(the first entry of the side branch ``i`` is on, whether its parent chain loops): walking up until
    the parent is on the main branch or missing, or an entry repeats.  ``memo`` keeps each walk's answer
    for every entry it passed, so a long abandoned branch costs one walk, not one per entry."""
    path, seen = [], set()
    while True:
        if i in memo:
            result = memo[i]
            break
        if i in seen:
            result = (i, True)
            break
        seen.add(i)
        path.append(i)
        parent = _str(entries[i].get("parentUuid")) or _str(entries[i].get("logicalParentUuid"))
        j = nodes.get(parent) if parent else None
        if j is None or j in on_main:
            result = (i, False)
            break
        i = j
    for k in path:
        memo[k] = result
    return result


def _marker(text: str, kind: str) -> Message:
    return Message("system", f"── {text} ──", kind=kind, hidden=True, marker=True)


def _messages(entries, *, hidden: bool, findings, path, sid) -> list[Message]:
    """The messages of ``entries`` (in order): consecutive assistant lines with one ``message.id`` merged."""
    out: list = []
    tool_names: dict = {}
    last_id = None
    for e in entries:
        t = _type(e)
        ts_text = _str(e.get("timestamp"))
        ts = parse_timestamp(ts_text) if ts_text else None
        msg = e.get("message") if isinstance(e.get("message"), dict) else None
        if t == "assistant" and msg is not None:
            mid = _str(msg.get("id"))
            if mid and mid == last_id and out:
                _assistant_blocks(out[-1], msg.get("content"), tool_names, findings, path, sid)
                out[-1].raw.append(e)
                continue
            m = Message(
                "assistant",
                "",
                ts_text,
                ts,
                _str(e.get("uuid")),
                hidden=hidden,
                raw=[e],
                kind="sidechain" if e.get("isSidechain") is True else None,
            )
            _assistant_blocks(m, msg.get("content"), tool_names, findings, path, sid)
            out.append(m)
            last_id = mid
            continue
        last_id = None
        if t == "user" and msg is not None:
            out += _user(e, msg.get("content"), ts_text, ts, hidden, tool_names)
        elif t == "system":
            text = _str(e.get("content")) or ""
            sub = _str(e.get("subtype")) or "system"
            if sub == "compact_boundary":
                cm = e.get("compactMetadata") if isinstance(e.get("compactMetadata"), dict) else {}
                text = f"conversation compacted ({cm.get('trigger', '?')}, {cm.get('preTokens', '?')} tokens before)"
            out.append(
                Message(
                    "system",
                    text or sub,
                    ts_text,
                    ts,
                    _str(e.get("uuid")),
                    kind=sub,
                    hidden=hidden or e.get("isMeta") is True,
                    raw=e,
                )
            )
        elif t in STRUCTURAL:
            continue
        else:
            out.append(
                Message(
                    "system",
                    f"[unknown entry {str(t)[:60]}] {compact(e)}",
                    ts_text,
                    ts,
                    _str(e.get("uuid")),
                    kind=f"unknown:{str(t)[:60]}",
                    hidden=True,
                    raw=e,
                )
            )
    return out


def _assistant_blocks(m: Message, content, tool_names, findings, path, sid) -> None:
    if isinstance(content, str):
        m.content = (m.content + "\n\n" + content) if m.content else content
        return
    if not isinstance(content, list):
        return
    for b in content:
        if not isinstance(b, dict):
            continue
        bt = b.get("type")
        if bt == "text" and isinstance(b.get("text"), str):
            m.content = (m.content + "\n\n" + b["text"]) if m.content else b["text"]
        elif bt == "thinking":
            text = _str(b.get("thinking")) or ""
            m.reasoning = (m.reasoning + "\n\n" + text) if m.reasoning else text
        elif bt == "redacted_thinking":
            m.reasoning = (m.reasoning + "\n\n" if m.reasoning else "") + "[redacted thinking]"
        elif bt == "tool_use":
            tid, name = _str(b.get("id")), _str(b.get("name")) or "?"
            if tid:
                tool_names[tid] = name
            m.tool_calls.append(ToolCall(tid, name, b.get("input")))
        else:
            text = f"[{as_text(bt)[:60]} block] {compact(b)}"
            m.content = (m.content + "\n\n" + text) if m.content else text


def _user(e, content, ts_text, ts, hidden, tool_names) -> list[Message]:
    """A user entry: what the person typed (text and images) and the tool results it carries."""
    uid = _str(e.get("uuid"))
    meta = e.get("isMeta") is True
    if isinstance(content, str):
        kind = "meta" if meta else ("command" if content.lstrip().startswith(_WRAPPERS) else None)
        if e.get("isCompactSummary") is True:
            kind = "compact-summary"
        return [Message("user", content, ts_text, ts, uid, kind=kind, hidden=hidden or meta, raw=e)]
    if not isinstance(content, list):
        return [Message("user", f"[unreadable content] {compact(content)}", ts_text, ts, uid, hidden=True, raw=e)]
    out: list = []
    texts, atts = [], []
    for b in content:
        if not isinstance(b, dict):
            continue
        bt = b.get("type")
        if bt == "text" and isinstance(b.get("text"), str):
            texts.append(b["text"])
        elif bt == "image":
            atts.append(_image(b))
        elif bt == "tool_result":
            tid = _str(b.get("tool_use_id"))
            text, images = _result_content(b.get("content"))
            out.append(
                Message(
                    "tool",
                    text,
                    ts_text,
                    ts,
                    uid,
                    tool_call_id=tid,
                    tool_name=tool_names.get(tid),
                    tool_status="error" if b.get("is_error") is True else "success",
                    hidden=hidden,
                    attachments=images,
                    raw=e,
                )
            )
        else:
            texts.append(f"[{as_text(bt)[:60]} block] {compact(b)}")
    if texts or atts:
        text = "\n\n".join(texts)
        kind = "meta" if meta else ("command" if text.lstrip().startswith(_WRAPPERS) else None)
        out.insert(
            0, Message("user", text, ts_text, ts, uid, kind=kind, hidden=hidden or meta, attachments=atts, raw=e)
        )
    return out


def _image(b: dict) -> dict:
    src = b.get("source") if isinstance(b.get("source"), dict) else {}
    data = src.get("data")
    if isinstance(data, str):
        return {"type": "image", "bytes": len(data) * 3 // 4}
    return {"type": "image", "url": _str(src.get("url")) or "?"}


def _result_content(content) -> tuple[str, list]:
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        return ("" if content is None else compact(content)), []
    texts, images = [], []
    for b in content:
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
            texts.append(b["text"])
        elif isinstance(b, dict) and b.get("type") == "image":
            images.append(_image(b))
        else:
            texts.append(compact(b))
    return "\n".join(texts), images


def _first_prompt(messages) -> str | None:
    for m in messages:
        if m.role == "user" and not m.hidden and m.kind is None and m.content.strip() and not injected(m.content):
            return title_text(m.content)
    return None


def session_place(entries) -> tuple[str | None, str | None]:
    """(project, branch): the first ``cwd`` a main-session entry records (where ``claude`` was started,
    the folder ``/resume`` lists it under) and the last non-empty ``gitBranch`` (the branch it ended on)."""
    project = branch = None
    for e in entries:
        if e.get("isSidechain") is True:
            continue
        if project is None and _str(e.get("cwd")):
            project = e["cwd"]
        b = _str(e.get("gitBranch"))
        if b and b != "HEAD":
            branch = b
    return project, branch


def mark_copies(messages, sid: str) -> str | None:
    """Mark the messages a resume copied from an earlier session (their entry's ``sessionId`` is another
    session's: ``claude --resume`` writes a new file holding the earlier history); the id of that session
    (the first copied entry's), or None.  Sub-agent lines carry the parent's id and are never copies here."""
    continues = None
    for m in messages:
        e = m.raw[0] if isinstance(m.raw, list) and m.raw else m.raw
        if not isinstance(e, dict) or e.get("isSidechain") is True or m.marker:
            continue
        other = _str(e.get("sessionId"))
        if other and other.lower() != sid.lower() and SESSION_RE.match(other):
            m.copied = True
            continues = continues or other.lower()
    return continues


def agent_ids(data: bytes) -> set[str]:
    """The sub-agent ids a session names (``toolUseResult.agentId``, ``agentId: <id>`` in a result), cheaply:
    used to find the ``agent-<id>.jsonl`` files of versions up to 2.1.1 beside it."""
    out = set()
    for m in re.finditer(rb'"agentId"\s*:\s*"([A-Za-z0-9_-]{1,64})"|agentId: ([A-Za-z0-9_-]{1,64})', data):
        out.add((m.group(1) or m.group(2)).decode())
    return out
