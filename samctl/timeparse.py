"""Parsing of the timestamps both stores write, and of user-given dates/ages.

Stored timestamps are kept verbatim everywhere; these functions only turn them
into float epoch seconds for sorting and filtering.  They never raise on bad
input: unparseable values give None.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone, tzinfo

from samctl.errors import UsageError
from samctl.safetext import quoted

# RFC 3339 / ISO-8601 with any fraction width (mermaid writes 0/3/6/9 digits,
# SAM writes none, SQLite.swift writes 3 and no zone).
_TS_RE = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|z|[+-]\d\d:?\d\d)?\Z")


_OFFSETS: dict = {}


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    """(year, month, day) of a count of days since 1970-01-01 (the inverse of ``days_from_civil``)."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (m <= 2), m, d


_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def parse_timestamp(s, naive_tz=timezone.utc) -> float | None:
    """Epoch seconds of an RFC 3339 string (fraction of any width), or None.

    Plain integer arithmetic rather than datetime objects: ``ls`` parses one
    timestamp per conversation, and 100,000 of them must cost little.  With the
    default ``naive_tz`` the answer depends on ``s`` alone, so it is memoised
    (``_SEEN``): loading a mermaid session checks each timestamp, then reads it.
    """
    if type(s) is not str:
        return None
    if naive_tz is timezone.utc and len(s) <= _SEEN_LEN:
        v = _SEEN.get(s, _MISS)
        if v is _MISS:
            if len(_SEEN) >= _SEEN_MAX:
                _SEEN.clear()  # (bounded: a long session only parses its timestamps twice)
            v = _SEEN[s] = _parse(s, naive_tz)
        return v
    return _parse(s, naive_tz)


_SEEN: dict = {}  # string -> parse_timestamp(string) with the default (UTC) naive zone
_SEEN_MAX = 1 << 15
_SEEN_LEN = 64  # longer strings (a fraction of many digits) are parsed each time, never kept
_MISS = object()
_MINUTES: dict = {}  # "YYYY-MM-DD?HH:MM" (as matched) -> epoch seconds of that UTC minute, or None for none
_POW10 = tuple(10**n for n in range(10))


def _minute(s: str):
    """Epoch seconds of the minute ``s[:16]`` names (read as UTC) in a string that matched _TS_RE, or None
    if that day or time does not exist (memoised: the timestamps of one session share few minutes)."""
    key = s[:16]
    v = _MINUTES.get(key, _MISS)
    if v is _MISS:
        y, mo, d, h, mi = int(s[0:4]), int(s[5:7]), int(s[8:10]), int(s[11:13]), int(s[14:16])
        ok = (
            1 <= mo <= 12
            and 1 <= d <= _MONTH_DAYS[mo - 1]
            and h < 24
            and mi < 60
            and y >= 1
            and not (mo == 2 and d == 29 and not (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)))
        )
        if len(_MINUTES) >= _SEEN_MAX:
            _MINUTES.clear()
        v = _MINUTES[key] = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 if ok else None
    return v


def _parse(s: str, naive_tz) -> float | None:
    if len(s) > 1024:  # (chrono takes any number of fraction digits)
        return None
    m = _TS_RE.match(s)
    if m is None:
        return None
    # Every field up to the seconds is a fixed number of \d, each one character: sliced, not grouped.
    minute = _MINUTES.get(s[:16], _MISS)
    if minute is _MISS:
        minute = _minute(s)
    sec = int(s[17:19])
    if minute is None or sec > 60:
        return None
    if len(s) == 20:  # no fraction, and a one-letter zone: Z or z (SAM's own form)
        return minute + sec + 0.0
    frac, zone = m.group(7, 8)
    if zone is None:
        try:
            offset = naive_tz.utcoffset(
                datetime(int(s[0:4]), int(s[5:7]), int(s[8:10]), int(s[11:13]), int(s[14:16]), min(sec, 59))
            ).total_seconds()
        except (ValueError, OverflowError):
            return None
    elif zone == "Z" or zone == "z":
        offset = 0
    else:
        offset = _OFFSETS.get(zone)
        if offset is None:
            digits = zone[1:].replace(":", "")
            hh, mm = int(digits[:2]), int(digits[2:])
            if hh > 23 or mm > 59:
                return None
            offset = _OFFSETS[zone] = (-1 if zone[0] == "-" else 1) * (hh * 3600 + mm * 60)
    secs = minute + sec - offset
    if not frac:
        return secs + 0.0
    frac = frac[:9]  # digits past the nanosecond are skipped as chrono does (mermaid.md §2.7)
    return secs + int(frac) / _POW10[len(frac)]


