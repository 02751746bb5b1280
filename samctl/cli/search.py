"""samctl search: memories and messages that match, best first (SAM's scoring, docs/formats/sam.md §7.7, §11)."""

from __future__ import annotations

import os
import sys

import click

from samctl import errors
from samctl.cli.common import (
    Number,
    complete_ids,
    emit_json,
    emit_jsonl,
    examples,
    finish,
    format_option,
    report_findings,
    scope_of,
)
from samctl.cli.projectopts import project_options, project_spec
from samctl.cli.writeopts import force_option, lock_wait_option
from samctl.fs import safepaths
from samctl.search.query import HELP as QUERY_HELP


def _a_number(ctx, param, value):
    if value is not None and value != value:  # NaN: every comparison false, so nothing would ever match
        raise click.BadParameter(f"{value} is not a number")
    return value


class _SearchCommand(click.Command):
    """``samctl search -budget``: say that a query starting with - goes after ``--``."""

    def parse_args(self, ctx, args):
        shorts = {
            o[1]
            for p in self.params
            for o in getattr(p, "opts", ()) + getattr(p, "secondary_opts", ())
            if len(o) == 2 and o[0] == "-"
        }
        valued = {o for p in self.params if isinstance(p, click.Option) and not p.is_flag for o in p.opts}
        after_option = False
        for a in args:
            if a == "--":
                break
            if after_option:  # (the value of an option, such as --threshold -1)
                after_option = False
                continue
            after_option = a in valued
            if len(a) > 2 and a[0] == "-" and a[1] != "-" and a[1] not in shorts:
                raise click.UsageError(
                    f"no such option: {a}; a query that starts with - goes after --, as in: samctl search -- {a}", ctx
                )
        return super().parse_args(ctx, args)


