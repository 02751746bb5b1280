"""samctl usage: tokens and estimated cost by day, week, month, session, project, model or 5-hour block."""

from __future__ import annotations

import csv
import io
import shutil
import sys

import click

from samctl.cli.common import emit_json, emit_jsonl, examples, finish, report_findings, scope_of, table
from samctl.gcpause import gc_paused
from samctl.report.usage import GROUPS, TOKEN_FIELDS, UsageQuery, collect, load_prices, report
from samctl.stores import STORES
from samctl.timeparse import parse_when


@click.command("usage")
@click.option(
    "--by",
    type=click.Choice(GROUPS),
    default="day",
    show_default=True,
    help="One row per day, ISO week, month, session, project (working folder), model, or 5-hour block.",
)
@click.option("--since", metavar="WHEN", help="Only usage since WHEN (7d, 12h, 2026-08-01).")
@click.option("--until", metavar="WHEN", help="Only usage until WHEN.")
@click.option(
    "--store",
    "store_names",
    multiple=True,
    type=click.Choice(sorted(STORES)),
    metavar="NAME",
    help="Only this kind of store (claude-code, codex, llm record usage); repeatable.",
)
@click.option("--project", metavar="TEXT", help="Only projects whose folder contains TEXT.")
@click.option("--model", metavar="TEXT", help="Only models whose name contains TEXT (case-insensitive).")
@click.option("--breakdown", is_flag=True, help="Split each row by model.")
@click.option(
    "--prices",
    "prices_file",
    metavar="FILE",
    help="A price table to use instead of samctl's (same layout as samctl/prices.json).",
)
@click.option("--offline", is_flag=True, help="Accepted for ccusage users: samctl never goes online.")
@click.option("--chart", is_flag=True, help="Draw the rows as a bar chart of total tokens (table format).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("table", "json", "jsonl", "csv", "html")),
    default="table",
    show_default=True,
    help="Output format; json, jsonl and csv are stable interfaces; html is a self-contained page with a chart.",
)
@click.option("-o", "--output", metavar="PATH", help="Write the output to PATH (0600, atomically) instead of stdout.")
@examples(
    "samctl usage",
    "samctl usage --by month --breakdown",
    "samctl usage --by block --since 2d",
    "samctl usage --by session --format json | jq '.rows[0]'",
    "samctl usage --format html -o usage.html",
)
@click.pass_context
def command(ctx, by, since, until, store_names, project, model, breakdown, prices_file, offline, chart, fmt, output):
    """Tokens used and their estimated cost, from the transcripts the apps keep (Claude Code, Codex, llm).

    Each model response is counted once (Claude Code repeats a response's usage on every streamed line and in
    resumed copies). Cost is an estimate from samctl's price table (its date and source are in the JSON
    output); a model it has no price for shows ? (null in JSON), never 0. Without --root, every store
    samctl finds. A second report reads only the files that changed since the first.
    """
    prices = load_prices(prices_file)
    q = UsageQuery(
        by=by,
        since=parse_when(since) if since is not None else None,
        until=parse_when(until, end=True) if until is not None else None,
        stores=tuple(store_names),
        project=project,
        model=model,
        breakdown=breakdown,
    )
    scope = scope_of(ctx)
    findings = scope.findings
    with gc_paused():
        stores = scope.stores()
        rep = report(collect([s for s in stores if not q.stores or s.name in q.stores], findings), q, prices)
    if output is not None:
        from samctl.fs import writing

        writing.write_atomic(output, _render(rep, fmt, chart).encode())
    elif fmt == "jsonl":
        emit_jsonl(rep["rows"])
    elif fmt == "json":
        emit_json(rep)
    else:
        click.echo(_render(rep, fmt, chart), nl=False)
    report_findings(findings)
    finish(findings)


def _render(rep: dict, fmt: str, chart: bool) -> str:
    import orjson

    if fmt == "json":
        return orjson.dumps(rep, option=orjson.OPT_INDENT_2).decode() + "\n"
    if fmt == "jsonl":
        return "".join(orjson.dumps(r).decode() + "\n" for r in rep["rows"])
    if fmt == "csv":
        return _csv(rep)
    from samctl.render import usage as render

    if fmt == "html":
        return render.html_page(rep)
    if not rep["rows"]:
        click.echo("no usage recorded", err=True)
        return ""
    if chart:
        return render.bar_chart(rep, shutil.get_terminal_size((100, 24)).columns if sys.stdout.isatty() else 100) + "\n"
    return _table(rep, render) + "\n"


def _table(rep: dict, render) -> str:
    key = rep["key"]
    rows = []
    for r in rep["rows"] + [dict(rep["totals"], **{key: "TOTAL"})]:
        lab = render.label(rep, r)
        if key == "session" and "project" in r:
            lab = f"{lab}  {render.one_line(str(r['project'] or ''))}"
        rows.append([lab] + [f"{r[k]:,}" for k, _ in render.COLUMNS] + [render.money(r)])
        for m in r.get("models", ()):
            rows.append(
                ["· " + render.one_line(m["model"])] + [f"{m[k]:,}" for k, _ in render.COLUMNS] + [render.money(m)]
            )
    heads = [("SESSION  PROJECT" if key == "session" else key.upper().replace("_", " "))]
    return table(rows, heads + [h for _, h in render.COLUMNS] + ["COST"])


def _csv(rep: dict) -> str:
    key = rep["key"]
    buf = io.StringIO()
    cols = [key] + list(TOKEN_FIELDS) + ["total_tokens", "cost_usd"]
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rep["rows"] + [dict(rep["totals"], **{key: "TOTAL"})]:
        w.writerow(["" if r.get(c) is None else _cell(r[c]) for c in cols])
    return buf.getvalue()


def _cell(v) -> str:
    text = str(v)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text  # (no formula from a file reaches a sheet)
