"""Coding sessions as their users see them (issue #35): project and branch, resume, tool calls as the apps
show them, titles without wrapper turns, resumed copies, and counts that agree, on the stores' fixtures."""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import fingerprint

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "fixtures" / "demo"
CC = runpy.run_path(str(REPO / "fixtures" / "make_claude_code.py"))
S1, S4, S5 = "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d", CC["S4"], CC["S5"]
T1 = "019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f"  # the demo Codex thread with a shell result in Codex's envelope


@pytest.fixture
def demo(tmp_path) -> Path:
    """A copy of fixtures/demo (every store), checked unchanged after the test."""
    root = tmp_path / "demo"
    shutil.copytree(DEMO, root, symlinks=True)
    before = fingerprint(root)
    yield root
    assert fingerprint(root) == before


@pytest.fixture
def coding(tmp_path) -> Path:
    """The Claude Code demo plus a resumed session (S4 continues S1) and one opened by wrapper turns (S5)."""
    root = tmp_path / ".claude"
    CC["write_coding"](root)
    return root


def _roots(demo: Path) -> list[str]:
    out = []
    for name in ("SAM", "chatgpt/chatgpt-export.zip", "claude_code", "codex", "llm", "mermaid-project"):
        out += ["--root", str(demo / name)]
    return out


def _jsonl(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x.strip()]


# 1. project and branch ----------------------------------------------------------------------------


def test_project_and_branch_come_from_each_stores_record(run, demo):
    r = run(*_roots(demo), "ls", "--format", "jsonl")
    assert r.exit_code in (0, 1), r.stderr
    rows = {x["id"]: x for x in _jsonl(r.stdout)}
    assert (rows[S1]["project"], rows[S1]["branch"]) == ("/home/ana/api", "main")  # Claude Code cwd, gitBranch
    assert (rows[T1]["project"], rows[T1]["branch"]) == ("/home/ana/api", "main")  # Codex session_meta cwd, git
    mermaid = [x for x in rows.values() if x["store"] == "mermaid"]
    assert mermaid and {x["project"] for x in mermaid} == {os.path.realpath(demo / "mermaid-project")}
    assert all(x["project"] is None and x["branch"] is None for x in rows.values() if x["store"] in ("sam", "llm"))


def test_ls_project_by_name_and_path_and_the_column(run, demo):
    both = ("--root", demo / "claude_code", "--root", demo / "codex")
    by_name = _jsonl(run(*both, "ls", "--project", "api", "--format", "jsonl").stdout)
    by_path = _jsonl(run(*both, "ls", "--project", "/home/ana/api", "--format", "jsonl").stdout)
    assert {x["id"] for x in by_name} == {x["id"] for x in by_path}
    assert S1 in {x["id"] for x in by_name} and all(x["project"] == "/home/ana/api" for x in by_name)
    assert len(by_name) == 5  # the api session and the four Codex threads recorded in /home/ana/api
    notes = _jsonl(run(*both, "ls", "--project", "notes", "--format", "jsonl").stdout)
    assert [x["project"] for x in notes] == ["/home/ana/notes"]
    table = run(*both, "ls").stdout
    assert table.splitlines()[0].split()[7] == "PROJECT"  # piped: the whole folder, for scripts
    assert " /home/ana/api " in table and " /home/ana/notes " in table


def test_ls_here_lists_the_current_folder_and_below(run, tmp_path, monkeypatch):
    proj = tmp_path / "work" / "shop"
    (proj / "sub").mkdir(parents=True)
    other = tmp_path / "work" / "shopping"  # a name that shares a prefix is another project
    other.mkdir()
    root = tmp_path / ".claude"
    ids = [
        "aaaaaaaa-0000-4000-8000-000000000001",
        "aaaaaaaa-0000-4000-8000-000000000002",
        "aaaaaaaa-0000-4000-8000-000000000003",
    ]
    for i, (sid, cwd) in enumerate(zip(ids, (proj, proj / "sub", other))):  # (entry uuids of their own:
        n = 10 * i + 1  # sessions sharing them would be copies of one another)
        CC["_write"](
            root / "projects" / "-p" / f"{sid}.jsonl",
            [
                CC["_user"](n, None, "2026-03-04T09:00:00.000Z", f"work in {cwd.name}", sid=sid, cwd=str(cwd)),
                CC["_assistant"](
                    n + 1,
                    CC["_u"](n),
                    "2026-03-04T09:00:05.000Z",
                    f"msg_{n}",
                    [{"type": "text", "text": "ok"}],
                    sid=sid,
                    cwd=str(cwd),
                ),
            ],
        )
    monkeypatch.chdir(proj)
    got = _jsonl(run("--root", root, "ls", "--here", "--format", "jsonl").stdout)
    assert sorted(x["id"] for x in got) == ids[:2]
    r = run("--root", root, "search", "--here", "work", "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert {
        h["conversation"] if "conversation" in h else h.get("conversation_id") for h in json.loads(r.stdout)
    } <= set(ids[:2])
    r = run("--root", root, "ls", "--here", "--project", "shop")
    assert r.exit_code == 2 and "--here and --project" in r.stderr and r.stdout == ""


