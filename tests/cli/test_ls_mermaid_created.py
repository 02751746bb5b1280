"""A mermaid session listed from its sidecar: ``created`` comes from the id, which is the writer's
local wall clock.  The sidecar's ``updated_at`` carries the writer's offset, so the id is read in
that offset, and ``ls`` agrees with ``show`` and with the snapshot's ``created_at`` in every
reader's time zone."""

from __future__ import annotations

import json

import pytest

from samctl.timeparse import parse_timestamp

CID = "20260810_140307_512"


@pytest.fixture(params=["UTC", "America/New_York", "Asia/Kolkata"])
def tz(request, zone):
    zone(request.param)
    return request.param


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


def _across_dst(mermaid_demo):
    """The demo session of 2026-09-01 17:00 (New York, -04:00), saved again after DST ended (-05:00)."""
    conv = mermaid_demo / ".mermaid" / "conversations"
    for name in ("20260901_170000_250.meta", "20260901_170000_250.json"):
        p = conv / name
        text = p.read_text()
        assert "2026-09-01T17:00:09.75-04:00" in text
        p.write_text(text.replace("2026-09-01T17:00:09.75-04:00", "2026-11-02T09:00:00-05:00"))


@pytest.fixture
def new_york(zone):
    zone("America/New_York")


def _created(run, root, cid, *opts):
    rows = json.loads(run("--root", root, *opts, "ls", "--format", "json").stdout)
    return next(r["created"] for r in rows if r["id"] == cid)


def test_in_the_writers_zone_a_dst_change_since_creation_is_read_right(run, mermaid_demo, new_york):
    _across_dst(mermaid_demo)
    snap = json.loads((mermaid_demo / ".mermaid" / "conversations" / "20260901_170000_250.json").read_text())
    got = _created(run, mermaid_demo, "20260901_170000_250", "--no-cache")
    assert parse_timestamp(got) == parse_timestamp(snap["created_at"]) and got.endswith("-04:00")


def test_a_cache_written_in_another_zone_is_not_used(run, mermaid_demo, zone):
    _across_dst(mermaid_demo)
    zone("UTC")
    in_utc = _created(run, mermaid_demo, "20260901_170000_250")  # the guess: the offset of the last save
    assert in_utc.endswith("-05:00")
    zone("America/New_York")
    assert _created(run, mermaid_demo, "20260901_170000_250").endswith("-04:00")  # not the UTC run's row


def test_a_copy_restored_as_new_is_listed_as_made_now(run, mermaid_demo, tz):
    """restore --as-new mints the id (a creation wall clock) in the zone the listing will read it in:
    the copy's created is when it was made, in every reader's zone, never hours in the future."""
    import time

    assert run("--root", mermaid_demo, "rm", CID).exit_code == 0
    before = time.time()
    r = run("--root", mermaid_demo, "restore", CID, "--as-new", "--format", "json")
    after = time.time()
    assert r.exit_code == 0, r.output
    new = json.loads(r.stdout)["items"][0]["new_id"]
    rows = json.loads(run("--root", mermaid_demo, "--no-cache", "ls", "--format", "json").stdout)
    row = next(x for x in rows if x["id"] == new)
    assert before - 1 <= parse_timestamp(row["created"]) <= after + 1, row["created"]
