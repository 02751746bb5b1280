"""Decoding llm's ``logs.db`` (docs/formats/llm.md) into samctl's model: plain functions over an open
read-only connection, separate from the Store (discovery, ids), so they can be fuzzed and benchmarked.

Invariants: only tables and columns that exist are read (any schema point, 0.4 to 0.32); ids are
SQL parameters, never SQL text; BLOBs are measured with ``length()``, never loaded; a parent chain
is walked with a visited set and a depth cap; every problem is a Finding, nothing raises but
sqlite3 errors (the Store turns those into findings).
"""

from __future__ import annotations

import re
import sqlite3

import orjson

from samctl.model import INFO, WARNING, Conversation, ConversationMeta, Finding, Message, ToolCall
from samctl.stores.values import BUILD_CAP, MAX_DEPTH, as_list, as_text, bounded, depth, too_costly
from samctl.timeparse import format_utc, parse_timestamp

ULID_RE = re.compile(r"[0-9a-hjkmnp-tv-z]{26}\Z")
LOG_ID_RE = re.compile(r"log-[0-9]{1,18}\Z")  # a pre-0.5 ``logs`` row, by its integer id
MAX_CHAIN = 100_000  # messages on one thread's chain; a longer (or cyclic) chain is cut with a finding


def valid_id(text: str) -> bool:
    return isinstance(text, str) and (ULID_RE.match(text) is not None or LOG_ID_RE.match(text) is not None)


def ts(value) -> float | None:
    """Epoch seconds of any of llm's three ``datetime_utc`` spellings (no offset, ``+00:00``, a space for 'T')."""
    if not isinstance(value, str):
        return None
    return parse_timestamp(value.replace(" ", "T", 1))


def schema(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """{table: {columns}} of the tables (not views) that exist."""
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {n: {r[1] for r in conn.execute("SELECT * FROM pragma_table_info(?)", (n,))} for n in names}


def _cols(tables: dict, table: str, wanted: tuple) -> str:
    """``wanted`` as a select list, NULL for the columns this database's ``table`` lacks (names are ours)."""
    have = tables.get(table, set())
    return ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in wanted)


def _c(tables: dict, table: str, col: str) -> str:
    """One column of ``table`` for a SQL expression, or NULL when this database's table lacks it (a newer
    or older schema: the column reads as absent, never as an error)."""
    return f'"{col}"' if col in tables.get(table, ()) else "NULL"


def _json(text):
    """A JSON column's value (its text when it does not parse); nested at most ``values.MAX_DEPTH``."""
    if not isinstance(text, str):
        return text
    if len(text) > BUILD_CAP // 64 and too_costly(text.encode("utf-8", "surrogatepass")):
        return text  # (shown as stored: parsing it would build hundreds of MB)
    try:
        v = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    if text.count("[") + text.count("{") > MAX_DEPTH and depth(v) > MAX_DEPTH:
        return bounded(v)
    return v


def plain_row(cursor, row: tuple) -> tuple:
    """A connection's ``row_factory``: a BLOB where llm writes text, ids or dates (SQLite does not enforce
    column types) reads as ``[N bytes]``, so no bytes value reaches a title, an id or a renderer (the
    BLOBs samctl measures are selected as ``length()``)."""
    if any(type(v) is bytes for v in row):
        return tuple(f"[{len(v)} bytes]" if type(v) is bytes else v for v in row)
    return row


class TextFactory:
    """A connection's ``text_factory``: TEXT as str, invalid UTF-8 (SQLite does not enforce the encoding)
    decoded with U+FFFD and counted, so that every string samctl handles is valid and the count
    becomes one finding (``report``) instead of an exception anywhere downstream."""

    def __init__(self):
        self.bad = 0

    def __call__(self, b: bytes) -> str:
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            self.bad += 1
            return b.decode("utf-8", "replace")

    def report(self, path: str, findings: list, cid: str | None = None) -> None:
        if self.bad:
            findings.append(
                Finding(
                    "bad-utf8", path, f"{self.bad} text values are not valid UTF-8; shown with U+FFFD", WARNING, cid
                )
            )
            self.bad = 0


def _str(v) -> str:
    return v if isinstance(v, str) else ("" if v is None else as_text(v))


def _opt(v) -> str | None:
    """A text column's value as str or None: a number as its digits, anything else (a JSON list or
    object where llm writes a name or an id) as None."""
    return v if isinstance(v, str) else str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# -- listing -----------------------------------------------------------------------------------


