"""--since/--until: what a person typing a date or a local time means."""

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from samctl.errors import UsageError
from samctl.timeparse import format_utc, parse_when

NOV = datetime(2026, 11, 30, 12, tzinfo=timezone.utc).timestamp()  # "now": winter time in New York


@pytest.fixture
def new_york(zone):
    zone("America/New_York")


def _utc(*args) -> float:
    return datetime(*args, tzinfo=timezone.utc).timestamp()


def test_a_summer_local_time_typed_in_winter_keeps_its_summer_offset(new_york):
    """2026-08-10 10:02 in New York is EDT (UTC-4), whatever the offset is on the day it is typed."""
    assert parse_when("2026-08-10T10:02", now=NOV) == _utc(2026, 8, 10, 14, 2)
    assert parse_when("2026-08-10 10:02:30", now=NOV) == _utc(2026, 8, 10, 14, 2, 30)
    assert parse_when("2026-12-10T10:02", now=NOV) == _utc(2026, 12, 10, 15, 2)  # EST (UTC-5)
    assert parse_when("2026-08-10T10:02:00Z", now=NOV) == _utc(2026, 8, 10, 10, 2)  # a zone given: as given


def test_a_date_is_its_first_instant_or_with_end_its_last(new_york):
    assert parse_when("2026-08-10", now=NOV) == _utc(2026, 8, 10, 4)
    end = parse_when("2026-08-10", now=NOV, end=True)
    assert _utc(2026, 8, 11, 3, 59, 59) < end < _utc(2026, 8, 11, 4)
    # the day daylight saving ends is 25 hours long
    assert parse_when("2026-11-01", end=True) - parse_when("2026-11-01") == pytest.approx(25 * 3600, abs=1e-3)


def test_ages_are_before_now():
    assert parse_when("7d", now=NOV) == NOV - 7 * 86400
    assert parse_when("12h", now=NOV, end=True) == NOV - 12 * 3600


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "2026-02-30", "2026-08-10T25:00", "7x", ""])
def test_what_is_not_a_date_is_a_usage_error(text):
    with pytest.raises(UsageError):
        parse_when(text, now=NOV)


def test_a_time_without_seconds_may_carry_a_zone(new_york):
    assert parse_when("2026-08-10T10:02Z", now=NOV) == _utc(2026, 8, 10, 10, 2)
    assert parse_when("2026-08-10T10:02+02:00", now=NOV) == _utc(2026, 8, 10, 8, 2)


@pytest.mark.parametrize("text", ["6M", "6 M", "1.5M"])
def test_capital_m_is_refused_not_read_as_minutes(text):
    """restic and borg read M as months: `rm --older-than 6M` must not mean six minutes."""
    from samctl.timeparse import parse_age

    for parse in (parse_age, lambda t: parse_when(t, now=NOV)):
        with pytest.raises(UsageError) as e:
            parse(text)
        assert "ambiguous" in e.value.message and "180d" in e.value.hint
    assert parse_age("6m") == 360 and parse_age("6H") == 6 * 3600


@pytest.mark.parametrize(
    "cmd",
    [
        ["ls", "--since", ""],
        ["ls", "--until", ""],
        ["search", "budget", "--since", ""],
        ["export", "--all", "--to", "jsonl", "--since", ""],
        ["rm", "--older-than", "", "--dry-run"],
        ["archive", "--older-than", "", "--dry-run"],
        ["rm", "--older-than", "6M", "--dry-run"],
    ],
)
def test_an_empty_or_ambiguous_date_is_a_usage_error_everywhere(run, mermaid_demo, cmd):
    """`--since "$LAST"` with LAST unset must not drop the filter and act on everything."""
    r = run("--root", mermaid_demo, *cmd)
    assert r.exit_code == 2 and ("is not a" in r.stderr or "ambiguous" in r.stderr), r.output
    assert r.stdout == ""


