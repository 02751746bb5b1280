"""llm's token usage (docs/formats/llm.md, "Token usage"), for ``samctl usage``.

What is read: every row of ``responses`` (and of ``turns``, in databases that have it) with
``input_tokens`` or ``output_tokens``: those two, ``token_details`` (JSON written by the model's plugin:
OpenAI's ``prompt_tokens_details.cached_tokens`` and ``completion_tokens_details.reasoning_tokens``,
Anthropic's ``cache_creation_input_tokens`` and ``cache_read_input_tokens``), ``resolved_model`` (else
``model``), ``datetime_utc`` and ``conversation_id`` (``thread_id``; a lone response is its own session).
Invariants: one row is one model call, counted once (no key); OpenAI's input includes its cached tokens,
so those are moved to cache read; a hostile value (a count that is not a non-negative integer, details that
are not a JSON object) is a finding, and the row's plain counts still count.  llm records no working
folder: the project is ``llm``.  One SQLite query per table, no cache (the database answers at once).
"""

from __future__ import annotations

import orjson

from samctl.model import WARNING, Finding
from samctl.stores.base import UsageRecord
from samctl.stores.llm import decode
from samctl.stores.usagefiles import count


def usage_rows(conn, store, findings: list) -> list:
    """The ``UsageRecord``s of the open database ``conn`` (the store's ``logs.db``)."""
    t = decode.schema(conn)
    out: list = []
    bad = 0
    for table, conv in (("responses", "conversation_id"), ("turns", "thread_id")):
        if table not in t or not {"input_tokens", "output_tokens"} & t[table]:
            continue
        cols = _cols(
            t,
            table,
            ("id", conv, "model", "resolved_model", "datetime_utc", "input_tokens", "output_tokens", "token_details"),
        )
        q = f'SELECT {cols} FROM "{table}" WHERE input_tokens IS NOT NULL OR output_tokens IS NOT NULL'
        for rid, cid, model, resolved, when, i, o, details in conn.execute(q):
            ts = decode.ts(when)
            i, o = (0 if i is None else count(i)), (0 if o is None else count(o))
            m = resolved if isinstance(resolved, str) and resolved else model
            if ts is None or i is None or o is None:
                bad += 1
                continue
            cw = cr = rs = 0
            if details is not None:
                d = _json(details)
                if not isinstance(d, dict):
                    bad += 1
                    d = {}
                cached = _dig(d, "prompt_tokens_details", "cached_tokens")
                if cached and cached <= i:
                    i, cr = i - cached, cached
                cw += _dig(d, "cache_creation_input_tokens")
                cr += _dig(d, "cache_read_input_tokens")
                rs = _dig(d, "completion_tokens_details", "reasoning_tokens") or _dig(d, "reasoning_tokens")
            sid = cid if isinstance(cid, str) and cid else str(rid)
            out.append(
                UsageRecord(ts, sid, "llm", m if isinstance(m, str) else None, None, i, o, cw, cr, rs, store.name, 0.0)
            )
    if bad:
        findings.append(
            Finding(
                "bad-usage",
                str(store.db),
                f"{bad} row{'' if bad == 1 else 's'} with a bad "
                "timestamp, token count or token_details; not counted (or counted without details)",
                WARNING,
            )
        )
    return out


def _cols(tables: dict, table: str, wanted: tuple) -> str:
    """``wanted`` as a select list, NULL for the columns this database's ``table`` lacks (names are ours)."""
    have = tables.get(table, set())
    return ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in wanted)


def _json(text):
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _dig(d: dict, *path) -> int:
    for k in path:
        d = d.get(k) if isinstance(d, dict) else None
    return count(d) or 0
