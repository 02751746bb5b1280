"""samctl index: the state of the search index, and rebuilding it."""

from __future__ import annotations

import sys
import time

import click

from samctl.cli.common import emit_json, examples, finish, human_size, paste, report_findings, scope_of


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
    "samctl index --rebuild --format json",
)
@click.pass_context
def command(ctx, rebuild, update, fmt):
    """Show the state of samctl's search index of each store: rows, files, size, age, and the
    files that changed since it was updated (the next search re-reads just those).

    The index lives in samctl's cache folder, one per store. It is disposable: a corrupt,
    foreign or outdated one is rebuilt, and deleting it costs only time. Showing the state also
    checks every byte of it against its checksums, and drops an index that fails.
    """
    from samctl.errors import SamctlError

    if rebuild and update:
        raise click.UsageError("give --update or --rebuild, not both (--rebuild reads every file anyway)")
    scope = scope_of(ctx)
    stores = scope.stores()
    if len(stores) == 1:
        return _one(stores[0], rebuild, update, fmt, cache=scope.cache)
    docs, code = [], 0  # every store's index, one after the other (json: one document each, in a list)
    for store in stores:
        if fmt == "text":
            click.echo(f"== {store.describe()}", err=True)
        try:
            docs.append(dict(_one(store, rebuild, update, fmt, several=True, cache=scope.cache), store=store.name))
        except click.exceptions.Exit as exc:
            code = code or exc.exit_code
        except SamctlError as exc:
            from samctl.cli import report_error

            report_error(exc)
            code = code or exc.exit_code
    if fmt == "json":
        emit_json(docs)
    if code:
        raise click.exceptions.Exit(code)


def _one(store, rebuild: bool, update: bool, fmt: str, several: bool = False, cache: bool = True) -> dict:
    """One store's index: its state shown (json: printed here only for one store), after an update when asked."""
    from samctl.errors import SamctlError, UsageError
    from samctl.search import index as ix

    if store.cache_note:
        raise SamctlError("the index lives in samctl's cache folder, which this run cannot use (above)")
    if not store.use_cache:
        raise UsageError(
            "the index is a cache, and "
            + (
                "--no-cache turns caches off"
                if not cache
                else "samctl keeps none for this store (a search reads its files directly)"
            ),
            hint="leave out --no-cache (searches with --no-cache read the files directly)" if not cache else None,
        )
    if rebuild or update:
        progress = progress_printer(sys.stderr)
        findings: list = []
        try:
            idx = ix.refresh(store, findings, rebuild=rebuild, progress=progress)
        except ix.BadIndex as exc:
            raise SamctlError(f"could not write the index: {exc}") from None
        finally:
            if progress:
                progress.done()
        if fmt == "text":
            what = (
                "rebuilt" if idx.rebuilt else (f"updated: {len(idx.read)} files read again, {len(idx.removed)} removed")
            )
            click.echo(f"index {what}", err=True)
    st = ix.state(store)
    if st["exists"] and st["problems"]:
        ix.invalidate(store)  # never trusted: dropped now, rebuilt by the next search
        st["dropped"] = True
    if fmt == "json":
        if not several:
            emit_json(st)
    else:
        click.echo(paste(_text(st)))
    if rebuild or update:  # what the files read meanwhile said, as search says it
        report_findings(findings)
        finish(findings)
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
    from samctl.timeparse import format_local

    lines = [f"index:    {st['path']}"]
    if not st["exists"]:
        lines.append("state:    not built yet (the next search builds it; or `samctl index --update`)")
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
    lines.append(f"files:    {st['files']:,} indexed, {st['files_with_findings']:,} with problems (`samctl check`)")
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
