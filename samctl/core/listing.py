"""list_metas with the filters and orderings of ``samctl ls``."""

from __future__ import annotations

from dataclasses import dataclass

from samctl.model import recency, title_key

SORT_KEYS = ("updated", "created", "title", "messages", "size")


@dataclass
class ListQuery:
    since: float | None = None
    until: float | None = None
    pinned: bool = False
    title: str | None = None
    limit: int | None = None
    sort: str = "updated"
    reverse: bool = False


def list_conversations(store, query: ListQuery, findings: list) -> list:
    """Metas of the store matching ``query``, ordered (newest/largest first unless reversed)."""
    metas = store.list_metas(findings)
    if query.since is None and query.until is None and not query.pinned and not query.title:
        return _ordered(metas, query)
    out = []
    needle = title_key(query.title) if query.title else None
    for m in metas:
        t = recency(m)
        if query.since is not None and t < query.since:
            continue
        if query.until is not None and t > query.until:
            continue
        if query.pinned and not m.pinned:
            continue
        if needle is not None and needle not in title_key(m.title):
            continue
        out.append(m)
    return _ordered(out, query)


def _ordered(out: list, query: ListQuery) -> list:
    """``out`` (in list_metas' order, newest first) in the order the query asks for."""
    if query.sort == "updated" and not query.reverse:
        return out[: query.limit] if query.limit is not None else out  # already so (stable, same key)
    key = {
        "updated": recency,
        "created": lambda m: m.created_ts or 0.0,
        "title": lambda m: m.title.casefold(),
        "messages": lambda m: m.message_count or 0,
        "size": lambda m: m.size or 0,
    }[query.sort]
    # Titles read A..Z; every other key reads biggest/newest first.
    out.sort(key=key, reverse=(query.sort != "title") != query.reverse)
    if query.limit is not None:
        out = out[: query.limit]
    return out
