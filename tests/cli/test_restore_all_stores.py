"""restore, recover and attic across stores (issue #23): with --all-stores (or several --root) an id resolves
in the attic (restore) or among the conversations (recover) of every store samctl finds; an ambiguous prefix
lists its candidates with their stores (exit 2, nothing changed); a store that cannot be read is a finding
(exit 3) and the others still answer; no store at all: exit 4.  Stores samctl only reads have no attic: restore
and attic leave them out, recover says it cannot recover there (exit 2, as with --root).

The machine of test_cross_store, with one conversation deleted (`samctl rm`) in each store that has an attic,
two of them (Claude Code and Codex) starting with "5"."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from tests.cli.test_cross_store import DEMO, _everything, _ids, machine  # noqa: F401 - the fixture: a home with every store
from tests.conftest import fingerprint

SAM = ("home", "Library", "Application Support", "SAM")
# (store, the --root that names it, an id prefix of a conversation deleted there, its whole id)
DELETED = [
    ("sam", SAM, "8B58", "8B58CBC4-ACA7-4811-AE66-C01921690310"),
    ("mermaid", ("proj",), "20260810_1403", "20260810_140307_512"),
    ("claude-code", ("home", ".claude"), "0b7c", "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"),
    ("codex", ("home", ".codex"), "019c4a2e", "019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f"),
]
FIVES = [
    ("claude-code", ("home", ".claude"), "5d1e7f20-8a9b-4c3d-9e8f-7a6b5c4d3e2f"),
    ("codex", ("home", ".codex"), "5973b6c0-94b8-487b-a530-2aeb6098ae0e"),
]


def _root(tmp, parts):
    return tmp.joinpath(*parts)


@pytest.fixture
def attics(run, machine):  # noqa: F811 - (the machine's Claude Code and Codex sessions are idle: three days old)
    for _, parts, prefix, _ in DELETED:
        r = run("--root", _root(machine, parts), "rm", prefix, "--yes")
        assert r.exit_code == 0, r.stderr
    for _, parts, cid in FIVES:
        assert run("--root", _root(machine, parts), "rm", cid, "--yes").exit_code == 0
    return machine


# -- restore ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind,parts,prefix,cid", DELETED)
def test_restore_finds_an_id_in_the_attic_of_any_store(run, attics, kind, parts, prefix, cid):
    r = run("restore", prefix, "--all-stores")
    assert r.exit_code == 0, r.stderr
    assert f"restored: {cid}" in r.stdout
    assert cid in _ids(run, parts, attics)
    assert ("app-cleanup" in r.stderr) == (kind == "claude-code")  # today's warning, for its store
    left = [json.loads(ln) for ln in run("attic", "--all-stores", "--format", "jsonl").stdout.splitlines()]
    assert cid not in {e["id"] for e in left} and len(left) == len(DELETED) + len(FIVES) - 1


def test_without_the_option_restore_looks_in_every_attic(run, attics):
    r = run("restore", "0b7c")  # (issue #33: was SAM's attic only)
    assert r.exit_code == 0 and "restored: 0b7c" in r.stdout, r.stderr


def test_several_roots_narrow_the_attics_looked_in(run, attics):
    proj, codex = attics / "proj", attics / "home" / ".codex"
    r = run("--root", proj, "--root", codex, "restore", "019c4a2e", "5973")
    assert r.exit_code == 0, r.stderr
    assert {"019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f", "5973b6c0-94b8-487b-a530-2aeb6098ae0e"} <= _ids(
        run, ("home", ".codex"), attics
    )
    before = _everything(attics)
    r = run("--root", proj, "--root", codex, "restore", "8B58")  # SAM's attic is not looked in
    assert r.exit_code == 4 and "no conversation matches '8B58'" in r.stderr, r.stderr
    assert _everything(attics) == before


def test_ids_of_several_stores_are_each_restored_in_their_own(run, attics):
    r = run("restore", "0b7c", "8B58", "20260810_1403", "--all-stores", "--touch")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("restored: ") == 3
    for _, parts, _, cid in DELETED[:3]:
        assert cid in _ids(run, parts, attics)
    session = attics / "home" / ".claude" / "projects" / "-home-ana-api" / "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d.jsonl"
    assert time.time() - session.stat().st_mtime < 600 and "app-cleanup" not in r.stderr  # --touch


def test_an_ambiguous_prefix_lists_the_candidates_with_their_stores_and_changes_nothing(run, attics):
    before = _everything(attics)
    r = run("restore", "5", "--all-stores")
    assert r.exit_code == 2, r.stderr
    line = r.stderr.splitlines()[0]
    assert "'5' is ambiguous: 2 conversations match" in line, line
    assert "5d1e7f20-8a9b-4c3d-9e8f-7a6b5c4d3e2f (claude-code)" in line and "5973b6c0" in line and "(codex)" in line
    assert r.stdout == ""
    assert _everything(attics) == before


def test_an_id_in_no_attic_is_not_found_and_changes_nothing(run, attics):
    before = _everything(attics)
    r = run("restore", "20991231_1", "--all-stores")
    assert r.exit_code == 4, r.stderr
    assert "no conversation matches '20991231_1'" in r.stderr and "samctl-attic" in r.stderr
    assert "`samctl attic`" in r.stderr
    one_missing = run("restore", "0b7c", "20991231_1", "--all-stores")  # nothing is done if one is not found
    assert one_missing.exit_code == 4
    assert _everything(attics) == before


def test_an_id_existing_again_in_one_store_restores_nothing_anywhere(run, attics):
    shutil.copytree(
        DEMO / "SAM" / "conversations" / "8B58CBC4-ACA7-4811-AE66-C01921690310",
        _root(attics, SAM) / "conversations" / "8B58CBC4-ACA7-4811-AE66-C01921690310",
    )
    before = _everything(attics)
    r = run("restore", "0b7c", "8B58", "--all-stores")
    assert r.exit_code == 1, r.stderr
    assert "exists in the store again" in r.stderr and "nothing was restored" in r.stderr
    assert _everything(attics) == before


def test_dry_run_across_stores_changes_nothing(run, attics):
    before = _everything(attics)
    r = run("restore", "0b7c", "019c4a2e", "--all-stores", "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("would be restored: ") == 2
    assert _everything(attics) == before


def test_json_across_stores_is_one_report_naming_each_items_store(run, attics):
    r = run("restore", "0b7c", "8B58", "--all-stores", "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert sorted((it["store"], it["action"]) for it in doc["items"]) == [
        ("claude-code", "restored"),
        ("sam", "restored"),
    ]
    assert [f["code"] for f in doc["findings"]] == ["app-cleanup"]


def test_as_new_and_entry_across_stores(run, attics):
    r = run("restore", "20260810_1403", "--as-new", "--all-stores")
    assert r.exit_code == 0, r.stderr
    proj = _ids(run, ("proj",), attics)
    assert "20260810_140307_512" not in proj and len(proj) == 3 and " as " in r.stdout
    entry = json.loads(run("--root", attics / "home" / ".claude", "attic", "--format", "json").stdout)
    stem = [e["entry"] for e in entry["entries"] if e["id"].startswith("5d1e")][0]
    r = run("restore", "--entry", stem[:30], "--all-stores")
    assert r.exit_code == 0, r.stderr
    assert "5d1e7f20-8a9b-4c3d-9e8f-7a6b5c4d3e2f" in _ids(run, ("home", ".claude"), attics)
    before = _everything(attics)
    none = run("restore", "--entry", "20991231_1", "--all-stores")
    assert none.exit_code == 4 and "no restorable attic entry matches" in none.stderr, none.stderr
    assert _everything(attics) == before


def test_a_kept_copy_comes_back_in_its_store_and_stays(run, attics):
    codex = attics / "home" / ".codex"
    r = run("--root", codex, "archive", "--copy", "019c4a31")
    assert r.exit_code == 0, r.stderr
    session = next(codex.rglob("rollout-*019c4a31-0000-7000-8000-00000000abcd.jsonl"))
    session.unlink()  # the app deleted it
    r = run("restore", "019c4a31", "--all-stores")
    assert r.exit_code == 0, r.stderr
    assert session.exists()
    kept = json.loads(run("--root", codex, "attic", "--state", "kept", "--format", "json").stdout)["entries"]
    assert [e["id"] for e in kept] == ["019c4a31-0000-7000-8000-00000000abcd"]


def test_a_store_that_cannot_be_read_is_a_finding_and_a_match_elsewhere_is_restored(run, attics):
    (attics / "nostore").mkdir()
    (attics / "home" / ".config" / "samctl" / "config.toml").write_text(
        f'roots = ["{attics / "proj"}", "{attics / "nostore"}"]\n'
    )
    r = run("restore", "0b7c", "--all-stores")
    assert r.exit_code == 3, r.stderr
    assert "store-unreadable" in r.stderr and str(attics / "nostore") in r.stderr
    assert "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d" in _ids(run, ("home", ".claude"), attics)


def test_an_attic_that_cannot_be_read_is_a_finding_and_a_match_elsewhere_is_restored(run, attics):
    attic = attics / "proj" / ".mermaid" / "samctl-attic"
    attic.rename(attics / "moved-attic")
    attic.write_text("not a folder")
    r = run("restore", "0b7c", "--all-stores")
    assert r.exit_code == 3, r.stderr
    assert "attic-unsafe" in r.stderr and str(attic) in r.stderr
    assert "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d" in _ids(run, ("home", ".claude"), attics)
    before = _everything(attics)
    missing = run("restore", "2026081", "--all-stores")  # the one it could have been in is unreadable: said
    assert missing.exit_code == 4 and "attic-unsafe" in missing.stderr, missing.stderr
    assert _everything(attics) == before


def test_no_store_at_all_is_exit_4(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args in (["restore", "0b7c", "--all-stores"], ["recover", "0b7c", "--all-stores"], ["attic", "--all-stores"]):
        r = run(*args)
        assert r.exit_code == 4, (args, r.stderr)
        assert "no store found" in r.stderr and r.stdout == ""


def test_restore_without_an_id_points_at_the_listing_of_every_attic(run, attics):
    before = _everything(attics)
    r = run("restore", "--all-stores")
    assert r.exit_code == 2 and "name the conversation to restore" in r.stderr, r.stderr
    assert "`samctl attic` lists what can be restored" in r.stderr
    assert _everything(attics) == before


# -- attic -----------------------------------------------------------------------------------------------------


def test_attic_lists_every_stores_entries_with_a_store_column_oldest_first(run, attics):
    before = _everything(attics)
    r = run("attic", "--all-stores")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:6] == ["ENTRY", "(ID.STATE.WHEN)", "WHEN", "SIZE", "STORED", "STORE"]
    assert len(lines) == 1 + len(DELETED) + len(FIVES)
    assert {
        kind for kind in ("sam", "mermaid", "claude-code", "codex") if any(f"  {kind}  " in ln for ln in lines)
    } == {"sam", "mermaid", "claude-code", "codex"}
    rows = [json.loads(ln) for ln in run("attic", "--all-stores", "--format", "jsonl").stdout.splitlines()]
    assert [(x["when"], x["entry"]) for x in rows] == sorted((x["when"], x["entry"]) for x in rows)
    assert {x["store"] for x in rows} == {"sam", "mermaid", "claude-code", "codex"}
    doc = json.loads(run("attic", "--all-stores", "--format", "json").stdout)
    assert sorted(s["store"] for s in doc["stores"]) == ["claude-code", "codex", "mermaid", "sam"]
    assert all(s["attic"] and s["root"] and s["entries"] for s in doc["stores"])
    assert _everything(attics) == before


def test_attic_of_several_stores_goes_on_past_an_unreadable_one(run, attics):
    attic = attics / "proj" / ".mermaid" / "samctl-attic"
    attic.rename(attics / "moved-attic")
    attic.write_text("not a folder")
    r = run("--root", attics / "proj", "--root", attics / "home" / ".codex", "attic")
    assert r.exit_code == 3 and "attic-unsafe" in r.stderr, r.stderr
    assert r.stdout.count("  codex  ") == 2


# -- recover ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prefix,what",
    [
        ("01kzr0smm0w4j8n2t6y1b5e9ka", "samctl only reads it, and recover writes"),
        ("0f9e", "samctl only reads it, and recover writes"),
        ("019c4a31", "recover would rewrite them"),
    ],
)
def test_recover_says_a_store_it_cannot_write_is_no_place_to_recover(run, machine, prefix, what):  # noqa: F811
    before = _everything(machine)
    r = run("recover", prefix, "--all-stores")
    assert r.exit_code == 2, r.stderr
    assert what in r.stderr and "nothing was done" in r.stderr
    assert _everything(machine) == before


def test_recover_finds_an_id_in_any_store(run, machine):  # noqa: F811
    conv = machine / "proj" / ".mermaid" / "conversations"
    (conv / "20260810_140307_512.json").write_text('{"broken')
    r = run("recover", "20260810_1403", "--all-stores")
    assert r.exit_code == 0, r.stderr
    assert "recovered 20260810_140307_512" in r.stdout
    assert json.loads((conv / "20260810_140307_512.json").read_text())
    sam = run("--root", machine / "proj", "--root", _root(machine, SAM), "recover", "8B58", "--dry-run")
    assert sam.exit_code == 0 and "8B58CBC4-ACA7-4811-AE66-C01921690310" in sam.stdout, sam.stderr


def test_recover_ambiguous_or_missing_ids_change_nothing(run, machine):  # noqa: F811
    before = _everything(machine)
    r = run("recover", "5", "--all-stores")
    assert r.exit_code == 2 and "'5' is ambiguous: 3 conversations match" in r.stderr, r.stderr
    assert "(claude-code)" in r.stderr and "(codex)" in r.stderr and "(chatgpt)" in r.stderr
    r = run("recover", "20991231_1", "--all-stores")
    assert r.exit_code == 4 and "no conversation matches" in r.stderr
    assert _everything(machine) == before


def test_recover_with_an_unreadable_store_recovers_and_says_so(run, machine):  # noqa: F811
    (machine / "nostore").mkdir()
    (machine / "home" / ".config" / "samctl" / "config.toml").write_text(
        f'roots = ["{machine / "proj"}", "{machine / "nostore"}"]\n'
    )
    r = run("recover", "20260810_1403", "--all-stores", "--dry-run")
    assert r.exit_code == 3, r.stderr
    assert "store-unreadable" in r.stderr and "20260810_140307_512" in r.stdout


# -- the commands that stay with one store -------------------------------------------------------------------


def test_index_shows_every_stores_index_and_log_finds_its_store(run, machine):  # noqa: F811
    before = _everything(machine)
    r = run("--root", machine / "proj", "--root", _root(machine, SAM), "index", "--format", "json")
    assert r.exit_code == 0 and sorted(d["store"] for d in json.loads(r.stdout)["stores"]) == ["mermaid", "sam"], (
        r.stderr
    )
    log = run("--root", machine / "proj", "--root", _root(machine, SAM), "log", "20260810_1403")
    assert log.exit_code == 0 and "clean end" in log.stderr, log.stderr  # (the one store with event logs)
    assert _everything(machine) == before


def test_completion_offers_the_attic_ids_of_every_store_with_all_stores(attics):
    from click.testing import CliRunner

    from samctl.cli import cli

    def complete(words):
        env = {"_SAMCTL_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
        return CliRunner().invoke(cli, [], env=env, prog_name="samctl").stdout.split()

    assert complete("samctl restore --all-stores 5") == [
        "plain,5d1e7f20-8a9b-4c3d-9e8f-7a6b5c4d3e2f",
        "plain,5973b6c0-94b8-487b-a530-2aeb6098ae0e",
    ]
    assert complete("samctl restore 5") == complete("samctl restore --all-stores 5")  # every attic, as restore looks


def test_a_busy_store_of_several_does_not_stop_the_others(run, attics, monkeypatch):
    monkeypatch.setenv("SAMCTL_ASSUME_SAM_RUNNING", "1")
    sam = _root(attics, SAM)
    before = fingerprint(sam)
    r = run("restore", "0b7c", "8B58", "--all-stores")
    assert r.exit_code == 5, r.stderr  # SAM's own exit code, as restore there alone gives it
    assert "SAM is running" in r.stderr and "restored: 0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d" in r.stdout
    assert fingerprint(sam) == before
    assert run("restore", "8B58").exit_code == 5  # one store: as before


def test_attic_repair_of_several_goes_on_past_a_store_it_cannot_lock(run, attics):
    from samctl.lock import store_lock
    from samctl.stores import open_store

    with store_lock(open_store(str(_root(attics, SAM)))):
        r = run("attic", "--all-stores", "--repair")
    assert r.exit_code == 3, r.stderr
    assert "attic-not-read" in r.stderr and "nothing to repair" in r.stderr
    assert "  sam  " not in r.stdout and r.stdout.count("  codex  ") == 2
