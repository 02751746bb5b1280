"""samctl stats: sizes, counts, the largest conversations, activity per month."""

from __future__ import annotations

import click

from samctl.cli.common import emit_json, examples, finish, format_option, human_size, report_findings, scope_of
from samctl.cli.projectopts import project_options, project_spec
from samctl.report.stats import BY_KEYS


@click.command("stats")
@click.argument("roots", nargs=-1, metavar="[ROOT]...")
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    metavar="N",
    help="How many of the largest conversations to list.",
)
@click.option(
    "--months",
    type=click.IntRange(min=1),
    default=24,
    show_default=True,
    metavar="N",
    help="How many months the activity chart shows (JSON has them all).",
)
@click.option(
    "--by",
    type=click.Choice(BY_KEYS),
    help="Also conversations, messages and size per store, project, "
    "model or month of last activity, across the stores.",
)
@project_options
@format_option(choices=("table", "json"))
@examples(
    "samctl stats",
    "samctl stats --by project",
    "samctl stats --here --by month",
    "samctl stats ~/proj ~/Library/Application\\ Support/SAM",
    "samctl stats --format json | jq '.stores[0].by_month'",
)
@click.pass_context
def command(ctx, roots, top, months, by, project, here, fmt):
    """Conversations, messages, memories and bytes of each store (each ROOT given, else each --root,
    else every store samctl finds), its largest conversations, and activity per month (by last
    update). Read-only.
    """
    from samctl.report.stats import stats_report

    project = project_spec(project, here)
    scope = scope_of(ctx)
    if roots:
        from dataclasses import replace

        scope = replace(scope, roots=tuple(roots), named=True, findings=[], _found=None, _typed={})
        stores = [s for r in roots for s in replace(scope, roots=(r,), findings=[], _typed={}).found()]
    else:
        stores = scope.stores()
    findings = scope.findings
    result = stats_report(stores, findings, top, by, project)
    if fmt == "json":
        emit_json(result)
    else:
        click.echo(_text(result, months))
    report_findings(findings)
    finish(findings)


def _text(result: dict, months: int) -> str:
    from samctl.cli.common import table
    from samctl.report.stats import bar, month_range
    from samctl.safetext import one_line, safe_text

    out = []
    for s in result["stores"]:
        out.append(click.style(f"{s['store']} store at {safe_text(str(s['root']), lines=False)}", bold=True))
        out.append("  " + _counts(s))
        if s["largest"]:
            out.append("")
            out.append("  largest conversations")
            # ids and titles come from the files: one_line keeps their control characters off the terminal
            rows = [
                (
                    one_line(x["id"]),
                    human_size(x["size"]),
                    x["message_count"] if x["message_count"] is not None else "-",
                    _clip(one_line(x["title"]), 50),
                )
                for x in s["largest"]
            ]
            out.extend("  " + ln for ln in table(rows, ["id", "size", "msgs", "title"]).splitlines())
        series = month_range(s["by_month"], months)
        if series:
            peak = max(n for _, n in series)
            out.append("")
            out.append("  conversations by month of last update")
            width = len(str(peak))
            for month, n in series:
                out.append(f"  {month} {n:>{width}} {bar(n, peak, 40)}")
        out.append("")
    if len(result["stores"]) > 1:
        out.append(click.style(f"all {result['total']['stores']} stores", bold=True))
        out.append("  " + _counts(result["total"]))
        out.append("")
    if result.get("groups") is not None:
        out.append(click.style(f"by {result['by']}", bold=True))
        rows = [
            (
                one_line(g.get("name") or g["key"]),
                f"{g['conversations']:,}",
                f"{g['messages']:,}",
                human_size(g["bytes"]),
            )
            for g in result["groups"]
        ]
        if rows:
            out.extend(
                "  " + ln for ln in table(rows, [result["by"], "conversations", "messages", "size"]).splitlines()
            )
    return "\n".join(out).rstrip("\n")


def _counts(s: dict) -> str:
    """Conversations, messages (copies a resume made counted once), memories (only where the store has
    them) and size, on one line."""
    line = f"conversations {s['conversations']:,}   messages {s['messages']:,}"
    if s.get("copied_messages"):
        line += f" (+{s['copied_messages']:,} copied by resumes)"
    if s["memories"] is not None:
        line += f"   memories {s['memories']:,}"
    return line + f"   size {human_size(s['bytes'])} in {s['files']:,} files"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
