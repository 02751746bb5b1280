"""`samctl check` without --fix reads sessions and conversation folders in worker processes when
there are many: the report is the one a single process gives, finding for finding, in order."""

from __future__ import annotations

import os

import pytest

from samctl.stores.mermaid import checks as mermaid_checks
from samctl.stores.sam import checks as sam_checks
from tests.conftest import fingerprint, pools_with


@pytest.fixture
def pools(monkeypatch):
    """Every unit of work is one session or folder, workers from two units on; counts the pools made."""
    return pools_with(
        monkeypatch,
        {
            (mod, name): value
            for mod in (mermaid_checks, sam_checks)
            for name, value in (("CHECK_CHUNK", 1), ("PARALLEL_MIN_PARTS", 2))
        },
    )


@pytest.mark.parametrize("which", ["mermaid", "sam"])
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_workers_report_what_one_process_does(run, which, fmt, mermaid_broken, sam_broken, pools):
    root, _ = mermaid_broken if which == "mermaid" else sam_broken
    before = fingerprint(root)
    one = run("--root", root, "check", "--format", fmt, env={"SAMCTL_JOBS": "1"})
    assert pools == []
    two = run("--root", root, "check", "--format", fmt, env={"SAMCTL_JOBS": "2"})
    assert len(pools) == 1
    assert (two.exit_code, two.stdout, two.stderr) == (one.exit_code, one.stdout, one.stderr)
    assert one.exit_code == 3 and (one.stdout + one.stderr).count("error") >= 3
    assert fingerprint(root) == before


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_fix_stays_in_one_process(run, which, mermaid_broken, sam_broken, pools):
    root, _ = mermaid_broken if which == "mermaid" else sam_broken
    run("--root", root, "check", "--fix", env={"SAMCTL_JOBS": "2"})
    assert pools == []


def test_fix_stats_each_entry_when_it_reaches_it(run, sam_demo):
    """A top-level file hard-linked to a conversation.json fixed earlier in the run has the fixed
    mode by the time check reaches it: one fix, not two."""
    conv = sam_demo / "conversations"
    inner = sorted(conv.glob("*/conversation.json"))[0]
    inner.chmod(0o644)
    os.link(inner, conv / "zz-hardlink.json")
    r = run("--root", sam_demo, "check", "--fix")
    fixed = [line for line in (r.stdout + r.stderr).splitlines() if "fixed" in line and "0644" in line]
    assert len(fixed) == 1 and inner.name in fixed[0] and "1 fixed" in r.stderr, r.stdout + r.stderr
