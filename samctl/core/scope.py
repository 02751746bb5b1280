"""Which stores a command covers, and what comes of running it on each: the one rule (docs/scope.md).

A ``Scope`` is made once per run from the ``--root`` values (or SAMCTL_ROOT's), ``--all-stores`` and
discovery (``stores.found_stores``: what ``samctl stores`` lists).  The command declares what it does
(``declare``): reads, moves files (``MOVE``: rm, archive, restore, attic --repair) or rewrites them
(``REWRITE``: recover, check --fix, search --touch), and whether it selects by filters rather than ids.

The rule, written here once:

- ids: every id or prefix is looked up in every store found (``resolve``); an id in a store that
  cannot do the action is refused (exit 2) before anything changes.
- readers cover every store found; a store a reader cannot read (``can``) is skipped.
- a writer that selects by filters acts on the one store it can write when only one is found; with
  several it refuses (exit 2) naming them and the two ways on (``--root``, ``--all-stores``).
- several stores (``--all-stores``, several roots): the stores that cannot do the action are skipped,
  with a reason (``skipped``), never findings; one outcome per store (``run``), and the exit code by
  ``exit_code``: the first hard failure, else 3 (partial) if any, else 0.
- one root named: a store that cannot do the action is refused (exit 2), as it always was.

Never "no store found" while discovery finds one.  No click here: the cli renders what this returns.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from samctl import errors
from samctl.core.places import store_folder_holding
from samctl.fs import userdirs
from samctl.model import WARNING, Finding
from samctl.safetext import one_line, safe_text
from samctl.said import Suggestion, said
from samctl.stores import found_stores, open_store, where_looked
from samctl.stores.base import Caps, Store
from samctl.stores.resolve import resolve_many, resolve_many_across

READ, MOVE, REWRITE = 0, 1, 2  # what a command does to a store's files (each needs more of the store)


@dataclass
class Outcome:
    """What came of a command on one store: ``done`` (``value`` is the action's result), ``skipped``
    (``reason``: the store cannot do it), or ``failed`` (``code``, ``reason``: the error's message)."""

    store: Store
    status: str
    reason: str = ""
    code: int = errors.OK
    value: Any = None
    hint: str | None = None


@dataclass
class Scope:
    roots: tuple = ()  # --root values, else SAMCTL_ROOT's
    named: bool = False  # the roots were given on the command line (a pasted suggestion repeats them)
    all_stores: bool = False
    caps: object = None
    cache: bool = True
    note: Callable[[Finding], None] | None = None  # called with each Finding to say now (a cache note), once per run
    what: str = "this command"
    need: int = READ
    filters: bool = False
    limit: Callable[[Any], str | None] | None = None  # store -> why it cannot, beyond READ/MOVE/REWRITE (``log``)
    findings: list = field(default_factory=list)  # places that could not be opened as stores
    skipped: list = field(default_factory=list)  # [(store, reason)] of the stores left out
    _found: list | None = None
    _typed: dict = field(default_factory=dict)  # id(store) -> the --root text it was named by
    _noted: set = field(default_factory=set)

    # -- what the command is -------------------------------------------------------------------------

    def declare(self, what: str, need: int = READ, filters: bool = False, limit=None) -> Scope:
        """Say what the command does: ``what`` names it in messages ("rm", "check --fix")."""
        self.what, self.need, self.filters, self.limit = what, need, filters, limit
        return self

    @property
    def several(self) -> bool:
        """Whether the command was asked to cover several stores: --all-stores, or several roots."""
        return bool(self.all_stores) or len(self.roots) > 1

    # -- the stores --------------------------------------------------------------------------------

    def found(self) -> list:
        """Every store in reach: each root (one root: its own error if it cannot be opened), else every
        store discovery finds; a place that cannot be opened is a finding (``findings``).  Opened once."""
        if self._found is not None:
            return self._found

        if len(self.roots) == 1:
            stores = [open_store(self.roots[0], self._caps(), self.cache)]
            self._typed[id(stores[0])] = self.roots[0]
        else:
            failed: list = []
            stores = found_stores(self.findings, self._caps(), self.cache, failed, places=list(self.roots) or None)
            if self.roots:
                for store in stores:
                    self._typed[id(store)] = next((r for r in self.roots if _holds(store, r)), str(store.conv_dir))
            if not stores:
                if len(failed) == 1:  # the one place there is: its own error, as with --root
                    self.findings.pop()
                    self._say_findings()  # (a config file that is not TOML)
                    raise failed[0]
                self._say_findings()
                if failed:
                    raise errors.NotFound(
                        f"no store could be read: {len(failed)} places, none of them a store "
                        "samctl can read (see above)",
                        hint=said("`", Suggestion("stores"), "` shows what samctl finds"),
                    )
                raise errors.NotFound(
                    f"no store found: samctl looked in {where_looked()}",
                    hint="point samctl at one with --root PATH or SAMCTL_ROOT, or list stores with "
                    "no fixed place (mermaid projects, exports) as roots = [...] in that file",
                )
        for store in stores:
            self._note_cache(store)
        self._found = stores
        return stores

    def reason(self, store) -> str | None:
        """Why ``store`` cannot do what the command declared (None: it can)."""
        return self._kind_reason(store) or (self.limit(store) if self.limit else None)

    def _kind_reason(self, store) -> str | None:
        if self.need > READ and store.read_only:
            return f"samctl only reads it, and {self.what} writes"
        if self.need >= REWRITE and store.moves_only:
            return f"samctl only moves its files to and from the attic, and {self.what} would rewrite them"
        return None

    def refuse(self, store) -> None:
        """Raise the usage error (exit 2) of ``store`` not being able to do the action, if it cannot."""
        limited = not self._kind_reason(store) and self.limit and self.limit(store)
        if limited:  # (a command that does not read this kind of store yet: the kind is in the reason)
            raise errors.UsageError(
                f"{limited}; nothing was done",
                hint=said(
                    "use ls, show or export (e.g. `", Suggestion("export", rest="--to jsonl"), "` piped to grep)"
                ),
            )
        why = self.reason(store)
        if why:
            hint = (
                "rm, archive (--copy) and restore move them; ls, show, export and check read"
                if store.moves_only and not store.read_only
                else "read it with ls, show, export, stats or check"
            )
            raise errors.UsageError(f"{store.describe()}: {why}; nothing was done", hint=hint)

    def stores(self) -> list:
        """The stores the command acts on, by the rule above; the others are in ``skipped``."""
        found = self.found()
        if len(self.roots) == 1:
            self.refuse(found[0])
            return list(found)
        able = []
        self.skipped = []
        for s in found:
            why = self.reason(s)
            if why:
                self.skipped.append((s, why))
            else:
                able.append(s)
        if self.need > READ and self.filters and not self.several:
            if not able:
                names = ", ".join(s.describe() for s in found)
                raise errors.UsageError(
                    f"no store {self.what} can act on: {names}; nothing was done",
                    hint=said("`", Suggestion("stores"), "` lists what samctl finds and what it can do"),
                )
            if len(able) > 1:
                names = ", ".join(s.describe() for s in able)
                raise errors.UsageError(
                    f"{self.what} acts on one store, and {len(able)} are found ({names}); nothing was done",
                    hint="name one with --root PATH, or give --all-stores to act on each in turn",
                )
        return able

    # -- ids ---------------------------------------------------------------------------------------

    def resolve(self, ids, view=None) -> list:
        """``[(store, whole id)]`` for each text of ``ids``, looked up in every store found (``view(store)``:
        what to look in, e.g. its attic; None leaves the store out), each once, in the order given.  An
        ambiguous prefix lists each candidate with its store and title; an id of a store that cannot do
        the action is refused (exit 2).  Nothing changes before every id is resolved."""

        stores = self.found()
        if len(self.roots) == 1:
            self.refuse(stores[0])  # (one store named: refused before any id is looked at, as always)
        views = [(s, view(s) if view else s) for s in stores]
        views = [(s, v) for s, v in views if v is not None]
        if not views:
            raise errors.UsageError(
                f"none of the {len(stores)} stores found has what {self.what} reads; nothing was done",
                hint=said("`", Suggestion("stores"), "` lists them and what each can do"),
            )
        of = {id(v): s for s, v in views}
        try:
            if len(views) == 1:  # one store: its own messages, as they always were
                v = views[0][1]
                whole = [v.normalize_prefix(t) for t in ids if isinstance(t, str) and v.prefix_ok(t)]
                if len(whole) == len(ids) and all(v.valid_id(w) and v.has_id(w) for w in whole):
                    hits = [(v, w) for w in dict.fromkeys(whole)]  # whole ids that are there: nothing listed
                else:
                    hits = [(v, cid) for cid in resolve_many(v, list(ids))]
            else:
                hits = resolve_many_across([v for _, v in views], list(ids))
        except errors.UsageError as exc:
            if "ambiguous" in exc.message:
                exc.hint = _candidates(views, ids) or exc.hint
            raise
        out = [(of[id(v)], cid) for v, cid in hits]
        for s, _ in out:
            self.refuse(s)
        return out

    # -- running -----------------------------------------------------------------------------------

    def run(self, action, stores=None) -> list:
        """``action(store)`` on each store (default: ``stores()``), in turn: one ``Outcome`` each, the
        skipped stores first.  A store failing (any samctl error) does not stop the others."""
        todo = self.stores() if stores is None else stores
        out = [Outcome(s, "skipped", why) for s, why in self.skipped]
        for store in todo:
            try:
                out.append(Outcome(store, "done", value=action(store)))
            except errors.SamctlError as exc:
                out.append(Outcome(store, "failed", exc.message, exc.exit_code, hint=exc.hint))
        return out

    def exit_code(self, outcomes=(), partial: bool = False) -> int:
        """The run's exit code, by one rule: the first hard failure (not a partial result) of a store,
        else 3 if a store failed partly, a place could not be opened, or ``partial``; else 0.  A
        skipped store is no failure."""
        codes = [o.code for o in outcomes if o.status == "failed"]
        hard = [c for c in codes if c not in (errors.OK, errors.PARTIAL)]
        if hard:
            return hard[0]
        if partial or codes or any(f.severity != "info" for f in self.findings):
            return errors.PARTIAL
        return errors.OK

    # -- suggestions -------------------------------------------------------------------------------

    def render(self, s: Suggestion, path: str = "") -> str:
        """``samctl [--root R] COMMAND [ID] [REST]``, the root only when the run named its stores on the
        command line (a pasted command would otherwise look elsewhere): the root of ``s.store``, else of
        the store ``path`` lies in (a finding's), else every root of the run."""
        return s.words(self.root_arg(s.store if s.store is not None else (path or None)))

    def root_arg(self, store=None) -> str:
        """``--root R`` for a suggestion about ``store`` (R shell-quoted and safe to print), or ``""``
        when the pasted command finds the store by itself (SAMCTL_ROOT, discovery)."""
        if not self.named:
            return ""

        if store is not None and id(store) in self._typed:
            roots = [self._typed[id(store)]]
        elif store is not None and not isinstance(store, str):
            roots = [str(store.conv_dir)]
        else:
            roots = (
                [self._typed.get(id(s), str(s.conv_dir)) for s in self.found()]
                if store is None and self._found is not None
                else list(self.roots)
            )
            if store is not None:  # a path: the store holding it
                roots = [
                    r
                    for s in (self._found or [])
                    if _holds(s, store)
                    for r in [self._typed.get(id(s), str(s.conv_dir))]
                ] or list(self.roots)
        return " ".join(f"--root {safe_text(shlex.quote(str(r)), lines=False)}" for r in roots)

    # -- inside ------------------------------------------------------------------------------------

    def _say_findings(self) -> None:
        """Say the findings gathered so far now (an error follows, and they may be why)."""
        for f in self.findings:
            if self.note:
                self.note(f)
        self.findings.clear()

    def _caps(self):

        return self.caps or Caps()

    def _note_cache(self, store) -> None:
        """Turn the cache off for ``store`` when samctl's cache folder lies in one of its folders, and say
        once per run why a store runs without the cache."""

        if store.use_cache:
            what = store_folder_holding(store, userdirs.cache_dir())
            if what is not None:  # e.g. SAMCTL_CACHE_DIR set to the SAM base folder
                store.cache_note = ("cache-in-store", f"samctl's cache folder is inside {what}")
                store.use_cache = False
        if store.cache_note and store.cache_note not in self._noted and self.note:
            self._noted.add(store.cache_note)
            code, why = store.cache_note
            self.note(
                Finding(
                    code,
                    str(userdirs.cache_dir()),
                    f"{why}; this run uses no cache (set "
                    "SAMCTL_CACHE_DIR to a folder samctl may write, outside every store)",
                    WARNING,
                )
            )


def _holds(store, path) -> bool:
    """Whether ``path`` (a root as typed, a finding's path; ``export.zip!member``) lies in ``store``."""
    real = os.path.realpath(os.path.expanduser(str(path).split("!", 1)[0]))
    root = store.root_real
    return (
        real == root or real.startswith(root.rstrip(os.sep) + os.sep) or root.startswith(real.rstrip(os.sep) + os.sep)
    )


def _candidates(views, ids) -> str:
    """The hint of an ambiguous prefix, as git gives it: each candidate with its store and title."""

    lines = []
    for text in ids:
        for s, v in views:
            if not (isinstance(text, str) and s.prefix_ok(text)):
                continue
            want = s.normalize_prefix(text)
            ids_ = [i for i in v.all_ids() if i.startswith(want)]
            if not ids_:
                continue
            try:
                titles = {m.id: m.title for m in s.list_metas([])} if len(ids_) <= 50 else {}
            except errors.SamctlError:
                titles = {}
            lines += [f"  {cid}  {s.name}  {one_line(titles.get(cid) or '')[:60]}".rstrip() for cid in ids_[:20]]
    return ("the candidates are:\n" + "\n".join(lines)) if len(lines) > 1 else ""
