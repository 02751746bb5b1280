"""samctl stores: every store found on a machine (a home laid out as each app lays it out, and the config
file's roots), each once, with the counts `ls` gives; what cannot be opened is a finding; none is exit 4."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import REPO, fingerprint

DEMO = REPO / "fixtures" / "demo"


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A home with SAM, Claude Code, Codex and llm in their usual places, a mermaid project and a ChatGPT
    export named in samctl's config file, and an empty current folder."""
    home = tmp_path / "home"
    shutil.copytree(DEMO / "SAM", home / "Library" / "Application Support" / "SAM")
    shutil.copytree(DEMO / "claude_code", home / ".claude")
    shutil.copytree(DEMO / "codex", home / ".codex")
    (home / ".config" / "io.datasette.llm").mkdir(parents=True)
    shutil.copy(DEMO / "llm" / "logs.db", home / ".config" / "io.datasette.llm" / "logs.db")
    shutil.copytree(DEMO / "mermaid-project", tmp_path / "proj")
    shutil.copy(DEMO / "chatgpt" / "chatgpt-export.zip", tmp_path / "export.zip")
    (home / ".config" / "samctl").mkdir()
    (home / ".config" / "samctl" / "config.toml").write_text(
        f'roots = ["{tmp_path / "proj"}", "{tmp_path / "export.zip"}"]\n'
    )
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    for var in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "LLM_USER_PATH", "SAMCTL_ROOT"):
        monkeypatch.delenv(var, raising=False)
    env = {"HOME": str(home), "SAMCTL_CACHE_DIR": str(tmp_path / "cache")}
    monkeypatch.setenv("HOME", str(home))
    return tmp_path, env


def test_every_store_of_the_machine_once_with_the_counts_ls_gives(run, machine):
    tmp, env = machine
    before = fingerprint(tmp / "home"), fingerprint(tmp / "proj")
    r = run("stores", "--format", "json", env=env)
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert sorted(x["store"] for x in rows) == ["chatgpt", "claude-code", "codex", "llm", "mermaid", "sam"]
    for x in rows:
        ls = run("--root", x["root"], "ls", "--format", "json", env=env)
        assert x["conversations"] == len(json.loads(ls.stdout)) > 0, x
        assert x["read_only"] == (x["store"] not in ("sam", "mermaid", "claude-code", "codex"))
    caps = {x["store"]: x["capabilities"] for x in rows}
    assert caps["sam"] == ["read", "write", "memories"] and caps["mermaid"] == ["read", "write", "event logs"]
    assert caps["codex"] == caps["claude-code"] == ["read", "move", "usage"]  # (declared by the store: has_usage)
    assert caps["llm"] == ["read", "usage"] and caps["chatgpt"] == ["read"]
    assert (fingerprint(tmp / "home"), fingerprint(tmp / "proj")) == before
    table = run("stores", env=env)
    assert table.exit_code == 0 and table.stdout.splitlines()[0].split() == ["STORE", "ROOT", "CONVERSATIONS", "CAN"]


def test_environment_variables_move_the_usual_places(run, machine, monkeypatch):
    tmp, env = machine
    shutil.move(str(tmp / "home" / ".codex"), str(tmp / "elsewhere"))
    monkeypatch.setenv("CODEX_HOME", str(tmp / "elsewhere"))
    rows = json.loads(run("stores", "--format", "json", env=dict(env, CODEX_HOME=str(tmp / "elsewhere"))).stdout)
    assert [x["root"] for x in rows if x["store"] == "codex"] == [str(tmp / "elsewhere")]


def test_a_bad_config_is_a_finding_and_the_others_still_answer(run, machine):
    tmp, env = machine
    (tmp / "home" / ".config" / "samctl" / "config.toml").write_text("roots = [\n")
    r = run("stores", "--format", "json", env=env)
    assert r.exit_code == 3 and "bad-config" in r.stderr and "not TOML" in r.stderr
    assert {x["store"] for x in json.loads(r.stdout)} == {"sam", "claude-code", "codex", "llm"}
    (tmp / "home" / ".config" / "samctl" / "config.toml").write_text('roots = "~/proj"\n')
    r = run("stores", env=env)
    assert r.exit_code == 3 and "roots must be a list" in r.stderr


def test_a_root_that_is_no_store_is_a_finding(run, machine):
    tmp, env = machine
    (tmp / "nothing").mkdir()
    (tmp / "home" / ".config" / "samctl" / "config.toml").write_text(f'roots = ["{tmp / "nothing"}"]\n')
    r = run("stores", env=env)
    assert r.exit_code == 3 and "store-unreadable" in r.stderr and "not a store samctl reads" in r.stderr


def test_no_store_at_all_is_exit_4(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for var in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "LLM_USER_PATH", "SAMCTL_ROOT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    r = run("stores", env={"HOME": str(tmp_path), "SAMCTL_CACHE_DIR": str(tmp_path / "cache")})
    assert r.exit_code == 4 and "no store found" in r.stderr


def test_root_narrows_to_that_store(run, machine):
    tmp, env = machine
    r = run("--root", tmp / "proj", "stores", "--format", "json", env=env)
    assert r.exit_code == 0 and [x["store"] for x in json.loads(r.stdout)] == ["mermaid"]
