"""An llm 0.36 thread whose responses call several tools at once (tests/fixtures_real/llm-0.36, written by
llm itself): one message of role ``tool`` holds every result of a round, and samctl shows each result as a
message, so ``ls`` must count them the same way (ls = show header = printed)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.conftest import fingerprint

REAL = Path(__file__).resolve().parents[1] / "fixtures_real" / "llm-0.36"


def test_several_tool_results_in_one_message_are_counted_as_shown(run, tmp_path):
    db = tmp_path / "logs.db"
    db.write_bytes(gzip.decompress((REAL / "logs-tools.db.gz").read_bytes()))
    before = fingerprint(tmp_path)
    r = run("--root", db, "ls", "--format", "jsonl")
    assert (r.exit_code, r.stderr) == (0, "")
    (row,) = [json.loads(x) for x in r.stdout.splitlines()]
    s = run("--root", db, "show", row["id"], "--no-pager")
    assert (s.exit_code, s.stderr) == (0, "")
    heads = [ln for ln in s.stdout.splitlines() if ln.startswith("── ") and ln.endswith(" ──")]
    assert [h.split(" · ")[0] for h in heads] == [
        "── user", "── assistant", "── tool add", "── tool mul", "── assistant",
        "── user", "── assistant", "── tool add", "── tool boom [error]", "── assistant",
    ]  # fmt: skip
    assert row["message_count"] == len(heads) == 10 and " · 10 messages" in s.stdout.splitlines()[1]
    d = json.loads(run("--root", db, "show", row["id"], "--format", "json").stdout)
    assert d["exported_messages"] == 10 and d["model"] == "echo"
    assert "Error: no boom today" in s.stdout and "  → boom(7)" in s.stdout
    st = json.loads(run("--root", db, "stats", "--format", "json").stdout)
    assert st["total"]["messages"] == 10
    assert run("--root", db, "check").exit_code == 0
    assert fingerprint(tmp_path) == before
