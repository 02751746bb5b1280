"""Record types the apps write are known to their stores (issue #35): reading the demo homes says nothing
on stderr; a type no version writes stays a finding of ``check``, and the other commands say it under -v."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from samctl.stores.codex.decode import decode_rollout
from tests.conftest import fingerprint

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
STORES = ("SAM", "chatgpt/chatgpt-export.zip", "claude_code", "codex", "llm", "mermaid-project")


@pytest.fixture
def roots(tmp_path) -> list[str]:
    root = tmp_path / "demo"
    shutil.copytree(DEMO, root, symlinks=True)
    # a checkout's modes depend on the umask; the stores' own modes are 0700/0600, so check judges content only
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o700 if p.is_dir() else 0o600)
    before = fingerprint(root)
    out = []
    for name in STORES:
        out += ["--root", str(root / name)]
    yield out
    assert fingerprint(root) == before


def _info(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("info:")]


def test_reading_the_demo_homes_says_nothing_on_stderr(run, roots, tmp_path):
    for args in (("ls",), ("search", "login"), ("show", "019c4a2e", "--no-pager")):
        r = run(*roots, *args)
        assert (r.exit_code, r.stderr) == (0, ""), args
    r = run(*roots, "export", "--all", "--to", "markdown", "-o", tmp_path / "out")
    assert r.exit_code == 0 and _info(r.stderr) == [], r.stderr


def test_unknown_types_stay_findings_of_check_and_are_said_under_v(run, roots, tmp_path):
    c = run(*roots, "check")
    assert c.exit_code == 0, c.stderr[-2000:]
    said = "\n".join(_info(c.stderr))
    for kind in ("'bookmark'", "'response item frobnicate_call'", "'record world_state'", "'hologram'"):
        assert kind in said
    assert "collab_agent_spawn_end" not in said  # Codex writes it (collab tools): known
    v = run(*roots, "-v", "search", "login")
    assert v.exit_code == 0 and "'record world_state'" in "\n".join(_info(v.stderr))
    v = run(*roots, "-v", "show", "019c4a2e", "--no-pager")
    assert v.exit_code == 0 and "'response item frobnicate_call'" in "\n".join(_info(v.stderr))


def test_codex_events_and_items_of_current_versions_are_known():
    """Extended mode's collab_*_end and dynamic_tool_call_* events, and what newer builds persist (policy.rs:
    thread_goal_updated, thread_settings_applied, sub_agent_activity; context_compaction items)."""
    lines = [
        b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"session_meta","payload":{"id":"x","cwd":"/p"}}',
        b'{"timestamp":"2026-03-01T10:00:01.000Z","type":"event_msg","payload":{"type":"user_message","message":"hi"}}',
        b'{"timestamp":"2026-03-01T10:00:02.000Z","type":"event_msg","payload":{"type":"collab_agent_spawn_end"}}',
        b'{"timestamp":"2026-03-01T10:00:03.000Z","type":"event_msg","payload":{"type":"collab_waiting_end"}}',
        b'{"timestamp":"2026-03-01T10:00:04.000Z","type":"event_msg","payload":{"type":"dynamic_tool_call_end"}}',
        b'{"timestamp":"2026-03-01T10:00:05.000Z","type":"event_msg","payload":{"type":"collab_brand_new"}}',
        b'{"timestamp":"2026-03-01T10:00:06.000Z","type":"event_msg","payload":{"type":"thread_goal_updated"}}',
        b'{"timestamp":"2026-03-01T10:00:07.000Z","type":"event_msg","payload":{"type":"thread_settings_applied"}}',
        b'{"timestamp":"2026-03-01T10:00:08.000Z","type":"event_msg","payload":{"type":"sub_agent_activity"}}',
        b'{"timestamp":"2026-03-01T10:00:09.000Z","type":"response_item","payload":{"type":"context_compaction"}}',
        b'{"timestamp":"2026-03-01T10:00:10.000Z","type":"response_item","payload":{"type":"compaction_trigger"}}',
    ]
    conv, found = decode_rollout(b"\n".join(lines) + b"\n", "/p/r.jsonl", "x")
    assert [f.reason for f in found] == ["1 record of unknown type 'event collab_brand_new' kept (shown with --all)"]
    assert conv.meta.message_count == 1


def test_claude_code_bookkeeping_entries_are_known():
    from samctl.stores.claude_code.decode import decode_session

    sid = "2efd1f5f-1b93-481a-8469-0f589a48d7ae"
    lines = [
        {"type": "mode", "mode": "normal", "sessionId": sid},
        {"type": "permission-mode", "permissionMode": "default", "sessionId": sid},
        {"type": "bridge-session", "sessionId": sid, "bridgeSessionId": "cse_01", "lastSequenceNum": 0},
        {"type": "atis-latch", "atis": "", "sessionId": sid},
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": sid, "timestamp": "2026-09-14T15:16:17.588Z",
         "message": {"role": "user", "content": "hello"}},
        {"type": "cost-state", "sessionId": sid, "totalCostUSD": 0.03, "modelUsage": {}},
        {"type": "flux-capacitor", "sessionId": sid},
    ]  # fmt: skip
    import json

    conv, found = decode_session("".join(json.dumps(x) + "\n" for x in lines).encode(), "/x/s.jsonl", sid)
    assert [f.reason for f in found] == ["1 entry of unknown type 'flux-capacitor' kept (shown with --all)"]
    assert conv.meta.message_count == 1 and conv.meta.title == "hello"
