"""Tests for samctl.stores.sam.encode: the strict writer (sam.md §3, §15.1)."""

from __future__ import annotations

import copy
import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samctl.stores.sam.encode import (
    INT_FIELDS,
    active_conversation_bytes,
    conversation_bytes,
    package_bytes,
    sort_key,
)
from tests.stores.test_sam_schema import CONV_ID, EXAMPLE_15_1, example


def shuffled(value, rng):
    """The same JSON value with every object's keys in a random order."""
    if isinstance(value, dict):
        items = [(k, shuffled(v, rng)) for k, v in value.items()]
        rng.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


def concrete(path):
    """An INT_FIELDS path with "*" replaced by an index that exists in the example."""
    return tuple((4 if path[0] == "messages" else 0) if c == "*" else c for c in path)


# --- sam.md §15.1 -----------------------------------------------------------------------


def test_example_15_1_re_encodes_to_the_spec_bytes():
    assert conversation_bytes(example()) == EXAMPLE_15_1.encode("utf-8")


@pytest.mark.parametrize("seed", range(5))
def test_key_order_of_the_input_does_not_matter(seed):
    doc = shuffled(example(), random.Random(seed))
    assert conversation_bytes(doc) == EXAMPLE_15_1.encode("utf-8")


def test_layout_details():
    out = conversation_bytes(example())
    assert not out.endswith(b"\n")
    assert b'"workingDirectory" : "\\/Users\\/alex\\/SAM\\/Portland weekend trip"' in out
    assert "24°C".encode() in out  # raw UTF-8, not \u00b0
    assert b"\\u00b0" not in out
    assert b'"enabledCustomInstructionIds" : [],' in out
    assert b'\n  "created" : ' in out  # 2-space indent, " : "


def test_input_is_not_modified():
    doc = example()
    doc["settings"]["contextWindowSize"] = 128000.0
    before = copy.deepcopy(doc)
    conversation_bytes(doc)
    assert doc == before
    assert isinstance(doc["settings"]["contextWindowSize"], float)


# --- key order -----------------------------------------------------------------------


def test_sort_key_case_insensitive_timestamp_first():
    # The one pair in SAM's schema where case-insensitive and bytewise order differ (sam.md §3).
    assert sorted(["timeToFirstToken", "timestamp"], key=sort_key) == ["timestamp", "timeToFirstToken"]
    assert sorted(["b", "A", "a", "B"], key=sort_key) == ["A", "a", "B", "b"]


def test_sort_key_numeric_runs():
    keys = ["item10", "item2", "item1", "item", "item02", "itemA", "item-1"]
    assert sorted(keys, key=sort_key) == ["item", "item-1", "item1", "item02", "item2", "item10", "itemA"]
    assert sorted(["9" * 5000 + "1", "9" * 5000], key=sort_key) == ["9" * 5000, "9" * 5000 + "1"]


@given(st.lists(st.text(max_size=6), max_size=8))
def test_sort_key_is_a_total_order(keys):
    once = sorted(keys, key=sort_key)
    assert sorted(reversed(keys), key=sort_key) == once


def test_example_keys_are_already_in_this_order():
    # The spec's example is ordered by this rule at every depth.
    def check(v):
        if isinstance(v, dict):
            assert list(v) == sorted(v, key=sort_key)
            for x in v.values():
                check(x)
        elif isinstance(v, list):
            for x in v:
                check(x)

    check(example())


# --- numbers ----------------------------------------------------------------------------


def test_integral_doubles_are_written_as_integers():
    doc = example()
    doc["settings"]["topP"] = 1.0
    doc["messages"][0]["importance"] = 1.0
    doc["messages"][2]["toolDuration"] = 2.0
    out = conversation_bytes(doc)
    assert b'"topP" : 1,' in out
    assert b'"importance" : 1,' in out
    assert b'"toolDuration" : 2,' in out
    assert b'"temperature" : 0.7,' in out
    doc["messages"][2]["toolDuration"] = 1e20
    assert b'"toolDuration" : 1e+20,' in conversation_bytes(doc)


