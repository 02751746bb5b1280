"""stores/values.py: type-checked field reads, and depth and size bounds that never recurse."""

from __future__ import annotations

import orjson

from samctl.stores import values as V


def _deep(n: int, leaf=1):
    v = leaf
    for i in range(n):
        v = [v] if i % 2 else {"a": v}
    return v


def test_as_helpers_take_only_their_type():
    assert V.as_str("x") == "x" and V.as_str(5) is None and V.as_str(["x"], "d") == "d"
    assert V.as_int(5) == 5 and V.as_int(True) is None and V.as_int("5") is None
    assert V.as_list([1]) == [1] and V.as_list(5) == () and V.as_list({"a": 1}) == ()
    assert V.as_dict({"a": 1}) == {"a": 1} and V.as_dict([1]) == {}
    assert V.as_text(b"\x00\xff") == "[2 bytes]" and V.as_text(None) == "" and V.as_text(5) == "5"


def test_depth_counts_without_recursion_and_stops_at_the_cap():
    assert V.depth(5) == 0 and V.depth([]) == 1 and V.depth({"a": [1, {"b": []}]}) == 4
    assert V.depth(_deep(100_000)) == V.MAX_DEPTH + 1  # (a recursive walk would raise RecursionError)


def test_bounded_cuts_deep_values_and_keeps_json_types():
    b = V.bounded(_deep(100_000), 10)
    assert V.depth(b) == 10
    assert "nested deeper than 10 levels" in orjson.dumps(b).decode()
    assert V.bounded({"a": [1, "x", None, True, 1.5]}) == {"a": [1, "x", None, True, 1.5]}
    assert V.bounded({"big": 2**70, "b": b"\x00"}) == {"big": str(2**70), "b": "[1 bytes]"}


def test_short_json_never_raises_and_is_cut():
    assert V.short_json(_deep(5000)).startswith('[{"a":[{"a":')
    assert V.short_json([2**70]) == f'["{2**70}"]'
    assert V.short_json("x" * 5000, 100).endswith("(5,002 characters)")


def test_build_cost_bounds_what_parsing_builds():
    prose = b'{"text":"' + b"word " * 100_000 + b'"}'
    assert V.build_cost(prose) < 2 * len(prose)
    bomb = b"[" + b"{}," * (V.BUILD_CAP // 64) + b"{}]"
    assert V.too_costly(bomb) and V.too_costly(prose) is None
