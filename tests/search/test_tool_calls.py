"""Tool calls are searchable (issue 34): a call's tool name and arguments (Claude Code tool_use input, Codex
function_call arguments, llm tool calls, mermaid tool calls) are rows of their own (kind "call"), found by a
plain query, narrowed by tool:NAME and in:args, shown as the call (Bash(...)), and covered by --exact."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from samctl.search.calls import MAX_CHARS, call_text, is_call_of
from tests.conftest import fingerprint

REPO = Path(__file__).resolve().parents[2]
ZSH = "zsh -i -c 'zmodload zsh/zprof; source ~/.zshrc; zprof'"


def test_call_text_is_the_call_on_one_line():
    assert call_text("Bash", {"command": ZSH, "description": "Profile zsh"}) == f"Bash({ZSH}, Profile zsh)"
    # the value people know the call by comes first, wherever it is in the arguments
    assert call_text("Edit", {"old_string": "a", "file_path": "/src/x.py"}) == "Edit(/src/x.py, a)"
    # Codex: a JSON string, a command as a list of words
    assert (
        call_text("shell", '{"command": ["pytest", "-q"], "workdir": "/home/ana/api"}')
        == "shell(pytest -q, /home/ana/api)"
    )
    assert call_text("f", "not json {") == "f(not json {)"
    assert call_text(None, None) == "?()" and call_text("x", {"n": 3, "ok": True, "v": None}) == "x(3)"
    assert len(call_text("Write", {"content": "y" * 100_000})) == MAX_CHARS
    deep = {}
    d = deep
    for _ in range(1000):
        d["a"] = {}
        d = d["a"]
    assert call_text("t", deep) == "t()"  # (never a recursion error)
    assert is_call_of("Bash(ls)", "bash") and not is_call_of("Bash(ls)", "Bas")


def _claude(tmp_path) -> Path:
    root = tmp_path / "claude"
    shutil.copytree(REPO / "fixtures" / "demo" / "claude_code", root, symlinks=True)
    f = root / "projects" / "-home-ana-api" / "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d.jsonl"
    f.write_bytes(f.read_bytes().replace(b"pytest tests/test_login.py -x", json.dumps(ZSH)[1:-1].encode()))
    return root


def _search(run, root, *args, code=None):
    r = run("--root", root, "search", "--format", "json", *args)
    found = json.loads(r.stdout) if r.stdout.strip() else []
    want = (0 if found else 1) if code is None else code  # (nothing found: 1, as grep)
    assert r.exit_code == want, (r.exit_code, r.stdout, r.stderr)
    return json.loads(r.stdout) if r.stdout.strip() else []


def test_a_claude_code_bash_command_is_found_and_shown_as_the_call(run, tmp_path):
    root = _claude(tmp_path)
    before = fingerprint(root)
    got = _search(run, root, "zprof")
    assert got and got[0]["kind"] == "call" and got[0]["role"] == "assistant"
    assert got[0]["text"].startswith("Bash(zsh -i -c 'zmodload zsh/zprof;")
    assert got[0]["conversation_id"] == "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"
    exact = _search(run, root, "--exact", "zmodload zsh/zprof")
    assert [h["text"] for h in exact] == [got[0]["text"]]
    r = run("--root", root, "search", "zprof")  # the table: the call as the snippet, and how to open it
    assert r.exit_code == 0 and "Bash(zsh -i -c 'zmodload zsh/zprof;" in r.stdout
    assert "show 0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d --at" in r.stdout
    assert fingerprint(root) == before


def test_tool_and_in_args_narrow_to_calls(run, tmp_path):
    root = _claude(tmp_path)
    # (--per-conversation 0: hits in score order, which a conversation's run of hits would change)
    every = _search(run, root, "login", "-n", "100", "--per-conversation", "0")
    assert {h["kind"] for h in every} == {"message", "call"}
    args = _search(run, root, "login in:args", "-n", "100", "--per-conversation", "0")
    assert args == [h for h in every if h["kind"] == "call"]
    assert {h["text"].partition("(")[0] for h in args} == {"Bash", "Grep", "Task"}  # (Bash: its description)
    grep = _search(run, root, "login tool:grep", "-n", "100")
    assert grep and all(h["text"].startswith("Grep(") for h in grep)
    assert [h["text"][:5] for h in _search(run, root, "login tool:bash", "-n", "100")] == ["Bash("]
    assert _search(run, root, "login tool:bas", "-n", "100") == []  # (a tool's whole name)
    assert _search(run, root, "zprof tool:Bash")[0]["text"].startswith("Bash(zsh")
    assert _search(run, root, "zprof", "--in", "args")[0]["kind"] == "call"
    assert _search(run, root, "zprof", "--in", "memories") == []


def test_tool_needs_a_name(run, tmp_path):
    root = _claude(tmp_path)
    r = run("--root", root, "search", "zprof tool:")
    assert r.exit_code == 2 and "tool: needs a tool's name" in r.stderr and not r.stdout


def test_codex_llm_and_mermaid_calls(run, tmp_path, mermaid_demo):
    codex = tmp_path / "codex"
    shutil.copytree(REPO / "fixtures" / "demo" / "codex", codex, symlinks=True)
    got = _search(run, codex, "smtp_server in:args")
    assert got and got[0]["text"] == "exec_command(grep -rn smtp_server)"
    assert _search(run, codex, "workdir tool:shell") == []  # (a key is not a value)
    assert _search(run, codex, "pytest tool:shell")[0]["text"].startswith("shell(pytest -q")
    llm = tmp_path / "llm"
    shutil.copytree(REPO / "fixtures" / "demo" / "llm", llm)
    got = _search(run, llm / "logs.db", "lyon tool:weather")
    assert got and got[0]["text"] == "weather(Lyon)"
    got = _search(run, mermaid_demo, "fn report in:args")
    assert got and got[0]["text"] == "grep(fn report)"


def test_two_calls_of_one_message_without_ids_are_two_hits(run, tmp_path):
    """llm may record a response's tool calls with no tool_call_id: two calls of one message share its place,
    and are still two hits (their texts tell them apart), by the default ranking and by --exact (--rank sam
    ranks messages and memories, not calls)."""
    import importlib.util
    import sqlite3

    spec = importlib.util.spec_from_file_location("make_llm", REPO / "fixtures" / "make_llm.py")
    make_llm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_llm)
    db = make_llm.write_demo(tmp_path / "llm")
    c = sqlite3.connect(db)
    response, tool = c.execute("SELECT response_id, tool_id FROM tool_calls WHERE name = 'weather'").fetchone()
    c.execute("UPDATE tool_calls SET tool_call_id = NULL")
    c.execute(
        "INSERT INTO tool_calls (response_id, tool_id, name, arguments, tool_call_id) VALUES (?, ?, ?, ?, NULL)",
        (response, tool, "weather", '{"city": "Paris"}'),
    )
    c.commit()
    c.close()
    before = fingerprint(db.parent)
    for extra in ([], ["--exact"]):
        got = _search(run, db, "weather" if extra else "weather in:args", "-n", "20", *extra)
        calls = sorted(h["text"] for h in got if h["kind"] == "call")
        assert calls == ["weather(Lyon)", "weather(Paris)"], (extra, got)
    assert fingerprint(db.parent) == before
