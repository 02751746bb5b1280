"""export of many conversations in worker processes writes what one process writes, byte for byte:
the same files, the same stream, the same findings, in the same order, for every store of the demo."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from samctl.core import export as core_export
from tests.conftest import pools_with

REPO = Path(__file__).resolve().parents[2]
ROOTS = (REPO / "fixtures" / "demo-roots.txt").read_text(encoding="utf-8").strip()
CASES = [(r, None) for r in ROOTS.split(":")] + [(None, ROOTS)]  # each store alone, then all six in ls's order


def _export(run, root, roots, args, out: Path | None):
    env = {"SAMCTL_ROOT": roots} if roots else None
    where = ["--root", str(REPO / root)] if root else []
    r = run(*where, "export", "--all", *args, *(["-o", out] if out else []), env=env)
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir())} if out and out.exists() else {}
    if out:
        shutil.rmtree(out, ignore_errors=True)  # (the next run writes to the same folder: its path is in stderr)
    return r.exit_code, r.stdout, r.stderr, files


@pytest.mark.parametrize("root, roots", CASES, ids=[(r or "all").split("/")[-1] for r, _ in CASES])
@pytest.mark.parametrize("fmt, folder", [("jsonl", False), ("json", False), ("markdown", True), ("html", True)])
def test_workers_write_what_one_process_writes(run, monkeypatch, tmp_path, root, roots, fmt, folder):
    monkeypatch.chdir(REPO)  # (demo-roots.txt names the stores relative to the repository)
    monkeypatch.setenv("SAMCTL_JOBS", "1")
    alone = _export(run, root, roots, ["--to", fmt], tmp_path / "out" if folder else None)
    monkeypatch.setenv("SAMCTL_JOBS", "2")
    pools = pools_with(monkeypatch, {(core_export, "PARALLEL_EXPORT"): 2, (core_export, "EXPORT_PART"): 1})
    shared = _export(run, root, roots, ["--to", fmt], tmp_path / "out" if folder else None)
    assert pools, "no worker process was started"
    assert alone[0] in (0, 3) and (alone[1] or alone[3]), alone[:3]
    assert shared == alone
