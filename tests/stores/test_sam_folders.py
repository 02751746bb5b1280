"""SAM conversations in folders not named by their UUID (sam.md §5.3: SAM loads every subfolder but
``backups`` that holds a conversation.json, whatever its name).

What ``ls`` lists can be reached by its id: shown, exported, loaded.  The lifecycle commands
(rm, archive, purge) refuse such a conversation with exit 1 rather than guess which folder is
its own, and change nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from samctl.stores import open_store
from tests.conftest import fingerprint

API = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"
ODD = "AAAAAAAA-2222-4333-8444-555555555555"


def _odd_folder(sam_demo: Path, name: str = "imported", cid: str = ODD, title: str = "In a named folder") -> Path:
    conv = sam_demo / "conversations"
    text = (conv / API / "conversation.json").read_text()
    folder = conv / name
    folder.mkdir()
    (folder / "conversation.json").write_text(text.replace(API, cid).replace('"API Chat"', json.dumps(title)))
    return folder


def test_ls_lists_it_under_its_id(run, sam_demo):
    _odd_folder(sam_demo)
    r = run("--root", sam_demo, "ls", "--format", "jsonl")
    assert r.exit_code == 0, r.stderr
    rows = {x["id"]: x for x in map(json.loads, r.stdout.splitlines())}
    assert rows[ODD]["title"] == "In a named folder"
    assert rows[ODD]["path"].endswith("/imported/conversation.json")


@pytest.mark.parametrize("text", [ODD, "AAAA", "aaaaaaaa-2222"])
def test_show_reaches_it_by_id_or_prefix(run, sam_demo, text):
    _odd_folder(sam_demo)
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, "show", text, "--no-pager")
    assert (r.exit_code, r.stderr) == (0, "")
    assert "In a named folder" in r.stdout and "pong" in r.stdout
    j = run("--root", sam_demo, "show", text, "--format", "json", "--no-pager")
    assert j.exit_code == 0
    doc = json.loads(j.stdout)
    assert doc["id"] == ODD and doc["path"].endswith("/imported/conversation.json")
    assert doc["size"] == (sam_demo / "conversations" / "imported" / "conversation.json").stat().st_size
    raw = run("--root", sam_demo, "show", text, "--raw", "--no-pager")
    assert raw.stdout_bytes == (sam_demo / "conversations" / "imported" / "conversation.json").read_bytes()
    assert fingerprint(sam_demo) == before


def test_export_one_and_all_reach_it(run, sam_demo):
    _odd_folder(sam_demo)
    before = fingerprint(sam_demo)
    one = run("--root", sam_demo, "export", "AAAA", "--to", "json")
    assert (one.exit_code, one.stderr) == (0, "")
    assert json.loads(one.stdout)["title"] == "In a named folder"
    every = run("--root", sam_demo, "export", "--all", "--to", "jsonl")
    assert (every.exit_code, every.stderr) == (0, "")
    assert ODD in {json.loads(x)["conversation_id"] for x in every.stdout.splitlines()}
    assert fingerprint(sam_demo) == before


def test_search_reaches_it(run, sam_demo):
    _odd_folder(sam_demo)
    (sam_demo / "conversations" / API / "conversation.json").unlink()
    r = run("--root", sam_demo, "search", "--exact", "pong", "--format", "jsonl")
    assert r.exit_code == 0
    assert ODD in {json.loads(x)["conversation_id"] for x in r.stdout.splitlines()}


def test_the_folder_named_by_the_id_wins(run, sam_demo):
    """Two copies of one id: SAM loads both; samctl resolves the id to the folder named by it, and
    lists that one (the other is a finding: no id reaches it)."""
    _odd_folder(sam_demo, cid=API, title="A stray copy")
    r = run("--root", sam_demo, "show", API, "--format", "json", "--no-pager")
    assert r.exit_code == 0 and json.loads(r.stdout)["title"] == "API Chat"
    listed = run("--root", sam_demo, "ls", "--format", "jsonl")
    assert listed.exit_code == 3 and "duplicate-id" in listed.stderr and "imported" in listed.stderr
    rows = [json.loads(x) for x in listed.stdout.splitlines()]
    assert [x["title"] for x in rows if x["id"] == API] == ["API Chat"]


def test_two_odd_folders_with_one_id_resolve_to_the_first_by_name(run, sam_demo):
    _odd_folder(sam_demo, name="b-later", title="Second")
    _odd_folder(sam_demo, name="a", title="First")
    _odd_folder(sam_demo, name="a-b", title="Between")
    rows = [json.loads(x) for x in run("--root", sam_demo, "ls", "--format", "jsonl").stdout.splitlines()]
    assert [x["title"] for x in rows if x["id"] == ODD] == ["First"]
    r = run("--root", sam_demo, "show", "AAAA", "--format", "json", "--no-pager")
    assert json.loads(r.stdout)["title"] == "First"


def test_an_odd_folder_whose_file_has_no_valid_id_is_a_finding_not_a_row(run, sam_demo):
    _odd_folder(sam_demo, name="junk", cid="not-a-uuid")
    r = run("--root", sam_demo, "ls", "--format", "jsonl")
    assert r.exit_code == 3
    assert "junk/conversation.json" in r.stderr and "sam-reject" in r.stderr
    ids = [json.loads(x)["id"] for x in r.stdout.splitlines()]
    assert all(open_store(str(sam_demo)).valid_id(i) for i in ids) and len(ids) == 3


def test_store_resolves_ids_through_the_listing(sam_demo):
    _odd_folder(sam_demo)
    (sam_demo / "conversations" / "backups").mkdir()
    (sam_demo / "conversations" / "backups" / "conversation.json").write_text(
        (sam_demo / "conversations" / "imported" / "conversation.json")
        .read_text()
        .replace(ODD, "BBBBBBBB-2222-4333-8444-555555555555")
    )
    store = open_store(str(sam_demo))
    assert ODD in store.all_ids()
    assert "BBBBBBBB-2222-4333-8444-555555555555" not in store.all_ids()  # SAM never loads backups/
    assert store.odd_folders() == {ODD: "imported"}
    assert store.raw_path(ODD) == sam_demo / "conversations" / "imported" / "conversation.json"
    # its own folder (where SAM keeps its memories) is still the one named by its id
    assert store.folder(ODD) == sam_demo / "conversations" / ODD
    conv = store.load(ODD, [])
    assert conv.meta.id == ODD and conv.meta.title == "In a named folder"


@pytest.mark.parametrize("args", [("rm", "AAAA"), ("rm", "--purge", "--yes", "AAAA"), ("archive", "AAAA")])
def test_lifecycle_commands_refuse_it_and_change_nothing(run, sam_demo, args):
    _odd_folder(sam_demo)
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, *args)
    assert r.exit_code == 1, (r.stdout, r.stderr)
    assert "imported" in r.stderr and "Traceback" not in r.stderr
    assert fingerprint(sam_demo) == before


def test_rm_by_filter_keeps_it_and_says_why(run, sam_demo):
    _odd_folder(sam_demo)
    r = run("--root", sam_demo, "rm", "--title", "named folder", "--yes")
    assert "imported" in r.stderr
    assert (sam_demo / "conversations" / "imported" / "conversation.json").exists()
    assert not (sam_demo / "samctl-attic").exists() or not any((sam_demo / "samctl-attic").rglob(f"{ODD}*"))


def test_a_folder_name_that_is_not_utf8(run, sam_demo, tmp_path, monkeypatch):
    """Its name cannot go into the (JSON) listing cache: the listing is made without caching it."""
    import os

    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "c"))
    conv = sam_demo / "conversations"
    os.rename(conv / API, os.fsdecode(os.fsencode(conv) + b"/\xff" + API[1:].encode()))
    for dirpath, dirnames, files in os.walk(sam_demo):
        for name in files:
            os.utime(os.path.join(dirpath, name), (1.7e9, 1.7e9))
    before = fingerprint(sam_demo)
    for _ in range(2):  # cold, then warm
        r = run("--root", sam_demo, "ls", "--format", "jsonl")
        assert r.exit_code == 0, r.stderr
        assert API in {json.loads(x)["id"] for x in r.stdout.splitlines()}
    shown = run("--root", sam_demo, "show", API, "--no-pager")
    assert shown.exit_code == 0 and "pong" in shown.stdout
    assert fingerprint(sam_demo) == before


LEGACY = "66666666-2222-4333-8444-555555555555"


def _legacy_copy_of_a_broken_folder(base: Path) -> Path:
    """A legacy conversations.json holding a good copy of a conversation whose folder copy is torn:
    SAM skips the torn file and loads the legacy copy (sam.md §5.3 steps 1 and 2)."""
    from tests.conftest import make_fixtures as mf

    conv = base / "conversations"
    conv.mkdir(parents=True)
    good = mf.sam_doc(
        LEGACY,
        "Legacy good copy",
        [mf.sam_message("D1000000-2222-4333-8444-555555555555", "user", "legacy text kiwi", "2026-08-10T10:00:00Z")],
        "2026-08-10T10:00:00Z",
        "2026-08-10T10:00:00Z",
    )
    (conv / "conversations.json").write_text(mf.sam_dumps([good]))
    (conv / LEGACY).mkdir()
    torn = conv / LEGACY / "conversation.json"
    torn.write_text('{"id": "%s", "title": trunc' % LEGACY)
    return torn


@pytest.mark.parametrize(
    "cmd",
    [
        ["show", LEGACY[:8]],
        ["export", LEGACY[:8], "--to", "markdown"],
        ["search", "--exact", "kiwi"],
        ["search", "--exact", "kiwi", "--no-index"],
    ],
)
def test_the_legacy_copy_sam_loads_instead_of_a_torn_folder_copy_is_read_everywhere_ls_lists_it(run, tmp_path, cmd):
    base = tmp_path / "SAM"
    torn = _legacy_copy_of_a_broken_folder(base)
    before = fingerprint(base)
    r = run("--root", base, "ls")
    assert "Legacy good copy" in r.stdout
    r = run("--root", base, *cmd)
    assert "legacy text kiwi" in r.stdout, r.output
    assert r.exit_code == 3 and "bad-json" in r.stderr and str(torn) in r.stderr  # the torn file is still reported
    assert fingerprint(base) == before


def test_recover_of_a_torn_folder_copy_takes_the_legacy_copys_messages_too(run, tmp_path):
    """show read the legacy copy SAM falls back to; recover must not write a folder file that
    shadows it with fewer messages (sam.md §5.4: the folder file wins once it decodes)."""
    from tests.conftest import make_fixtures as mf

    base = tmp_path / "SAM"
    conv = base / "conversations"
    conv.mkdir(parents=True)
    msgs = [
        mf.sam_message(
            f"D1000000-2222-4333-8444-55555555555{i}",
            "user" if i % 2 == 0 else "assistant",
            f"legacy text kiwi {i}",
            f"2026-08-10T10:0{i}:00Z",
        )
        for i in range(4)
    ]
    (conv / "conversations.json").write_text(
        mf.sam_dumps([mf.sam_doc(LEGACY, "Legacy good copy", msgs, "2026-08-10T10:00:00Z", "2026-08-10T10:00:00Z")])
    )
    full = mf.sam_dumps(mf.sam_doc(LEGACY, "Folder copy", msgs[:2], "2026-08-10T10:00:00Z", "2026-08-11T10:00:00Z"))
    (conv / LEGACY).mkdir()
    (conv / LEGACY / "conversation.json").write_text(full[: full.index("legacy text kiwi 1") + 5])  # torn
    r = run("--root", base, "recover", LEGACY[:8])
    assert r.exit_code == 0, r.output
    assert "messages from conversations.json" in r.stdout
    r = run("--root", base, "show", LEGACY[:8])
    assert r.exit_code == 0, r.output
    assert all(f"legacy text kiwi {i}" in r.stdout for i in range(4))


def test_a_load_reads_the_file_primary_names_in_every_kind_of_folder(sam_demo):
    """load's direct path (the folder named by the uppercase id) names the file ``_primary`` names, and
    the other places (an odd folder, a lowercase twin, no folder) still come through ``_primary``."""
    _odd_folder(sam_demo)
    conv = sam_demo / "conversations"
    twin = "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"
    (conv / twin).rename(conv / twin.lower())
    store = open_store(str(sam_demo))
    names = [f.name for f in conv.iterdir() if f.is_dir() and (f / "conversation.json").exists()]
    ids = [ODD if n == "imported" else n.upper() for n in names]
    assert ODD in ids and twin in ids and API in ids
    for cid in [*ids, ODD.lower(), API.lower()]:
        conv_ = store.load(cid, [])
        assert conv_ is not None and conv_.source == str(store._primary(cid)), cid
        direct = (conv / cid.upper() / "conversation.json").exists()
        assert (store._own_file(cid) == conv_.source) == direct, cid
