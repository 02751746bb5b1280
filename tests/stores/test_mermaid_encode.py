"""Byte-compatibility of samctl's mermaid writers (mermaid.md §2, §11.1, §11.2).

The spec examples below are copied verbatim from mermaid.md §11; other test modules
load them from here.
"""

from __future__ import annotations

import json
import math
import struct

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samctl.stores.mermaid.encode import (
    META_FIELDS,
    format_float,
    log_line_bytes,
    meta_bytes,
    meta_dict,
    snapshot_bytes,
)

# --- mermaid.md §11 examples, verbatim ---------------------------------------------

SNAPSHOT_11_1 = r"""{
  "advertised_context": null,
  "cli_version": "0.25.0",
  "compactions": [],
  "context_usage": null,
  "created_at": "2026-08-10T14:03:07.512347811-04:00",
  "cumulative_token_usage": {
    "cache_creation_input_tokens": 0,
    "cached_input_tokens": 0,
    "completion_tokens": 98,
    "prompt_tokens": 4144,
    "reasoning_output_tokens": 0
  },
  "forked_from": null,
  "git_branch": "main",
  "git_sha": "a614aa9",
  "id": "20260810_140307_512",
  "input_history": [
    "Fix the flaky test in tests/parser.rs"
  ],
  "last_token_usage": {
    "cache_creation_input_tokens": 0,
    "cached_input_tokens": 0,
    "completion_tokens": 57,
    "prompt_tokens": 2310,
    "reasoning_output_tokens": 0
  },
  "messages": [
    {
      "actions": [],
      "content": "Fix the flaky test in tests/parser.rs",
      "image_numbers": null,
      "images": null,
      "kind": "normal",
      "metadata": null,
      "provider_continuation": null,
      "role": "User",
      "thinking": null,
      "timestamp": "2026-08-10T14:03:21.104938201-04:00",
      "tool_call_id": null,
      "tool_calls": null,
      "tool_name": null
    },
    {
      "actions": [
        {
          "action_type": "Read",
          "details": {
            "Preview": {
              "line_count": 42,
              "text": "use parsekit::parse;\n..."
            }
          },
          "duration_seconds": 0.004,
          "metadata": null,
          "result": {
            "Success": {
              "images": null,
              "output": "42 lines"
            }
          },
          "target": "tests/parser.rs"
        }
      ],
      "content": "Let me look at the test first.",
      "image_numbers": null,
      "images": null,
      "kind": "normal",
      "metadata": null,
      "provider_continuation": null,
      "role": "Assistant",
      "thinking": null,
      "timestamp": "2026-08-10T14:03:25.877120554-04:00",
      "tool_call_id": null,
      "tool_calls": [
        {
          "function": {
            "arguments": {
              "path": "tests/parser.rs"
            },
            "name": "read_file"
          },
          "id": "call_01"
        }
      ],
      "tool_name": null
    },
    {
      "actions": [],
      "content": "use parsekit::parse;\n\n#[test]\nfn keys_are_stable() { /* ... */ }\n",
      "image_numbers": null,
      "images": null,
      "kind": "normal",
      "metadata": null,
      "provider_continuation": null,
      "role": "Tool",
      "thinking": null,
      "timestamp": "2026-08-10T14:03:25.901553310-04:00",
      "tool_call_id": "call_01",
      "tool_calls": null,
      "tool_name": "read_file"
    },
    {
      "actions": [],
      "content": "The test depends on HashMap iteration order; I sorted the keys before asserting.",
      "image_numbers": null,
      "images": null,
      "kind": "normal",
      "metadata": null,
      "provider_continuation": null,
      "role": "Assistant",
      "thinking": null,
      "timestamp": "2026-08-10T14:04:02.655120734-04:00",
      "tool_call_id": null,
      "tool_calls": null,
      "tool_name": null
    }
  ],
  "model_name": "ollama/qwen3-coder:30b",
  "parent_session": null,
  "plan": null,
  "project_path": "/home/dev/parsekit",
  "safety_mode": "ask",
  "tasks": {
    "next_id": 0,
    "tasks": []
  },
  "title": "Fix the flaky test in tests/parser.rs",
  "updated_at": "2026-08-10T14:04:02.655120734-04:00"
}"""


