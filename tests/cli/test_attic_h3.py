"""Issue 20, findings 4-6: attic member names match the entry's id byte for byte; a writing command
selects again under the lock; interrupted moves are settled (or, by `check`, reported) first."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest
import zstandard

from tests.conftest import fingerprint

SID = "8B58CBC4-ACA7-4811-AE66-C01921690310"
MID = "20260810_140307_512"


def _entry(attic: Path, cid: str) -> tuple[Path, Path]:
    m = sorted(attic.glob(f"{cid}.*.manifest.json"))[-1]
    return m, m.with_name(m.name[: -len(".manifest.json")] + ".tar.zst")


def unchanged(root: Path) -> dict:
    """The conversations and attic entries (a writing command may touch its lock and scratch folders)."""
    return {k: v for k, v in fingerprint(root).items() if not k.startswith((".samctl", "samctl-attic/."))}


def rename_members(manifest: Path, tar: Path, rename) -> None:
    """Rewrite an entry with every member renamed by ``rename(name)``, hashes and sizes kept right."""
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(tar.read_bytes())).read()
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(raw)) as src,
        tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as dst,
    ):
        for ti in src.getmembers():
            data = src.extractfile(ti).read() if ti.isreg() else None
            ti.name = rename(ti.name)
            dst.addfile(ti, io.BytesIO(data) if data is not None else None)
    blob = zstandard.ZstdCompressor().compress(out.getvalue())
    tar.write_bytes(blob)
    d = json.loads(manifest.read_bytes())
    d["tar"]["size"], d["tar"]["sha256"] = len(blob), hashlib.sha256(blob).hexdigest()
    for m in d["members"]:
        m["name"] = rename(m["name"])
    manifest.write_bytes(json.dumps(d, indent=2).encode())


# --- finding 4: member names are the entry's id, byte for byte ---------------------------------------


@pytest.mark.parametrize(
    "variant", [str.lower, lambda s: s[:4].lower() + s[4:], lambda s: s.replace("A", "\uff21")]
)  # lowercase, mixed, fullwidth (NFKC-equal)
def test_a_sam_member_named_like_the_id_but_not_exactly_is_refused(variant, run, sam_demo):
    assert run("--root", sam_demo, "rm", SID).exit_code == 0
    manifest, tar = _entry(sam_demo / "samctl-attic", SID)
    rename_members(manifest, tar, lambda n: variant(SID) + n[len(SID) :])
    before = unchanged(sam_demo)
    r = run("--root", sam_demo, "attic", "--verify")
    assert r.exit_code == 3 and "attic-bad-manifest" in r.stderr and "not a plain name" in r.stderr, r.output
    r = run("--root", sam_demo, "restore", SID)
    assert r.exit_code in (1, 4) and "no attic entry of" in r.stderr, r.output
    assert unchanged(sam_demo) == before
    assert not any(p.name.upper() == SID and p.name != SID for p in (sam_demo / "conversations").iterdir())


def test_a_member_that_differs_only_in_the_tar_is_refused_too(run, sam_demo):
    """The manifest names the members right, the archive lowercase: --verify and restore refuse it."""
    assert run("--root", sam_demo, "rm", SID).exit_code == 0
    manifest, tar = _entry(sam_demo / "samctl-attic", SID)
    d = manifest.read_bytes()
    rename_members(manifest, tar, lambda n: SID.lower() + n[len(SID) :])
    fixed = json.loads(manifest.read_bytes())
    fixed["members"] = json.loads(d)["members"]
    manifest.write_bytes(json.dumps(fixed, indent=2).encode())
    before = unchanged(sam_demo)
    r = run("--root", sam_demo, "attic", "--verify")
    assert r.exit_code == 3 and ("attic-unsafe" in r.stderr or "attic-tampered" in r.stderr), r.output
    r = run("--root", sam_demo, "restore", SID)
    assert r.exit_code != 0 and "damaged or not samctl's" in r.stderr, r.output
    assert unchanged(sam_demo) == before


def test_a_conversation_in_a_lowercase_folder_is_not_moved(run, sam_demo):
    """rm would make an entry whose members differ from its id by case: it refuses and says how to fix it."""
    conv = sam_demo / "conversations"
    (conv / SID).rename(conv / SID.lower())
    before = unchanged(sam_demo)
    r = run("--root", sam_demo, "rm", SID)
    assert r.exit_code == 1 and "not named exactly by its id" in r.stderr and "rename" in r.stderr, r.output
    assert unchanged(sam_demo) == before


def test_an_entry_whose_id_is_not_as_samctl_names_it_is_refused(run, sam_demo):
    """A SAM entry renamed to the lowercase id throughout (stem, manifest, members) would restore a
    lowercase folder beside the conversation: not an entry samctl made, so refused."""
    assert run("--root", sam_demo, "rm", SID).exit_code == 0
    manifest, tar = _entry(sam_demo / "samctl-attic", SID)
    rename_members(manifest, tar, lambda n: SID.lower() + n[len(SID) :])
    d = json.loads(manifest.read_bytes())
    stem = manifest.name[: -len(".manifest.json")].replace(SID, SID.lower())
    d["id"], d["tar"]["name"] = SID.lower(), stem + ".tar.zst"
    (manifest.parent / (stem + ".manifest.json")).write_bytes(json.dumps(d, indent=2).encode())
    tar.rename(manifest.parent / (stem + ".tar.zst"))
    manifest.unlink()
    before = unchanged(sam_demo)
    r = run("--root", sam_demo, "attic", "--verify")
    assert r.exit_code == 3 and "attic-bad-manifest" in r.stderr, r.output
    r = run("--root", sam_demo, "restore", SID.lower())
    assert r.exit_code in (1, 4), r.output
    assert unchanged(sam_demo) == before


# --- finding 6: interrupted moves are settled first, and `check` reports them -------------------------


def half_moved(tmp_path: Path, build, args: list, predicate, monkeypatch) -> Path:
    """A tree where ``args`` was killed (SIGKILL) at the first write step after which ``predicate(root)`` holds."""
    import os
    import shutil

    from tests.test_faults import KILLED, _run_child

    monkeypatch.setattr(os, "fsync", lambda fd: None)  # (a kill loses nothing the kernel has)
    template = tmp_path / "template"
    build(template)
    for n in range(1, 200):
        root = tmp_path / f"n{n}"
        shutil.copytree(template, root, symlinks=True)
        code = _run_child(["--root", str(root), *args], n, "kill")
        assert code == KILLED, f"the command completed before {predicate.__doc__}"
        if predicate(root):
            return root
        shutil.rmtree(root)
    raise AssertionError("never reached")


def _log_only(root: Path) -> bool:
    """the session was log-only"""
    c = root / ".mermaid" / "conversations"
    return (c / f"{MID}.jsonl").exists() and not (c / f"{MID}.json").exists() and not (c / f"{MID}.meta").exists()


@pytest.fixture
def log_only(tmp_path, monkeypatch):
    """A mermaid tree where `rm MID` was killed with only the session's log left in the store."""
    from tests.conftest import make_fixtures

    return half_moved(tmp_path, make_fixtures.build_demo_mermaid, ["rm", MID], _log_only, monkeypatch)


