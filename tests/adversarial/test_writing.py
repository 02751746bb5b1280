"""Every writing command on every hostile tree: nothing written outside the store root and its
attic, no file created open to group/others, and what rm/archive took, restore brings back
exactly (bytes, modes, mtimes); what recover rebuilds is what was there."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.adversarial import hostile
from tests.adversarial.harness import TALLY, diff, fingerprint, invoke

ALL = [c for c in hostile.cases() if c.writes]
# absolute places hostile data names: nothing may ever appear there
DECOYS = [Path("/tmp/samctl-escape"), Path("/tmp/samctl-owned.txt")]


def round_trip_id(case) -> str:
    if case.store == "mermaid":
        return hostile.MID if case.target != hostile.MID else hostile.M3
    return hostile.S3 if (case.target or "").upper() != hostile.S3 else hostile.S2


def rt_files(ctx, cid: str) -> dict:
    """The round-trip conversation's files: kind, mode, size, mtime and hash (folders: kind and mode)."""
    if ctx.store == "mermaid":
        paths = [ctx.p(f"{cid}.{ext}") for ext in ("json", "meta", "jsonl")]
    else:
        folder = ctx.p(cid)
        try:
            paths = [folder] + sorted(folder.rglob("*")) if folder.is_dir() else []
        except OSError:  # the conversations folder is closed to us (a permissions case)
            paths = []
    out = {}
    fp = fingerprint(ctx.conv)
    for p in paths:
        rel = os.path.relpath(p, ctx.conv)
        if rel in fp:
            kind, mode, size, mtime, digest = fp[rel]
            out[rel] = (kind, mode) if stat.S_ISDIR(kind) else (kind, mode, size, mtime, digest)
    return out


def inodes(root: Path) -> dict:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[p] = (st.st_ino, st.st_mode)
    return out


def age(folder: Path, seconds: float = 7200) -> None:
    """Make every file under ``folder`` look ``seconds`` old (never through a symlink)."""
    import time

    t = time.time() - seconds
    for dirpath, _, filenames in os.walk(folder, followlinks=False):
        for name in filenames:
            try:
                os.utime(os.path.join(dirpath, name), (t, t), follow_symlinks=False)
            except OSError:
                pass


