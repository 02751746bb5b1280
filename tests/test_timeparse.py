"""--since/--until: what a person typing a date or a local time means."""

from datetime import datetime, timezone

import pytest

from samctl.timeparse import parse_when
from samctl.errors import UsageError

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


@pytest.mark.parametrize("cmd", [["ls", "--since", ""], ["ls", "--until", ""], ["search", "budget", "--since", ""],
                                 ["export", "--all", "--to", "jsonl", "--since", ""],
                                 ["rm", "--older-than", "", "--dry-run"], ["archive", "--older-than", "", "--dry-run"],
                                 ["rm", "--older-than", "6M", "--dry-run"]])
def test_an_empty_or_ambiguous_date_is_a_usage_error_everywhere(run, mermaid_demo, cmd):
    """`--since "$LAST"` with LAST unset must not drop the filter and act on everything."""
    r = run("--root", mermaid_demo, *cmd)
    assert r.exit_code == 2 and ("is not a" in r.stderr or "ambiguous" in r.stderr), r.output
    assert r.stdout == ""


def test_a_fraction_of_more_than_nine_digits_is_read_with_its_first_nine():
    # chrono reads up to nine fraction digits and skips the rest (mermaid.md §2.7: a nanosecond-capable parser)
    from samctl.timeparse import parse_timestamp

    assert parse_timestamp("2026-08-10T14:03:21.1049382011-04:00") == parse_timestamp(
        "2026-08-10T14:03:21.104938201-04:00")


def test_a_fraction_of_forty_digits_is_read_too():
    from samctl.timeparse import parse_timestamp

    assert parse_timestamp("2026-08-10T14:03:21." + "1" * 40 + "-04:00") == parse_timestamp(
        "2026-08-10T14:03:21.111111111-04:00")
