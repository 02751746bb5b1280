"""rm ID and archive ID across stores (issue #23): with --all-stores (or several --root) each id or unique prefix
resolves among the conversations of every store samctl finds and is acted on in its own store, with one-store
semantics (attic, liveness, --dry-run, -q, --format json with a store per item).  All ids are resolved before
anything changes: an ambiguous prefix lists its candidates with their stores (exit 2), an id found nowhere is
exit 4, one in a store samctl only reads is rm's refusal there (exit 2); nothing changed in each case.  A store
that cannot be read is a finding (exit 3) and the others still act.

The machine of test_cross_store (its Claude Code and Codex sessions three days old: idle)."""

from __future__ import annotations

import json
import os

import pytest

from tests.cli.test_cross_store import _everything, _ids, machine  # noqa: F401 - the fixture: a home with every store
from tests.conftest import fingerprint

SAM = ("home", "Library", "Application Support", "SAM")
# (store, the --root that names it, an id prefix of one of its conversations, its whole id)
ONE_EACH = [
    ("sam", SAM, "8B58", "8B58CBC4-ACA7-4811-AE66-C01921690310"),
    ("mermaid", ("proj",), "20260810_1403", "20260810_140307_512"),
    ("claude-code", ("home", ".claude"), "0b7c", "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"),
    ("codex", ("home", ".codex"), "019c4a2e", "019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f"),
]
LLM, CHATGPT = "01kzr0smm0w4j8n2t6y1b5e9ka", "0f9e"


def _attic(run, parts, tmp) -> list:
    r = run("--root", tmp.joinpath(*parts), "attic", "--format", "json")
    assert r.exit_code == 0, r.stderr
    return [(e["id"], e["state"]) for e in json.loads(r.stdout)["entries"]]


# -- rm --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind,parts,prefix,cid", ONE_EACH)
def test_rm_finds_an_id_in_any_store_and_moves_it_to_that_stores_attic(run, machine, kind, parts, prefix, cid):
    others = {k: fingerprint(machine.joinpath(*p)) for k, p, _, _ in ONE_EACH if k != kind}
    r = run("rm", prefix, "--all-stores")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(f"deleted: {cid} -> {cid}.deleted.")
    assert cid not in _ids(run, parts, machine)
    assert _attic(run, parts, machine) == [(cid, "deleted")]
    assert f"undo with: samctl restore {cid};" in r.stderr  # (restore looks in every store: nothing to add)
    assert {k: fingerprint(machine.joinpath(*p)) for k, p, _, _ in ONE_EACH if k != kind} == others
    back = run("restore", cid, "--all-stores")  # the undo it suggests
    assert back.exit_code == 0 and cid in _ids(run, parts, machine), back.stderr


def test_ids_of_several_stores_are_each_removed_in_their_own_after_one_confirmation(run, machine):
    before = _everything(machine)
    r = run("rm", "8B58", "0b7c", "019c4a2e", "--all-stores")  # no terminal, no --yes: refused, as in one store
    assert r.exit_code == 2 and "move 3 conversations to the attic?: refusing without confirmation" in r.stderr
    assert _everything(machine) == before
    r = run("rm", "8B58", "0b7c", "019c4a2e", "--all-stores", "--yes")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("deleted: ") == 3
    for _, parts, _, cid in [ONE_EACH[0], ONE_EACH[2], ONE_EACH[3]]:
        assert cid not in _ids(run, parts, machine) and _attic(run, parts, machine) == [(cid, "deleted")]
    assert _attic(run, ("proj",), machine) == []


def test_several_roots_narrow_the_stores_looked_in(run, machine):
    proj, codex = machine / "proj", machine / "home" / ".codex"
    before = _everything(machine)
    r = run("--root", proj, "--root", codex, "rm", "8B58")  # SAM is not one of them
    assert r.exit_code == 4 and "no conversation matches '8B58'" in r.stderr, r.stderr
    assert _everything(machine) == before
    r = run("--root", proj, "--root", codex, "rm", "019c4a2e", "20260810_1403", "--yes")
    assert r.exit_code == 0, r.stderr
    assert _attic(run, ("proj",), machine) == [("20260810_140307_512", "deleted")]
    assert "--root" in r.stderr.splitlines()[-1]  # the undo names the same roots


def test_an_ambiguous_prefix_lists_the_candidates_with_their_stores_and_changes_nothing(run, machine):
    before = _everything(machine)
    for args in (["rm", "5"], ["rm", "8B58", "5", "--yes"], ["archive", "5", "--copy"], ["rm", "--purge", "5"]):
        r = run(*args, "--all-stores")
        assert r.exit_code == 2, (args, r.stderr)
        line = r.stderr.splitlines()[0]
        assert "'5' is ambiguous: " in line and "(claude-code)" in line and "(codex)" in line, line
        assert r.stdout == ""
    assert _everything(machine) == before


