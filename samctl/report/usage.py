"""``samctl usage``: tokens and estimated cost, grouped by day, week, month, session, project, model or block.

Data model: the stores' ``UsageRecord``s (``Store.usage_records``), of every store in scope that declares
``has_usage``.  Invariants:
- a response is counted once: of the records of one store sharing a ``key``, only the first (earliest file
  first, as the store yields them) counts; this is decided before any filter, so a filter never changes
  which copy is counted;
- ``total_tokens`` = input + output + cache creation + cache read (reasoning tokens are part of output where
  recorded, shown on their own, never added twice);
- cost is an estimate from a price table (``samctl/prices.json``, or ``--prices FILE``); a model the table
  does not know makes its tokens' cost unknown (None), never 0; a row whose cost is partly unknown has
  ``cost_usd`` None and says which models in ``unpriced_models``;
- days, weeks and months are in local time (as ccusage's); a block is ccusage's 5-hour window: it starts at
  the UTC hour of its first record and ends 5 hours later; the next record more than 5 hours after the
  block's start, or after the record before it, opens a new block.
No click, no printing, offline: nothing here opens a network connection.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from samctl.errors import FileProblem, UsageError
from samctl.fs import reading

GROUPS = ("day", "week", "month", "session", "project", "model", "block")
ROW_KEY = {
    "day": "day",
    "week": "week",
    "month": "month",
    "session": "session",
    "project": "project",
    "model": "model",
    "block": "block_start",
}
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens", "reasoning_tokens")
PRICE_FIELDS = ("input", "output", "cache_write", "cache_read")
BLOCK_SECONDS = 5 * 3600
PRICES_CAP = 4 << 20
_DATE_SUFFIX = re.compile(r"(?:-|@)(?:\d{8}|\d{4}-\d{2}-\d{2})\Z")


@dataclass
class UsageQuery:
    by: str = "day"
    since: float | None = None
    until: float | None = None
    stores: tuple = ()  # store names; () = every store in scope
    project: str | None = None  # rows whose project contains this text
    model: str | None = None  # rows whose model contains this text (case-insensitive)
    breakdown: bool = False


@dataclass
class Prices:
    models: dict  # model -> {input, output, cache_write, cache_read} in dollars per million tokens
    taken: str | None = None
    source: str | None = None
    path: str | None = None

    def of(self, model: str | None) -> dict | None:
        """The prices of ``model``: exactly, else without a provider prefix (``anthropic/``) or a date
        suffix (``-20250929``); None when unknown (never a guess from a similar name)."""
        if not model:
            return None
        for name in (model, model.rsplit("/", 1)[-1]):
            for n in (name, _DATE_SUFFIX.sub("", name)):
                p = self.models.get(n)
                if p is not None:
                    return p
        return None


def shipped_prices_path() -> Path:
    return Path(__file__).resolve().parent.parent / "prices.json"


def load_prices(path: str | None = None) -> Prices:
    """The price table: samctl's own, or ``path`` (same layout: {"taken", "source", "models": {model: {input,
    output, cache_write, cache_read}}}).  UsageError for a file that cannot be read or has a bad price."""
    where = str(path) if path is not None else str(shipped_prices_path())
    try:
        doc = orjson.loads(reading.read_capped(where, PRICES_CAP))
    except FileProblem as exc:
        raise UsageError(f"--prices {where}: {exc.message}") from None
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"--prices {where}: not JSON ({str(exc).splitlines()[0][:100]})") from None
    models = doc.get("models") if isinstance(doc, dict) else None
    if not isinstance(models, dict):
        raise UsageError(
            f'--prices {where}: no "models" object (model -> input, output, cache_write, cache_read '
            "in dollars per million tokens)"
        )
    out = {}
    for name, p in models.items():
        if not isinstance(p, dict):
            raise UsageError(f"--prices {where}: {name[:80]!r} is not an object of prices")
        row = {}
        for k in PRICE_FIELDS:
            v = p.get(k, 0 if k == "cache_write" else None)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v < 1e6:
                raise UsageError(
                    f"--prices {where}: {name[:80]!r}: {k} must be a number of dollars per million tokens, 0 or more"
                )
            row[k] = float(v)
        out[name] = row
    taken, source = doc.get("taken"), doc.get("source")
    return Prices(out, taken if isinstance(taken, str) else None, source if isinstance(source, str) else None, where)


@dataclass
class Totals:
    """Sums of one row (and, with a breakdown, of each model in it)."""

    tokens: list = field(default_factory=lambda: [0, 0, 0, 0, 0])
    cost: float = 0.0
    unpriced: set = field(default_factory=set)
    models: dict | None = None
    first: float | None = None
    last: float | None = None
    extra: dict = field(default_factory=dict)

    def add(self, model, part: list, price, breakdown: bool) -> None:
        """Add ``part`` (``_sums``: the five token sums, first and last time) of one model's records."""
        t = self.tokens
        for n in range(5):
            t[n] += part[n]
        c = cost_of(part, price)
        if c is None:
            self.unpriced.add(model or "unknown")
        else:
            self.cost += c
        if self.first is None or part[5] < self.first:
            self.first = part[5]
        if self.last is None or part[6] > self.last:
            self.last = part[6]
        if breakdown:
            if self.models is None:
                self.models = {}
            m = self.models.get(model or "unknown")
            if m is None:
                m = self.models[model or "unknown"] = Totals()
            m.add(model, part, price, False)

    def merge(self, other: Totals) -> None:
        """Add ``other``'s sums (not its breakdown) to these."""
        self.tokens = [a + b for a, b in zip(self.tokens, other.tokens)]
        self.cost += other.cost
        self.unpriced |= other.unpriced
        if other.first is not None:
            self.first = other.first if self.first is None else min(self.first, other.first)
            self.last = other.last if self.last is None or other.last is None else max(self.last, other.last)

    def to_dict(self) -> dict:
        d = dict(zip(TOKEN_FIELDS, self.tokens))
        d["total_tokens"] = sum(self.tokens[:4])
        d["cost_usd"] = None if self.unpriced else round(self.cost, 6)
        if self.unpriced:
            d["unpriced_models"] = sorted(self.unpriced)
            d["priced_cost_usd"] = round(self.cost, 6)
        return d


