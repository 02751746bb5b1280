"""samctl usage on Claude Code trees, against ccusage 17.2.1's recorded output (tests/data/usage/)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import fingerprint, resealed

DATA = Path(__file__).resolve().parent.parent / "data" / "usage"
A = "11111111-1111-4111-8111-111111111111"
B = "22222222-2222-4222-8222-222222222222"
C = "33333333-3333-4333-8333-333333333333"
TOKENS = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_creation_tokens", "cacheCreationTokens"),
    ("cache_read_tokens", "cacheReadTokens"),
    ("total_tokens", "totalTokens"),
)


@pytest.fixture(autouse=True)
def _utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")  # (the recorded ccusage output was made with TZ=UTC: days are local)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _tree(tmp_path, name) -> Path:
    dst = tmp_path / name
    shutil.copytree(DATA / name, dst)
    old = time.time() - 3600  # (older than the cache's racy window, as a real history is)
    for dirpath, _, files in os.walk(dst):
        for f in files:
            os.utime(os.path.join(dirpath, f), (old, old))
    return dst


def _json(run, root, *args):
    r = run("--root", root, "usage", "--format", "json", *args)
    return r, (json.loads(r.stdout) if r.stdout else None)


def _recorded(name):
    return json.loads((DATA / name).read_text())


def test_per_day_equals_ccusage(tmp_path, run):
    root = _tree(tmp_path, "same")
    before = fingerprint(root)
    r, rep = _json(run, root)
    assert r.exit_code == 0, r.stderr
    cc = _recorded("same.daily.json")["daily"]
    assert [row["day"] for row in rep["rows"]] == [d["date"] for d in cc]
    for row, d in zip(rep["rows"], cc):
        assert {k: row[k] for k, _ in TOKENS} == {k: d[c] for k, c in TOKENS}
    assert fingerprint(root) == before  # read-only: every byte and mtime as it was


def _ccusage_sessions(name) -> dict:
    """ccusage 17.2.1 names a "session" by the folder of the file: a session file counts under its project's
    folder name, a sub-agent under "subagents" (projectPath ``<slug>/<session>``).  With one session a project
    (as in same/), both map to a session id; the sums per session id are what samctl must say."""
    slug_to_session = {"-home-ana-api": A, "-home-ana-web": B, "-home-ana-notes": C}
    out: dict = {}
    for s in _recorded(name)["sessions"]:
        sid = s["projectPath"].rsplit("/", 1)[1] if s["sessionId"] == "subagents" else slug_to_session[s["sessionId"]]
        acc = out.setdefault(sid, dict.fromkeys((k for k, _ in TOKENS), 0))
        for k, c in TOKENS:
            acc[k] += s[c]
    return out


def test_per_session_equals_ccusage_with_subagents_under_their_parent(tmp_path, run):
    r, rep = _json(run, _tree(tmp_path, "same"), "--by", "session")
    assert r.exit_code == 0, r.stderr
    mine = {row["session"]: {k: row[k] for k, _ in TOKENS} for row in rep["rows"]}
    assert mine == _ccusage_sessions("same.session.json")
    # the resumed copy of A's first response in B counts for A (the earlier file), once
    assert mine[B]["input_tokens"] == 2000


def test_totals_row_and_breakdown_by_model(tmp_path, run):
    r, rep = _json(run, _tree(tmp_path, "same"), "--breakdown")
    cc = _recorded("same.daily.json")
    assert {k: rep["totals"][k] for k, _ in TOKENS} == {k: cc["totals"][c] for k, c in TOKENS}
    for row, d in zip(rep["rows"], cc["daily"]):
        mine = {m["model"]: (m["input_tokens"], m["output_tokens"]) for m in row["models"]}
        assert mine == {b["modelName"]: (b["inputTokens"], b["outputTokens"]) for b in d["modelBreakdowns"]}
    assert set(rep["rows"][0]) >= {
        "day",
        "input_tokens",
        "output_tokens",
        "cache_creation_tokens",
        "cache_read_tokens",
        "reasoning_tokens",
        "total_tokens",
        "cost_usd",
    }


def test_differs_from_ccusage_on_purpose(tmp_path, run):
    """docs/usage.md, "Where samctl and ccusage differ": a response without a request id on two streamed
    lines (ccusage: twice), a model with no price (ccusage: $0), a negative count (ccusage: added)."""
    root = _tree(tmp_path, "differ")
    r, rep = _json(run, root, "--breakdown")
    cc = _recorded("differ.daily.json")["daily"][0]
    assert r.exit_code == 3  # the negative count is a finding
    assert "bad-usage" in r.stderr and A in r.stderr
    by_model = {m["model"]: m for m in rep["rows"][0]["models"]}
    cc_model = {b["modelName"]: b for b in cc["modelBreakdowns"]}
    sonnet = "claude-sonnet-4-5-20250929"
    assert cc_model[sonnet]["inputTokens"] == 100 + 100 - 500  # msg_D1 twice, and the negative count
    assert by_model[sonnet]["input_tokens"] == 100  # msg_D1 once, the negative line not counted
    assert cc_model["claude-future-9"]["cost"] == 0
    assert by_model["claude-future-9"]["cost_usd"] is None
    assert rep["rows"][0]["cost_usd"] is None and rep["rows"][0]["unpriced_models"] == ["claude-future-9"]
    t = run("--root", root, "usage", "--by", "model")
    assert "claude-future-9" in t.stdout and "?" in t.stdout.splitlines()[1]


def test_second_report_reads_only_changed_files(tmp_path, run, monkeypatch):
    from samctl.stores import usagefiles

    root = _tree(tmp_path, "same")
    reads = []
    real = usagefiles._read
    monkeypatch.setattr(usagefiles, "_read", lambda store, f, parse: reads.append(f.name) or real(store, f, parse))
    r1, rep1 = _json(run, root)
    assert len(reads) == 5  # 3 sessions, 2 sub-agent transcripts
    reads.clear()
    r2, rep2 = _json(run, root)
    assert reads == [] and rep2 == rep1
    f = root / "projects" / "-home-ana-web" / f"{B}.jsonl"
    with open(f, "a") as out:
        out.write(
            json.dumps(
                {
                    "type": "assistant",
                    "timestamp": "2026-03-05T11:00:00.000Z",
                    "requestId": "req_B2",
                    "cwd": "/home/ana/web",
                    "sessionId": B,
                    "message": {
                        "id": "msg_B2",
                        "model": "claude-sonnet-4-5-20250929",
                        "usage": {"input_tokens": 5, "output_tokens": 6},
                    },
                }
            )
            + "\n"
        )
    old = time.time() - 3600
    os.utime(f, (old, old))
    r3, rep3 = _json(run, root)
    assert reads == [f"-home-ana-web/{B}.jsonl"]
    assert rep3["totals"]["input_tokens"] == rep1["totals"]["input_tokens"] + 5


def test_formats_csv_jsonl_html_chart(tmp_path, run):
    root = _tree(tmp_path, "same")
    r = run("--root", root, "usage", "--format", "csv")
    lines = r.stdout.splitlines()
    assert lines[0] == (
        "day,input_tokens,output_tokens,cache_creation_tokens,cache_read_tokens,reasoning_tokens,total_tokens,cost_usd"
    )
    assert lines[1].startswith("2026-03-04,2040,1110,5100,8100,0,16350,") and lines[-1].startswith("TOTAL,")
    r = run("--root", root, "usage", "--format", "jsonl", "--by", "month")
    assert [json.loads(x)["month"] for x in r.stdout.splitlines()] == ["2026-03"]
    r = run("--root", root, "usage", "--format", "jsonl", "--by", "week")
    assert [json.loads(x)["week"] for x in r.stdout.splitlines()] == ["2026-W10"]  # (ISO weeks)
    r = run("--root", root, "usage", "--format", "html", "--by", "project")
    assert r.stdout.startswith("<!doctype html>") and "<svg" in r.stdout and "/home/ana/notes" in r.stdout
    assert "<script" not in r.stdout and "http://" not in r.stdout.replace('xmlns="http://www.w3.org/2000/svg"', "")
    r = run("--root", root, "usage", "--chart")
    assert r.exit_code == 0 and "█" in r.stdout and "16,350" in r.stdout
    out = tmp_path / "u.html"
    r = run("--root", root, "usage", "--format", "html", "-o", out)
    assert r.exit_code == 0 and r.stdout == "" and oct(out.stat().st_mode & 0o777) == "0o600"


def test_blocks_are_ccusage_5_hour_windows(tmp_path, run):
    r, rep = _json(run, _tree(tmp_path, "same"), "--by", "block")
    starts = [row["block_start"] for row in rep["rows"]]
    # 09:00:05 opens a block at 09:00; 23:59:59 is more than 5 h later: a new block at 23:00, which
    # 00:00:01 joins; 10:00 and 14:00 the next day: one block from 10:00 (14:00:20 is within 5 h of 10:00)
    assert starts == ["2026-03-04T09:00:00Z", "2026-03-04T23:00:00Z", "2026-03-05T10:00:00Z"]
    assert rep["rows"][1]["block_end"] == "2026-03-05T04:00:00Z"
    cc = [b for b in _recorded("same.blocks.json")["blocks"] if not b["isGap"]]  # (ccusage's gaps: no usage)
    assert [(b["startTime"].replace(".000", ""), b["endTime"].replace(".000", "")) for b in cc] == [
        (row["block_start"], row["block_end"]) for row in rep["rows"]
    ]
    assert [
        (
            b["tokenCounts"]["inputTokens"],
            b["tokenCounts"]["outputTokens"],
            b["tokenCounts"]["cacheCreationInputTokens"],
            b["tokenCounts"]["cacheReadInputTokens"],
            b["totalTokens"],
        )
        for b in cc
    ] == [
        (
            row["input_tokens"],
            row["output_tokens"],
            row["cache_creation_tokens"],
            row["cache_read_tokens"],
            row["total_tokens"],
        )
        for row in rep["rows"]
    ]


def test_filters_and_bad_prices(tmp_path, run):
    root = _tree(tmp_path, "same")
    _, rep = _json(run, root, "--model", "HAIKU")
    assert rep["totals"]["input_tokens"] == 400 + 410 + 7
    _, rep = _json(run, root, "--project", "/home/ana/notes")
    assert rep["totals"]["input_tokens"] == 900 + 300
    _, rep = _json(run, root, "--since", "2026-03-05", "--until", "2026-03-05")
    assert [row["day"] for row in rep["rows"]] == ["2026-03-05"]
    _, rep = _json(run, root, "--store", "codex")
    assert rep["rows"] == []
    r = run("--root", root, "usage", "--store", "claude")
    assert r.exit_code == 2 and "'claude' is not one of" in r.stderr
    r = run("--root", DATA.parent.parent.parent / "fixtures" / "demo" / "SAM", "usage")
    assert r.exit_code == 0 and r.stdout == "" and "no usage recorded" in r.stderr
    bad = tmp_path / "prices.json"
    bad.write_text('{"models": {"claude-sonnet-4-5": {"input": -1, "output": 1, "cache_read": 0}}}')
    before = fingerprint(root)
    r = run("--root", root, "usage", "--prices", bad)
    assert r.exit_code == 2 and "input must be a number" in r.stderr and r.stdout == ""
    assert fingerprint(root) == before
    good = tmp_path / "mine.json"
    good.write_text(
        json.dumps(
            {
                "taken": "2026-12-01",
                "source": "test",
                "models": {"claude-sonnet-4-5": {"input": 1000000, "output": 0, "cache_write": 0, "cache_read": 0}},
            }
        )
    )
    r = run("--root", root, "usage", "--prices", good)
    assert r.exit_code == 2  # (1e6 $/M is past the sanity bound)
    good.write_text(
        json.dumps(
            {
                "taken": "2026-12-01",
                "source": "test",
                "models": {"claude-sonnet-4-5": {"input": 1, "output": 0, "cache_write": 0, "cache_read": 0}},
            }
        )
    )
    _, rep = _json(run, root, "--prices", good, "--model", "sonnet")
    assert rep["totals"]["cost_usd"] == pytest.approx((1200 + 2000 + 900 + 300) / 1e6)
    assert rep["prices"]["taken"] == "2026-12-01"


def _ccusage() -> list | None:
    exe = os.environ.get("SAMCTL_TEST_CCUSAGE") or shutil.which("ccusage")
    if exe is None:
        return None
    try:
        v = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return [exe] if v.endswith("17.2.1") else None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["same", "differ"])
def test_live_ccusage_still_says_what_was_recorded(tmp_path, name):
    """When ccusage 17.2.1 is installed (on PATH, or SAMCTL_TEST_CCUSAGE): its output now equals the recording."""
    exe = _ccusage()
    if exe is None:
        pytest.skip("ccusage 17.2.1 is not installed (npm i -g ccusage@17.2.1, or set SAMCTL_TEST_CCUSAGE)")
    root = _tree(tmp_path, name)
    for cmd in ("daily", "session") + (("blocks",) if name == "same" else ()):
        out = subprocess.run(
            exe + [cmd, "--json", "--offline"],
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ, TZ="UTC", CLAUDE_CONFIG_DIR=str(root)),
            check=True,
        ).stdout
        assert json.loads(out) == _recorded(f"{name}.{cmd}.json")


def test_hostile_text_never_reaches_terminal_or_page(tmp_path, run):
    root = tmp_path / "claude"
    p = root / "projects" / "-x"
    p.mkdir(parents=True)
    evil = {
        "type": "assistant",
        "timestamp": "2026-03-04T09:00:00Z",
        "requestId": "req_1",
        "sessionId": A,
        "cwd": "/tmp/<img src=x onerror=alert(1)>\x1b[2J",
        "message": {"id": "msg_1", "model": "m\x1b]0;pwned\x07<b>", "usage": {"input_tokens": 1, "output_tokens": 2}},
    }
    (p / f"{A}.jsonl").write_text(json.dumps(evil) + "\n")
    for by in ("project", "model", "session"):
        for extra in ((), ("--chart",)):
            r = run("--root", root, "usage", "--by", by, *extra)
            assert r.exit_code == 0 and "\x1b" not in r.stdout and "\x07" not in r.stdout
    r = run("--root", root, "usage", "--by", "project", "--format", "html")
    assert "<img" not in r.stdout and "&lt;img src=x" in r.stdout
    r = run("--root", root, "usage", "--by", "model", "--format", "json")
    assert "\x1b" not in r.stdout and json.loads(r.stdout)["rows"][0]["model"] == "m\x1b]0;pwned\x07<b>"


def test_codex_rollouts_through_the_command(tmp_path, run):
    root = tmp_path / "codex"
    shutil.copytree(Path(__file__).resolve().parents[2] / "fixtures" / "demo" / "codex", root)
    before = fingerprint(root)
    r, rep = _json(run, root, "--by", "session")
    assert r.exit_code == 0, r.stderr
    assert [(x["session"], x["store"], x["project"], x["input_tokens"], x["output_tokens"]) for x in rep["rows"]] == [
        ("019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f", "codex", "/home/ana/api", 5120, 210)
    ]
    assert fingerprint(root) == before


def test_a_tampered_usage_cache_is_read_again_never_trusted(tmp_path, run, monkeypatch):
    from samctl.fs import userdirs

    root = _tree(tmp_path, "same")
    _, first = _json(run, root)
    [cache] = [p for p in userdirs.cache_dir().iterdir() if p.name.startswith("claude-code-usage-")]
    assert oct(cache.stat().st_mode & 0o777) == "0o600"
    doc = json.loads(cache.read_text())
    names = sorted(doc["entries"])
    doc["entries"][names[0]][4][0][3] = "1200"  # a count as a string
    doc["entries"][names[1]][4] = {"not": "rows"}
    doc["entries"][names[2]][3] = [["code", 5, "warning"]]
    doc["entries"][names[3]][4][0][1] = ["model"]
    cache.write_bytes(resealed(doc))
    r, again = _json(run, root)
    assert r.exit_code == 0 and again == first


def test_no_cache_and_a_cache_folder_inside_the_store_write_nothing(tmp_path, run, monkeypatch):
    root = _tree(tmp_path, "same")
    r, rep = _json(run, root)
    fresh = tmp_path / "fresh-cache"
    fresh.mkdir(mode=0o700)
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(fresh))
    r2 = run("--no-cache", "--root", root, "usage", "--format", "json")
    assert r2.exit_code == 0 and json.loads(r2.stdout) == rep and list(fresh.iterdir()) == []
    inside = root / "projects" / "cache"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(inside))
    before = fingerprint(root)
    r3 = run("--root", root, "usage", "--format", "json")
    assert json.loads(r3.stdout) == rep and "cache-in-store" in r3.stderr
    assert fingerprint(root) == before and not inside.exists()
