"""mermaid records the git branch of a session (sidecar and snapshot ``git_branch``): ``ls`` and ``show`` give
it, from a first listing, from the listing cache and from the listing saved with the folder's stamp."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import fingerprint

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo" / "mermaid-project"


def test_ls_and_show_give_the_branch_mermaid_recorded(run, tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(DEMO, root, symlinks=True)
    conv = root / ".mermaid" / "conversations"
    meta = conv / "20260901_170000_250.meta"
    doc = json.loads(meta.read_text())
    doc["git_branch"] = None  # a session outside a repository
    meta.write_text(json.dumps(doc, separators=(",", ":")))
    (conv / "20260812_091500_004.meta").unlink()  # listed from its snapshot
    before = fingerprint(root)
    want = {"20260810_140307_512": "main", "20260812_091500_004": "main", "20260901_170000_250": None}
    for args in ((), (), ("--no-cache",)):  # a first scan, the saved listing, no cache
        r = run("--root", root, *args, "ls", "--format", "jsonl")
        assert (r.exit_code, r.stderr) == (0, "")
        assert {x["id"]: x["branch"] for x in map(json.loads, r.stdout.splitlines())} == want
    head = run("--root", root, "show", "20260810_140307_512", "--no-pager").stdout.splitlines()[2]
    assert head == f"project {root.resolve()} · branch main"
    assert fingerprint(root) == before
