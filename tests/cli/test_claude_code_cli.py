"""The Claude Code store through the command line: ls, show, export, check and stats read a copy of the demo
fixture and leave it byte for byte (and mtime for mtime: Claude Code's cleanup keys on mtimes) as it was;
every writing command refuses with one line (exit 2) before touching anything."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import fingerprint

REPO = Path(__file__).resolve().parents[2]
S1 = "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"
S2 = "5d1e7f20-8a9b-4c3d-9e8f-7a6b5c4d3e2f"
S3 = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"


@pytest.fixture
def claude(tmp_path) -> Path:
    root = tmp_path / ".claude"
    shutil.copytree(REPO / "fixtures" / "demo" / "claude_code", root, symlinks=True)
    before = fingerprint(root)
    yield root
    assert fingerprint(root) == before  # nothing any test ran changed a byte, a mode or an mtime


def test_ls_lists_sessions_with_messages_newest_first(claude, run):
    r = run("--root", claude, "ls", "--format", "json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["id"] for x in rows] == [S1, S2]  # S3 holds only snapshots: not listed
    assert rows[0]["title"] == "login timeout" and rows[0]["store"] == "claude-code"
    assert rows[1]["title"] == "Notes index rebuilt from markdown headings"


@pytest.mark.parametrize("sub", ["", "projects", "projects/-home-ana-api"])
def test_root_may_be_the_config_folder_projects_or_one_project(claude, run, sub):
    r = run("--root", claude / sub if sub else claude, "ls", "--format", "jsonl")
    assert r.exit_code == 0, r.stderr
    ids = [json.loads(x)["id"] for x in r.stdout.splitlines()]
    assert ids == ([S1] if sub.endswith("api") else [S1, S2])


def test_show_text_markdown_json_and_raw(claude, run):
    r = run("--root", claude, "show", "0b7c")
    assert r.exit_code == 0 and "Why does the login test time out?" in r.stdout
    assert "Make the timeout 30 s" not in r.stdout  # an edited-away prompt: a side branch
    assert r.stderr == ""  # the unknown entry is check's finding; show says it under -v
    r = run("--root", claude, "-v", "show", "0b7c")
    assert "unknown-type" in r.stderr and r.stderr.startswith("info:")
    r = run("--root", claude, "show", "0b7c", "--all")
    assert "side branch 1" in r.stdout and "Make the timeout 30 s" in r.stdout and "sub-agent a2271d1" in r.stdout
    r = run("--root", claude, "show", S1, "--format", "markdown")
    assert r.exit_code == 0 and r.stdout.startswith("# login timeout")
    r = run("--root", claude, "show", S1, "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["id"] == S1 and doc["model"] == "claude-sonnet-4-5-20250929"
    assert any(m.get("tool_calls") for m in doc["messages"])
    r = run("--root", claude, "show", S1, "--raw")
    assert r.stdout_bytes == (claude / "projects" / "-home-ana-api" / f"{S1}.jsonl").read_bytes()


def test_show_bad_or_unknown_id(claude, run):
    r = run("--root", claude, "show", "../../etc/passwd")
    assert r.exit_code == 2 and "not a claude-code conversation id" in r.stderr
    r = run("--root", claude, "show", "ffffffff")
    assert r.exit_code == 4


@pytest.mark.parametrize("fmt", ["markdown", "html", "json", "jsonl"])
def test_export_every_format(claude, run, tmp_path, fmt):
    out = tmp_path / "out"
    r = run("--root", claude, "export", "--to", fmt, "-o", out, S1, S2)
    assert r.exit_code == 0, r.stderr
    assert any(out.iterdir()) if out.is_dir() else out.stat().st_size > 0


def test_check_and_stats(claude, run):
    r = run("--root", claude, "check")
    assert r.exit_code == 0 and "unknown-type" in r.stderr
    r = run("--root", claude, "stats", "--format", "json")
    assert r.exit_code == 0, r.stderr


@pytest.mark.parametrize("args", [["recover", "0b7c"], ["check", "--fix"], ["search", "login", "--touch"]])
def test_rewriting_commands_refuse_with_one_line(claude, run, args):
    """samctl moves Claude Code sessions (tests/cli/test_keep.py) but never rewrites them."""
    r = run("--root", claude, *args)
    assert r.exit_code == 2
    lines = r.stderr.splitlines()
    assert lines[0].startswith("samctl: error: Claude Code store at") and "would rewrite them" in lines[0]
    assert len(lines) == 2 and lines[1].startswith("hint:")
    assert not (claude / ".samctl").exists() and not (claude.parent / ".samctl").exists()


@pytest.mark.parametrize("args", [["log", "0b7c"]])
def test_store_specific_readers_say_not_yet(claude, run, args):
    r = run("--root", claude, *args)
    assert r.exit_code == 2
    assert (
        r.stderr.splitlines()[0] == f"samctl: error: {args[0]} does not read claude-code stores yet; nothing was done"
    )


def test_warm_ls_reads_no_session(claude, run, monkeypatch):
    from samctl.stores.claude_code import store as cc_store

    calls = []
    real = cc_store.decode_session
    monkeypatch.setattr(cc_store, "decode_session", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    first = run("--root", claude, "ls", "--format", "json").stdout
    assert len(calls) == 3  # S3 (no message) too: cached as such
    calls.clear()
    assert run("--root", claude, "ls", "--format", "json").stdout == first and calls == []
    assert run("--root", claude, "--no-cache", "ls", "--format", "json").stdout == first and len(calls) == 3


@pytest.mark.parametrize("copies", [3, 14])
def test_search_sums_up_the_notes_of_many_sessions(tmp_path, run, copies, monkeypatch):
    """A note (an info finding: records of unknown types kept as is) for each of thousands of sessions
    would bury the results: past 10 files, search says one line per code; for a few, each as before."""
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / ".claude"
    shutil.copytree(REPO / "fixtures" / "demo" / "claude_code", root, symlinks=True)
    src = root / "projects" / "-home-ana-api" / f"{S1}.jsonl"
    for n in range(copies - 1):
        new = f"{S1[:-4]}{n:04d}"
        (src.parent / f"{new}.jsonl").write_text(src.read_text().replace(S1, new))
    r = run("--root", root, "-v", "search", "login", "timeout")  # the notes are said under -v only
    assert r.exit_code == 0, r.stderr
    notes = [x for x in r.stderr.splitlines() if x.startswith("info: unknown-type")]
    if copies > 10:
        assert len(notes) == 1 and re.search(r": (\d+) notes in (\d+) files of this store", notes[0])
        assert int(re.search(r"notes in (\d+) files", notes[0])[1]) >= copies and "check` lists each" in notes[0]
    else:
        assert len(notes) >= copies and all("files of this store" not in x for x in notes)
    r2 = run("--root", root, "-v", "search", "login", "timeout", "--no-index")
    assert (r2.exit_code, r2.stdout, r2.stderr) == (r.exit_code, r.stdout, r.stderr)
