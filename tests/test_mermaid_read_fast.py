"""The cheaper read path of a mermaid session (issue #22) answers exactly as the full rules do.

Each shortcut is compared with the path it skips: the check of a complete message with the
field-by-field rules, the bracket count with the walk for depth, the importance loop with the
``any(...)`` it replaced.
"""

from __future__ import annotations

import copy
import random

import orjson
import pytest

from samctl import importance as imp
from samctl.stores import open_store
from samctl.stores.mermaid import decode, envelope
from tests.conftest import make_fixtures as mf
from tests.test_timeparse import EDGE_TIMESTAMPS


def _outcome(fn, *args):
    try:
        fn(*args)
    except decode.Rejected as exc:
        return str(exc)
    return None


@pytest.fixture
def demo_doc(mermaid_demo):
    conv = mermaid_demo / ".mermaid" / "conversations"
    return orjson.loads((conv / f"{mf.MERMAID_ID}.json").read_bytes())


def _variants(doc):
    """The demo snapshot with one message (or the dates) bent each way a reader meets."""
    for t in EDGE_TIMESTAMPS:
        for key in ("timestamp", "created_at"):
            d = copy.deepcopy(doc)
            (d["messages"][-1] if key == "timestamp" else d)[key] = t
            yield d
    for field in envelope.MESSAGE_FIELDS:
        for value in (None, True, 1, 1.5, "x", [], {}, ["x"], {"a": 1}):
            d = copy.deepcopy(doc)
            d["messages"][0][field] = value
            yield d
        d = copy.deepcopy(doc)
        del d["messages"][0][field]
        yield d
    for extra in ({"extra": 1}, {"role": "Robot"}, {"kind": "brand_new"}):
        d = copy.deepcopy(doc)
        d["messages"][1].update(extra)
        yield d
    for m in (None, [], "x", 1):
        d = copy.deepcopy(doc)
        d["messages"].insert(1, m)
        yield d


def test_the_complete_message_shortcut_reports_what_the_full_rules_report(demo_doc, monkeypatch):
    docs = list(_variants(demo_doc))
    fast = [_outcome(decode.check_snapshot, d) for d in docs]
    monkeypatch.setattr(envelope, "complete_message", lambda m: False)  # every message by the full rules
    monkeypatch.setattr(decode, "complete_messages", lambda msgs: None)  # (and the depth walked from the top)
    full = [_outcome(decode.check_snapshot, d) for d in docs]
    assert fast == full
    assert fast.count(None) > 20 and len(set(fast)) > 20  # both kinds of outcome were tried


@pytest.mark.parametrize("depth", [120, 125, 126, 127, 128, 129, 140])
@pytest.mark.parametrize("where", ["metadata", "plan", "string", "actions", "bare"])
def test_the_depth_walk_finds_nesting_past_serdes_limit_wherever_it_is(demo_doc, depth, where):
    d = copy.deepcopy(demo_doc)
    if where == "metadata":
        d["messages"][0]["metadata"] = orjson.loads(eventlog_nested(depth - 3))
    elif where == "plan":
        d["plan"] = {"steps": orjson.loads(eventlog_nested(depth - 2))}
    elif where == "bare":  # no other containers
        d = {k: d[k] for k in ("id", "title", "model_name", "project_path", "created_at", "updated_at")}
        d["messages"] = [
            {
                "role": "User",
                "content": "x",
                "timestamp": "2026-08-10T14:02:12Z",
                "metadata": orjson.loads(eventlog_nested(depth - 3)),
            }
        ]
    elif where == "string":  # brackets inside strings are text, not nesting
        d["messages"][0]["content"] = "[{" * 200
        d["x"] = orjson.loads(eventlog_nested(depth - 1))
    else:
        d["messages"][0]["actions"] = [orjson.loads(eventlog_nested(depth - 4))]
    assert (_outcome(decode.check_snapshot, d) is not None) == (depth > envelope.MAX_DEPTH)
    assert decode._too_deep(d, None) == (depth > envelope.MAX_DEPTH)  # the walk from the top agrees
    if where in ("metadata", "actions", "bare"):  # the walk from the messages' fields was the one taken
        assert decode.complete_messages(d["messages"]) is not None or where == "bare"


def eventlog_nested(depth: int) -> str:
    return "[" * depth + "0" + "]" * depth


def test_a_snapshot_one_level_too_deep_is_still_refused_by_every_reader(mermaid_demo, run):
    conv = mermaid_demo / ".mermaid" / "conversations"
    p = conv / f"{mf.MERMAID_ID}.json"
    doc = orjson.loads(p.read_bytes())
    doc["messages"][0]["metadata"] = orjson.loads(eventlog_nested(envelope.MAX_DEPTH - 2))  # depth 128 in all
    p.write_bytes(orjson.dumps(doc))
    before = {q.name: q.read_bytes() for q in conv.iterdir()}
    found: list = []
    assert open_store(str(mermaid_demo)).read_snapshot(p, found) is None
    assert [(f.code, f.reason) for f in found] == [
        ("bad-snapshot", "mermaid would not load this: nested deeper than serde_json's limit (127 levels)")
    ]
    r = run("--root", str(mermaid_demo), "check")
    assert r.exit_code == 3 and "nested deeper than serde_json's limit (127 levels)" in r.output
    assert {q.name: q.read_bytes() for q in conv.iterdir()} == before


def _old_importance(text: str, is_user: bool) -> float:
    """sam.md §4.5.4 as it was written before the loop: ``any(...)`` over each word list."""
    lower = text.lower()
    score = 0.7 if is_user else 0.5
    if not is_user and ("?" in text or any(w in lower for w in imp._QUESTION_WORDS)):
        score = max(score, 0.85)
    if any(w in lower for w in imp._CONSTRAINT_WORDS):
        score = max(score, 0.9)
    if len(text) < 200 and any(w in lower for w in imp._CONFIRM_WORDS):
        score = max(score, 0.85)
    if any(w in lower for w in imp._PRIORITY_WORDS):
        score = max(score, 0.85)
    if len(text) < 50 and lower in imp._ACKS:
        score = 0.3
    if is_user and len(text) > 300:
        score = min(score + 0.1, 1.0)
    return score


def test_importance_is_what_the_any_of_each_word_list_gave():
    rnd = random.Random(22)
    words = [
        w
        for ws in (imp._QUESTION_WORDS, imp._CONSTRAINT_WORDS, imp._CONFIRM_WORDS, imp._PRIORITY_WORDS, imp._ACK_WORDS)
        for w in ws
    ]
    pieces = (
        words
        + [w.upper() for w in words]
        + [w[:-1] for w in words]
        + [" ", "?", "!", ".", "İ", "ß", "K", "MUST", "Need  To", "that’s right", "x" * 60, "\n", "ok", "é"]
    )
    texts = [
        "",
        "?",
        "ok",
        "OK!",
        "Thanks.",
        "thanks!!",
        "İ" * 120,
        "must" + " " * 300,
        "x" * 199 + "yes",
        "x" * 200 + "yes",
        "x" * 49 + "ok",
    ]
    for _ in range(4000):
        texts.append("".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 40))))
    for t in texts:
        for user in (True, False):
            assert imp.importance(t, user) == _old_importance(t, user), (t, user)
