import json

import pytest

from tests.conftest import fingerprint

SPEC_ID = "20260810_140307_512"
SAM_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"


def test_show_text_has_roles_tools_and_results(run, mermaid_demo):
    r = run("--root", mermaid_demo, "show", SPEC_ID)
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert out.splitlines()[0] == "Fix the flaky test in tests/parser.rs"
    for text in (
        "── user ·",
        "── assistant ·",
        "── tool read_file ·",
        "→ read_file(tests/parser.rs)",
        "⚙ Read tests/parser.rs ok: 42 lines",
        "The test depends on HashMap iteration order",
    ):
        assert text in out, text
    assert out.index("── user") < out.index("── tool read_file") < out.index("HashMap")


def test_show_accepts_a_unique_prefix(run, mermaid_demo):
    a = run("--root", mermaid_demo, "show", SPEC_ID)
    b = run("--root", mermaid_demo, "show", "20260810")
    assert a.stdout == b.stdout and b.exit_code == 0


def test_reasoning_is_folded_unless_asked(run, mermaid_demo):
    r = run("--root", mermaid_demo, "show", "20260812")
    assert "reasoning folded: 1 line" in r.stdout
    assert "clap derive" not in r.stdout
    r = run("--root", mermaid_demo, "show", "20260812", "--reasoning")
    assert "clap derive" in r.stdout


def test_show_markdown_and_json(run, mermaid_demo):
    md = run("--root", mermaid_demo, "show", SPEC_ID, "--format", "markdown").stdout
    assert md.startswith("# Fix the flaky test in tests/parser.rs\n")
    assert "## Tool `read_file`" in md and "call_01" not in md  # (call ids: only in JSON)
    assert "**Tool call** `read_file(tests/parser.rs)`" in md
    doc = json.loads(run("--root", mermaid_demo, "show", SPEC_ID, "--format", "json").stdout)
    assert doc["id"] == SPEC_ID and doc["message_count"] == 4
    assert [m["role"] for m in doc["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert doc["messages"][1]["tool_calls"] == [
        {"id": "call_01", "name": "read_file", "arguments": {"path": "tests/parser.rs"}}
    ]


def test_show_raw_prints_the_stored_bytes(run, mermaid_demo):
    r = run("--root", mermaid_demo, "show", SPEC_ID, "--raw")
    p = mermaid_demo / ".mermaid" / "conversations" / f"{SPEC_ID}.json"
    assert r.stdout_bytes == p.read_bytes()


def test_sam_show(run, sam_demo):
    r = run("--root", sam_demo, "show", "8b58")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "Portland weekend trip" in out
    assert "── tool weather_operations ·" in out
    assert "── reasoning ·" in out and "reasoning folded" in out
    assert "Budget is tight" not in out
    assert "Budget is tight" in run("--root", sam_demo, "show", "8B58", "--reasoning").stdout


def test_sam_show_hides_what_the_ui_hides(run, sam_demo):
    r = run("--root", sam_demo, "show", "C2A1")
    assert "Continue." not in r.stdout
    assert "Continue." in run("--root", sam_demo, "show", "C2A1", "--all").stdout


@pytest.mark.parametrize(
    "bad",
    [
        "../x",
        "/etc/passwd",
        "..\\x",
        "20260810\x00",
        "x" * 300,
        "2026-08-10",
        "20260810_140307_512/../../x",
        " 20260810",
        "",
    ],
)
def test_unsafe_or_malformed_ids_are_usage_errors(run, mermaid_demo, bad):
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "show", bad)
    assert r.exit_code == 2, (bad, r.stderr)
    assert len(r.stderr.strip().splitlines()) <= 2 and "not a mermaid conversation id" in r.stderr
    assert r.stdout == ""
    assert fingerprint(mermaid_demo) == before


@pytest.mark.parametrize("bad", ["../x", "8B58CBC4-ACA7-4811-AE66-C01921690310/..", "ZZZZ", "8b58 "])
def test_sam_unsafe_ids(run, sam_demo, bad):
    r = run("--root", sam_demo, "show", bad)
    assert r.exit_code == 2 and "not a sam conversation id" in r.stderr


def test_ambiguous_prefix_is_exit_2_and_names_the_matches(run, mermaid_demo):
    r = run("--root", mermaid_demo, "show", "2026081")
    assert r.exit_code == 2
    assert "ambiguous" in r.stderr and "20260810_140307_512" in r.stderr and "20260812_091500_004" in r.stderr


def test_unknown_id_is_exit_4(run, mermaid_demo):
    r = run("--root", mermaid_demo, "show", "20250101_000000_000")
    assert r.exit_code == 4 and "no conversation matches" in r.stderr


def test_corrupt_snapshot_falls_back_to_the_log(run, mermaid_demo):
    conv = mermaid_demo / ".mermaid" / "conversations"
    (conv / f"{SPEC_ID}.json").write_text("{ torn")
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "show", SPEC_ID, "--format", "json")
    assert r.exit_code == 3
    doc = json.loads(r.stdout)
    assert doc["message_count"] == 4 and doc["source"].endswith(".jsonl (folded)")
    assert "bad-json" in r.stderr
    assert fingerprint(mermaid_demo) == before


def test_nothing_readable_is_exit_3_with_a_hint(run, mermaid_demo):
    conv = mermaid_demo / ".mermaid" / "conversations"
    (conv / f"{SPEC_ID}.json").write_text("{ torn")
    (conv / f"{SPEC_ID}.jsonl").write_text("garbage\n")
    r = run("--root", mermaid_demo, "show", SPEC_ID)
    assert r.exit_code == 3 and r.stdout == ""
    assert f"samctl --root {mermaid_demo} recover {SPEC_ID}" in r.stderr


def test_control_characters_cannot_drive_the_terminal(run, mermaid_demo):
    conv = mermaid_demo / ".mermaid" / "conversations"
    p = conv / f"{SPEC_ID}.json"
    doc = json.loads(p.read_text())
    doc["messages"][0]["content"] = "evil \x1b[2J\x1b]0;pwned\x07 text"
    p.write_text(json.dumps(doc, indent=2, sort_keys=True))
    r = run("--root", mermaid_demo, "show", SPEC_ID)
    assert "\x1b" not in r.stdout and "\\x1b[2J" in r.stdout
