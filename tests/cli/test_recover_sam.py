import json
import stat

import pytest

from samctl.stores.sam import schema
from tests.conftest import fingerprint, make_fixtures

SAM_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"


def _file(base):
    return base / "conversations" / SAM_ID / "conversation.json"


def _ids(doc):
    return [m["id"] for m in doc["messages"]]


def _loads(p):
    return json.loads(p.read_text())


@pytest.fixture
def original(sam_demo):
    return _loads(_file(sam_demo))


def _assert_sam_loads(p):
    doc = _loads(p)
    assert not [x for x in schema.validate_conversation(doc) if x.severity == "error"]
    text = p.read_text()
    assert '" : ' in text and "/" not in text.replace("\\/", "")  # SAM's layout: " : ", escaped slashes
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    return doc


def test_one_undecodable_message_no_longer_loses_the_others(run, sam_demo, original):
    p = _file(sam_demo)
    p.write_text(p.read_text().replace('"type" : "thinking"', '"type" : "pondering"'))
    assert run("--root", sam_demo, "check").exit_code == 3
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0, r.stderr
    doc = _assert_sam_loads(p)
    assert _ids(doc) == [i for i in _ids(original) if i != "401441D1-ABC0-408D-B124-F84C3CB36D87"]
    assert "dropped" in r.stdout
    assert run("--root", sam_demo, "check").exit_code == 0


@pytest.mark.parametrize(
    "mutate,expect",
    [
        (lambda d: d["messages"][4].update(isStreaming=True), "isStreaming"),
        (lambda d: d["messages"][2].update(toolStatus="running"), "toolStatus"),
        (lambda d: d["messages"][0].update(timestamp="2026-08-10T14:02:11.734Z"), "fractional"),
        (lambda d: d.update(enabledMiniPromptIds=["0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9"]), "enabledMiniPromptIds"),
        (lambda d: d["messages"][1].update(id=d["messages"][1]["id"].lower()), "uppercase"),
        (lambda d: d["settings"].update(contextWindowSize=128000.0), "contextWindowSize"),
    ],
)
def test_each_repair_before_and_after(run, sam_demo, original, mutate, expect):
    p = _file(sam_demo)
    doc = _loads(p)
    mutate(doc)
    p.write_text(make_fixtures.sam_dumps(doc))
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0, r.stderr
    assert expect.lower() in r.stdout.lower()
    fixed = _assert_sam_loads(p)
    assert _ids(fixed) == _ids(original)
    assert all(m["isStreaming"] is False for m in fixed["messages"])
    assert all(m.get("toolStatus") != "running" for m in fixed["messages"])
    assert "enabledMiniPromptIds" not in fixed
    if expect == "enabledMiniPromptIds":
        assert fixed["enabledCustomInstructionIds"] == ["0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9"]
    assert isinstance(fixed["settings"]["contextWindowSize"], int)
    baks = list(p.parent.glob("conversation.json.*.bak"))
    assert len(baks) == 1 and _loads(baks[0]) == doc


def test_truncated_file_is_salvaged_message_by_message(run, sam_demo, original):
    p = _file(sam_demo)
    text = p.read_text()
    cut = text.index('"id" : "78F51783')  # in the middle of the last message
    import os

    os.utime(p, (1.7e9, 1.7e9))  # old enough to be cached
    run("--root", sam_demo, "ls")  # samctl's meta cache now remembers the title
    p.write_text(text[:cut])
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0, r.stderr
    doc = _assert_sam_loads(p)
    assert _ids(doc) == _ids(original)[:4]
    assert doc["title"] == "Portland weekend trip"


@pytest.mark.parametrize("damage", [b"\xff\xfe", b"\x00", b"\x01\t"], ids=["invalid-utf8", "nul", "control"])
def test_a_file_that_is_not_json_is_rewritten_even_when_every_message_survives(run, sam_demo, original, damage):
    """Bytes JSON forbids inside one message's text: SAM skips the whole file, samctl's lenient
    salvage keeps every message (the bad bytes as U+FFFD or as the control characters they are).
    The salvaged document then needs no repair, and must still be written: SAM cannot read the file."""
    p = _file(sam_demo)
    data = p.read_bytes()
    at = data.index(b'"content" : "') + len(b'"content" : "') + 3
    p.write_bytes(data[:at] + damage + data[at:])
    assert run("--root", sam_demo, "check").exit_code == 3
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0, r.stderr
    assert "nothing to do" not in r.stdout and "salvaged" in r.stdout
    doc = _assert_sam_loads(p)
    assert _ids(doc) == _ids(original)
    assert run("--root", sam_demo, "check").exit_code == 0


