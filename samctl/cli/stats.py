"""samctl stats: sizes, counts, the largest conversations, activity per month."""

from __future__ import annotations

import click

from samctl.cli.common import emit_json, examples, finish, format_option, human_size, report_findings, scope_of


@click.command("stats")
@click.argument("roots", nargs=-1, metavar="[ROOT]...")
@click.option("--top", type=click.IntRange(min=0), default=5, show_default=True, metavar="N",
              help="How many of the largest conversations to list.")
@click.option("--months", type=click.IntRange(min=1), default=24, show_default=True, metavar="N",
              help="How many months the activity chart shows (JSON has them all).")
@format_option(choices=("table", "json"))
@examples("samctl stats", "samctl stats ~/proj ~/Library/Application\\ Support/SAM",
          "samctl stats --format json | jq '.stores[0].by_month'")
@click.pass_context
def command(ctx, roots, top, months, fmt):
    """Conversations, messages, memories and bytes of each store (each ROOT given, else each --root,
    else every store samctl finds), its largest conversations, and activity per month (by last
    update). Read-only.
    """
    from samctl.core.stats import store_stats

    scope = scope_of(ctx)
    if roots:
        from dataclasses import replace

        scope = replace(scope, roots=tuple(roots), named=True, findings=[], _found=None, _typed={})
        stores = [s for r in roots for s in replace(scope, roots=(r,), findings=[], _typed={}).found()]
    else:
        stores = scope.stores()
    findings = scope.findings
    result = {"stores": [store_stats(s, findings, top) for s in stores]}
    if fmt == "json":
        emit_json(result)
    else:
        click.echo(_text(result, months))
    report_findings(findings)
    finish(findings)


def _text(result: dict, months: int) -> str:
    from samctl.cli.common import table
    from samctl.safetext import one_line, safe_text
    from samctl.core.stats import bar, month_range

    out = []
    for s in result["stores"]:
        mem = "-" if s["memories"] is None else f"{s['memories']:,}"
        out.append(click.style(f"{s['store']} store at {safe_text(str(s['root']), lines=False)}", bold=True))
        out.append(f"  conversations {s['conversations']:,}   messages {s['messages']:,}   memories {mem}   "
                   f"size {human_size(s['bytes'])} in {s['files']:,} files")
        if s["largest"]:
            out.append("")
            out.append("  largest conversations")
            # ids and titles come from the files: one_line keeps their control characters off the terminal
            rows = [(one_line(x["id"]), human_size(x["size"]), x["messages"] if x["messages"] is not None else "-",
                     _clip(one_line(x["title"]), 50)) for x in s["largest"]]
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
    return "\n".join(out).rstrip("\n")


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
