"""The stores' usage readers on the real formats: Codex token_count events, llm rows, hostile values."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from samctl.stores import open_store
from samctl.stores.claude_code.usage import parse_usage as claude_parse
from samctl.stores.codex.usage import parse_usage as codex_parse

REPO = Path(__file__).resolve().parents[2]


def _tu(i, cached, o, rs):
    return {
        "input_tokens": i,
        "cached_input_tokens": cached,
        "output_tokens": o,
        "reasoning_output_tokens": rs,
        "total_tokens": i + o,
    }


def _tc(ts, total, last):
    return {
        "timestamp": ts,
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {"total_token_usage": total, "last_token_usage": last, "model_context_window": 272000},
            "rate_limits": {"primary": {"used_percent": 3.0}},
        },
    }


def _rollout(lines) -> bytes:
    head = [
        {
            "timestamp": "2026-02-10T08:30:01.000Z",
            "type": "session_meta",
            "payload": {"id": "019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f", "cwd": "/home/ana/api", "model": "gpt-5"},
        },
        {
            "timestamp": "2026-02-10T08:30:02.000Z",
            "type": "turn_context",
            "payload": {"cwd": "/home/ana/api", "model": "gpt-5.1-codex"},
        },
    ]
    return "".join(json.dumps(x) + "\n" for x in head + lines).encode()


def test_codex_counts_each_turn_once_from_running_totals():
    t1, t2 = _tu(1000, 200, 50, 10), _tu(2500, 1200, 130, 30)
    data = _rollout(
        [
            _tc("2026-02-10T08:30:10.000Z", t1, t1),
            _tc("2026-02-10T08:30:11.000Z", t1, t1),  # the same total again (new rate limits): nothing added
            {
                "timestamp": "2026-02-10T08:30:12.000Z",
                "type": "event_msg",
                "payload": {"type": "token_count", "info": None},
            },
            _tc("2026-02-10T08:31:00.000Z", t2, _tu(1500, 1000, 80, 20)),
        ]
    )
    project, rows, found = codex_parse(data, "r.jsonl", "s")
    assert project == "/home/ana/api" and found == []
    # [ts, model, key, input, output, cache write, cache read, reasoning]; input excludes cached input
    assert [r[1:] for r in rows] == [
        ["gpt-5.1-codex", None, 800, 50, 0, 200, 10],
        ["gpt-5.1-codex", None, 500, 80, 0, 1000, 20],
    ]
    assert sum(r[3] + r[6] for r in rows) == 2500  # equals the last running total's input: never added twice


def test_codex_new_process_and_hostile_counts():
    data = _rollout(
        [
            _tc("2026-02-10T08:30:10.000Z", _tu(1000, 0, 50, 0), _tu(1000, 0, 50, 0)),
            # a resumed process starts its running total again: its last_token_usage is the turn
            _tc("2026-02-11T09:00:00.000Z", _tu(300, 0, 20, 0), _tu(300, 0, 20, 0)),
            _tc("2026-02-11T09:01:00.000Z", _tu(-1, 0, 20, 0), _tu(True, 0, 1, 0)),
            _tc("not a time", _tu(5000, 0, 20, 0), _tu(4700, 0, 0, 0)),
        ]
    )
    _, rows, found = codex_parse(data, "r.jsonl", "s")
    assert [(r[3], r[4]) for r in rows] == [(1000, 50), (300, 20)]
    assert [f.code for f in found] == ["bad-usage"] and "2 token_count events" in found[0].reason


def test_claude_hostile_usage_values_are_findings_not_counts():
    good = {
        "type": "assistant",
        "timestamp": "2026-03-04T09:00:00Z",
        "requestId": "req_1",
        "cwd": "/p",
        "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 3, "output_tokens": 4}},
    }
    lines = [good]
    for usage in (
        {"input_tokens": "3", "output_tokens": 4},
        {"input_tokens": 1.5, "output_tokens": 4},
        {"input_tokens": 2**60, "output_tokens": 4},
        {"input_tokens": 1, "output_tokens": None},
        {"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": -3},
    ):
        lines.append(dict(good, message=dict(good["message"], id="msg_x", usage=usage)))
    lines.append(dict(good, message=dict(good["message"], id="msg_y", model=["not", "a", "name"])))
    lines.append(dict(good, timestamp=12345))
    data = ("".join(json.dumps(x) + "\n" for x in lines) + '{"message": {"usage": \n').encode()
    project, rows, found = claude_parse(data, "s.jsonl", "sid")
    assert project == "/p" and [r[1:] for r in rows] == [["claude-sonnet-4-5", "msg_1:req_1", 3, 4, 0, 0, 0]]
    assert sorted(f.code for f in found) == ["bad-line", "bad-usage"]
    assert "7 usage entries" in [f for f in found if f.code == "bad-usage"][0].reason


def test_llm_rows_with_token_details(tmp_path, monkeypatch):
    shutil.copytree(REPO / "fixtures" / "demo" / "llm", tmp_path / "llm")
    db = sqlite3.connect(tmp_path / "llm" / "logs.db")
    db.execute(
        "UPDATE responses SET input_tokens = 1000, output_tokens = 300, token_details = ? WHERE id = ?",
        (
            json.dumps(
                {
                    "prompt_tokens_details": {"cached_tokens": 600},
                    "completion_tokens_details": {"reasoning_tokens": 120},
                }
            ),
            "01kf3a0c1eabcdefghjkmnpqrs",
        ),
    )
    db.execute(
        "UPDATE responses SET input_tokens = 10, output_tokens = 5, token_details = ? WHERE id = ?",
        (json.dumps({"cache_creation_input_tokens": 70, "cache_read_input_tokens": 80}), "01kf3a0c2fabcdefghjkmnpqrs"),
    )
    db.execute("UPDATE responses SET input_tokens = -4 WHERE id = '01h5a0c1eabcdefghjkmnpqrst'")
    db.commit()
    db.close()
    store = open_store(str(tmp_path / "llm"))
    findings: list = []
    by_model: dict = {}
    for r in store.usage_records(findings):
        by_model.setdefault(r.model, []).append(r)
    r1 = by_model["gpt-4.1-mini-2025-04-14"][0]  # resolved_model wins over model
    assert (r1.input, r1.output, r1.cache_read, r1.reasoning) == (400, 300, 600, 120)
    r2 = by_model["gpt-4.1-mini"][0]
    assert (r2.input, r2.output, r2.cache_creation, r2.cache_read) == (10, 5, 70, 80)
    assert "gpt-4o-mini" not in by_model  # the row with a negative count
    assert [f.code for f in findings] == ["bad-usage"]
