"""Hostile Codex CLI homes: every reading command on each, 0 crashes, exit 0 or 3, 0 changed bytes, and
nothing read through a symlink.  Codex's specials: corrupt, truncated and bomb ``.zst`` rollouts, a
plain/compressed pair, odd date folders, ``.tmp`` leftovers, a hostile ``session_index.jsonl``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import zstandard

from samctl.stores import jsonlines
from tests.adversarial.harness import REPO, TALLY, diff, fingerprint, invoke
from tests.adversarial.move_hostile import move_and_back

T1 = "019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f"
T3 = "019c5f00-1111-7222-8333-444455556666"
SECRET = "OUTSIDE-SECRET-c0d3"
DAY = ("sessions", "2026", "02", "10")


def _t1(root: Path) -> Path:
    return root.joinpath(*DAY) / f"rollout-2026-02-10T08-30-01-{T1}.jsonl"


def _zst(root: Path) -> Path:
    return root / "sessions" / "2026" / "01" / "05" / f"rollout-2026-01-05T14-00-00-{T3}.jsonl.zst"


def _append(p: Path, data: bytes) -> None:
    with open(p, "ab") as f:
        f.write(data)


def _ev(text: str) -> bytes:
    return json.dumps(
        {"timestamp": "2026-02-10T10:00:00Z", "type": "event_msg", "payload": {"type": "user_message", "message": text}}
    ).encode()


def _rollout_with(text: str) -> bytes:
    return (
        json.dumps({"timestamp": "2026-02-10T10:00:00Z", "type": "session_meta", "payload": {"id": "x"}}).encode()
        + b"\n"
        + _ev(text)
        + b"\n"
    )


def truncated(root, outside):
    _append(_t1(root), b'{"timestamp":"2026-02-10T10:00:00Z","type":"event_m')
    return "torn-tail"


def unknown_types(root, outside):
    _append(
        _t1(root),
        b'{"timestamp":"t","type":"quantum","payload":{"a":1}}\n'
        b'{"timestamp":"t","type":"response_item","payload":{"type":"teleport"}}\n'
        b'{"timestamp":"t","type":"event_msg","payload":{"type":"psychic"}}\n'
        b'{"timestamp":"t","type":"event_msg","payload":"not an object"}\n{"neither":1}\n',
    )
    return "unknown-type"


def deep_nesting(root, outside):
    _append(_t1(root), b'{"type":"event_msg","payload":' + b"[" * 1500 + b"]" * 1500 + b"}\n")
    return "bad-line"


def huge_line(root, outside):
    _append(_t1(root), _ev("h" * 10_000) + b"\n")
    return "huge-line"


def invalid_utf8(root, outside):
    _append(_t1(root), _ev("x").replace(b'"x"', b'"\xff\xc3"') + b"\n")
    return "bad-utf8"


def nul_bytes(root, outside):
    _append(_t1(root), b"\x00" * 40 + b"\n")
    return "bad-line"


def corrupt_zst(root, outside):
    _zst(root).write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(200))
    return "bad-zstd"


def truncated_zst(root, outside):
    data = _zst(root).read_bytes()
    _zst(root).write_bytes(data[: len(data) // 2])
    return "bad-zstd"


def zstd_bomb(root, outside):
    _zst(root).write_bytes(zstandard.ZstdCompressor().compress(_rollout_with("x") + b" " * 2_000_000 + b"\n"))
    return "too-large"  # over the --max-file-size the test gives


def plain_and_zst_pair(root, outside):
    plain = _zst(root).with_suffix("")
    plain.write_bytes(_rollout_with("plain twin"))
    return None


def rollout_symlink_out(root, outside):
    (outside / "r.jsonl").write_bytes(_rollout_with(SECRET))
    os.symlink(
        outside / "r.jsonl",
        root.joinpath(*DAY) / "rollout-2026-02-10T09-00-00-11111111-2222-4333-8444-555555555555.jsonl",
    )
    return "symlink"


def date_folder_symlink_out(root, outside):
    (outside / "11").mkdir()
    (outside / "11" / "rollout-2026-02-11T09-00-00-22222222-2222-4333-8444-555555555555.jsonl").write_bytes(
        _rollout_with(SECRET)
    )
    os.symlink(outside / "11", root / "sessions" / "2026" / "02" / "11")
    return "symlink"


def archived_folder_symlink_out(root, outside):
    (outside / "arch").mkdir()
    (outside / "arch" / "rollout-2026-02-11T09-00-00-33333333-2222-4333-8444-555555555555.jsonl").write_bytes(
        _rollout_with(SECRET)
    )
    shutil.rmtree(root / "archived_sessions")
    os.symlink(outside / "arch", root / "archived_sessions")
    return "symlink"


def index_symlink_out(root, outside):
    (outside / "idx").write_text(json.dumps({"id": T1, "thread_name": SECRET}) + "\n")
    (root / "session_index.jsonl").unlink()
    os.symlink(outside / "idx", root / "session_index.jsonl")
    return "symlink"


def hostile_index(root, outside):
    (root / "session_index.jsonl").write_bytes(
        b'{"id":5}\n[1]\n{"id":"' + T1.encode() + b'","thread_name":"\x1b[31mred\\u202e"}\n\xff\n{"id":'
    )
    return "bad-line"


def odd_folders_and_temps(root, outside):
    (root / "sessions" / "20x6" / "02" / "10").mkdir(parents=True)
    (root / "sessions" / "20x6" / "02" / "10" / f"rollout-2026-02-10T08-30-01-{T1}.jsonl").write_bytes(b"junk\n")
    (root.joinpath(*DAY) / "rollout-compress-1234.tmp").write_bytes(b"\x28\xb5\x2f\xfd")
    (root.joinpath(*DAY) / f"rollout-2026-02-10T08-30-01-{T1}.jsonl.zst.rollout.1.2.tmp").write_bytes(b"x")
    (root.joinpath(*DAY) / "rollout-2026-02-10T08-30-01-../../x.jsonl".replace("/", "_")).write_bytes(b"x")
    os.mkfifo(root.joinpath(*DAY) / "rollout-2026-02-10T08-30-01-44444444-2222-4333-8444-555555555555.jsonl")
    return "not-regular"


def g0_not_an_object(root, outside):
    (root / "sessions" / "rollout-2025-04-30-55555555-2222-4333-8444-555555555555.json").write_text("[1, 2]")
    return "not-object"


def same_thread_live_and_archived(root, outside):
    shutil.copy2(_t1(root), root / "archived_sessions" / _t1(root).name)
    return "duplicate-id"


CASES = [
    truncated,
    unknown_types,
    deep_nesting,
    huge_line,
    invalid_utf8,
    nul_bytes,
    corrupt_zst,
    truncated_zst,
    zstd_bomb,
    plain_and_zst_pair,
    rollout_symlink_out,
    date_folder_symlink_out,
    archived_folder_symlink_out,
    index_symlink_out,
    hostile_index,
    odd_folders_and_temps,
    g0_not_an_object,
    same_thread_live_and_archived,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_hostile_codex_home(case, tmp_path, monkeypatch):
    monkeypatch.setattr(jsonlines, "LINE_CAP", 4096)
    root, outside = tmp_path / ".codex", tmp_path / "outside"
    outside.mkdir()
    shutil.copytree(REPO / "fixtures" / "demo" / "codex", root)
    code = case(root, outside)
    before = fingerprint(root)
    g = ["--root", str(root), "--max-file-size", "1M"]
    out = tmp_path / "export"
    runs = [
        g + ["ls"],
        g + ["ls", "--format", "json"],
        g + ["show", T1],
        g + ["show", T1, "--all", "--format", "json"],
        g + ["show", T3, "--all"],
        g + ["show", T3, "--raw"],
        g + ["show", T1, "--format", "markdown"],
        g + ["export", "--to", "jsonl", "-o", str(out / "a.jsonl"), T1, T3],
        g + ["export", "--to", "markdown", "-o", str(out / "m"), T1, T3],
        g + ["stats"],
        g + ["search", "test", "--format", "json", "-n", "50"],
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
        if "--raw" not in args:  # (--raw prints the stored bytes as they are, by design)
            assert b"\x1b" not in o.stdout and "\x1b" not in o.stderr, f"{args}: a raw escape reached the terminal"
        if args[-1] == "check":
            check_err = o.stderr
    assert diff(before, fingerprint(root)) == []
    if code:
        assert f": {code}: " in check_err, check_err[-800:]
    move_and_back(root, outside, [T1, T3], SECRET, ["--max-file-size", "1M"])
