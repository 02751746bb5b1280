"""What the commands that move or destroy conversations share: the safety options,
the confirmation, and how a lifecycle report is printed."""

from __future__ import annotations

import sys

import click

from samctl import errors
from samctl.cli.common import Number, emit_json, findings_first, human_size, report_findings

FORMATS = click.Choice(("text", "json"))


def lock_wait_option(f):
    return click.option(
        "--lock-wait",
        type=Number(min=0),
        default=0,
        show_default=True,
        metavar="SECONDS",
        help="Wait up to SECONDS for another samctl that is writing to this store, then give up with exit 5.",
    )(f)


def force_option(f):
    return click.option(
        "--force",
        is_flag=True,
        help="Go ahead even if the owning app seems to be using the "
        "store (SAM running; a mermaid session's scratch lock held).",
    )(f)


def ignore_unreadable_option(f):
    return click.option(
        "--ignore-unreadable",
        is_flag=True,
        help="SAM: remove a memory scope even while some "
        "conversation cannot be read (it might use that scope; by default the scope is kept).",
    )(f)


def dry_run_option(f):
    return click.option("--dry-run", "-n", is_flag=True, help="Only list what would be done; change nothing.")(f)


def yes_option(f):
    return click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (for scripts).")(f)


def targets_of(ctx, scope, ids, purge: bool = False) -> list:
    """``[(store, its whole ids)]`` a command that moves conversations acts on: the ids resolved in every
    store found (with ``purge``, in their attics too), or, selecting by filters, each store of
    ``scope.stores()`` with no ids (the rule of core/scope.py).  Nothing changes here."""
    if not ids:
        return [(s, ()) for s in scope.stores()]
    from samctl.attic import entries as atticmod
    from samctl.attic.targets import attic_view

    found = scope.findings

    def view(s):
        if not purge or s.read_only:
            return s
        atticmod.list_entries(s, found, want=lambda stem, cid: False)  # (a finding if it cannot be listed)
        return attic_view(s, set(s.all_ids()) | atticmod.named_ids(s, atticmod.STATES), both=True)

    wanted: dict = {}
    with findings_first(found):
        hits = scope.resolve(ids, view=view)
    for store, cid in hits:
        wanted.setdefault(id(store), (store, []))[1].append(cid)
    return list(wanted.values())


def move_all(
    ctx,
    scope,
    pairs,
    plan,
    act,
    ask,
    *,
    fmt: str,
    dry_run: bool,
    quiet: bool = False,
    nothing_said: str = "nothing matches; nothing was changed",
    hint=None,
) -> None:
    """rm or archive over ``pairs`` (``targets_of``): ``plan(store, ids)`` (a ``Selection``; it may refuse,
    before anything changes) in each store, ``ask(targets, explicit)`` once for the whole plan, then
    ``act(store, selection)`` (a ``Report``) in each store in turn: one store failing on the way (busy,
    exit 5) is reported and the others still act.  One report, the same with one store or several
    (docs/json.md): each item naming its ``store``; the stores skipped (they cannot do it) listed under -v and in JSON, never findings.
    ``hint(items, store)``: the line under it.  Exit by ``Scope.exit_code``."""
    from samctl.attic.targets import Report
    from samctl.cli.common import exit_with, say_failed, say_skipped

    found = scope.findings
    several = len(pairs) > 1 or scope.several
    with findings_first(found):
        plans = [(store, plan(store, cids)) for store, cids in pairs]
    skipped = say_skipped(ctx, scope.skipped, "json" if quiet else fmt)
    sels = [sel for _, sel in plans]
    kept = [k for sel in sels for k in say_kept(sel, "json" if quiet else fmt)]
    targets = [t for sel in sels for t in sel.targets]
    problems = [p for sel in sels for p in sel.problems]
    if not targets:
        if not (quiet and not problems and fmt == "text"):
            nothing(
                fmt,
                dry_run,
                kept,
                nothing_said,
                plans[0][0] if len(plans) == 1 else None,
                problems + found,
                skipped,
            )
        else:
            report_findings(found)
        exit_with(scope.exit_code())
        return
    ask(targets, all(sel.explicit for sel in sels))
    merged = Report(dry_run=dry_run, kept=kept, findings=list(found))

    from samctl.core.scope import Outcome

    sel_of = {id(s): sel for s, sel in plans}

    def one(store):
        sel = sel_of[id(store)]
        if not sel.targets:
            merged.findings.extend(sel.problems)
            return None
        with findings_first(found if len(plans) == 1 else []):
            return act(store, sel)

    stores = [s for s, _ in plans]  # (one store: its errors raised as they always were)
    outcomes = scope.run(one, stores=stores) if several else [Outcome(stores[0], "done", value=one(stores[0]))]
    say_failed(outcomes)
    for o in outcomes:
        if o.status == "done" and o.value is not None:
            merged.items += [dict(it, store=o.store.name) for it in o.value.items]
            merged.findings += o.value.findings
            merged.repaired += o.value.repaired
    code = scope.exit_code(outcomes)
    try:
        render(
            merged,
            fmt,
            hint(merged.items, plans[0][0] if len(plans) == 1 else None) if hint and merged.items else None,
            quiet=quiet,
            skipped=skipped,
        )
    except click.exceptions.Exit as exc:
        code = code if code not in (errors.OK, errors.PARTIAL) else exc.exit_code
    exit_with(code)


