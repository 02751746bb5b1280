"""No byte of a file's content reaches the terminal as a control character.

Every text output (ls, stats, log, show text and markdown, finding lines on
stderr) must escape C0, DEL, C1 and bidi controls; JSON output stays exact JSON.
"""

import json
import os
import re

import pytest

from samctl.safetext import safe_text

SAM_ID = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"
SPEC_ID = "20260810_140307_512"
LOG_ID = "20260901_170000_250"

# OSC title + BEL, CSI clear screen, an 8-bit CSI, a DCS ... ST, an 8-bit OSC, a right-to-left override
HOSTILE = "A\x1b]0;owned\x07\x1b[2J\u009b31m\u0090dcs\u009c\u009d0;T\u009c\u202eZ"
ESCAPED = "A\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\x90dcs\\x9c\\x9d0;T\\x9c\\u202eZ"
# what no text output may hold: C0 but newline and tab, DEL, C1, line/paragraph separators, bidi controls
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _assert_clean(text: str) -> None:
    m = RAW.search(text)
    assert m is None, f"raw {m.group()!r} at {m.start()}: {text[max(0, m.start() - 40) : m.start() + 40]!r}"


def _sam_title(sam_demo, title):
    p = sam_demo / "conversations" / SAM_ID / "conversation.json"
    doc = json.loads(p.read_text())
    doc["title"] = title
    doc["settings"]["selectedModel"] = title
    doc["messages"][0]["content"] = "ping " + title
    p.write_text(json.dumps(doc, indent=2))


def _mermaid_hostile(mermaid_demo):
    p = mermaid_demo / ".mermaid" / "conversations" / f"{SPEC_ID}.json"
    doc = json.loads(p.read_text())
    doc["title"] = doc["model_name"] = HOSTILE
    for m in doc["messages"]:
        m["content"] = "text " + HOSTILE
        m["thinking"] = "thought " + HOSTILE
    tool = doc["messages"][2]
    tool["tool_name"] = tool["tool_call_id"] = HOSTILE
    call = doc["messages"][1]["tool_calls"][0]
    call["id"] = call["function"]["name"] = HOSTILE
    call["function"]["arguments"] = {"path": HOSTILE}
    action = doc["messages"][1]["actions"][0]
    action["target"] = action["action_type"] = HOSTILE
    action["result"]["Success"]["output"] = HOSTILE
    p.write_text(json.dumps(doc, indent=2, sort_keys=True))


# -- safe_text itself --------------------------------------------------------------------------


def test_safe_text_escapes_c0_del_and_all_of_c1():
    for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]:
        ch = chr(c)
        if ch in "\n\t":
            assert safe_text(ch) == ch
            assert safe_text(ch, lines=False) == f"\\x{c:02x}"
        else:
            assert safe_text(ch) == f"\\x{c:02x}", hex(c)


