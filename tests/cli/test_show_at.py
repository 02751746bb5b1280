"""show --at POSITION: opens a transcript at the message search reports, with the pager or without."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.readonly_stores import demo_copy
from tests.conftest import REPO, fingerprint

SAM_TRIP = "8B58CBC4-ACA7-4811-AE66-C01921690310"  # 5 messages: user, assistant, tool, reasoning, assistant
SAM_BUDGET = "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"  # 4 messages, one hidden ("Continue.")
MERMAID = "20260810_140307_512"


def _json(run, root, *args) -> dict:
    r = run("--root", root, "show", *args, "--format", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_text_piped_starts_at_the_message(run, sam_demo):
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, "show", "8B58", "--at", "2", "--no-pager")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "Portland weekend trip"
    assert lines[3] == f"(2 earlier messages not shown; samctl show {SAM_TRIP} shows them)"
    assert lines[5].startswith("── tool weather_operations")
    assert "I'll check the weather" not in r.stdout  # message 1 is left out
    assert "Saturday looks sunny" in r.stdout  # and the ones after are there
    assert fingerprint(sam_demo) == before


def test_at_zero_is_the_whole_transcript(run, sam_demo):
    whole = run("--root", sam_demo, "show", "8B58", "--no-pager").stdout
    assert run("--root", sam_demo, "show", "8B58", "--at", "0", "--no-pager").stdout == whole


def test_negative_counts_from_the_end(run, sam_demo):
    last = _json(run, sam_demo, "8B58", "--at", "-1")
    assert last["at"] == 4 and [m["content"] for m in last["messages"]] == [
        "Saturday looks sunny (24°C) and Sunday brings light rain. Which neighborhood would you like to stay in?"
    ]
    first = _json(run, sam_demo, "8B58", "--at", "-5")
    assert first["at"] == 0 and first["exported_messages"] == 5


@pytest.mark.parametrize("at", ["5", "-6", "99999999999999999999"])
def test_out_of_range_is_a_usage_error(run, sam_demo, at):
    before = fingerprint(sam_demo)
    for fmt in ("text", "json", "markdown"):
        r = run("--root", sam_demo, "show", "8B58", "--at", at, "--format", fmt, "--no-pager")
        assert r.exit_code == 2
        assert r.stdout == ""
        assert f"samctl: error: position {at}: conversation {SAM_TRIP} has 5 messages (0..4)" in r.stderr
    assert fingerprint(sam_demo) == before


def test_not_a_number_is_a_usage_error(run, sam_demo):
    r = run("--root", sam_demo, "show", "8B58", "--at", "two")
    assert r.exit_code == 2 and "'two' is not a valid integer" in r.stderr


def test_at_refuses_raw(run, sam_demo):
    r = run("--root", sam_demo, "show", "8B58", "--at", "1", "--raw")
    assert r.exit_code == 2 and r.stdout == ""
    assert "--at does not apply to --raw" in r.stderr


def test_the_message_at_is_shown_even_when_hidden(run, sam_demo):
    whole = _json(run, sam_demo, SAM_BUDGET, "--all")
    hidden = [i for i, m in enumerate(whole["messages"]) if m["hidden"]]
    assert hidden, "the demo's budget conversation has a hidden message"
    i = hidden[0]
    doc = _json(run, sam_demo, SAM_BUDGET, "--at", str(i))
    assert doc["messages"][0] == whole["messages"][i]
    assert not any(m["hidden"] for m in doc["messages"][1:])  # the others still follow --all
    text = run("--root", sam_demo, "show", SAM_BUDGET, "--at", str(i), "--no-pager").stdout
    assert whole["messages"][i]["content"] in text


def test_the_message_at_is_shown_whatever_its_importance(run, sam_demo):
    doc = _json(run, sam_demo, "8B58", "--at", "2", "--min-importance", "0.8")
    assert doc["messages"][0]["role"] == "tool"
    assert [m["importance"] >= 0.8 for m in doc["messages"][1:]] == [True]


def test_markdown_piped_starts_at_the_message(run, mermaid_demo):
    whole = _json(run, mermaid_demo, MERMAID, "--all")
    r = run("--root", mermaid_demo, "show", MERMAID, "--at", "1", "--format", "markdown", "--no-pager")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("# ")
    assert f"_(1 earlier message not shown; samctl show {MERMAID} shows it)_" in r.stdout
    heads = [ln for ln in r.stdout.splitlines() if ln.startswith("## ")]
    assert heads[0].startswith("## " + whole["messages"][1]["role"].capitalize())


# ---------------------------------------------------------------------- one numbering for every store


def _ids(run, root) -> list[str]:
    r = run("--root", root, "ls", "--format", "json")
    assert r.exit_code in (0, 3), r.stderr
    return [c["id"] for c in json.loads(r.stdout)]


@pytest.mark.parametrize(
    "name,sub",
    [("claude_code", ""), ("codex", ""), ("llm", "logs.db"), ("chatgpt", "chatgpt-export.zip"), ("chatgpt", "export")],
)
def test_positions_are_the_stored_order_in_read_only_stores(run, tmp_path, name, sub):
    root = demo_copy(tmp_path, name) / sub
    before = fingerprint(root)
    cid = _ids(run, root)[0]
    whole = _json(run, root, cid, "--all")
    n = whole["stored_messages"]
    assert n == len(whole["messages"]) > 1
    for i in range(n):
        doc = _json(run, root, cid, "--all", "--at", str(i))
        assert doc["at"] == i and doc["messages"] == whole["messages"][i:]
    r = run("--root", root, "show", cid, "--at", str(n))
    assert r.exit_code == 2 and f"has {n} messages (0..{n - 1})" in r.stderr
    assert fingerprint(root) == before


def test_search_positions_open_the_same_message(sam_demo, mermaid_demo):
    """A message row's position (what search reports) is the index show --at opens, in every store that
    yields rows (a store that does not search yet is skipped; it must keep this rule when it does)."""
    from samctl.core.load import load_conversation
    from samctl.stores import open_store

    checked = 0
    for root in (sam_demo, mermaid_demo):
        store = open_store(str(root))
        findings: list = []
        for src in store.search_sources(findings).values():
            for row in store.source_rows(src, findings, []):
                if row.kind != "message":
                    continue
                conv = load_conversation(store, row.conversation, [])
                assert conv.messages[row.position].content == row.text
                checked += 1
    assert checked > 5


# ---------------------------------------------------------------------- the pager, on a real terminal

FAKE_PAGER = """import json, os, sys
with open(os.environ["PAGER_RECORD"], "w") as f:
    json.dump({"argv": sys.argv[1:], "stdin": sys.stdin.read(), "LESS": os.environ.get("LESS")}, f)
