"""samctl index: the state of the search index, and rebuilding it."""

from __future__ import annotations

import sys
import time

import click

from samctl.cli.common import (
    emit_json,
    examples,
    exit_for,
    exit_with,
    human_size,
    report_findings,
    say_failed,
    say_skipped,
    scope_of,
    shown,
)
from samctl.core.scope import Outcome


class _Progress:
    """A one-line progress report on a terminal: ``indexing: 120/10000 files, 11,940 rows``."""

    def __init__(self, stream, interval: float, delay: float):
        self.stream = stream
        self.interval = interval
        self.start = time.monotonic()
        self.delay = delay
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int, rows: int) -> None:
        now = time.monotonic()
        if now - self.start < self.delay or (now - self.last < self.interval and done < total):
            return  # quick refreshes stay silent; long builds report a few times a second
        self.last = now
        pct = f" ({100 * done // total}%)" if total else ""
        self.stream.write(f"\rindexing: {done:,}/{total:,} files{pct}, {rows:,} rows\x1b[K")
        self.stream.flush()
        self.shown = True

    def note(self, text: str) -> None:
        self.stream.write(f"\r{text}\x1b[K")
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def progress_printer(stream, interval: float = 0.2, delay: float = 0.5):
    """A progress callback for index builds that writes to ``stream`` if it is a terminal, else None.

    Nothing is shown during the first ``delay`` seconds, then at most every ``interval`` seconds.
    """
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return _Progress(stream, interval, delay) if tty else None


@click.command("index")
@click.option("--rebuild", is_flag=True, help="Build the index again from every file of the store.")
@click.option("--update", is_flag=True, help="Bring the index up to date now (what a search does first).")
@click.option(
    "--compact",
    is_flag=True,
    help="Bring the index up to date, then rewrite its segments that hold superseded rows and merge its "
    "small ones: searches pass over no superseded row. No file is read again for it.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("text", "json")),
    default="text",
    show_default=True,
    help="json is a stable interface.",
)
@examples(
    "samctl index",
    "samctl index --update      # e.g. from cron, so that searches start warm",
    "samctl index --compact     # after many changes: drop what they superseded",
    "samctl index --rebuild --format json",
)
@click.pass_context
def command(ctx, rebuild, update, compact, fmt):
    """Show the state of samctl's search index of each store: rows, files, size, age, and the
    files that changed since it was updated (the next search re-reads just those).

    The index lives in samctl's cache folder, one per store. It is disposable: a corrupt,
    foreign or outdated one is rebuilt, and deleting it costs only time. Showing the state also
    checks every byte of it against its checksums, and drops an index that fails.
    """
    from samctl.errors import UsageError

    if rebuild and (update or compact):
        raise click.UsageError(
            f"give --{'update' if update else 'compact'} or --rebuild, not both (--rebuild reads every file "
            "and writes the index anew anyway)"
        )
    scope = scope_of(ctx)
    stores = scope.stores()
    if not scope.cache:
        raise UsageError(
            "the index is a cache, and --no-cache turns caches off",
            hint="leave out --no-cache (searches with --no-cache read the files directly)",
        )
    several = len(stores) > 1
    skipped = []
    if several:  # (a store samctl keeps no index of, e.g. an export read whole each time, is left out)
        skipped = [(s, _NO_INDEX) for s in stores if not s.use_cache and not s.cache_note]
        stores = [s for s in stores if s.use_cache or s.cache_note]
    skipped = say_skipped(ctx, skipped, fmt)
    findings: list = []

    def one(store):
        if several and fmt == "text":
            click.echo(f"== {store.describe()}", err=True)
        return _one(store, rebuild, update, compact, fmt, findings)

    # (one store: its errors raised as they always were; of several, one failing is reported)
    outcomes = scope.run(one, stores) if several else [Outcome(stores[0], "done", value=one(stores[0]))]
    say_failed(outcomes)
    if fmt == "json":
        emit_json(
            {
                "stores": [_dated(o.value) for o in outcomes if o.status == "done"],
                "findings": [dict(f.to_dict(), store=s.name) for s, f in findings]
                + [dict(f.to_dict(), store=None) for f in scope.findings],
                "skipped": skipped,
            }
        )
    else:
        report_findings([f for _, f in findings] + scope.findings)
    exit_with(scope.exit_code(outcomes, partial=bool(exit_for([f for _, f in findings]))))


