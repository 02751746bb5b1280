"""A key written twice in one JSON object (issue #20, finding 11): mermaid's serde refuses a struct
with a repeated field, so `check` calls such a snapshot, sidecar or log line an error (with `recover`
as the way out), while a repeated key inside a free JSON value (a map for serde) is no finding; in a
SAM conversation.json each one is a warning.  `ls` never pays for the second parse."""

from __future__ import annotations

import orjson
import pytest

from tests.adversarial.hostile import with_repeated
from tests.cli.test_lifecycle import MID, SID, conv
from tests.conftest import fingerprint

# --- mermaid snapshot ------------------------------------------------------------------------

STRUCT_LEVELS = [
    ((), "title"),
    (("messages", 0), "content"),
    (("messages", 1, "actions", 0), "target"),
    (("cumulative_token_usage",), "prompt_tokens"),
    (("tasks",), "next_id"),
]


@pytest.mark.parametrize("path,key", STRUCT_LEVELS, ids=lambda x: ".".join(map(str, x)) if isinstance(x, tuple) else x)
def test_a_field_repeated_in_a_snapshot_struct_is_an_error_and_recover_rewrites_it(run, mermaid_demo, path, key):
    snap = conv(mermaid_demo) / f"{MID}.json"
    doc = orjson.loads(snap.read_bytes())
    obj = doc
    for p in path:
        obj = obj[p]
    assert key in obj
    snap.write_text(with_repeated(doc, path, key, "hand edit" if isinstance(obj[key], str) else 7))
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "check")
    assert r.exit_code == 3, r.output
    assert "error: bad-snapshot: " in r.stderr and f"key {key!r} appears twice" in r.stderr
    assert f"recover {MID}" in r.stderr
    assert fingerprint(mermaid_demo) == fp
    assert run("--root", mermaid_demo, "ls").exit_code == 0  # (listed from its sidecar, as mermaid lists it)
    r = run("--root", mermaid_demo, "recover", MID)
    assert r.exit_code == 0 and "appears twice" in r.stdout + r.stderr, r.output
    assert orjson.loads(snap.read_bytes()) == doc  # the last value of each, as every reader took it
    r = run("--root", mermaid_demo, "check")
    assert r.exit_code == 0 and "bad-snapshot" not in r.stderr, r.output


@pytest.mark.parametrize(
    "path,key",
    [
        (("messages", 1, "tool_calls", 0, "function", "arguments"), "path"),
        (("messages", 0), "some_newer_field"),
        ((), "unknown_key"),
    ],
    ids=["arguments", "unknown-in-message", "unknown-top"],
)
def test_a_key_repeated_where_serde_keeps_the_last_is_no_finding(run, mermaid_demo, path, key):
    """A free JSON value (tool arguments: a map for serde) keeps the last; an unknown key in a struct is skipped."""
    snap = conv(mermaid_demo) / f"{MID}.json"
    doc = orjson.loads(snap.read_bytes())
    obj = doc
    for p in path:
        obj = obj[p]
    obj.setdefault(key, "kept")  # (a key the log does not have: the fold differs, a warning)
    snap.write_text(with_repeated(doc, path, key))
    r = run("--root", mermaid_demo, "check")
    assert "appears twice" not in r.stderr and "error:" not in r.stderr, r.output


# --- mermaid log line and sidecar ------------------------------------------------------------


@pytest.mark.parametrize(
    "path,key",
    [((), "seq"), (("event",), "type"), (("event", "message"), "role")],
    ids=["envelope", "event", "message"],
)
def test_a_field_repeated_in_a_log_line_is_where_mermaid_stops_reading(run, mermaid_demo, path, key):
    log = conv(mermaid_demo) / f"{MID}.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    n = next(i for i, x in enumerate(lines) if orjson.loads(x)["event"]["type"] == "message")
    env = orjson.loads(lines[n])
    obj = env
    for p in path:
        obj = obj[p]
    lines[n] = (with_repeated(env, path, key, obj[key], indent=False) + "\n").encode()
    log.write_bytes(b"".join(lines))
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "check")
    assert r.exit_code == 3, r.output
    assert (
        "error: log-duplicate-key: " in r.stderr
        and f"line {n + 1} " in r.stderr
        and f"{key!r} appears twice" in r.stderr
    ), r.stderr
    assert fingerprint(mermaid_demo) == fp


def test_a_key_repeated_in_tool_arguments_of_a_log_line_is_no_finding(run, mermaid_demo):
    log = conv(mermaid_demo) / f"{MID}.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    n = next(i for i, x in enumerate(lines) if (orjson.loads(x)["event"].get("message") or {}).get("tool_calls"))
    env = orjson.loads(lines[n])
    args = env["event"]["message"]["tool_calls"][0]["function"]["arguments"]
    lines[n] = (
        with_repeated(
            env, ("event", "message", "tool_calls", 0, "function", "arguments"), next(iter(args)), indent=False
        )
        + "\n"
    ).encode()
    log.write_bytes(b"".join(lines))
    r = run("--root", mermaid_demo, "check")
    assert "log-duplicate-key" not in r.stderr, r.output


def test_a_repeated_field_in_a_big_sidecar_is_caught_too(run, mermaid_demo):
    """The sidecar check read only texts up to 64 KiB a second time."""
    meta = conv(mermaid_demo) / f"{MID}.meta"
    doc = orjson.loads(meta.read_bytes())
    doc["title"] = "x" * 70000
    meta.write_text(with_repeated(doc, (), "message_count", 3, indent=False))
    r = run("--root", mermaid_demo, "check")
    assert r.exit_code == 3 and "bad-meta" in r.stderr and "'message_count' appears twice" in r.stderr, r.output


# --- SAM ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path,key",
    [((), "title"), (("messages", 0), "content"), (("settings",), "temperature")],
    ids=["top", "message", "settings"],
)
def test_a_key_repeated_in_a_sam_conversation_is_a_warning_and_recover_rewrites_it(run, sam_demo, path, key):
    p = conv(sam_demo) / SID / "conversation.json"
    doc = orjson.loads(p.read_bytes())
    obj = doc
    for x in path:
        obj = obj[x]
    if key not in obj:
        pytest.skip(f"the demo has no {key} there")
    p.write_text(with_repeated(doc, path, key))
    fp = fingerprint(sam_demo)
    r = run("--root", sam_demo, "check")
    assert r.exit_code == 3 and "warning: duplicate-key: " in r.stderr and f"{key!r} appears twice" in r.stderr
    assert "error:" not in r.stderr, r.stderr
    assert fingerprint(sam_demo) == fp
    r = run("--root", sam_demo, "recover", SID)
    assert r.exit_code == 0 and "appears twice" in r.stdout + r.stderr, r.output
    assert orjson.loads(p.read_bytes()) == doc
    assert run("--root", sam_demo, "check").exit_code == 0


# --- ls does not pay for it -----------------------------------------------------------------------


def test_ls_and_show_never_parse_twice(run, mermaid_demo, sam_demo, monkeypatch):
    from samctl.stores import dupkeys

    def second_parse(*a, **k):
        raise AssertionError("a second parse on a listing's path")

    monkeypatch.setattr(dupkeys, "parse_marked", second_parse)
    for root, cid in ((mermaid_demo, MID), (sam_demo, SID)):
        for args in (("--no-cache", "ls"), ("show", cid), ("search", "budget", "--no-index")):
            r = run("--root", root, *args)
            assert r.exit_code == 0, (args, r.output)
