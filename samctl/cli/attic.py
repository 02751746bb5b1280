"""samctl attic: list what rm, archive and compact keep; verify or repair it."""

from __future__ import annotations

import click

from samctl import errors
from samctl.cli.common import (
    emit_json,
    emit_jsonl,
    examples,
    fit_table,
    format_option,
    human_size,
    relative_date,
    report_findings,
    say_skipped,
    scope_of,
    short_ids,
    table,
    terminal_width,
)
from samctl.cli.writeopts import force_option, lock_wait_option
from samctl.core.scope import MOVE
from samctl.said import Suggestion, said


@click.command("attic")
@click.option(
    "--state",
    type=click.Choice(("deleted", "archived", "history", "kept")),
    multiple=True,
    help="Only entries in this state (repeatable). Default: all.",
)
@click.option("--verify", is_flag=True, help="Decompress every entry and check every hash (slower).")
@click.option(
    "--repair",
    is_flag=True,
    help="Finish or undo moves a crash interrupted (every writing samctl "
    "command also does this first). Exit 5 if the owning app is using what it would touch.",
)
@force_option
@lock_wait_option
@format_option()
@examples(
    "samctl attic", "samctl attic --state archived --format json", "samctl attic --verify", "samctl attic --repair"
)
@click.pass_context
def command(ctx, state, verify, repair, force, lock_wait, fmt):
    """List the attic: conversations removed by `samctl rm`, archived by `samctl archive`,
    copies kept by `samctl archive --copy` (kept), and old event logs `samctl compact`
    replaced (history).

    The attic is a 0700 folder the app never lists: beside the store (SAM:
    next to conversations/; mermaid: inside .mermaid/), or, for Claude Code
    and Codex CLI, in samctl's data folder
    ($XDG_DATA_HOME/samctl/attic/<store>/<root>/, else ~/.local/share/...).
    One compressed archive plus a manifest of sha256 hashes per entry. Exit 3
    if an entry is damaged, incomplete or not samctl's. The attics of every
    store samctl finds (or of each --root), in one list; the stores samctl
    only reads have none, and are skipped.
    """
    from samctl.attic import entries as attic
    from samctl.model import ERROR, Finding
    from samctl.safetext import one_line
    from samctl.timeparse import format_local

    scope = scope_of(ctx, MOVE, what="attic --repair" if repair else "attic")
    stores = scope.stores()  # (the stores samctl only reads have no attic: skipped)
    found = scope.findings  # stores that could not be opened or read
    many = len(scope.found()) > 1
    skipped = say_skipped(ctx, scope.skipped, fmt)
    if not stores:
        report_findings(found)
        raise errors.NotFound(
            "no store with an attic found: samctl only reads the stores it found",
            hint=said("`", Suggestion("stores"), "` shows what samctl finds"),
        )
    per, repaired, left = [], [], False
    for store in stores:
        try:
            entries, findings, lines, unsettled = _one(store, state, verify, repair, force, lock_wait)
        except errors.SamctlError as exc:  # (one store busy or gone: of several, the others still answer)
            if not many:
                raise
            found.append(Finding("attic-not-read", str(store.conv_dir), exc.message, ERROR))
            continue
        per.append((store, entries, findings))
        repaired += lines
        left = left or unsettled
    for line in repaired:
        click.echo(f"repaired: {line}", err=True)
    if repair and not repaired and not left:
        click.echo("nothing to repair", err=True)
    entries = sorted((e for _, es, _ in per for e in es), key=lambda e: (e.when_ts, e.stem))
    findings = [f for _, _, fs in per for f in fs]
    if fmt == "json":
        docs = [
            {
                "store": s.name,
                "root": str(s.conv_dir),
                "attic": str(attic.attic_dir(s)),
                "entries": [e.to_dict() for e in es],
                "findings": [f.to_dict() for f in fs],
            }
            for s, es, fs in per
        ]
        # one shape for one store or several (docs/json.md): every entry and finding at the top, each store's
        # own under "stores"
        emit_json(
            {
                "entries": [e for d in docs for e in d["entries"]],
                "findings": [dict(f, store=d["store"]) for d in docs for f in d["findings"]]
                + [dict(f.to_dict(), store=None) for f in found],
                "attic": docs[0]["attic"] if len(docs) == 1 else None,
                "stores": docs,
                "skipped": skipped,
            }
        )
    elif fmt == "jsonl":
        emit_jsonl(e.to_dict() for e in entries)
    elif not repair or entries:
        if not entries:
            what = "holds no readable entry" if findings or found else "is empty"  # the findings say what is wrong
            if state and not findings:
                what = f"holds no {' or '.join(state)} entry"
            where = ", ".join(str(attic.attic_dir(s)) for s, _, _ in per)
            if len(per) <= 1:
                click.echo(f"the attic {what} ({where})", err=True)
            else:
                click.echo(f"every attic {what} ({where})", err=True)
        else:
            store_col = [("STORE", lambda e: e.store)] if many else []
            width = terminal_width()
            if width is None:  # piped: every entry's whole name, as `restore --entry` takes it
                heads = ["ENTRY (ID.STATE.WHEN)", "WHEN", "SIZE", "STORED"] + [h for h, _ in store_col] + ["TITLE"]
                click.echo(
                    table(
                        [
                            (
                                e.stem,
                                format_local(e.when_ts),
                                human_size(e.original_size),
                                human_size(e.tar_size),
                                *[get(e) for _, get in store_col],
                                one_line(e.title)[:60],
                            )
                            for e in entries
                        ],
                        heads,
                    )
                )
            else:  # a terminal: the short id, its state, one relative date, the title what is left
                short = short_ids(e.id for e in entries)
                click.echo(
                    fit_table(
                        [
                            (
                                short[e.id],
                                e.state,
                                relative_date(e.when_ts),
                                human_size(e.original_size),
                                human_size(e.tar_size),
                                *[get(e) for _, get in store_col],
                                one_line(e.title),
                            )
                            for e in entries
                        ],
                        ["ID", "STATE", "WHEN", "SIZE", "STORED"] + [h for h, _ in store_col] + ["TITLE"],
                        width,
                    )
                )
    if fmt != "json":
        report_findings(findings)
    report_findings(found)
    if any(f.severity != "info" for f in findings + found):
        raise click.exceptions.Exit(errors.PARTIAL)


def _one(store, state, verify: bool, repair: bool, force: bool, lock_wait: float):
    """One store's attic: (its entries in ``state``, the findings about it, the repaired lines, whether
    a repair left something), after a repair when asked."""
    from samctl.attic import entries as attic
    from samctl.attic import journal as repairmod
    from samctl.lock import ensure_app_idle, store_lock

    lines: list[str] = []
    left: list = []
    if repair:

        def app_idle() -> None:  # only moves touch the store (debris is the attic's): only they wait for the app
            if repairmod.pending(store):
                ensure_app_idle(store, repairmod.pending_ids(store), force)

        app_idle()
        with store_lock(store, lock_wait):
            app_idle()  # (asked again: now nothing moves)
            lines, left = repairmod.settle(store, full=True)
    findings: list = []
    entries = attic.list_entries(store, findings, state or attic.STATES)
    findings.extend(left if repair else repairmod.pending(store))  # (after a repair: what it had to leave)
    if verify:
        for e in entries:
            findings.extend(attic.verify(e))
    return entries, findings, lines, bool(left)
