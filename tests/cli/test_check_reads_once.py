"""`check` reads each file of a store once and parses each text once (issue #32): the duplicate-key
scan and the log's checks work on the bytes and the parse the other checks already have, so a
clean store costs about what reading and parsing it costs.  Findings are those of tests/cli/test_check.py
and tests/cli/test_duplicate_keys.py; this file only counts the work."""

from __future__ import annotations

import os
from collections import Counter

import orjson
import pytest

from samctl.fs import reading


@pytest.fixture
def counted(monkeypatch):
    """(reads by path, bytes given to orjson.loads) while the test runs."""
    reads: Counter = Counter()
    parsed = [0]
    real_read, real_loads = reading.read_capped, orjson.loads

    def read_capped(path, cap):
        reads[os.path.abspath(os.fspath(path))] += 1
        return real_read(path, cap)

    def loads(data):
        parsed[0] += len(data)
        return real_loads(data)

    monkeypatch.setattr(reading, "read_capped", read_capped)
    monkeypatch.setattr(orjson, "loads", loads)
    return reads, parsed


def _files(conv, suffixes) -> dict:
    return {
        os.path.abspath(os.path.join(d, n)): os.path.getsize(os.path.join(d, n))
        for d, _, names in os.walk(conv)
        for n in names
        if n.endswith(suffixes)
    }


def test_mermaid_check_reads_and_parses_each_file_once(run, mermaid_demo, counted):
    reads, parsed = counted
    files = _files(mermaid_demo / ".mermaid" / "conversations", (".json", ".meta", ".jsonl"))
    assert any(p.endswith(".jsonl") for p in files) and any(p.endswith(".json") for p in files)
    r = run("--root", mermaid_demo, "check", env={"SAMCTL_JOBS": "1"})
    assert r.exit_code == 0, r.output
    assert {p: reads[p] for p in files} == dict.fromkeys(files, 1)
    assert parsed[0] <= sum(files.values()), (parsed[0], sum(files.values()))


def test_sam_check_reads_and_parses_each_conversation_once(run, sam_demo, counted):
    reads, parsed = counted
    files = _files(sam_demo / "conversations", ("conversation.json",))
    assert files
    r = run("--root", sam_demo, "check", env={"SAMCTL_JOBS": "1"})
    assert r.exit_code in (0, 3), r.output
    assert {p: reads[p] for p in files} == dict.fromkeys(files, 1)
    assert parsed[0] <= sum(_files(sam_demo, (".json",)).values()), parsed[0]


def _env(seq: int, event: dict) -> bytes:
    return orjson.dumps({"v": 1, "seq": seq, "ts": "2026-01-01T00:00:00Z", "event": event})


_STARTED = {
    "type": "started",
    "session_id": "20260101_000000_000",
    "project_path": "/p",
    "model_id": "m",
    "created_at": "2026-01-01T00:00:00Z",
}
_LINES = [_env(0, _STARTED), _env(1, {"type": "input", "text": "a: b"}), _env(2, {"type": "input", "text": "c"})]


@pytest.mark.parametrize(
    "data",
    [
        b"\n".join(_LINES) + b"\n",  # clean
        b"\n".join(_LINES),  # torn tail, a complete event
        b"\n".join(_LINES) + b"\n" + _LINES[2][:9],  # torn tail, half an event
        b"\n".join(_LINES[:2]) + b"\nnot json\n" + _LINES[2] + b"\n",  # malformed
        b"\n".join(_LINES[:2]) + b"\n\xff\xfe\n",  # invalid UTF-8
        b"\n".join(_LINES[1:]) + b"\n",  # headerless
        b"",
    ],
)
def test_events_text_is_the_lines_the_events_came_from(data):
    from samctl.stores.mermaid import eventlog

    read = eventlog.parse_log(data)
    n = len(read.events)
    text = eventlog.events_text(read, data)
    assert text.split(b"\n")[:n] == data.split(b"\n", n)[:n]
    assert text.count(b":") == sum(line.count(b":") for line in data.split(b"\n")[:n])


def test_a_repeated_field_before_a_malformed_line_is_still_found(run, mermaid_demo):
    from tests.cli.test_lifecycle import MID, conv

    log = conv(mermaid_demo) / f"{MID}.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"seq":', b'"seq":1,"seq":', 1)
    log.write_bytes(b"".join(lines[:3]) + b"{not json\n" + b"".join(lines[3:]))
    before = log.read_bytes()
    r = run("--root", mermaid_demo, "check")
    assert r.exit_code == 3, r.output
    assert "error: log-duplicate-key: " in r.stderr and "line 2 " in r.stderr and "'seq' appears twice" in r.stderr
    assert "log-malformed" in r.stderr, r.stderr
    assert log.read_bytes() == before
