"""Codex CLI's token usage (docs/formats/codex.md, "Token usage"), for ``samctl usage``.

What is read, per rollout file (``.jsonl``, ``.jsonl.zst``; the TypeScript CLI's ``.json`` has no usage):
``event_msg`` lines of ``payload.type == "token_count"`` with ``payload.info = {total_token_usage,
last_token_usage}`` (codex-rs/protocol: ``TokenUsage`` = input_tokens, cached_input_tokens, output_tokens,
reasoning_output_tokens, total_tokens); the model from the latest ``turn_context.payload.model`` before it
(else ``session_meta.payload.model``); the project from ``session_meta.payload.cwd`` (else a
``turn_context``'s ``cwd``).  Invariants:
- each turn counts once: ``total_token_usage`` is a running total, so a turn is its increase over the previous
  event's total, and an event whose total did not change (Codex repeats it, e.g. with new rate limits) adds
  nothing; the first event, and one whose total went down (a new process), count ``last_token_usage``;
  running totals and per-turn figures are never both added;
- ``input_tokens`` includes ``cached_input_tokens``: samctl counts input = input - cached, cache read =
  cached; ``output_tokens`` includes ``reasoning_output_tokens`` (shown on its own, not added again);
- a hostile value (not a non-negative JSON integer, cached above input) skips that event with a finding.
"""

from __future__ import annotations

import orjson

from samctl.errors import FileProblem
from samctl.model import WARNING, Finding
from samctl.stores.usagefiles import UsageFile, count, usage_from_files
from samctl.timeparse import parse_timestamp

_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")


def usage_records(store, findings: list, rollouts: list, decompress):
    """Every ``UsageRecord`` of the store's ``rollouts`` ((thread id, path, lstat) each; ``decompress``: the
    store's zstd reader, within its cap)."""
    root = str(store.conv_dir)
    files = [UsageFile(p[len(root) :].lstrip("/"), p, st, cid, "unknown") for cid, p, st in rollouts]

    def parse(data: bytes, path: str, session: str):
        if path.endswith(".zst"):
            try:
                data = decompress(data, store.caps.log, path)
            except FileProblem as exc:
                return None, [], [Finding(exc.code, path, exc.message, WARNING, session)]
        return parse_usage(data, path, session)

    return usage_from_files(store, files, parse, findings)


def _usage(u) -> list | None:
    """[input, cached, output, reasoning] of a TokenUsage object, None when it is not one."""
    if type(u) is not dict:
        return None
    out = [count(u.get(k, 0)) for k in _FIELDS]
    return None if None in out else out


def parse_usage(data: bytes, path: str, session: str):
    """(project, rows, findings) of one rollout; rows ``[ts, model, None, input, output, 0, cache read,
    reasoning]``."""
    rows: list = []
    found: list = []
    cwd = None
    model = None
    prev = None
    bad = 0
    for line in data.split(b"\n"):
        if not (b'"token_count"' in line or b'"turn_context"' in line or b'"session_meta"' in line):
            continue
        try:
            e = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # (a torn or bad line: the conversation reader reports it; usage skips it)
        p = e.get("payload") if type(e) is dict else None
        if type(p) is not dict:
            continue
        t = e.get("type")
        if t in ("session_meta", "turn_context"):
            if type(p.get("model")) is str and (t == "turn_context" or model is None):
                model = p["model"][:200]
            if type(p.get("cwd")) is str and (cwd is None or t == "session_meta"):
                cwd = p["cwd"]  # (session_meta's wins; else the first turn's)
            continue
        if t != "event_msg" or p.get("type") != "token_count":
            continue
        info = p.get("info")
        if info is None:
            continue  # (rate limits only)
        ts = parse_timestamp(e.get("timestamp"))
        total = _usage(info.get("total_token_usage")) if type(info) is dict else None
        last = _usage(info.get("last_token_usage")) if type(info) is dict else None
        if ts is None or (total is None and last is None):
            bad += 1
            continue
        if total is not None and prev is not None and all(a >= b for a, b in zip(total, prev)):
            turn = [a - b for a, b in zip(total, prev)]
        else:
            turn = last if last is not None else total
        if total is not None:
            prev = total
        if not any(turn):
            continue
        i, cached, o, rs = turn
        if cached > i:
            bad += 1
            continue
        rows.append([ts, model, None, i - cached, o, 0, cached, rs])
    if bad:
        found.append(
            Finding(
                "bad-usage",
                path,
                f"{bad} token_count event{'' if bad == 1 else 's'} with a missing "
                "timestamp or a count that is not a non-negative integer; not counted",
                WARNING,
                session,
            )
        )
    return cwd, rows, found
