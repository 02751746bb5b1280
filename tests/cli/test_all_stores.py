"""--all-stores for the commands that write and select by filters (rm, archive, compact; issues #23, #33): each
store samctl finds in turn, the ones it cannot act on skipped (not findings), one exit code for the run."""

from __future__ import annotations

import json

from tests.cli.test_cross_store import _tree, machine  # noqa: F401 - the fixture: a home with every store


def _kept(run, root) -> list:
    """The ids of the kept entries in ``root``'s attic."""
    r = run("--root", root, "attic", "--state", "kept", "--format", "json")
    assert r.exit_code == 0, r.stderr
    return sorted(e["id"] for e in json.loads(r.stdout)["entries"])


def test_archive_copy_keeps_every_movable_store_from_one_line(run, machine):  # noqa: F811
    home = machine / "home"
    # (the fixture's Claude Code and Codex sessions are days old: copied from a fresh checkout, they were live and
    # not copied, and this passed anyway, reading the attic's json document, never empty, as its entries)
    roots = (machine / "proj", home / "Library" / "Application Support" / "SAM", home / ".claude", home / ".codex")
    everything = [run("--root", root, "ls", "--format", "json") for root in roots]
    r = run("archive", "--copy", "--older-than", "1d", "--all-stores", "-q")
    # llm and the ChatGPT export: samctl only reads them; skipped, not a failure: the cron line is silent
    assert r.exit_code == 0 and r.stderr == "" and r.stdout == "", r.stderr
    for root, listed in zip(roots, everything):
        unpinned = sorted(x["id"] for x in json.loads(listed.stdout) if not x["pinned"])
        assert len(unpinned) >= 2 and _kept(run, root) == unpinned, root
    kept = [_kept(run, root) for root in roots]
    again = run("archive", "--copy", "--older-than", "1d", "--all-stores", "--yes")
    assert again.exit_code == 0 and "kept: " not in again.stdout, again.stdout  # nothing changed: nothing copied
    assert [_kept(run, root) for root in roots] == kept


def test_the_stores_it_cannot_act_on_are_skipped_and_listed_under_verbose(run, machine):  # noqa: F811
    before = _tree(machine)
    r = run("archive", "--older-than", "1d", "--all-stores", "--dry-run", "-v")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.count("skipped: ") == 2 and "samctl only reads it" in r.stderr, r.stderr
    assert "warning" not in r.stderr and "error" not in r.stderr
    quiet = run("archive", "--older-than", "1d", "--all-stores", "--dry-run")
    assert quiet.exit_code == 0 and "skipped" not in quiet.stderr
    assert _tree(machine) == before


def test_rm_by_filter_over_every_store_asks_once(run, machine):  # noqa: F811
    before = _tree(machine)
    r = run("rm", "--older-than", "1d", "--all-stores")  # (no terminal: the one question is refused, once)
    assert r.exit_code == 2, r.stderr
    assert r.stderr.count("to the attic?: refusing without confirmation") == 1, r.stderr
    assert _tree(machine) == before


def test_a_filter_writer_of_several_stores_refuses_naming_them_and_the_ways_on(run, machine):  # noqa: F811
    before = _tree(machine)
    r = run("archive", "--older-than", "1d", "--dry-run")
    assert r.exit_code == 2, r.stderr
    assert (
        "archive acts on one store, and 4 are found" in r.stderr
        and "--root" in r.stderr
        and "--all-stores" in r.stderr
        and "no store found" not in r.stderr
    ), r.stderr
    assert _tree(machine) == before


def test_several_roots_run_on_each(run, machine):  # noqa: F811
    sam = machine / "home" / "Library" / "Application Support" / "SAM"
    r = run("--root", machine / "proj", "--root", sam, "compact", "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.count("== ") == 2


def test_json_of_filters_over_several_stores_is_one_report(run, machine):  # noqa: F811
    before = _tree(machine)
    r = run("archive", "--all-stores", "--older-than", "1d", "--dry-run", "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {it["store"] for it in doc["items"]} >= {"claude-code", "codex"}
    assert sorted(s["store"] for s in doc["skipped"]) == ["chatgpt", "llm"]
    assert _tree(machine) == before


def test_global_options_after_the_command_name(run, machine):  # noqa: F811
    sam = machine / "home" / "Library" / "Application Support" / "SAM"
    r = run("compact", "--dry-run", "--root", sam)
    assert r.exit_code == 0 and "== " not in r.stderr, r.stderr
    assert run("compact", "--all-stores", "--dry-run").exit_code == 0
