"""Decoding one ChatGPT-export conversation object (docs/formats/chatgpt-export.md) into samctl's model.

A plain function of the parsed object (``conversation``) or of its bytes (``from_bytes``), separate
from the Store, so it can be fuzzed and benchmarked alone.  The branch the export marks current
(``current_node`` up through ``parent``) is what the app shows; every other node is kept as a hidden
message (``kind`` ``other-branch/<content type>``), so ``show --all`` shows the whole tree, each
side branch just before the current message it was replaced by.  Walks use visited sets and no
recursion; unknown content types, roles and part objects are shown as stored and reported.
"""

from __future__ import annotations

import re

import orjson

from samctl.model import INFO, WARNING, Conversation, ConversationMeta, Finding, Message, ToolCall
from samctl.stores.values import as_str, as_text, short_json, too_costly
from samctl.timeparse import format_utc

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_UNKNOWN_CAP = 4000  # characters of an unknown content object shown as JSON


def valid_id(text) -> bool:
    return isinstance(text, str) and UUID_RE.match(text) is not None


def conv_id(doc: dict):
    """The conversation's id (``id``, else ``conversation_id``), lowercased, or None if neither is a UUID."""
    for key in ("id", "conversation_id"):
        v = doc.get(key)
        if isinstance(v, str) and valid_id(v.lower()):
            return v.lower()
    return None


