"""One regression test per defect the adversarial suite found (each fixed where it lived)."""

from __future__ import annotations

import json
import os

import orjson
import pytest

from tests.adversarial import hostile
from tests.adversarial.harness import fingerprint, invoke

BY_NAME = {c.name: c for c in hostile.cases()}


@pytest.fixture
def tree(tmp_path):
    made = []

    def build(name):
        ctx = hostile.build_case(BY_NAME[name], tmp_path / "case")
        made.append(ctx)
        return ctx

    yield build
    for ctx in made:
        hostile.cleanup(ctx)


def run(ctx, *args):
    out = invoke(["--root", str(ctx.root), *args])
    assert out.crash is None, out.crash
    return out


@pytest.mark.parametrize("name", ["mermaid/traversal/filename-invalid-utf8", "sam/traversal/folder-invalid-utf8"])
def test_json_output_survives_file_names_that_are_not_utf8(tree, name):
    # was: orjson refused the surrogate-escaped path: check/ls --format json died with a traceback
    ctx = tree(name)
    out = run(ctx, "check", "--format", "json")
    assert out.exit_code == 3
    doc = orjson.loads(out.stdout)
    assert any(f["code"] == "bad-id" and "\\xff" in f["path"] for f in doc["findings"])
    for args in (["ls", "--format", "jsonl"], ["ls", "--format", "json"]):
        assert run(ctx, *args).exit_code in (0, 3)


@pytest.mark.parametrize(
    "field,value", [("tasks", [1]), ("plan", [1]), ("cumulative_token_usage", None), ("input_history", [1, 2])]
)
def test_mermaid_snapshot_with_a_mistyped_field_is_bad_snapshot(tmp_path, field, value):
    # was: only some optional fields were type-checked; mermaid's serde refuses all of these
    ctx = hostile.make_ctx("mermaid", tmp_path / "case")
    doc = hostile.mermaid_doc(ctx, hostile.M2)
    doc[field] = value
    hostile.write_mermaid_doc(ctx, hostile.M2, doc)
    codes = {f["code"] for f in orjson.loads(run(ctx, "check", "--format", "json").stdout)["findings"]}
    assert "bad-snapshot" in codes


def test_mermaid_message_tool_calls_of_the_wrong_type(tree):
    ctx = tree("mermaid/structure/message-wrong-type-tool_calls")
    codes = {f["code"] for f in orjson.loads(run(ctx, "check", "--format", "json").stdout)["findings"]}
    assert "bad-snapshot" in codes


def test_mermaid_snapshot_deeper_than_serde_allows_is_refused_not_recursed(tree):
    ctx = tree("mermaid/size/snapshot-metadata-nested-1000")
    findings = orjson.loads(run(ctx, "check", "--format", "json").stdout)["findings"]
    assert any(f["code"] == "bad-snapshot" and "nested deeper" in f["reason"] for f in findings)
    assert run(ctx, "show", hostile.M2, "--format", "json").exit_code == 3


@pytest.mark.parametrize(
    "name", ["mermaid/traversal/conversations-folder-is-symlink", "sam/traversal/conversations-folder-is-symlink"]
)
def test_symlinked_conversations_folder_is_reported_and_its_mode_is_the_targets(tree, name):
    # was: the link's own 0777 was reported as the folder's mode, and `check --fix` tried to chmod the link
    ctx = tree(name)
    findings = orjson.loads(run(ctx, "check", "--format", "json").stdout)["findings"]
    codes = {f["code"] for f in findings}
    assert "root-symlink" in codes
    assert not any(f["code"] == "mode" and f["path"].endswith("conversations") for f in findings)
    out = run(ctx, "check", "--fix")
    assert out.exit_code in (0, 3), out.stderr


@pytest.mark.parametrize("name", ["mermaid/special/log-fifo", "mermaid/traversal/symlink-log-to-dev-urandom"])
def test_log_of_a_log_that_is_not_a_file_is_a_finding(tree, name):
    # was: exit 1 ("samctl: error: is not a regular file"); a bad file is a finding and exit 3
    ctx = tree(name)
    out = run(ctx, "log", hostile.M2)
    assert out.exit_code == 3
    assert "error: not-regular:" in out.stderr or "error: symlink:" in out.stderr


def test_sam_recover_dry_run_of_a_salvaged_lone_surrogate(tree):
    # was: TypeError from orjson comparing the salvaged document
    ctx = tree("sam/encoding/conversation-lone-surrogate")
    out = run(ctx, "recover", hostile.S2, "--dry-run")
    assert out.exit_code == 0, out.stderr