def test_tmp_and_legacy_backup_add_the_messages_the_file_lost(run, sam_demo, original):
    p = _file(sam_demo)
    partial = dict(original, messages=original["messages"][:2])
    p.write_text(make_fixtures.sam_dumps(partial))
    (p.parent / "conversation.json.tmp").write_text(
        make_fixtures.sam_dumps(dict(original, messages=original["messages"][:4]))[:-40]
    )  # SAM writes .tmp non-atomically
    backups = sam_demo / "conversations" / "backups"
    backups.mkdir(mode=0o700)
    (backups / "conversations_migrated_2026-08-11T10-00-00Z.json").write_text(json.dumps([original]))
    r = run("--root", sam_demo, "recover", "8B58", "--dry-run")
    assert r.exit_code == 0 and "messages: 2 -> 5" in r.stdout
    assert "conversation.json.tmp" in r.stdout and "conversations_migrated_" in r.stdout
    assert run("--root", sam_demo, "recover", "8B58").exit_code == 0
    assert _ids(_assert_sam_loads(p)) == _ids(original)


def test_missing_file_recovered_from_an_export_package(run, sam_demo, original, tmp_path):
    p = _file(sam_demo)
    p.unlink()
    pkg = tmp_path / "SAM_Portland_2026-08-10.json"
    pkg.write_text(
        make_fixtures.sam_dumps(
            {
                "formatVersion": "1.0",
                "exportedAt": "2026-08-11T09:00:00Z",
                "samVersion": "1.2",
                "conversation": original,
                "memories": [],
            }
        )
    )
    assert run("--root", sam_demo, "recover", "8B58").exit_code == 1
    r = run("--root", sam_demo, "recover", "8B58", "--from", pkg)
    assert r.exit_code == 0, r.stderr
    assert _assert_sam_loads(p) == original


def test_from_a_file_that_is_not_a_package(run, sam_demo, tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("[1,2]")
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, "recover", "8B58", "--from", bad)
    assert r.exit_code == 2 and "not a SAM export package" in r.stderr
    assert fingerprint(sam_demo) == before


def test_refuses_while_sam_runs(run, sam_demo):
    p = _file(sam_demo)
    p.write_text(p.read_text().replace('"type" : "thinking"', '"type" : "pondering"'))
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, "recover", "8B58", env={"SAMCTL_ASSUME_SAM_RUNNING": "1"})
    assert r.exit_code == 5 and "SAM is running" in r.stderr
    assert fingerprint(sam_demo) == before
    r = run("--root", sam_demo, "recover", "8B58", "--force", env={"SAMCTL_ASSUME_SAM_RUNNING": "1"})
    assert r.exit_code == 0


def test_healthy_sam_conversation_is_left_alone(run, sam_demo):
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0 and "nothing to do" in r.stdout
    assert fingerprint(sam_demo) == before


def test_use_is_for_mermaid(run, sam_demo):
    r = run("--root", sam_demo, "recover", "8B58", "--use", "x")
    assert r.exit_code == 2 and "--from" in r.stderr


# --- damage the salvage once did not survive --------------------------------------


def _damage_at(p, needle: bytes, bad: bytes):
    data = p.read_bytes()
    i = data.index(needle)
    p.write_bytes(data[:i] + bad + data[i + len(bad) :])


@pytest.mark.parametrize(
    "damage",
    [
        (b'"messages"', b'"messag\xe5s"'),
        (b'"messages"', b'"messa\x00es"'),
        (b"[\n    {", b"\xff"),
    ],
    ids=["key-invalid-utf8", "key-nul", "bracket"],
)
def test_one_bad_byte_in_the_messages_key_loses_no_message(run, sam_demo, original, damage):
    """The elements stand on lines of their own: a damaged key or bracket no longer hides them
    (it used to write a conversation with no messages and exit 0)."""
    p = _file(sam_demo)
    _damage_at(p, *damage)
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0, r.stderr
    assert "salvaged 5 messages" in r.stdout and "messages: 5 -> 5" in r.stdout
    assert _ids(_assert_sam_loads(p)) == _ids(original)
    assert run("--root", sam_demo, "check").exit_code == 0


