"""samctl restore: bring conversations back from the attic."""

from __future__ import annotations

import click

from samctl.cli.common import complete_attic_ids, examples, findings_first, scope_of
from samctl.cli.writeopts import dry_run_option, force_option, format_opt, lock_wait_option, render
from samctl.core.scope import MOVE
from samctl.said import Suggestion, said


@click.command("restore")
@click.argument("ids", metavar="[ID]...", nargs=-1, shell_complete=complete_attic_ids)
@click.option(
    "--as-new",
    is_flag=True,
    help="Restore under a fresh id (as the store makes them) and rewrite the "
    "id inside the files, so it can sit beside a conversation that now has the old id.",
)
@click.option(
    "--entry",
    metavar="NAME",
    help="Restore this attic entry (as `samctl attic` lists it, or a unique "
    "prefix of it) instead of the newest one of ID.",
)
@click.option(
    "--touch",
    is_flag=True,
    help="Set the restored files' mtimes to now (Claude Code deletes sessions "
    "older than cleanupPeriodDays, by mtime, when it starts).",
)
@dry_run_option
@force_option
@lock_wait_option
@format_opt
@examples(
    "samctl restore 20260810_140307",
    "samctl restore 0b7c",
    "samctl restore 8B58CBC4 --as-new",
    "samctl restore $(samctl attic --state archived --format jsonl | jq -r .id)",
    "samctl restore --entry 20260810_140307_512.archived.20261001T020000Z",
)
@click.pass_context
def command(ctx, ids, as_new, entry, touch, dry_run, force, lock_wait, fmt):
    """Put deleted, archived or kept conversations back exactly: bytes, modes and mtimes.

    Takes the newest attic entry of each ID (an id or unique prefix of one in
    the attic). Every hash is checked before anything is placed; a file is
    never replaced, so restoring refuses if a conversation exists again, unless
    --as-new (a kept copy goes back over files that still hold its bytes). An
    attic entry is dropped only after its conversation is back; a kept copy
    (`samctl archive --copy`) stays, as a backup. --touch sets the restored
    files' mtimes to now.
    With several IDs, nothing is done if one of them cannot be found or
    exists again; one that fails on the way is reported and the rest restored.
    Each ID is looked for in the attic of every store samctl finds (or of
    each --root given), and restored in its own store.
    """
    from samctl.errors import UsageError

    if entry and len(ids) > 1:
        raise UsageError("--entry names one entry: give at most one ID with it")
    how = dict(as_new=as_new, dry_run=dry_run, force=force, lock_wait=lock_wait, touch=touch)
    _restore(ctx, scope_of(ctx, MOVE), ids, entry, how, fmt)


_PENDING = said(
    "an interrupted move is pending: `", Suggestion("attic --repair"), "` finishes or undoes it; then try again"
)


def _interrupted(store) -> bool:
    """Whether the store's attic holds a move a crash interrupted (not: the attic is a file or a link,
    or another samctl is moving right now; neither is settled by `attic --repair`)."""
    from samctl.attic.journal import pending

    return any(f.code == "attic-interrupted" for f in pending(store))


_SAME = "already in the store with the kept copy's bytes"


def _entries(store, ids, entry) -> list:
    """The attic entries of ``ids`` (or the one ``entry`` names) in ``store``'s attic."""
    from samctl.attic import restore

    # an entry that fails on the way (damaged, a file appeared) is a finding and exit 3, one id or many
    if len(ids) <= 1:
        return [restore.find_entry(store, ids[0] if ids else None, entry)]
    return restore.find_entries(store, ids)


def _restore_in(store, entries: list, how: dict):
    """Restore ``entries`` into ``store`` (today's semantics, one store): the report, with Claude Code's
    cleanup warning when a restored session keeps its old mtime."""
    from samctl.attic import restore
    from samctl.errors import SamctlError

    try:
        report = restore.restore_many(store, entries, **how)
    except SamctlError as exc:  # refused before settling anything: an interrupted move stays pending, say so
        if _interrupted(store):
            exc.hint = said(
                f"{exc.hint}; " if exc.hint else "",
                "an interrupted move is pending: `",
                Suggestion("attic --repair"),
                "` finishes or undoes it",
            )
        raise
    warning = store.cleanup_warning()
    if (
        warning
        and not how["touch"]
        and any(it.get("action") in ("restored", "would be restored") for it in report.items)
    ):
        from samctl.model import WARNING, Finding

        report.findings.append(Finding("app-cleanup", str(store.conv_dir), warning, WARNING))
    return report


