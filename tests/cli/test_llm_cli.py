"""samctl on the llm demo store (a copy of fixtures/demo/llm): ls, show, export and check read it and
change nothing; the writing commands and log are refused with one line (exit 2); search reads them."""

import json

import pytest

from tests.cli.readonly_stores import WRITES, demo_copy
from tests.conftest import fingerprint

T1 = "01kznhts80q7m2x5c9v3d8f6hb"
C2 = "01kf3a0c1dq2w3e4r5t6y7v8j9"


@pytest.fixture
def llm(tmp_path):
    return demo_copy(tmp_path, "llm")


def test_ls_all_generations(run, llm):
    before = fingerprint(llm)
    r = run("--root", llm, "ls", "--format", "json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["id"] for x in rows][:2] == ["01kzr0smm0w4j8n2t6y1b5e9ka", T1]
    assert {x["store"] for x in rows} == {"llm"} and len(rows) == 6
    assert fingerprint(llm) == before


def test_root_may_be_the_database_file(run, llm):
    a = run("--root", llm, "ls", "--format", "json")
    b = run("--root", llm / "logs.db", "ls", "--format", "json")
    assert b.exit_code == 0 and json.loads(a.stdout) == json.loads(b.stdout)


def test_show_text_markdown_json_raw(run, llm):
    before = fingerprint(llm)
    r = run("--root", llm, "show", "01kf3a")
    assert r.exit_code == 0, r.stderr
    assert "→ weather(Lyon)" in r.stdout and "call_w1" not in r.stdout and "── tool weather" in r.stdout
    md = run("--root", llm, "show", C2, "--format", "markdown")
    assert md.exit_code == 0 and md.stdout.startswith("# What is the weather in Lyon")
    js = json.loads(run("--root", llm, "show", T1, "--format", "json").stdout)
    assert js["store"] == "llm" and [m["role"] for m in js["messages"]] == ["user", "assistant", "tool", "assistant"]
    raw = run("--root", llm, "show", T1, "--raw")
    assert raw.exit_code == 0
    rows = json.loads(raw.stdout)
    assert rows["thread"]["id"] == T1 and len(rows["messages"]) == 4
    assert "legacy" in raw.stderr  # its part of the shared database, said so
    assert fingerprint(llm) == before


def test_show_unknown_and_bad_ids(run, llm):
    r = run("--root", llm, "show", "01kx")
    assert r.exit_code == 4 and "no conversation" in r.stderr
    r = run("--root", llm, "show", "../../etc/passwd")
    assert r.exit_code == 2 and "Traceback" not in r.stderr


@pytest.mark.parametrize("fmt", ["markdown", "html", "json", "jsonl"])
def test_export_every_format(run, llm, tmp_path, fmt):
    before = fingerprint(llm)
    out = tmp_path / f"out-{fmt}"
    r = run("--root", llm, "export", "--all", "--to", fmt, "-o", out)
    assert r.exit_code == 0, r.stderr
    assert out.exists()
    assert fingerprint(llm) == before


def test_check_reports_unknown_table_and_part(run, llm):
    before = fingerprint(llm)
    r = run("--root", llm, "check", "--format", "json")
    assert r.exit_code == 0, r.stderr + r.stdout
    codes = {f["code"] for f in json.loads(r.stdout)["findings"]}
    assert codes == {"unknown-table", "unknown-part"}
    assert fingerprint(llm) == before


@pytest.mark.parametrize("argv,said", WRITES)
def test_writing_commands_are_refused(run, llm, argv, said):
    before = fingerprint(llm)
    r = run("--root", llm, *[a.replace("{id}", T1) for a in argv])
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert said in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.startswith("samctl: error:")
    assert fingerprint(llm) == before
    assert sorted(p.name for p in llm.iterdir()) == ["logs.db"]  # no .samctl, no -journal


def test_a_locked_database_is_a_finding(run, llm):
    import sqlite3

    lock = sqlite3.connect(llm / "logs.db")
    lock.execute("BEGIN EXCLUSIVE")
    try:
        r = run("--root", llm, "ls")
    finally:
        lock.rollback()
        lock.close()
    assert r.exit_code == 3 and "db-locked" in r.stderr


def test_search_and_index_read_the_database_and_change_nothing(run, llm):
    before = fingerprint(llm)
    r = run("--root", llm, "search", "pelican", "--format", "json")
    assert r.exit_code in (0, 3), r.stderr
    hits = json.loads(r.stdout)
    assert hits and all(h["store"] == "llm" for h in hits) and "pelican" in hits[0]["text"].lower()
    r = run("--root", llm, "index")
    assert r.exit_code == 0 and "rows:" in r.stdout
    assert fingerprint(llm) == before
