"""The Claude Code decoder (samctl.stores.claude_code.decode) on spec-true and broken input.

Each broken case checks the finding's code and that the rest of the file still reads."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from samctl.stores.claude_code.decode import agent_ids, decode_session

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_claude_code", REPO / "fixtures" / "make_claude_code.py")
mcc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mcc)

SID = mcc.S1


def _data(lines) -> bytes:
    return "".join(json.dumps(d) + "\n" for d in lines).encode()


def _decode(data: bytes, agents=(), **kw):
    return decode_session(data, "/x/s.jsonl", SID, agents, **kw)


def _codes(findings) -> list:
    return [f.code for f in findings]


def test_demo_session_main_branch_titles_and_merging():
    conv, found = _decode(_data(mcc.session_one()))
    assert conv.meta.title == "login timeout"  # custom-title wins over ai-title
    assert conv.meta.store == "claude-code" and conv.meta.id == SID
    assert conv.model == "claude-sonnet-4-5-20250929"
    shown = [m for m in conv.messages if not m.hidden]
    assert shown[0].role == "user" and shown[0].content == "Why does the login test time out?"
    # three streamed lines with one message.id are one assistant message: reasoning, text, tool call
    a = shown[1]
    assert a.role == "assistant" and a.reasoning == "Check the fixture timeout first."
    assert a.content == "Let me run the login test to see the failure."
    assert [(t.id, t.name) for t in a.tool_calls] == [("toolu_01Qr", "Bash")]
    assert len(a.raw) == 3
    tool = shown[2]
    assert tool.role == "tool" and tool.tool_name == "Bash" and tool.tool_call_id == "toolu_01Qr"
    texts = [m.content for m in shown]
    # the edited prompt is on the main branch; its first version is not
    assert any(t.startswith("This is the error page") for t in texts)
    assert "Make the timeout 30 s" not in texts
    # the walk crosses the compaction boundary (logicalParentUuid) back to the first prompt
    assert any("compacted" in t for t in texts) and texts[-1].startswith("Committed as")
    img = next(m for m in shown if m.attachments)
    assert img.attachments[0]["type"] == "image"
    assert _codes(found) == ["unknown-type"]  # the bookmark entry


def test_side_branch_and_inline_sidechain_stay_reachable_hidden():
    conv, _ = _decode(_data(mcc.session_one()))
    hidden = [m for m in conv.messages if m.hidden]
    markers = [m.content for m in hidden if m.kind in ("branch", "sidechain")]
    assert any("side branch 1" in t for t in markers)
    assert any("sub-agent b77e01" in t for t in markers)
    assert "Make the timeout 30 s" in [m.content for m in hidden]
    assert "It does: mail_stub." in [m.content for m in hidden]
    unknown = [m for m in hidden if (m.kind or "").startswith("unknown:")]
    assert unknown and "bookmark" in unknown[0].content


def test_subagent_file_is_attached_as_a_hidden_sidechain():
    agent = _data(mcc.subagent_lines("a2271d1", 101))
    conv, found = _decode(_data(mcc.session_one()), [("a2271d1", "/x/s/subagents/agent-a2271d1.jsonl", agent)])
    assert any(m.kind == "sidechain" and "a2271d1" in m.content for m in conv.messages)
    assert "Find every call site of login()" in [m.content for m in conv.messages if m.hidden]
    assert agent_ids(_data(mcc.session_one())) >= {"a2271d1", "b77e01"}


def test_summary_title_when_no_ai_or_custom_title():
    conv, _ = _decode(_data(mcc.session_two()))
    assert conv.meta.title == "Notes index rebuilt from markdown headings"


def test_first_user_text_title_skips_meta_and_commands():
    lines = [
        mcc._user(1, None, "2026-03-04T09:00:00Z", "<command-name>/init</command-name>"),
        mcc._user(2, mcc._u(1), "2026-03-04T09:00:01Z", "Caveat: injected", isMeta=True),
        mcc._user(3, mcc._u(2), "2026-03-04T09:00:02Z", "real   question\nhere"),
    ]
    conv, _ = _decode(_data(lines))
    assert conv.meta.title == "real question here"


def test_snapshot_only_file_has_no_messages():
    conv, found = _decode(_data([{"type": "file-history-snapshot", "messageId": "x", "snapshot": {}}]))
    assert conv.messages == [] and conv.meta.message_count == 0 and found == []


# ------------------------------------------------------------------------ broken input


def test_truncated_last_line_is_a_torn_tail_and_the_rest_reads():
    data = _data(mcc.session_one())
    conv0, _ = _decode(data)
    cut = data + b'{"type":"user","uuid":"ffff'
    conv, found = _decode(cut)
    assert "torn-tail" in _codes(found)
    assert next(f for f in found if f.code == "torn-tail").severity == "warning"
    assert len(conv.messages) == len(conv0.messages)
    _, fresh = _decode(cut, fresh=True)
    assert next(f for f in fresh if f.code == "torn-tail").severity == "info"


def test_bad_line_in_the_middle_is_skipped():
    lines = [json.dumps(d) for d in mcc.session_one()]
    lines.insert(3, "{not json")
    conv, found = _decode(("\n".join(lines) + "\n").encode())
    assert "bad-line" in _codes(found)
    assert conv.meta.title == "login timeout"


def test_invalid_utf8_is_read_with_replacement():
    line = (
        json.dumps(mcc._user(1, None, "2026-03-04T09:00:00Z", "caf\u00e9")).encode().replace(b"caf\\u00e9", b"caf\xff")
    )
    conv, found = _decode(line + b"\n")
    assert "bad-utf8" in _codes(found)
    assert conv.messages[0].content == "caf\ufffd"


def test_lone_surrogate_escape_reads_as_replacement_character():
    line = json.dumps(mcc._user(1, None, "2026-03-04T09:00:00Z", "x")).replace('"x"', '"a\\ud800b"')
    conv, found = _decode(line.encode() + b"\n")
    assert "lone-surrogate" in _codes(found)
    assert conv.messages[0].content == "a\ufffdb"


def test_deep_nesting_is_a_bad_line_not_a_crash():
    deep = b'{"type":"user","x":' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    conv, found = _decode(deep + _data([mcc._user(1, None, "2026-03-04T09:00:00Z", "still here")]))
    assert "bad-line" in _codes(found)
    assert [m.content for m in conv.messages] == ["still here"]


def test_huge_line_is_skipped_over_the_line_cap():
    big = _data([mcc._user(1, None, "2026-03-04T09:00:00Z", "x" * 5000)])
    conv, found = _decode(big + _data([mcc._user(2, None, "2026-03-04T09:00:01Z", "small")]), line_cap=1000)
    assert "huge-line" in _codes(found)
    assert [m.content for m in conv.messages] == ["small"]


def test_cycle_and_missing_parent_end_the_walk():
    a, b = mcc._u(1), mcc._u(2)
    lines = [mcc._user(1, b, "2026-03-04T09:00:00Z", "one"), mcc._user(2, a, "2026-03-04T09:00:01Z", "two")]
    conv, found = _decode(_data(lines))
    assert "tree-cycle" in _codes(found)
    assert sorted(m.content for m in conv.messages) == ["one", "two"]
    lines = [mcc._user(3, mcc._u(99), "2026-03-04T09:00:00Z", "orphan")]
    conv, found = _decode(_data(lines))
    assert "missing-parent" in _codes(found) and conv.messages[0].content == "orphan"


@pytest.mark.parametrize(
    "line",
    [
        b"[1,2]",
        b"42",
        b'"text"',
        b"null",
        b'{"type":null}',
        b'{"type":"user"}',
        b'{"type":"user","message":{"content":42}}',
        b'{"type":"assistant","message":{"id":5,"content":[1,{"type":7}]}}',
        b'{"type":"user","message":{"content":[{"type":"tool_result","content":{}}]}}',
        b'{"type":"system","uuid":"u","parentUuid":"u"}',
        b'{"type":"user","uuid":["x"],"message":{"content":"hi"}}',
        b'{"type":["x"],"uuid":"q","parentUuid":null}',
        b'{"type":{"a":1}}',
    ],
)
def test_odd_shapes_never_raise(line):
    conv, found = _decode(line + b"\n" + _data([mcc._user(1, None, "2026-03-04T09:00:00Z", "after")]))
    assert "after" in [m.content for m in conv.messages]


def test_nul_bytes_do_not_crash():
    conv, found = _decode(b"\x00\x00\n" + _data([mcc._user(1, None, "2026-03-04T09:00:00Z", "a\u0000b")]))
    assert "bad-line" in _codes(found) and conv.messages[0].content == "a\x00b"


def test_benchmark_runs_small(capsys):
    from bench import bench_claude_code_decode, bench_codex_decode

    bench_claude_code_decode.main(["--sessions", "2", "--turns", "3", "--repeat", "1"])
    bench_codex_decode.main(["--sessions", "2", "--turns", "3", "--repeat", "1", "--zst"])
    out = capsys.readouterr().out
    assert "decode_session" in out and "decode_rollout" in out


def test_markers_samctl_adds_are_not_search_rows_but_what_they_mark_is(tmp_path):
    """The lines samctl adds to show a session's shape (a side branch starts here, a sub-agent) are
    shown by `show` but are no text of the app's: search never finds them; the entries they head are
    rows, at the same positions as in `show`."""
    from samctl.stores.sources import message_rows

    conv, _ = _decode(_data(mcc.session_one()))
    marked = [
        i
        for i, m in enumerate(conv.messages)
        if m.kind in ("branch", "sidechain") and m.role == "system" and m.content.startswith("──")
    ]
    assert marked and all(conv.messages[i].marker for i in marked)
    rows = list(message_rows(conv, SID))
    assert not any(r.text.startswith("──") for r in rows)
    # (a message with tool calls is a row for its calls even when it has no text: #34)
    held = {i for i, m in enumerate(conv.messages) if m.content.strip() or m.tool_calls}
    assert {r.position for r in rows} == held - set(marked)
    assert "Make the timeout 30 s" in [r.text for r in rows]