def _time(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e11 else None


def parse(data: bytes, where: str, findings: list):
    """The object in ``data`` (invalid UTF-8 replaced, with a warning), or None with a finding."""
    why = too_costly(data)
    if why:
        findings.append(Finding("too-large", where, why))
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        msg = str(exc)
        if "utf-8" in msg.lower() or "surrogates" in msg.lower():
            try:
                doc = orjson.loads(data.decode("utf-8", "replace"))
                findings.append(Finding("bad-utf8", where, "invalid UTF-8 in it, replaced by U+FFFD", WARNING))
                return doc
            except orjson.JSONDecodeError as exc2:
                msg = str(exc2)
        findings.append(Finding("bad-json", where, f"not valid JSON: {msg.splitlines()[0][:160]}"))
        return None


def branch(doc: dict, where: str, findings: list, cid=None) -> tuple[list, dict]:
    """(node ids from the root to the current node, the mapping as a dict)."""
    mapping = doc.get("mapping")
    if not isinstance(mapping, dict):
        findings.append(Finding("no-mapping", where, "no mapping object: no messages", WARNING, cid))
        return [], {}
    mapping = {k: v for k, v in mapping.items() if isinstance(v, dict)}
    cur = doc.get("current_node")
    if not isinstance(cur, str) or cur not in mapping:
        leaves = [k for k, v in mapping.items() if not v.get("children")]
        cur = max(leaves or mapping or [None], key=lambda k: _node_time(mapping.get(k)) or 0.0)
        if cur is not None:
            findings.append(
                Finding(
                    "no-current-node",
                    where,
                    "current_node is missing or names no node; showing the branch of the latest leaf",
                    WARNING,
                    cid,
                )
            )
    out, seen = [], set()
    while isinstance(cur, str) and cur in mapping:
        if cur in seen:
            findings.append(
                Finding("parent-cycle", where, f"node {cur[:40]} is its own ancestor; cut there", WARNING, cid)
            )
            break
        seen.add(cur)
        out.append(cur)
        cur = mapping[cur].get("parent")
    out.reverse()
    return out, mapping


def _node_time(node) -> float | None:
    msg = node.get("message") if isinstance(node, dict) else None
    return _time(msg.get("create_time")) if isinstance(msg, dict) else None


def meta(doc: dict, cid: str, where: str, findings: list, size: int | None = None) -> ConversationMeta:
    path, mapping = branch(doc, where, [], cid)
    # what show prints: the branch's messages the app does not hide (``message`` decides, findings dropped)
    count = sum(
        1
        for n in path
        if isinstance(mapping[n].get("message"), dict)
        and not message(mapping[n]["message"], n, None, where, [], cid).hidden
    )
    created, updated = _time(doc.get("create_time")), _time(doc.get("update_time"))
    title = doc.get("title")
    if not isinstance(title, str) or not title.strip():
        title = next((_first_text(mapping[n]) for n in path if _first_text(mapping[n])), "") or "(untitled)"
    m = ConversationMeta(
        "chatgpt",
        cid,
        " ".join(title.split())[:200],
        format_utc(created),
        format_utc(updated),
        created,
        updated,
        count,
        size,
        False,
        where,
    )
    m.model = _model(doc, mapping, path)
    return m


def _model(doc: dict, mapping: dict, path: list) -> str | None:
    """The model of the current branch: its last message's ``metadata.model_slug``, else the conversation's
    ``default_model_slug``."""
    for n in reversed(path):
        msg = mapping[n].get("message")
        md = msg.get("metadata") if isinstance(msg, dict) else None
        if isinstance(md, dict) and isinstance(md.get("model_slug"), str):
            return md["model_slug"]
    return doc.get("default_model_slug") if isinstance(doc.get("default_model_slug"), str) else None


def _first_text(node) -> str:
    msg = node.get("message")
    if not isinstance(msg, dict) or not isinstance(msg.get("author"), dict) or msg["author"].get("role") != "user":
        return ""
    content = msg.get("content") if isinstance(msg.get("content"), dict) else {}
    parts = content.get("parts") if isinstance(content.get("parts"), list) else []
    return " ".join(p for p in parts if isinstance(p, str)).strip()[:200]


def conversation(doc: dict, cid: str, where: str, findings: list, size: int | None = None) -> Conversation:
    """The Conversation of one export object: the current branch, then (hidden) every other node."""
    path, mapping = branch(doc, where, findings, cid)
    on = set(path)
    default_ts = _time(doc.get("create_time"))
    messages: list[Message] = []
    # Tree order without recursion: at each node, its off-branch children's subtrees come first,
    # then the child on the current branch (so an older answer sits just before its replacement).
    roots = [k for k, v in mapping.items() if as_str(v.get("parent")) not in mapping]
    roots.sort(key=lambda k: k not in on)
    stack, seen = list(reversed(roots)), set()
    while stack:
        nid = stack.pop()
        if nid in seen:
            continue
        seen.add(nid)
        node = mapping[nid]
        msg = node.get("message")
        if isinstance(msg, dict):
            m = message(msg, nid, default_ts, where, findings, cid)
            if nid not in on:
                m.hidden, m.kind = True, f"other-branch/{m.kind}"
            messages.append(m)
        kids = (
            [k for k in node.get("children") or [] if isinstance(k, str) and k in mapping and k not in seen]
            if isinstance(node.get("children"), list)
            else []
        )
        kids.sort(key=lambda k: k in on)  # the current branch's child last, so popped last
        stack.extend(reversed(kids))
    unreached = len(mapping) - len(seen)
    if unreached:
        findings.append(
            Finding(
                "unreachable-nodes",
                where,
                f"{unreached} nodes are not reachable from a root (parent/children disagree, or a cycle); not shown",
                WARNING,
                cid,
            )
        )
    m = meta(doc, cid, where, [], size)
    return Conversation(m, messages, doc, m.model, where)


_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool", "function": "tool"}


def message(msg: dict, nid: str, default_ts, where: str, findings: list, cid=None) -> Message:
    author = msg.get("author") if isinstance(msg.get("author"), dict) else {}
    role_in = author.get("role")
    role = _ROLES.get(as_str(role_in))
    if role is None:
        findings.append(
            Finding(
                "unknown-role", where, f"node {nid[:40]}: role {as_text(role_in)[:40]!r}; shown as assistant", INFO, cid
            )
        )
        role = "assistant"
    content = msg.get("content") if isinstance(msg.get("content"), dict) else {}
    ct = content.get("content_type") if isinstance(content.get("content_type"), str) else "?"
    text, attachments = _content(content, ct, nid, where, findings, cid)
    md = msg.get("metadata") if isinstance(msg.get("metadata"), dict) else {}
    at = _time(msg.get("create_time"))
    at = at if at is not None else default_ts
    m = Message(role, text, format_utc(at), at, nid, kind=ct, attachments=attachments, raw=msg)
    recipient = msg.get("recipient")
    if ct in ("thoughts", "reasoning_recap") or msg.get("channel") == "analysis" and role == "assistant":
        m.role = "reasoning"
    elif role == "assistant" and isinstance(recipient, str) and recipient not in ("all", ""):
        m.tool_calls = [ToolCall(None, recipient, text)]
        m.content = ""
    if role == "tool":
        m.tool_name = author.get("name") if isinstance(author.get("name"), str) else None
        if ct == "system_error":
            m.tool_status = "error"
    m.hidden = (
        bool(md.get("is_visually_hidden_from_conversation"))
        or msg.get("weight") == 0
        or ct == "user_editable_context"
        or (role == "system" and not text.strip())
    )
    return m


def _content(c: dict, ct: str, nid, where, findings, cid) -> tuple[str, list]:
    parts = c.get("parts") if isinstance(c.get("parts"), list) else None
    if ct in ("text", "multimodal_text") and parts is not None:
        texts, atts = [], []
        for p in parts:
            if isinstance(p, str):
                texts.append(p)
            elif isinstance(p, dict):
                pt = p.get("content_type")
                if pt == "audio_transcription" and isinstance(p.get("text"), str):
                    texts.append(p["text"])
                elif pt in ("image_asset_pointer", "audio_asset_pointer") and isinstance(p.get("asset_pointer"), str):
                    a = {"type": "image" if pt.startswith("image") else "audio", "url": p["asset_pointer"]}
                    if isinstance(p.get("size_bytes"), int):
                        a["size"] = p["size_bytes"]
                    atts.append(a)
                else:
                    texts.append(_unknown(p, f"part {as_text(pt)[:40]!r}", nid, where, findings, cid))
        return "\n".join(texts), atts
    if ct in ("code", "execution_output", "system_error") and isinstance(c.get("text"), str):
        return c["text"], []
    if ct == "thoughts" and isinstance(c.get("thoughts"), list):
        return "\n\n".join(
            "\n".join(str(t.get(k)) for k in ("summary", "content") if isinstance(t.get(k), str))
            for t in c["thoughts"]
            if isinstance(t, dict)
        ), []
    if ct == "reasoning_recap" and isinstance(c.get("content"), str):
        return c["content"], []
    if ct == "user_editable_context":
        return "\n".join(str(c[k]) for k in ("user_profile", "user_instructions") if isinstance(c.get(k), str)), []
    if ct == "tether_browsing_display":
        return "\n".join(str(c[k]) for k in ("summary", "result") if isinstance(c.get(k), str)), []
    if ct in ("tether_quote", "sonic_webpage"):
        return "\n".join(str(c[k]) for k in ("title", "url", "text") if isinstance(c.get(k), str)), []
    if ct == "citable_code_output" and isinstance(c.get("output_str"), str):
        return c["output_str"], []
    if isinstance(c.get("text"), str):
        return c["text"], []
    return _unknown(c, f"content type {ct[:40]!r}", nid, where, findings, cid), []


def _unknown(obj, what, nid, where, findings, cid) -> str:
    findings.append(
        Finding(
            "unknown-content",
            where,
            f"node {nid[:40]}: {what} is not one samctl knows; shown as stored JSON",
            INFO,
            cid,
        )
    )
    return f"[{what}] " + short_json(obj, _UNKNOWN_CAP)


def from_bytes(data: bytes, where: str, findings: list) -> Conversation | None:
    """Bytes of one conversation object -> Conversation, or None (with a finding) when it has no usable id."""
    doc = parse(data, where, findings)
    if not isinstance(doc, dict):
        if doc is not None:
            findings.append(Finding("not-object", where, "not a conversation object"))
        return None
    cid = conv_id(doc)
    if cid is None:
        findings.append(Finding("bad-id", where, "no id / conversation_id in UUID form; skipped"))
        return None
    return conversation(doc, cid, where, findings, len(data))