def _parent(doc, path):
    """The object or array that holds the last step of ``path``."""
    for c in path[:-1]:
        doc = doc[c]
    return doc


@pytest.mark.parametrize("path", INT_FIELDS)
def test_int_fields_are_coerced(path):
    doc = example()
    doc["settings"]["maxTokens"] = 4096
    path = concrete(path)
    _parent(doc, path)[path[-1]] = 3.0e16  # integral, beyond the 2**53 limit for Doubles
    out = json.loads(conversation_bytes(doc))
    node = _parent(out, path)[path[-1]]
    assert node == 30000000000000000 and isinstance(node, int)


@pytest.mark.parametrize("path", INT_FIELDS)
def test_fraction_in_an_int_field_raises(path):
    doc = example()
    doc["settings"]["maxTokens"] = 4096
    path = concrete(path)
    _parent(doc, path)[path[-1]] = 8192.5
    with pytest.raises(ValueError, match=path[-1]):
        conversation_bytes(doc)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_raises(bad):
    doc = example()
    doc["messages"][4]["performanceMetrics"]["tokensPerSecond"] = bad
    with pytest.raises(ValueError):
        conversation_bytes(doc)
    with pytest.raises(ValueError):
        package_bytes({"formatVersion": "1.0", "x": [bad]})


def test_unwritable_values_raise_value_error():
    with pytest.raises(ValueError):
        conversation_bytes({"title": "\ud800"})
    with pytest.raises(ValueError):
        conversation_bytes({1: "x"})
    deep = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError):
        conversation_bytes({"x": deep})


def test_control_characters_and_quotes_are_escaped():
    out = conversation_bytes({"content": 'a"b\\c\nd\te\x01/'})
    assert out == b'{\n  "content" : "a\\"b\\\\c\\nd\\te\\u0001\\/"\n}'
    assert json.loads(out) == {"content": 'a"b\\c\nd\te\x01/'}


# --- packages and active-conversation.json -------------------------------------------------


def test_package_bytes_single_and_bulk():
    conv = example()
    conv["settings"]["contextWindowSize"] = 128000.0
    pkg = {
        "samVersion": "1.2.3",
        "formatVersion": "1.0",
        "exportedAt": "2026-08-11T09:00:00Z",
        "conversation": conv,
        "memories": [],
    }
    out = package_bytes(pkg)
    assert out.startswith(b'{\n  "conversation" : {\n    "created" : ')
    assert b'"contextWindowSize" : 128000,' in out
    assert out.index(b'"exportedAt"') < out.index(b'"formatVersion"') < out.index(b'"memories"')
    bulk = {
        "formatVersion": "1.0",
        "exportedAt": "2026-08-11T09:00:00Z",
        "samVersion": "1.2.3",
        "conversationCount": 1,
        "conversations": [pkg],
    }
    out = package_bytes(bulk)
    assert b'"contextWindowSize" : 128000,' in out
    assert json.loads(out)["conversations"][0]["conversation"]["id"] == CONV_ID
    conv["messages"][0]["performanceMetrics"] = {"tokenCount": 1.5}
    with pytest.raises(ValueError, match=r"conversations\[0\]\.conversation\.messages\[0\]"):
        package_bytes(bulk)


def test_active_conversation_bytes():
    out = active_conversation_bytes(CONV_ID.lower(), 1786370621.75)
    assert out == (b'{\n  "id" : "8B58CBC4-ACA7-4811-AE66-C01921690310",\n  "updated" : "2026-08-10T14:03:41Z"\n}')
    for bad_id in ["", "x", None, CONV_ID + "\n"]:
        with pytest.raises(ValueError):
            active_conversation_bytes(bad_id, 0)
    with pytest.raises(ValueError):
        active_conversation_bytes(CONV_ID, math.nan)


# --- any JSON value ----------------------------------------------------------------------

finite_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(finite_json)
def test_any_finite_json_round_trips_and_is_stable(value):
    out = package_bytes(value)
    back = json.loads(out.decode("utf-8"))
    assert back == value
    assert package_bytes(back) == out
    assert not out.endswith(b"\n")
    assert b"/" not in out.replace(b"\\/", b"")