def list_metas(conn, path: str, findings: list) -> list[ConversationMeta]:
    """One ConversationMeta per conversation id (legacy conversation, lone response, thread, pre-0.5 row),
    unordered.  ``message_count`` counts what ``load`` shows on the main chain."""
    t = schema(conn)
    rows: dict[str, dict] = {}
    if t and not ({"responses", "threads", "logs", "log"} & t.keys()):
        findings.append(
            Finding("db-schema", path, "no llm table (responses, threads, logs): a foreign database; nothing listed")
        )

    def add(cid, title, first, last, count, model=None):
        if not isinstance(cid, str) or not valid_id(cid.lower()):
            findings.append(Finding("bad-id", path, f"id {str(cid)[:40]!r} is not a ULID; skipped", WARNING))
            return
        cid = cid.lower()
        r = rows.setdefault(cid, {"title": None, "ts": [], "count": 0, "model": None})
        if title and not r["title"]:
            r["title"] = title
        if _opt(model) and not r["model"]:
            r["model"] = _opt(model)
        r["ts"] += [x for x in (ts(first), ts(last)) if x is not None]
        r["count"] += count

    shown = response_counts(conn, t) if "responses" in t else {}
    if "responses" in t:
        named, models = {}, {}
        if "conversations" in t:
            for cid, name, model in conn.execute(
                f"SELECT {_cols(t, 'conversations', ('id', 'name', 'model'))} FROM conversations"
            ):
                named[cid] = name
                if _opt(model):
                    models[cid] = model
        # as load: the conversation's model, else the first response's (in id order) that names one
        for cid, model in conn.execute(
            f"SELECT {_cols(t, 'responses', ('conversation_id', 'model'))} FROM responses "
            f"WHERE coalesce({_c(t, 'responses', 'model')}, '') != '' ORDER BY {_c(t, 'responses', 'id')}"
        ):
            models.setdefault(cid, model)
        for cid, rid, n, first, last, prompt in conn.execute(
            f"SELECT {_cols(t, 'responses', ('conversation_id',))}, min({_c(t, 'responses', 'id')}), count(*), "
            f"min({_c(t, 'responses', 'datetime_utc')}), max({_c(t, 'responses', 'datetime_utc')}), "
            f"{_cols(t, 'responses', ('prompt',))} FROM responses GROUP BY 1"
        ):
            if cid is None or cid not in named:
                # a response without (or with a dangling) conversation: each is its own conversation
                for rid1, p, d, m in conn.execute(
                    f"SELECT {_cols(t, 'responses', ('id', 'prompt', 'datetime_utc', 'model'))} FROM responses WHERE "
                    + (f"{_c(t, 'responses', 'conversation_id')} IS NULL" if cid is None else "conversation_id = ?"),
                    () if cid is None else (cid,),
                ):
                    add(rid1, _title(p), d, d, shown.get((None, rid1), 2), m)
                continue
            add(cid, named.pop(cid) or _title(prompt), first, last, shown.get((cid, None), 2 * n), models.get(cid))
        for cid, name in named.items():  # conversations with no response rows
            add(cid, name, None, None, 0, models.get(cid))
    if "threads" in t:
        parents = _parents(conn, t)
        split = result_splits(conn, t)
        turns, models = {}, {}
        if "turns" in t and "thread_id" in t["turns"]:
            d = _c(t, "turns", "datetime_utc")
            for tid, first, last in conn.execute(f"SELECT thread_id, min({d}), max({d}) FROM turns GROUP BY thread_id"):
                turns[tid] = (first, last)
            # as load: the first turn, in time order, that names a model
            for tid, model in conn.execute(
                f"SELECT thread_id, {_c(t, 'turns', 'model')} FROM turns WHERE coalesce({_c(t, 'turns', 'model')}, '')"
                f" != '' ORDER BY {d}, {_c(t, 'turns', 'id')}"
            ):
                models.setdefault(tid, model)
        for tid, name, tip, created in conn.execute(
            f"SELECT {_cols(t, 'threads', ('id', 'name', 'tip_message_hash', 'datetime_utc'))} FROM threads"
        ):
            first, last = turns.get(tid, (created, created))
            chain = _chain(parents, tip, [], path)
            add(tid, name, first or created, last, len(chain) + sum(split.get(h, 0) for h in chain), models.get(tid))
    for table in ("logs", "log"):
        if table in t and "id" in t[table]:
            cols = _cols(t, table, ("id", "prompt", "datetime_utc", "timestamp", "model"))
            for lid, prompt, d, stamp, model in conn.execute(f'SELECT {cols} FROM "{table}"'):
                if isinstance(lid, int) and lid >= 0:
                    add(f"log-{lid}", _title(prompt), d or stamp, d or stamp, 2, model)
    out = []
    for cid, r in rows.items():
        times = r["ts"]
        created, updated = (min(times), max(times)) if times else (None, None)
        out.append(
            ConversationMeta(
                "llm",
                cid,
                _title(r["title"]) or "(untitled)",
                format_utc(created),
                format_utc(updated),
                created,
                updated,
                r["count"],
                None,
                False,
                path,
                model=r["model"],
            )
        )
    return out


