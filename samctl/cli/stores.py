"""samctl stores: every store samctl finds on this machine, where, how many conversations, what it can do."""

from __future__ import annotations

import click

from samctl.cli.common import emit_json, emit_jsonl, examples, finish, format_option, report_findings


@click.command("stores")
@format_option()
@examples("samctl stores", "samctl stores --format json | jq '.[].root'")
@click.pass_context
def command(ctx, fmt):
    """List the stores samctl finds: SAM's folder, ./.mermaid, ~/.claude (or $CLAUDE_CONFIG_DIR),
    ~/.codex (or $CODEX_HOME), llm's logs.db (where `llm logs path` says), and the roots listed in
    $XDG_CONFIG_HOME/samctl/config.toml (roots = ["~/proj", "~/Downloads/export.zip"]). With --root
    (repeatable), only those stores. Read-only; exit 4 when none is found.
    """
    from samctl import errors
    from samctl.cli.common import scope_of

    scope = scope_of(ctx)
    findings = scope.findings
    try:
        stores = scope.found()
    except errors.NotFound:  # none found is a table with no rows here, not an error line (one --root: its error)
        if len(scope.roots) == 1:
            raise
        stores = []
    rows = []
    for s in stores:
        metas = s.list_metas(findings)
        rows.append(
            {
                "store": s.name,
                "root": str(s.conv_dir),
                "conversations": len(metas),
                "read_only": s.read_only,
                "capabilities": s.capabilities(),
            }
        )
    if fmt == "json":
        emit_json(rows)
    elif fmt == "jsonl":
        emit_jsonl(rows)
    elif rows:
        from samctl.cli.common import fit_table, terminal_width
        from samctl.safetext import one_line

        width = terminal_width()
        cells = [
            (r["store"], one_line(r["root"]), f"{r['conversations']:,}", ", ".join(r["capabilities"])) for r in rows
        ]
        headers = ["STORE", "ROOT", "CONVERSATIONS", "CAN"]
        if width is not None:  # on a terminal the root, the longest cell, goes last: it is the one cut
            cells, headers = [(s, n, c, r) for s, r, n, c in cells], ["STORE", "CONVERSATIONS", "CAN", "ROOT"]
        click.echo(fit_table(cells, headers, width))
    report_findings(findings)
    if not rows:
        click.echo("no store found", err=True)
        raise click.exceptions.Exit(errors.NOT_FOUND)
    finish(findings)