META_11_2 = r"""{"id":"20260810_140307_512","title":"Fix the flaky test in tests/parser.rs","updated_at":"2026-08-10T14:04:02.655120734-04:00","git_branch":"main","message_count":4,"forked_from":null}"""


LEGACY_11_5 = r"""{
  "id": "20260101_120000_001",
  "title": "Legacy session",
  "messages": [
    {"role": "Developer", "content": "from a newer build", "timestamp": "2026-01-01T12:00:00-04:00"}
  ],
  "model_name": "ollama/test",
  "project_path": "/tmp/proj",
  "created_at": "2026-01-01T12:00:00-05:00",
  "updated_at": "2026-01-01T12:00:00-05:00",
  "total_tokens": null
}"""


# --- the spec examples, byte for byte -----------------------------------------


def test_snapshot_11_1_round_trips_byte_for_byte():
    data = SNAPSHOT_11_1.encode("utf-8")
    assert snapshot_bytes(orjson.loads(data)) == data


def test_snapshot_11_1_rewritten_from_any_key_order():
    # Sorting happens at every depth, whatever order the dict was built in.
    def reverse(v):
        if isinstance(v, dict):
            return {k: reverse(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [reverse(x) for x in v]
        return v

    data = SNAPSHOT_11_1.encode("utf-8")
    assert snapshot_bytes(reverse(orjson.loads(data))) == data


def test_meta_11_2_from_snapshot_11_1():
    doc = orjson.loads(SNAPSHOT_11_1)
    assert meta_bytes(meta_dict(doc)) == META_11_2.encode("utf-8")


def test_meta_11_2_round_trips_byte_for_byte():
    assert meta_bytes(orjson.loads(META_11_2)) == META_11_2.encode("utf-8")


# --- snapshot layout rules (mermaid.md §2.2, §2.5) ----------------------------------


def test_pretty_layout_indent_colon_no_trailing_newline():
    out = snapshot_bytes({"b": [1, {"c": None}], "a": True})
    assert out == b'{\n  "a": true,\n  "b": [\n    1,\n    {\n      "c": null\n    }\n  ]\n}'


def test_empty_containers_are_compact():
    assert snapshot_bytes({"a": [], "b": {}, "c": [[], {}]}) == (
        b'{\n  "a": [],\n  "b": {},\n  "c": [\n    [],\n    {}\n  ]\n}'
    )
    assert snapshot_bytes([]) == b"[]"
    assert snapshot_bytes({}) == b"{}"


def test_keys_sorted_bytewise_at_every_depth():
    # U+FF61 sorts before U+10000 in UTF-8 byte order (and code point order),
    # but after it in UTF-16 order: the trap a UTF-16 sort would fall into.
    doc = {"\U00010000": 1, "\uff61": 2, "Z": 3, "a": {"y": 1, "X": 2, "é": 3}, "A": 4}
    out = snapshot_bytes(doc)
    assert out == json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True).encode("utf-8")
    assert out.index("\uff61".encode()) < out.index("\U00010000".encode())
    assert out.index(b'"X"') < out.index(b'"y"') < out.index("é".encode())


@pytest.mark.parametrize(
    "text, escaped",
    [
        ("\x00", b'"\\u0000"'),
        ("\x01\x1f", b'"\\u0001\\u001f"'),
        ("\x0b", b'"\\u000b"'),  # vertical tab: no short form in JSON
        ("\x1b[0m", b'"\\u001b[0m"'),  # lowercase hex
        ("\b\f\n\r\t", b'"\\b\\f\\n\\r\\t"'),
        ('"\\', b'"\\"\\\\"'),
        ("/", b'"/"'),  # never escaped
        ("\x7f", b'"\x7f"'),  # DEL stays raw
        ("\u2028\u2029", '"\u2028\u2029"'.encode()),  # raw, unlike JavaScript-safe encoders
        ("é😀", '"é😀"'.encode()),  # raw UTF-8
        ("\ufeff", '"\ufeff"'.encode()),
    ],
)
def test_string_escaping(text, escaped):
    assert snapshot_bytes(text) == escaped
    assert snapshot_bytes({"k": text}) == b'{\n  "k": ' + escaped + b"\n}"
    assert log_line_bytes({"k": text}) == b'{"k":' + escaped + b"}\n"


def test_non_finite_floats_become_null():
    assert snapshot_bytes({"a": math.nan, "b": math.inf, "c": -math.inf}) == (
        b'{\n  "a": null,\n  "b": null,\n  "c": null\n}'
    )


def test_integers_plain_and_at_the_64_bit_edges():
    assert snapshot_bytes([0, -1, 2**63 - 1, -(2**63), 2**64 - 1]) == (
        b"[\n  0,\n  -1,\n  9223372036854775807,\n  -9223372036854775808,\n  18446744073709551615\n]"
    )


def test_integers_past_64_bits_are_written_as_serde_json_reads_them():
    # serde_json (no arbitrary_precision) parses such literals as f64.
    assert snapshot_bytes({"a": 2**64}) == b'{\n  "a": 1.8446744073709552e19\n}'
    assert log_line_bytes({"b": [-(2**63) - 1], "a": 1}) == b'{"a":1,"b":[-9.223372036854776e18]}\n'
    with pytest.raises(TypeError):
        snapshot_bytes({"a": 10**400})  # no f64 can hold it


def test_bools_are_not_integers():
    assert snapshot_bytes([True, False, None]) == b"[\n  true,\n  false,\n  null\n]"


def test_non_json_values_raise_type_error():
    with pytest.raises(TypeError):
        snapshot_bytes({1: "a"})
    with pytest.raises(TypeError):
        snapshot_bytes({"a": {1, 2}})
    with pytest.raises(TypeError):
        log_line_bytes({"a": object()})


# --- floats (mermaid.md §2.6) --------------------------------------------------------

FLOAT_TABLE = [
    # e >= 0 and kk <= 16: integer digits then ".0"
    (1.0, "1.0"),
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (100.0, "100.0"),
    (1e15, "1000000000000000.0"),
    (9007199254740992.0, "9007199254740992.0"),
    # 0 < kk <= 16: the point inside the digits
    (6.25, "6.25"),
    (12345.678, "12345.678"),
    (1234567890123456.8, "1234567890123456.8"),
    (-1.5, "-1.5"),
    # -5 < kk <= 0: leading "0.000"
    (0.5, "0.5"),
    (0.004, "0.004"),
    (1e-5, "0.00001"),
    (1.2345e-5, "0.000012345"),
    # otherwise scientific, no "+" and no exponent padding
    (1e16, "1e16"),
    (1.2345678901234568e17, "1.2345678901234568e17"),
    (1e21, "1e21"),
    (1e-6, "1e-6"),
    (1.5e-7, "1.5e-7"),
    (-1.5e300, "-1.5e300"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e308"),
    (2.2250738585072014e-308, "2.2250738585072014e-308"),
]


@pytest.mark.parametrize("value, text", FLOAT_TABLE)
def test_format_float_rules_table(value, text):
    assert format_float(value) == text
    assert float(text) == value
    # and the snapshot writer lays floats out the same way
    assert snapshot_bytes([value]) == b"[\n  " + text.encode() + b"\n]"
    assert log_line_bytes({"x": value}) == b'{"x":' + text.encode() + b"}\n"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_format_float_non_finite_is_null(value):
    assert format_float(value) == "null"


def _ryu(x: float) -> str:
    """An independent spelling of the mermaid.md §2.6 layout, from the exact decimal digits of repr."""
    from decimal import Decimal

    sign, digits, exp = Decimal(repr(x)).normalize().as_tuple()
    d = "".join(map(str, digits))
    if d == "0":
        return ("-" if sign else "") + "0.0"
    kk = len(d) + exp
    if exp >= 0 and kk <= 16:
        s = d + "0" * exp + ".0"
    elif 0 < kk <= 16:
        s = d[:kk] + "." + d[kk:]
    elif -5 < kk <= 0:
        s = "0." + "0" * (-kk) + d
    else:
        s = d[0] + ("." + d[1:] if len(d) > 1 else "") + f"e{kk - 1}"
    return ("-" if sign else "") + s


finite_floats = st.floats(allow_nan=False, allow_infinity=False)
any_bits_floats = (
    st.integers(0, 2**64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0]).filter(math.isfinite)
)


@settings(max_examples=500, deadline=None)
@given(st.one_of(finite_floats, any_bits_floats))
def test_format_float_matches_the_writer_and_round_trips(x):
    text = format_float(x)
    assert float(text) == x and math.copysign(1, float(text)) == math.copysign(1, x)
    assert text == _ryu(x)
    # the document writer (orjson plus the exponent fix) lays out every float the same way
    assert snapshot_bytes([x]) == f"[\n  {text}\n]".encode()


# --- a reference writer for whole documents -------------------------------------


def _ref(v, indent: int | None, level: int = 0) -> str:
    """serde_json's writer restated from mermaid.md §2 (sorted keys, ryu floats, minimal escaping)."""
    if v is None or v is True or v is False:
        return json.dumps(v)
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, dict):
        items = [
            json.dumps(k, ensure_ascii=False) + (": " if indent else ":") + _ref(v[k], indent, level + 1)
            for k in sorted(v, key=lambda k: k.encode("utf-8"))
        ]
        return _wrap("{", "}", items, indent, level)
    return _wrap("[", "]", [_ref(x, indent, level + 1) for x in v], indent, level)