def test_check_reports_a_pending_move_and_does_not_advise_recover(run, log_only):
    before = fingerprint(log_only)
    r = run("--root", log_only, "check", "--format", "json")
    assert r.exit_code == 3
    findings = json.loads(r.stdout)["findings"]
    pending = [f for f in findings if f["code"] == "pending-move"]
    assert pending and pending[0]["severity"] == "error" and pending[0].get("conversation") == MID, findings
    assert "samctl attic --repair" in pending[0]["reason"]
    assert not [f for f in findings if "samctl recover" in f["reason"] and f.get("conversation") == MID], findings
    r = run("--root", log_only, "check")
    assert r.exit_code == 3 and "pending-move" in r.stderr and "1 errors" in r.stderr.splitlines()[-1], r.stderr
    assert fingerprint(log_only) == before  # check without --fix stays read-only


def test_recover_finishes_the_move_first_instead_of_rebuilding_the_session(run, log_only):
    r = run("--root", log_only, "recover", MID)
    assert r.exit_code == 4, r.output
    assert "on its way to the attic" in r.stderr and "now finished" in r.stderr and f"restore {MID}" in r.stderr
    conv = log_only / ".mermaid" / "conversations"
    assert not list(conv.glob(f"{MID}.*"))  # finished: not rebuilt, so no later repair can take it away again
    r = run("--root", log_only, "attic", "--repair")
    assert r.exit_code == 0 and "nothing to repair" in r.stderr, r.output
    r = run("--root", log_only, "restore", MID)
    assert r.exit_code == 0, r.output
    assert run("--root", log_only, "check").exit_code == 0


