"""A message's time as a number is parsed from its text when first read (``PARSE_LATER``): the same number
a parse at load gave, for every reader of the model, and no parse at all for an export to JSON lines."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from samctl.model import PARSE_LATER, Message
from samctl.timeparse import parse_timestamp

TEXTS = ["2026-08-10T14:02:11Z", "2026-08-10T14:03:21.104938201-04:00", "2026-02-30T00:00:00Z", "yesterday", None]


@pytest.mark.parametrize("text", TEXTS)
def test_a_time_parsed_later_is_the_time_parsed_now(text):
    now = Message("user", "hi", text, parse_timestamp(text))
    assert Message("user", "hi", text, PARSE_LATER).timestamp_ts == now.timestamp_ts
    for later in (
        Message("user", "hi", text, PARSE_LATER) == now,
        pickle.loads(pickle.dumps(Message("user", "hi", text, PARSE_LATER))) == now,
        copy.copy(Message("user", "hi", text, PARSE_LATER)) == now,
        dataclasses.replace(Message("user", "hi", text, PARSE_LATER)) == now,
        dataclasses.asdict(Message("user", "hi", text, PARSE_LATER)) == dataclasses.asdict(now),
    ):
        assert later


def test_only_the_time_is_left_for_later():
    m = Message("user", "hi", "2026-08-10T14:02:11Z", PARSE_LATER)
    with pytest.raises(AttributeError):
        m.no_such_field  # noqa: B018 - the attribute access is the test
    assert not hasattr(m, "other")
    m.timestamp_ts = 5.0  # a value set is kept, not parsed over
    assert m.timestamp_ts == 5.0


@pytest.mark.parametrize("fixture", ["sam_demo", "mermaid_demo"])
def test_a_load_gives_each_message_the_time_its_text_says(request, fixture):
    from samctl.stores import open_store

    store = open_store(str(request.getfixturevalue(fixture)))
    metas = store.list_metas([])
    assert metas
    seen = 0
    for meta in metas:
        conv = store.load_listed(meta.id, [])
        for m in conv.messages:
            assert m.timestamp_ts == parse_timestamp(m.timestamp)
            seen += m.timestamp_ts is not None
    assert seen > 3


def _parsed(m: Message) -> bool:
    """Whether ``m``'s time has been parsed (its slot is set), without parsing it."""
    try:
        Message.__dict__["timestamp_ts"].__get__(m, Message)
    except AttributeError:
        return False
    return True


@pytest.mark.parametrize("fixture", ["sam_demo", "mermaid_demo"])
def test_an_export_to_json_lines_parses_no_message_time(request, fixture):
    from samctl.core.export import render_one
    from samctl.stores import open_store

    store = open_store(str(request.getfixturevalue(fixture)))
    convs = [store.load_listed(meta.id, []) for meta in store.list_metas([])]
    msgs = [m for c in convs for m in c.messages if m.timestamp]
    assert len(msgs) > 5 and not any(map(_parsed, msgs))
    for conv in convs:
        assert render_one("jsonl", store, conv, True, [], "2026-12-05T00:00:00Z")
    assert not any(map(_parsed, msgs))
    from samctl.render.text import to_text

    for conv in convs:  # show's transcript gives each message's local time: parsed as it is read
        to_text(conv)
    assert all(map(_parsed, (m for c in convs for m in c.messages if not m.hidden and m.timestamp)))