@click.command("search", cls=_SearchCommand, epilog=QUERY_HELP)
@click.argument("query", nargs=-1)
@click.option(
    "--conversation",
    "-c",
    "conversations",
    multiple=True,
    metavar="ID",
    shell_complete=complete_ids,
    help="Only this conversation (repeatable). SAM: its messages and its memory scope, including the "
    "shared topic it uses.",
)
@click.option(
    "--in",
    "where",
    type=click.Choice(("memories", "messages", "args", "all")),
    default=None,
    help="What to search: SAM memories, messages (of conversations and SAM's context archives), or all "
    "(the query's in: says the same). [default: all; memories with --like]",
)
@click.option(
    "--limit",
    "-n",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    metavar="N",
    help="At most N results (1 or more).",
)
@click.option(
    "--rank",
    type=click.Choice(("bm25", "sam")),
    default="bm25",
    show_default=True,
    help="bm25: full-text ranking of each turn with its neighbours. sam: SAM's own memory scoring "
    "(hash-embedding cosine + keyword boost, cut at --threshold), what SAM itself would retrieve.",
)
@click.option(
    "--threshold",
    type=float,
    default=None,
    metavar="X",
    callback=_a_number,
    help="With --rank sam or --like: keep results scoring at least X (SAM's default 0.3; scores reach 1.5).",
)
@click.option("--since", metavar="WHEN", help="Only rows dated since WHEN (7d, 12h, 2026-08-01).")
@click.option("--until", metavar="WHEN", help="Only rows dated until WHEN.")
@click.option(
    "--conversations",
    "-l",
    "by_conversation",
    is_flag=True,
    help="One line per conversation: its best hit's score, its number of hits, its title (-n: conversations).",
)
@click.option(
    "--per-conversation",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    metavar="N",
    help="At most N hits of one conversation in a row while other conversations' hits are left (0: no limit).",
)
@click.option(
    "--exact",
    is_flag=True,
    help="Plain case-insensitive substring search, newest first, like SAM's own message search (no score).",
)
@click.option(
    "--like",
    metavar="MEMORY_ID",
    help="More like this SAM memory: its stored vector is the query vector, "
    "compared with stored vectors of the same length; QUERY (optional) gives the keywords, else its text.",
)
@click.option(
    "--min-importance",
    type=Number(0, 1),
    metavar="X",
    help="Only rows whose importance (SAM's score; computed where not stored) is at least X.",
)
@project_options
@format_option()
@click.option(
    "--touch",
    is_flag=True,
    help="Do what SAM does on retrieval to the SAM memories returned: "
    "access_count + 1, last_accessed = now. Refused while SAM runs (exit 5) unless --force.",
)
@force_option
@lock_wait_option
@click.option(
    "--no-index",
    is_flag=True,
    help="Do not use samctl's index in the cache: build one in a temporary "
    "folder and remove it afterwards (the same results).",
)
@examples(
    "samctl search portland budget",
    "samctl search '\"weekend trip\" +portland -hotel role:user'",
    "samctl search budget --in memories --since 30d -n 5",
    "samctl search -- -v",
    "samctl search --exact 'go ahead' --format jsonl",
    "samctl search 'weekend trip' --rank sam --threshold 0.5",
    "samctl search --like 296E5007 --threshold 0.5",
)
@click.pass_context
def command(
    ctx,
    query,
    conversations,
    where,
    limit,
    rank,
    threshold,
    since,
    until,
    by_conversation,
    per_conversation,
    exact,
    like,
    min_importance,
    fmt,
    touch,
    force,
    lock_wait,
    no_index,
    project,
    here,
):
    """Search the messages and memories of the whole store, best first.

    By default each turn is ranked by BM25 over its words (stemmed, accents folded, stop words
    weighing only in a longer query), with evidence from its neighbours (the question it answers,
    the reply it got) and from its conversation; nothing is hidden by a threshold, -n limits. Each
    hit shows its snippet, the matched words in bold on a terminal (NO_COLOR honoured), and the
    command that opens the conversation at that message.

    QUERY may be several words, quoted or not, with search-engine operators: +word (required),
    -word (excluded), "a phrase", prefix*, and the filters role:user|assistant|tool,
    in:memories|messages, title:WORD and store:NAME. A query that starts with - goes after --.

    --rank sam gives SAM's own memory retrieval instead (cosine of samctl's deterministic hash
    embedding + min(0.5 x Jaccard, 0.5), results under --threshold dropped; slower: every row is
    embedded at query time). --exact is SAM's plain substring search.

    The first search of a store builds samctl's index in the cache folder (a long build shows
    progress on a terminal); later searches re-read only the files that changed. Searching
    never changes the store, unless --touch.
    """
    from samctl.errors import UsageError
    from samctl.search import dispatch as core
    from samctl.timeparse import parse_when

    text = " ".join(query)
    plan = None
    if threshold is not None and rank == "bm25" and not like and not exact:
        raise UsageError(
            "--threshold cuts SAM's scores: it goes with --rank sam or --like",
            hint="BM25 hides nothing; -n N limits the results",
        )
    if exact and rank == "sam":
        raise UsageError("--exact and --rank sam do not go together", hint="--exact is a plain substring search")
    if rank == "bm25" and not exact and not like:
        plan = _parse(text, where)  # (a malformed query is a usage error before any store is looked at)
        where = where or plan.where
    elif not exact:
        _refuse_filters(text, "--like" if like else "--rank sam")
    from samctl.core.scope import READ, REWRITE

    scope = scope_of(ctx, REWRITE if touch else READ, what="search --touch" if touch else "search")
    stores, findings = scope.stores(), scope.findings
    if plan is not None and plan.stores:  # (store:NAME: the other stores are not even brought up to date)
        stores = [s for s in stores if s.name in plan.stores]
    if touch:
        from samctl.lock import ensure_app_idle

        memories = [s for s in stores if s.has_memories]
        if not memories:
            raise UsageError("--touch updates SAM memories; this is a " + stores[0].name + " store, which has none")
        for s in memories:
            ensure_app_idle(s, force=force)
    within = None
    if project_spec(project, here) is not None:  # the project's conversations, of the stores that have any
        from samctl.core.listing import project_members

        keep = project_members(stores, project_spec(project, here), findings)
        within = {id(s): {c for name, c in keep if name == s.name} for s in stores}
        stores = [s for s in stores if within[id(s)]]
    q = core.SearchQuery(
        text=text,
        conversations=tuple(conversations),
        where=where,
        limit=limit,
        threshold=0.3 if threshold is None else threshold,
        since=parse_when(since) if since is not None else None,
        until=parse_when(until, end=True) if until is not None else None,
        exact=exact,
        like=like,
        min_importance=min_importance,
        use_index=not no_index,
        rank=rank,
        per_conversation=per_conversation,
        by_conversation=by_conversation,
    )
    from samctl.cli.index import progress_printer

    progress = progress_printer(sys.stderr)
    notes: list = []
    try:
        hits = core.search(stores, q, findings, progress, plan, notes, within) if stores else []
    finally:
        if progress:
            progress.done()
    for line in notes:
        click.echo(line, err=True)
    if touch:
        for s in memories:  # (each SAM store its own memories, under its own lock)
            base = os.path.realpath(s.base)
            mine = [h for h in hits if h.kind == "memory" and h.source and safepaths.is_inside(base, h.source)]
            findings += _touch(s, mine, force, lock_wait, findings)
    if fmt == "json":
        emit_json(list(map(_row, hits)))
    elif fmt == "jsonl":
        emit_jsonl(map(_row, hits))
    elif by_conversation and hits:
        _conversation_lines(hits, len(stores) > 1)
    else:
        _table(hits, text, len(stores) > 1)
        if not hits:
            click.echo(_what_to_try(q), err=True)
    report_findings(findings)
    finish(findings)
    if not hits:  # as grep: `if samctl search ...` can be written (a problem above wins: exit 3)
        raise click.exceptions.Exit(errors.FAILED)


