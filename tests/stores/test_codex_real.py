"""The Codex store on rollouts Codex itself wrote (tests/fixtures_real/codex, see SOURCE.md there): titles
without the injected turns, project and branch from session_meta, the resume command, tool calls labelled,
counts that agree (ls = show header = printed), nothing printed on stderr, and the files left unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import fingerprint

REAL = Path(__file__).resolve().parents[1] / "fixtures_real" / "codex"
EXEC = "019e9625-802f-7e91-840a-cfe88d14117a"  # codex exec 0.135.0: <environment_context> turn, then the prompt
DESK = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"  # Codex Desktop 0.104: MCP tool calls, git branch main
STOP = "019c8a70-dda7-7f33-98ea-f30553347322"  # Codex Desktop 0.104: ends on a call with no result


@pytest.fixture
def home(tmp_path) -> Path:
    """A Codex home holding the real rollouts in Codex's own layout, checked unchanged after the test."""
    home = tmp_path / ".codex"
    for f in sorted(REAL.glob("rollout-*.jsonl")):
        stamp = f.name[len("rollout-") :]
        day = home / "sessions" / stamp[:4] / stamp[5:7] / stamp[8:10]
        day.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, day / f.name)
    before = fingerprint(home)
    yield home
    assert fingerprint(home) == before


def _rows(run, home) -> dict:
    r = run("--root", home, "ls", "--format", "jsonl")
    assert (r.exit_code, r.stderr) == (0, "")
    return {x["id"]: x for x in (json.loads(line) for line in r.stdout.splitlines())}


def test_the_sources_and_licenses_are_beside_the_files():
    src = (REAL / "SOURCE.md").read_text()
    for f in REAL.glob("rollout-*.jsonl"):
        assert f.name in src
    assert "9a7a78b14383615fd05bfcf267d21b08e2349f3f" in src and "f0a54fdfb7946b03f7ab091b627da196fa0e7c92" in src
    for lic in ("LICENSE-agent-history", "LICENSE-localpush"):
        assert (REAL / lic).read_text().startswith("MIT License")


def test_titles_project_branch_and_model_from_the_real_rollouts(run, home):
    rows = _rows(run, home)
    assert set(rows) == {EXEC, DESK, STOP}
    # the typed prompt, not the <environment_context> turn before it, nor the injected AGENTS.md turn
    assert rows[EXEC]["title"] == "[REDACTED_PROMPT]"
    assert rows[DESK]["title"] == "[REDACTED_MESSAGE len=98 sha=c002ff99]"
    assert (rows[EXEC]["project"], rows[EXEC]["branch"]) == ("/tmp/agent-history-real-agent/codex/workspace", None)
    assert (rows[DESK]["project"], rows[DESK]["branch"]) == ("/redacted/path/ea96e59ed9", "main")
    models = {cid: json.loads(run("--root", home, "show", cid, "--format", "json").stdout)["model"] for cid in rows}
    assert models == {EXEC: "gpt-5.5", DESK: "gpt-5.3-codex", STOP: "gpt-5.3-codex"}
    groups = json.loads(run("--root", home, "stats", "--by", "model", "--format", "json").stdout)["groups"]
    assert {g["key"]: g["conversations"] for g in groups} == {"gpt-5.5": 1, "gpt-5.3-codex": 2}


def test_counts_agree_and_nothing_is_said_on_stderr(run, home):
    rows = _rows(run, home)
    assert {cid: r["message_count"] for cid, r in rows.items()} == {EXEC: 2, DESK: 17, STOP: 3}
    for cid, row in rows.items():
        s = run("--root", home, "show", cid, "--no-pager")
        assert (s.exit_code, s.stderr) == (0, "")
        n = row["message_count"]
        printed = [ln for ln in s.stdout.splitlines() if ln.startswith("── ") and ln.endswith(" ──")]
        assert len(printed) == n and f" · {n} messages" in s.stdout.splitlines()[1]
        d = json.loads(run("--root", home, "show", cid, "--format", "json").stdout)
        assert d["exported_messages"] == n
    c = run("--root", home, "check")
    assert c.exit_code == 0 and "0 errors, 0 warnings" in c.stderr and "info" not in c.stderr


def test_resume_and_the_show_header(run, home):
    r = run("--root", home, "resume", EXEC)
    assert (r.exit_code, r.stdout) == (0, f"cd /tmp/agent-history-real-agent/codex/workspace && codex resume {EXEC}\n")
    head = run("--root", home, "show", DESK, "--no-pager").stdout.splitlines()[:4]
    assert head[1].startswith(f"{DESK} · codex · gpt-5.3-codex · 2026-02-23 19:34")
    assert head[2] == "project /redacted/path/ea96e59ed9 · branch main"
    assert head[3] == f"resume: cd /redacted/path/ea96e59ed9 && codex resume {DESK}"


def test_tool_calls_are_labelled_and_their_ids_kept_for_json(run, home):
    text = run("--root", home, "show", DESK, "--no-pager").stdout
    assert "  → mcp__cloud-associates__search_workflows([REDACTED_ARGUMENTS len=46 sha=4cb9a2fc])" in text
    assert "── tool mcp__cloud-associates__search_workflows · 2026-02-23 19:34 ──" in text
    assert "call_OIMY41RetdVChp5U51mMLGOD" not in text
    d = json.loads(run("--root", home, "show", DESK, "--format", "json").stdout)
    assert "call_OIMY41RetdVChp5U51mMLGOD" in {tc["id"] for m in d["messages"] for tc in m.get("tool_calls", [])}
    last = run("--root", home, "show", STOP, "--no-pager").stdout.rstrip().splitlines()[-1]
    assert last.startswith("  → exec_command([REDACTED_ARGUMENTS len=456")  # the call that never got a result


def test_show_all_keeps_the_injected_context_hidden_by_default(run, home):
    plain = run("--root", home, "show", EXEC, "--no-pager").stdout
    assert "<environment_context>" not in plain
    full = run("--root", home, "show", EXEC, "--all", "--no-pager")
    assert full.exit_code == 0 and "<environment_context>\n  <cwd>/tmp/agent-history-real-agent" in full.stdout
    assert "[REDACTED_DEVELOPER_CONTEXT]" in full.stdout
