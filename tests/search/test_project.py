"""search --project/--here: the project's conversations are the only ones ranked, so a project whose hits
rank below thousands of other projects' hits still finds them (issue 35)."""

from __future__ import annotations

import json
import os

from tests.conftest import fingerprint

SESSIONS, TURNS = 1300, 4  # the other project's hits: more than any pool of best hits the search could filter
BIG = SESSIONS * TURNS
SMALL = "0000000b-1111-4111-8111-000000000002"


def _line(sid: str, cwd: str, i: int, text: str, parent: str | None) -> tuple[str, str]:
    uid = f"{i:08x}-3333-4333-8333-{int(sid[:8], 16):012x}"
    d = {
        "type": "user",
        "uuid": uid,
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "sessionId": sid,
        "cwd": cwd,
        "timestamp": f"2026-03-01T10:{i // 3600 % 60:02d}:{i // 60 % 60:02d}.{i % 60:03d}Z",
        "version": "2.1.51",
        "message": {"role": "user", "content": text},
    }
    return json.dumps(d), uid


def _session(root, cwd: str, sid: str, texts: list) -> None:
    folder = root / "projects" / cwd.replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    lines, parent = [], None
    for i, text in enumerate(texts):
        line, parent = _line(sid, cwd, i, text, parent)
        lines.append(line)
    (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")


def _store(tmp_path):
    """Projects ``WORK/big`` (thousands of short turns saying the word, each a better hit than the small
    project's) and ``WORK/small`` (one long turn saying it once)."""
    root, work = tmp_path / "claude", tmp_path / "work"
    for i in range(SESSIONS):
        sid = f"{0xA0000000 + i:08x}-1111-4111-8111-000000000001"
        _session(root, str(work / "big"), sid, [f"quokka {i} {j}" for j in range(TURNS)])
    filler = " ".join(f"word{i}" for i in range(300))
    _session(root, str(work / "small"), SMALL, ["hello there", f"{filler} quokka {filler}"])
    return root


def test_a_project_whose_hits_rank_below_thousands_of_others_finds_them(run, tmp_path):
    root = _store(tmp_path)
    before = fingerprint(root)
    every = run("--root", root, "search", "quokka", "-n", str(BIG + 10), "--per-conversation", "0", "--format", "json")
    assert every.exit_code == 0, every.stderr
    ranked = json.loads(every.stdout)
    small = [i for i, h in enumerate(ranked) if h["conversation_id"].startswith("0000000b")]
    assert small and small[0] >= BIG  # (the small project's hit is below every one of the big project's)
    r = run("--root", root, "search", "quokka", "--project", "small", "--format", "json")
    assert r.exit_code == 0, r.stderr
    got = json.loads(r.stdout)
    assert [h["conversation_id"] for h in got] == [ranked[i]["conversation_id"] for i in small]
    # ranked as in the whole store: the statistics are of every row
    assert got[0]["position"] == 1 and got[0]["score"] == ranked[small[0]]["score"]
    big = json.loads(run("--root", root, "search", "quokka", "--project", "big", "-n", "5", "--format", "json").stdout)
    assert len(big) == 5 and all(h["conversation_id"].startswith("a") for h in big)
    for extra in (["--exact"], ["--rank", "sam", "--threshold", "0"]):
        r = run("--root", root, "search", "quokka", "--project", "small", "--format", "json", *extra)
        assert r.exit_code == 0, (extra, r.stderr)
        hits = json.loads(r.stdout)
        assert hits[0]["position"] == 1 and {h["conversation_id"] for h in hits} == {SMALL}, extra
    assert fingerprint(root) == before


def test_here_finds_the_current_folders_hits(run, tmp_path, monkeypatch):
    root = _store(tmp_path)
    before = fingerprint(root)
    here = tmp_path / "work" / "small"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    for how in (["--here"], ["--project", str(here)]):
        r = run("--root", root, "search", "quokka", *how, "--format", "json")
        assert r.exit_code == 0, (how, r.stderr)
        assert {h["conversation_id"] for h in json.loads(r.stdout)} == {SMALL}, how
    assert fingerprint(root) == before


def test_a_project_without_the_word_finds_nothing(run, tmp_path):
    root = _store(tmp_path)
    before = fingerprint(root)
    r = run("--root", root, "search", "hello", "--project", "big", "--format", "json")
    assert r.exit_code == 1 and json.loads(r.stdout) == []
    r = run("--root", root, "search", "quokka", "--project", "nosuch")
    assert r.exit_code == 1 and r.stdout == "" and "no matches" in r.stderr
    assert fingerprint(root) == before
    assert os.path.isdir(root)