def test_stats_and_export_take_the_project_filter(run, demo, tmp_path):
    both = ("--root", demo / "claude_code", "--root", demo / "codex")
    d = json.loads(run(*both, "stats", "--project", "notes", "--format", "json").stdout)
    assert d["total"]["conversations"] == 1 and d["total"]["messages"] == 5
    out = tmp_path / "out"
    r = run(*both, "export", "--all", "--project", "notes", "--to", "json", "-o", out)
    assert r.exit_code == 0, r.stderr
    files = [p for p in out.iterdir() if p.suffix == ".json"]
    assert len(files) == 1 and json.loads(files[0].read_text())["project"] == "/home/ana/notes"
    r = run(*both, "export", S1, "--project", "notes")
    assert r.exit_code == 2 and "--all" in r.stderr


def test_show_headers_name_project_branch_and_resume(run, demo, tmp_path):
    text = run("--root", demo / "claude_code", "show", S1).stdout
    assert "project /home/ana/api · branch main" in text
    assert f"resume: cd /home/ana/api && claude --resume {S1}" in text
    md = run("--root", demo / "claude_code", "show", S1, "--format", "markdown").stdout
    assert "- **project:** `/home/ana/api`" in md and "- **branch:** `main`" in md
    page = tmp_path / "s1.html"
    assert run("--root", demo / "claude_code", "export", S1, "--to", "html", "-o", page).exit_code == 0
    html = page.read_text()
    assert "<dt>project</dt><dd><code>/home/ana/api</code></dd>" in html and "<dt>branch</dt>" in html
    assert f"<dt>resume</dt><dd><code>cd /home/ana/api &amp;&amp; claude --resume {S1}</code>" in html
    d = json.loads(run("--root", demo / "claude_code", "show", S1, "--format", "json").stdout)
    assert (d["project"], d["branch"], d["continues"]) == ("/home/ana/api", "main", None)
    assert d["resume"] == {
        "argv": ["claude", "--resume", S1],
        "command": f"claude --resume {S1}",
        "cwd": "/home/ana/api",
    }


# 2. resume ----------------------------------------------------------------------------------------


def test_resume_prints_each_apps_own_command(run, demo):
    r = run(*_roots(demo), "resume", S1)
    assert r.exit_code == 0 and r.stdout == f"cd /home/ana/api && claude --resume {S1}\n"
    r = run(*_roots(demo), "resume", T1)
    assert r.stdout == f"cd /home/ana/api && codex resume {T1}\n"
    r = run("--root", demo / "llm", "resume", "01kzr0smm0w4j8n2t6y1b5e9ka")
    assert r.stdout.startswith("llm -c --cid 01kzr0smm0w4j8n2t6y1b5e9ka -d ") and "logs.db" in r.stdout


def test_resume_refuses_a_store_without_one(run, demo):
    r = run("--root", demo / "SAM", "resume", "8B58")
    assert r.exit_code == 2 and "SAM has no command to resume" in r.stderr and r.stdout == ""