def test_sam_nesting_past_foundations_limit(tree):
    # was: RecursionError in export --to sam-package and recover --dry-run (copy.deepcopy)
    ctx = tree("sam/size/conversation-field-nested-1000")
    findings = orjson.loads(run(ctx, "check", "--format", "json").stdout)["findings"]
    assert any("nested deeper than 512" in f["reason"] for f in findings)
    out = run(ctx, "export", hostile.S2, "--to", "sam-package")
    assert out.exit_code == 3 and "package-refused" in out.stderr
    assert run(ctx, "recover", hostile.S2, "--dry-run").exit_code in (0, 1)


def test_sam_schema_depth_limit_is_exact():
    from samctl.stores.sam import schema

    def deep(n):
        v = 0
        for _ in range(n):
            v = [v]
        return v

    doc = json.loads((hostile.mf.SPEC / f"sam_{hostile.SID}.json").read_text())
    doc["futureKey"] = deep(511)  # 512 levels with the top-level object
    assert not any(p.code == "too-deep" for p in schema.validate_conversation(doc))
    doc["futureKey"] = deep(512)
    assert any(p.code == "too-deep" for p in schema.validate_conversation(doc))


def test_compact_dry_run_never_creates_sqlite_side_files(tree):
    # was: compact --dry-run opened memory.db with mode=ro, which made SQLite create memory.db-shm
    ctx = tree("sam/sqlite/wal-left-beside")
    before = fingerprint(ctx.root)
    assert run(ctx, "compact", "--dry-run").exit_code in (0, 3)
    assert fingerprint(ctx.root) == before


@pytest.mark.parametrize("store", ["mermaid", "sam"])
def test_attic_folder_that_is_a_symlink_is_not_followed(tree, store):
    # was: `samctl attic` listed (and --verify read) entries through a symlinked attic folder, silently
    ctx = tree(f"{store}/attic/attic-folder-is-symlink")
    out = run(ctx, "attic", "--verify", "--format", "json")
    doc = orjson.loads(out.stdout)
    assert out.exit_code == 3
    assert doc["entries"] == [] and any(f["code"] == "attic-unsafe" for f in doc["findings"])
    assert os.path.islink(ctx.attic)


@pytest.mark.parametrize("store", ["mermaid", "sam"])
def test_attic_manifest_with_an_absurd_size_is_a_bad_manifest(tree, store):
    # was: a member size of 10**30 was accepted, then `attic --format json` died (int past 64 bits)
    ctx = tree(f"{store}/attic/manifest-huge-size")
    out = run(ctx, "attic", "--verify", "--format", "json")
    assert out.exit_code == 3
    assert any(f["code"] == "attic-bad-manifest" for f in orjson.loads(out.stdout)["findings"])


def test_json_output_of_an_int_past_64_bits_does_not_crash():
    from samctl.cli.common import _json

    assert json.loads(_json({"n": 10**30, "p": "a\udcffb"}, 0)) == {"n": 10**30, "p": "a\\xffb"}


@pytest.mark.parametrize(
    "name,code",
    [
        ("sam/size/legacy-store-over-64MiB", "too-large"),
        ("sam/encoding/legacy-store-invalid-utf8", "bad-json"),
        ("sam/structure/legacy-store-not-array", "sam-reject"),
    ],
)
def test_sam_check_reads_the_legacy_store(tree, name, code):
    # was: check only said "legacy-store" (info), never whether SAM could migrate the file
    ctx = tree(name)
    findings = orjson.loads(run(ctx, "check", "--format", "json").stdout)["findings"]
    assert any(f["code"] == code and f["path"].endswith("conversations.json") for f in findings)


def test_sam_check_reports_a_folder_where_memory_db_should_be(tree):
    ctx = tree("sam/special/memory-db-folder")
    findings = orjson.loads(run(ctx, "check", "--format", "json").stdout)["findings"]
    assert any(f["code"] == "not-regular" and f["path"].endswith("memory.db") for f in findings)


@pytest.mark.parametrize("name", ["sam/sqlite/garbage-wal-beside", "sam/sqlite/empty-wal-beside"])
def test_stray_wal_beside_a_rollback_database_is_reported_and_left_alone(tree, name):
    # was: SQLite opened the -wal of a rollback-journal memory.db and created memory.db-shm on every read
    ctx = tree(name)
    before = fingerprint(ctx.root)
    findings = orjson.loads(run(ctx, "check", "--format", "json").stdout)["findings"]
    assert any(f["code"] == "db-stray-wal" for f in findings)
    run(ctx, "stats")
    run(ctx, "export", hostile.SID, "--to", "sam-package")
    assert fingerprint(ctx.root) == before


def test_mermaid_meta_with_a_repeated_key_is_bad_meta(tree):
    # was: orjson kept the last "title"; mermaid's serde refuses a repeated field, so the sidecar is unreadable
    ctx = tree("mermaid/structure/duplicate-keys-meta")
    findings = orjson.loads(run(ctx, "check", "--format", "json").stdout)["findings"]
    assert any(f["code"] == "bad-meta" and "appears twice" in f["reason"] for f in findings)


