"""list_metas with the filters and orderings of ``samctl ls``."""

from __future__ import annotations

from dataclasses import dataclass

from samctl.errors import SamctlError
from samctl.model import ERROR, Finding, recency, title_key
from samctl.projects import project_matcher, project_name  # noqa: F401  (ls and browse import them from here)
from samctl.stores.base import Store

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
    project: str | None = None  # a project's name or folder (``project_matcher``)


def project_members(stores: list, spec: str, findings: list) -> set:
    """``(store name, conversation id)`` of every conversation of the project ``spec`` (``project_matcher``)
    in ``stores``: what a command that does not list (search) keeps of its results."""
    keep = project_matcher(spec)
    owners: dict[int, Store] = {}  # id(meta) -> the store that listed it
    metas = list_across(stores, ListQuery(), findings, owners)
    return {(owners[id(m)].name, m.id) for m in metas if keep(m.project)}


def list_conversations(store, query: ListQuery, findings: list) -> list:
    """Metas of the store matching ``query``, ordered (newest/largest first unless reversed)."""
    metas = store.list_metas(findings)
    if query.since is None and query.until is None and not query.pinned and not query.title and not query.project:
        return _ordered(metas, query)
    out = []
    needle = title_key(query.title) if query.title else None
    in_project = project_matcher(query.project) if query.project else None
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
        if in_project is not None and not in_project(m.project):
            continue
        out.append(m)
    return _ordered(out, query)


def list_across(stores: list, query: ListQuery, findings: list, owners: dict | None = None) -> list:
    """``list_conversations`` over several stores as one list in the query's order (ties keep the stores'
    order), ``limit`` applied to the whole; ``owners`` (if given) gets ``id(meta) -> store`` for each.
    A store that fails as a whole is a finding, and the others still answer; one store is exactly
    ``list_conversations`` (its errors raised as before)."""
    merged = []
    for store in stores:
        try:
            got = list_conversations(store, query, findings)  # each one's best `limit` holds the merged best
        except SamctlError as exc:
            if len(stores) == 1:
                raise
            findings.append(Finding("store-unreadable", str(store.conv_dir), exc.message, ERROR))
            continue
        if owners is not None:
            owners.update((id(m), store) for m in got)
        merged += got
    return merged if len(stores) == 1 else _ordered(merged, query, merged=True)


def _ordered(out: list, query: ListQuery, merged: bool = False) -> list:
    """``out`` (in list_metas' order, newest first, unless ``merged`` from several) in the order the
    query asks for."""
    if query.sort == "updated" and not query.reverse and not merged:
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
