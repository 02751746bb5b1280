"""export: conversations as Markdown, HTML, JSON, JSONL or SAM import packages.

Streaming: the selection is a list of ids (from the listing, which holds only
metas); conversations are loaded and rendered a few at a time (in worker
processes when one store has many), written in order and dropped, so memory
stays flat however large the archive.  Outputs that hold several
conversations in one stream (a JSON array, JSONL, a SAM bulk package) are
written piece by piece; the bulk package, whose header counts the
conversations, is spooled to an anonymous temp file first.

Rules:
- Read-only for the store: nothing is written inside the store's folder (an
  ``-o`` pointing there is refused) and the store is only read.
- Hiding follows the app's UI (``Message.hidden``) unless ``include_hidden``;
  SAM packages always carry every message SAM keeps (they are SAM's own backup
  format; a package that dropped stored messages would lose data on import).
- A conversation that cannot be read, or whose package SAM would refuse, is a
  finding and is skipped; the rest are exported.
- Files are written atomically (``fs.writing``), 0600, in folders created 0700.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from samctl.core.listing import ListQuery, list_across, list_conversations
from samctl.core.load import load_resolved
from samctl.core.places import store_folder_holding
from samctl.errors import SamctlError, UsageError
from samctl.fs import removing, safepaths, writing
from samctl.model import INFO, Finding
from samctl.render import text as render
from samctl.stores import exporter, workers
from samctl.stores.resolve import resolve_many, resolve_many_across
from samctl.timeparse import format_utc

FORMATS = ("markdown", "html", "json", "jsonl", "sam-package")
EXTENSIONS = {"markdown": ".md", "html": ".html", "json": ".json", "jsonl": ".jsonl", "sam-package": ".sam.json"}
# Formats whose several conversations still make one stream (stdout or one file).
MULTI_STREAM = ("json", "jsonl", "sam-package")


@dataclass
class ExportResult:
    exported: int = 0
    skipped: int = 0
    files: list = field(default_factory=list)
    destination: str = "-"


@dataclass
class Plan:
    """Where the output goes: ``stdout``, one ``file``, or a ``folder`` of files."""

    kind: str
    path: Path | None = None


# -- selection --------------------------------------------------------------------------------


def select_ids(
    store, ids, all_: bool, since, until, findings: list, project: str | None = None, sizes: dict | None = None
) -> list[str]:
    """The ids to export: the given ones (resolved, in order) or every listed conversation (of ``project``).
    ``sizes``, if given, gets the listing's size of each listed one (``export`` sizes its units of work by them)."""
    if all_:
        metas = list_conversations(store, ListQuery(since=since, until=until, project=project), findings)
        if sizes is not None:
            sizes.update(((store, m.id), m.size) for m in metas)
        return [m.id for m in metas]

    return resolve_many(store, ids)


def select_across(
    stores: list, ids, all_: bool, since, until, findings: list, project: str | None = None, sizes: dict | None = None
) -> list[tuple]:
    """``select_ids`` over several stores: ``(store, id)`` pairs, the given ids resolved across them
    (``resolve_many_across``), or every listed conversation of all of them in one order (``ls``'s)."""
    if all_:
        owners: dict = {}
        metas = list_across(stores, ListQuery(since=since, until=until, project=project), findings, owners)
        pairs = [(owners[id(m)], m.id) for m in metas]
        if sizes is not None:
            sizes.update(zip(pairs, (m.size for m in metas)))
        return pairs
    return resolve_many_across(stores, ids)


# -- rendering one conversation ---------------------------------------------------------------


def shown(conv, include_hidden: bool) -> list:
    return list(render.visible(conv.messages, include_hidden))


def export_dict(conv, include_hidden: bool) -> dict:
    """samctl's JSON model of a conversation (docs/json.md), hidden messages filtered.  ``message_count`` is
    what ``ls`` counts (the messages shown by default), ``stored_messages`` every stored one."""
    msgs = shown(conv, include_hidden)
    d = conv.to_dict()
    d["messages"] = [m.to_dict() for m in msgs]
    d["message_count"] = len(shown(conv, False))
    d["stored_messages"] = len(conv.messages)
    d["exported_messages"] = len(msgs)
    return d


