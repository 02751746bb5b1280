"""samctl recover: bring back a conversation that is missing, corrupt, or behind its history."""

from __future__ import annotations

import sys

import click

from samctl import errors
from samctl.cli.common import (
    Number,
    complete_ids,
    emit_json,
    examples,
    exit_for,
    findings_first,
    report_findings,
    scope_of,
)
from samctl.core.recover import recover
from samctl.core.scope import REWRITE


def _print(plan, dry_run: bool, to=None) -> None:
    for line in plan.repaired:
        click.echo(f"repaired: {line}", err=True)
    if not plan.nothing_to_do:
        head = "would recover" if dry_run else "recovered"
    elif to:
        head = "nothing to recover; would copy" if dry_run else "nothing to recover; copied"
    else:
        head = "nothing to do for"
    click.echo(f"{head} {plan.cid} from {plan.source}")
    if plan.messages_before is not None or plan.messages_after is not None:
        before = "-" if plan.messages_before is None else plan.messages_before
        click.echo(f"  messages: {before} -> {plan.messages_after}")
    for line in plan.changes:
        click.echo(f"  {line}")
    for p in plan.written:
        click.echo(f"  wrote {p}")


@click.command("recover")
@click.argument("conversation_id", metavar="ID", shell_complete=complete_ids)
@click.option(
    "--dry-run",
    "-n",
    is_flag=True,
    help="Print what would change (messages gained and lost, fields repaired, source used) and write nothing.",
)
@click.option(
    "--to",
    "to",
    metavar="PATH",
    type=click.Path(dir_okay=True, writable=True),
    help="Write the recovered document to PATH (a file, or a folder) instead of in place.",
)
@click.option(
    "--use",
    metavar="PATH",
    help="mermaid: adopt this .conflict sibling as the conversation, after showing how it differs.",
)
@click.option(
    "--from", "from_file", metavar="FILE", help="SAM: also salvage from this SAM export package (single or bulk)."
)
@click.option("--force", is_flag=True, help="Write even though the owning app seems to be using the conversation.")
@click.option(
    "--lock-wait",
    type=Number(min=0),
    default=0,
    show_default=True,
    metavar="SECONDS",
    help="Wait up to SECONDS for another samctl that is writing to this store, then give up with exit 5.",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask before adopting a --use file.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("text", "json")),
    default="text",
    show_default=True,
    help="json is a stable interface.",
)
@examples(
    "samctl recover 20260810_1403 --dry-run",
    "samctl recover 20260810_1403",
    "samctl recover 8B58 --from ~/Desktop/SAM_Portland_2026-08-10.json",
    "samctl recover 20260810_1403 --use .mermaid/conversations/20260810_140307_512.4242.0.conflict",
)
@click.pass_context
def command(ctx, conversation_id, dry_run, to, use, from_file, force, lock_wait, yes, fmt):
    """Recover conversation ID from what is left of it.

    mermaid: folds the event log exactly as mermaid does and rewrites the
    snapshot and its .meta byte-compatibly; trims a torn log tail (keeping the
    cut bytes in a .torn file) so mermaid's next append is not lost. SAM:
    salvages message by message from conversation.json, its .tmp, the migrated
    legacy backups and an export package, repairs what SAM would refuse, and
    writes a file SAM loads. The replaced file is kept as a .bak sibling until
    `samctl compact` removes it. Refuses (exit 5) while the owning app uses the
    conversation, unless --force. ID is looked for in every store samctl
    finds and recovered in its own; a store samctl only reads, or only
    moves, says so (exit 2).
    """
    scope = scope_of(ctx, REWRITE)
    found = scope.findings  # stores that could not be opened: findings, exit 3
    with findings_first(found):
        if len(scope.found()) == 1:  # (a scope of one: recover resolves the id itself, a missing conversation too)
            store = scope.found()[0]
            scope.refuse(store)
        else:
            [(store, conversation_id)] = scope.resolve([conversation_id])
        plan = _recover(store, conversation_id, dry_run, to, use, from_file, force, lock_wait, yes)
    if fmt == "json":
        emit_json(dict(plan.to_dict(), store=store.name, dry_run=dry_run))
    else:
        _print(plan, dry_run, to)
        report_findings(plan.warnings)
    report_findings(found)
    if plan.partial or exit_for(found):  # recovered what could be; the lines above say what stays broken
        raise click.exceptions.Exit(errors.PARTIAL)


def _recover(store, conversation_id, dry_run, to, use, from_file, force, lock_wait, yes):
    """recover in one store, asking first before adopting a --use file."""
    if use and not dry_run and not yes:
        preview = recover(store, conversation_id, dry_run=True, to=to, use=use)  # (with --to: the document only)
        _print(preview, True, to)
        if not sys.stdin.isatty():
            raise click.UsageError("adopting a --use file needs --yes when not run from a terminal")
        click.confirm("adopt it?", abort=True, err=True)
    return recover(
        store, conversation_id, dry_run=dry_run, to=to, use=use, from_file=from_file, force=force, lock_wait=lock_wait
    )
