"""Shortcuts of check's snapshot and log validation agree with the general rules, case for case (issue #32)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from samctl.stores.mermaid import decode, envelope
from samctl.timeparse import parse_timestamp

DIGITS = st.text("0123456789", min_size=1, max_size=2)
TIMES = st.builds(
    "{}-{}-{}{}{}:{}:{}{}{}".format,
    st.sampled_from(["0000", "0001", "1970", "2024", "2100", "9999", "1900"]),
    st.sampled_from(["00", "01", "02", "12", "13"]),
    st.sampled_from(["00", "01", "28", "29", "30", "31", "32"]),
    st.sampled_from(["T", "t", " ", "x"]),
    st.sampled_from(["00", "23", "24"]),
    st.sampled_from(["00", "59", "60"]),
    st.sampled_from(["00", "59", "60", "61"]),
    st.one_of(st.just(""), st.builds(".{}".format, st.text("0123456789", min_size=1, max_size=1100))),
    st.sampled_from(["Z", "z", "+00:00", "-23:59", "+24:00", "+05:60", "", "+0500"]),
)


@settings(max_examples=400, deadline=None)
@given(TIMES)
def test_readable_time_is_parse_timestamp_for_what_is_timestamp_passed(s):
    if envelope.is_timestamp(s):
        assert decode.readable_time(s) == (parse_timestamp(s) is not None), s


def test_the_two_refusals_it_names():
    for s in ("0000-01-01T00:00:00Z", "2024-01-01T00:00:00." + "1" * 1010 + "Z"):
        assert envelope.is_timestamp(s) and parse_timestamp(s) is None and not decode.readable_time(s)