def jsonl_bytes(conv, include_hidden: bool) -> bytes:
    """One JSON line per message shown: its conversation, store and place, then the message (docs/json.md).
    The rows are made in one pass and dumped in one more (an export writes millions of them)."""
    cid, store = conv.meta.id, conv.meta.store
    rows = [
        m.to_dict({"conversation_id": cid, "store": store, "seq": i})
        for i, m in enumerate(render.visible(conv.messages, include_hidden))
    ]
    return _jsonl(rows)


def _jsonl(rows: list) -> bytes:
    """One JSON line per row."""
    dumps, option = orjson.dumps, orjson.OPT_NON_STR_KEYS
    try:
        lines = [dumps(r, option=option) for r in rows]
    except TypeError:  # (what _json_bytes falls back for: each row again, through it)
        lines = [_json_bytes(r, indent=False) for r in rows]
    lines.append(b"")
    return b"\n".join(lines)


def _json_bytes(obj, indent: bool = True) -> bytes:
    try:
        return orjson.dumps(obj, option=(orjson.OPT_INDENT_2 if indent else 0) | orjson.OPT_NON_STR_KEYS)
    except TypeError:  # an integer beyond 64 bits in a raw mermaid value
        return json.dumps(
            obj, ensure_ascii=False, indent=2 if indent else None, separators=None if indent else (",", ":")
        ).encode("utf-8", "surrogateescape")


def render_one(
    fmt: str, store, conv, include_hidden: bool, findings: list, exported_at: str, index_link: bool = False
) -> bytes | None:
    """One conversation as the bytes of one file of ``fmt``, or None if it was refused."""
    if fmt == "markdown":
        return render.to_markdown(conv, reasoning=True, include_hidden=include_hidden).encode(
            "utf-8", "surrogateescape"
        )
    if fmt == "html":
        from samctl.render import html  # (lazy: not loaded by ls or --help)

        msgs = shown(conv, include_hidden)
        page = html.conversation_page(conv, msgs, len(conv.messages) - len(msgs), index_link)
        return page.encode("utf-8", "surrogateescape")
    if fmt == "json":
        return _json_bytes(export_dict(conv, include_hidden)) + b"\n"
    if fmt == "jsonl":
        return jsonl_bytes(conv, include_hidden)
    if fmt == "sam-package":
        return exporter("sam-package").package_for(store, conv, findings, exported_at)
    raise UsageError(f"unknown export format {fmt!r}", hint=f"choose one of {', '.join(FORMATS)}")


# -- where the output goes ------------------------------------------------------------------------


def plan_output(output: str | None, fmt: str, many: bool, store) -> Plan:
    """Decide stdout / one file / a folder (see the command's help for the rules).  ``store`` may be
    a list of stores (the output may lie in none of them)."""
    if output in (None, "-"):
        if many and fmt not in MULTI_STREAM:
            raise UsageError(
                f"{fmt} of several conversations needs a folder",
                hint="add -o FOLDER (one file per conversation), or export one conversation",
            )
        return Plan("stdout")
    p = Path(output).expanduser()
    for one in store if isinstance(store, list) else [store]:
        _refuse_inside_store(p, one)
    if p.is_dir() or output.endswith(os.sep):
        return Plan("folder", p)
    if p.exists() and not p.is_file():
        raise UsageError(f"{output} is neither a folder nor a regular file", hint="give a folder or a file name")
    if not many:
        return Plan("file", p)
    if fmt in MULTI_STREAM and p.suffix in (".json", ".jsonl"):
        return Plan("file", p)
    if p.exists():
        raise UsageError(
            f"{output} is a file, but several conversations need a folder",
            hint="give a folder (it is created if missing)"
            + (", or a .json file name for one stream" if fmt in MULTI_STREAM else ""),
        )
    return Plan("folder", p)


def _refuse_inside_store(p: Path, store) -> None:
    """UsageError if ``p`` lies in the store, in samctl's own folders beside it (its attic, its lock
    folder) or in the app's folder that holds them all, directly or through a symlink."""
    what = store_folder_holding(store, p)
    if what is not None:
        raise UsageError(
            f"{p} is inside {what}; export never writes there", hint="pick a folder outside it, e.g. -o ~/exports"
        )


def _now_iso() -> str:
    """Now, as exports record it: ISO 8601 UTC, whole seconds."""
    stamp = format_utc(math.floor(time.time()))
    assert stamp is not None  # (now is always a time format_utc can write)
    return stamp


# -- the whole export -------------------------------------------------------------------------------


