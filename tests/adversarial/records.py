"""Data-driven hostile values for every store: wrong types at every field of a record, and depth bombs.

A store takes part by registering a ``Target`` in ``TARGETS``: where its demo fixture is, and how to
list its records (``records(root)``: one ``Rec`` per JSON object a decoder reads, or per SQLite row).
Every generator then works on it unchanged:

- ``type_mutations``: every field (every path inside a JSON record, every column of a row) replaced by
  a value of every JSON type (SQLite type for rows), plus the values decoders get wrong most
  (a list where a string is used as a key, a number where a list is iterated, a JSON object text);
- ``depth_mutations``: every top-level field of a record replaced by a value nested ``DEEP`` levels
  (lists and objects), which orjson still parses (its limit is 1024) but no recursion may walk.

``exercise(root)`` opens the store as samctl does and runs what every command does with it: list, load
each conversation (``--all``), render it in every export format, its search rows, and ``check``.
Anything but a ``SamctlError`` escaping is a crash (returned, never swallowed silently), and so is an
``internal-error`` finding (a bug ``Store``'s containment turned into a finding).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "fixtures" / "demo"
DEEP = 1000
_DEEP_MARK = "@@deep@@"
_DEEP_OBJ_MARK = "@@deepobj@@"

# one value of every JSON type, and the shapes decoders mistake most
JSON_VALUES = (None, True, 5, -1.5, 2**70, "", "x", [], [1, "x"], {}, {"a": [1]}, ["nested", {"k": [5]}])
# one value of every SQLite storage class, and texts that parse as the wrong JSON
SQL_VALUES = (
    None,
    5,
    -1.5,
    "x",
    b"\x00\xffblob",
    "{}",
    '{"text_ref": 5}',
    '{"name": ["a"], "tool_call_id": [1]}',
    "[1, 2]",
    "5",
    "",
)


@dataclass
class Rec:
    """One record: ``label`` names it in messages; ``fields()`` its field paths; ``put(path, value)``
    writes the record back with one field replaced."""

    label: str
    fields: Callable[[], list]
    put: Callable[[tuple, object], None]
    sql: bool = False


@dataclass
class Target:
    store: str
    fixture: str  # under fixtures/demo
    root: str  # the --root inside the copied fixture ("" for the copy itself)
    records: Callable[[Path], list]
    build_from: str = ""  # the label of the record the build bomb goes into (its prefix): one samctl parses
    archive: Callable[[Path], Path] | None = None  # the mutated store packed as the app packs it, if it does


# -------------------------------------------------------------------------------- JSON records
def _paths(obj, prefix=()) -> list[tuple]:
    """Every path inside ``obj`` (dict keys and list indexes), parents before children."""
    out, stack = [], [(obj, prefix)]
    while stack:
        x, p = stack.pop()
        items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
        for k, v in items:
            out.append(p + (k,))
            stack.append((v, p + (k,)))
    return out


def _replaced(obj, path: tuple, value):
    obj = json.loads(json.dumps(obj))
    if not path:
        return value
    cur = obj
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return obj


def _dumps(obj) -> bytes:
    text = json.dumps(obj, ensure_ascii=False)
    text = text.replace(json.dumps(_DEEP_MARK), "[" * DEEP + "]" * DEEP)
    text = text.replace(json.dumps(_DEEP_OBJ_MARK), '{"a":' * DEEP + "1" + "}" * DEEP)
    if BUILD_MARK in text:
        text = text.replace(json.dumps(BUILD_MARK), build_text(BUILD_BYTES))
    return text.encode()


def jsonl_records(path: Path) -> list[Rec]:
    """One record per line of a JSON Lines file."""
    lines = path.read_bytes().split(b"\n")
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue

        def put(p, value, i=i, obj=obj):
            new = list(lines)
            new[i] = _dumps(_replaced(obj, p, value))
            path.write_bytes(b"\n".join(new))

        out.append(Rec(f"{path.name}:{i + 1}", lambda obj=obj: _paths(obj), put))
    return out


def json_records(path: Path, at: tuple = ()) -> list[Rec]:
    """The JSON document in ``path`` (or the object at ``at`` in it) as one record."""
    doc = json.loads(path.read_bytes())
    obj = doc
    for k in at:
        obj = obj[k]

    def put(p, value):
        path.write_bytes(_dumps(_replaced(doc, at + p, value)))

    return [Rec(f"{path.name}{''.join(f'[{k}]' for k in at)}", lambda: _paths(obj), put)]


def sqlite_records(db: Path, per_table: int = 2) -> list[Rec]:
    """The first ``per_table`` rows of every table of a SQLite database, one record each."""
    conn = sqlite3.connect(db)
    out = []
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE "
                "'sqlite_%' AND sql NOT LIKE '%VIRTUAL%'"
            )
        ]
        for t in tables:
            cols = [r[1] for r in conn.execute(f'SELECT * FROM pragma_table_info("{t}")')]
            for (rowid,) in conn.execute(f'SELECT rowid FROM "{t}" LIMIT {per_table}').fetchall():

                def put(p, value, t=t, rowid=rowid):
                    c = sqlite3.connect(db)
                    try:
                        c.execute(f'UPDATE "{t}" SET "{p[0]}" = ? WHERE rowid = ?', (value, rowid))
                        c.commit()
                    except sqlite3.Error:  # a constraint refuses this value: not a case
                        raise Skip from None
                    finally:
                        c.close()

                out.append(Rec(f"{t}#{rowid}", lambda cols=cols: [(c,) for c in cols], put, sql=True))
    finally:
        conn.close()
    return out


class Skip(Exception):
    """The mutation could not be written (a constraint): not a case."""


# -------------------------------------------------------------------------------- the stores
def _files(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.rglob(pattern) if p.is_file() and not p.is_symlink())


def _claude_records(root: Path) -> list:
    return [r for p in _files(root / "projects", "*.jsonl") for r in jsonl_records(p)]


def _codex_records(root: Path) -> list:
    return [r for p in _files(root, "rollout-*.jsonl") for r in jsonl_records(p)]


def _chatgpt_records(root: Path) -> list:
    doc = json.loads((root / "conversations.json").read_bytes())
    return [r for i in range(len(doc)) for r in json_records(root / "conversations.json", (i,))]


def _sam_records(root: Path) -> list:
    return [r for p in _files(root / "conversations", "conversation.json") for r in json_records(p)]


def _mermaid_records(root: Path) -> list:
    conv = root / ".mermaid" / "conversations"
    return (
        [r for p in _files(conv, "*.json") for r in json_records(p)]
        + [r for p in _files(conv, "*.meta") for r in json_records(p)]
        + [r for p in _files(conv, "*.jsonl") for r in jsonl_records(p)]
    )


def _chatgpt_zip(root: Path) -> Path:
    """The export folder as the zip OpenAI sends (the same members, deflated)."""
    import zipfile

    z = root.parent / (root.name + ".zip")
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(root.iterdir()):
            if p.is_file() and not p.is_symlink():
                zf.write(p, p.name)
    return z


def _llm_records(root: Path) -> list:
    return sqlite_records(root / "logs.db")


TARGETS = {
    t.store: t
    for t in (
        Target("sam", "SAM", "", _sam_records),
        Target("mermaid", "mermaid-project", "", _mermaid_records),
        Target("claude-code", "claude_code", "", _claude_records, "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d.jsonl"),
        Target("codex", "codex", "", _codex_records),
        Target("chatgpt", "chatgpt/export", "", _chatgpt_records, archive=_chatgpt_zip),
        Target("llm", "llm", "", _llm_records, "tool_calls#"),
    )
}


def copy_fixture(target: Target, dest: Path) -> Path:
    """A fresh copy of the target's demo fixture at ``dest``; returns the store's root in it."""
    src = DEMO / target.fixture
    shutil.copytree(src, dest, symlinks=True)
    return dest / target.root if target.root else dest


# -------------------------------------------------------------------------------- generators
def type_mutations(rec: Rec):
    """(label, path, value) for every field of ``rec`` and every value of every type."""
    values = SQL_VALUES if rec.sql else JSON_VALUES
    for p in rec.fields():
        for v in values:
            yield f"{rec.label} {'/'.join(map(str, p))} = {v!r}"[:160], p, v


def depth_mutations(rec: Rec):
    """(label, path, value) for every top-level field of ``rec``: nested ``DEEP`` levels."""
    if rec.sql:
        for p in rec.fields():
            yield f"{rec.label} {p[0]} = deep JSON text", p, "[" * DEEP + "]" * DEEP
            yield f"{rec.label} {p[0]} = deep JSON object", p, '{"a":' * DEEP + "1" + "}" * DEEP
        return
    for p in rec.fields():
        if len(p) <= 3:
            yield f"{rec.label} {'/'.join(map(str, p))} = deep list", p, _DEEP_MARK
            yield f"{rec.label} {'/'.join(map(str, p))} = deep object", p, _DEEP_OBJ_MARK


# -------------------------------------------------------------------------------- running
def exercise(root: Path) -> str | None:
    """Run what samctl's reading commands do on the store at ``root``; the traceback of a crash, or None."""
    from samctl.core.export import render_one
    from samctl.errors import SamctlError
    from samctl.stores import open_store
    from samctl.stores.base import Caps

    try:
        store = open_store(str(root), Caps.uniform(1 << 20), cache=False)
        findings: list = []
        metas = store.list_metas(findings)
        for m in metas:
            try:
                conv = store.load_listed(m.id, findings)
            except SamctlError:
                continue
            if conv is None:
                continue
            for fmt in ("markdown", "html", "json", "jsonl"):
                render_one(fmt, store, conv, True, findings, "2026-01-01T00:00:00Z")
            from samctl.render.text import to_text

            to_text(conv, reasoning=True, include_hidden=True)
            from samctl.core.load import raw_bytes  # (show --raw)

            raw_bytes(store, m.id, findings)
        infos: list = []
        for src in store.search_sources(findings).values():
            for _ in store.source_rows(src, findings, infos):
                pass
        store.check(findings, fix=False)
        for f in findings:
            f.line()
        bugs = [f.reason for f in findings if f.code == "internal-error"]  # (a bug the store contained)
        if bugs:
            return "contained: " + bugs[0]
    except SamctlError:
        return None
    except Exception as exc:  # noqa: BLE001 - a crash is what this looks for
        return "".join(traceback.format_exception(exc))[-3000:]
    return None


