#!/usr/bin/env python3
"""Fuzz targets for samctl's readers, for hypothesis (tests/adversarial/test_fuzz.py) and for
coverage-guided fuzzing with atheris (libFuzzer) when it is installed.

Each target takes bytes, puts them where one file of a healthy demo store should be,
and runs what samctl does with that file: list, load, check (and for logs the fold, for
SAM text the salvage and repair recover uses, for memory.db rows the row checks).
Whatever the bytes, nothing may raise: every problem must come back as a finding.

    python -m tests.adversarial.fuzz TARGET [libFuzzer options] [corpus folders]
    python -m tests.adversarial.fuzz mermaid-log -max_total_time=60 /tmp/new tests/adversarial/corpus/mermaid-log
    SAMCTL_FUZZ_TARGET=mermaid-log tests/adversarial/fuzz.py -merge=1 /tmp/min tests/adversarial/corpus/mermaid-log /tmp/new

Targets: mermaid-snapshot, mermaid-meta, mermaid-log, sam-conversation, memorydb-rows.
The checked-in corpus (``corpus/<target>/``) holds small seeds: the demo files, and
inputs that reached new code when fuzzing; a short run in CI starts from it.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CORPUS = HERE / "corpus"
TARGET_NAMES = ("mermaid-snapshot", "mermaid-meta", "mermaid-log", "sam-conversation", "memorydb-rows")

_state: dict = {}


def _scratch() -> Path:
    if "dir" not in _state:
        _state["dir"] = Path(tempfile.mkdtemp(prefix="samctl-fuzz-"))
        os.environ.setdefault("SAMCTL_CACHE_DIR", str(_state["dir"] / "cache"))
    return _state["dir"]


def _mermaid_store():
    if "mermaid" not in _state:
        sys.path.insert(0, str(REPO))
        from samctl.stores.base import Caps
        from samctl.stores.mermaid.store import MermaidStore
        from tests.conftest import make_fixtures as mf

        project = _scratch() / "proj"
        mf.build_demo_mermaid(project)
        conv = project / ".mermaid" / "conversations"
        _state["mermaid"] = MermaidStore(conv, conv.parent, Caps.uniform(1 << 20), cache=False)
    return _state["mermaid"]


def _sam_store():
    if "sam" not in _state:
        sys.path.insert(0, str(REPO))
        from samctl.stores.base import Caps
        from samctl.stores.sam.store import SamStore
        from tests.conftest import make_fixtures as mf

        base = _scratch() / "SAM"
        mf.build_demo_sam(base)
        _state["sam"] = SamStore(base / "conversations", base, Caps.uniform(1 << 20), cache=False)
    return _state["sam"]


MID = "20260810_140307_512"
SID = "8B58CBC4-ACA7-4811-AE66-C01921690310"


def _write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _mermaid_round(store, cid: str) -> None:
    from samctl.core.load import load_resolved

    findings: list = []
    store.list_metas(findings)
    load_resolved(store, cid, findings)
    store.check(findings, fix=False)
    for f in findings:
        f.line()


def mermaid_snapshot(data: bytes) -> None:
    store = _mermaid_store()
    _write(store.conv_dir / f"{MID}.json", data)
    _mermaid_round(store, MID)


def mermaid_meta(data: bytes) -> None:
    store = _mermaid_store()
    _write(store.conv_dir / f"{MID}.meta", data)
    _mermaid_round(store, MID)


def mermaid_log(data: bytes) -> None:
    from samctl.stores import logtail as tail
    from samctl.stores.mermaid import eventlog

    read = eventlog.parse_log(data)
    if read.usable:
        eventlog.fold(read.events)
    tail.plan(Path("x.jsonl"), read)
    store = _mermaid_store()
    snap = store.conv_dir / f"{MID}.json"
    keep = snap.read_bytes() if "snap" not in _state else _state["snap"]
    _state["snap"] = keep
    _write(store.conv_dir / f"{MID}.jsonl", data)
    _mermaid_round(store, MID)
    # the fold-only path: no snapshot, only this log
    snap.unlink()
    try:
        _mermaid_round(store, MID)
    finally:
        _write(snap, keep)


def sam_conversation(data: bytes) -> None:
    from samctl.core.load import load_resolved
    from samctl.stores.sam import package, repair, schema

    store = _sam_store()
    _write(store.conv_dir / SID / "conversation.json", data)
    findings: list = []
    store.list_metas(findings)
    conv = load_resolved(store, SID, findings)
    store.check(findings, fix=False)
    text = data.decode("utf-8", "replace")
    top = repair.salvage_top_level(text)
    msgs = repair.salvage_messages(text)
    doc = dict(top, messages=msgs)
    try:
        fixed, _ = repair.repair_conversation(doc, fallback_id=SID, fallback_title="t", fallback_epoch=0.0)
    except ValueError:
        fixed = None  # "nothing to salvage" is repair's documented refusal
    if fixed is not None:
        assert schema.would_load(fixed), schema.validate_conversation(fixed)[:3]
    if conv is not None and isinstance(conv.raw, dict):
        strict = package.strict_conversation(conv.raw)
        schema.validate_conversation(strict)


_COLUMNS = (
    "id",
    "conversation_id",
    "content",
    "content_type",
    "embedding",
    "importance",
    "created_at",
    "access_count",
    "last_accessed",
    "tags",
)


def _values(data: bytes, n: int) -> list:
    """``n`` SQLite values carved from ``data``: each a type byte, then a length byte and payload."""
    out, i = [], 0
    for _ in range(n):
        sel = data[i] % 6 if i < len(data) else 0
        i += 1
        size = data[i] if i < len(data) else 0
        i += 1
        chunk = data[i : i + size]
        i += size
        if sel == 0:
            out.append(None)
        elif sel == 1:
            out.append(int.from_bytes(chunk[:8].ljust(8, b"\0"), "little", signed=True))
        elif sel == 2:
            out.append(struct.unpack("<d", chunk[:8].ljust(8, b"\0"))[0])
        elif sel == 3:
            out.append(("text", bytes(chunk)))
        elif sel == 4:
            out.append(bytes(chunk))
        else:
            out.append(chunk.decode("utf-8", "replace"))
    return out


def memorydb_rows(data: bytes) -> None:
    from samctl.stores.sam import memorydb
    from tests.conftest import make_fixtures as mf

    path = _scratch() / "memory.db"
    for suffix in ("", "-journal"):
        try:
            os.unlink(str(path) + suffix)
        except FileNotFoundError:
            pass
    db = sqlite3.connect(path)
    for stmt in mf.MEMORY_SCHEMA:
        db.execute(stmt)
    db.execute(
        'CREATE TABLE "archived_chunks" ("id" TEXT PRIMARY KEY NOT NULL, "conversation_id" TEXT NOT NULL, '
        '"messages_json" TEXT NOT NULL)'
    )
    half = len(data) // 2
    for chunk in (data[:half], data[half:]):
        vals = _values(chunk, 13)
        row, arch = vals[:10], vals[10:]
        params, marks = [], []
        for col, v in zip(_COLUMNS, row):
            if isinstance(v, tuple):
                params.append(v[1])
                marks.append("CAST(? AS TEXT)")
            else:
                params.append("" if v is None and col not in ("embedding", "tags") else v)
                marks.append("?")
        db.execute(f'INSERT OR IGNORE INTO "conversation_memories" VALUES ({",".join(marks)})', params)
        a = [x[1].decode("utf-8", "replace") if isinstance(x, tuple) else ("" if x is None else x) for x in arch]
        db.execute('INSERT OR IGNORE INTO "archived_chunks" VALUES (?,?,?)', a)
    db.commit()
    db.close()
    findings: list = []
    memorydb.read_memories(path, findings, scope_id=SID)
    memorydb.read_archives(path, findings)
    for f in findings:
        f.line()


TARGETS = {
    "mermaid-snapshot": mermaid_snapshot,
    "mermaid-meta": mermaid_meta,
    "mermaid-log": mermaid_log,
    "sam-conversation": sam_conversation,
    "memorydb-rows": memorydb_rows,
}


def corpus(name: str) -> list[bytes]:
    folder = CORPUS / name
    return [p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()] if folder.is_dir() else []


def main(argv: list[str]) -> None:
    import atheris

    # The target comes from SAMCTL_FUZZ_TARGET or the first argument; libFuzzer's -merge re-runs
    # this file with its own arguments, so the variable is set for it to find the target again.
    name = os.environ.get("SAMCTL_FUZZ_TARGET")
    if name is None and len(argv) >= 2 and argv[1] in TARGETS:
        name = argv.pop(1)
    if name not in TARGETS:
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    os.environ["SAMCTL_FUZZ_TARGET"] = name
    sys.path.insert(0, str(REPO))
    with atheris.instrument_imports(include=["samctl"]):
        import samctl.core.load  # noqa: F401
        import samctl.fs.faults  # noqa: F401
        import samctl.fs.filemodes  # noqa: F401
        import samctl.fs.reading  # noqa: F401
        import samctl.fs.removing  # noqa: F401
        import samctl.fs.safepaths  # noqa: F401
        import samctl.fs.syncing  # noqa: F401
        import samctl.fs.userdirs  # noqa: F401
        import samctl.fs.writing  # noqa: F401
        import samctl.stores.logtail  # noqa: F401
        import samctl.stores.mermaid.checks  # noqa: F401
        import samctl.stores.mermaid.decode  # noqa: F401
        import samctl.stores.mermaid.eventlog  # noqa: F401
        import samctl.stores.mermaid.store  # noqa: F401
        import samctl.stores.sam.checks  # noqa: F401
        import samctl.stores.sam.decode  # noqa: F401
        import samctl.stores.sam.memorydb  # noqa: F401
        import samctl.stores.sam.package  # noqa: F401
        import samctl.stores.sam.repair  # noqa: F401
        import samctl.stores.sam.schema  # noqa: F401
        import samctl.stores.sam.store  # noqa: F401
    target = TARGETS[name]
    atheris.Setup(argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
