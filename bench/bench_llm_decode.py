"""llm logs.db decoding: samctl's reader against a plain sqlite3 read of the same rows.

    python bench/bench_llm_decode.py [--conversations 2000] [--repeat 3]

Generates a logs.db of CONVERSATIONS legacy conversations (4 responses each, a tool call in every
other one) and as many 0.32 threads (6 messages each), then times, as medians (wall and CPU):

  sqlite   SELECT * of responses, messages and parts (the baseline: reading every row once)
  list     LlmStore.list_metas (`samctl ls`)
  load     LlmStore.load of every conversation (`samctl check`, `export --all`)

and prints MB/s of the database file and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.timing import medians  # noqa: E402
from samctl.stores.llm.store import LlmStore  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import make_llm  # noqa: E402

_CROCK = "0123456789abcdefghjkmnpqrstvwxyz"


def ulid(n: int) -> str:
    out = []
    for _ in range(26):
        out.append(_CROCK[n % 32])
        n //= 32
    return "01" + "".join(reversed(out))[2:]


def generate(folder: Path, n: int) -> Path:
    db_path = folder / "logs.db"
    db = sqlite3.connect(db_path)
    db.executescript(make_llm.SCHEMA)
    text = "lorem ipsum dolor sit amet " * 20
    for i in range(n):
        cid = ulid(10**9 + i * 1000)
        db.execute("INSERT INTO conversations VALUES (?, ?, ?)", (cid, f"conversation {i}", "gpt-4o"))
        for j in range(4):
            rid = ulid(10**9 + i * 1000 + j + 1)
            db.execute(
                "INSERT INTO responses (id, model, prompt, response, conversation_id, datetime_utc) VALUES "
                "(?, ?, ?, ?, ?, ?)",
                (rid, "gpt-4o", text, text, cid, f"2026-01-01T10:{j:02d}:00+00:00"),
            )
            if j % 2:
                db.execute(
                    "INSERT INTO tool_calls (response_id, name, arguments, tool_call_id) VALUES (?, ?, ?, ?)",
                    (rid, "weather", json.dumps({"city": "Lyon"}), f"call_{i}_{j}"),
                )
        tid = ulid(2 * 10**9 + i * 1000)
        parent = None
        for k in range(6):
            h = f"b2:{i:016x}{k:016x}"
            db.execute(
                "INSERT INTO messages VALUES (?, ?, ?, NULL)", (h, parent, "user" if k % 2 == 0 else "assistant")
            )
            db.execute("INSERT INTO parts (message_hash, position, type, text) VALUES (?, 0, 'text', ?)", (h, text))
            parent = h
        db.execute(
            "INSERT INTO threads VALUES (?, ?, ?, NULL, ?)", (tid, f"thread {i}", parent, "2026-02-01 10:00:00+00:00")
        )
    db.commit()
    db.close()
    return db_path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db_path = generate(Path(tmp), a.conversations)
        size = db_path.stat().st_size
        store = LlmStore(Path(tmp), Path(tmp))
        ids = [m.id for m in store.list_metas([])]

        def plain():
            c = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
            for t in ("responses", "messages", "parts"):
                c.execute(f"SELECT * FROM {t}").fetchall()
            c.close()

        def listing():
            store.list_metas([])

        def load_all():
            for cid in ids:
                store.load(cid, [])

        print(f"{len(ids)} conversations, {size / 1e6:.1f} MB logs.db")
        base = None
        for name, fn in (("sqlite", plain), ("list", listing), ("load", load_all)):
            wall, cpu = medians(fn, a.repeat)
            base = base or (wall, cpu)
            print(
                f"{name:7} {size / 1e6 / wall:8.1f} MB/s wall  {size / 1e6 / cpu:8.1f} MB/s cpu  "
                f"x{wall / base[0]:7.2f} wall  x{cpu / base[1]:7.2f} cpu"
            )


if __name__ == "__main__":
    main()
