"""Helpers shared by the search and index tests (not a test module)."""

from __future__ import annotations

import os
import sqlite3
import struct
import time
from pathlib import Path

SAM_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"
Q3_ID = "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"
API_ID = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"
TOPIC = "5E0C7E55-1B7A-4C0B-9C3E-2F3A7D8B9C01"
MEM1 = "296E5007-66D6-4DA2-B9F5-7BC7B9542F8E"
MEM2 = "AB2B1E7D-4173-496C-8D08-F7CA82E37410"
TOPIC_MEM = "6D7E8F90-A1B2-4C3D-9E4F-5A6B7C8D9E0F"
PROBE = "0E3E3E3E-0000-4000-8000-000000000003"
MEM1_TEXT = "User wants a weekend trip to Portland within a $500 budget."
MEM2_TEXT = "Weather: Saturday 24°C sunny, Sunday 19°C light rain in Portland."


def vec(n: int, **nz) -> bytes:
    v = [0.0] * n
    for k, x in nz.items():
        v[int(k[1:])] = x
    return struct.pack("<%dd" % n, *v)


def age(root: Path, seconds: float = 3600) -> None:
    """Set every mtime under root back, so that the index's racy-file rule does not re-read them."""
    t = time.time() - seconds
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            os.utime(os.path.join(dirpath, name), (t, t), follow_symlinks=False)


def insert_memory(
    db: Path,
    mid: str,
    scope: str,
    content: str,
    blob: bytes | None,
    importance: float = 0.5,
    created: str = "2026-08-10T14:05:00.000",
    ctype: str = "context_info",
) -> None:
    st = os.stat(db)
    con = sqlite3.connect(db)
    con.execute(
        'INSERT INTO "conversation_memories" VALUES (?,?,?,?,?,?,?,?,?,?)',
        (mid, scope, content, ctype, blob, importance, created, 0, created, None),
    )
    con.commit()
    con.close()
    os.chmod(db, st.st_mode & 0o777)


def add_probe(base: Path, content: str = "probe vector e3") -> Path:
    """The docs/formats/sam.md §7.7 test vector: a memory whose stored vector is the unit e3 (512-d),
    next to the page's two."""
    db = base / "conversations" / SAM_ID / "memory.db"
    insert_memory(db, PROBE, SAM_ID, content, vec(512, i3=1.0))
    return db


def cache_files(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*"))
