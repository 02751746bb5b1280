"""The one store rule (issue #33, docs/scope.md) on a new user's home: only Claude Code and Codex sessions
(and llm added), no --root, no config; global options after the command name; one error style."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from tests.conftest import REPO, fingerprint

DEMO = REPO / "fixtures" / "demo"


@pytest.fixture(params=["two", "with-llm"])
def home(request, tmp_path, monkeypatch):
    home = tmp_path / "home"
    shutil.copytree(DEMO / "claude_code", home / ".claude")
    shutil.copytree(DEMO / "codex", home / ".codex")
    if request.param == "with-llm":
        (home / ".config" / "io.datasette.llm").mkdir(parents=True)
        shutil.copy(DEMO / "llm" / "logs.db", home / ".config" / "io.datasette.llm" / "logs.db")
    old = time.time() - 3 * 86400  # idle sessions (not live)
    for dirpath, dirnames, filenames in os.walk(home):
        os.chmod(dirpath, 0o700)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o600)
            os.utime(os.path.join(dirpath, name), (old, old))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SAMCTL_ROOT", raising=False)
    return home


CLAUDE = "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"


@pytest.mark.parametrize(
    "args",
    [
        ["check"],
        ["attic"],
        ["ls"],
        ["stats"],
        ["search", "the"],
        ["show", "0b7c"],
        ["export", "0b7c"],
        ["restore", "0b7c", "--dry-run"],
        ["index"],
        ["archive", "--copy", "--older-than", "1d", "--all-stores", "--dry-run"],
    ],
)
def test_no_command_says_no_store_found_while_stores_lists_some(run, home, args):
    listed = run("stores", "--format", "json")
    assert listed.exit_code == 0 and len(json.loads(listed.stdout)) >= 2
    r = run(*args)
    assert "no store found" not in r.stderr, r.stderr


def test_the_readme_cron_line_is_silent_and_exits_0(run, home):
    r = run("archive", "--copy", "--older-than", "20d", "--all-stores", "-q")
    assert r.exit_code == 0 and r.stdout == "" and r.stderr == "", r.stderr
    again = run("compact", "--all-stores", "-q")
    assert again.exit_code == 0 and again.stdout == "" and again.stderr == "", again.stderr


# Each command of the README's table, as a new user types it on this home (no --root), and what it does:
# 0 (it worked), or 2 where the rule of docs/scope.md refuses, saying why and the way on.
README_RUNS = {
    "stores": (["stores"], 0, None),
    "ls": (["ls"], 0, None),
    "show": (["show", "0b7c", "--no-pager"], 0, None),
    "search": (["search", "login"], 0, None),
    "export": (["export", "0b7c", "--to", "markdown"], 0, None),
    "resume": (["resume", "0b7c"], 0, None),
    "usage": (["usage", "--by", "model"], 0, None),
    "stats": (["stats"], 0, None),
    "check": (["check"], 0, None),
    "rm": (["rm", "5d1e", "--yes"], 0, None),
    "restore": (["restore", "5d1e"], 0, None),
    "archive": (["archive", "--copy", "--older-than", "20d", "--all-stores"], 0, None),
    "attic": (["attic"], 0, None),
    "index": (["index"], 0, None),
    "compact": (["compact"], 2, "--all-stores"),  # (a writer by filters over two stores: which, or each)
    "recover": (["recover", "0b7c", "--dry-run"], 2, "only moves its files"),  # (Claude Code's files: never rewritten)
    "log": (["log", "0b7c"], 2, "has what log reads"),  # (event logs: mermaid's)
    "browse": None,  # (a terminal application: tests/cli/test_browse_cli.py)
}


def test_every_readme_command_works_without_root(run, home):
    import re

    table = (REPO / "README.md").read_text().split("## Commands", 1)[1]
    verbs = set(re.findall(r"^\| `samctl (\w+)", table, re.M)) | set(re.findall(r", `(\w+)`", table))
    assert verbs and verbs <= README_RUNS.keys(), verbs - README_RUNS.keys()
    for verb in sorted(verbs, key=list(README_RUNS).index):
        if README_RUNS[verb] is None:
            continue
        args, code, said = README_RUNS[verb]
        r = run(*args)
        assert r.exit_code == code and "no store found" not in r.stderr, (args, r.exit_code, r.stderr)
        assert said is None or said in r.stderr, (args, r.stderr)
        assert code or r.stdout or verb in ("check", "attic"), args  # (those two say "nothing wrong" on stderr)


def test_rm_by_filter_of_every_store_asks_once_and_refuses_without_it(run, home):
    before = fingerprint(home)
    r = run("rm", "--older-than", "1d", "--all-stores")
    assert r.exit_code == 2 and r.stderr.count("refusing without confirmation") == 1, r.stderr
    plain = run("rm", "--older-than", "1d")
    assert plain.exit_code == 2 and "rm acts on one store, and 2 are found" in plain.stderr, plain.stderr
    assert "--all-stores" in plain.stderr and "--root" in plain.stderr
    assert fingerprint(home) == before


def test_rm_and_restore_of_an_id_without_root(run, home):
    r = run("rm", "0b7c")
    assert r.exit_code == 0 and f"undo with: samctl restore {CLAUDE};" in r.stderr, r.stderr
    back = run("restore", CLAUDE)
    assert back.exit_code == 0, back.stderr


def test_global_options_go_after_the_command_name(run, home):
    claude = home / ".claude"
    after = run("ls", "--root", claude, "--no-cache", "--format", "json")
    before = run("--root", claude, "--no-cache", "ls", "--format", "json")
    assert after.exit_code == 0 and after.stdout == before.stdout, after.stderr
    assert {x["store"] for x in json.loads(after.stdout)} == {"claude-code"}
    quoted = run("search", "--exact", "--", "--root")  # (after --, a word is the command's)
    assert "no such option" not in quoted.stderr


def test_usage_errors_in_one_style_with_a_suggestion(run, home):
    r = run("sho", "0b7c")
    assert r.exit_code == 2 and r.stderr == "samctl: error: no command 'sho'\nhint: did you mean show?\n", r.stderr
    o = run("ls", "--sortt", "size")
    assert o.exit_code == 2 and o.stderr.startswith(
        "samctl: error: no such option: --sortt\nhint: did you mean --sort?"
    )
    v = run("ls", "--limit", "x")
    assert v.exit_code == 2 and v.stderr.startswith("samctl: error: ") and "Usage:" not in v.stderr


def test_search_exits_1_when_nothing_matches(run, home):
    r = run("search", "zzqxnothingmatcheszzq")
    assert r.exit_code == 1 and r.stdout == "", r.stderr
    hit = run("search", "the")
    assert hit.exit_code == 0, hit.stderr


def test_an_ambiguous_prefix_lists_candidates_with_store_and_title(run, home):
    listed = json.loads(run("ls", "--format", "json").stdout)
    titles, stores = {m["id"]: m["title"] for m in listed}, {m["id"]: m["store"] for m in listed}
    r = run("show", "0")
    assert r.exit_code == 2 and "the candidates are:" in r.stderr, r.stderr
    rows = [ln for ln in r.stderr.splitlines() if ln.startswith("  0")]
    assert len(rows) >= 2
    for ln in rows:
        cid = ln.split()[0]
        assert (titles.get(cid) or "")[:20] in ln and f"  {stores[cid]}  " in ln, ln


@pytest.mark.parametrize("command", ["rm", "archive", "recover", "export", "show", "restore"])
def test_ids_complete_for_every_command_with_titles_in_zsh(run, home, command):
    from click.testing import CliRunner

    from samctl.cli import cli

    if command == "restore":
        assert run("rm", "0b7c", "--force").exit_code == 0
    env = {"_SAMCTL_COMPLETE": "zsh_complete", "COMP_WORDS": f"samctl {command} 0b7", "COMP_CWORD": "2"}
    out = CliRunner().invoke(cli, [], env=env, prog_name="samctl").stdout.splitlines()
    assert out[:3] == ["plain", CLAUDE, "login timeout"], out
