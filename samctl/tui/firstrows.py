"""The first screen of ``samctl browse``, kept from the last run: the newest conversations of the stores in
scope as they were last listed, painted before the listing of this run comes in.

Why: listing 100,000 conversations takes longer than starting Textual (a stat per file, even with the
listing cache warm), and the first screen needs only its newest rows.  Disposable and untrusted, like the
listing cache (``stores/metacache.py``): one 0600 file per scope (the stores' kinds and folders, in
order) in samctl's cache folder, written atomically after a full listing, ignored when unreadable,
foreign, of another scope or version, or larger than its cap; never written or read with ``--no-cache``.
What it shows is marked as not yet listed (the status line says "loading"), and each store's rows are
replaced by what its listing finds (``BrowseApp._add``), so a conversation removed since shows at most
until then; an action on it meets the store's own "not found".
"""

from __future__ import annotations

import hashlib

import orjson

from samctl.errors import FileProblem
from samctl.fs import reading, userdirs, writing
from samctl.model import ConversationMeta
from samctl.tui.preload import FIELDS

VERSION = 1
KEEP = 200  # rows kept: more than a screen holds
CAP = 4 << 20
_N = type(None)
_TEXT, _TEXT_N, _NUM_N, _INT_N = (str,), (str, _N), (float, int, _N), (int, _N)
# The types each field of a kept row may have (ConversationMeta's, as orjson reads them back), in FIELDS'
# order: a row with any other is a file samctl did not write, and none of it is shown.
KINDS = {
    "store": _TEXT,
    "id": _TEXT,
    "title": _TEXT,
    "created": _TEXT_N,
    "updated": _TEXT_N,
    "created_ts": _NUM_N,
    "updated_ts": _NUM_N,
    "message_count": _INT_N,
    "size": _INT_N,
    "pinned": (bool,),
    "path": _TEXT,
    "active_ts": _NUM_N,
    "project": _TEXT_N,
    "branch": _TEXT_N,
    "continues": _TEXT_N,
    "model": _TEXT_N,
    "copied_messages": (int,),
}
_ROW_KINDS = tuple(KINDS[f] for f in FIELDS)


def _scope(stores: list) -> list:
    return [[str(s.name), str(s.conv_dir)] for s in stores]


def _path(stores: list):
    key = hashlib.sha256(orjson.dumps(_scope(stores))).hexdigest()[:24]
    return userdirs.cache_dir() / f"browse-first-{key}.json"


def _usable(stores: list) -> bool:
    return bool(stores) and all(getattr(s, "use_cache", False) for s in stores)


def load(stores: list) -> list:
    """[(store, meta), ...] newest first, as last saved for exactly these stores; [] when none is usable."""
    if not _usable(stores):
        return []
    try:
        doc = orjson.loads(reading.read_capped(_path(stores), CAP))
    except (FileProblem, orjson.JSONDecodeError, OSError):
        return []
    if (
        not isinstance(doc, dict)
        or doc.get("v") != VERSION
        or doc.get("scope") != _scope(stores)
        or doc.get("fields") != list(FIELDS)
        or not isinstance(doc.get("rows"), list)
    ):
        return []
    out = []
    try:
        for i, values in doc["rows"][:KEEP]:
            if (
                type(i) is not int
                or not 0 <= i < len(stores)
                or type(values) is not list
                or len(values) != len(_ROW_KINDS)
                or any(type(v) not in kinds for v, kinds in zip(values, _ROW_KINDS))
            ):
                return []
            out.append((stores[i], ConversationMeta(*values)))
    except (TypeError, ValueError):  # (a row that is not a pair)
        return []
    return out


def save(stores: list, rows: list) -> None:
    """Keep the first ``KEEP`` of ``rows`` ((store, meta), newest first) for the next run."""
    if not _usable(stores):
        return
    index = {id(s): i for i, s in enumerate(stores)}
    kept = [[index[id(st)], [getattr(m, f) for f in FIELDS]] for st, m in rows[:KEEP] if id(st) in index]
    doc = {"v": VERSION, "scope": _scope(stores), "fields": list(FIELDS), "rows": kept}
    try:
        data = orjson.dumps(doc)
        path = _path(stores)
        writing.make_private_dir(path.parent)
        writing.write_atomic(path, data)
    except (OSError, orjson.JSONEncodeError, FileProblem):  # (a file name that is not UTF-8; a cache refused)
        pass  # a first screen that cannot be kept costs only time
