"""Token usage read file by file through a disposable cache (``samctl usage``), for stores of one file a session.

A store lists its files as ``UsageFile``s (one ``lstat`` each, from its own folder scan) and gives a ``parse``
function (bytes -> project, rows, findings); ``usage_from_files`` reads only the files whose (size, mtime_ns)
differ from the cache's entry and yields every file's ``UsageRecord``s, earliest file first.

The cache is ``metacache.MetaCache`` under its own kind (``<store>-usage``): one 0600 file in samctl's cache
folder, written atomically, never a symlink followed, ignored when foreign or made under other caps; a file
written in the last seconds (racy) is never stored.  A file's findings are kept with its rows, so a second
report says the same as the first.  The store's files are only read, never touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

from samctl.errors import FileProblem
from samctl.fs import reading
from samctl.model import Finding
from samctl.stores.base import UsageRecord
from samctl.stores.metacache import MetaCache

# a cached row: [ts, model, key, input, output, cache_creation, cache_read, reasoning]
_WIDTH = 5  # a cache entry: [size, mtime_ns, project, findings, rows]


class UsageFile(NamedTuple):
    name: str  # the cache's key: the path relative to the store's folder
    path: str
    st: object  # its lstat
    session: str  # the session its usage is counted for (a sub-agent's: its parent's)
    project: str  # the project when the file names none (parse's project wins)


def usage_from_files(store, files: list[UsageFile], parse: Callable, findings: list):
    """Every ``UsageRecord`` of ``files`` (``parse(data, path, session) -> (project | None, rows, findings)``),
    the files in the order of their earliest row (ties: as listed), each file's rows in file order."""
    cache = MetaCache(f"{store.name}-usage", store.root_real, store.use_cache, store.caps)
    old = cache.load()
    new: dict = {}
    now_ns = time.time_ns()
    changed = False
    per_file = []
    for f in files:
        entry = MetaCache.fresh(old.get(f.name), f.st, _WIDTH)
        if entry is None or not _valid(entry):
            changed = True
            entry = _read(store, f, parse)
        if MetaCache.cacheable(f.st, now_ns) and not any(sev == "error" for _, _, sev in entry[3]):
            new[f.name] = entry  # (a file that could not be read is read again next time: a chmod keeps mtime)
        else:
            changed = True
        per_file.append((f, entry))
    if changed or len(new) != len(old):
        cache.save(new)
    ordered = []
    for f, (_, _, project, found, rows) in per_file:
        for code, message, severity in found:
            findings.append(Finding(code, f.path, message, severity, f.session))
        if rows:
            ordered.append((min(r[0] for r in rows), f, project, rows))
    ordered.sort(key=lambda t: t[0])
    name = store.name
    make = tuple.__new__  # (UsageRecord's own __new__ is a Python function: this is the same tuple, made faster)
    for first, f, project, rows in ordered:
        project = project or f.project
        session = f.session
        for ts, model, key, i, o, cw, cr, rs in rows:
            yield make(UsageRecord, (ts, session, project, model, key, i, o, cw, cr, rs, name, first))


def _valid(entry: list) -> bool:
    """True if a cached entry has the types ``_read`` writes (the cache is samctl's, but a file on disk: one
    edited or cut short is read again, never trusted into a report)."""
    _, _, project, found, rows = entry
    if not (project is None or type(project) is str) or type(found) is not list or type(rows) is not list:
        return False
    for x in found:
        if type(x) is not list or len(x) != 3 or not all(type(v) is str for v in x):
            return False
    for r in rows:
        if type(r) is not list or len(r) != 8:
            return False
        ts, model, key, i, o, cw, cr, rs = r
        if (
            type(ts) not in (float, int)
            or not (model is None or type(model) is str)
            or not (key is None or type(key) is str)
            or count(i) is None
            or count(o) is None
            or count(cw) is None
            or count(cr) is None
            or count(rs) is None
        ):
            return False
    return True


def _read(store, f: UsageFile, parse) -> list | None:
    try:
        data = reading.read_capped(f.path, store.caps.log)
    except FileProblem as exc:
        return [f.st.st_size, f.st.st_mtime_ns, None, [[exc.code, exc.message, "error"]], []]
    project, rows, found = parse(data, f.path, f.session)
    return [f.st.st_size, f.st.st_mtime_ns, project, [[x.code, x.reason, x.severity] for x in found], rows]


def count(v) -> int | None:
    """A token count as a non-negative int (JSON integers only, below 2**53), else None."""
    if type(v) is int and 0 <= v < 1 << 53:
        return v
    return None
