"""Hostile Claude Code trees: every reading command on each, 0 crashes, exit 0 or 3, 0 changed bytes, and
nothing read through a symlink (an outside file's secret never reaches the output).

Each case mutates a copy of the demo fixture (fixtures/demo/claude_code) and names the finding code that
``check`` must report for it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from samctl.stores import jsonlines
from tests.adversarial.harness import REPO, TALLY, diff, fingerprint, invoke
from tests.adversarial.move_hostile import move_and_back

S1 = "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"
S2 = "5d1e7f20-8a9b-4c3d-9e8f-7a6b5c4d3e2f"
SECRET = "OUTSIDE-SECRET-7d1f"


def _api(root: Path) -> Path:
    return root / "projects" / "-home-ana-api"


def _session(root: Path) -> Path:
    return _api(root) / f"{S1}.jsonl"


def _append(p: Path, data: bytes) -> None:
    with open(p, "ab") as f:
        f.write(data)


def _user_line(text: str, n: int = 77) -> bytes:
    return json.dumps(
        {
            "type": "user",
            "uuid": f"{n:08x}-0000-4000-8000-{n:012x}",
            "parentUuid": None,
            "timestamp": "2026-03-04T11:00:00Z",
            "message": {"role": "user", "content": text},
        }
    ).encode()


def truncated(root, outside):
    _append(_session(root), b'{"type":"assistant","uuid":"ab')
    os.utime(_session(root), (1772700000, 1772700000))  # old: a cut, not a live write
    return "torn-tail"


def unknown_types(root, outside):
    _append(
        _session(root),
        b'{"type":"hologram","uuid":"1","parentUuid":null,"x":{"y":[1,2]}}\n'
        b'{"type":"assistant","uuid":"2","parentUuid":"1","message":{"id":"m","content":'
        b'[{"type":"telepathy","data":1},"str",null]}}\n{"no_type":true}\n',
    )
    return "unknown-type"


def deep_nesting(root, outside):
    _append(_session(root), b'{"type":"user","message":{"content":' + b"[" * 1500 + b"]" * 1500 + b"}}\n")
    return "bad-line"


def deep_but_parseable(root, outside):
    _append(
        _session(root),
        b'{"type":"user","uuid":"d","message":{"content":[' + b'{"a":' * 200 + b"1" + b"}" * 200 + b"]}}\n",
    )
    return None


def huge_line(root, outside):
    _append(_session(root), _user_line("h" * 10_000) + b"\n")  # over the 4 KiB line cap the test sets
    return "huge-line"


def invalid_utf8(root, outside):
    _append(_session(root), _user_line("x").replace(b'"x"', b'"\xff\xfe\xc3"') + b"\n")
    return "bad-utf8"


def nul_bytes(root, outside):
    _append(_session(root), b"\x00" * 64 + b"\n" + _user_line("a\u0000b") + b"\n")
    return "bad-line"


def lone_surrogate(root, outside):
    _append(_session(root), _user_line("x").replace(b'"x"', b'"\\udc00\\ud800"') + b"\n")
    return "lone-surrogate"


def not_json_at_all(root, outside):
    _session(root).write_bytes(os.urandom(2048).replace(b"\n", b"") + b"\n")
    return "bad-line"


def empty_file(root, outside):
    _session(root).write_bytes(b"")
    return None


def session_symlink_out(root, outside):
    (outside / "s.jsonl").write_bytes(_user_line(SECRET) + b"\n")
    os.symlink(outside / "s.jsonl", _api(root) / "11111111-2222-4333-8444-555555555555.jsonl")
    return "symlink"


def project_symlink_out(root, outside):
    (outside / "proj").mkdir()
    (outside / "proj" / "22222222-2222-4333-8444-555555555555.jsonl").write_bytes(_user_line(SECRET) + b"\n")
    os.symlink(outside / "proj", root / "projects" / "-evil")
    return "symlink"


def subagents_symlink_out(root, outside):
    (outside / "agents").mkdir()
    (outside / "agents" / "agent-zz.jsonl").write_bytes(_user_line(SECRET) + b"\n")
    sub = _api(root) / S1 / "subagents"
    shutil.rmtree(sub)
    os.symlink(outside / "agents", sub)
    return None


def sibling_agent_symlink_out(root, outside):
    (outside / "a.jsonl").write_bytes(_user_line(SECRET) + b"\n")
    notes = root / "projects" / "-home-ana-notes"
    (notes / "agent-32335b9b.jsonl").unlink()
    os.symlink(outside / "a.jsonl", notes / "agent-32335b9b.jsonl")
    return "symlink"


def traversal_agent_ids(root, outside):
    (outside / "agent-x.jsonl").write_bytes(_user_line(SECRET) + b"\n")
    _append(
        _session(root),
        b'{"type":"user","uuid":"t","toolUseResult":{"agentId":"../../../outside/x"},'
        b'"message":{"content":"agentId: ..%2f..%2fx"}}\n',
    )
    return None


def fifo_and_folder_named_like_sessions(root, outside):
    os.mkfifo(_api(root) / "33333333-2222-4333-8444-555555555555.jsonl")
    (_api(root) / "44444444-2222-4333-8444-555555555555.jsonl").mkdir()
    return "not-regular"


def parent_cycle_and_phantoms(root, outside):
    a, b = "aaaaaaaa-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002"
    _session(root).write_bytes(
        b"\n".join(
            json.dumps(d).encode()
            for d in [
                {"type": "user", "uuid": a, "parentUuid": b, "message": {"content": "one"}},
                {"type": "user", "uuid": b, "parentUuid": a, "message": {"content": "two"}},
                {"type": "assistant", "uuid": "c", "parentUuid": "phantom", "message": {"content": "three"}},
                {"type": "user", "uuid": a, "parentUuid": None, "message": {"content": "dup"}},
            ]
        )
        + b"\n"
    )
    return "tree-cycle"


def duplicate_session_in_two_projects(root, outside):
    other = root / "projects" / "-home-ana-other"
    other.mkdir()
    shutil.copy2(_session(root), other / f"{S1}.jsonl")
    return "duplicate-id"


def over_the_read_cap(root, outside):
    _append(_session(root), b" " * 300_000 + b"\n")
    return "too-large"


CASES = [
    truncated,
    unknown_types,
    deep_nesting,
    deep_but_parseable,
    huge_line,
    invalid_utf8,
    nul_bytes,
    lone_surrogate,
    not_json_at_all,
    empty_file,
    session_symlink_out,
    project_symlink_out,
    subagents_symlink_out,
    sibling_agent_symlink_out,
    traversal_agent_ids,
    fifo_and_folder_named_like_sessions,
    parent_cycle_and_phantoms,
    duplicate_session_in_two_projects,
    over_the_read_cap,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_hostile_claude_tree(case, tmp_path, monkeypatch):
    monkeypatch.setattr(jsonlines, "LINE_CAP", 4096)
    root, outside = tmp_path / ".claude", tmp_path / "outside"
    outside.mkdir()
    shutil.copytree(REPO / "fixtures" / "demo" / "claude_code", root)
    code = case(root, outside)
    before = fingerprint(root)
    cap = ["--max-file-size", "200K"] if case is over_the_read_cap else []
    g = ["--root", str(root), *cap]
    out = tmp_path / "export"
    runs = [
        g + ["ls"],
        g + ["ls", "--format", "json"],
        g + ["show", S1],
        g + ["show", S1, "--all", "--format", "json"],
        g + ["show", S1, "--format", "markdown", "--all"],
        g + ["show", S1, "--raw"],
        g + ["show", S2, "--all"],
        g + ["export", "--to", "json", "-o", str(out / "j"), S1, S2],
        g + ["export", "--to", "html", "-o", str(out / "h"), S1],
        g + ["stats"],
        g + ["search", "login", "--format", "json", "-n", "50"],
        g + ["search", "--exact", "e"],
        g + ["usage", "--by", "session", "--breakdown", "--format", "json"],
        g + ["usage", "--chart"],
        g + ["check"],
    ]
    check_err = ""
    for args in runs:
        TALLY.cases += 1
        o = invoke(args)
        assert o.crash is None, f"{args}: {o.crash}"
        assert o.exit_code in ((0, 1, 3) if "search" in args else (0, 3)), (
            f"{args}: exit {o.exit_code}: {o.stderr[-600:]}"
        )
        assert SECRET.encode() not in o.stdout and SECRET not in o.stderr, f"{args} read through a symlink"
        if args[-1] == "check":
            check_err = o.stderr
    assert diff(before, fingerprint(root)) == []
    if code:
        assert f": {code}: " in check_err, check_err[-800:]
    move_and_back(root, outside, [S1, S2], SECRET, cap)
