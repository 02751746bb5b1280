"""Codex CLI decoding throughput against a plain orjson read of the same files.

    python bench/bench_codex_decode.py [--sessions 200] [--turns 60] [--repeat 5] [--zst]

Generates a Codex home in a temporary folder (current-format rollouts: session_meta, turn_context, user
text in both streams, reasoning, function calls and outputs, agent messages, token counts; with ``--zst``
every rollout compressed to ``.jsonl.zst`` as newer Codex does), then prints the median MB/s (of the
uncompressed bytes) of: (a) reading every file, decompressing, and ``orjson.loads`` of every line, the floor;
(b) samctl's ``decode_rollout`` of every file after the same read; (c) ``ls``'s path,
``CodexStore.list_metas``, cold and with a warm listing cache.  Ratios are (b)/(a) and (c)/(a), of wall and CPU time (see timing.py).
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


def rollout(s: int, turns: int) -> tuple[str, list[dict]]:
    tid = f"019c{s:04x}-0000-7000-8000-000000000000"
    day = f"2026-02-{1 + s % 28:02d}"

    def r(t, kind, payload):
        return {"timestamp": f"{day}T{(t // 60) % 24:02d}:{t % 60:02d}:00.000Z", "type": kind, "payload": payload}

    out = [
        r(
            0,
            "session_meta",
            {
                "id": tid,
                "timestamp": f"{day}T00:00:00.000Z",
                "cwd": "/home/ana/api",
                "originator": "codex_cli_rs",
                "cli_version": "0.98.0",
                "source": "cli",
                "git": {"branch": "main"},
            },
        )
    ]
    for t in range(turns):
        text = _text(t, 30)
        out += [
            r(t, "turn_context", {"cwd": "/home/ana/api", "model": "gpt-5.1-codex", "effort": "medium"}),
            r(
                t,
                "response_item",
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
            ),
            r(t, "event_msg", {"type": "user_message", "message": text, "images": []}),
            r(
                t,
                "response_item",
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": _text(t + 1, 20)}],
                    "encrypted_content": "gAAAAB" * 200,
                },
            ),
            r(t, "event_msg", {"type": "agent_reasoning", "text": _text(t + 1, 20)}),
            r(
                t,
                "response_item",
                {
                    "type": "function_call",
                    "name": "shell",
                    "call_id": f"call_{t}",
                    "arguments": orjson.dumps({"command": ["pytest", "-q"]}).decode(),
                },
            ),
            r(
                t,
                "response_item",
                {"type": "function_call_output", "call_id": f"call_{t}", "output": _text(t + 3, 200)},
            ),
            r(
                t,
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": _text(t + 2, 80)}],
                },
            ),
            r(t, "event_msg", {"type": "agent_message", "message": _text(t + 2, 80)}),
            r(t, "event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 900 * t}}}),
        ]
    return f"sessions/2026/02/{1 + s % 28:02d}/rollout-{day}T00-00-00-{tid}.jsonl", out


def generate(root: Path, sessions: int, turns: int, zst: bool) -> tuple[list[Path], int]:
    import zstandard

    paths, raw = [], 0
    for s in range(sessions):
        name, lines = rollout(s, turns)
        data = b"".join(orjson.dumps(d) + b"\n" for d in lines)
        raw += len(data)
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if zst:
            p = p.with_name(p.name + ".zst")
            data = zstandard.ZstdCompressor(level=3).compress(data)
        p.write_bytes(data)
        os.utime(p, (1772700000, 1772700000))  # not "racy" (just written): the listing cache may keep it
        paths.append(p)
    (root / "session_index.jsonl").write_bytes(b"")
    return paths, raw


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--turns", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--zst", action="store_true")
    a = ap.parse_args(argv)
    from samctl.stores.codex.decode import decode_rollout
    from samctl.stores.codex.store import CodexStore, decompress

    def read(p: Path) -> bytes:
        data = p.read_bytes()
        return decompress(data, 1 << 30, str(p)) if p.name.endswith(".zst") else data

    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as cache_dir:
        paths, raw = generate(Path(tmp), a.sessions, a.turns, a.zst)
        disk = sum(os.path.getsize(p) for p in paths)

        def plain():
            for p in paths:
                for line in read(p).splitlines():
                    orjson.loads(line)

        def decode():
            for p in paths:
                decode_rollout(read(p), str(p), p.name[-42:-6])

        def listing():
            CodexStore(Path(tmp), Path(tmp), cache=False).list_metas([])

        def warm():  # the listing cache (in a temporary folder), warmed by medians' first call
            CodexStore(Path(tmp), Path(tmp), cache=True).list_metas([])

        mb = raw / 1e6
        base = medians(plain, a.repeat)
        print(
            f"codex: {len(paths)} rollouts, {mb:.1f} MB ({disk / 1e6:.1f} MB on disk{', zstd' if a.zst else ''}),"
            f" median of {a.repeat}"
        )
        print(f"  orjson lines     {mb / base[0]:8.1f} MB/s")
        os.environ["SAMCTL_CACHE_DIR"] = cache_dir  # (outside the store: one inside is not used)
        for name, fn in (("decode_rollout", decode), ("list_metas (ls)", listing), ("ls, warm cache", warm)):
            w, c = medians(fn, a.repeat)
            print(f"  {name:16} {mb / w:8.1f} MB/s   x{w / base[0]:.2f} wall  x{c / base[1]:.2f} cpu of orjson")


if __name__ == "__main__":
    main()