def test_a_fraction_of_more_than_nine_digits_is_read_with_its_first_nine():
    # chrono reads up to nine fraction digits and skips the rest (mermaid.md §2.7: a nanosecond-capable parser)
    from samctl.timeparse import parse_timestamp

    assert parse_timestamp("2026-08-10T14:03:21.1049382011-04:00") == parse_timestamp(
        "2026-08-10T14:03:21.104938201-04:00"
    )


def test_a_fraction_of_forty_digits_is_read_too():
    from samctl.timeparse import parse_timestamp

    assert parse_timestamp("2026-08-10T14:03:21." + "1" * 40 + "-04:00") == parse_timestamp(
        "2026-08-10T14:03:21.111111111-04:00"
    )


# ---- parse_timestamp against the plain parser it replaced (memoised, sliced): same answer for every input
_REF_RE = __import__("re").compile(r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|z|[+-]\d\d:?\d\d)?\Z")


def _reference_parse(s, naive_tz=None):
    """The parser as it was before the memo: one regex with groups, every field checked, then added up."""
    from datetime import datetime, timezone

    naive_tz = naive_tz or timezone.utc
    if type(s) is not str or len(s) > 1024:
        return None
    m = _REF_RE.match(s)
    if m is None:
        return None
    y, mo, d, h, mi, sec, frac, zone = m.groups()
    y, mo, d, h, mi, sec = int(y), int(mo), int(d), int(h), int(mi), int(sec)
    if not (
        1 <= mo <= 12
        and 1 <= d <= (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[mo - 1]
        and h < 24
        and mi < 60
        and sec < 61
    ):
        return None
    if mo == 2 and d == 29 and not (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) or y < 1:
        return None
    if zone is None:
        try:
            offset = naive_tz.utcoffset(datetime(y, mo, d, h, mi, min(sec, 59))).total_seconds()
        except (ValueError, OverflowError):
            return None
    elif zone in ("Z", "z"):
        offset = 0
    else:
        digits = zone[1:].replace(":", "")
        hh, mm = int(digits[:2]), int(digits[2:])
        if hh > 23 or mm > 59:
            return None
        offset = (-1 if zone[0] == "-" else 1) * (hh * 3600 + mm * 60)
    yy = y - (mo <= 2)
    era = yy // 400
    yoe = yy - era * 400
    doe = yoe * 365 + yoe // 4 - yoe // 100 + (153 * (mo + (-3 if mo > 2 else 9)) + 2) // 5 + d - 1
    secs = (era * 146097 + doe - 719468) * 86400 + h * 3600 + mi * 60 + sec - offset
    frac = frac[:9] if frac else frac
    return secs + (int(frac) / 10 ** len(frac) if frac else 0.0)


_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
_ARABIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
EDGE_TIMESTAMPS = [
    "2026-08-10T14:02:12Z",
    "2026-08-10T14:02:12.5Z",
    "2026-08-10T14:02:12.000Z",
    "2026-08-10T14:02:12.123Z",
    "2026-08-10T14:02:12.123456Z",
    "2026-08-10T14:02:12.123456789Z",
    "2026-08-10T14:02:12.1234567891234Z",
    "2026-08-10T14:02:12.0Z",
    "2026-08-10T14:02:12.000000000+00:00",
    "2026-08-10T14:02:12+05:30",
    "2026-08-10T14:02:12.25-04:00",
    "2026-08-10T14:02:12+0530",
    "2026-08-10T14:02:12-0000",
    "2026-08-10T14:02:12",
    "2026-08-10T14:02:12.999",
    "2026-08-10t14:02:12z",
    "2026-08-10 14:02:12Z",
    "2024-02-29T00:00:00Z",
    "2023-02-29T00:00:00Z",
    "2000-02-29T12:00:00+01:00",
    "1900-02-29T00:00:00Z",
    "2026-06-31T00:00:00Z",
    "2026-06-30T00:00:00Z",
    "2026-01-31T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "2026-08-10T23:59:60Z",
    "2026-08-10T23:59:60.5+01:00",
    "2026-12-31T23:59:60",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00",
    "0000-01-01T00:00:00Z",
    "0000-12-31T23:59:59+23:59",
    "9999-12-31T23:59:59.999999999+23:59",
    "9999-12-31T23:59:59-23:59",
    "1969-12-31T23:59:59.999999999Z",
    "1970-01-01T00:00:00Z",
    "2026-08-10T14:02:12Z".translate(_FULLWIDTH),
    "2026-08-10T14:02:12+05:30".translate(_ARABIC),
    "٢026-08-10T14:02:12.١٢Z",
    "2026-08-10T14:02:12.Z",
    "2026-08-10T14:02:12." + "1" * 1003 + "Z",
    "2026-08-10T14:02:12." + "1" * 1004 + "Z",
    "2026-08-10T14:02:12." + "7" * 60 + "Z",
    "2026-08-10T14:02:12+24:00",
    "2026-08-10T14:02:12-00:60",
    "2026-08-10T14:02:12+23:59",
    "2026-13-01T00:00:00Z",
    "2026-00-10T00:00:00Z",
    "2026-08-00T00:00:00Z",
    "2026-08-10T24:00:00Z",
    "2026-08-10T14:60:00Z",
    "2026-08-10T14:02:61Z",
    "2026-08-10T14:02:12Z\n",
    " 2026-08-10T14:02:12Z",
    "2026-08-10T14:02:12+05:30:00",
    "",
    "x",
    "2026-8-10T14:02:12Z",
    "2026-08-10T14:02:12Ｚ",
    "20260810T140212Z",
    "2026-08-10T14:02",
    "2026-08-10",
    0,
    None,
    1.5,
    True,
    b"2026-08-10T14:02:12Z",
    ["2026-08-10T14:02:12Z"],
]


@pytest.mark.parametrize("text", EDGE_TIMESTAMPS, ids=lambda t: repr(t)[:40])
def test_parse_timestamp_gives_what_the_plain_parser_gave(text):
    from datetime import timedelta, timezone

    from samctl.timeparse import parse_timestamp

    want = _reference_parse(text)
    assert parse_timestamp(text) == want  # first read: parsed
    assert parse_timestamp(text) == want  # again: memoised, the same
    assert parse_timestamp(text, timezone.utc) == want
    east = timezone(timedelta(hours=3))
    assert parse_timestamp(text, naive_tz=east) == _reference_parse(text, east)  # another naive zone: not memoised


def test_parse_timestamp_memo_stays_bounded():
    from samctl import timeparse

    for i in range(timeparse._SEEN_MAX + 10):  # as many strings, and minutes, as the memos keep, and more
        t = f"2026-08-{1 + i % 28:02d}T{i // 60 % 24:02d}:{i % 60:02d}:12.{i:06d}Z"
        assert timeparse.parse_timestamp(t) == _reference_parse(t)
    assert len(timeparse._SEEN) <= timeparse._SEEN_MAX and len(timeparse._MINUTES) <= timeparse._SEEN_MAX


@pytest.mark.parametrize(
    "ts,text",
    [
        (0, "1970-01-01T00:00:00Z"),
        (1786370531.0, "2026-08-10T14:02:11Z"),
        (1786370531.25, "2026-08-10T14:02:11.250Z"),
        (1786370531.0004, "2026-08-10T14:02:11Z"),  # under a millisecond: whole seconds
        (-1.0, "1969-12-31T23:59:59Z"),
        (253402300799.0, "9999-12-31T23:59:59Z"),
        (1e20, None),
        (float("nan"), None),
    ],
)
def test_format_utc_is_iso_with_milliseconds_only_when_there_are_some(ts, text):
    assert format_utc(ts) == text


@given(st.floats(min_value=-1e10, max_value=2.5e11) | st.integers(min_value=-(10**10), max_value=25 * 10**10))
def test_format_utc_of_any_time_is_what_datetime_writes(ts):
    dt = datetime.fromtimestamp(ts, timezone.utc)
    spec = "seconds" if dt.microsecond // 1000 == 0 else "milliseconds"
    assert format_utc(ts) == dt.isoformat(timespec=spec).replace("+00:00", "Z")