def result_splits(conn, t) -> dict:
    """The messages beyond one that ``load`` shows of each thread message holding tool results (``_message``:
    one per ``tool_result`` part, plus one for its other parts if it has any): llm 0.36 keeps every result
    of a round of tool calls in one message of role ``tool``.  Keyed by message hash; only those with results."""
    if "parts" not in t or not {"message_hash", "type"} <= t["parts"]:
        return {}
    out = {}
    for h, results, others in conn.execute(
        "SELECT message_hash, count(*), (SELECT count(*) FROM parts o WHERE o.message_hash = p.message_hash "
        "AND coalesce(o.type, '') != 'tool_result') FROM parts p WHERE type = 'tool_result' GROUP BY message_hash"
    ):
        out[h] = results if others else results - 1
    return out


def response_counts(conn, t) -> dict:
    """The messages ``load`` shows of each conversation kept in ``responses`` (what ``ls`` counts):
    per response its answer, its prompt (text, attachments or fragments), the tool results sent with it,
    and its system prompt where it differs from the last one; keyed ``(conversation_id, None)``, and
    ``(None, response id)`` for a response that is a conversation alone (``load`` with its own id)."""
    tools: dict = {}
    if "tool_results" in t and "response_id" in t["tool_results"]:
        tools = dict(conn.execute("SELECT response_id, count(*) FROM tool_results GROUP BY 1"))
    extra = []
    for table in ("prompt_attachments", "prompt_fragments"):
        if table in t and "response_id" in t[table]:
            extra.append(f'EXISTS (SELECT 1 FROM "{table}" x WHERE x.response_id = r.id)')
    has_prompt = (
        " OR ".join(["coalesce(r.prompt, '') != ''"] + extra)
        if "prompt" in t["responses"]
        else (" OR ".join(extra) or "0")
    )
    system = "r.system" if "system" in t["responses"] else "NULL"
    out: dict = {}
    last: dict = {}
    for cid, rid, prompt, sys_text in conn.execute(
        f"SELECT {_cols(t, 'responses', ('conversation_id',))}, r.id, ({has_prompt}), {system} "
        "FROM responses r ORDER BY 1, r.id, r.datetime_utc"
        if "datetime_utc" in t["responses"]
        else f"SELECT {_cols(t, 'responses', ('conversation_id',))}, r.id, ({has_prompt}), {system} "
        "FROM responses r ORDER BY 1, r.id"
    ):
        n = 1 + (1 if prompt else 0) + tools.get(rid, 0)
        if sys_text and sys_text != last.get(cid):
            n += 1
        last[cid] = sys_text or last.get(cid)
        out[(cid, None)] = out.get((cid, None), 0) + n
        alone = 1 + (1 if prompt else 0) + tools.get(rid, 0) + (1 if sys_text else 0)
        out[(None, rid)] = alone
    return out


def _title(text) -> str:
    return " ".join(_str(text).split())[:120]


def _parents(conn, t) -> dict:
    if "messages" not in t:
        return {}
    return dict(conn.execute(f"SELECT {_cols(t, 'messages', ('hash', 'parent_hash'))} FROM messages"))


