"""A mermaid session listed from its sidecar: ``created`` comes from the id, which is the writer's
local wall clock.  The sidecar's ``updated_at`` carries the writer's offset, so the id is read in
that offset, and ``ls`` agrees with ``show`` and with the snapshot's ``created_at`` in every
reader's time zone."""

from __future__ import annotations

import json
import time

import pytest

from samctl.core.timeparse import parse_timestamp

CID = "20260810_140307_512"


@pytest.fixture(params=["UTC", "America/New_York", "Asia/Kolkata"])
def tz(request, monkeypatch):
    monkeypatch.setenv("TZ", request.param)
    time.tzset()
    yield request.param
    monkeypatch.undo()
    time.tzset()


def test_created_from_a_sidecar_is_the_writers_instant(run, mermaid_demo, tz):
    conv = mermaid_demo / ".mermaid" / "conversations"
    snap = json.loads((conv / f"{CID}.json").read_text())
    assert snap["created_at"].endswith("-04:00")  # written in New York
    r = run("--root", mermaid_demo, "--no-cache", "ls", "--format", "json")
    row = next(x for x in json.loads(r.stdout) if x["id"] == CID)
    assert row["created"] == "2026-08-10T14:03:07.512-04:00"
    s = run("--root", mermaid_demo, "--no-cache", "show", CID, "--format", "json")
    created, updated = parse_timestamp(row["created"]), parse_timestamp(row["updated"])
    assert abs(created - parse_timestamp(json.loads(s.stdout)["created"])) < 0.001
    assert created <= updated < created + 3600  # a one-minute session
    table = run("--root", mermaid_demo, "--no-cache", "ls").stdout
    line = next(x for x in table.splitlines() if x.startswith(CID))
    local = {"UTC": "18:03", "America/New_York": "14:03", "Asia/Kolkata": "23:33"}[tz]
    assert f"2026-08-10 {local}" in line or f"2026-08-11 {local}" in line


def test_the_cache_gives_the_same_created(run, mermaid_demo):
    cold = run("--root", mermaid_demo, "ls", "--format", "json").stdout
    warm = run("--root", mermaid_demo, "ls", "--format", "json").stdout
    assert cold == warm and "14:03:07.512-04:00" in warm
