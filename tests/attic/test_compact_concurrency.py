"""compact against a concurrent mermaid-style appender: no event lost or duplicated.

The appender does what mermaid's appender does (docs/formats/mermaid.md §4.3): open the log with
O_APPEND for each batch, write one compact line per event with its own seq
counter continuing, close.  It holds no lock, so compact cannot know it is
there; compact must notice the growth (see the rule in attic/compact.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import orjson

from samctl.attic import compact as compactmod
from samctl.attic import entries as attic
from samctl.attic.compact import CompactOptions, compact
from samctl.stores import open_store
from samctl.stores.mermaid import eventlog
from tests.cli.test_compact import LONG, long_session

APPENDER = r"""
import json, os, random, sys, time
path, seq, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(5)
for i in range(n):
    ts = "2026-03-01T11:00:00.%06d-04:00" % i
    m = {"actions": [], "content": "append-%d" % i, "image_numbers": None, "images": None, "kind": "normal",
         "metadata": None, "provider_continuation": None, "role": "User" if i % 2 == 0 else "Assistant",
         "thinking": None, "timestamp": ts, "tool_call_id": None, "tool_calls": None, "tool_name": None}
    line = json.dumps({"event": {"message": m, "type": "message"}, "seq": seq + i, "ts": ts, "v": 1},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, line.encode())
    os.close(fd)
    time.sleep(random.choice((0, 0.001, 0.002, 0.03)))