@pytest.mark.parametrize("c", [0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
def test_safe_text_escapes_separators_and_bidi_controls(c):
    assert safe_text(f"a{chr(c)}b") == f"a\\u{c:04x}b"


def test_safe_text_keeps_printable_text():
    s = "Grüße → 東京 🙂 a\u200db é\u0301 ¡\u00a0$500\n\tend"
    assert safe_text(s) == s
    assert safe_text(HOSTILE) == ESCAPED


# -- ls, stats, log ------------------------------------------------------------------------------


def test_ls_table_escapes_titles(run, sam_demo):
    _sam_title(sam_demo, HOSTILE)
    r = run("--root", sam_demo, "ls")
    assert r.exit_code == 0, r.stderr
    _assert_clean(r.stdout)
    _assert_clean(r.stderr)
    assert ESCAPED in r.stdout


def test_ls_json_stays_exact(run, sam_demo):
    _sam_title(sam_demo, HOSTILE)
    r = run("--root", sam_demo, "ls", "--format", "json")
    assert r.exit_code == 0, r.stderr
    _assert_clean(r.stdout)  # the encoder escapes C0; samctl also DEL, C1 and bidi controls
    assert [m["title"] for m in json.loads(r.stdout) if m["id"] == SAM_ID] == [HOSTILE]
    jsonl = run("--root", sam_demo, "ls", "--format", "jsonl").stdout
    _assert_clean(jsonl)
    rows = [json.loads(ln) for ln in jsonl.splitlines()]
    assert [m["title"] for m in rows if m["id"] == SAM_ID] == [HOSTILE]


def test_the_lifecycle_commands_escape_titles(run, sam_demo):
    """rm lists what it moves, restore what it put back, attic what it holds: titles from the files."""
    _sam_title(sam_demo, HOSTILE)
    for args in (["rm", SAM_ID, "--dry-run"], ["rm", SAM_ID], ["attic"], ["restore", SAM_ID]):
        r = run("--root", sam_demo, *args)
        assert r.exit_code == 0, r.output
        _assert_clean(r.stdout)
        _assert_clean(r.stderr)


def test_stats_escapes_titles(run, sam_demo):
    _sam_title(sam_demo, HOSTILE)
    r = run("--root", sam_demo, "stats", "--top", "10")
    assert r.exit_code == 0, r.stderr
    _assert_clean(r.stdout)
    assert ESCAPED[:49] + "…" in r.stdout  # titles are clipped to 50 characters, after escaping
    doc = json.loads(run("--root", sam_demo, "stats", "--top", "10", "--format", "json").stdout)
    assert HOSTILE in [x["title"] for x in doc["stores"][0]["largest"]]


def test_log_escapes_event_text(run, mermaid_demo):
    p = mermaid_demo / ".mermaid" / "conversations" / f"{LOG_ID}.jsonl"
    lines = p.read_text().splitlines(keepends=True)
    esc = json.dumps(HOSTILE)[1:-1]
    lines[0] = lines[0].replace("ollama/qwen3-coder:30b", esc)
    lines[2] = lines[2].replace("What does the deadline field in config.toml do?", esc)
    p.write_text("".join(lines))
    r = run("--root", mermaid_demo, "log", LOG_ID)
    assert r.exit_code == 0, r.stderr
    _assert_clean(r.stdout)
    assert f"prompt: {ESCAPED}" in r.stdout and f"· {ESCAPED} ·" in r.stdout
    doc = json.loads(run("--root", mermaid_demo, "log", LOG_ID, "--format", "json").stdout)
    assert [e["event"]["text"] for e in doc["events"] if e["type"] == "input"] == [HOSTILE]


# -- show --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_show_escapes_every_piece_of_transcript(run, mermaid_demo, fmt):
    _mermaid_hostile(mermaid_demo)
    r = run("--root", mermaid_demo, "show", SPEC_ID, "--format", fmt, "--reasoning", "--no-pager")
    assert r.exit_code == 0, r.stderr
    _assert_clean(r.stdout)
    assert r.stdout.count(ESCAPED) >= 10


def test_show_sam_markdown_escapes_title_model_and_content(run, sam_demo):
    _sam_title(sam_demo, HOSTILE)
    r = run("--root", sam_demo, "show", SAM_ID, "--format", "markdown", "--no-pager")
    assert r.exit_code == 0, r.stderr
    _assert_clean(r.stdout)
    assert r.stdout.startswith(f"# {ESCAPED}\n")
    assert f"- **model:** {ESCAPED}\n" in r.stdout and f"ping {ESCAPED}\n" in r.stdout


def test_show_json_stays_exact(run, mermaid_demo):
    _mermaid_hostile(mermaid_demo)
    r = run("--root", mermaid_demo, "show", SPEC_ID, "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["title"] == doc["model"] == HOSTILE
    assert doc["messages"][2]["tool_name"] == HOSTILE and doc["messages"][0]["content"] == "text " + HOSTILE


# -- findings on stderr --------------------------------------------------------------------------


def test_finding_lines_escape_file_names(run, sam_demo):
    name = "\x1b]0;DIR\x07\u009b2J\u202e\nx"
    d = sam_demo / "conversations" / name
    d.mkdir()
    (d / "conversation.json").write_text("{")
    r = run("--root", sam_demo, "ls")
    assert r.exit_code == 3
    _assert_clean(r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("error: bad-json: ")]
    assert len(lines) == 1 and "\\x1b]0;DIR\\x07\\x9b2J\\u202e\\x0ax/conversation.json: " in lines[0]


def _on_a_terminal(args, env) -> str:
    """What ``samctl ARGS`` prints on a pseudo-terminal (stdout is a tty: styles are on)."""
    import pty
    import subprocess
    import sys

    main, sub = pty.openpty()
    p = subprocess.Popen(
        [sys.executable, "-m", "samctl", *args],
        stdout=sub,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "SAMCTL_ASSUME_SAM_RUNNING": "0", **env},
    )
    os.close(sub)
    out = b""
    while True:
        try:
            b = os.read(main, 65536)
        except OSError:  # (EIO: the child closed the terminal)
            break
        if not b:
            break
        out += b
    p.wait()
    os.close(main)
    return out.decode("utf-8", "replace")


@pytest.mark.parametrize("cmd", [["search", "budget"], ["show", "8B58", "--no-pager"], ["stats"]])
def test_no_color_strips_styles_even_on_a_terminal(sam_demo, tmp_path, cmd):
    """no-color.org: NO_COLOR set and not empty means no ANSI styles, terminal or not."""
    args = ["--root", str(sam_demo), *cmd]
    env = {"SAMCTL_CACHE_DIR": str(tmp_path / "cache")}
    assert "\x1b[" in _on_a_terminal(args, {**env, "NO_COLOR": ""})  # styled (so the check below can fail)
    out = _on_a_terminal(args, {**env, "NO_COLOR": "1"})
    assert "\x1b[" not in out and out.strip()


def test_show_keeps_a_title_with_tabs_and_newlines_on_its_line(run, sam_demo):
    import orjson

    p = sam_demo / "conversations" / "8B58CBC4-ACA7-4811-AE66-C01921690310" / "conversation.json"
    doc = orjson.loads(p.read_bytes())
    doc["title"] = "Portland\tweekend\ntrip"
    p.write_bytes(orjson.dumps(doc))
    r = run("--root", sam_demo, "show", "8B58", "--no-pager")
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == "Portland weekend trip", r.stdout[:200]