def export(
    store,
    ids: list[str],
    fmt: str,
    plan: Plan,
    findings: list,
    *,
    include_hidden: bool = False,
    stdout=None,
    progress: Callable[[int, int], None] | None = None,
    exported_at: str | None = None,
    as_many: bool = False,
    sizes: dict | None = None,
) -> ExportResult:
    """Export the conversations ``ids`` (already resolved) as ``fmt`` to ``plan``.

    ``ids`` are ids of ``store``, or ``(store, id)`` pairs (``select_across``: several stores).
    ``stdout`` is a binary stream (used when ``plan.kind == "stdout"``); ``progress``
    is called with (done, total) after each conversation.  ``sizes``: ``(store, id)`` -> bytes of its
    files, where known (``select_ids``), which bound the units of work handed to worker processes.
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r}", hint=f"choose one of {', '.join(FORMATS)}")
    exported_at = exported_at or _now_iso()
    res = ExportResult(destination=str(plan.path) if plan.path else "-")
    many = len(ids) > 1 or as_many

    pairs = [i if isinstance(i, tuple) else (store, i) for i in ids]

    def conversations():  # (store, conversation), one at a time
        for i, (owner, cid) in enumerate(pairs):
            conv = load_resolved(owner, cid, findings)
            if conv is None:
                res.skipped += 1
            else:
                yield owner, conv
            if progress:
                progress(i + 1, len(ids))

    def rendered(index_link: bool, to_folder: bool = False):  # Rendered, in order
        job = (fmt, include_hidden, exported_at, index_link, many, to_folder)
        done = 0
        known = sizes or {}
        for owner, run in _runs(pairs):
            items = [(cid, *job) for cid in run]
            weight = _weigher(owner, known)
            parts = workers.ordered_items(
                owner, _load_and_render, items, PARALLEL_EXPORT, EXPORT_PART, EXPORT_PART_BYTES, weight
            )
            for got, found in parts:
                findings.extend(found)
                done += 1
                if got is None:
                    res.skipped += 1
                else:
                    yield got
                if progress:
                    progress(done, len(ids))

    made: list = []  # folders -o named that did not exist: they go again if nothing is written
    try:
        path = plan.path
        if plan.kind == "folder":
            assert path is not None  # (a folder plan always names its folder)
            index = fmt == "html" and many
            _to_folder(rendered(index, to_folder=True), fmt, path, res, index, made)
            if not res.files:
                removing.remove_empty_dirs(made)
                findings.append(Finding("not-written", str(plan.path), f"nothing was written to {plan.path}", INFO))
            return res
        if plan.kind == "file":
            assert path is not None  # (a file plan always names its file)
            try:
                with writing.atomic_writer(writing.make_private_dir(path.parent, made) / path.name) as out:
                    _to_stream(rendered(False), conversations, fmt, out, findings, res, exported_at, many)
                    if res.exported == 0 and ids:  # every one skipped: an empty file would replace a good one
                        raise _NothingToWrite
            except _NothingToWrite:
                removing.remove_empty_dirs(made)
                findings.append(
                    Finding(
                        "not-written",
                        str(plan.path),
                        f"nothing was written to {plan.path}; what was there is left as it was",
                        INFO,
                    )
                )
                return res
            res.files.append(str(plan.path))
            return res
    except BrokenPipeError:
        raise
    except OSError as exc:
        where = (
            exc.filename if exc.filename and not os.path.basename(str(exc.filename)).startswith(".") else plan.path
        )  # name the file the user asked for, not our temp sibling
        raise SamctlError(
            f"cannot write {where}: {exc.strerror or exc}",
            hint="check that the folder can be written and the disk has room; "
            f"{res.exported} conversation(s) were written before this",
        ) from None
    _to_stream(rendered(False), conversations, fmt, stdout, findings, res, exported_at, many)
    stdout.flush()
    return res


class _NothingToWrite(Exception):
    """Every conversation of a one-file export was skipped: the temp goes, the old file stays."""


# A run of this many conversations of one store is loaded and rendered in worker processes (fewer:
# here, as starting the workers would cost more than it saves).  A unit of work is EXPORT_PART of
# them, or fewer once their files reach EXPORT_PART_BYTES: many small ones (SAM chats) share the cost
# of handing out a unit, and a worker never holds more than about that much of large ones.  A
# conversation of unknown size counts as an eighth of the bound: 8 to a unit.
PARALLEL_EXPORT = 64
EXPORT_PART = 64
EXPORT_PART_BYTES = 1 << 20


def _weigher(owner, sizes: dict):
    """The weight of a unit of work's item (``(id, ...)``): the bytes of the conversation's files."""
    unknown = EXPORT_PART_BYTES // 8
    return lambda item: sizes.get((owner, item[0])) or unknown


@dataclass
class Rendered:
    """One conversation loaded and rendered: ``data`` None if its format refused it; ``meta`` only for a
    folder (what names its file); ``shown``, the messages an index page counts."""

    meta: object
    data: bytes | None
    shown: int


def _runs(pairs: list):
    """``(store, [id, ...])`` for each run of consecutive pairs of one store, in order."""
    for _, group in itertools.groupby(pairs, key=lambda p: id(p[0])):
        run = list(group)
        yield run[0][0], [cid for _, cid in run]


def _load_and_render(store, item) -> tuple:
    """``(Rendered or None if it could not be loaded, its findings)`` for one id: a unit of work any
    process can do (``workers.ordered_items``), findings kept in the order one process makes them."""
    cid, fmt, include_hidden, exported_at, index_link, many, to_folder = item
    found: list = []
    if fmt == "jsonl" and not to_folder:  # the rows straight from the stored messages, where the store can
        rows = store.message_rows(cid, found, include_hidden)
        if rows is not None:
            return Rendered(None, _jsonl(rows), 0), found
    conv = load_resolved(store, cid, found)
    if conv is None:
        return None, found
    data: bytes | None
    if fmt == "json" and many:  # one item of the array
        data = _json_bytes(export_dict(conv, include_hidden))
    else:
        data = render_one(fmt, store, conv, include_hidden, found, exported_at, index_link)
    # (a stream needs only the bytes: a meta sent back for each of 10,000 conversations cost a worker and the
    # parent 5 us each to pickle and unpickle)
    meta = conv.meta if to_folder else None
    return Rendered(meta, data, len(shown(conv, include_hidden)) if index_link else 0), found


def _to_folder(done, fmt, folder: Path, res, index: bool, made: list):
    """One file per conversation (``done``: Rendered, in order) in ``folder``, made (into ``made``) when
    the first one is written."""
    entries = []
    names: set = set()
    for r in done:
        if r.data is None:
            res.skipped += 1
            continue
        if not res.files:
            writing.make_private_dir(folder, made)
        name = safepaths.check_component(r.meta.id + EXTENSIONS[fmt])
        n = 1
        while name in names:  # one id in two stores (a copied project): never overwrite what this run wrote
            n += 1
            name = safepaths.check_component(f"{r.meta.id}-{n}{EXTENSIONS[fmt]}")
        names.add(name)
        writing.write_atomic(folder / name, r.data)
        res.files.append(str(folder / name))
        res.exported += 1
        if index:
            entries.append(
                {
                    "file": name,
                    "id": r.meta.id,
                    "title": r.meta.title,
                    "updated_ts": r.meta.updated_ts,
                    "messages": r.shown,
                    "store": r.meta.store,
                }
            )
    if index and entries:
        from samctl.render import html  # (lazy: not loaded by ls or --help)

        writing.write_atomic(folder / "index.html", html.index_page(entries).encode("utf-8", "surrogateescape"))
        res.files.append(str(folder / "index.html"))


def _to_stream(done, conversations, fmt, out, findings, res, exported_at, many: bool):
    """Write every conversation to one binary stream ``out``: ``done`` (Rendered, in order), or for
    a SAM bulk package ``conversations()`` ((store, conversation) pairs), which the package's
    header counts before any is written."""
    if fmt == "sam-package" and many:
        done_n, skipped = exporter("sam-package").bulk(conversations(), out, findings, exported_at)
        res.exported += done_n
        res.skipped += skipped
        return
    if many and fmt not in MULTI_STREAM:  # plan_output refuses this; kept as a guard
        raise UsageError(f"{fmt} of several conversations needs a folder", hint="add -o FOLDER")
    if many and fmt == "json":
        out.write(b"[")
    for r in done:
        if r.data is None:
            res.skipped += 1
            continue
        if many and fmt == "json":
            out.write(b"\n" if res.exported == 0 else b",\n")
        out.write(r.data)
        res.exported += 1
    if many and fmt == "json":
        out.write(b"\n]\n")
