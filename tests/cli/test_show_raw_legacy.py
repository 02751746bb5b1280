"""``show --raw`` of a conversation that only the legacy single-file store holds (docs/formats/sam.md §5.3):
that conversation's element, not the whole ``conversations.json`` with every other one in it."""

from __future__ import annotations

import json

from tests.conftest import fingerprint

API = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"
OLD1 = "11111111-2222-4333-8444-555555555555"
OLD2 = "66666666-7777-4888-9999-AAAAAAAAAAAA"


def _legacy(sam_demo):
    doc = json.loads((sam_demo / "conversations" / API / "conversation.json").read_text())
    docs = [dict(doc, id=OLD1, title="Old one"), dict(doc, id=OLD2, title="Old two")]
    (sam_demo / "conversations" / "conversations.json").write_text(json.dumps(docs, indent=2))
    return docs


def test_raw_of_a_legacy_conversation_is_its_element_only(run, sam_demo):
    docs = _legacy(sam_demo)
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, "show", OLD2[:8], "--raw")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == docs[1]
    assert OLD1 not in r.stdout
    assert r.stderr.startswith("info: legacy: ") and "conversations.json" in r.stderr
    assert "not byte for byte" in r.stderr
    assert fingerprint(sam_demo) == before


def test_raw_of_a_folder_conversation_is_still_its_bytes(run, sam_demo):
    _legacy(sam_demo)
    r = run("--root", sam_demo, "show", API[:8], "--raw")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout == (sam_demo / "conversations" / API / "conversation.json").read_text()
