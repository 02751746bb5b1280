"""samctl search: memories and messages that match, best first (SAM's scoring, docs/formats/sam.md §7.7, §11)."""

from __future__ import annotations

import shutil
import sys

import click

from samctl.cli.common import Number, complete_ids, emit_json, emit_jsonl, examples, finish, format_option, \
    report_findings, store_of
from samctl.cli.writeopts import force_option, lock_wait_option


def _a_number(ctx, param, value):
    if value is not None and value != value:  # NaN: every comparison false, so nothing would ever match
        raise click.BadParameter(f"{value} is not a number")
    return value


@click.command("search")
@click.argument("query", required=False, default="")
@click.option("--conversation", "-c", "conversations", multiple=True, metavar="ID", shell_complete=complete_ids,
              help="Only this conversation (repeatable). SAM: its messages and its memory scope, including the "
                   "shared topic it uses.")
@click.option("--in", "where", type=click.Choice(("memories", "messages", "all")), default=None,
              help="What to search: SAM memories, messages (of conversations and SAM's context archives), or all. "
                   "[default: all; memories with --like]")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=10, show_default=True, metavar="N",
              help="At most N results (1 or more).")
@click.option("--threshold", type=float, default=0.3, show_default=True, metavar="X", callback=_a_number,
              help="Keep results scoring at least X (SAM's default 0.3; scores reach 1.5).")
@click.option("--since", metavar="WHEN", help="Only rows dated since WHEN (7d, 12h, 2026-08-01).")
@click.option("--until", metavar="WHEN", help="Only rows dated until WHEN.")
@click.option("--exact", is_flag=True, help="Plain case-insensitive substring search, newest first, like SAM's own "
              "message search (no score).")
@click.option("--like", metavar="MEMORY_ID", help="More like this SAM memory: its stored vector is the query vector, "
              "compared with stored vectors of the same length; QUERY (optional) gives the keywords, else its text.")
@click.option("--min-importance", type=Number(0, 1), metavar="X",
              help="Only rows whose importance (SAM's score; computed where not stored) is at least X.")
@format_option()
@click.option("--touch", is_flag=True, help="Do what SAM does on retrieval to the SAM memories returned: "
              "access_count + 1, last_accessed = now. Refused while SAM runs (exit 5) unless --force.")
@force_option
@lock_wait_option
@click.option("--no-index", is_flag=True, help="Read the files directly instead of samctl's index (slower on a big "
              "store; the same results).")
@examples('samctl search "portland budget"', 'samctl search budget --in memories --since 30d -n 5',
          "samctl search --exact 'go ahead' --format jsonl",
          "samctl search --like 296E5007 --threshold 0.5",
          "samctl search 'weekend trip' --conversation 8B58 --min-importance 0.8")
@click.pass_context
def command(ctx, query, conversations, where, limit, threshold, since, until, exact, like, min_importance, fmt,
            touch, force, lock_wait, no_index):
    """Search the memories and messages of the whole store, best first.

    Scores are SAM's memory retrieval: cosine similarity of the query's and the text's
    embeddings plus a keyword boost of min(0.5 x Jaccard, 0.5) over the words of more than two
    characters. SAM's own vectors need macOS, so samctl embeds both sides with its
    deterministic version of SAM's hash embedding. Results below --threshold are dropped.

    The first search of a store builds samctl's index in the cache folder (a long build shows
    progress on a terminal); later searches re-read only the files that changed. Searching
    never changes the store, unless --touch.
    """
    from samctl.search import retrieve as core
    from samctl.timeparse import parse_when
    from samctl.errors import UsageError

    store = store_of(ctx)
    if touch:
        if not store.has_memories:
            raise UsageError("--touch updates SAM memories; this is a " + store.name + " store, which has none")
        from samctl.lock import ensure_app_idle

        ensure_app_idle(store, force=force)
    q = core.SearchQuery(text=query or "", conversations=tuple(conversations), where=where, limit=limit,
                         threshold=threshold, since=parse_when(since) if since is not None else None,
                         until=parse_when(until, end=True) if until is not None else None, exact=exact, like=like,
                         min_importance=min_importance, use_index=not no_index)
    from samctl.cli.index import progress_printer

    progress = progress_printer(sys.stderr)
    findings: list = []
    try:
        hits = core.search(store, q, findings, progress)
    finally:
        if progress:
            progress.done()
    if touch:
        findings += _touch(store, hits, force, lock_wait, findings)
    if fmt == "json":
        emit_json([h.to_dict() for h in hits])
    elif fmt == "jsonl":
        emit_jsonl(h.to_dict() for h in hits)
    else:
        _table(hits, query)
        if not hits:
            click.echo(_what_to_try(q), err=True)
    report_findings(findings)
    finish(findings)


def _what_to_try(q) -> str:
    """The hint after a search that found nothing: what would widen this search."""
    tries = []
    narrowing = [o for o, given in (("--conversation", q.conversations), ("--in", q.where), ("--since", q.since),
                                    ("--until", q.until), ("--min-importance", q.min_importance)) if given]
    if narrowing:
        tries.append("without " + ", ".join(narrowing))
    if q.exact:
        tries.append("fewer or shorter words, or a scored search (without --exact)")
    elif not q.like:
        tries.append(f"a lower --threshold (now {q.threshold:g})")
        tries.append("--exact for a plain substring")
    else:
        tries.append(f"a lower --threshold (now {q.threshold:g})")
    return "hint: try " + "; or ".join(tries)


def _touch(store, hits, force, lock_wait, findings) -> list:
    from samctl.search import retrieve as core
    from samctl.lock import ensure_app_idle, store_lock
    from samctl.attic.journal import settle_first

    with store_lock(store, lock_wait):
        ensure_app_idle(store, force=force)
        repaired, left = settle_first(store)  # interrupted moves first, as every writing command does
        n = core.touch(store, hits, findings)  # (a file it must not write: an error in findings)
    for line in repaired:
        click.echo(f"repaired: {line}", err=True)
    click.echo(f"touched {n} memor{'y' if n == 1 else 'ies'} (access_count + 1, last_accessed = now)", err=True)
    return left  # (what settling had to leave: findings of this run)


def _table(hits, query: str) -> None:
    from samctl.safetext import one_line, quoted
    from samctl.timeparse import format_local

    if not hits:
        click.echo(f"no matches for {quoted(query)}" if query else "no matches", err=True)
        return
    tty = sys.stdout.isatty()
    width = shutil.get_terminal_size((120, 24)).columns if tty else None
    out = [f"{'SCORE':<6} {'KIND':<8} {'CONVERSATION':<36}  {'DATE':<16}  TITLE"]
    for h in hits:
        score = "exact" if h.score is None and h.exact == "whole" else ("-" if h.score is None else f"{h.score:.3f}")
        title = one_line(h.title)
        line = f"{score:<6} {h.kind:<8} {h.conversation_id:<36}  {format_local(h.date_ts):<16}  {title}"
        snip = "       " + one_line(h.snippet)
        if width:
            line = _clip(line, width)
            snip = _clip(snip, width)
            snip = _highlight(snip, query) if query.strip() else snip
        out.append(line)
        out.append(snip)
    click.echo("\n".join(out))


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: max(1, n - 1)] + "…"


def _highlight(text: str, query: str) -> str:
    import re

    words = sorted({w for w in query.lower().split() if len(w) > 2}, key=len, reverse=True)
    if not words:
        return text
    pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
    return pattern.sub(lambda m: click.style(m.group(0), bold=True), text)
