"""samctl export through the CLI: selection, destinations, exit codes, messages, read-only."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from samctl.stores.sam import package, schema
from tests.conftest import fingerprint

SAM_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"
SPEC_MERMAID = "20260810_140307_512"


def test_help_shows_examples(run):
    r = run("export", "--help")
    assert r.exit_code == 0 and "Examples:" in r.stdout and "samctl export --all --to html" in r.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "nothing to export: give conversation IDs or --all"),
        (("8B58", "--all"), "give conversation IDs or --all, not both"),
        (("8B58", "--since", "7d"), "--since/--until choose from --all"),
        (("--all", "--to", "markdown"), "markdown of several conversations needs a folder"),
        (("--all", "-o", "{store}/conversations/out"), "inside the store"),
        (("--all", "-o", "{store}/samctl-attic/out"), "inside samctl's attic"),
        (("8B58", "-o", "{store}/.samctl/out.json"), "inside samctl's own folder"),
        # SAM's own files beside conversations/ (docs/formats/sam.md §2): the legacy memory.db, shared_memory.db, ...
        (("8B58", "--to", "json", "-o", "{store}/memory.db"), "inside SAM's folder"),
        (("8B58", "--to", "json", "-o", "{store}/shared_memory.db"), "inside SAM's folder"),
        (("--all", "--to", "markdown", "-o", "{store}"), "inside SAM's folder"),
    ],
)
def test_usage_errors_say_what_to_do(run, sam_demo, args, message):
    args = [a.replace("{store}", str(sam_demo)) for a in args]
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, "export", *args)
    assert r.exit_code == 2, r.stderr
    assert message in r.stderr and "hint: " in r.stderr and "Traceback" not in r.stderr
    assert fingerprint(sam_demo) == before


def test_unknown_id_is_not_found(run, sam_demo):
    r = run("--root", sam_demo, "export", "FFFF")
    assert r.exit_code == 4 and "no conversation matches 'FFFF'" in r.stderr


def test_one_conversation_to_stdout(run, sam_demo, mermaid_demo):
    r = run("--root", sam_demo, "export", "8b58", "--to", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["id"] == SAM_ID
    r = run("--root", mermaid_demo, "export", "20260810", "--to", "markdown", "-o", "-")
    assert r.exit_code == 0 and r.stdout.startswith("# Fix the flaky test in tests/parser.rs\n")
    r = run("--root", mermaid_demo, "export", "20260810", "--to", "html")
    assert r.exit_code == 0 and r.stdout.startswith("<!DOCTYPE html>")


def test_all_as_jsonl_and_json_streams(run, mermaid_demo):
    r = run("--root", mermaid_demo, "export", "--all", "--to", "jsonl")
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert r.exit_code == 0 and len(rows) == 11
    assert {x["conversation_id"] for x in rows} == {SPEC_MERMAID, "20260812_091500_004", "20260901_170000_250"}
    r = run("--root", mermaid_demo, "export", "--all", "--to", "json")
    docs = json.loads(r.stdout)
    assert [d["id"] for d in docs] == ["20260901_170000_250", "20260812_091500_004", SPEC_MERMAID]


def test_since_until_select_from_all(run, mermaid_demo):
    r = run("--root", mermaid_demo, "export", "--all", "--since", "2026-09-01", "--to", "jsonl")
    assert {json.loads(x)["conversation_id"] for x in r.stdout.splitlines()} == {"20260901_170000_250"}
    r = run("--root", mermaid_demo, "export", "--all", "--until", "2026-08-11", "--to", "jsonl")
    assert {json.loads(x)["conversation_id"] for x in r.stdout.splitlines()} == {SPEC_MERMAID}


def test_html_folder_with_index(run, sam_demo, tmp_path):
    out = tmp_path / "site"
    r = run("--root", sam_demo, "export", "--all", "--to", "html", "-o", out)
    assert r.exit_code == 0, r.stderr
    assert f"exported 3 conversations as html to {out}" in r.stderr
    names = sorted(p.name for p in out.iterdir())
    assert "index.html" in names and f"{SAM_ID}.html" in names and len(names) == 4
    index = (out / "index.html").read_text()
    assert f'href="{SAM_ID}.html"' in index and "Portland weekend trip" in index
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o700


def test_one_conversation_to_a_file(run, sam_demo, tmp_path):
    target = tmp_path / "sub" / "trip.md"
    r = run("--root", sam_demo, "export", SAM_ID, "-o", target)
    assert r.exit_code == 0 and target.read_text().startswith("# Portland weekend trip")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


def test_sam_packages_single_and_bulk(run, sam_demo, mermaid_demo, tmp_path):
    r = run("--root", mermaid_demo, "export", "--all", "--to", "sam-package")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["formatVersion"] == "1.0" and doc["conversationCount"] == 3
    for pkg in package.read_package(r.stdout.encode()):
        assert schema.would_load(pkg["conversation"])
    r = run("--root", sam_demo, "export", "8B58", "--to", "sam-package", "-o", tmp_path / "trip.json")
    assert r.exit_code == 0, r.stderr
    (pkg,) = package.read_package((tmp_path / "trip.json").read_bytes())
    assert pkg["conversation"]["id"] == SAM_ID and len(pkg["memories"]) == 2
    r = run("--root", sam_demo, "export", "--all", "--to", "sam-package", "-o", tmp_path / "pk")
    assert r.exit_code == 0 and len(list((tmp_path / "pk").glob("*.sam.json"))) == 3


def test_broken_store_exports_the_rest_and_exits_partial(run, mermaid_broken, sam_broken, tmp_path):
    for root in (mermaid_broken[0], sam_broken[0]):
        out = tmp_path / "exports" / root.name  # (not tmp_path/SAM: that is SAM's own folder)
        r = run("--root", root, "export", "--all", "--to", "markdown", "-o", out)
        assert r.exit_code == 3, r.stderr
        assert "Traceback" not in r.stderr and "error: " in r.stderr
        assert len(list(out.iterdir())) >= 3


@pytest.mark.parametrize("fmt", ["markdown", "html", "json", "jsonl", "sam-package"])
def test_export_is_read_only(run, sam_demo, mermaid_demo, tmp_path, fmt):
    for root in (sam_demo, mermaid_demo):
        before = fingerprint(root)
        run("--root", root, "export", "--all", "--to", fmt, "-o", tmp_path / f"{root.name}-{fmt}")
        run("--root", root, "export", "--all", "--to", "jsonl")
        assert fingerprint(root) == before


def test_progress_on_request(run, mermaid_demo, tmp_path):
    r = run("--root", mermaid_demo, "export", "--all", "--progress", "-o", tmp_path / "md")
    assert r.exit_code == 0 and "exporting 3/3" in r.stderr
    r = run("--root", mermaid_demo, "export", "--all", "-o", tmp_path / "md2")
    assert "exporting" not in r.stderr  # not a terminal


def test_all_messages_includes_what_the_app_hides(run, sam_demo):
    q3 = "C2A1F0E4"
    r = run("--root", sam_demo, "export", q3, "--to", "json")
    assert json.loads(r.stdout)["exported_messages"] == 3
    r = run("--root", sam_demo, "export", q3, "--to", "json", "--all-messages")
    assert json.loads(r.stdout)["exported_messages"] == 4


def test_a_place_that_cannot_be_written_is_an_error_for_people(run, mermaid_demo, tmp_path):
    (tmp_path / "afile").write_text("x")
    r = run("--root", mermaid_demo, "export", "--all", "-o", tmp_path / "afile" / "out")
    assert r.exit_code == 1 and "cannot write" in r.stderr and "hint: check that the folder" in r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


@pytest.mark.parametrize("where", ["{proj}/.mermaid", "{proj}/.mermaid/notes.md", "{proj}/.mermaid/scratch/x.md"])
def test_mermaids_folder_is_refused_too(run, mermaid_demo, where):
    before = fingerprint(mermaid_demo)
    r = run(
        "--root", mermaid_demo, "export", "--all", "--to", "markdown", "-o", where.replace("{proj}", str(mermaid_demo))
    )
    assert r.exit_code == 2 and "inside mermaid's folder" in r.stderr and "hint: " in r.stderr
    assert fingerprint(mermaid_demo) == before


def test_the_project_folder_itself_is_fine(run, mermaid_demo):
    r = run("--root", mermaid_demo, "export", SPEC_MERMAID, "--to", "markdown", "-o", mermaid_demo / "notes.md")
    assert r.exit_code == 0, r.stderr
    assert (mermaid_demo / "notes.md").read_text().startswith("# Fix the flaky test")


@pytest.mark.parametrize("fmt", ["sam-package", "json", "jsonl", "markdown", "html"])
def test_a_skipped_conversation_leaves_an_earlier_export_as_it_was(run, sam_demo, tmp_path, fmt):
    out = tmp_path / "out" / "portland.export"
    assert run("--root", sam_demo, "export", "8B58", "--to", fmt, "-o", out).exit_code == 0
    good = out.read_bytes()
    assert good
    (sam_demo / "conversations" / SAM_ID / "conversation.json").write_text("{")
    r = run("--root", sam_demo, "export", "8B58", "--to", fmt, "-o", out)
    assert r.exit_code == 3 and "bad-json" in r.stderr
    assert f"nothing was written to {out}" in r.stderr and "exported 0" not in r.stderr
    assert out.read_bytes() == good
    assert sorted(p.name for p in out.parent.iterdir()) == ["portland.export"]  # no temp left


def test_all_skipped_writes_no_new_file(run, sam_demo, tmp_path):
    (sam_demo / "conversations" / SAM_ID / "conversation.json").write_text("{")
    out = tmp_path / "one.json"
    r = run("--root", sam_demo, "export", "8B58", "--to", "json", "-o", out)
    assert r.exit_code == 3 and not out.exists()


@pytest.mark.parametrize(
    "args",
    [
        ("8B58", "--to", "json", "-o", "{out}/deeper/one.json"),
        ("8B58", "--to", "markdown", "-o", "{out}/deeper/"),
        ("--all", "--to", "markdown", "-o", "{out}/deeper"),
    ],
)
def test_nothing_exported_creates_no_folder(run, sam_demo, tmp_path, args):
    """Folders named by -o are made for what is written: an export that writes nothing leaves none."""
    for folder in (sam_demo / "conversations").iterdir():  # --all: every conversation is unreadable
        if folder.is_dir():
            (folder / "conversation.json").write_text("{")
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, "export", *[a.replace("{out}", str(tmp_path / "new")) for a in args])
    assert r.exit_code == 3 and "bad-json" in r.stderr, r.stderr
    assert "nothing was written to " in r.stderr and "exported 0" not in r.stderr
    assert not (tmp_path / "new").exists()
    assert fingerprint(sam_demo) == before


def test_an_existing_folder_stays_when_nothing_is_exported(run, sam_demo, tmp_path):
    (sam_demo / "conversations" / SAM_ID / "conversation.json").write_text("{")
    (tmp_path / "mine").mkdir()
    r = run("--root", sam_demo, "export", "8B58", "--to", "json", "-o", tmp_path / "mine" / "sub" / "one.json")
    assert r.exit_code == 3
    assert (tmp_path / "mine").is_dir() and os.listdir(tmp_path / "mine") == []


def test_a_bare_folder_of_conversations_leaves_its_parent_to_the_user(run, mermaid_demo, tmp_path):
    """--root naming a plain folder of mermaid files: its parent is not mermaid's, exports may go there."""
    bare = tmp_path / "backup" / "convs"
    (mermaid_demo / ".mermaid" / "conversations").rename(bare.parent.mkdir() or bare)
    r = run("--root", bare, "export", SPEC_MERMAID, "--to", "json", "-o", tmp_path / "backup" / "one.json")
    assert r.exit_code == 0, r.stderr
    r = run("--root", bare, "export", SPEC_MERMAID, "--to", "json", "-o", bare / "one.json")
    assert r.exit_code == 2 and "inside the store" in r.stderr


def test_a_sam_base_folder_by_another_name_is_the_apps_once_samctl_wrote_there(run, sam_demo, tmp_path):
    """A copy named 'sam' (no memory.db beside conversations/): once rm made its attic there, that folder
    holds the store, the attic and the lock, and exports beside them are refused like in SAM/."""
    base = tmp_path / "copy" / "sam"
    shutil.copytree(sam_demo, base)
    r = run("--root", base, "export", "8B58", "--to", "json", "-o", base / "x.json")
    assert r.exit_code == 0, r.stderr  # nothing of samctl's there yet: the user's folder
    (base / "x.json").unlink()
    assert run("--root", base, "rm", "D3B2").exit_code == 0
    r = run("--root", base, "export", "8B58", "--to", "json", "-o", base / "x.json")
    assert r.exit_code == 2 and "inside" in r.stderr and not (base / "x.json").exists(), r.output
