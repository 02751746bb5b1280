"""samctl on the ChatGPT demo export (a copy of fixtures/demo/chatgpt: the folder and the zip): ls, show, export and check read it and
change nothing; the writing commands and log are refused with one line (exit 2); search reads them."""

import json

import pytest

from tests.cli.readonly_stores import WRITES, demo_copy
from tests.conftest import fingerprint

SINE = "5b1f3c2a-8d4e-4f60-9a7b-0c1d2e3f4a5b"


@pytest.fixture(params=["export", "chatgpt-export.zip"])
def export(tmp_path, request):
    tree = demo_copy(tmp_path, "chatgpt")
    return tree, tree / request.param


def test_ls(run, export):
    tree, root = export
    before = fingerprint(tree)
    r = run("--root", root, "ls", "--format", "json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["id"][:4] for x in rows] == ["0f9e", "5b1f", "a1b2"] and {x["store"] for x in rows} == {"chatgpt"}
    assert fingerprint(tree) == before


def test_show_current_branch_all_and_raw(run, export):
    tree, root = export
    before = fingerprint(tree)
    r = run("--root", root, "show", "5b1f")
    assert r.exit_code == 0, r.stderr
    assert "sin(0.5) ≈ 0.4794" in r.stdout and "regenerated" not in r.stdout
    r = run("--root", root, "show", "5b1f", "--all")
    assert "(an earlier answer, regenerated)" in r.stdout
    md = run("--root", root, "show", SINE, "--format", "markdown")
    assert md.exit_code == 0 and md.stdout.startswith("# Plot a sine wave")
    js = json.loads(run("--root", root, "show", SINE, "--format", "json", "--all").stdout)
    assert "other-branch/text" in [m["kind"] for m in js["messages"]]
    raw = run("--root", root, "show", SINE, "--raw")
    assert raw.exit_code == 0 and json.loads(raw.stdout)["id"] == SINE
    assert fingerprint(tree) == before


def test_show_unknown_and_bad_ids(run, export):
    _, root = export
    r = run("--root", root, "show", "ffff")
    assert r.exit_code == 4 and "no conversation" in r.stderr
    r = run("--root", root, "show", "../x")
    assert r.exit_code == 2 and "Traceback" not in r.stderr


@pytest.mark.parametrize("fmt", ["markdown", "html", "json", "jsonl"])
def test_export_every_format(run, export, tmp_path, fmt):
    tree, root = export
    before = fingerprint(tree)
    out = tmp_path / f"out-{fmt}"
    r = run("--root", root, "export", "--all", "--to", fmt, "-o", out)
    assert r.exit_code == 0, r.stderr
    assert out.exists()
    assert fingerprint(tree) == before


def test_check(run, export):
    tree, root = export
    before = fingerprint(tree)
    r = run("--root", root, "check", "--format", "json")
    assert r.exit_code == 0, r.stderr + r.stdout
    assert {f["code"] for f in json.loads(r.stdout)["findings"]} == {"unknown-content"}
    assert fingerprint(tree) == before


@pytest.mark.parametrize("argv,said", WRITES)
def test_writing_commands_are_refused(run, export, argv, said):
    tree, root = export
    before = fingerprint(tree)
    r = run("--root", root, *[a.replace("{id}", SINE) for a in argv])
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert said in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.startswith("samctl: error:")
    assert fingerprint(tree) == before


def test_export_folder_is_not_taken_for_sam(run, tmp_path):
    """An export folder holds a conversations.json, as SAM's legacy conversations folder does."""
    tree = demo_copy(tmp_path, "chatgpt")
    r = run("--root", tree / "export", "ls", "--format", "json")
    assert {x["store"] for x in json.loads(r.stdout)} == {"chatgpt"}
