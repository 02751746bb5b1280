"""Claude Code's token usage (docs/formats/claude-code.md, "Token usage"), for ``samctl usage``.

What is read: every line whose ``message.usage`` is an object with integer ``input_tokens`` and
``output_tokens`` (``cache_creation_input_tokens``, ``cache_read_input_tokens`` when present) and an RFC 3339
``timestamp``; ``message.model``, ``message.id`` and ``requestId`` beside it.  Which files: each session file,
its ``<session>/subagents/agent-*.jsonl`` and the older ``agent-*.jsonl`` beside it (a sub-agent's usage is
its parent session's).  Invariants:
- a response is counted once: its key is ``message.id:requestId`` (the message id alone when there is no
  request id), the same on every streamed line of it, in a resumed copy and in a sub-agent transcript; the
  caller (report/usage.py) keeps the first by file order;
- a hostile value (a count that is not a non-negative JSON integer, a model that is not a string) skips that
  line's usage with a finding; nothing here raises on file content.
"""

from __future__ import annotations

import stat

import orjson

from samctl.model import WARNING, Finding
from samctl.stores.base import UsageRecord
from samctl.stores.claude_code.decode import AGENT_RE, SESSION_RE
from samctl.stores.readers import scan
from samctl.stores.usagefiles import UsageFile, count, usage_from_files
from samctl.timeparse import parse_timestamp

_MODEL_CAP = 200  # a model name longer than this is not one


def usage_records(store, findings: list, projects: list):
    """Every ``UsageRecord`` of the store (see the module's docstring) in its project folders ``projects``,
    earliest file first."""
    files: list = []
    root = str(store.conv_dir)
    for proj in projects:
        slug = proj[len(root) :].strip("/") or store.conv_dir.name
        entries = scan(proj, findings, "")
        sessions = {n[:-6].lower() for n, _, st in entries if n.endswith(".jsonl") and SESSION_RE.match(n[:-6])}
        for n, p, st in entries:
            rel = f"{slug}/{n}"
            if n.endswith(".jsonl") and stat.S_ISREG(st.st_mode):
                if SESSION_RE.match(n[:-6]):
                    files.append(UsageFile(rel, p, st, n[:-6].lower(), slug))
                elif n.startswith("agent-") and AGENT_RE.match(n[6:-6]):
                    files.append(UsageFile(rel, p, st, "", slug))  # (its session: named inside, by parse)
            elif stat.S_ISDIR(st.st_mode) and n.lower() in sessions:
                for an, ap, ast in scan(f"{p}/subagents", findings, " in a subagents folder"):
                    if an.startswith("agent-") and an.endswith(".jsonl") and stat.S_ISREG(ast.st_mode):
                        files.append(UsageFile(f"{rel}/subagents/{an}", ap, ast, n.lower(), slug))
    for rec in usage_from_files(store, files, parse_usage, findings):
        if not rec.session:  # an older agent-<id>.jsonl: the session its lines name
            project, _, session = rec.project.partition("\0")
            rec = UsageRecord(rec.ts, session or "unknown", project or "unknown", *rec[3:])
        yield rec


def parse_usage(data: bytes, path: str, session: str):
    """(project, rows, findings) of one transcript: ``project`` the first ``cwd`` (for a file with no session
    of its own, ``cwd NUL sessionId``), rows ``[ts, model, key, input, output, cache write, cache read, 0]``."""
    rows: list = []
    found: list = []
    cwd = sid = None
    bad = 0
    keys: set = set()  # (of one file, only a response's first copy can be the one counted)
    for n, line in enumerate(data.split(b"\n"), 1):
        if b'"usage"' not in line:
            if cwd is None and b'"cwd"' in line:
                cwd, sid = _cwd(line, cwd, sid)
            continue
        try:
            e = orjson.loads(line)
        except orjson.JSONDecodeError:
            found.append(
                Finding(
                    "bad-line", path, f"line {n} is not valid JSON; its usage is not counted", WARNING, session or None
                )
            )
            continue
        if type(e) is not dict:
            continue
        if cwd is None and type(e.get("cwd")) is str:
            cwd = e["cwd"]
        if sid is None and type(e.get("sessionId")) is str and SESSION_RE.match(e["sessionId"]):
            sid = e["sessionId"].lower()
        m = e.get("message")
        u = m.get("usage") if type(m) is dict else None
        if type(u) is not dict:
            continue
        ts = parse_timestamp(e.get("timestamp"))
        i, o = count(u.get("input_tokens")), count(u.get("output_tokens"))
        cw, cr = u.get("cache_creation_input_tokens", 0), u.get("cache_read_input_tokens", 0)
        cw, cr = (0 if cw is None else count(cw)), (0 if cr is None else count(cr))
        model, mid, rid = m.get("model"), m.get("id"), e.get("requestId")
        if (
            ts is None
            or None in (i, o, cw, cr)
            or (model is not None and (type(model) is not str or len(model) > _MODEL_CAP))
            or (mid is not None and type(mid) is not str)
            or (rid is not None and type(rid) is not str)
        ):
            bad += 1
            continue
        key = f"{mid}:{rid or ''}" if mid else None
        if key is not None:
            if key in keys:
                continue
            keys.add(key)
        rows.append([ts, model, key, i, o, cw, cr, 0])
    if bad:
        found.append(
            Finding(
                "bad-usage",
                path,
                f"{bad} usage entr{'y' if bad == 1 else 'ies'} with a missing "
                "timestamp or a count that is not a non-negative integer; not counted",
                WARNING,
                session or None,
            )
        )
    project = cwd if session else f"{cwd or ''}\0{sid or ''}"
    return project, rows, found


def _cwd(line: bytes, cwd, sid):
    try:
        e = orjson.loads(line)
    except orjson.JSONDecodeError:
        return cwd, sid
    if type(e) is dict and type(e.get("cwd")) is str:
        s = e.get("sessionId")
        return e["cwd"], (s.lower() if type(s) is str and SESSION_RE.match(s) else sid)
    return cwd, sid
