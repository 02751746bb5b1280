"""samctl restore: bring conversations back from the attic."""

from __future__ import annotations

import click

from samctl.cli.common import complete_attic_ids, examples, exit_for, findings_first, scope_of
from samctl.cli.writeopts import dry_run_option, force_option, format_opt, lock_wait_option, render
from samctl.core.scope import MOVE


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
    from samctl.errors import NotFound, UsageError

    if entry and len(ids) > 1:
        raise UsageError("--entry names one entry: give at most one ID with it")
    how = dict(as_new=as_new, dry_run=dry_run, force=force, lock_wait=lock_wait, touch=touch)
    scope = scope_of(ctx, MOVE)
    if len(scope.roots) == 1:
        scope.refuse(scope.found()[0])
    stores = [s for s in scope.found() if not scope.reason(s)]  # (the stores samctl only reads have no attic)
    if len(stores) != 1:
        return _across(scope, stores, ids, entry, how, fmt)
    store = stores[0]
    try:
        entries = _entries(store, ids, entry)
    except NotFound as exc:
        from samctl.attic import entries as atticmod

        atticmod.check_attic_folders(store)  # (an attic that is a file or a link: that is what to say)
        if _interrupted(store):  # a move a crash interrupted may be what holds it: say what settles that
            exc.hint = _PENDING
        raise
    render(_restore_in(store, entries, how), fmt, same_said=_SAME)


_PENDING = "an interrupted move is pending: `samctl attic --repair` finishes or undoes it; then try again"


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
            exc.hint = (
                f"{exc.hint}; " if exc.hint else ""
            ) + "an interrupted move is pending: `samctl attic --repair` finishes or undoes it"
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


def _across(scope, stores, ids, entry, how: dict, fmt: str) -> None:
    """restore over several stores: each text resolved across the attics of every store that
    has one (the stores samctl only reads have none: left out), an ambiguous one listing its candidates
    with their stores (exit 2); a store or attic that cannot be read is a finding (exit 3), the others
    still answer.  Nothing is done unless every id is found and none exists again in its store; then
    each store's entries are restored there, one store after the other."""
    from samctl import errors
    from samctl.attic import entries as atticmod
    from samctl.attic.lifecycle import Report

    found = scope.findings
    with findings_first(found):
        if not stores:
            raise errors.NotFound(
                "no store with an attic found: samctl only reads the stores it found",
                hint="`samctl stores` shows what samctl finds",
            )
        if not ids and not entry:
            raise errors.UsageError(
                "name the conversation to restore", hint="`samctl attic` lists what can be restored"
            )
        for s in stores:  # (lists the attic's names, reads no manifest: a finding if it cannot be listed)
            atticmod.list_entries(s, found, want=lambda stem, cid: False)
        groups = _entry_across(stores, ids, entry) if entry else _ids_across(stores, ids)
        if len(groups) > 1 and not how["dry_run"]:  # nothing is done if one exists again, in any store
            for store, entries in groups.items():
                _restore_in(store, entries, dict(how, dry_run=True))
    merged, code = Report(dry_run=how["dry_run"], findings=list(found)), 0
    for store, entries in groups.items():
        try:
            with findings_first(found if len(groups) == 1 else []):
                report = _restore_in(store, entries, how)
        except errors.SamctlError as exc:
            if len(groups) == 1:
                raise
            from samctl.cli import report_error

            report_error(exc)  # (of several stores, one busy or gone: the others are still restored)
            code = code or exc.exit_code
            continue
        merged.items += [dict(it, store=store.name) for it in report.items]
        merged.findings += report.findings
        merged.repaired += report.repaired
    try:
        render(merged, fmt, same_said=_SAME)
    except click.exceptions.Exit as exc:
        code = code or exc.exit_code
    code = code or exit_for(found)
    if code:
        raise click.exceptions.Exit(code)


def _ids_across(stores, ids) -> dict:
    """{store: its entries} for the texts ``ids``, each resolved across the stores' attics."""
    from samctl.attic import entries as atticmod
    from samctl.attic import restore
    from samctl.attic.lifecycle import attic_view
    from samctl.errors import NotFound
    from samctl.stores.resolve import resolve_many_across

    views = {}
    for s in stores:
        views[id(s)] = attic_view(s, atticmod.named_ids(s, atticmod.RESTORABLE))
    of = {id(v): s for s, v in zip(stores, views.values())}
    try:
        hits = resolve_many_across(list(views.values()), ids)
    except NotFound as exc:
        # (as with one store: a move a crash interrupted may be what holds it)
        exc.hint = _PENDING if any(map(_interrupted, stores)) else "`samctl attic` lists them"
        raise
    wanted: dict = {}
    for view, cid in hits:
        wanted.setdefault(of[id(view)], []).append(cid)
    return {store: restore.find_entries(store, cids) for store, cids in wanted.items()}


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
            f"no restorable attic entry matches {entry!r} in any store's attic", hint="`samctl attic` lists the entries"
        )
    if len(hits) > 1:
        some = ", ".join(f"{e.stem} ({s.name})" for s, e in hits[:5])
        raise UsageError(
            f"more than one restorable attic entry matches {entry!r} ({some})",
            hint="type more of the entry's name, or name the store with --root",
        )
    return {hits[0][0]: [hits[0][1]]}