def _parse(text: str, where: str | None):
    """The parsed query (``search.query``); its in: and --in must agree."""
    from samctl.errors import UsageError
    from samctl.search import query as ql
    from samctl.stores import STORES

    plan = ql.parse(text, stores=tuple(STORES))
    if plan.where and where and plan.where != where:
        raise UsageError(f"the query says in:{plan.where} and the option --in {where}", hint="give one of them")
    if plan.is_empty():
        raise UsageError(
            "nothing to search for: the query has no word to rank or require",
            hint="add a word; filters (role:, in:, title:, store:, tool:) only narrow a search",
        )
    return plan


def _refuse_filters(text: str, option: str) -> None:
    """UsageError when a query for SAM's retrieval (``option``: --rank sam, --like) holds a filter: SAM reads
    the query as words, so role:, in:, title:, store: or tool: would be searched for, not obeyed."""
    from samctl.errors import UsageError
    from samctl.search import query as ql
    from samctl.stores import STORES

    names = {w.lstrip("+-").partition(":")[0].lower() for w in text.split() if ":" in w}
    if not names & set(ql.FILTERS):
        return  # (no filter: the query is not parsed, "-draft" is a word here)
    plan = ql.parse(text, stores=tuple(STORES))  # (a malformed filter: its own usage error)
    used = {"role:": plan.roles, "in:": plan.where, "title:": plan.titles, "store:": plan.stores, "tool:": plan.tools}
    named = [op for op, on in used.items() if on]
    if named:
        raise UsageError(
            f"{option} reads the query as words, as SAM does: {', '.join(named)} would not filter it",
            hint="--in and --conversation narrow it; or leave out " + option + " for the query's filters",
        )


def _what_to_try(q) -> str:
    """The hint after a search that found nothing: what would widen this search."""
    tries = []
    narrowing = [
        o
        for o, given in (
            ("--conversation", q.conversations),
            ("--in", q.where),
            ("--since", q.since),
            ("--until", q.until),
            ("--min-importance", q.min_importance),
        )
        if given
    ]
    if narrowing:
        tries.append("without " + ", ".join(narrowing))
    if q.exact:
        tries.append("fewer or shorter words, or a ranked search (without --exact)")
    elif q.like or q.rank == "sam":
        tries.append(f"a lower --threshold (now {q.threshold:g})")
    else:
        tries.append("other words, fewer required (+word) or excluded (-word) ones, or prefix*")
        tries.append("--exact for a plain substring")
    return "hint: try " + "; or ".join(tries)


def _touch(store, hits, force, lock_wait, findings) -> list:
    from samctl.attic.journal import settle_first
    from samctl.lock import ensure_app_idle, store_lock
    from samctl.search import dispatch as core

    with store_lock(store, lock_wait):
        ensure_app_idle(store, force=force)
        repaired, left = settle_first(store)  # interrupted moves first, as every writing command does
        n = core.touch(store, hits, findings)  # (a file it must not write: an error in findings)
    for line in repaired:
        click.echo(f"repaired: {line}", err=True)
    click.echo(f"touched {n} memor{'y' if n == 1 else 'ies'} (access_count + 1, last_accessed = now)", err=True)
    return left  # (what settling had to leave: findings of this run)


# A hit's fields that only SAM's scoring and memories fill: absent, not null, on the rows that have none
_SAM_ONLY = ("cosine", "boost", "dimension", "content_type", "importance")


def _row(h) -> dict:
    """One hit in search's JSON (docs/json.md)."""
    d = h.to_dict()
    for k in _SAM_ONLY:
        if d.get(k) is None:
            d.pop(k, None)
    return d


def _only(stores):
    """The one store of a list of one, else None."""
    return stores[0] if stores and len(stores) == 1 else None


