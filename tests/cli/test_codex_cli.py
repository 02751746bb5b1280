"""The Codex CLI store through the command line: ls, show, export, check and stats read a copy of the demo
fixture (every generation, a .jsonl.zst, an archived session) and leave it byte for byte as it was; every
writing command refuses with one line (exit 2) before touching anything."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import fingerprint

REPO = Path(__file__).resolve().parents[2]
T1 = "019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f"
T2 = "019c4a31-0000-7000-8000-00000000abcd"
T3 = "019c5f00-1111-7222-8333-444455556666"
T4 = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
T5 = "d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6"
T6 = "019b0000-aaaa-7bbb-8ccc-ddddeeeeffff"


@pytest.fixture
def codex(tmp_path) -> Path:
    root = tmp_path / ".codex"
    shutil.copytree(REPO / "fixtures" / "demo" / "codex", root, symlinks=True)
    before = fingerprint(root)
    yield root
    assert fingerprint(root) == before


def test_ls_lists_every_generation_newest_first(codex, run):
    r = run("--root", codex, "ls", "--format", "json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["id"] for x in rows] == [T1, T2, T3, T6, T4, T5]
    assert rows[0]["title"] == "auth test failures" and rows[0]["store"] == "codex"
    assert rows[2]["title"] == "what does `make release` do?"  # read from the .jsonl.zst


@pytest.mark.parametrize("sub", ["", "sessions", "archived_sessions"])
def test_root_may_be_the_home_or_its_session_folders(codex, run, sub):
    r = run("--root", codex / sub if sub else codex, "ls", "--format", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert len(r.stdout.splitlines()) == 6


def test_show_formats_and_raw(codex, run):
    r = run("--root", codex, "show", "019c4a2e")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("list the failing tests") == 1  # response_item + event_msg: shown once
    assert "fix test_login" not in r.stdout  # rolled back
    r = run("--root", codex, "show", "019c4a2e", "--all")
    assert "fix test_login" in r.stdout and "unknown record world_state" in r.stdout
    r = run("--root", codex, "show", T3, "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["id"] == T3 and [m["role"] for m in doc["messages"]] == ["user", "assistant"]
    r = run("--root", codex, "show", T4, "--format", "markdown")
    assert r.exit_code == 0 and "rename foo to bar" in r.stdout
    r = run("--root", codex, "show", T3, "--raw")  # the stored bytes: still compressed
    assert r.stdout_bytes[:4] == b"\x28\xb5\x2f\xfd"


@pytest.mark.parametrize("fmt", ["markdown", "html", "json", "jsonl"])
def test_export_every_format(codex, run, tmp_path, fmt):
    out = tmp_path / "out"
    r = run("--root", codex, "export", "--to", fmt, "-o", out, T1, T3, T4, T5, T6)
    assert r.exit_code == 0, r.stderr


def test_check_and_stats(codex, run):
    r = run("--root", codex, "check")
    assert r.exit_code == 0 and "unknown-type" in r.stderr
    r = run("--root", codex, "stats", "--format", "json")
    assert r.exit_code == 0, r.stderr


def test_plain_twin_wins_over_zst_and_a_second_copy_is_reported(tmp_path, run):
    codex = tmp_path / "home"
    shutil.copytree(REPO / "fixtures" / "demo" / "codex", codex)
    jan = codex / "sessions" / "2026" / "01" / "05"
    zst = next(jan.iterdir())
    # what Codex leaves mid-compression: the plain file beside its .zst
    (jan / zst.name[:-4]).write_text(
        json.dumps({"timestamp": "2026-01-05T14:00:00Z", "type": "session_meta", "payload": {"id": T3}})
        + "\n"
        + json.dumps(
            {
                "timestamp": "2026-01-05T14:00:01Z",
                "type": "event_msg",
                "payload": {"type": "user_message", "message": "plain copy"},
            }
        )
        + "\n"
    )
    shutil.copy2(
        codex / "archived_sessions" / next((codex / "archived_sessions").iterdir()).name,
        codex / "sessions" / "2026" / "01" / f"rollout-2025-12-01T11-00-00-{T6}.jsonl",
    )
    r = run("--root", codex, "show", T3)
    assert "plain copy" in r.stdout
    r = run("--root", codex, "check")
    assert r.exit_code == 0 and "duplicate-id" not in r.stderr  # a rollout in a month folder is not walked
    shutil.copy2(
        codex / "archived_sessions" / next((codex / "archived_sessions").iterdir()).name,
        jan / f"rollout-2025-12-01T11-00-00-{T6}.jsonl",
    )
    r = run("--root", codex, "check")
    assert r.exit_code == 3 and "duplicate-id" in r.stderr


@pytest.mark.parametrize("args", [["recover", T1], ["check", "--fix"], ["search", "x", "--touch"]])
def test_rewriting_commands_refuse_with_one_line(codex, run, args):
    """samctl moves Codex rollouts (tests/cli/test_keep.py) but never rewrites them."""
    r = run("--root", codex, *args)
    assert r.exit_code == 2
    lines = r.stderr.splitlines()
    assert lines[0].startswith("samctl: error: Codex CLI store at") and "would rewrite them" in lines[0]
    assert len(lines) == 2 and lines[1].startswith("hint:")


@pytest.mark.parametrize("args", [["log", T1]])
def test_store_specific_readers_say_not_yet(codex, run, args):
    r = run("--root", codex, *args)
    assert r.exit_code == 2 and "does not read codex stores yet" in r.stderr


def test_warm_ls_reads_no_rollout_and_follows_changes(tmp_path, run, monkeypatch):
    """The listing cache: a second ls decodes nothing; a changed rollout is read again; a rename in
    session_index.jsonl shows without the rollout changing; a corrupt cache is only ignored."""
    from samctl.stores.codex import store as codex_store

    home = tmp_path / "home"
    shutil.copytree(REPO / "fixtures" / "demo" / "codex", home)
    calls = []
    real = codex_store.decode_rollout
    monkeypatch.setattr(codex_store, "decode_rollout", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    first = run("--root", home, "ls", "--format", "json").stdout
    assert len(calls) == 6
    calls.clear()
    assert run("--root", home, "ls", "--format", "json").stdout == first and calls == []
    t1 = next((home / "sessions" / "2026" / "02" / "10").glob(f"*{T1}.jsonl"))
    with open(t1, "ab") as f:
        f.write(
            json.dumps(
                {
                    "timestamp": "2026-02-11T00:00:00.000Z",
                    "type": "event_msg",
                    "payload": {"type": "agent_message", "message": "later"},
                }
            ).encode()
            + b"\n"
        )
    os.utime(t1, (1772800000, 1772800000))
    with open(home / "session_index.jsonl", "a") as f:
        f.write(json.dumps({"id": T6, "thread_name": "renamed"}) + "\n")
    rows = {r["id"]: r for r in json.loads(run("--root", home, "ls", "--format", "json").stdout)}
    assert calls == [str(t1)] and rows[T1]["updated"] == "2026-02-11T00:00:00.000Z" and rows[T6]["title"] == "renamed"
    for f in Path(os.environ["SAMCTL_CACHE_DIR"]).glob("codex-meta-*.json"):
        f.write_bytes(b'{"v":5,"kind":"codex","entries":{"x":[1,2,["bad"]]}}')
    calls.clear()
    assert len(json.loads(run("--root", home, "ls", "--format", "json").stdout)) == 6 and len(calls) == 6
