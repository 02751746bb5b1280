"""Value formats shared by SAM's SQLite files (``memory.db``, ``context_archive.db``).

- Dates (sam.md §7.3): ``yyyy-MM-dd'T'HH:mm:ss.SSS``, UTC, no zone.  ``parse_db_date`` is as strict
  as SAM's formatter (SAM crashes on a date it cannot parse) and ``format_db_date`` truncates
  milliseconds like sam.md §15.3; ``format_db_date(parse_db_date(s)) == s`` for every valid ``s``.
- UUIDs: canonical 8-4-4-4-12 hex in either case (what Swift's UUID parses); SAM writes uppercase.
- ``APPLE_EPOCH``: Foundation's reference date, the origin of ``context_archive.db``'s message
  ``timestamp`` (a Double of seconds since 2001-01-01 UTC, sam.md §8).

Pure: no I/O, no samctl imports.
"""

from __future__ import annotations

import math
import re
import time
from datetime import datetime, timedelta, timezone
from functools import lru_cache

APPLE_EPOCH = 978307200.0  # 2001-01-01T00:00:00Z in Unix seconds (Foundation's reference date)
_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# the one UUID form of the SAM modules (store, schema, databases): what Swift's UUID(uuidString:) parses
UUID_RE = re.compile(r"\A[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}\Z")


def format_db_date(when: float | datetime | None = None) -> str:
    """``yyyy-MM-dd'T'HH:mm:ss.SSS`` in UTC for a Unix time (float seconds) or an aware datetime.

    Milliseconds are truncated, as in sam.md §15.3 (``dt.microsecond // 1000``), except that a float
    within rounding noise of a whole millisecond counts as that millisecond, so that
    ``format_db_date(parse_db_date(s)) == s`` for every valid ``s``.  None means now.
    """
    if when is None:
        when = time.time()
    if isinstance(when, datetime):
        dt = when.astimezone(timezone.utc) if when.tzinfo else when.replace(tzinfo=timezone.utc)
        dt = dt.replace(microsecond=dt.microsecond // 1000 * 1000)
    else:
        x = float(when) * 1000.0
        n = round(x)
        ms = n if abs(x - n) <= max(1e-6, abs(x) * 1e-15) else math.floor(x)
        dt = _UNIX_EPOCH + timedelta(milliseconds=ms)
    # not strftime: glibc's %Y does not pad years below 1000 to four digits
    return (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}."
        f"{dt.microsecond // 1000:03d}"
    )


@lru_cache(maxsize=4096)
def _day_seconds(day: str) -> int | None:
    """Unix seconds at 00:00 UTC of ``yyyy-MM-dd`` (already matched by _DATE_RE), None if no such day."""
    try:
        d = datetime(int(day[0:4]), int(day[5:7]), int(day[8:10]), tzinfo=timezone.utc)
    except ValueError:
        return None
    return (d - _UNIX_EPOCH).days * 86400


def parse_db_date(s) -> float | None:
    """Unix seconds of a strict ``yyyy-MM-dd'T'HH:mm:ss.SSS`` UTC string; None for anything else.

    Strict like SAM's formatter: ASCII digits only, exactly three fraction digits, no zone, no
    spaces, a real calendar date and time.  (SAM crashes on a date it cannot parse, sam.md §7.3.)
    """
    if not isinstance(s, str) or not _DATE_RE.match(s):
        return None
    day = _day_seconds(s[:10])
    if day is None:
        return None
    return day + int(s[11:13]) * 3600 + int(s[14:16]) * 60 + int(s[17:19]) + int(s[20:23]) / 1000


def is_uuid(s) -> bool:
    """True for a canonical 8-4-4-4-12 hex UUID string in either case (what Swift's UUID parses)."""
    return isinstance(s, str) and UUID_RE.match(s) is not None