_AGE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w|y)\Z")
_MONTHS_RE = re.compile(r"\s*\d+(?:\.\d+)?\s*M\s*")  # months to restic and borg: refused
_AGE_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_age(text: str) -> float:
    """Seconds in an age like ``90d``, ``12h``, ``2w``; raises UsageError.  Units are read in
    either case, except ``M``: in restic and borg it is months, so ``6M`` is refused, never six
    minutes."""
    if _MONTHS_RE.fullmatch(text):
        raise UsageError(
            f"{_quoted(text)} is ambiguous: samctl's m is minutes, and it has no months",
            hint=f"write {text.strip()[:-1].strip()}m for minutes, or days (180d is about six months)",
        )
    m = _AGE_RE.match(text.strip().lower())
    if not m:
        raise UsageError(f"{_quoted(text)} is not an age", hint="write it like 30m, 12h, 7d, 2w or 1y")
    return float(m.group(1)) * _AGE_UNITS[m.group(2)]


class _LocalZone(tzinfo):
    """The system's local time, daylight saving included, at the instant a naive local time names
    (a fixed offset, today's, would put a summer date-time an hour off in winter)."""

    def utcoffset(self, dt):
        naive = dt.replace(tzinfo=None)
        try:
            return naive - datetime.fromtimestamp(naive.timestamp(), timezone.utc).replace(tzinfo=None)
        except OSError as exc:  # (a year the platform's mktime cannot take)
            raise ValueError(str(exc)) from None

    def dst(self, dt):
        return None

    def tzname(self, dt):
        return None


def parse_when(text: str, now: float | None = None, end: bool = False) -> float:
    """Epoch seconds for ``--since/--until``: an age (``7d``), a date, or a datetime.

    Dates and times without a zone are local time, as a person typing them means
    (with the daylight-saving rule of that date).  A bare date is its first instant,
    or with ``end`` (``--until``) its last: ``--until 2026-06-30`` includes June 30.
    """
    now = time.time() if now is None else now
    t = text.strip()
    if _AGE_RE.match(t.lower()) or _MONTHS_RE.fullmatch(t):
        return now - parse_age(t)
    if re.fullmatch(r"\d{4}-\d\d-\d\d", t):
        try:
            day = datetime.strptime(t, "%Y-%m-%d")
            if not end:
                return day.timestamp()
            return (day + timedelta(days=1)).timestamp() - 1e-6  # (local midnight: DST-aware)
        except (ValueError, OverflowError):
            pass
    else:
        v = parse_timestamp(t, naive_tz=_LocalZone())
        short = re.fullmatch(r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d)(Z|[+-]\d\d:\d\d)?", t)
        if v is None and short:  # no seconds: 2026-08-01T14:00, also with a zone
            v = parse_timestamp(short.group(1) + ":00" + (short.group(2) or ""), naive_tz=_LocalZone())
        if v is not None:
            return v
    raise UsageError(
        f"{_quoted(text)} is not a date or an age",
        hint="use an age like 7d or 12h, a date like 2026-08-01, or 2026-08-01T14:00",
    )


_YEAR_10000 = 253402300800  # epoch seconds of 10000-01-01: %Y writes four digits up to there
_DAY_TEXT: dict[int, str] = {}  # days since the epoch -> "YYYY-MM-DDT" (a listing spans few days, each met often)
_TWO_DIGITS = [f"{i:02d}" for i in range(60)]


def format_utc(ts: float | None) -> str | None:
    """ISO 8601 UTC: whole seconds as stored by SAM's JSON, milliseconds when there are any."""
    if ts is None:
        return None
    if 0 <= ts < _YEAR_10000 and ts == int(ts):  # whole seconds (SAM's own): no datetime, each day's text once
        days, secs = divmod(int(ts), 86400)
        day = _DAY_TEXT.get(days)
        if day is None:
            if len(_DAY_TEXT) >= 1 << 16:
                _DAY_TEXT.clear()
            day = _DAY_TEXT[days] = time.strftime("%Y-%m-%dT", time.gmtime(days * 86400))
        hours, secs = divmod(secs, 3600)
        minutes, secs = divmod(secs, 60)
        return f"{day}{_TWO_DIGITS[hours]}:{_TWO_DIGITS[minutes]}:{_TWO_DIGITS[secs]}Z"
    try:
        dt = datetime.fromtimestamp(ts, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    spec = "seconds" if dt.microsecond // 1000 == 0 else "milliseconds"
    return dt.isoformat(timespec=spec).replace("+00:00", "Z")


def format_local(ts: float | None) -> str:
    """A short local date-time for tables: ``2026-08-10 14:03``."""
    if ts is None:
        return "-"
    try:
        return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return "-"


def _quoted(text) -> str:
    return quoted(text)