def run_writes(case, tmp_path) -> None:
    why = case.skip_reason()
    if why:
        pytest.skip(why)
    ctx = hostile.build_case(case, tmp_path / "case")
    failures = []
    rt = round_trip_id(case)
    try:
        TALLY.trees += 1
        # the store is where its folders lead (a symlinked conversations/ or .mermaid/ is followed, as the app does)
        store_parts = (ctx.root, os.path.realpath(ctx.conv), os.path.realpath(ctx.attic.parent))
        not_store = fingerprint(ctx.case_dir, skip=store_parts)
        rt_before = rt_files(ctx, rt)
        seen = inodes(ctx.root)
        steps = [
            ("check-fix", ["check", "--fix"]),
            ("recover", ["recover", case.target or rt, "--force"]),
            ("rm", ["rm", rt, "--yes", "--force", "--include-pinned"]),
            ("restore", ["restore", rt, "--force"]),
            ("archive", ["archive", rt, "--yes", "--force", "--include-pinned"]),
            ("restore-archived", ["restore", rt, "--force"]),
            ("rm-again", ["rm", rt, "--yes", "--force", "--include-pinned"]),
            ("restore-as-new", ["restore", rt, "--as-new", "--force"]),
            ("compact", ["compact", "--force"]),
            ("compact-logs", ["compact", "--force", "--log-threshold", "1K"]),  # rewrite every (hostile) log
            ("attic-repair", ["attic", "--repair"]),
            ("search-touch", ["search", "budget portland", "--touch", "--force"]),
            ("purge", ["rm", "--purge", case.target or rt, "--yes", "--force", "--include-pinned"]),
        ]
        results = {}
        for key, args in steps:
            if key == "compact-logs":
                age(ctx.conv)  # compact leaves alone logs written in the last minute
                seen = inodes(ctx.root)
            out = invoke(["--root", str(ctx.root), *case.args, *args], env=ctx.env or None)
            TALLY.cases += 1
            results[key] = out
            label = f"{case.name}: samctl {' '.join(a[:60] for a in args)}"
            if out.crash:
                TALLY.note("crashes", label)
                failures.append(f"CRASH {label}\n{out.crash}")
            elif out.exit_code not in (0, 1, 2, 3, 4, 5):
                TALLY.note("bad_exits", f"{label} -> {out.exit_code}")
                failures.append(f"EXIT {out.exit_code} {label}\n{out.stderr[-1500:]}")
            now = fingerprint(ctx.case_dir, skip=store_parts)
            if now != not_store:
                TALLY.note("escapes", label)
                failures.append(
                    f"ESCAPE: {label} wrote outside the store:\n  " + "\n  ".join(diff(not_store, now)[:20])
                )
                not_store = now
            for d in DECOYS:
                if os.path.lexists(d):
                    TALLY.note("escapes", f"{label}: {d}")
                    failures.append(f"ESCAPE: {label} created {d}")
            after = inodes(ctx.root)
            for p, (ino, mode) in after.items():
                if seen.get(p, (None,))[0] != ino and not stat.S_ISLNK(mode) and stat.S_IMODE(mode) & 0o077:
                    TALLY.note("escapes", f"{label}: {p} created {stat.S_IMODE(mode):04o}")
                    failures.append(f"OPEN MODE: {label} created {p} with mode {stat.S_IMODE(mode):04o}")
            seen = after
            if key in ("restore", "restore-archived"):
                moved = results["rm" if key == "restore" else "archive"]
                now_rt = rt_files(ctx, rt)
                if moved.exit_code == 0 and out.exit_code != 0:
                    TALLY.note("escapes", f"{label}: could not bring back what {key} took")
                    failures.append(f"LOST: {label} failed after a successful move:\n{out.stderr[-1500:]}")
                elif now_rt != rt_before:
                    TALLY.note("changed", f"{label}: round trip differs")
                    failures.append(f"ROUND TRIP {label}:\n  " + "\n  ".join(diff(rt_before, now_rt)[:20]))
    finally:
        hostile.cleanup(ctx)
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in ALL
        if c.fast and not c.heavy and c.category in ("baseline", "traversal", "attic", "journal", "special")
    ],
    ids=lambda c: c.name,
)
def test_writes_fast(case, tmp_path):
    run_writes(case, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        c
        for c in ALL
        if not (c.fast and not c.heavy and c.category in ("baseline", "traversal", "attic", "journal", "special"))
    ],
    ids=lambda c: c.name,
)
def test_writes_full(case, tmp_path):
    run_writes(case, tmp_path)


# ---------------------------------------------------------------------------------- recover
def _recover_round_trip(ctx, cid: str, lose, path_of) -> None:
    original = json.loads(path_of(ctx, cid).read_bytes())
    lose(ctx, cid)
    out = invoke(["--root", str(ctx.root), "recover", cid, "--force"])
    TALLY.cases += 1
    assert out.crash is None, out.crash
    assert out.exit_code == 0, out.stderr
    assert json.loads(path_of(ctx, cid).read_bytes()) == original
    assert stat.S_IMODE(os.lstat(path_of(ctx, cid)).st_mode) == 0o600


@pytest.mark.parametrize("cid", [hostile.MID, hostile.M2, hostile.M3])
def test_mermaid_recover_brings_back_a_lost_snapshot(tmp_path, cid):
    ctx = hostile.make_ctx("mermaid", tmp_path / "case")

    def lose(ctx, cid):
        ctx.p(f"{cid}.json").unlink()

    _recover_round_trip(ctx, cid, lose, lambda ctx, cid: ctx.p(f"{cid}.json"))


@pytest.mark.parametrize("cid", [hostile.SID, hostile.S2, hostile.S3])
def test_sam_recover_brings_back_a_conversation_from_its_tmp(tmp_path, cid):
    ctx = hostile.make_ctx("sam", tmp_path / "case")

    def lose(ctx, cid):
        os.rename(ctx.p(f"{cid}/conversation.json"), ctx.p(f"{cid}/conversation.json.tmp"))

    _recover_round_trip(ctx, cid, lose, lambda ctx, cid: ctx.p(f"{cid}/conversation.json"))