class _LazyParents:
    """``hash -> parent_hash`` answered one primary-key lookup at a time (a load walks one chain; the
    whole table is read only by a listing)."""

    def __init__(self, conn):
        self.conn, self.seen = conn, {}

    def _get(self, h):
        if h not in self.seen:
            row = (
                self.conn.execute("SELECT parent_hash FROM messages WHERE hash = ?", (h,)).fetchone()
                if isinstance(h, str)
                else None
            )
            self.seen[h] = row
        return self.seen[h]

    def __contains__(self, h) -> bool:
        return self._get(h) is not None

    def __getitem__(self, h):
        return self._get(h)[0]


def _chain(parents, tip, findings: list, path: str, cid: str | None = None) -> list[str]:
    """The hashes from the root to ``tip`` (a visited set and ``MAX_CHAIN`` stop cycles)."""
    out, seen, h = [], set(), tip
    while h is not None:
        if h in seen or len(out) >= MAX_CHAIN:
            findings.append(
                Finding(
                    "parent-cycle",
                    path,
                    f"the message chain loops or exceeds {MAX_CHAIN} at {str(h)[:40]}; cut there",
                    WARNING,
                    cid,
                )
            )
            break
        if h not in parents:
            findings.append(
                Finding(
                    "dangling-parent",
                    path,
                    f"message {str(h)[:40]} is missing; the chain starts after it",
                    WARNING,
                    cid,
                )
            )
            break
        seen.add(h)
        out.append(h)
        h = parents[h]
    out.reverse()
    return out


# -- one conversation --------------------------------------------------------------------------

_RESP = (
    "id",
    "model",
    "prompt",
    "system",
    "response",
    "conversation_id",
    "datetime_utc",
    "resolved_model",
    "reasoning",
    "input_tokens",
    "output_tokens",
    "duration_ms",
)


def load(conn, cid: str, path: str, findings: list) -> Conversation | None:
    """Conversation ``cid`` (legacy rows, then the thread's main chain), or None if no row has the id."""
    t = schema(conn)
    messages: list[Message] = []
    raw: dict = {}
    title = model = None
    times: list[float] = []
    if cid.startswith("log-"):
        return _load_log(conn, t, cid, path, findings)
    if "responses" in t:
        if "conversations" in t:
            row = conn.execute(
                f"SELECT {_cols(t, 'conversations', ('id', 'name', 'model'))} FROM conversations WHERE id IN (?, ?)",
                (cid, cid.upper()),
            ).fetchone()
            if row is not None:
                raw["conversation"] = dict(zip(("id", "name", "model"), row))
                title, model = row[1], row[2]
        sel = f"SELECT {_cols(t, 'responses', _RESP)} FROM responses"
        # (ids as parameters in both cases llm may have written, never lower(): that would defeat the indexes)
        rs = conn.execute(
            sel + f" WHERE {_c(t, 'responses', 'conversation_id')} IN (?, ?) ORDER BY "
            f"{_c(t, 'responses', 'id')}, {_c(t, 'responses', 'datetime_utc')}",
            (cid, cid.upper()),
        ).fetchall()
        if not rs and "conversation" not in raw:  # a lone response is a conversation by its own id
            rs = conn.execute(sel + f" WHERE {_c(t, 'responses', 'id')} IN (?, ?)", (cid, cid.upper())).fetchall()
        raw["responses"] = [dict(zip(_RESP, r)) for r in rs]
        system = None
        for r in raw["responses"]:
            _legacy_turn(conn, t, r, system, messages, path, findings, cid)
            system = r["system"] or system
            model = model or r["model"]
            title = title or r["prompt"]
            if ts(r["datetime_utc"]) is not None:
                times.append(ts(r["datetime_utc"]))
    if "threads" in t:
        th = conn.execute(
            f"SELECT {_cols(t, 'threads', ('id', 'name', 'tip_message_hash', 'forked_from', 'datetime_utc'))}"
            " FROM threads WHERE id IN (?, ?)",
            (cid, cid.upper()),
        ).fetchone()
        if th is not None:
            raw["thread"] = dict(zip(("id", "name", "tip_message_hash", "forked_from", "datetime_utc"), th))
            title = th[1] or title
            _thread(conn, t, th[0], th[2], messages, raw, path, findings, cid, times)
            model = model or next((tr["model"] for tr in raw.get("turns", []) if tr.get("model")), None)
            if not times and ts(th[4]) is not None:
                times.append(ts(th[4]))
    if not raw.get("responses") and "conversation" not in raw and "thread" not in raw:
        return None
    created, updated = (min(times), max(times)) if times else (None, None)
    meta = ConversationMeta(
        "llm",
        cid,
        _title(title) or "(untitled)",
        format_utc(created),
        format_utc(updated),
        created,
        updated,
        len(messages),
        None,
        False,
        path,
        model=_opt(model),
    )
    return Conversation(meta, messages, raw, meta.model, path)


