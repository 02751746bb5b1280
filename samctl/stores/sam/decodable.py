"""Would SAM decode this conversation?  ``schema``'s rules compiled into plain predicates, for the
listing, which asks that of every conversation.json and needs no more than the first reason.

``schema.validate_conversation`` walks a document building a path for every value and reports
every problem, warnings included, which is more than the listing needs.  The predicates only answer yes
or no, without building paths; only a document they do not pass is walked again by ``schema`` to say
where and why (figures: bench/README.md, "Figures behind the code's rules").

Invariants:
- ``first_error(doc, strict_json)`` is the first error-severity problem ``validate_conversation``
  reports, or None, for any decoded JSON value (``tests/stores/test_sam_decodable.py`` checks the
  two against each other on mutated documents).
- A compiled predicate is true exactly when ``schema.check`` appends nothing for the value.
- Never raises, never modifies its input; recursion follows the schema (depth < 10), and values
  under keys the schema does not know are walked iteratively.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from datetime import datetime

from samctl.stores.sam import schema
from samctl.stores.sam.schema import (
    BOOL,
    DATA,
    DATE,
    DATE_RE,
    DOUBLE,
    INT,
    PART,
    STRING,
    UUID,
    UUID_RE,
    Array,
    Map,
    Object,
    OneOf,
)

SCHEMA_DEPTH = 8  # containers the schema itself nests, at most (conversation, messages, message, contentParts, ...)
LOOSE_DEPTH = schema.MAX_DEPTH - SCHEMA_DEPTH  # nesting allowed under a key the schema does not know


# The form SAM writes, in UTC on a day every month has: a date ``_date`` takes, read by one match.
_PLAIN_DATE = re.compile(
    r"(?!0000)[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z\Z"
).match


def _date(v) -> bool:
    """``schema.parse_date_parts(v)`` is not None and has no fraction, without computing the instant.
    DATE_RE's groups are fixed runs of ASCII digits, so they compare as text; only a day past the
    28th asks its month how long it is."""
    if type(v) is str and _PLAIN_DATE(v) is not None:
        return True
    m = DATE_RE.match(v) if isinstance(v, str) else None
    if m is None or m[7] or (m[9] and (m[10] > "23" or m[11] > "59")):
        return False
    day = m[3]
    if not (m[1] != "0000" and "01" <= m[2] <= "12" and "01" <= day and m[4] <= "23" and m[5] <= "59" and m[6] <= "59"):
        return False  # year 0, month 13, hour 24, second 60 ...
    if day <= "28":
        return True
    try:
        datetime(int(m[1]), int(m[2]), int(day))
    except ValueError:  # Feb 30, Apr 31 ...
        return False
    return True


def _leaf(kind):
    if kind == STRING:
        return lambda v: isinstance(v, str)
    if kind == BOOL:
        return lambda v: isinstance(v, bool)
    if kind == INT:
        return lambda v: isinstance(v, int) and not isinstance(v, bool) and schema.INT_MIN <= v <= schema.INT_MAX
    if kind == UUID:
        return lambda v: isinstance(v, str) and UUID_RE.match(v) is not None
    if kind == DATE:
        return _date
    if kind == DOUBLE:

        def double(v) -> bool:
            if isinstance(v, float):
                return math.isfinite(v)
            if isinstance(v, bool) or not isinstance(v, int):
                return False
            try:
                float(v)
            except OverflowError:
                return False
            return True

        return double
    if kind == DATA:

        def data(v) -> bool:
            if not isinstance(v, str):
                return False
            try:
                base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                return False
            return True

        return data
    raise ValueError(f"unknown kind {kind!r}")


class _Compiler:
    """One predicate per kind of the schema (shared kinds compiled once).  Values under keys an
    object's kind does not know are outside the schema, but nesting there deeper than SAM's JSON
    reader takes still makes SAM refuse the file: an object predicate is false when such a value
    nests more than ``MAX_DEPTH - SCHEMA_DEPTH`` levels (``schema.check_values`` then says exactly)."""

    def __init__(self):
        self.done: dict = {}

    def of(self, kind):
        key = id(kind)
        if key not in self.done:
            self.done[key] = self._make(kind)
        return self.done[key]

    def _make(self, kind):
        if isinstance(kind, Object):
            subs: dict = {}
            required = frozenset(key for key, (_, req) in kind.fields.items() if req)
            # key -> the type whose values its predicate takes all of (a string's, a boolean's): a value
            # of exactly that type passes without a call, any other goes to the predicate
            exact = {key: _EXACT[sub] for key, (sub, _) in kind.fields.items() if sub in _EXACT}

            def obj(v) -> bool:
                # the keys present, not every key of the kind: most optional ones are absent
                if not isinstance(v, dict) or not required <= v.keys():
                    return False
                for key, x in v.items():
                    if type(x) is exact.get(key):
                        continue
                    sub = subs.get(key)
                    if sub is None:
                        if not _nests_within(x, LOOSE_DEPTH):
                            return False
                    elif x is None:  # null is absent, for SAM
                        if key in required:
                            return False
                    elif not sub(x):
                        return False
                return True

            self.done[id(kind)] = obj  # before the fields: a kind may (some day) contain itself
            subs.update((key, self.of(sub)) for key, (sub, _) in kind.fields.items())
            return obj
        if isinstance(kind, Array):
            item = self.of(kind.item)
            return lambda v: isinstance(v, list) and all(map(item, v))
        if isinstance(kind, Map):
            value = self.of(kind.value)
            return lambda v: isinstance(v, dict) and all(map(value, v.values()))
        if isinstance(kind, OneOf):
            return lambda v: isinstance(v, str) and v in kind
        if kind is PART:
            parts = {t: self.of(k) for t, k in schema.PART_KINDS.items()}
            unknown = self.of(schema.UNKNOWN_PART_KIND)

            def part(v) -> bool:
                t = v.get("type") if isinstance(v, dict) else None
                return (parts.get(t, unknown) if isinstance(t, str) else unknown)(v)

            return part
        return _leaf(kind)


_EXACT = {STRING: str, BOOL: bool}  # (``_leaf``'s predicates of these take every value of the type)
_conversation = None


def _nests_within(value, limit: int) -> bool:
    """True if ``value`` holds no array or object nested more than ``limit`` levels (itself one)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            items = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        if depth > limit:
            return False
        stack += [(x, depth + 1) for x in items if isinstance(x, (dict, list))]
    return True


def first_error(doc, strict_json: bool = False) -> schema.Problem | None:
    """The first error-severity problem ``schema.validate_conversation(doc)`` reports, or None.

    ``strict_json``: ``doc`` was decoded by orjson, which refuses lone surrogates and NaN or
    Infinity, so of ``schema.check_values``'s rules only the nesting depth is left, which the
    predicates look after; otherwise ``check_values`` runs too.
    """
    global _conversation
    if _conversation is None:
        _conversation = _Compiler().of(schema.CONVERSATION_KIND)
    fine = isinstance(doc, dict) and _conversation(doc)
    if fine and not strict_json:
        out: list = []
        schema.check_values(doc, (), out)
        fine = not out
    if fine:
        return None
    errors = schema.errors_of(doc)
    return errors[0] if errors else None