print("done")
"""


def _messages(data: bytes, prefix: str) -> list[str]:
    out = []
    for line in data.splitlines():
        ev = orjson.loads(line)["event"]
        if ev["type"] == "message" and ev["message"]["content"].startswith(prefix):
            out.append(ev["message"]["content"])
    return out


def test_no_event_lost_or_duplicated_while_appending(mermaid_demo, tmp_path):
    conv = mermaid_demo / ".mermaid" / "conversations"
    doc = long_session(conv)
    log = conv / f"{LONG}.jsonl"
    first_lines = len(log.read_bytes().splitlines())
    n = 300
    store = open_store(str(mermaid_demo))
    opts = CompactOptions(log_threshold=16384, idle=0, grace=1e9)
    proc = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(log), str(first_lines), str(n)], stdout=subprocess.PIPE, text=True
    )
    rewrites = skips = 0
    try:
        while proc.poll() is None:
            rep = compact(store, opts)
            rewrites += rep.counts().get("rewrite-log", 0)
            skips += sum(1 for f in rep.findings if f.code == "skipped-busy")
            time.sleep(0.005)
    finally:
        out = proc.communicate(timeout=60)[0]
    assert out.strip() == "done"
    rep = compact(store, opts)  # once more, with nobody appending
    rewrites += rep.counts().get("rewrite-log", 0)
    assert rewrites >= 2, (rewrites, skips)

    # every event is in exactly one place: the history segments, in order, then the live log
    segments = sorted(
        (e for e in attic.list_entries(store, [], ("history",)) if e.id == LONG), key=lambda e: (e.when_ts, e.stem)
    )
    chunks = []
    for i, e in enumerate(segments):
        d = tmp_path / f"seg{i}"
        d.mkdir()
        attic.unpack(e, d)
        chunks.append((d / f"{LONG}.jsonl").read_bytes())
    chunks.append(log.read_bytes())
    appended = [m for c in chunks for m in _messages(c, "append-")]
    assert appended == [f"append-{i}" for i in range(n)]
    original = [m for c in chunks for m in _messages(c, "message ")]
    assert original == [m["content"] for m in doc["messages"]]
    # and the live log folds to the whole conversation, appended messages last and in order
    read = eventlog.parse_log(log.read_bytes())
    assert read.stop is None, read.reason
    folded = [m["content"] for m in eventlog.fold(read.events)["messages"]]
    assert folded == [m["content"] for m in doc["messages"]] + [f"append-{i}" for i in range(n)]


def test_a_late_append_to_the_old_file_undoes_the_swap(mermaid_demo, monkeypatch):
    """A writer that opened the log before the swap and writes just after it: the swap is undone, in order."""
    conv = mermaid_demo / ".mermaid" / "conversations"
    long_session(conv)
    log = conv / f"{LONG}.jsonl"
    t = time.time() - 7200
    os.utime(log, (t, t))
    old = log.read_bytes()
    line = old.splitlines(keepends=True)[1]  # any valid line will do for byte accounting
    late_fd = os.open(log, os.O_WRONLY | os.O_APPEND)  # opened before the swap: the old file
    calls = []
    real_sleep = time.sleep

    def sleep(s):
        if not calls:
            os.write(late_fd, b"LATE-OLD " + line)  # lands in the file that was just replaced
            fd = os.open(log, os.O_WRONLY | os.O_APPEND)  # the writer's next batch opens the new file
            os.write(fd, b"NEXT-NEW " + line)
            os.close(fd)
        calls.append(s)
        real_sleep(0)

    monkeypatch.setattr(compactmod.time, "sleep", sleep)
    store = open_store(str(mermaid_demo))
    rep = compact(store, CompactOptions(log_threshold=16384, idle=0))
    os.close(late_fd)
    assert rep.counts().get("rewrite-log") is None
    assert [f.code for f in rep.findings] == ["skipped-busy"]
    assert log.read_bytes() == old + b"LATE-OLD " + line + b"NEXT-NEW " + line
    assert attic.list_entries(store, [], ("history",)) == []


def _aged_long_session(mermaid_demo):
    conv = mermaid_demo / ".mermaid" / "conversations"
    long_session(conv)
    log = conv / f"{LONG}.jsonl"
    t = time.time() - 7200
    os.utime(log, (t, t))
    return log


def test_a_session_that_opens_while_compact_works_stops_the_swap(mermaid_demo, monkeypatch):
    """Reading and packing a big log takes seconds: liveness is asked again right before the swap."""
    from samctl.stores.mermaid.store import MermaidStore

    log = _aged_long_session(mermaid_demo)
    old = log.read_bytes()
    answers = iter([False])  # free when compact looks first; then a session has started
    monkeypatch.setattr(MermaidStore, "session_is_live", lambda self, cid: next(answers, True))
    store = open_store(str(mermaid_demo))
    rep = compact(store, CompactOptions(log_threshold=16384, idle=0))
    assert rep.counts().get("rewrite-log") is None
    assert [f.code for f in rep.findings] == ["skipped-live"]
    assert log.read_bytes() == old
    assert attic.list_entries(store, [], ("history",)) == []


def test_a_session_live_after_the_swap_is_watched_longer(mermaid_demo, monkeypatch):
    """A session that opened the old file at the instant of the swap and writes a few settle periods
    later (slower than the first look): its bytes are put back, not lost in the replaced file."""
    from samctl.stores.mermaid.store import MermaidStore

    log = _aged_long_session(mermaid_demo)
    old = log.read_bytes()
    line = old.splitlines(keepends=True)[1]
    late_fd = os.open(log, os.O_WRONLY | os.O_APPEND)  # the session's batch opened the old file
    answers = iter([False, False])  # free at the first look and right before the swap; live after it
    monkeypatch.setattr(MermaidStore, "session_is_live", lambda self, cid: next(answers, True))
    calls = []

    def sleep(s):
        calls.append(s)
        if len(calls) == 4:  # three settle periods after the swap
            os.write(late_fd, b"LATE-OLD " + line)

    monkeypatch.setattr(compactmod.time, "sleep", sleep)
    store = open_store(str(mermaid_demo))
    rep = compact(store, CompactOptions(log_threshold=16384, idle=0))
    os.close(late_fd)
    assert len(calls) >= 4
    assert rep.counts().get("rewrite-log") is None
    assert log.read_bytes() == old + b"LATE-OLD " + line
    assert attic.list_entries(store, [], ("history",)) == []
