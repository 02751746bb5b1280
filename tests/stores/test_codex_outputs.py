"""Codex's text headers on tool results, unwrapped like its JSON envelope: the output with its exit code and
wall time, a non-zero exit an error (docs/formats/codex.md, "tool result").

Newer Codex writes a shell result as text, not JSON: ``shell``/``shell_command`` as ``Exit code: N``,
``Wall time: S seconds``, ``Output:`` and the output; unified exec (``exec_command``, ``write_stdin``) as
``Chunk ID``, ``Wall time``, ``Process exited with code N`` (or ``Process running with session ID N``),
``Original token count``, ``Output:``. The lines below have those shapes (as independent parsers of real
rollouts quote them)."""

from __future__ import annotations

import json

import pytest

from samctl.stores.codex.decode import decode_rollout

META = {"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta", "payload": {"id": "x", "cwd": "/p"}}


def _result(name: str, output: str):
    lines = [
        META,
        {"timestamp": "2026-03-01T10:00:01.000Z", "type": "event_msg",
         "payload": {"type": "user_message", "message": "run it"}},
        {"timestamp": "2026-03-01T10:00:02.000Z", "type": "response_item",
         "payload": {"type": "function_call", "name": name, "arguments": "{\"cmd\": \"make\"}", "call_id": "c1"}},
        {"timestamp": "2026-03-01T10:00:03.000Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "c1", "output": output}},
    ]  # fmt: skip
    data = b"".join(json.dumps(x).encode() + b"\n" for x in lines)
    conv, found = decode_rollout(data, "/p/r.jsonl", "x")
    assert found == []
    (m,) = [m for m in conv.messages if m.role == "tool"]
    return m


@pytest.mark.parametrize(
    ("name", "output", "content", "code", "took", "status"),
    [
        ("shell_command", "Exit code: 0\nWall time: 0.2 seconds\nOutput:\nM README.md\n", "M README.md\n", 0, 0.2,
         "success"),
        ("shell", "Exit code: 2\nWall time: 1.5 seconds\nTotal output lines: 3\nOutput:\nboom", "boom", 2, 1.5,
         "error"),
        ("exec_command", "Chunk ID: 13d232\nWall time: 0.2667 seconds\nProcess exited with code 0\n"
         "Original token count: 10\nOutput:\nhello", "hello", 0, 0.2667, "success"),
        ("exec_command", "Command: /bin/bash -lc false\nChunk ID: 1\nWall time: 0.0 seconds\n"
         "Process exited with code 128\nOutput:\n", "", 128, 0.0, "error"),
        ("exec_command", "Chunk ID: f800eb\nWall time: 1.0024 seconds\nProcess running with session ID 32244\n"
         "Original token count: 63\nOutput:\nready in 7 ms\n", "Process running with session ID 32244\nready in 7 ms\n",
         None, 1.0024, "success"),
    ],
)  # fmt: skip
def test_text_headers_are_unwrapped(name, output, content, code, took, status):
    m = _result(name, output)
    assert (m.content, m.exit_code, m.duration, m.tool_status) == (content, code, took, status)


@pytest.mark.parametrize(
    "output",
    [
        "Exit code: 0 is what the docs say\nOutput:\nx",  # not a header line
        "Exit code: 0\nWall time: 0.1 seconds\nno output line",  # no "Output:"
        "Some tool text\nExit code: 1\nOutput:\nx",  # the header is the start, or nothing
        "Wall time: 0.1 seconds\nOutput:\nx",  # neither an exit code nor a process line
    ],
)
def test_other_text_is_left_as_it_is(output):
    m = _result("mcp__x__y", output)
    assert (m.content, m.exit_code, m.duration, m.tool_status) == (output, None, None, "success")


def test_show_prints_the_output_under_a_header_with_exit_and_time(run, tmp_path):
    day = tmp_path / ".codex" / "sessions" / "2026" / "03" / "01"
    day.mkdir(parents=True)
    cid = "019c9d89-ae90-75e2-9555-7855bac35c45"
    lines = [
        {**META, "payload": {"id": cid, "cwd": "/p"}},
        {"timestamp": "2026-03-01T10:00:01.000Z", "type": "event_msg",
         "payload": {"type": "user_message", "message": "run the tests"}},
        {"timestamp": "2026-03-01T10:00:02.000Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "shell_command",
                     "arguments": "{\"command\": \"pytest -q\", \"workdir\": \"/p\"}", "call_id": "call_9"}},
        {"timestamp": "2026-03-01T10:00:08.000Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "call_9",
                     "output": "Exit code: 1\nWall time: 5.6 seconds\nOutput:\n2 failed, 40 passed\n"}},
    ]  # fmt: skip
    (day / f"rollout-2026-03-01T10-00-00-{cid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = run("--root", tmp_path / ".codex", "show", cid, "--no-pager")
    assert (r.exit_code, r.stderr) == (0, "")
    assert "── tool shell_command [error] · exit 1 · 5.6s · 2026-03-01 10:00 ──\n2 failed, 40 passed\n" in r.stdout
    assert "Wall time" not in r.stdout and "call_9" not in r.stdout
