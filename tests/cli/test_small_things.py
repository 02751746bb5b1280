"""Issue 20, finding 10: the smaller things.

- ``ls --title`` and ``rm --title`` compare NFC-normalised (as ``search --exact`` does).
- NaN is refused wherever a number is (``--min-importance``, ``--lock-wait``), as ``--threshold`` was.
- ``export``'s hint names no SAM id on a mermaid store.
- Every path samctl prints follows one rule: relative to the current folder when inside it, else absolute.
- A huge bad id is cut in the error with its closing quote and its length.
- ``ls -n 0`` and ``search -n 0`` are usage errors.
- A cache folder inside an app's folder (``SAMCTL_CACHE_DIR`` = the SAM base folder) is not written.
- A search that finds nothing says so and suggests what to try.
"""

from __future__ import annotations

import json
import os
import unicodedata

import orjson
import pytest

from tests.conftest import fingerprint, make_fixtures

D3 = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"
NFC_TITLE = unicodedata.normalize("NFC", "Résumé notes")
NFD_NEEDLE = unicodedata.normalize("NFD", "résumé")


def _retitle_sam(base, cid=D3, title=NFC_TITLE):
    p = base / "conversations" / cid / "conversation.json"
    doc = json.loads(p.read_bytes())
    doc["title"] = title
    p.write_text(json.dumps(doc))


def test_ls_title_matches_across_normalisation_forms(run, sam_demo, mermaid_demo):
    # was: a decomposed "résumé" found nothing (exit 0, "no conversations")
    _retitle_sam(sam_demo)
    r = run("--root", sam_demo, "ls", "--title", NFD_NEEDLE, "--format", "jsonl")
    assert r.exit_code == 0 and [json.loads(x)["id"] for x in r.stdout.splitlines()] == [D3]
    conv = mermaid_demo / ".mermaid" / "conversations"
    mid = make_fixtures.MERMAID_ID
    for ext in ("meta", "json"):
        doc = json.loads((conv / f"{mid}.{ext}").read_bytes())
        doc["title"] = NFC_TITLE
        (conv / f"{mid}.{ext}").write_text(json.dumps(doc))
    r = run("--root", mermaid_demo, "--no-cache", "ls", "--title", NFD_NEEDLE, "--format", "jsonl")
    assert r.exit_code == 0 and [json.loads(x)["id"] for x in r.stdout.splitlines()] == [mid]


def test_rm_title_matches_across_normalisation_forms(run, sam_demo):
    _retitle_sam(sam_demo)
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, "rm", "--title", NFD_NEEDLE, "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert D3 in r.stdout + r.stderr
    assert fingerprint(sam_demo) == before


@pytest.mark.parametrize(
    "args",
    [
        ("search", "budget", "--min-importance", "nan"),
        ("show", "8B58", "--min-importance", "nan", "--no-pager"),
        ("check", "--lock-wait", "nan"),
        ("rm", "D3B2", "--yes", "--lock-wait", "nan"),
        ("ls", "-n", "0"),
        ("search", "budget", "-n", "0"),
    ],
)
def test_nan_and_zero_limits_are_usage_errors(run, sam_demo, args):
    # was: nan accepted (matching nothing, or waiting forever); -n 0 printed "no conversations"
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, *args)
    assert r.exit_code == 2, r.stderr
    assert ("nan is not a number" if "nan" in args else "0 is not in the range x>=1") in r.stderr
    assert fingerprint(sam_demo) == before


def test_export_hint_names_no_sam_id_on_a_mermaid_store(run, mermaid_demo):
    r = run("--root", mermaid_demo, "export")
    assert r.exit_code == 2
    assert "8B58" not in r.stderr and "export ID" in r.stderr


@pytest.mark.parametrize("how", ["absolute-root", "relative-root", "no-root"])
def test_every_path_check_prints_follows_one_rule(run, sam_demo, monkeypatch, how):
    # was: the conversations folder's own finding absolute (from its realpath), the rest as --root was typed
    for p in [sam_demo / "conversations", *sorted((sam_demo / "conversations").iterdir())]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)  # a finding for every entry, the folder first
    monkeypatch.chdir(sam_demo.parent)
    root = {"absolute-root": [str(sam_demo)], "relative-root": [sam_demo.name], "no-root": []}[how]
    if how == "no-root":
        monkeypatch.setenv("SAMCTL_ROOT", str(sam_demo))
    r = run(*(["--root", *root] if root else []), "check", "--format", "json")
    paths = [f["path"] for f in orjson.loads(r.stdout)["findings"]]
    assert "SAM/conversations" in paths
    assert all(p.startswith("SAM/conversations") for p in paths), paths
    text = run(*(["--root", *root] if root else []), "check").stderr.splitlines()
    assert all(": SAM/conversations" in ln for ln in text[:-1]), text
    monkeypatch.chdir("/")
    far = run("--root", sam_demo, "check", "--format", "json")
    # outside the current folder: absolute (here / is the current folder: everything is inside it)
    assert all(
        not f["path"].startswith("/") or f["path"].startswith(str(sam_demo))
        for f in orjson.loads(far.stdout)["findings"]
    )


def test_a_huge_bad_id_is_cut_with_its_closing_quote(run, sam_demo):
    # was: 'FFFF...FFF is not a sam conversation id (the quote never closed, the length unsaid)
    r = run("--root", sam_demo, "show", "F" * 100_000)
    assert r.exit_code == 2
    first = r.stderr.splitlines()[0]
    assert "…' (100000 characters) is not a sam conversation id" in first and len(first) < 200


@pytest.mark.parametrize("store", ["sam", "mermaid"])
def test_cache_folder_in_the_app_folder_is_not_written(run, sam_demo, mermaid_demo, monkeypatch, store):
    # was: SAMCTL_CACHE_DIR set to the SAM base folder made read-only ls/search write cache files there
    root = sam_demo if store == "sam" else mermaid_demo
    app = sam_demo if store == "sam" else mermaid_demo / ".mermaid"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(app))
    before = fingerprint(root)
    for args in (("ls",), ("search", "budget"), ("search", "budget", "--exact"), ("stats",)):
        r = run("--root", root, *args)
        assert r.exit_code == 0, (args, r.stderr)
        notes = [ln for ln in r.stderr.splitlines() if "cache" in ln]
        assert len(notes) == 1 and notes[0].startswith("warning: cache-in-store: "), r.stderr
        assert "folder" in notes[0] and "this run uses no cache" in notes[0]
        assert fingerprint(root) == before, args


@pytest.mark.parametrize(
    "args, hint",
    [
        (
            ("zzzqqq",),
            "hint: try other words, fewer required (+word) or excluded (-word) ones, or prefix*; or --exact "
            "for a plain substring",
        ),
        (("zzzqqq", "--rank", "sam"), "hint: try a lower --threshold (now 0.3)"),
        (
            ("zzzqqq", "--exact", "--since", "1d"),
            "hint: try without --since; or fewer or shorter words, or a ranked search (without --exact)",
        ),
    ],
)
def test_a_search_that_finds_nothing_says_what_to_try(run, sam_demo, args, hint):
    r = run("--root", sam_demo, "search", *args)
    assert (r.exit_code, r.stdout) == (1, "")  # (issue #33: nothing matches exits 1, as grep)
    assert r.stderr.splitlines()[:2] == ["no matches for 'zzzqqq'", hint]