def test_an_id_found_nowhere_is_exit_4_and_nothing_changes(run, machine):
    before = _everything(machine)
    for args in (["rm", "20991231_1"], ["rm", "8B58", "20991231_1", "--yes"], ["archive", "20991231_1"]):
        r = run(*args, "--all-stores")
        assert r.exit_code == 4, (args, r.stderr)
        assert "no conversation matches '20991231_1' in " in r.stderr and str(machine / "proj") in r.stderr
    assert _everything(machine) == before


@pytest.mark.parametrize("cid", [LLM, CHATGPT])
def test_an_id_in_a_store_samctl_only_reads_is_refused_there_and_nothing_changes(run, machine, cid):
    before = _everything(machine)
    for verb in ("rm", "archive"):
        r = run(verb, "8B58", cid, "--all-stores", "--yes")
        assert r.exit_code == 2, r.stderr
        assert f"samctl only reads it, and {verb} writes; nothing was done" in r.stderr
        assert r.stdout == ""
    assert _everything(machine) == before


def test_a_store_that_cannot_be_read_is_a_finding_and_the_others_still_act(run, machine):
    (machine / "nostore").mkdir()
    (machine / "home" / ".config" / "samctl" / "config.toml").write_text(
        f'roots = ["{machine / "proj"}", "{machine / "nostore"}"]\n'
    )
    r = run("rm", "0b7c", "--all-stores")
    assert r.exit_code == 3, r.stderr
    assert "store-unreadable" in r.stderr and str(machine / "nostore") in r.stderr
    assert "deleted: 0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d" in r.stdout
    assert _attic(run, ("home", ".claude"), machine) == [("0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d", "deleted")]
    before = _everything(machine)
    missing = run("rm", "20991231_1", "--all-stores")  # found nowhere: exit 4, the unreadable store said first
    assert missing.exit_code == 4 and "store-unreadable" in missing.stderr, missing.stderr
    assert _everything(machine) == before