def _wrap(open_, close, items, indent, level):
    if not items:
        return open_ + close
    if not indent:
        return open_ + ",".join(items) + close
    pad = "\n" + " " * (indent * (level + 1))
    return open_ + pad + ("," + pad).join(items) + "\n" + " " * (indent * level) + close


json_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | finite_floats | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_writers_match_the_reference_writer(v):
    assert snapshot_bytes(v) == _ref(v, 2).encode("utf-8")
    assert log_line_bytes(v) == _ref(v, None).encode("utf-8") + b"\n"
    # and re-reading the bytes gives the same value back
    assert orjson.loads(snapshot_bytes(v)) == v


# --- log lines and meta (mermaid.md §2.3, §2.4, §3.2) ---------------------------------


def test_log_line_is_compact_sorted_with_newline():
    env = {"v": 1, "seq": 7, "ts": "2026-07-02T12:00:00.123Z", "event": {"type": "input", "text": "hello"}}
    assert log_line_bytes(env) == (
        b'{"event":{"text":"hello","type":"input"},"seq":7,"ts":"2026-07-02T12:00:00.123Z","v":1}\n'
    )


def test_meta_dict_defaults_for_a_legacy_snapshot():
    doc = orjson.loads(LEGACY_11_5)
    meta = meta_dict(doc)
    assert list(meta) == list(META_FIELDS)
    assert meta == {
        "id": "20260101_120000_001",
        "title": "Legacy session",
        "updated_at": "2026-01-01T12:00:00-05:00",
        "git_branch": None,
        "message_count": 1,
        "forked_from": None,
    }
    assert meta_bytes(meta) == (
        b'{"id":"20260101_120000_001","title":"Legacy session","updated_at":"2026-01-01T12:00:00-05:00",'
        b'"git_branch":null,"message_count":1,"forked_from":null}'
    )


def test_meta_bytes_keeps_struct_order_whatever_the_dict_order():
    meta = {
        "forked_from": "20260101_000000_000",
        "message_count": 2,
        "zzz": 1,
        "title": "t",
        "id": "i",
        "updated_at": "u",
        "git_branch": "main",
    }
    assert meta_bytes(meta) == (
        b'{"id":"i","title":"t","updated_at":"u","git_branch":"main","message_count":2,'
        b'"forked_from":"20260101_000000_000"}'
    )
    assert not meta_bytes(meta).endswith(b"\n")


def test_meta_bytes_missing_message_count_is_zero():
    assert b'"message_count":0' in meta_bytes({"id": "i", "title": "t", "updated_at": "u"})
