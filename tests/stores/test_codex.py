"""The Codex CLI decoder (samctl.stores.codex.decode) on every generation, and on broken input.

Each broken case checks the finding's code and that the rest of the file still reads."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from samctl.errors import FileProblem
from samctl.stores.codex.decode import decode_rollout
from samctl.stores.codex.store import decompress

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_codex", REPO / "fixtures" / "make_codex.py")
mcx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mcx)


def _data(lines) -> bytes:
    return "".join(json.dumps(d) + "\n" for d in lines).encode()


def _decode(data: bytes, path="/x/rollout-2026-02-10T08-30-01-t.jsonl", cid=mcx.T1, **kw):
    return decode_rollout(data, path, cid, **kw)


def _codes(findings):
    return [f.code for f in findings]


def _shown(conv):
    return [m for m in conv.messages if not m.hidden]


def test_g2_text_is_shown_once_from_the_event_stream():
    conv, found = _decode(_data(mcx.thread_one()))
    texts = [m.content for m in _shown(conv)]
    assert texts.count("list the failing tests") == 1
    assert texts.count("Two tests fail: test_login and test_logout.") == 1
    assert conv.model == "gpt-5.1-codex"
    assert conv.meta.title == "auth test failures"  # thread_name_updated
    assert conv.meta.created == "2026-02-10T08:30:01.100Z" and conv.meta.updated == "2026-02-10T09:17:00.000Z"
    assert sorted(set(_codes(found))) == ["unknown-type"]


def test_g2_tool_calls_joined_by_call_id_and_reasoning_attached():
    conv, _ = _decode(_data(mcx.thread_one()))
    shown = _shown(conv)
    call = next(m for m in shown if m.tool_calls and m.tool_calls[0].name == "shell")
    assert call.reasoning == "**Running the test suite**" and call.tool_calls[0].id == "call_7Hq2"
    res = next(m for m in shown if m.role == "tool" and m.tool_call_id == "call_7Hq2")
    assert res.tool_name == "shell" and res.content == "2 failed, 40 passed"
    local = next(m for m in shown if m.role == "tool" and m.tool_call_id == "call_Lz1")
    assert local.tool_name == "local_shell" and local.content == "tests/conftest.py:8:smtp_server()"
    assert any(m.tool_calls and m.tool_calls[0].name == "web_search" for m in shown)


def test_rollback_hides_the_dropped_turn_and_keeps_it():
    conv, _ = _decode(_data(mcx.thread_one()))
    shown = [m.content for m in _shown(conv)]
    assert "fix test_login" not in shown and "Raised the timeout to 30 s." not in shown
    dropped = [m for m in conv.messages if m.kind == "rolled-back"]
    assert "fix test_login" in [m.content for m in dropped]
    assert "mock the mail server in test_login" in shown


def test_injected_context_is_hidden_without_events():
    lines = [
        mcx._meta(mcx.T1, "2026-02-10T08:30:01Z"),
        mcx._msg("2026-02-10T08:30:02Z", "user", "<environment_context>cwd</environment_context>"),
        mcx._msg("2026-02-10T08:30:03Z", "user", "hello there"),
        mcx._msg("2026-02-10T08:30:04Z", "assistant", "hi", "output_text"),
    ]
    conv, found = _decode(_data(lines))
    assert [m.content for m in _shown(conv)] == ["hello there", "hi"]
    assert conv.meta.title == "hello there" and found == []


def test_index_title_wins():
    conv, _ = _decode(_data(mcx.thread_one()), index_title="from the index")
    assert conv.meta.title == "from the index"


def test_g1_early_rust_file():
    conv, found = _decode(_data(mcx.thread_g1()), cid=mcx.T4)
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert conv.messages[2].content == "src/x.py:3:foo()"
    assert conv.meta.created == "2025-08-20T14:02:11.000Z" and found == []


def test_g0_typescript_json():
    doc = {
        "session": {"timestamp": "2025-04-30T10:00:00.000Z", "id": mcx.T5, "instructions": ""},
        "items": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}],
    }
    conv, found = _decode(json.dumps(doc, indent=2).encode(), path="/x/rollout-2025-04-30-d.json", cid=mcx.T5)
    assert [m.content for m in conv.messages] == ["hello"] and found == []


def test_function_output_shapes():
    lines = [mcx._meta(mcx.T1, "2026-02-10T08:30:01Z")]
    for i, out in enumerate(
        [
            "plain",
            [
                {"type": "input_text", "text": "items"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            ],
            {"content": "old", "success": False},
            None,
            7,
        ]
    ):
        lines.append(
            mcx._r(
                "2026-02-10T08:30:02Z",
                "response_item",
                {"type": "function_call_output", "call_id": f"c{i}", "output": out},
            )
        )
    conv, found = _decode(_data(lines))
    tools = [m for m in conv.messages if m.role == "tool"]
    assert [t.content for t in tools] == ["plain", "items", "old", "", "7"]
    assert tools[1].attachments[0]["type"] == "image" and tools[2].tool_status == "error"


# ------------------------------------------------------------------------ broken input


def test_torn_last_line_and_bad_middle_line():
    lines = [json.dumps(d) for d in mcx.thread_one()]
    lines.insert(4, "{broken")
    data = ("\n".join(lines) + "\n").encode() + b'{"timestamp":"2026'
    conv, found = _decode(data)
    assert "bad-line" in _codes(found) and "torn-tail" in _codes(found)
    assert conv.meta.title == "auth test failures"


def test_first_record_not_session_meta_is_reported_and_read():
    conv, found = _decode(_data(mcx.thread_one()[1:]))
    assert "no-session-meta" in _codes(found)
    assert "list the failing tests" in [m.content for m in conv.messages]


def test_invalid_utf8_and_nul():
    line = json.dumps(mcx._ev("2026-02-10T08:30:05Z", "user_message", message="caf\u00e9")).encode()
    data = _data(mcx.thread_three()[:1]) + line.replace(b"caf\\u00e9", b"caf\xff") + b"\n\x00\n"
    conv, found = _decode(data)
    assert {"bad-utf8", "bad-line"} <= set(_codes(found))
    assert "caf\ufffd" in [m.content for m in conv.messages]


def test_deep_nesting_and_huge_line():
    deep = b'{"timestamp":"t","type":"event_msg","payload":' + b"[" * 3000 + b"]" * 3000 + b"}\n"
    huge = _data([mcx._ev("2026-02-10T08:30:05Z", "agent_message", message="y" * 20000)])
    ok = _data([mcx._ev("2026-02-10T08:30:06Z", "agent_message", message="fine")])
    conv, found = _decode(_data(mcx.thread_three()[:1]) + deep + huge + ok, line_cap=10000)
    assert {"bad-line", "huge-line"} <= set(_codes(found))
    assert [m.content for m in conv.messages] == ["fine"]


@pytest.mark.parametrize(
    "line",
    [
        b"[1]",
        b'{"type":"response_item","payload":[1]}',
        b'{"type":"response_item","payload":{"type":"message","content":5}}',
        b'{"type":"response_item","payload":{"type":"reasoning","summary":"abc"}}',
        b'{"type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":99}}',
        b'{"type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":true}}',
        b'{"type":"event_msg","payload":{"type":"user_message","images":[1,"x"]}}',
        b'{"type":"response_item","payload":{"type":"function_call","arguments":{}}}',
        b'{"type":"turn_context","payload":{"model":["x"]}}',
        b'{"payload":{}}',
        b'{"type":"response_item","payload":{"type":[1]}}',
        b'{"type":"event_msg","payload":{"type":{}}}',
    ],
)
def test_odd_shapes_never_raise(line):
    ok = _data([mcx._ev("2026-02-10T08:30:06Z", "agent_message", message="after")])
    conv, _ = _decode(_data(mcx.thread_three()[:1]) + line + b"\n" + ok)
    assert "after" in [m.content for m in conv.messages]


def test_zstd_bomb_and_garbage_are_refused():
    import zstandard

    bomb = zstandard.ZstdCompressor().compress(b"\n" * 100_000)
    with pytest.raises(FileProblem) as exc:
        decompress(bomb, 1000, "/x.zst")
    assert exc.value.code == "too-large"
    with pytest.raises(FileProblem) as exc:
        decompress(b"\x28\xb5\x2f\xfdgarbage", 1000, "/x.zst")
    assert exc.value.code == "bad-zstd"
    assert decompress(zstandard.ZstdCompressor().compress(b"abc"), 1000, "/x.zst") == b"abc"


def test_subagent_and_fork_origin_is_a_note():
    from samctl.stores.codex.decode import decode_rollout as dec

    conv, _ = dec(_data(mcx.thread_two()), "/x.jsonl", mcx.T2)
    assert (
        conv.messages[0].kind == "origin" and mcx.T1 in conv.messages[0].content and "scout" in conv.messages[0].content
    )
    assert conv.meta.title == "find where the mail server is started"
    conv, _ = dec(_data([mcx._meta(mcx.T2, "2026-02-10T08:40:00Z", forked_from_id=mcx.T1)]), "/x.jsonl", mcx.T2)
    assert conv.messages[0].content == f"forked from thread {mcx.T1}"


def test_the_rollback_marker_is_not_a_search_row_but_the_dropped_turn_is():
    from samctl.stores.sources import message_rows

    conv, _ = _decode(_data(mcx.thread_one()))
    marks = [m for m in conv.messages if m.content.startswith("──") and "rolled back" in m.content]
    assert marks and all(m.marker for m in marks)
    texts = [r.text for r in message_rows(conv, "x")]
    assert not any("rolled back above" in t for t in texts) and "fix test_login" in texts