def test_restore_into_a_symlinked_conversations_folder(tree):
    # was: rm moved a conversation out of a store whose conversations/ is a symlink, and restore then
    # refused to put it back ("appeared in the store while restoring")
    ctx = tree("mermaid/traversal/conversations-folder-is-symlink")
    real = ctx.conv.resolve()
    before = {p.name: p.read_bytes() for p in real.glob(f"{hostile.MID}.*")}
    assert run(ctx, "rm", hostile.MID, "--yes", "--force").exit_code == 0
    assert not list(real.glob(f"{hostile.MID}.*"))
    out = run(ctx, "restore", hostile.MID, "--force")
    assert out.exit_code == 0, out.stderr
    assert {p.name: p.read_bytes() for p in real.glob(f"{hostile.MID}.*")} == before


@pytest.mark.parametrize(
    "name", ["sam/journal/log-id-dotdot", "sam/journal/log-huge-size", "mermaid/journal/log-id-dotdot"]
)
def test_a_hostile_log_journal_record_does_not_break_every_writing_command(tree, name):
    # was: `attic --repair` (and rm/archive/compact, which repair first) crashed on a "log" record in a
    # SAM attic (AttributeError), or on one naming an invalid id; a huge new_size asked pread for 10**18 bytes
    ctx = tree(name)
    out = run(ctx, "attic", "--repair")
    assert out.exit_code == 0, out.stderr
    assert "ignored journal record" in out.stderr
    assert (
        run(
            ctx, "rm", hostile.MID if "mermaid" in name else hostile.S2, "--yes", "--force", "--include-pinned"
        ).exit_code
        == 0
    )


def test_repair_log_refuses_a_new_size_past_the_log(tmp_path):
    from samctl.attic import journal as repair
    from samctl.stores import open_store

    ctx = hostile.make_ctx("mermaid", tmp_path / "case")
    store = open_store(str(ctx.root))
    attic = ctx.attic
    attic.mkdir(mode=0o700)
    line = repair.repair_log(
        store,
        attic,
        f"{hostile.M2}.history.20260101T000000Z",
        {"id": hostile.M2, "new_size": 10**18, "new_sha256": "0" * 64, "old_size": 5},
    )
    assert "undid" in line


@pytest.mark.parametrize("name", ["mermaid/special/snapshot-folder", "mermaid/special/meta-folder"])
def test_recover_never_replaces_a_folder(tree, name):
    # was: IsADirectoryError from os.replace (a traceback) when the snapshot or .meta is a folder
    ctx = tree(name)
    out = run(ctx, "recover", hostile.M2, "--force")
    assert out.exit_code == 1 and "does not replace it" in out.stderr
    assert ctx.p(f"{hostile.M2}.json").is_dir() or ctx.p(f"{hostile.M2}.meta").is_dir()


@pytest.mark.parametrize(
    "name", ["sam/traversal/active-id-dotdot", "sam/structure/active-missing-id", "sam/encoding/active-utf16"]
)
def test_sam_check_reads_active_conversation_json(tree, name):
    # was: never read, so an unreadable or meaningless selection file went unreported
    ctx = tree(name)
    findings = orjson.loads(run(ctx, "check", "--format", "json").stdout)["findings"]
    assert any(f["code"] == "active-bad" for f in findings)


@pytest.mark.skipif(os.geteuid() == 0, reason="permissions do not bite as root (CI runs this as an unprivileged user)")
def test_sam_ls_reports_a_conversation_folder_it_cannot_enter(tree):
    # was: ls skipped it silently (exit 0), as if it were a memory scope
    ctx = tree("sam/permissions/conversation-folder-unreadable")
    out = run(ctx, "ls", "--format", "jsonl")
    assert out.exit_code == 3
    assert f"error: unreadable: {ctx.p(hostile.S2)}/conversation.json" in out.stderr


def test_sam_check_validates_every_element_of_the_legacy_store(tree):
    # was: elements SAM cannot decode (bad ids, wrong types) were dropped silently; SAM's migration
    # decodes the whole array and fails on any one of them
    ctx = tree("sam/structure/legacy-store-hostile-ids")
    findings = orjson.loads(run(ctx, "check", "--format", "json").stdout)["findings"]
    assert sum(f["code"] == "sam-reject" and f["path"].endswith("conversations.json") for f in findings) >= 3


@pytest.mark.parametrize("store", ["mermaid", "sam"])
def test_attic_reports_an_entry_open_to_others(tree, store):
    # was: a world-readable archive (whole conversations) went unreported
    ctx = tree(f"{store}/permissions/attic-entry-world-readable")
    out = run(ctx, "attic", "--format", "json")
    assert out.exit_code == 3
    assert any(f["code"] == "attic-mode" for f in orjson.loads(out.stdout)["findings"])