def _exec(args, cwd, path_dir):
    env = dict(os.environ, PATH=f"{path_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(
        [sys.executable, "-m", "samctl", *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_resume_exec_runs_the_app_in_the_sessions_folder(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    sid = "bbbbbbbb-0000-4000-8000-000000000001"
    root = tmp_path / ".claude"
    CC["_write"](
        root / "projects" / "-p" / f"{sid}.jsonl",
        [CC["_user"](1, None, "2026-03-04T09:00:00.000Z", "hi", sid=sid, cwd=str(proj))],
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "ran"
    fake = bin_dir / "claude"
    fake.write_text(f'#!/bin/sh\npwd > {log}\necho "$@" >> {log}\n')
    fake.chmod(0o755)
    r = _exec(["--root", root, "resume", sid, "--exec"], tmp_path, bin_dir)
    assert r.returncode == 0, r.stderr
    assert log.read_text().splitlines() == [str(proj), f"--resume {sid}"]
    log.unlink()
    shutil.rmtree(proj)
    r = _exec(["--root", root, "resume", sid, "--exec"], tmp_path, bin_dir)
    assert r.returncode == 4 and "is not there" in r.stderr and not log.exists()


# 3. tool calls ------------------------------------------------------------------------------------


def test_codex_envelope_is_unwrapped_with_exit_code_and_duration(run, demo, tmp_path):
    text = run("--root", demo / "codex", "show", T1).stdout
    assert "  → shell(pytest -q)" in text and "── tool shell [error] · exit 1 · 5.6s" in text
    assert "2 failed, 40 passed" in text and '"metadata"' not in text and "call_7Hq2" not in text
    d = json.loads(run("--root", demo / "codex", "show", T1, "--format", "json").stdout)
    res = next(m for m in d["messages"] if m.get("tool_call_id") == "call_7Hq2")
    assert (res["content"], res["exit_code"], res["duration_seconds"], res["tool_status"]) == (
        "2 failed, 40 passed",
        1,
        5.6,
        "error",
    )
    out = tmp_path / "t.html"
    assert run("--root", demo / "codex", "export", T1, "--to", "html", "-o", out).exit_code == 0
    page = out.read_text()
    i = page.index("Result of shell")
    summary = page[i : page.index("</summary>", i)]
    assert "exit 1" in summary and "status-error" in summary and "success" not in summary
    assert "<code>shell(pytest -q)</code>" in page and "call_7Hq2" not in page


def test_claude_code_calls_are_labelled_by_their_main_argument(run, coding):
    text = run("--root", coding, "show", S4).stdout
    assert "  → Bash(git status --short)" in text and "toolu_401" not in text
    md = run("--root", coding, "show", S4, "--format", "markdown").stdout
    assert "**Tool call** `Bash(git status --short)`" in md and "toolu_401" not in md
    d = json.loads(run("--root", coding, "show", S4, "--format", "json").stdout)
    assert any(tc["id"] == "toolu_401" for m in d["messages"] for tc in m.get("tool_calls", []))


# 4. titles ----------------------------------------------------------------------------------------


def test_titles_skip_wrapper_and_injected_turns(run, coding):
    rows = {x["id"]: x for x in _jsonl(run("--root", coding, "ls", "--format", "jsonl").stdout)}
    assert rows[S5]["title"] == "Explain the session cookie flags"


def test_titles_of_parser_test_transcripts(run, tmp_path):
    real = REPO / "tests" / "fixtures_real" / "claude-code-log"
    assert (real / "LICENSE").read_text().startswith("MIT License")
    sid = "cccccccc-0000-4000-8000-000000000001"
    root = tmp_path / ".claude" / "projects" / "-tmp-project"
    root.mkdir(parents=True)
    shutil.copy(real / "system_reminder.jsonl", root / f"{sid}.jsonl")
    (row,) = _jsonl(run("--root", tmp_path / ".claude", "ls", "--format", "jsonl").stdout)
    assert row["title"] == "Please review the change. # Project notes The tail content still renders as user text."
    assert row["project"] == "/tmp/project"
    home = tmp_path / ".codex"
    day = home / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)
    name = "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
    shutil.copy(real / name, day / name)
    (row,) = _jsonl(run("--root", home, "ls", "--format", "jsonl").stdout)
    assert (row["title"], row["project"]) == ("List the synthetic files.", "/workspace/synthetic-project")
    text = run("--root", home, "show", row["id"]).stdout
    assert "→ exec_command(find . -maxdepth 1 -type f)" in text and "→ apply_patch(gamma.txt)" in text


# 5. resumed copies --------------------------------------------------------------------------------


def test_a_resumed_session_continues_the_other_and_its_copies_count_once(run, coding):
    rows = {x["id"]: x for x in _jsonl(run("--root", coding, "ls", "--format", "jsonl").stdout)}
    assert rows[S4]["continues"] == S1 and rows[S1]["continues"] is None and rows[S5]["continues"] is None
    assert f"(continues {S1[:8]})" in run("--root", coding, "ls").stdout
    assert rows[S4]["branch"] == "fix-timeout"
    st = json.loads(run("--root", coding, "stats", "--format", "json").stdout)["stores"][0]
    assert st["copied_messages"] == 2
    assert st["messages"] == sum(x["message_count"] for x in rows.values()) - 2
    d = json.loads(run("--root", coding, "show", S4, "--format", "json").stdout)
    assert [m.get("copied", False) for m in d["messages"]] == [True, True, False, False, False, False]


# 6. counts agree ----------------------------------------------------------------------------------


def test_ls_count_equals_the_show_header_and_the_messages_shown_in_every_store(run, demo):
    rows = _jsonl(run(*_roots(demo), "ls", "--format", "jsonl").stdout)
    assert {x["store"] for x in rows} == {"sam", "chatgpt", "claude-code", "codex", "llm", "mermaid"}
    for row in rows:
        d = json.loads(run(*_roots(demo), "show", row["id"], "--format", "json").stdout)
        text = run(*_roots(demo), "show", row["id"], "--no-pager").stdout
        n = row["message_count"]
        header = text.splitlines()[1]
        printed = sum(1 for line in text.splitlines() if line.startswith("── ") and line.endswith(" ──"))
        assert (d["message_count"], d["exported_messages"], printed) == (n, n, n), row["id"]
        assert d["stored_messages"] >= n, row["id"]
        assert f" · {n} message" in header, (row["id"], header)


# 8. stats -----------------------------------------------------------------------------------------


def test_stats_totals_and_groups(run, demo):
    d = json.loads(run(*_roots(demo), "stats", "--format", "json", "--by", "store").stdout)
    assert d["total"]["stores"] == 6
    assert d["total"]["conversations"] == sum(s["conversations"] for s in d["stores"])
    assert d["total"]["messages"] == sum(s["messages"] for s in d["stores"])
    assert {g["key"]: g["conversations"] for g in d["groups"]} == {s["store"]: s["conversations"] for s in d["stores"]}
    by_model = json.loads(run(*_roots(demo), "stats", "--format", "json", "--by", "model").stdout)["groups"]
    assert any(g["key"] == "gpt-5.1-codex" for g in by_model)
    months = [
        g["key"] for g in json.loads(run(*_roots(demo), "stats", "--format", "json", "--by", "month").stdout)["groups"]
    ]
    assert months == sorted(months)
    text = run(*_roots(demo), "stats", "--by", "project").stdout
    assert "all 6 stores" in text and "by project" in text
    mem_lines = [ln for ln in text.splitlines() if "memories" in ln]
    assert len(mem_lines) == 2  # SAM's line and the total: no "memories -" for the stores without any


# 7. llm up to 0.36 --------------------------------------------------------------------------------


def test_a_database_written_by_llm_0_36_reads_without_info_lines(run, tmp_path):
    import gzip

    db = tmp_path / "logs.db"
    db.write_bytes(gzip.decompress((REPO / "tests" / "fixtures_real" / "llm-0.36" / "logs.db.gz").read_bytes()))
    r = run("--root", db, "ls", "--format", "jsonl")
    assert r.exit_code == 0 and r.stderr == ""
    rows = {x["title"]: x for x in _jsonl(r.stdout)}
    assert set(rows) == {"Name a colour.", '{"prompt": "add 2 and 3", "tool…'}
    for row in rows.values():
        s = run("--root", db, "show", row["id"], "--no-pager")
        assert s.exit_code == 0 and s.stderr == "", s.stderr  # role tool, the system message: no info line
        heads = [ln for ln in s.stdout.splitlines() if ln.startswith("── ")]
        assert len(heads) == row["message_count"] and f" · {row['message_count']} messages" in s.stdout.splitlines()[1]
    tool = run("--root", db, "show", rows['{"prompt": "add 2 and 3", "tool…']["id"]).stdout
    assert "  → add" in tool and "── tool add ·" in tool and "\n5\n" in tool
    colour = run("--root", db, "show", rows["Name a colour."]["id"]).stdout
    assert colour.splitlines()[4].startswith("── system · 20")  # timed like the prompt after it, not "-"
    assert r.exit_code == 0 and run("--root", db, "check").exit_code == 0
