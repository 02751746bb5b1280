"""SAM's ``context_archive.db`` (sam.md §8), read safely; and made, for tests and fixtures.

Those of ``sqlitefile``: reading changes nothing, bad files and rows are findings.  The only writer,
``create_archive_db``, is for tests and fixtures.

Design notes: docs/stores.md, "stores/sam/archivedb.py".
"""

from __future__ import annotations

import json
import math
import os
import sqlite3

import orjson

from samctl.fs import filemodes
from samctl.model import WARNING
from samctl.safetext import quoted
from samctl.stores.sam.dbvalues import APPLE_EPOCH, format_db_date, is_uuid, parse_db_date
from samctl.stores.sam.sqlitefile import (
    ARCHIVE_SCHEMA_SQL,
    ARCHIVE_TABLE,
    BATCH,
    DEFAULT_TIMEOUT,
    MAX_ROW_FINDINGS,
    SQLITE_ERRORS,
    BadText,
    Reporter,
    open_checked,
    row_batches,
    sqlite_finding,
    text_factory,
)

ARCHIVE_REASONS = ("yarn_compression", "manual", "token_limit", "conversation_trimmed")

_ARCHIVE_SELECT = (
    'SELECT rowid, "id", "conversation_id", "messages_json", "time_start", "time_end", "summary", '
    '"key_topics_json", "token_count", "reason", "created_at" FROM "context_archives"'
)


def _check_archive(r, rep: Reporter, scope_id: str | None, loads) -> dict | None:
    rowid, aid, cid, mjson, tstart, tend, summary, topics_json, tokens, reason, created = r
    at = f"row {rowid}"
    if not is_uuid(aid):
        rep.add("archive-bad-id", f"{at}: id {aid!r} is not a UUID")
        return None
    if not is_uuid(cid):
        rep.add("archive-bad-id", f"{at} ({aid}): conversation_id {quoted(cid)} is not a UUID")
        return None
    at = f"{at} ({aid})"
    for col, val in (
        ("messages_json", mjson),
        ("summary", summary),
        ("key_topics_json", topics_json),
        ("reason", reason),
    ):
        if not isinstance(val, str):
            rep.add("archive-bad-value", f"{at}: {col} is {type(val).__name__}, not text")
            return None
    if not isinstance(tokens, int):
        rep.add("archive-bad-value", f"{at}: token_count is {type(tokens).__name__}, not an integer")
        return None
    stamps = {}
    for col, val in (("time_start", tstart), ("time_end", tend), ("created_at", created)):
        ts = parse_db_date(val)
        if ts is None:
            rep.add("archive-bad-date", f"{at}: {col} {val!r} is not yyyy-MM-ddTHH:mm:ss.SSS")
            return None
        stamps[col + "_ts"] = ts
    try:
        messages = loads(mjson)
    except ValueError as exc:
        rep.add("archive-bad-json", f"{at}: messages_json is not JSON ({exc})")
        return None
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        rep.add("archive-bad-json", f"{at}: messages_json is not an array of objects")
        return None
    for m in messages:
        ts = m.get("timestamp")
        ok = isinstance(ts, (int, float)) and not isinstance(ts, bool) and math.isfinite(ts)
        m["timestamp_epoch"] = ts + APPLE_EPOCH if ok else None
    try:
        topics = loads(topics_json)
    except ValueError:
        topics = None
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        rep.add("archive-bad-topics", f"{at}: key_topics_json is not a JSON array of strings", WARNING)
        topics = []
    if scope_id is not None and cid != scope_id:
        rep.add("archive-scope", f"{at}: conversation_id {cid} is not the folder's {scope_id}", WARNING)
    texts = (aid, cid, mjson, tstart, tend, summary, topics_json, reason, created)
    if any(type(t) is BadText for t in texts):
        rep.add("archive-bad-utf8", f"{at}: text that is not valid UTF-8 (kept with surrogate escapes)", WARNING)
    return {
        "rowid": rowid,
        "id": str(aid),
        "conversation_id": str(cid),
        "messages": messages,
        "time_start": str(tstart),
        "time_end": str(tend),
        "summary": str(summary),
        "key_topics": topics,
        "token_count": tokens,
        "reason": str(reason),
        "created_at": str(created),
        **stamps,
    }


def read_archives(
    path,
    findings: list,
    *,
    scope_id: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    missing_ok: bool = False,
) -> list[dict]:
    """Every good row of a ``context_archive.db`` in rowid order, as dicts.

    Keys: ``rowid``, ``id``, ``conversation_id``, ``messages`` (``messages_json`` decoded; each
    message gains ``timestamp_epoch`` = its 2001-based ``timestamp`` as Unix seconds, or None),
    ``summary``, ``key_topics`` (decoded), ``token_count``, ``reason``, ``time_start``,
    ``time_end``, ``created_at`` (as stored) and their ``*_ts`` Unix seconds.  Never raises for
    a bad file; problems go to ``findings``.
    """
    spath = os.fspath(path)
    conn = open_checked(path, findings, ARCHIVE_TABLE, timeout, scope_id, missing_ok)
    if conn is None:
        return []
    rep = Reporter(findings, spath, scope_id, MAX_ROW_FINDINGS)
    out: list[dict] = []
    try:
        conn.text_factory = text_factory
        batches = row_batches(conn, _ARCHIVE_SELECT, BATCH)
        while True:
            try:
                rows = next(batches, None)
            except SQLITE_ERRORS as exc:
                after = f" (stopped after {len(out)} rows)" if out else ""
                findings.append(sqlite_finding(exc, spath, scope_id, after))
                break
            if rows is None:
                break
            for r in rows:
                row = _check_archive(r, rep, scope_id, orjson.loads)
                if row is not None:
                    out.append(row)
    finally:
        rep.finish()
        conn.close()
    return out


# ---------------------------------------------------------------------------------------------
# Writing (tests and fixtures)


def encode_archive_messages(messages: list[dict]) -> str:
    """``messages_json`` as SAM's default JSONEncoder writes it: compact, ``/`` escaped as ``\\/``."""
    return json.dumps(messages, separators=(",", ":"), ensure_ascii=False, allow_nan=False).replace("/", "\\/")


def create_archive_db(path, rows=(), mode: int = filemodes.FILE_MODE):
    """Make a ``context_archive.db`` with the sam.md §8 schema and insert ``rows``; for tests and fixtures.

    A row is a dict with the sam.md §8 columns (``messages`` and ``key_topics`` as Python lists may
    stand for ``messages_json``/``key_topics_json``) or a tuple of the 10 columns.
    """
    values = []
    for r in rows:
        if isinstance(r, dict):
            mj = r.get("messages_json")
            if mj is None:
                mj = encode_archive_messages(r.get("messages", []))
            kj = r.get("key_topics_json")
            if kj is None:
                kj = json.dumps(r.get("key_topics", []), separators=(",", ":"), ensure_ascii=False)
            created = r.get("created_at") or format_db_date()
            values.append(
                (
                    r["id"],
                    r["conversation_id"],
                    mj,
                    r.get("time_start", created),
                    r.get("time_end", created),
                    r.get("summary", ""),
                    kj,
                    r.get("token_count", 0),
                    r.get("reason", "conversation_trimmed"),
                    created,
                )
            )
        else:
            values.append(tuple(r))
    db = sqlite3.connect(os.fspath(path))
    try:
        db.executescript(ARCHIVE_SCHEMA_SQL)
        db.executemany('INSERT INTO "context_archives" VALUES (?,?,?,?,?,?,?,?,?,?)', values)
        db.commit()
    finally:
        db.close()
    os.chmod(path, mode)
    return path