def _restore(ctx, scope, ids, entry, how: dict, fmt: str) -> None:
    """restore over the run's scope, one store or several (docs/scope.md): each text resolved across the
    attics of every store that has one (``Scope.resolve``; the stores samctl only reads have none), an
    ambiguous one listing its candidates with their stores (exit 2); of several stores, an attic that cannot
    be listed is a finding (exit 3) and the others still answer.  Nothing is done unless every id is found
    and none exists again in its store; then each store's entries are restored there, in turn
    (``Scope.run``): one store failing on the way is reported and the others restored.  One report, each
    item naming its ``store``."""
    from samctl import errors
    from samctl.attic.targets import Report
    from samctl.cli.common import exit_with, say_failed, say_skipped
    from samctl.core.scope import Outcome

    found = scope.findings
    with findings_first(found):
        if not ids and not entry:
            if len(scope.roots) == 1:
                scope.refuse(scope.found()[0])
            raise errors.UsageError(
                "name the conversation to restore", hint=said("`", Suggestion("attic"), "` lists what can be restored")
            )
        groups = _entry_groups(scope, ids, entry) if entry else _id_groups(scope, ids)
        if len(groups) > 1 and not how["dry_run"]:  # nothing is done if one exists again, in any store
            for store, entries in groups:
                _restore_in(store, entries, dict(how, dry_run=True))
    of = {id(s): entries for s, entries in groups}
    stores = [s for s, _ in groups]

    def one(store):
        with findings_first(found if len(groups) == 1 else []):
            return _restore_in(store, of[id(store)], how)

    # (one store: its errors raised as they always were; of several, one busy or gone is reported)
    outcomes = scope.run(one, stores) if len(groups) > 1 else [Outcome(stores[0], "done", value=one(stores[0]))]
    say_failed(outcomes)
    merged = Report(dry_run=how["dry_run"], findings=list(found))
    for o in outcomes:
        if o.status == "done":
            merged.items += [dict(it, store=o.store.name) for it in o.value.items]
            merged.findings += o.value.findings
            merged.repaired += o.value.repaired
    code = scope.exit_code(outcomes)
    # (the stores samctl only reads have no attic: left out, said under -v and in JSON)
    left = [(s, scope.reason(s)) for s in scope.found() if scope.reason(s)] if len(scope.roots) != 1 else []
    try:
        render(merged, fmt, same_said=_SAME, skipped=say_skipped(ctx, left, fmt))
    except click.exceptions.Exit as exc:
        code = code if code not in (errors.OK, errors.PARTIAL) else exc.exit_code
    exit_with(code)


def _attic_of(scope):
    """``view(store)`` for ``Scope.resolve``: the ids in the store's attic (None: samctl only reads the
    store, it has no attic).  Of several stores, an attic that cannot be listed is a finding."""
    from samctl.attic import entries as atticmod
    from samctl.attic.targets import attic_view

    several = len(scope.found()) > 1

    def view(s):
        if scope.reason(s):
            return None
        if several:  # (lists the attic's names, reads no manifest)
            atticmod.list_entries(s, scope.findings, want=lambda stem, cid: False)
        return attic_view(s, atticmod.named_ids(s, atticmod.RESTORABLE))

    return view


def _id_groups(scope, ids) -> list:
    """[(store, its entries)] for the texts ``ids``, each resolved across the attics in scope."""
    from samctl.attic import entries as atticmod
    from samctl.attic import restore
    from samctl.errors import NotFound

    if len(scope.roots) == 1:
        scope.refuse(scope.found()[0])
    able = [s for s in scope.found() if not scope.reason(s)]
    if not able:
        raise NotFound(
            "no store with an attic found: samctl only reads the stores it found",
            hint=said("`", Suggestion("stores"), "` shows what samctl finds"),
        )
    try:
        hits = scope.resolve(ids, view=_attic_of(scope))
    except NotFound as exc:
        if len(able) == 1:
            atticmod.check_attic_folders(able[0])  # (an attic that is a file or a link: that is what to say)
        # a move a crash interrupted may be what holds it: say what settles that
        exc.hint = (
            _PENDING
            if any(map(_interrupted, able))
            else said("`", Suggestion("attic"), "` lists them")
            if len(able) > 1
            else exc.hint
        )
        raise
    wanted: dict = {}
    for store, cid in hits:
        wanted.setdefault(id(store), (store, []))[1].append(cid)
    return [(store, restore.find_entries(store, cids)) for store, cids in wanted.values()]


def _entry_groups(scope, ids, entry: str) -> list:
    """[(store, [the entry])] for ``--entry``: the one store whose attic holds it (one store: its own
    errors)."""
    from samctl import errors
    from samctl.attic import restore

    if len(scope.roots) == 1:
        scope.refuse(scope.found()[0])
    stores = [s for s in scope.found() if not scope.reason(s)]
    if not stores:
        raise errors.NotFound(
            "no store with an attic found: samctl only reads the stores it found",
            hint=said("`", Suggestion("stores"), "` shows what samctl finds"),
        )
    if len(stores) == 1:
        return [(stores[0], [restore.find_entry(stores[0], ids[0] if ids else None, entry)])]
    return list(_entry_across(stores, ids, entry).items())


def _entry_across(stores, ids, entry: str) -> dict:
    """{store: [the entry]} for ``--entry``: the one store whose attic holds it."""
    import os

    from samctl.attic import entries as atticmod
    from samctl.attic import restore
    from samctl.errors import NotFound, UsageError

    folder = os.path.dirname(entry)  # (a path names its attic: only that store's)
    hits = []
    for s in stores:
        if folder and os.path.realpath(folder) != os.path.realpath(atticmod.attic_dir(s)):
            continue
        try:
            hits.append((s, restore.find_entry(s, ids[0] if ids else None, entry)))
        except NotFound:
            continue
    if not hits:
        raise NotFound(
            f"no restorable attic entry matches {entry!r} in any store's attic",
            hint=said("`", Suggestion("attic"), "` lists the entries"),
        )
    if len(hits) > 1:
        some = ", ".join(f"{e.stem} ({s.name})" for s, e in hits[:5])
        raise UsageError(
            f"more than one restorable attic entry matches {entry!r} ({some})",
            hint="type more of the entry's name, or name the store with --root",
        )
    return {hits[0][0]: [hits[0][1]]}
