"""Reading values of another app's records without trusting their types or their depth.

Every decoder of a store samctl does not own reads fields through these: a field of the wrong type reads
as the default (the record still counts), never as an exception.  Invariants:
- ``as_str``/``as_int``/``as_list``/``as_dict`` return the value only when it has that exact type
  (a bool is not an int), else ``default``;
- ``depth`` and ``bounded`` never recurse: the input decides how deep a value is, not Python's stack;
- ``bounded(v)`` is a copy of ``v`` at most ``MAX_DEPTH`` deep, made of JSON types only (deeper values and
  other types become short strings), so anything downstream (orjson, repr, a renderer) can walk it.
"""

from __future__ import annotations

import orjson

_I64 = 1 << 63  # orjson writes integers of 64 bits at most
MAX_DEPTH = 128  # nesting a record may have; orjson writes at most 255 levels and a record is wrapped in a few


BUILD_CAP = 256 << 20  # estimated bytes of the objects one file (or one conversation) may parse into


def build_cost(data: bytes) -> int:
    """An upper estimate of the bytes the objects parsed from the JSON ``data`` take: its length, plus an
    object's size for every container, element and string it can hold (``{}`` is 2 bytes of text and 64
    of memory).  Counting is done in C; prose costs little more than its length."""
    return len(data) + 64 * (data.count(b"{") + data.count(b"[")) + 16 * data.count(b",") + 24 * data.count(b'"')


def too_costly(data: bytes) -> str | None:
    """Why parsing ``data`` must not be tried (over ``BUILD_CAP``), or None."""
    if len(data) < BUILD_CAP // 64:
        return None  # (too short to reach the cap whatever it holds)
    cost = build_cost(data)
    return (
        None
        if cost <= BUILD_CAP
        else (f"parsing it would build about {cost >> 20} MiB of objects, over the {BUILD_CAP >> 20} MiB cap; not read")
    )


def as_str(v, default=None):
    return v if isinstance(v, str) else default


def as_int(v, default=None):
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def as_list(v, default=()):
    return v if isinstance(v, list) else default


def as_dict(v, default=None):
    return v if isinstance(v, dict) else ({} if default is None else default)


def as_text(v) -> str:
    """Text to show for any value: a str as is, None as "", bytes by their length, anything else as
    bounded JSON-ish text (never a deep repr)."""
    if isinstance(v, str):
        return v
    if v is None:
        return ""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return f"[{len(v)} bytes]"
    if isinstance(v, (int, float)):
        return str(v)
    return short_json(v)


def depth(v, cap: int = MAX_DEPTH) -> int:
    """How deeply ``v`` nests lists and dicts (a scalar is 0), counted up to ``cap + 1`` (then it stops)."""
    best = 0
    stack = [(v, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, dict):
            x = x.values()
        elif not isinstance(x, list):
            continue
        if d > best:
            best = d
            if best > cap:
                return best
        stack.extend((y, d + 1) for y in x if isinstance(y, (list, dict)))
    return best


def bounded(v, cap: int = MAX_DEPTH):
    """A copy of ``v`` with JSON types only, at most ``cap`` levels deep (deeper containers become
    ``"[… nested deeper than N levels]"``, other types their ``as_text``)."""
    if not isinstance(v, (list, dict)):
        return bounded([v], cap)[0]
    root: list = [None]
    stack = [(v, root, 0, 0)]  # (value, container to fill, key in it, depth of the value)
    while stack:
        x, into, key, d = stack.pop()
        if isinstance(x, (list, dict)):
            if d >= cap:
                into[key] = f"[… nested deeper than {cap} levels]"
                continue
            if isinstance(x, dict):
                new: dict | list = {}
                for k, y in x.items():
                    k = (
                        k
                        if isinstance(k, str)
                        else str(k)
                        if isinstance(k, (int, float, bool)) or k is None
                        else as_text(k)
                    )
                    new[k] = None
                    stack.append((y, new, k, d + 1))
            else:
                new = [None] * len(x)
                stack.extend((y, new, i, d + 1) for i, y in enumerate(x))
            into[key] = new
        elif x is None or isinstance(x, (str, float, bool)) or isinstance(x, int) and -_I64 <= x < _I64:
            into[key] = x
        else:
            into[key] = as_text(x)
    return root[0]


def short_json(v, limit: int = 2000) -> str:
    """``v`` as one line of JSON (bounded in depth), cut at ``limit`` characters."""
    try:
        text = orjson.dumps(v).decode()
    except TypeError:  # too deep for orjson, or a type it does not write
        text = orjson.dumps(bounded(v, 64)).decode()
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} characters)"