def _dated(st: dict) -> dict:
    """An index's state with its times as every JSON document of samctl gives them: UTC, ISO 8601."""
    from samctl.timeparse import format_utc

    return dict(st, created=format_utc(st["created"]), updated=format_utc(st["updated"]))


_NO_INDEX = "samctl keeps no index of it (a search reads its files directly)"


def _one(store, rebuild: bool, update: bool, compact: bool, fmt: str, findings: list) -> dict:
    """One store's index: its state (text: shown here), after an update when asked; what the files read
    meanwhile said goes to ``findings`` as (store, finding)."""
    from samctl.errors import SamctlError, UsageError
    from samctl.search import index as ix

    if store.cache_note:
        raise SamctlError("the index lives in samctl's cache folder, which this run cannot use (above)")
    if not store.use_cache:
        raise UsageError(
            "the index is a cache, and samctl keeps none for this store (a search reads its files directly)"
        )
    if rebuild or update or compact:
        progress = progress_printer(sys.stderr)
        found: list = []
        try:
            idx = ix.refresh(store, found, rebuild=rebuild, progress=progress, compact=compact)
        except ix.BadIndex as exc:
            raise SamctlError(f"could not write the index: {exc}") from None
        finally:
            if progress:
                progress.done()
        findings += [(store, f) for f in found]
        if fmt == "text":
            what = (
                "rebuilt" if idx.rebuilt else (f"updated: {len(idx.read)} files read again, {len(idx.removed)} removed")
            )
            if compact:
                n, dead = idx.compacted
                what += (
                    f"; compacted: {n} segment{'s' if n != 1 else ''} rewritten, {dead:,} superseded rows dropped"
                    if n
                    else "; nothing to compact"
                )
            click.echo(f"index {what}", err=True)
    st = ix.state(store)
    if compact:
        n, dead = idx.compacted
        st["compacted"] = {"segments": n, "superseded_rows": dead}
    if st["exists"] and st["problems"]:
        ix.invalidate(store)  # never trusted: dropped now, rebuilt by the next search
        st["dropped"] = True
    if fmt == "text":
        click.echo(_text(st))
    return st


def _ago(seconds) -> str:
    if seconds is None:
        return "-"
    for unit, n in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= n:
            k = int(seconds // n)
            return f"{k} {unit}{'s' if k != 1 else ''} ago"
    return "just now"


def _text(st: dict) -> str:
    from samctl.said import Suggestion, said
    from samctl.timeparse import format_local

    root = str(st["root"])  # (the suggested commands name this store's --root when the run named it)
    lines = [f"index:    {st['path']}"]
    if not st["exists"]:
        lines.append(
            shown(
                said("state:    not built yet (the next search builds it; or `", Suggestion("index --update"), "`)"),
                root,
            )
        )
        return "\n".join(lines)
    if st["problems"]:
        lines.append("state:    could not be used and was dropped; the next search rebuilds it:")
        lines += [f"          {p}" for p in st["problems"][:10]]
    else:
        lines.append("state:    ok (every byte matches its checksum)")
    rows = st["rows"]
    lines.append(
        f"rows:     {sum(rows.values()):,} ({rows['memory']:,} memories, {rows['message']:,} messages, "
        f"{rows['archived']:,} archived messages); {st['dead']:,} superseded, awaiting compaction"
    )
    lines.append(
        shown(
            said(
                f"files:    {st['files']:,} indexed, {st['files_with_findings']:,} with problems (`",
                Suggestion("check"),
                "`)",
            ),
            root,
        )
    )
    lines.append(f"size:     {human_size(st['size'])} in {st['segments']} segment{'s' if st['segments'] != 1 else ''}")
    lines.append(f"updated:  {format_local(st['updated'])} ({_ago(st['age'])}); built {format_local(st['created'])}")
    stale = st["stale"]
    if not stale:
        lines.append("stale:    none, up to date")
    else:
        n = len(stale)
        lines.append(
            f"stale:    {n} file{' changed' if n == 1 else 's changed'} since (the next search reads "
            f"{'it' if n == 1 else 'them'} again):"
        )
        lines += [f"          {s['key']} ({s['reason']})" for s in stale[:20]]
        if n > 20:
            lines.append(f"          … and {n - 20} more (--format json lists all)")
    return "\n".join(lines)
