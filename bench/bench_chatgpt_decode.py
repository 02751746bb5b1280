"""ChatGPT export decoding: samctl's streamed read against orjson reading the whole file.

    python bench/bench_chatgpt_decode.py [--mib 100] [--repeat 3]

Generates a one-file export of about MIB MiB (40-node conversations, like make_chatgpt's but
longer), then times, as medians of REPEAT runs (wall and CPU):

  orjson   orjson.loads of the whole file (the baseline: what a naive reader does)
  scan     scan.iter_items alone: splitting the array into conversations' bytes
  list     ChatgptStore.list_metas (scan + parse + meta per conversation: `samctl ls`)
  decode   scan + decode.from_bytes of every conversation (`samctl check`)

and prints MB/s and the ratio to orjson, and the peak anonymous memory of each (the point of
streaming: orjson's peak grows with the file, the scan's with the largest conversation).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson  # noqa: E402

from bench.timing import PeakAnonymousMemory, medians  # noqa: E402
from samctl.stores.chatgpt import decode, scan  # noqa: E402
from samctl.stores.chatgpt.store import ChatgptStore  # noqa: E402


def generate(path: Path, mib: int, seed: int = 0) -> int:
    rnd = random.Random(seed)
    target, n = mib << 20, 0
    with open(path, "wb") as out:
        out.write(b"[")
        while out.tell() < target:
            cid = str(uuid.UUID(int=rnd.getrandbits(128)))
            mapping = {"root": {"id": "root", "message": None, "parent": None, "children": ["m0"]}}
            prev = "root"
            for i in range(40):
                nid = f"m{i}"
                mapping[nid] = {
                    "id": nid,
                    "parent": prev,
                    "children": [f"m{i + 1}"] if i < 39 else [],
                    "message": {
                        "id": nid,
                        "author": {"role": "user" if i % 2 == 0 else "assistant", "name": None, "metadata": {}},
                        "create_time": 1735725600.0 + n * 100 + i,
                        "update_time": None,
                        "content": {"content_type": "text", "parts": [f"word {rnd.random()} " * rnd.randint(5, 60)]},
                        "status": "finished_successfully",
                        "end_turn": True,
                        "weight": 1.0,
                        "metadata": {"model_slug": "gpt-4o"},
                        "recipient": "all",
                        "channel": None,
                    },
                }
                prev = nid
            conv = {
                "id": cid,
                "conversation_id": cid,
                "title": f"conversation {n}",
                "create_time": 1735725600.0 + n,
                "update_time": 1735725700.0 + n,
                "mapping": mapping,
                "current_node": prev,
            }
            out.write((b"," if n else b"") + json.dumps(conv, separators=(",", ":")).encode())
            n += 1
        out.write(b"]")
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "export"
        folder.mkdir()
        path = folder / "conversations.json"
        n = generate(path, a.mib)
        size = path.stat().st_size
        store = ChatgptStore(folder, folder)

        def whole():
            orjson.loads(path.read_bytes())

        def scan_only():
            with open(path, "rb", buffering=0) as f:
                for _ in scan.iter_items(f.read, 64 << 20):
                    pass

        def listing():
            store.list_metas([])

        def decode_all():
            with open(path, "rb", buffering=0) as f:
                for it in scan.iter_items(f.read, 64 << 20):
                    decode.from_bytes(it.data, "x", [])

        print(f"{n} conversations, {size / 1e6:.1f} MB in one conversations.json")
        base = None
        for name, fn in (("orjson", whole), ("scan", scan_only), ("list", listing), ("decode", decode_all)):
            with PeakAnonymousMemory() as peak:
                fn()
            wall, cpu = medians(fn, a.repeat, warm=False)
            base = base or (wall, cpu)
            print(
                f"{name:7} {size / 1e6 / wall:7.1f} MB/s wall  {size / 1e6 / cpu:7.1f} MB/s cpu  "
                f"x{wall / base[0]:5.2f} wall  x{cpu / base[1]:5.2f} cpu  peak {peak.mib or 0:.0f} MiB"
            )


if __name__ == "__main__":
    main()
