"""Write the Claude Code trees the usage tests compare with ccusage 17.2.1 (deterministic, no clock).

    python tests/data/usage/make_usage_trees.py tests/data/usage

``same/``: what samctl and ccusage must count alike (streamed lines of one response, a resumed copy in a
later session, sub-agent transcripts in both layouts, three models, cache writes, two UTC days, one session a
project). ``differ/``: the cases where samctl differs from ccusage on purpose (docs/usage.md): a response
without a request id repeated on two streamed lines, a model with no price, a negative count.
The recorded outputs beside them were made with (node 18+):

    TZ=UTC CLAUDE_CONFIG_DIR=tests/data/usage/same npx ccusage@17.2.1 daily --json --offline > same.daily.json
    TZ=UTC CLAUDE_CONFIG_DIR=tests/data/usage/same npx ccusage@17.2.1 session --json --offline > same.session.json
    TZ=UTC CLAUDE_CONFIG_DIR=tests/data/usage/same npx ccusage@17.2.1 blocks --json --offline > same.blocks.json
    (and daily, session for differ/)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

A = "11111111-1111-4111-8111-111111111111"
B = "22222222-2222-4222-8222-222222222222"
C = "33333333-3333-4333-8333-333333333333"


def _line(o: dict) -> str:
    return json.dumps(o, separators=(",", ":"))


def _asst(sid, cwd, n, ts, mid, model, usage, rid=True, **extra):
    e = {
        "type": "assistant",
        "uuid": f"{n:08x}-0000-4000-8000-{n:012x}",
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": sid,
        "timestamp": ts,
        "cwd": cwd,
        "version": "2.1.51",
        "message": {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": f"reply {n}"}],
            "usage": usage,
        },
    }
    if rid:
        e["requestId"] = "req_" + mid[4:]
    e.update(extra)
    return e


def _user(sid, cwd, n, ts, text):
    return {
        "type": "user",
        "uuid": f"{n:08x}-0000-4000-8000-{n:012x}",
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": sid,
        "timestamp": ts,
        "cwd": cwd,
        "version": "2.1.51",
        "message": {"role": "user", "content": text},
    }


def _u(i, o, cw=0, cr=0):
    return {"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr}


def _write(path: Path, lines: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(_line(x) + "\n" for x in lines))


def same(root: Path) -> None:
    p = root / "projects"
    cwd_a, cwd_b, cwd_c = "/home/ana/api", "/home/ana/web", "/home/ana/notes"
    a = [
        _user(A, cwd_a, 1, "2026-03-04T09:00:00.000Z", "hello"),
        # one response streamed on three lines: the same usage each time
        _asst(A, cwd_a, 2, "2026-03-04T09:00:05.000Z", "msg_A1", "claude-sonnet-4-5-20250929", _u(1200, 80, 5000, 0)),
        _asst(A, cwd_a, 3, "2026-03-04T09:00:06.000Z", "msg_A1", "claude-sonnet-4-5-20250929", _u(1200, 80, 5000, 0)),
        _asst(A, cwd_a, 4, "2026-03-04T09:00:07.000Z", "msg_A1", "claude-sonnet-4-5-20250929", _u(1200, 80, 5000, 0)),
        _asst(A, cwd_a, 5, "2026-03-04T23:59:59.000Z", "msg_A2", "claude-opus-4-5-20251101", _u(30, 900, 0, 6200)),
        _asst(A, cwd_a, 6, "2026-03-05T00:00:01.000Z", "msg_A3", "claude-haiku-4-5-20251001", _u(7, 11, 0, 300)),
    ]
    _write(p / "-home-ana-api" / f"{A}.jsonl", a)
    _write(
        p / "-home-ana-api" / A / "subagents" / "agent-a1b2c3.jsonl",
        [
            _asst(
                A,
                cwd_a,
                20,
                "2026-03-04T09:01:00.000Z",
                "msg_S1",
                "claude-haiku-4-5-20251001",
                _u(400, 60, 100, 900),
                isSidechain=True,
                agentId="a1b2c3",
            ),
            _asst(
                A,
                cwd_a,
                21,
                "2026-03-04T09:01:30.000Z",
                "msg_S2",
                "claude-haiku-4-5-20251001",
                _u(410, 70, 0, 1000),
                isSidechain=True,
                agentId="a1b2c3",
            ),
        ],
    )
    # B resumes A: its file starts with copies of A's lines (same message and request ids), then goes on
    b = [dict(x, sessionId=B) for x in a[:3]] + [
        _user(B, cwd_b, 30, "2026-03-05T10:00:00.000Z", "go on"),
        _asst(B, cwd_b, 31, "2026-03-05T10:00:09.000Z", "msg_B1", "claude-sonnet-4-5-20250929", _u(2000, 150, 0, 8000)),
    ]
    _write(p / "-home-ana-web" / f"{B}.jsonl", b)
    # C: an older session with an agent-<id>.jsonl beside it (2.1.1 and earlier)
    _write(
        p / "-home-ana-notes" / f"{C}.jsonl",
        [
            _user(C, cwd_c, 40, "2026-03-05T14:00:00.000Z", "notes"),
            _asst(
                C,
                cwd_c,
                41,
                "2026-03-05T14:00:03.000Z",
                "msg_C1",
                "claude-sonnet-4-5-20250929",
                _u(900, 40, 0, 0),
                version="1.0.83",
            ),
        ],
    )
    _write(
        p / "-home-ana-notes" / "agent-9f8e7d.jsonl",
        [
            _asst(
                C,
                cwd_c,
                42,
                "2026-03-05T14:00:20.000Z",
                "msg_C2",
                "claude-sonnet-4-5-20250929",
                _u(300, 20, 0, 50),
                isSidechain=True,
                agentId="9f8e7d",
                version="1.0.83",
            )
        ],
    )


def differ(root: Path) -> None:
    p = root / "projects"
    cwd = "/home/ana/odd"
    _write(
        p / "-home-ana-odd" / f"{A}.jsonl",
        [
            # one response on two streamed lines, no request id: ccusage counts it twice, samctl once
            _asst(
                A, cwd, 1, "2026-03-06T08:00:00.000Z", "msg_D1", "claude-sonnet-4-5-20250929", _u(100, 10), rid=False
            ),
            _asst(
                A, cwd, 2, "2026-03-06T08:00:01.000Z", "msg_D1", "claude-sonnet-4-5-20250929", _u(100, 10), rid=False
            ),
            # a model no price table knows: ccusage prices it at 0, samctl says unknown
            _asst(A, cwd, 3, "2026-03-06T08:01:00.000Z", "msg_D2", "claude-future-9", _u(1000, 100)),
            # a negative count: ccusage adds it, samctl skips the line with a finding
            _asst(A, cwd, 4, "2026-03-06T08:02:00.000Z", "msg_D3", "claude-sonnet-4-5-20250929", _u(-500, 10)),
        ],
    )


if __name__ == "__main__":
    out = Path(sys.argv[1])
    same(out / "same")
    differ(out / "differ")