def _legacy_turn(conn, t, r, system, out, path, findings, cid) -> None:
    """One ``responses`` row: the tool results sent with its prompt, the system prompt when it changes,
    the prompt, the answer with its reasoning and tool calls."""
    when, when_ts = _opt(r["datetime_utc"]), ts(r["datetime_utc"])
    rid = r["id"]
    if "tool_results" in t and "response_id" in t["tool_results"]:
        cols = _cols(t, "tool_results", ("name", "output", "tool_call_id", "exception"))
        for name, output, tcid, exc in conn.execute(
            f"SELECT {cols} FROM tool_results WHERE response_id = ? ORDER BY {_c(t, 'tool_results', 'id')}", (rid,)
        ):
            out.append(
                Message(
                    "tool",
                    _str(output),
                    when,
                    when_ts,
                    None,
                    tool_call_id=_opt(tcid),
                    tool_name=_opt(name),
                    tool_status="error" if exc else None,
                    kind="tool_result",
                    raw={"exception": exc} if exc else None,
                )
            )
    if r["system"] and r["system"] != system:
        out.append(Message("system", _str(r["system"]), when, when_ts, None, kind="system"))
    attachments = _attachments(conn, t, "prompt_attachments", "response_id", rid)
    fragments = []
    if (
        "prompt_fragments" in t
        and "fragments" in t
        and {"response_id", "fragment_id", "order"} <= t["prompt_fragments"]
        and {"id", "source", "content"} <= t["fragments"]
    ):
        fragments = [
            f"[fragment {fid}: {_str(src) or 'inline'}, {n or 0:,} characters]"
            for fid, src, n in conn.execute(
                "SELECT f.id, f.source, length(f.content) FROM prompt_fragments p JOIN fragments f ON f.id = p.fragment_id "
                'WHERE p.response_id = ? ORDER BY p."order"',
                (rid,),
            )
        ]
    prompt = _str(r["prompt"])
    if prompt or attachments or fragments:
        out.append(
            Message(
                "user",
                "\n".join([*fragments, prompt]) if fragments else prompt,
                when,
                when_ts,
                _str(rid) + ":prompt",
                attachments=attachments,
                kind="prompt",
            )
        )
    calls = []
    if "tool_calls" in t and "response_id" in t["tool_calls"]:
        cols = _cols(t, "tool_calls", ("tool_call_id", "name", "arguments"))
        calls = [
            ToolCall(_opt(tcid), _opt(name) or "?", _json(args))
            for tcid, name, args in conn.execute(
                f"SELECT {cols} FROM tool_calls WHERE response_id = ? ORDER BY {_c(t, 'tool_calls', 'id')}", (rid,)
            )
        ]
    if r["response"] is None and not calls:
        findings.append(Finding("no-response", path, f"response {rid} has no answer (interrupted?)", INFO, cid))
    out.append(
        Message(
            "assistant",
            _str(r["response"]),
            when,
            when_ts,
            _opt(rid),
            tool_calls=calls,
            reasoning=_opt(r["reasoning"]) or None,
            kind="response",
            raw={k: r[k] for k in ("model", "resolved_model", "input_tokens", "output_tokens", "duration_ms")},
        )
    )


def _attachments(conn, t, table, key, value) -> list:
    if (
        table not in t
        or "attachments" not in t
        or not {key, "attachment_id", "order"} <= t[table]
        or "id" not in t["attachments"]
    ):
        return []
    out = []
    rows = (
        conn.execute(
            f"SELECT a.id, {', '.join('a.' + c for c in ('type', 'path', 'url'))}, length(a.content) "
            f'FROM "{table}" p JOIN attachments a ON a.id = p.attachment_id WHERE p."{key}" = ? '
            'ORDER BY p."order"',
            (value,),
        )
        if {"type", "path", "url", "content"} <= t["attachments"]
        else []
    )
    for aid, mime, apath, url, n in rows:
        kind = _str(mime).partition("/")[0] or "file"
        if url:
            out.append({"type": kind, "url": _str(url), "mime": mime})
        elif apath:  # the bytes are the user's file, not in the database: named, never read
            out.append({"type": kind, "url": "file://" + _str(apath), "mime": mime})
        else:
            out.append({"type": kind, "bytes": n or 0, "mime": mime, "id": aid})
    return out