def test_recover_dry_run_says_a_pending_move_holds_the_conversation(run, log_only):
    before = fingerprint(log_only)
    r = run("--root", log_only, "recover", MID, "--dry-run")
    assert "pending-move" in r.stderr and "finishes or undoes it first" in r.stderr, r.output
    assert fingerprint(log_only) == before


def test_check_fix_settles_the_move_first(run, log_only):
    r = run("--root", log_only, "check", "--fix")
    assert "fixed: attic:" in r.stdout and "finished an interrupted move" in r.stdout, r.output
    assert not list((log_only / ".mermaid" / "samctl-attic" / ".journal").glob("*.json"))
    assert not list((log_only / ".mermaid" / "conversations").glob(f"{MID}.*"))
    r = run("--root", log_only, "check")
    assert "pending-move" not in r.stderr, r.stderr


def _sam_half(root: Path) -> bool:
    """a journal record was left"""
    return any((root / "samctl-attic" / ".journal").glob("*.json")) if (root / "samctl-attic").exists() else False


def test_search_touch_settles_the_move_first(run, tmp_path, monkeypatch):
    from tests.conftest import make_fixtures

    root = half_moved(tmp_path, make_fixtures.build_demo_sam, ["rm", SID], _sam_half, monkeypatch)
    r = run("--root", root, "search", "portland", "--touch", "--no-index")
    assert "repaired:" in r.stderr, r.output
    assert not list((root / "samctl-attic" / ".journal").glob("*.json"))


# --- finding 5: select and confirm before the lock, select again under it --------------------------------

MIDS = ["20260810_140307_512", "20260812_091500_004", "20260901_170000_250"]


def another_samctl_first(monkeypatch, module, args_of_other):
    """``module``'s store_lock lets another samctl (``args_of_other``, run to completion) write first,
    as if this command had waited on the lock while it ran; then takes the lock for real."""
    import contextlib

    from click.testing import CliRunner

    from samctl import lock
    from samctl.cli import cli

    real, ran = lock.store_lock, []

    @contextlib.contextmanager
    def first(store, wait=0.0):
        if not ran:
            ran.append(1)
            r = CliRunner().invoke(cli, [str(a) for a in args_of_other], catch_exceptions=False)
            ran.append(r)
        with real(store, wait) as p:
            yield p

    monkeypatch.setattr(module, "store_lock", first)
    return ran


