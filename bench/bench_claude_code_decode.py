"""Claude Code decoding throughput against a plain orjson read of the same files.

    python bench/bench_claude_code_decode.py [--sessions 200] [--turns 60] [--repeat 5]

Generates a Claude Code ``projects`` tree in a temporary folder (streamed assistant lines with thinking, text
and tool_use sharing one ``message.id``, tool results, an edited-prompt side branch per session), then prints
the median MB/s of: (a) reading every file and ``orjson.loads`` of every line, the floor; (b) samctl's
``decode_session`` of every file (the same read, plus the tree walk and the model); (c) ``ls``'s path,
``ClaudeCodeStore.list_metas``, cold and with a warm listing cache.  Ratios are (b)/(a) and (c)/(a), of wall and CPU time (see timing.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson  # noqa: E402

from bench.timing import medians  # noqa: E402

WORDS = "budget deadline portland weekend invoice login fixture timeout mail server quokka café".split()


def _text(i: int, n: int) -> str:
    return " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(n))


def session_lines(s: int, turns: int) -> list[dict]:
    sid = f"{s:08x}-0000-4000-8000-000000000000"
    out, parent, n = [], None, 0

    def u():
        nonlocal n
        n += 1
        return f"{s:08x}-{n:04x}-4000-8000-{n:012x}"

    base = {
        "isSidechain": False,
        "userType": "external",
        "sessionId": sid,
        "cwd": "/home/ana/api",
        "gitBranch": "main",
        "version": "2.1.51",
    }
    for t in range(turns):
        ts = f"2026-03-04T{(t // 60) % 24:02d}:{t % 60:02d}:00.000Z"
        uid = u()
        out.append(
            {
                "type": "user",
                "uuid": uid,
                "parentUuid": parent,
                "timestamp": ts,
                **base,
                "message": {"role": "user", "content": _text(t, 30)},
            }
        )
        if t == turns // 2:  # the edited-away version of this prompt: a side branch
            out.append(
                {
                    "type": "user",
                    "uuid": u(),
                    "parentUuid": parent,
                    "timestamp": ts,
                    **base,
                    "message": {"role": "user", "content": "old " + _text(t, 10)},
                }
            )
        parent = uid
        mid = f"msg_{s}_{t}"
        for block in (
            {"type": "thinking", "thinking": _text(t + 1, 40), "signature": "Eq0B" * 20},
            {"type": "text", "text": _text(t + 2, 80)},
            {
                "type": "tool_use",
                "id": f"toolu_{s}_{t}",
                "name": "Bash",
                "input": {"command": "pytest -q", "description": _text(t, 5)},
            },
        ):
            aid = u()
            out.append(
                {
                    "type": "assistant",
                    "uuid": aid,
                    "parentUuid": parent,
                    "timestamp": ts,
                    **base,
                    "requestId": f"req_{s}_{t}",
                    "message": {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet-4-5-20250929",
                        "content": [block],
                        "usage": {"input_tokens": 900},
                    },
                }
            )
            parent = aid
        rid = u()
        out.append(
            {
                "type": "user",
                "uuid": rid,
                "parentUuid": parent,
                "timestamp": ts,
                **base,
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"toolu_{s}_{t}", "content": _text(t + 3, 200)}],
                },
                "toolUseResult": {"stdout": _text(t + 3, 200), "stderr": ""},
            }
        )
        parent = rid
    out.append({"type": "ai-title", "aiTitle": _text(s, 4), "sessionId": sid})
    return out


def generate(root: Path, sessions: int, turns: int) -> list[Path]:
    paths = []
    for s in range(sessions):
        proj = root / "projects" / f"-home-ana-p{s % 10}"
        proj.mkdir(parents=True, exist_ok=True)
        p = proj / f"{s:08x}-0000-4000-8000-000000000000.jsonl"
        p.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in session_lines(s, turns)))
        os.utime(p, (1772700000, 1772700000))  # not "racy" (just written): the listing cache may keep it
        paths.append(p)
    return paths


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--turns", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    from samctl.stores.claude_code.decode import decode_session
    from samctl.stores.claude_code.store import ClaudeCodeStore

    with tempfile.TemporaryDirectory() as tmp:
        paths = generate(Path(tmp), a.sessions, a.turns)
        total = sum(os.path.getsize(p) for p in paths)

        def plain():
            for p in paths:
                for line in p.read_bytes().splitlines():
                    orjson.loads(line)

        def decode():
            for p in paths:
                decode_session(p.read_bytes(), str(p), p.stem)

        def listing():
            ClaudeCodeStore(Path(tmp) / "projects", Path(tmp), cache=False).list_metas([])

        def warm():  # the listing cache (in a temporary folder), warmed by medians' first call
            ClaudeCodeStore(Path(tmp) / "projects", Path(tmp), cache=True).list_metas([])

        mb = total / 1e6
        base = medians(plain, a.repeat)
        print(f"claude-code: {len(paths)} sessions, {mb:.1f} MB, median of {a.repeat}")
        print(f"  orjson lines     {mb / base[0]:8.1f} MB/s")
        os.environ["SAMCTL_CACHE_DIR"] = str(Path(tmp) / "cache")
        for name, fn in (("decode_session", decode), ("list_metas (ls)", listing), ("ls, warm cache", warm)):
            w, c = medians(fn, a.repeat)
            print(f"  {name:16} {mb / w:8.1f} MB/s   x{w / base[0]:.2f} wall  x{c / base[1]:.2f} cpu of orjson")


if __name__ == "__main__":
    main()