def _thread(conn, t, tid, tip, out, raw, path, findings, cid, times) -> None:
    """The thread's main chain, one Message per stored message (a tool_result-only user message becomes
    one tool message per result); each message timed by the earliest turn whose span contains it."""
    parents = _LazyParents(conn) if "messages" in t and {"hash", "parent_hash"} <= t["messages"] else {}
    if tip is not None and tip not in parents:
        findings.append(Finding("dangling-tip", path, f"thread {tid}'s tip {str(tip)[:40]} is missing", WARNING, cid))
    chain = _chain(parents, tip, findings, path, cid)
    when: dict = {}
    raw["turns"] = []
    if "turns" in t and chain:
        cols = (
            "id",
            "parent_message_hash",
            "tip_message_hash",
            "model",
            "resolved_model",
            "datetime_utc",
            "input_tokens",
            "output_tokens",
        )
        # every turn that ended on this chain, whatever its thread: a fork's shared opening was answered in
        # the thread it forked from (one scan of turns, in SQLite, for the whole chain)
        for row in conn.execute(
            f"SELECT {_cols(t, 'turns', cols + ('thread_id',))} FROM turns WHERE "
            f"{_c(t, 'turns', 'tip_message_hash')} IN (SELECT value FROM json_each(?)) ORDER BY "
            f"{_c(t, 'turns', 'datetime_utc')}, {_c(t, 'turns', 'id')}",
            (orjson.dumps(chain).decode(),),
        ):
            turn = dict(zip(cols, row[:-1]))
            at = ts(turn["datetime_utc"])
            if row[-1] == tid:
                raw["turns"].append(turn)
                if at is not None:
                    times.append(at)
            h, steps = turn["tip_message_hash"], 0
            while h is not None and h in parents and steps < MAX_CHAIN:
                when.setdefault(h, (turn["datetime_utc"], at))
                if h == turn["parent_message_hash"]:
                    break
                h, steps = parents[h], steps + 1
    raw["messages"] = []
    pcols = ("id", "position", "type", "tool_name", "text", "payload")
    roles = {}
    if "messages" in t and {"role", "hash"} <= t["messages"]:
        for h in chain:
            roles[h] = conn.execute("SELECT role FROM messages WHERE hash = ?", (h,)).fetchone()[0]
    later = None
    for h in reversed(chain):  # a message no turn spans (llm 0.36's system message, before the first prompt):
        if h in when:  # the time of the next one that has a time
            later = when[h]
        elif later is not None:
            when[h] = later
    for h in chain:
        parts = []
        if "parts" in t and "message_hash" in t["parts"]:
            parts = [
                dict(zip(pcols, p))
                for p in conn.execute(
                    f"SELECT {_cols(t, 'parts', pcols)} FROM parts WHERE message_hash = ? ORDER BY "
                    f"{_c(t, 'parts', 'position')}",
                    (h,),
                )
            ]
        raw["messages"].append({"hash": h, "role": roles.get(h), "parts": parts})
        at, at_ts = when.get(h, (None, None))
        _message(conn, t, h, roles.get(h), parts, at, at_ts, out, path, findings, cid)


_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}  # (tool: llm 0.36)