def test_messages_under_a_misspelt_key_of_valid_json_are_taken_back(run, sam_demo, original):
    """Still valid JSON, so SAM loads it with no messages (and drops the unknown key on its next save)."""
    p = _file(sam_demo)
    p.write_bytes(p.read_bytes().replace(b'"messages"', b'"messagfs"', 1))
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0, r.stderr
    assert "no message array" in r.stdout and "salvaged 5 messages" in r.stdout
    assert _ids(_assert_sam_loads(p)) == _ids(original)


def test_a_messages_value_that_is_not_an_array_is_noted(run, sam_demo):
    p = _file(sam_demo)
    doc = _loads(p)
    doc["messages"] = {"a": 1}
    p.write_text(make_fixtures.sam_dumps(doc))
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0, r.stderr
    assert "messages: " in r.stdout and "-> []" in r.stdout


def test_a_message_is_never_taken_for_the_conversation(run, sam_demo, original):
    """A zeroed head and a cut tail leave only message key lines: they are not the conversation's
    (its id stays the folder's), and the messages that survived whole are kept."""
    p = _file(sam_demo)
    data = p.read_bytes()
    p.write_bytes(b"\0" * 1024 + data[1024:3000])
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0, r.stderr
    doc = _assert_sam_loads(p)
    assert doc["id"] == SAM_ID and _ids(doc) and set(_ids(doc)) < set(_ids(original))
    assert "id-mismatch" not in run("--root", sam_demo, "check").stderr


def test_a_complete_tmp_is_the_newer_save(run, sam_demo, original):
    """A .tmp that parses whole is what SAM was saving when it stopped (sam.md §5.2, §5.7 lists it
    first): its text wins over the file's, and it is kept as a .bak, so check stops pointing at it."""
    p = _file(sam_demo)
    tmp = p.parent / "conversation.json.tmp"
    tmp.write_bytes(p.read_bytes())
    doc = _loads(p)
    doc["messages"][4]["content"] = "Saturday looks sunny (24"
    doc["messages"][4]["isStreaming"] = True
    p.write_text(make_fixtures.sam_dumps(doc))
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0, r.stderr
    assert _assert_sam_loads(p)["messages"][4]["content"] == original["messages"][4]["content"]
    assert not tmp.exists() and list(p.parent.glob("conversation.json.tmp.*.bak"))
    check = run("--root", sam_demo, "check")
    assert "leftover-tmp" not in check.stderr
    assert "nothing to do" in run("--root", sam_demo, "recover", "8B58").stdout


def test_a_tmp_that_adds_nothing_is_set_aside_too(run, sam_demo, original):
    p = _file(sam_demo)
    tmp = p.parent / "conversation.json.tmp"
    tmp.write_bytes(p.read_bytes()[:-100])  # cut short, as SAM writes it non-atomically
    assert "leftover-tmp" in run("--root", sam_demo, "check").stderr
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0 and "nothing to do" not in r.stdout, r.stdout
    assert not tmp.exists() and _ids(_assert_sam_loads(p)) == _ids(original)
    assert run("--root", sam_demo, "check").exit_code == 0


def test_the_leftover_tmp_hint_names_the_folder_when_the_file_is_gone(run, sam_demo):
    p = _file(sam_demo)
    p.rename(p.parent / "conversation.json.tmp")
    r = run("--root", sam_demo, "check")
    assert f"`samctl --root {sam_demo} recover {SAM_ID}`" in r.stderr


def test_an_invalid_created_comes_from_the_first_message_not_the_clock(run, sam_demo, original):
    p = _file(sam_demo)
    p.write_bytes(p.read_bytes().replace(b'"created" : "2026-08-10T14:02:05Z"', b'"created" : "yesterday"'))
    r = run("--root", sam_demo, "recover", "8B58")
    assert r.exit_code == 0, r.stderr
    doc = _assert_sam_loads(p)
    first = min(m["timestamp"] for m in original["messages"])
    assert doc["created"] == first and doc["created"] <= doc["updated"]


def test_a_folder_id_mismatch_is_a_warning_as_the_spec_says(run, sam_demo):
    """SAM loads it (and saves it to a second folder): sam.md §4.5.8 lists it among the warnings."""
    p = _file(sam_demo)
    p.write_bytes(
        p.read_bytes().replace(f'"id" : "{SAM_ID}"'.encode(), b'"id" : "11111111-2222-3333-4444-555555555555"', 1)
    )
    r = run("--root", sam_demo, "check")
    assert "warning: id-mismatch" in r.stderr and "error: id-mismatch" not in r.stderr