def cost_of(tokens, price) -> float | None:
    """Dollars for ``tokens`` (input, output, cache write, cache read, ...) of one model; None when the model
    has no price (and any tokens were used).  Cost is linear in tokens: the cost of sums is the sum of costs."""
    i, o, cw, cr = tokens[0], tokens[1], tokens[2], tokens[3]
    if price is None:
        return 0.0 if not (i or o or cw or cr) else None
    return (i * price["input"] + o * price["output"] + cw * price["cache_write"] + cr * price["cache_read"]) / 1e6


def _sums(groups: dict, k, r) -> None:
    """Add record ``r`` to ``groups[(k, model)]``: [input, output, cache write, cache read, reasoning, first, last]."""
    g = groups.get((k, r.model))
    if g is None:
        groups[(k, r.model)] = [r.input, r.output, r.cache_creation, r.cache_read, r.reasoning, r.ts, r.ts]
        return
    g[0] += r.input
    g[1] += r.output
    g[2] += r.cache_creation
    g[3] += r.cache_read
    g[4] += r.reasoning
    if r.ts < g[5]:
        g[5] = r.ts
    elif r.ts > g[6]:
        g[6] = r.ts


def counted(records):
    """The records to count: each ``(store, key)`` once, the first as given."""
    seen: set = set()
    for r in records:
        if r.key is not None:
            k = (r.store, r.key)
            if k in seen:
                continue
            seen.add(k)
        yield r


def collect(stores, findings: list) -> list:
    """Every record of every store that records usage, each response once (``counted``)."""
    out: list = []
    for store in stores:
        if getattr(store, "has_usage", False):
            out.extend(counted(store.usage_records(findings)))
    return out


