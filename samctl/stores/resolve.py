"""Turn what a user typed into one conversation id, like git does with hashes.

Order of checks: the text must be a possible id or id prefix under the store's
rule (else a usage error, before any path is built); an exact id wins; else a
unique prefix, or a prefix of exactly one id that holds a conversation (others
may be SAM folders with none: scopes, leftovers); two or more matches are
ambiguous (usage error listing some).
"""

from __future__ import annotations

import bisect

from samctl.errors import NotFound, UsageError
from samctl.safetext import quoted
from samctl.said import Suggestion, said


class Listed:
    """A store as ``resolve_id`` sees it, its ids listed once (or given: the attic's, store + attic),
    sorted, so that resolving many texts lists nothing again and looks each up by bisection.
    ``where`` is the folder named when nothing matches (the store's conversations by default),
    ``hint`` says which command lists what there is to match."""

    def __init__(self, store, ids=None, where=None, hint=None):
        self._store = store
        self.hint = hint if hint is not None else said("`", Suggestion("ls"), "` lists them")
        self._ids = sorted(set(store.all_ids() if ids is None else ids))
        self._own = ids is None  # the store's own ids (an attic view's are conversations, every one)
        self._set = set(self._ids)
        self.name = store.name
        self.id_rule = store.id_rule
        self.conv_dir = store.conv_dir if where is None else where

    def prefix_ok(self, text: str) -> bool:
        return self._store.prefix_ok(text)

    def normalize_prefix(self, text: str) -> str:
        return self._store.normalize_prefix(text)

    def all_ids(self) -> list[str]:
        return self._ids

    def valid_id(self, cid: str) -> bool:
        return self._store.valid_id(cid)

    def has_id(self, cid: str) -> bool:  # (what ``resolve_across`` asks of a store: an attic view resolves too)
        return cid in self._set

    def holds_conversation(self, cid: str) -> bool:
        return not self._own or self._store.holds_conversation(cid)

    def matches(self, want: str) -> list[str]:
        """``[want]`` if it is an id, else every id it is a prefix of."""
        if want in self._set:
            return [want]
        if self._own and not self._ids and self._store.valid_id(want) and self._store.has_id(want):
            return [want]  # a store that listed nothing (locked?) may still vouch for a whole id: its load says why
        i = bisect.bisect_left(self._ids, want)
        out = []
        while i < len(self._ids) and self._ids[i].startswith(want):
            out.append(self._ids[i])
            i += 1
        return out


def resolve_id(store, text: str) -> str:
    if not isinstance(text, str) or not store.prefix_ok(text):
        shown = quoted(text)
        raise UsageError(
            f"{shown} is not a {store.name} conversation id or id prefix",
            hint=said(f"ids look like {store.id_rule}; `", Suggestion("ls"), "` lists them"),
        )
    want = store.normalize_prefix(text)
    if not isinstance(store, Listed) and store.valid_id(want) and store.has_id(want):
        return want  # a whole id that is there: an exact match wins, no listing needed
    view = store if isinstance(store, Listed) else Listed(store)
    matches = view.matches(want)
    if not matches:
        raise NotFound(f"no conversation matches {quoted(text)} in {view.conv_dir}", hint=view.hint)
    if len(matches) > 1:  # a prefix of one conversation and of folders holding none (SAM scopes) names it
        real = [m for m in matches if view.holds_conversation(m)]
        if len(real) == 1:
            return real[0]
    if len(matches) > 1:
        some = ", ".join(matches[:5]) + (" …" if len(matches) > 5 else "")
        raise UsageError(
            f"{quoted(text)} is ambiguous: {len(matches)} conversations match ({some})", hint="type more of the id"
        )
    return matches[0]


def resolve_many(store, texts) -> list[str]:
    """``resolve_id`` of each text, each id once, in the order given; the store is listed once."""
    view = store if isinstance(store, Listed) else Listed(store)
    return list(dict.fromkeys(resolve_id(view, t) for t in texts))


def resolve_across(stores, text: str):
    """``(store, id)`` for what a user typed, looked up in every store of ``stores`` (the cross-store
    view), by ``resolve_id``'s rules: an exact id in one store wins; else a unique prefix
    (of a conversation) among all stores.  Two or more matches are ambiguous: a usage error listing
    the candidates with their stores.  A text no store's rule accepts is a usage error; none matching,
    NotFound naming every store's folder."""
    return resolve_many_across(stores, [text])[0]


def resolve_many_across(stores, texts) -> list:
    """``resolve_across`` of each text, each ``(store, id)`` once, in the order given; each store is listed
    at most once (and not at all for a whole id it holds)."""
    views: dict = {}
    out: dict = {}
    for text in texts:
        hit = _across(stores, text, views)
        out.setdefault((id(hit[0]), hit[1]), hit)
    return list(out.values())


def _across(stores, text, views: dict):
    tried = [s for s in stores if isinstance(text, str) and s.prefix_ok(text)]
    if not tried:
        rules = "; ".join(dict.fromkeys(f"{s.name}: {s.id_rule}" for s in stores))
        raise UsageError(
            f"{quoted(text)} is not a conversation id or id prefix of any store",
            hint=said(f"ids look like {rules}; `", Suggestion("ls"), "` lists them"),
        )
    exact = [
        (s, s.normalize_prefix(text))
        for s in tried
        if s.valid_id(s.normalize_prefix(text)) and s.has_id(s.normalize_prefix(text))
    ]
    if len(exact) == 1:
        return exact[0]
    matches = []
    for s in tried:
        view = views.get(id(s)) or views.setdefault(id(s), Listed(s))
        matches += [(s, m) for m in view.matches(s.normalize_prefix(text))]
    if len(matches) > 1:  # as in one store: a prefix of one conversation and of folders holding none names it
        real = [(s, m) for s, m in matches if views[id(s)].holds_conversation(m)]
        if len(real) == 1:
            return real[0]
        matches = real or matches  # the candidates worth listing
    if not matches:
        where = ", ".join(str(s.conv_dir) for s in stores)
        raise NotFound(
            f"no conversation matches {quoted(text)} in {where}", hint=said("`", Suggestion("ls"), "` lists them")
        )
    if len(matches) > 1:
        kinds = [s.name for s in {id(s): s for s, _ in matches}.values()]

        def label(s):  # the store's kind, and its folder where two stores of one kind match
            return s.name if kinds.count(s.name) == 1 else f"{s.name} at {s.conv_dir}"

        some = ", ".join(f"{m} ({label(s)})" for s, m in matches[:5]) + (" …" if len(matches) > 5 else "")
        raise UsageError(
            f"{quoted(text)} is ambiguous: {len(matches)} conversations match ({some})",
            hint="type more of the id, or name the store with --root",
        )
    return matches[0]
