"""Keys written twice in one JSON object (a hand edit, a merge tool): orjson, like most parsers,
keeps the last value, but serde's derived Deserialize refuses a struct with a repeated field
("duplicate field"), so mermaid cannot open such a file; SAM's decoder is Apple's (unknown).

A second parse with the standard library, whose hook sees each object's members before they
become a dict: only ``check`` and ``recover`` pay for it, never a listing.  Which objects are structs
(a repeated field refused) is the store's to say (mermaid's: ``stores/mermaid/structs.py``).
"""

from __future__ import annotations

import json

import orjson

UNPARSED = object()  # (no parse given: dupkeys parses the text itself)


class Repeated(dict):
    """A parsed object that had repeated keys (``repeated``, in the order they first repeated)."""

    __slots__ = ("repeated",)


def _no_repeats(data: bytes, parsed=UNPARSED, lines: bool = False) -> bool:
    """True only if no object in the text repeats a key (False: it may, or it is not JSON).
    ``parsed``: what ``orjson.loads(data)`` gave, if the caller has it (one parse less); with
    ``lines``, ``data`` is JSON texts one per line and ``parsed`` the list of their values.

    First the usual case: the text is exactly what orjson writes of its parse (compact, as mermaid's
    log lines and sidecars, or with a 2-space indent, as its snapshots), so it has as many members
    as orjson kept: none repeated.  Else the colons are counted: the text's are one per key token
    plus those inside its strings; orjson's output of what it parsed has one per member plus those
    inside its strings, which are the text's strings decoded less those of the members it dropped.
    With no ``\\u003`` in the text (an escaped colon: else the slow path), decoding adds no colon,
    so equal counts mean as many members as key tokens: no key repeated."""
    try:
        value = orjson.loads(data) if parsed is UNPARSED else parsed
        pretty = data[:2] in (b"{\n", b"[\n")
        out = orjson.dumps(value, option=orjson.OPT_INDENT_2 if pretty else None)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return False
    if lines:
        # out == b"[" + data.rstrip(b"\n").replace(b"\n", b",") + b"]", with one copy of the log, not four
        end = len(data)
        while end and data[end - 1] == 0x0A:
            end -= 1
        if (
            len(out) == end + 2
            and out.startswith(b"[")
            and out.endswith(b"]")
            and out.startswith(memoryview(data.replace(b"\n", b","))[:end], 1)
        ):
            return True
    elif out == data:
        return True
    if b"\\u003" in data:
        return False
    return data.count(b":") == out.count(b":")


def may_repeat(data: bytes, parsed, lines: bool = False) -> bool:
    """False only if no object of ``data`` repeats a key, ``parsed`` being what orjson gave for it:
    one JSON text, or with ``lines`` several, one per line (an event log, ``parsed`` the list of
    their values).
    For several texts the counts add up line by line, and no line's output has more colons than
    its text, so equal sums still mean no line repeats a key."""
    return not _no_repeats(data, parsed, lines)


def parse_marked(data: bytes, parsed=UNPARSED):
    """(the parsed text with ``Repeated`` objects, whether any); (None, False) if it is not JSON
    or holds no repeated key."""
    if _no_repeats(data, parsed):
        return None, False
    seen_any = []

    def hook(pairs):
        d = dict(pairs)
        if len(d) == len(pairs):
            return d
        r, seen = Repeated(d), set()
        r.repeated = []
        for k, _ in pairs:
            if k in seen and k not in r.repeated:
                r.repeated.append(k)
            seen.add(k)
        seen_any.append(True)
        return r

    try:
        return json.loads(data, object_pairs_hook=hook), bool(seen_any)
    except (ValueError, RecursionError):
        return None, False


def anywhere(data: bytes, parsed=UNPARSED) -> list[tuple[str, str]]:
    """``(where, key)`` of every repeated key in the text, at any depth (SAM: whether its decoder
    refuses one is not known, so each is worth a warning).  ``parsed``: ``orjson.loads(data)``,
    unchanged, if the caller has it."""
    doc, any_ = parse_marked(data, parsed)
    out: list = []
    if not any_:
        return out
    stack = [(doc, "top level")]
    while stack:
        v, where = stack.pop()
        if isinstance(v, dict):
            if type(v) is Repeated:
                out += [(where, k) for k in v.repeated]
            stack += [
                (c, f"{where}.{k}" if where != "top level" else k) for k, c in v.items() if isinstance(c, (dict, list))
            ]
        else:
            stack += [(c, f"{where}[{i}]") for i, c in enumerate(v) if isinstance(c, (dict, list))]
    return sorted(out)


def say(found: list) -> str:
    """One phrase for the first of ``found`` (and how many more)."""
    where, key = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"key {key[:40]!r} appears twice in {where[:80]}{more}"