def test_no_store_at_all_is_exit_4(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args in (["rm", "0b7c", "--all-stores"], ["archive", "0b7c", "--all-stores"]):
        r = run(*args)
        assert r.exit_code == 4, (args, r.stderr)
        assert "no store found" in r.stderr and r.stdout == ""


def test_a_live_session_is_refused_unless_force_as_in_one_store(run, machine):  # noqa: F811
    for session in (
        next((machine / "home" / ".claude").rglob("0b7c9d2e-*.jsonl")),
        next((machine / "home" / ".codex").rglob("rollout-*019c4a2e-*.jsonl")),
    ):
        os.utime(session)  # written just now: "changed in the last 10 minutes"
    before = _everything(machine)
    for args in (["rm", "0b7c"], ["archive", "019c4a2e", "--copy"]):
        r = run(*args, "--all-stores")
        assert r.exit_code == 5, r.stderr
        assert "may be writing" in r.stderr and "pass --force" in r.stderr
    assert _everything(machine) == before
    r = run("rm", "0b7c", "--all-stores", "--force")
    assert r.exit_code == 0, r.stderr
    assert "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d" not in _ids(run, ("home", ".claude"), machine)


def test_a_busy_store_of_several_does_not_stop_the_others(run, machine, monkeypatch):
    monkeypatch.setenv("SAMCTL_ASSUME_SAM_RUNNING", "1")
    sam = machine.joinpath(*SAM)
    before = fingerprint(sam)
    r = run("rm", "0b7c", "8B58", "--all-stores", "--yes")
    assert r.exit_code == 5, r.stderr  # SAM's own exit code, as rm there alone gives it
    assert "SAM is running" in r.stderr and "deleted: 0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d" in r.stdout
    assert fingerprint(sam) == before


def test_dry_run_and_json_across_stores(run, machine):
    before = _everything(machine)
    r = run("rm", "0b7c", "8B58", "--all-stores", "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("would be deleted: ") == 2
    r = run("rm", "0b7c", "8B58", "--all-stores", "--dry-run", "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["dry_run"] is True
    assert sorted((it["store"], it["action"]) for it in doc["items"]) == [
        ("claude-code", "would be deleted"),
        ("sam", "would be deleted"),
    ]
    assert _everything(machine) == before
    r = run("rm", "0b7c", "8B58", "--all-stores", "--yes", "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert sorted((it["store"], it["id"][:4], it["action"]) for it in doc["items"]) == [
        ("claude-code", "0b7c", "deleted"),
        ("sam", "8B58", "deleted"),
    ]


def test_ids_with_filters_narrow_the_ids_as_in_one_store(run, machine):
    r = run("rm", "8B58", "20260810_1403", "--title", "portland", "--all-stores", "--yes")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("deleted: ") == 1 and "8B58CBC4" in r.stdout
    assert _attic(run, ("proj",), machine) == []


def test_pinned_sam_conversation_named_is_refused_before_anything_changes(run, machine):
    before = _everything(machine)
    r = run("rm", "0b7c", "C2A1", "--all-stores", "--yes")
    assert r.exit_code == 1 and "is pinned in SAM; nothing was removed" in r.stderr, r.stderr
    assert _everything(machine) == before


def test_purge_across_stores_of_a_conversation_and_of_an_attic_entry(run, machine):
    assert run("--root", machine / "home" / ".codex", "rm", "019c4a2e").exit_code == 0
    r = run("rm", "--purge", "019c4a2e", "0b7c", "--all-stores", "--yes")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("purged: ") == 2, r.stdout
    assert _attic(run, ("home", ".codex"), machine) == [] and _attic(run, ("home", ".claude"), machine) == []
    assert "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d" not in _ids(run, ("home", ".claude"), machine)


def test_without_the_option_rm_finds_an_id_in_every_store(run, machine):
    r = run("rm", "0b7c")  # (issue #33: was SAM's folder only, and "no conversation matches")
    assert r.exit_code == 0 and "deleted: 0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d" in r.stdout, r.stderr


# -- archive ---------------------------------------------------------------------------------------------------


def test_archive_ids_across_stores(run, machine):
    r = run("archive", "20260810_1403", "019c4a2e", "--all-stores", "--yes")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("archived: ") == 2
    assert _attic(run, ("proj",), machine) == [("20260810_140307_512", "archived")]
    assert _attic(run, ("home", ".codex"), machine) == [("019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f", "archived")]


def test_archive_copy_ids_across_stores_quietly_and_not_again(run, machine):
    claude = machine / "home" / ".claude"
    session = claude / "projects" / "-home-ana-api" / "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d.jsonl"
    before = session.read_bytes()
    r = run("archive", "0b7c", "8B58", "--copy", "--all-stores", "-q")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""
    assert session.read_bytes() == before
    assert _attic(run, ("home", ".claude"), machine) == [("0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d", "kept")]
    assert _attic(run, SAM, machine) == [("8B58CBC4-ACA7-4811-AE66-C01921690310", "kept")]
    attics = fingerprint(os.path.join(os.environ["XDG_DATA_HOME"], "samctl", "attic"))  # (its lock is taken)
    again = run("archive", "0b7c", "8B58", "--copy", "--all-stores", "--format", "json")
    assert again.exit_code == 0, again.stderr
    doc = json.loads(again.stdout)
    assert sorted((it["store"], it["action"]) for it in doc["items"]) == [
        ("claude-code", "unchanged"),
        ("sam", "unchanged"),
    ]
    assert fingerprint(os.path.join(os.environ["XDG_DATA_HOME"], "samctl", "attic")) == attics


def _attic_made_a_file(run, machine):
    """The mermaid project's attic, holding 20260810_1403 and then moved away, a file in its place."""
    attic = machine / "proj" / ".mermaid" / "samctl-attic"
    assert run("--root", machine / "proj", "rm", "20260810_1403").exit_code == 0
    attic.rename(machine / "moved-attic")
    attic.write_text("not a folder")
    return attic


def test_purge_across_stores_says_which_attic_it_could_not_read(run, machine):
    attic = _attic_made_a_file(run, machine)
    before = _everything(machine)
    missing = run("rm", "--purge", "20260810_1403", "--all-stores", "--yes")  # it is in the attic it cannot read
    assert missing.exit_code == 4 and "attic-unsafe" in missing.stderr and str(attic) in missing.stderr, missing.stderr
    assert _everything(machine) == before
    r = run("rm", "--purge", "0b7c", "--all-stores", "--yes")
    assert r.exit_code == 3, r.stderr
    assert "attic-unsafe" in r.stderr and "purged: 0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d" in r.stdout


def test_purge_in_one_store_says_its_attic_could_not_be_read(run, machine):
    attic = _attic_made_a_file(run, machine)
    before = _everything(machine)
    r = run("--root", machine / "proj", "rm", "--purge", "20260810_1403", "--yes")  # only in the attic
    assert r.exit_code == 4 and "no conversation matches '20260810_1403'" in r.stderr, r.stderr
    assert "attic-unsafe" in r.stderr and str(attic) in r.stderr
    assert _everything(machine) == before


def test_completion_offers_the_ids_of_every_store_with_all_stores(machine):
    from click.testing import CliRunner

    from samctl.cli import cli

    def complete(words):
        env = {"_SAMCTL_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
        return CliRunner().invoke(cli, [], env=env, prog_name="samctl").stdout.split()

    assert complete("samctl rm --all-stores 0b7") == ["plain,0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"]
    assert complete("samctl archive --all-stores 019c4a2") == ["plain,019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f"]
    assert complete("samctl rm 0b7") == ["plain,0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"]  # every store, as rm looks
