"""Numbers SAM cannot hold in otherwise valid JSON (sam.md §2 "JSON values": Int fields are 64-bit
integers, Doubles are finite).  orjson refuses a number past Double's range outright, so the file
is reported as valid JSON that SAM rejects (``sam-reject``), not as "not valid JSON"; and a
read-only command changes nothing."""

from __future__ import annotations

import json

import pytest

from tests.conftest import fingerprint

API = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"


def _with_number(sam_demo, key: str, number: str):
    p = sam_demo / "conversations" / API / "conversation.json"
    doc = json.loads(p.read_text())
    doc["settings"][key] = 0
    text = json.dumps(doc, indent=2).replace(f'"{key}": 0', f'"{key}": {number}')
    assert number in text
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "key,number", [("contextWindowSize", "1" * 400), ("temperature", "1e400"), ("temperature", "-" + "9" * 330)]
)
def test_a_number_past_double_range_is_sam_reject_not_bad_json(run, sam_demo, key, number):
    _with_number(sam_demo, key, number)
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, "--no-cache", "ls", "--format", "jsonl")
    assert r.exit_code == 3
    assert API not in r.stdout  # SAM skips the whole conversation, so does the listing
    line = next(x for x in r.stderr.splitlines() if API in x)
    assert line.startswith("error: sam-reject: ") and "not valid JSON" not in line
    assert "beyond the range of a Double" in line and "SAM skips the whole conversation" in line
    c = run("--root", sam_demo, "check")
    assert c.exit_code == 3 and "sam-reject" in c.stderr and "bad-json" not in c.stderr
    assert fingerprint(sam_demo) == before


def test_recover_salvages_the_rest_of_such_a_file(run, sam_demo):
    p = _with_number(sam_demo, "contextWindowSize", "1" * 400)
    messages = len(json.loads(p.read_text().replace("1" * 400, "0"))["messages"])
    r = run("--root", sam_demo, "recover", API[:8])
    assert r.exit_code == 0, r.stderr
    assert "beyond the range of a Double" in r.stdout and "not valid JSON" not in r.stdout
    doc = json.loads(p.read_text())
    assert len(doc["messages"]) == messages
    assert run("--root", sam_demo, "--no-cache", "check").exit_code == 0