def format_opt(f):
    return click.option(
        "--format", "fmt", type=FORMATS, default="text", show_default=True, help="json is a stable interface."
    )(f)


def stdin_is_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def confirm(question: str, yes: bool) -> None:
    """Ask on a terminal; refuse (usage error) when no one can answer and --yes was not given."""
    if yes:
        return
    if not stdin_is_tty():
        raise errors.UsageError(
            f"{question[0].lower() + question[1:]}: refusing without confirmation",
            hint="pass --yes to confirm from a script, or --dry-run to see the list first",
        )
    if not click.confirm(question, default=False, err=True):
        click.echo("nothing was changed", err=True)
        raise click.exceptions.Exit(errors.FAILED)


def say_kept(sel, fmt: str) -> list:
    """What a filter found and left alone, as ``Report.kept``; on stderr in the text format (the json
    format carries it)."""
    kept = [{"id": cid, "reason": why} for cid, why in sel.skipped]
    if fmt != "json":
        for k in kept:
            click.echo(f"kept: {k['id']}: {k['reason']}", err=True)
    return kept


def nothing(
    fmt: str, dry_run: bool, kept: list, message: str, store=None, problems: list | tuple = (), skipped=None
) -> None:
    """Nothing selected: the json format still prints a report (empty ``items``), a script reads it.
    ``problems`` (``Selection.problems``): what was chosen but cannot be moved, exit 3.  Nothing is
    written, so an interrupted move is not settled: said, with what settles it."""
    from samctl.attic.journal import pending
    from samctl.attic.targets import Report

    report = Report(dry_run=dry_run, kept=kept, findings=list(problems) + (pending(store) if store is not None else []))
    if fmt == "json":
        emit_json(_doc(report, skipped))
    else:
        click.echo("nothing was changed" if problems else message, err=True)
        report_findings(report.findings)
    if problems:
        raise click.exceptions.Exit(errors.PARTIAL)


def show_targets(targets, verb: str, yes: bool) -> None:
    """The list a confirmation asks about, for the person who will answer: not with --yes (a
    script; the results list them again), nor without a terminal (the command refuses)."""
    if yes or not stdin_is_tty():
        return
    for t in targets:
        pin = " (pinned)" if t.pinned else ""
        click.echo(f"{verb}: {t.id}  {_one_line(t.title)}{pin}", err=True)


def _one_line(text) -> str:
    from samctl.safetext import one_line

    return one_line(text)[:80]


def _doc(report, skipped) -> dict:
    """A report's JSON document (docs/json.md): ``skipped``, the stores left out (they cannot do it)."""
    doc = report.to_dict()
    if skipped is not None:
        doc["skipped"] = skipped
    return doc


def render(
    report,
    fmt: str,
    undo_hint: str | None = None,
    quiet: bool = False,
    same_said: str = "unchanged since the newest kept copy",
    skipped=None,
) -> None:
    """Print a lifecycle report and exit with its code: 3 if a conversation it was given could not be
    moved, purged or restored (a problem of that conversation, even when it was the only one; the
    command's own failures are raised before and exit 1).  ``quiet``: only problems (text format).
    Conversations left as they were (``unchanged``) are one count on stderr, not a line each."""
    if fmt == "json":
        emit_json(_doc(report, skipped))
    elif not quiet:
        for line in report.repaired:
            click.echo(f"repaired: {line}", err=True)
        same = [it for it in report.items if it.get("action") == "unchanged"]
        for it in report.items:
            if it in same:
                continue
            extra = ""
            if it.get("new_id"):
                extra = f" as {it['new_id']}"
            if it.get("entry") and it.get("action") in ("deleted", "archived", "kept"):
                extra = f" -> {it['entry']} ({human_size(it.get('bytes'))} -> {human_size(it.get('stored'))})"
            click.echo(f"{it['action']}: {it.get('restored_from') or it['id']}{extra}  {_one_line(it.get('title'))}")
        if same:
            what = same[0]["id"] if len(same) == 1 else f"{len(same)} conversations"
            click.echo(f"{same_said}: {what}", err=True)
        if undo_hint and len(same) < len(report.items) and not report.dry_run:
            click.echo(undo_hint, err=True)
    report_findings(report.findings, quiet=quiet and fmt != "json")
    if report.failed:
        raise click.exceptions.Exit(errors.PARTIAL)
