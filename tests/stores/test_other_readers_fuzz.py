"""The Claude Code and Codex decoders on generated input: any line may be replaced by any JSON value, any
field of a spec-true record by any value, and any byte string may stand for a file; the decoders never
raise, and every message they return has a role of the model and string content."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samctl.model import ROLES
from samctl.stores.claude_code.decode import decode_session
from samctl.stores.codex.decode import decode_rollout

REPO = Path(__file__).resolve().parents[2]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "fixtures" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


mcc, mcx = _load("make_claude_code"), _load("make_codex")
CLAUDE = mcc.session_one()
CODEX = mcx.thread_one()

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
json_value = st.recursive(
    json_leaf,
    lambda c: (
        st.lists(c, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "uuid",
                    "parentUuid",
                    "message",
                    "content",
                    "payload",
                    "id",
                    "text",
                    "call_id",
                    "num_turns",
                    "output",
                    "timestamp",
                    "role",
                    "isSidechain",
                    "agentId",
                ]
            )
            | st.text(max_size=6),
            c,
            max_size=4,
        )
    ),
    max_leaves=10,
)


@st.composite
def mutated_lines(draw, lines):
    out = [dict(d) for d in lines]
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(out) - 1))
        if draw(st.booleans()):
            out[i] = draw(json_value)
        elif isinstance(out[i], dict) and out[i]:
            key = draw(st.sampled_from(sorted(out[i])))
            out[i][key] = draw(json_value)
    return "".join(json.dumps(d) + "\n" for d in out).encode()


def _sane(conv):
    for m in conv.messages:
        assert m.role in ROLES and isinstance(m.content, str)
        assert m.reasoning is None or isinstance(m.reasoning, str)
    assert isinstance(conv.meta.title, str)
    conv.to_dict()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_lines(CLAUDE))
def test_claude_decoder_never_raises_on_mutated_records(data):
    conv, _ = decode_session(data, "/x.jsonl", mcc.S1)
    _sane(conv)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_lines(CODEX))
def test_codex_decoder_never_raises_on_mutated_records(data):
    conv, _ = decode_rollout(data, "/x.jsonl", mcx.T1)
    _sane(conv)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400), st.sampled_from(["/x.jsonl", "/x.json"]))
def test_decoders_never_raise_on_bytes(data, path):
    _sane(decode_session(data, path, mcc.S1)[0])
    _sane(decode_rollout(data, path, mcx.T1)[0])