@pytest.mark.parametrize(
    "cmd",
    [
        ["rm", "--older-than", "0d", "--yes"],
        ["archive", "--older-than", "0d", "--yes"],
        ["rm", "--yes", *MIDS],
        ["rm", "--purge", "--yes", *MIDS],
    ],
)
def test_what_another_samctl_took_while_this_one_waited_is_one_line(cmd, run, mermaid_demo, monkeypatch):
    from samctl.attic import lifecycle

    purge = ["--purge"] if "--purge" in cmd else []  # (purge also takes what is in the attic: the other purges)
    ran = another_samctl_first(monkeypatch, lifecycle, ["--root", mermaid_demo, "rm", "--yes", *purge, *MIDS[:2]])
    r = run("--root", mermaid_demo, *cmd, "--lock-wait", "30")
    assert ran[1].exit_code == 0, ran[1].output
    assert r.exit_code == 0, r.output
    assert "not-moved" not in r.stderr and "not-purged" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "gone-meanwhile" in ln]
    assert len(lines) == 1 and "2 of the 3 confirmed" in lines[0] and "left alone" in lines[0], r.stderr
    assert MIDS[2] in r.stdout and MIDS[0] not in r.stdout
    attic = mermaid_demo / ".mermaid" / "samctl-attic"
    for cid in MIDS[:2]:  # what the other one moved stays in the attic, once
        assert len(list(attic.glob(f"{cid}.deleted.*.manifest.json"))) == (0 if purge else 1)


def test_nothing_left_to_do_after_the_wait_is_exit_0(run, mermaid_demo, monkeypatch):
    from samctl.attic import lifecycle

    another_samctl_first(monkeypatch, lifecycle, ["--root", mermaid_demo, "rm", "--yes", *MIDS])
    r = run("--root", mermaid_demo, "rm", "--older-than", "0d", "--yes", "--lock-wait", "30")
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.stderr.splitlines() if "gone-meanwhile" in ln]
    assert len(lines) == 1 and "nothing left to do" in lines[0] and "error" not in r.stderr, r.stderr


def test_a_conversation_that_no_longer_matches_the_filter_is_left_alone(run, mermaid_demo, monkeypatch):
    """Selected by --title, retitled by the time the lock is held: not moved."""
    from samctl.attic import lifecycle

    title = json.loads((mermaid_demo / ".mermaid" / "conversations" / f"{MIDS[0]}.meta").read_bytes())["title"]
    real = lifecycle.settle

    def retitle_then_settle(store, full=False):
        for ext in ("json", "meta"):
            p = mermaid_demo / ".mermaid" / "conversations" / f"{MIDS[0]}.{ext}"
            d = json.loads(p.read_bytes())
            d["title"] = "something else"
            p.write_bytes(json.dumps(d).encode())
        return real(store, full)

    monkeypatch.setattr(lifecycle, "settle", retitle_then_settle)
    r = run("--root", mermaid_demo, "rm", "--title", title, "--yes")
    assert r.exit_code == 0 and "nothing left to do" in r.stderr, r.output
    assert (mermaid_demo / ".mermaid" / "conversations" / f"{MIDS[0]}.json").exists()


def test_restore_of_entries_another_samctl_restored_meanwhile(run, mermaid_demo, monkeypatch):
    from samctl.attic import restore

    assert run("--root", mermaid_demo, "rm", "--yes", *MIDS).exit_code == 0
    another_samctl_first(monkeypatch, restore, ["--root", mermaid_demo, "restore", MIDS[0]])
    r = run("--root", mermaid_demo, "restore", *MIDS, "--lock-wait", "30")
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.stderr.splitlines() if "gone-meanwhile" in ln]
    assert len(lines) == 1 and "1 of the 3" in lines[0], r.stderr
    assert all((mermaid_demo / ".mermaid" / "conversations" / f"{cid}.json").exists() for cid in MIDS)


