"""stats: how big a store is, what is largest in it, and when it was used.

Read-only and cheap: everything comes from the listing (metas: counts, sizes,
dates), one walk of the store folder for its bytes (``lstat`` only, symlinks
not followed), and, for SAM, a row count of every ``memory.db`` opened
read-only.  No conversation is loaded.
"""

from __future__ import annotations

import os
import stat
import time
from collections import Counter
from datetime import datetime

from samctl.fs import filemodes
from samctl.model import recency
from samctl.projects import project_matcher, project_name
from samctl.stores.metacache import MetaCache


def _month(ts) -> str | None:
    if ts is None:
        return None
    try:
        return datetime.fromtimestamp(ts).strftime("%Y-%m")
    except (OverflowError, OSError, ValueError):
        return None


def folder_bytes(root) -> tuple[int, int]:
    """(bytes, files) of the regular files under ``root``; symlinks are neither followed nor counted."""
    total = files = 0
    stack = [str(root)]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(e.path)
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
                files += 1
    return total, files


def memory_count(store, findings: list) -> int | None:
    """Rows in every ``CONV/*/memory.db`` and the legacy ``BASE/memory.db`` (SAM), the set search
    reads; None for stores without memories.  A database that is there but cannot be read (a
    symlink, a FIFO, damaged, locked) is a finding, as in search and check."""
    if not store.has_memories:
        return None
    return _counted(store, store.memory_databases(), findings)


def _counted(store, dbs: list, findings: list) -> int:
    """The rows of ``dbs`` ((path, scope) pairs), each counted by reading it, or taken from the
    stats cache while the database, its -wal and its -journal have the size and mtime they were
    counted at (SQLite changes one of them with every write).  Only a count that came with no
    finding, of files outside the racy window, is cached: a warm stats of 20,000 scopes opens none."""
    cache = MetaCache(f"{store.name}-memories", store.root_real, store.use_cache)
    known = cache.load()
    fresh: dict = {}
    now_ns = time.time_ns()
    total = 0
    for path, scope in dbs:
        files = [filemodes.lstat(path + suffix) for suffix in ("", "-wal", "-journal")]
        st = files[0]
        if st is None:
            continue  # no database there (a scope is a folder; its memory.db comes with the first memory)
        stamp = [x for f in files for x in ((f.st_size, f.st_mtime_ns) if f is not None else (-1, -1))]
        entry = known.get(path)
        if type(entry) is list and len(entry) == 7 and entry[:6] == stamp and type(entry[6]) is int and entry[6] >= 0:
            total += entry[6]
            fresh[path] = entry
            continue
        before = len(findings)
        n = sum(1 for _ in store.memory_rows(path, findings, scope))
        total += n
        if len(findings) == before and all(f is None or MetaCache.cacheable(f, now_ns) for f in files):
            fresh[path] = stamp + [n]
    if fresh != known:
        cache.save(fresh)
    return total


BY_KEYS = ("store", "project", "model", "month")


def counted(m) -> int:
    """The messages of ``m`` that are its own: a resumed session's copies of the one it continues are
    that one's, counted there."""
    return max(0, (m.message_count or 0) - (m.copied_messages or 0))


def stats_report(stores: list, findings: list, top: int = 5, by: str | None = None, project: str | None = None) -> dict:
    """Every store's ``store_stats``, their ``total``, and with ``by`` the conversations, messages and bytes
    per store, project, model or month of last activity (``groups``); ``project`` as ``ls --project``."""
    keep = project_matcher(project) if project else None
    per_store, listed = [], []
    for store in stores:
        metas = store.list_metas(findings)
        if keep is not None:
            metas = [m for m in metas if keep(m.project)]
        listed.append((store, metas))
        per_store.append(store_stats(store, findings, top, metas=metas))
    out = {"stores": per_store, "total": totals(per_store)}
    if by:
        out["by"] = by
        out["groups"] = groups(listed, by)
    return out


def totals(per_store: list) -> dict:
    """The sums over the stores (memories: over those that have them; None when none has)."""
    mems = [s["memories"] for s in per_store if s["memories"] is not None]
    return {
        "stores": len(per_store),
        **{
            k: sum(s[k] for s in per_store)
            for k in ("conversations", "messages", "copied_messages", "bytes", "files", "conversation_bytes")
        },
        "memories": sum(mems) if mems else None,
    }


def _key(store, m, by: str) -> str:
    if by == "store":
        return store.name
    if by == "project":
        return m.project or "(none)"
    if by == "model":
        return m.model or "(unknown)"
    return _month(recency(m) or None) or "(undated)"


def groups(listed: list, by: str) -> list[dict]:
    """Conversations, messages (own, ``counted``) and bytes per ``by`` key: months in order, the others
    most messages first."""
    acc: dict = {}
    for store, metas in listed:
        for m in metas:
            g = acc.setdefault(_key(store, m, by), {"conversations": 0, "messages": 0, "bytes": 0})
            g["conversations"] += 1
            g["messages"] += counted(m)
            g["bytes"] += m.size or 0
    rows = [
        {"key": k, **({"name": project_name(k)} if by == "project" and k != "(none)" else {}), **v}
        for k, v in acc.items()
    ]
    if by == "month":
        return sorted(rows, key=lambda r: r["key"])
    return sorted(rows, key=lambda r: (-r["messages"], -r["conversations"], r["key"]))


def store_stats(store, findings: list, top: int = 5, metas: list | None = None) -> dict:
    """One store's figures, of ``metas`` when given (a filtered listing), else of its whole listing; the
    messages a resumed session copied are counted once (``counted``), and said (``copied_messages``)."""
    if metas is None:
        metas = store.list_metas(findings)
    size, files = folder_bytes(store.conv_dir)
    months = Counter(m for m in (_month(recency(x) or None) for x in metas) if m)
    largest = sorted(metas, key=lambda m: m.size or 0, reverse=True)[:top]
    return {
        "store": store.name,
        "root": str(store.conv_dir),
        "conversations": len(metas),
        "messages": sum(counted(m) for m in metas),
        "copied_messages": sum(m.copied_messages or 0 for m in metas),
        "memories": memory_count(store, findings),
        "bytes": size,
        "files": files,
        "conversation_bytes": sum(m.size or 0 for m in metas),
        "largest": [{"id": m.id, "title": m.title, "size": m.size, "message_count": m.message_count} for m in largest],
        "by_month": dict(sorted(months.items())),
    }


def month_range(by_month: dict, last: int | None = None) -> list[tuple[str, int]]:
    """Every month from the first to the last with activity (gaps as 0), optionally only the ``last`` n."""
    if not by_month:
        return []
    keys = sorted(by_month)
    y, m = map(int, keys[0].split("-"))
    ey, em = map(int, keys[-1].split("-"))
    out = []
    while (y, m) <= (ey, em):
        k = f"{y:04d}-{m:02d}"
        out.append((k, by_month.get(k, 0)))
        m += 1
        if m == 13:
            y, m = y + 1, 1
    return out[-last:] if last else out


_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: int, peak: int, width: int = 40) -> str:
    """A unicode bar of ``value`` against ``peak`` in ``width`` cells (eighth-cell resolution)."""
    if peak <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / peak * width * 8))
    full, part = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[part] if part else "")