def _table(hits, query: str, several: bool = False) -> None:
    from samctl.cli.common import run_of, suggest
    from samctl.safetext import one_line, quoted
    from samctl.timeparse import format_local

    if not hits:
        click.echo(f"no matches for {quoted(query)}" if query else "no matches", err=True)
        return
    from samctl.cli.common import clip, relative_date, short_ids, terminal_width

    width = terminal_width()
    tty = width is not None
    bold = tty and not os.environ.get("NO_COLOR")
    store = f"{'STORE':<12} " if several else ""
    # on a terminal: short ids under ID, a relative date, and no KIND column: a hit that is not a message
    # (a tool call, SAM's memories) says its kind in ROLE, so the title keeps the width
    kinds = not tty
    short = short_ids(h.conversation_id for h in hits) if tty else {}
    ctx = click.get_current_context()
    # a hit names its store by kind; the suggested command carries that store's --root when no other store
    # of the run is of the same kind, else every root of the run
    stores_by_kind: dict = {}
    for s in run_of(ctx).scope.found():
        stores_by_kind.setdefault(s.name, []).append(s)
    idw = max([8] + [len(v) for v in short.values()]) if tty else 36
    datew = 9 if tty else 16
    kind = f"{'KIND':<8} " if kinds else ""
    id_head = "ID" if tty else "CONVERSATION"
    out = [f"{'SCORE':<6} {store}{kind}{id_head:<{idw}}  {'DATE':<{datew}}  {'ROLE':<9}  TITLE"]
    for h in hits:
        score = "exact" if h.score is None and h.exact == "whole" else ("-" if h.score is None else f"{h.score:.3f}")
        store = f"{h.store:<12} " if several else ""
        kind = f"{h.kind:<8} " if kinds else ""
        role = h.role if kinds or h.kind == "message" else h.kind
        cid = short.get(h.conversation_id, h.conversation_id)
        date = relative_date(h.date_ts) if tty else format_local(h.date_ts)
        line = f"{score:<6} {store}{kind}{cid:<{idw}}  {date:<{datew}}  {(role or '-'):<9}  {one_line(h.title)}"
        out.append(clip(line, width) if width else line)
        out.append("       " + _snippet(h, width, bold, query))
        if h.context:
            out.append("       " + _clip("(found by the " + one_line(h.context) + ")", (width or 10**9) - 7))
        # (the suggested command: whole id, as pasted)
        if h.kind in ("message", "call") and h.position is not None and h.position >= 0:
            out.append(
                "       "
                + suggest(ctx, "show", h.conversation_id, _only(stores_by_kind.get(h.store)), rest=f"--at {h.position}")
            )
    click.echo("\n".join(out))


def _conversation_lines(hits, several: bool) -> None:
    """``search -l``: one line per conversation (its best hit's score, its hits, where the best is, its title),
    fitted to a terminal as ls is (short ids, relative dates, the title cut last); piped, every value whole."""
    from samctl.cli.common import fit_table, relative_date, short_ids, terminal_width
    from samctl.safetext import one_line
    from samctl.timeparse import format_local

    width = terminal_width()
    short = short_ids(h.conversation_id for h in hits) if width is not None else {}
    date = relative_date if width is not None else format_local
    rows: list = [
        (
            "-" if h.score is None else f"{h.score:.3f}",
            h.conversation_hits or 1,
            h.store if several else "",
            one_line(short.get(h.conversation_id, h.conversation_id)),
            h.position,
            date(h.date_ts),
            one_line(h.title),
        )
        for h in hits
    ]
    headers = ["SCORE", "HITS", "STORE", "ID" if width is not None else "CONVERSATION", "AT", "DATE", "TITLE"]
    if not several:
        rows, headers = [r[:2] + r[3:] for r in rows], headers[:2] + headers[3:]
    click.echo(fit_table(rows, headers, width))


def _snippet(h, width, bold: bool, query: str) -> str:
    """The hit's snippet on one line, clipped to the terminal, its matched words in bold."""
    import re

    from samctl.safetext import safe_text

    def one_line(piece: str) -> str:  # (whitespace made spaces one by one: the marks' offsets hold)
        return safe_text(re.sub(r"\s", " ", piece))

    text, marks = h.snippet, h.marks
    if marks is None:  # --exact, --rank sam, --like: the query's words as typed
        marks = _marks_of(text, query) if query.strip() else []
    room = (width - 7) if width else None
    pieces, at = [], 0
    for a, b in sorted(marks):
        if a < at:
            continue
        pieces.append((one_line(text[at:a]), False))
        pieces.append((one_line(text[a:b]), True))
        at = b
    pieces.append((one_line(text[at:]), False))
    out, used = [], 0
    for piece, hot in pieces:
        if room is not None and used + len(piece) > room:
            piece = piece[: max(0, room - used - 1)] + "…"
        out.append(click.style(piece, bold=True) if hot and bold and piece else piece)
        used += len(piece)
        if room is not None and used >= room:
            break
    return "".join(out)


def _marks_of(text: str, query: str) -> list:
    """(start, end) of the query's words in ``text``, case-insensitively (for --exact and --rank sam)."""
    import re

    words = sorted({w for w in query.lower().split() if len(w) > 2}, key=len, reverse=True)
    if not words:
        return []
    pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
    return [m.span() for m in pattern.finditer(text)]


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: max(1, n - 1)] + "…"
