"""An export's JSON lines made straight from the stored messages (``Store.message_rows``, issue #32) are
the lines made through the model (a Message per message, then ``to_dict``): the same bytes, message by
message and for whole exports, for SAM and mermaid, the demo and the broken trees.
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samctl.stores.mermaid import decode as mermaid_decode
from samctl.stores.mermaid import envelope
from samctl.stores.mermaid.store import MermaidStore
from samctl.stores.sam import decode as sam_decode
from samctl.stores.sam.store import SamStore
from tests.stores.test_mermaid_eventlog_fastpaths import BASE_MESSAGE, MISSING, VALUES, _perturbed
from tests.stores.test_sam_decode_fast import MESSAGES as SAM_MESSAGES
from tests.stores.test_sam_decode_fast import VALUES as SAM_VALUES


def _through_the_model(decoded: list, cid: str, store: str, include_hidden: bool) -> bytes:
    shown = [m for m in decoded if m is not None and (include_hidden or not m.hidden)]
    return orjson.dumps([m.to_dict({"conversation_id": cid, "store": store, "seq": i}) for i, m in enumerate(shown)])


MERMAID_CHANGES = st.lists(
    st.tuples(
        st.sampled_from([k for k in envelope.MESSAGE_FIELDS if k not in ("role", "content", "timestamp")]),
        st.one_of(
            VALUES,
            st.just(MISSING),
            st.sampled_from(["recovery_nudge", "context_marker", "brand_new"]),
            st.just([{"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": "{}"}}]),
            st.just([{"function": "x"}, 3]),
            st.just(["aGVsbG8=", 1]),
        ),
    ),
    max_size=4,
)
MERMAID_ROLES = st.sampled_from(["User", "Assistant", "System", "Tool", "Robot"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(MERMAID_CHANGES, MERMAID_ROLES), max_size=5), st.booleans())
def test_mermaid_rows_are_the_models_rows(spec, include_hidden):
    msgs = []
    for changes, role in spec:
        m = _perturbed(BASE_MESSAGE, changes, False)
        m["role"] = role
        if envelope.check_message(m, "m") is None:  # what a snapshot mermaid loads can hold
            msgs.append(m)
    got = orjson.dumps(mermaid_decode.message_rows(msgs, "20260810_140307_512", include_hidden))
    decoded = [mermaid_decode.message(m) for m in msgs]
    assert got == _through_the_model(decoded, "20260810_140307_512", "mermaid", include_hidden)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(SAM_MESSAGES, SAM_VALUES), max_size=5), st.booleans())
def test_sam_rows_are_the_models_rows(msgs, include_hidden):
    cid = "8B58CBC4-ACA7-4811-AE66-C01921690310"
    got = orjson.dumps(sam_decode.message_rows(msgs, cid, include_hidden))
    assert got == _through_the_model([sam_decode.message(m) for m in msgs], cid, "sam", include_hidden)


def _export(run, root, *extra):
    r = run("--root", root, "export", "--all", "--to", "jsonl", *extra)
    return r.exit_code, r.stdout, r.stderr


@pytest.mark.parametrize("tree", ["mermaid_demo", "sam_demo", "mermaid_broken", "sam_broken"])
@pytest.mark.parametrize("extra", [(), ("--all-messages",)])
def test_a_whole_export_is_the_same_either_way(tree, extra, request, run, monkeypatch):
    root = request.getfixturevalue(tree)
    root = root[0] if isinstance(root, tuple) else root
    store_class = MermaidStore if tree.startswith("mermaid") else SamStore
    straight = store_class.message_rows
    taken = []

    def counted(self, cid, findings, include_hidden):
        rows = straight(self, cid, findings, include_hidden)
        taken.append(rows is not None)
        return rows

    monkeypatch.setattr(store_class, "message_rows", counted)
    fast = _export(run, root, *extra)
    monkeypatch.setattr(store_class, "message_rows", lambda self, cid, findings, include_hidden: None)
    slow = _export(run, root, *extra)
    assert fast == slow and fast[0] in (0, 3) and fast[1]
    assert any(taken)  # the straight path was taken for some
    if tree.endswith("broken"):
        assert not all(taken)  # and the model's for others (a damaged snapshot, a folded log)