def keep(r, q: UsageQuery) -> bool:
    if q.since is not None and r.ts < q.since:
        return False
    if q.until is not None and r.ts > q.until:
        return False
    if q.stores and r.store not in q.stores:
        return False
    if q.project is not None and q.project not in (r.project or ""):
        return False
    if q.model is not None and q.model.lower() not in (r.model or "unknown").lower():
        return False
    return True


class _Local:
    """Local day of an epoch second, memoised per quarter hour (every time zone's offset is a whole number of
    quarter hours, so one quarter hour never spans two local days)."""

    def __init__(self):
        self.days: dict = {}

    def day(self, ts: float) -> str:
        q = int(ts // 900)
        d = self.days.get(q)
        if d is None:
            d = self.days[q] = time.strftime("%Y-%m-%d", time.localtime(q * 900))
        return d


def _week(day: str) -> str:
    y, w, _ = date.fromisoformat(day).isocalendar()
    return f"{y}-W{w:02d}"


def blocks(records) -> list:
    """ccusage's 5-hour blocks over ``records`` (sorted here): (start, end, records of it)."""
    out: list = []
    cur = None
    for r in sorted(records, key=lambda r: r.ts):
        if cur is None or r.ts - cur[0] > BLOCK_SECONDS or r.ts - cur[2][-1].ts > BLOCK_SECONDS:
            start = r.ts - r.ts % 3600
            cur = [start, start + BLOCK_SECONDS, []]
            out.append(cur)
        cur[2].append(r)
    return out


def iso_utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def report(records: list, q: UsageQuery, prices: Prices) -> dict:
    """{"by", "key", "rows": [row dicts, ordered by key], "totals": dict, "prices": {...}} of ``records``."""
    if q.by not in GROUPS:
        raise UsageError(f"--by must be one of {', '.join(GROUPS)}")
    filtered = q.since is not None or q.until is not None or q.stores or q.project is not None or q.model is not None
    recs = [r for r in records if keep(r, q)] if filtered else records
    price_memo: dict = {}

    def price(model):
        p = price_memo.get(model, price_memo)
        if p is price_memo:
            p = price_memo[model] = prices.of(model)
        return p

    rows: dict = {}
    groups: dict = {}  # (row key, model) -> _sums
    extra: dict = {}
    total = Totals()
    k: str | tuple[str, str]  # a row's key (a session is named by its store too)
    if q.by == "block":
        for start, end, rs in blocks(recs):
            k = iso_utc(start)
            extra[k] = {"block_end": iso_utc(end)}
            for r in rs:
                _sums(groups, k, r)
    else:
        local = _Local()
        by = q.by
        for r in recs:
            if by == "day":
                k = local.day(r.ts)
            elif by == "month":
                k = local.day(r.ts)[:7]
            elif by == "week":
                k = _week(local.day(r.ts))
            elif by == "session":
                k = (r.store, r.session)
                if k not in extra:
                    extra[k] = {"store": r.store, "project": r.project}
            elif by == "project":
                k = r.project or "unknown"
            else:
                k = r.model or "unknown"
            _sums(groups, k, r)
    for (k, model), part in groups.items():
        t = rows.get(k)
        if t is None:
            t = rows[k] = Totals(extra=extra.get(k, {}))
        t.add(model, part, price(model), q.breakdown)
    for t in rows.values():
        total.merge(t)
    key = ROW_KEY[q.by]
    out = []
    order = sorted(rows, key=lambda k: rows[k].last or 0) if q.by == "session" else sorted(rows)
    for k in order:
        t = rows[k]
        d: dict[str, Any] = {key: k[1] if q.by == "session" else k}
        d.update(t.extra)
        if q.by in ("session", "project", "model", "block"):
            d["first_activity"], d["last_activity"] = iso_utc(t.first), iso_utc(t.last)
        d.update(t.to_dict())
        if t.models is not None:
            d["models"] = [{"model": m, **mt.to_dict()} for m, mt in sorted(t.models.items())]
        out.append(d)
    return {
        "by": q.by,
        "key": key,
        "rows": out,
        "totals": total.to_dict(),
        "prices": {"taken": prices.taken, "source": prices.source, "file": prices.path},
    }