def test_restore_after_an_interrupted_restore_finishes_it_instead_of_refusing(run, tmp_path, monkeypatch):
    """A restore killed with some files placed: `restore` again settles it first (the entry is then
    gone: nothing left to do), where it used to refuse because the conversation "exists again"."""
    from tests.conftest import make_fixtures

    def build(root):
        make_fixtures.build_demo_mermaid(root)
        assert run("--root", root, "rm", MID).exit_code == 0

    def half(root: Path) -> bool:
        """some files were placed"""
        c = root / ".mermaid" / "conversations"
        return any(c.glob(f"{MID}.*")) and any((root / ".mermaid" / "samctl-attic").glob(f"{MID}.*.manifest.json"))

    root = half_moved(tmp_path, build, ["restore", MID], half, monkeypatch)
    r = run("--root", root, "restore", MID)
    assert r.exit_code == 0 and "repaired:" in r.stderr and "nothing left to do" in r.stderr, r.output
    assert all((root / ".mermaid" / "conversations" / f"{MID}.{e}").exists() for e in ("json", "meta", "jsonl"))
    assert run("--root", root, "check").exit_code == 0


def test_rm_with_nothing_to_act_on_says_a_move_is_pending(run, log_only):
    r = run("--root", log_only, "rm", "--title", "no such title anywhere", "--yes")
    assert r.exit_code == 0 and "nothing matches" in r.stderr and "attic-interrupted" in r.stderr, r.output


def test_restore_of_an_id_a_pending_move_holds_says_what_settles_it(run, tmp_path, monkeypatch):
    from tests.conftest import make_fixtures

    def journal_only(root: Path) -> bool:
        """only the journal record was written"""
        a = root / ".mermaid" / "samctl-attic"
        return any((a / ".journal").glob("*.json")) and not any(a.glob("*.manifest.json"))

    root = half_moved(tmp_path, make_fixtures.build_demo_mermaid, ["rm", MID], journal_only, monkeypatch)
    r = run("--root", root, "restore", MID)
    assert r.exit_code == 4 and "interrupted move is pending" in r.stderr, r.output


def test_recover_of_a_half_restored_sam_conversation_finishes_the_restore(run, tmp_path, monkeypatch):
    """A SAM restore killed before conversation.json was placed: recover used to say there was
    nothing to recover (exit 1) and leave the move pending; it settles it first."""
    from tests.conftest import make_fixtures

    def build(root):
        make_fixtures.build_demo_sam(root)
        assert run("--root", root, "rm", SID).exit_code == 0

    def folder_without_primary(root: Path) -> bool:
        """the folder was placed without its conversation.json"""
        f = root / "conversations" / SID
        return f.is_dir() and not (f / "conversation.json").exists()

    root = half_moved(tmp_path, build, ["restore", SID], folder_without_primary, monkeypatch)
    r = run("--root", root, "recover", SID)
    assert r.exit_code == 0 and "repaired:" in r.stderr, r.output
    assert (root / "conversations" / SID / "conversation.json").exists()
    assert run("--root", root, "check").exit_code == 0


@pytest.mark.parametrize("cmd", [["check", "--fix"], ["recover", MID]])
def test_an_attic_folder_that_is_a_link_does_not_stop_commands_that_need_no_attic(cmd, run, mermaid_demo, tmp_path):
    """Settling first reads the attic; a link there is said (attic-unsafe), and the command still does its work."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (mermaid_demo / ".mermaid" / "samctl-attic").symlink_to(elsewhere)
    (mermaid_demo / ".mermaid" / "conversations" / f"{MID}.meta").unlink()
    r = run("--root", mermaid_demo, *cmd)
    assert "attic-unsafe" in r.stderr and "internal error" not in r.output, r.output
    assert (mermaid_demo / ".mermaid" / "conversations" / f"{MID}.meta").exists(), r.output
    assert list(elsewhere.iterdir()) == []


def test_show_of_a_conversation_a_pending_move_holds_says_so(run, log_only):
    before = fingerprint(log_only)
    r = run("--root", log_only, "show", MID)
    assert r.exit_code == 3 and "pending-move" in r.stderr and "attic --repair" in r.stderr, r.output
    assert "samctl recover" not in r.stderr, r.stderr
    assert fingerprint(log_only) == before
