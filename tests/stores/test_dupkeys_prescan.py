"""The cheap pre-scan of dupkeys may send a text to the full parse, never hide a repeated key."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samctl.stores import dupkeys

REPEATS = [
    b'{"a": 1, "a": 2}',
    b'{"a":1,"a":2}',
    b'{"a" : 1, "a" : 2}',  # spaced colons
    b'{"a"\n:1,"a"\t:2}',
    b'{"k\\\\": 1, "k\\\\": 2}',  # a key ending in an escaped backslash
    b'{"x": "say \\":\\" twice", "a": 1, "a": 2}',  # an escaped quote-colon in a value
    b'{"t": ":)", "a": 1, "a": 2, "b": 3}',
    b'[{"m": {"z": [1, {"q": 1, "q": 1}]}}]',
    b'{"a\\":b": 1, "a\\":b": 2}',
    b'{"\\u0061": 1, "a": 2}',  # the same key spelled two ways
]
CLEAN = [b'{"a": 1, "b": {"c": [1, {"d": "e"}]}}', b'{"x": "\\":", "y": 1}', b"[]", b'"s"']


@pytest.mark.parametrize("data", REPEATS)
def test_every_repeat_is_found(data):
    assert not dupkeys._no_repeats(data)
    assert dupkeys.anywhere(data), data


@pytest.mark.parametrize("data", CLEAN)
def test_clean_texts_have_none(data):
    assert dupkeys.anywhere(data) == []


def test_a_pretty_printed_snapshot_without_repeats_skips_the_full_parse():
    doc = {"id": "x", "messages": [{"role": "user", "content": 'say "hi": now \\ ok', "metadata": {}}]}
    assert dupkeys._no_repeats(json.dumps(doc, indent=2).encode())
    assert dupkeys._no_repeats(json.dumps(doc, separators=(",", ":")).encode())


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": "\\u003a", "a": 1, "b": ":"}',
        b'{"a": "\\\\", "a": "x"}',
        b'{"s": "x\\u0022:", "a": 1, "a": 2}',
        b'{"a": {}, "a": {"b": 1}}',
    ],
)
def test_escapes_that_change_in_orjsons_output_still_find_the_repeat(data):
    assert not dupkeys._no_repeats(data)
    assert dupkeys.anywhere(data), data


@pytest.mark.parametrize(
    "data", [b'{"a": "x:y", "a": "x:y"}', b'{"a": ":", "b": {"a": 1, "a": ":"}}', b'{"t": "\\u003A", "a": 1, "a": 2}']
)
def test_colons_inside_strings_do_not_hide_a_repeat(data):
    assert not dupkeys._no_repeats(data)
    assert dupkeys.anywhere(data), data


def test_spaced_colons_and_colons_in_strings_without_repeats_skip_the_full_parse():
    assert dupkeys._no_repeats(b'{"a" : "b:c", "d"\n:\t[{"e": "::"}]}')


def test_a_text_that_is_orjsons_own_output_needs_no_count():
    """A text byte for byte what orjson writes of its parse (compact, or the 2-space indent of mermaid's
    snapshots) keeps every member: no repeat, even where the colon count would have to give up."""
    import orjson

    doc = {"a": "a backslash then u003a: \\u003a", "b": [{"c": ":"}], "d": {}}
    for text in (orjson.dumps(doc), orjson.dumps(doc, option=orjson.OPT_INDENT_2)):
        assert b"\\u003" in text  # (the colon count's slow path)
        assert dupkeys._no_repeats(text) and dupkeys.anywhere(text) == []


@pytest.mark.parametrize("data", REPEATS)
def test_a_repeat_in_one_line_of_many_is_found(data):
    import orjson

    clean = orjson.dumps({"v": 1, "seq": 0, "event": {"type": "started"}})
    lines = [clean, data.replace(b"\n", b" "), clean]
    text = b"\n".join(lines) + b"\n"
    assert dupkeys.may_repeat(text, [orjson.loads(x) for x in lines], lines=True)


def test_lines_each_orjsons_own_output_have_no_repeat():
    import orjson

    values = [
        {"v": 1, "seq": i, "event": {"type": "message", "message": {"content": "a\nb: \\u003a"}}} for i in range(3)
    ]
    text = b"".join(orjson.dumps(v) + b"\n" for v in values)
    assert not dupkeys.may_repeat(text, values, lines=True)
    assert not dupkeys.may_repeat(text.rstrip(b"\n"), values, lines=True)  # (a last line without its newline)


def _log_is_orjsons_own(text: bytes, values: list) -> bool:
    """The rule as first written: the log, its newlines read as commas, in brackets, is orjson's output."""
    import orjson

    return orjson.dumps(values) == b"[" + text.rstrip(b"\n").replace(b"\n", b",") + b"]"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["a", "b", "é"]),
            st.one_of(st.integers(-9, 99), st.sampled_from(["", "x", "é", "a:b", "日本"])),
        ),
        max_size=4,
    ),
    st.sampled_from([b"", b"\n", b"\n\n"]),
    st.sampled_from([None, b" ", b",", b"\n", "drop"]),
)
def test_a_log_is_orjsons_own_output_exactly_when_it_reads_so(values, end, splice):
    """The log's comparison with orjson's output (one copy of the log) says what the first rule said, for
    logs ending with any number of newlines, logs with a byte put in where none belongs, and logs whose
    last line is missing from the text."""
    import orjson

    text = b"\n".join(orjson.dumps(v) for v in values) + end
    if splice == "drop":
        text = b"\n".join(orjson.dumps(v) for v in values[:-1]) + end
    elif splice is not None and text:
        text = text[:1] + splice + text[1:]
    if _log_is_orjsons_own(text, values):
        assert dupkeys._no_repeats(text, values, lines=True)
    else:
        assert dupkeys._no_repeats(text, values, lines=True) == (
            b"\\u003" not in text and text.count(b":") == orjson.dumps(values).count(b":")
        )