def _message(conn, t, h, role, parts, at, at_ts, out, path, findings, cid) -> None:
    text, reasoning, calls, attachments, unknown = [], [], [], [], []
    results = []
    for p in parts:
        payload = _json(p["payload"]) if p["payload"] is not None else {}
        if not isinstance(payload, dict):
            findings.append(
                Finding("bad-payload", path, f"part {p['id']} of {h}: payload is not a JSON object", WARNING, cid)
            )
            payload = {"value": payload}
        kind = p["type"]
        if kind == "text":
            text.append(_str(p["text"]) if p["text"] is not None else _text_ref(conn, t, payload))
        elif kind == "reasoning":
            reasoning.append(_str(p["text"]) or ("[redacted reasoning]" if payload.get("redacted") else ""))
        elif kind == "tool_call":
            calls.append(
                ToolCall(
                    _opt(payload.get("tool_call_id")),
                    _opt(payload.get("name") or p["tool_name"]) or "?",
                    payload.get("arguments"),
                )
            )
        elif kind == "tool_result":
            results.append(
                Message(
                    "tool",
                    _str(payload.get("output")),
                    at,
                    at_ts,
                    f"{h}/{p['position']}",
                    tool_call_id=_opt(payload.get("tool_call_id")),
                    tool_name=_opt(payload.get("name") or p["tool_name"]) or None,
                    tool_status="error" if payload.get("exception") else None,
                    kind="tool_result",
                    raw=p,
                )
            )
        elif kind == "attachment":
            a = payload.get("attachment") if isinstance(payload.get("attachment"), dict) else {}
            attachments += _attachment_by_id(conn, t, a.get("id"))
        else:
            unknown.append(f"[unknown part type {_str(kind)[:40]!r}] {_str(p['text']) or _str(p['payload'])}")
            findings.append(
                Finding(
                    "unknown-part",
                    path,
                    f"part {p['id']} of {h}: type {_str(kind)[:40]!r} is not one samctl knows; shown as stored",
                    INFO,
                    cid,
                )
            )
    if role not in _ROLES:
        findings.append(
            Finding("unknown-role", path, f"message {h}: role {_str(role)[:40]!r}; shown as a user message", INFO, cid)
        )
    out.extend(results)
    if text or reasoning or calls or attachments or unknown or not results:
        out.append(
            Message(
                _ROLES.get(role, "user"),
                "\n".join(text + unknown),
                at,
                at_ts,
                h,
                tool_calls=calls,
                reasoning="\n".join(reasoning) or None,
                attachments=attachments,
                kind="message",
            )
        )


def _text_ref(conn, t, payload) -> str:
    """A text part that borrows fragments: the pieces in order (a fragment by id, capped; a literal as is)."""
    out = []
    for ref in as_list(payload.get("text_ref")):
        if isinstance(ref, dict) and isinstance(ref.get("literal"), str):
            out.append(ref["literal"])
        elif (
            isinstance(ref, dict)
            and isinstance(ref.get("fragment"), (str, int))
            and {"id", "content"} <= t.get("fragments", set())
        ):
            row = conn.execute(
                "SELECT substr(content, 1, 1000000) FROM fragments WHERE id = ?", (ref["fragment"],)
            ).fetchone()
            out.append(_str(row[0]) if row else f"[missing fragment {ref['fragment']}]")
    return "".join(out)


def _attachment_by_id(conn, t, aid) -> list:
    if (
        "attachments" not in t
        or not isinstance(aid, str)
        or not {"id", "type", "path", "url", "content"} <= t["attachments"]
    ):
        return []
    row = conn.execute("SELECT type, path, url, length(content) FROM attachments WHERE id = ?", (aid,)).fetchone()
    if row is None:
        return [{"type": "file", "text": f"[missing attachment {aid[:64]}]"}]
    mime, apath, url, n = row
    kind = _str(mime).partition("/")[0] or "file"
    if url or apath:
        return [{"type": kind, "url": _str(url) or "file://" + _str(apath), "mime": mime}]
    return [{"type": kind, "bytes": n or 0, "mime": mime, "id": aid}]


def _load_log(conn, t, cid, path, findings) -> Conversation | None:
    lid = int(cid[4:])
    for table in ("logs", "log"):
        if table not in t or "id" not in t[table]:
            continue
        cols = ("id", "model", "prompt", "system", "response", "datetime_utc", "timestamp")
        row = conn.execute(f'SELECT {_cols(t, table, cols)} FROM "{table}" WHERE id = ?', (lid,)).fetchone()
        if row is None:
            continue
        r = dict(zip(cols, row))
        when = _opt(r["datetime_utc"]) or _opt(r["timestamp"])
        at = ts(when) if isinstance(when, str) else None
        msgs = []
        if r["system"]:
            msgs.append(Message("system", _str(r["system"]), when, at, kind="system"))
        msgs.append(Message("user", _str(r["prompt"]), when, at, kind="prompt"))
        msgs.append(Message("assistant", _str(r["response"]), when, at, kind="response"))
        meta = ConversationMeta(
            "llm",
            cid,
            _title(r["prompt"]) or "(untitled)",
            format_utc(at),
            format_utc(at),
            at,
            at,
            len(msgs),
            None,
            False,
            path,
        )
        meta.model = _opt(r["model"])
        return Conversation(meta, msgs, {table: r}, meta.model, path)
    return None