# -------------------------------------------------------------------------------- what parsing builds
BUILD_MARK = "@@build@@"
BUILD_BYTES = 48 << 20  # under every store's default cap (64 MiB snapshots, 128 MiB logs)


def build_text(nbytes: int) -> str:
    """A JSON list of empty objects ``nbytes`` long: 3 bytes of text each, 50-70 bytes once parsed."""
    return "[" + "{}," * (nbytes // 3) + "{}]"


def put_build_bomb(target: Target, root: Path) -> str:
    """Replace a top-level field of the target's ``build_from`` record by ``build_text(BUILD_BYTES)``;
    returns the record's label.  (For a row: every column, as JSON text.)"""
    rec = next(r for r in target.records(root) if r.label.startswith(target.build_from))
    if rec.sql:
        for p in rec.fields():
            try:
                rec.put(p, build_text(BUILD_BYTES))
            except Skip:
                pass
        return rec.label
    rec.put(next(p for p in rec.fields() if len(p) == 1), BUILD_MARK)
    return rec.label


def peak_rss_mb(args: list, limit_mb: int = 1500, cwd: Path = REPO) -> tuple[int, float, bytes]:
    """(exit code, peak RSS in MB, stderr) of ``samctl args`` in a child limited to ``limit_mb`` of address
    space.  The child reports its own ``VmHWM`` (reset by exec, unlike ``ru_maxrss``, which keeps the
    forking parent's); inf when it could not (killed, out of address space first)."""
    import os
    import subprocess
    import sys

    code = (
        f"import atexit, resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({limit_mb} << 20, {limit_mb} << 20)); "
        "atexit.register(lambda: sys.stderr.write([l for l in open('/proc/self/status') "
        "if l.startswith('VmHWM')][0])); "
        "from samctl.cli import main; sys.argv = ['samctl'] + sys.argv[1:]; main()"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, "--no-cache", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
        cwd=str(cwd),
        timeout=300,
    )
    if b"VmHWM:" not in p.stderr:
        return p.returncode, float("inf"), p.stderr
    return p.returncode, int(p.stderr.rsplit(b"VmHWM:", 1)[1].split()[0]) / 1024, p.stderr
