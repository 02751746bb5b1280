"""--all-stores for the commands that act on one store (rm, archive, compact; issue #23): each store samctl
finds in turn, the ones it cannot act on as findings, one exit code for the run."""

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
    assert r.exit_code == 3, r.stderr  # llm and the ChatGPT export: samctl only reads them
    assert r.stderr.count("samctl only reads it") == 2 and r.stderr.count("warning: ") == 2, r.stderr
    for root, listed in zip(roots, everything):
        unpinned = sorted(x["id"] for x in json.loads(listed.stdout) if not x["pinned"])
        assert len(unpinned) >= 2 and _kept(run, root) == unpinned, root
    kept = [_kept(run, root) for root in roots]
    again = run("archive", "--copy", "--older-than", "1d", "--all-stores", "--yes")
    assert again.exit_code == 3 and "kept: " not in again.stdout, again.stdout  # nothing changed: nothing copied
    assert [_kept(run, root) for root in roots] == kept


def test_each_store_is_named_and_a_failure_of_one_does_not_stop_the_others(run, machine):  # noqa: F811
    before = _tree(machine)
    r = run("archive", "--older-than", "1d", "--all-stores", "--dry-run")
    assert r.exit_code == 3, r.stderr
    assert r.stderr.count("== ") >= 4 and "Claude Code" in r.stderr and "Codex" in r.stderr
    assert _tree(machine) == before


def test_several_roots_run_on_each(run, machine):  # noqa: F811
    sam = machine / "home" / "Library" / "Application Support" / "SAM"
    r = run("--root", machine / "proj", "--root", sam, "compact", "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.count("== ") == 2


def test_json_of_filters_goes_with_one_store(run, machine):  # noqa: F811
    before = _tree(machine)
    r = run("archive", "--all-stores", "--older-than", "1d", "--dry-run", "--format", "json")
    assert r.exit_code == 2 and "one store" in r.stderr
    assert _tree(machine) == before


def test_without_the_option_the_default_store_as_before(run, machine):  # noqa: F811
    r = run("compact", "--dry-run")
    assert "== " not in r.stderr