"""


def _pager(tmp_path: Path, name: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    p = bin_dir / name
    p.write_text(f"#!{sys.executable}\n{FAKE_PAGER}")
    p.chmod(0o755)
    return p


def _on_a_terminal(tmp_path, root, args, pager_env: dict) -> dict:
    """Run samctl with stdin and stdout on a pseudo-terminal; what the pager got."""
    rc, err, record = _terminal_run(tmp_path, root, args, pager_env)
    assert rc == 0, err
    return json.loads(record.read_text())


def _terminal_run(tmp_path, root, args, pager_env: dict):
    record = tmp_path / "record.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PAGER", "LESS")}
    env.update(PAGER_RECORD=str(record), TERM="xterm", PATH=f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    env.update(pager_env)
    master, slave = os.openpty()
    try:
        p = subprocess.Popen(
            [sys.executable, "-m", "samctl", "--root", str(root), "show", *args],
            cwd=REPO,
            stdin=slave,
            stdout=slave,
            stderr=subprocess.PIPE,
            env=env,
        )
        os.close(slave)
        while p.poll() is None:  # keep the terminal drained
            if select.select([master], [], [], 0.1)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    break
        _, err = p.communicate(timeout=60)
    finally:
        os.close(master)
    return p.returncode, err.decode(), record


def test_less_opens_at_the_line_of_the_message(tmp_path, sam_demo):
    _pager(tmp_path, "less")
    got = _on_a_terminal(tmp_path, sam_demo, ["8B58", "--at", "2"], {})
    assert got["argv"][0].startswith("+") and got["LESS"] == "FRX"  # (issue #33: as git, colours kept by R)
    line = int(got["argv"][0][1:])
    lines = got["stdin"].splitlines()
    assert "── tool weather_operations" in lines[line - 1]  # (styled: the line holds escapes)
    assert "Portland weekend trip" in lines[0]  # the whole transcript: scrolling up shows the start


def test_less_with_the_users_options_keeps_them(tmp_path, sam_demo):
    less = _pager(tmp_path, "less")
    got = _on_a_terminal(tmp_path, sam_demo, ["8B58", "--at", "-1", "--format", "markdown"], {"PAGER": f"'{less}' -S"})
    assert got["argv"][:1] == ["-S"] and len(got["argv"]) == 2
    line = int(got["argv"][1][1:])
    assert got["stdin"].splitlines()[line - 1].startswith("## Assistant")
    assert got["stdin"].startswith("# Portland weekend trip")


def test_more_gets_the_line_too(tmp_path, mermaid_demo):
    _pager(tmp_path, "more")
    got = _on_a_terminal(tmp_path, mermaid_demo, [MERMAID, "--at", "1"], {"PAGER": "more"})
    assert len(got["argv"]) == 1 and got["argv"][0].startswith("+")
    assert got["stdin"].splitlines()[int(got["argv"][0][1:]) - 1].lstrip("\x1b[0123456789;m").startswith("── ")


def test_another_pager_gets_the_output_from_the_message_on(tmp_path, sam_demo):
    mine = _pager(tmp_path, "mypager")
    got = _on_a_terminal(tmp_path, sam_demo, ["8B58", "--at", "2"], {"PAGER": str(mine)})
    assert got["argv"] == []
    assert "(2 earlier messages not shown" in got["stdin"]
    assert "I'll check the weather" not in got["stdin"] and "Saturday looks sunny" in got["stdin"]


def test_without_at_the_pager_is_run_as_before(tmp_path, sam_demo):
    _pager(tmp_path, "less")
    got = _on_a_terminal(tmp_path, sam_demo, ["8B58"], {})
    assert got["argv"] == [] and got["LESS"] == "FRX"  # (issue #33: as git's pager, unless LESS is set)


def test_a_pager_that_cannot_be_split_is_a_usage_error(tmp_path, sam_demo):
    """It was an internal error (click's own ValueError), with or without --at."""
    before = fingerprint(sam_demo)
    for args in (["8B58"], ["8B58", "--at", "1"], ["8B58", "--format", "markdown"]):
        rc, err, record = _terminal_run(tmp_path, sam_demo, args, {"PAGER": '"less'})
        assert rc == 2, err
        assert err.splitlines() == [
            "samctl: error: PAGER is not a command line: no closing quotation in '\"less'",
            "hint: fix PAGER, or use --no-pager",
        ]
        assert not record.exists()
    rc, err, _ = _terminal_run(tmp_path, sam_demo, ["8B58", "--no-pager"], {"PAGER": '"less'})
    assert rc == 0, err
    assert fingerprint(sam_demo) == before
