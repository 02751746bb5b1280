"""A conversation skipped only because a file is over the read cap (--max-file-size) is not
damaged: the hints say to read it with a bigger cap, not to recover it."""

from __future__ import annotations

import pytest

from tests.conftest import fingerprint


@pytest.mark.parametrize("which,cid,cap", [("mermaid", "20260810_140307_512", "2K"),
                                           ("sam", "8B58CBC4-ACA7-4811-AE66-C01921690310", "1K")])
def test_show_and_recover_point_at_max_file_size(run, mermaid_demo, sam_demo, which, cid, cap):
    root = mermaid_demo if which == "mermaid" else sam_demo
    before = fingerprint(root)
    r = run("--root", root, "--max-file-size", cap, "show", cid)
    assert r.exit_code == 3 and "--max-file-size 1G" in r.stderr, r.stderr
    assert "samctl recover" not in r.stderr.replace("--root", "")
    r = run("--root", root, "--max-file-size", cap, "recover", cid)
    assert r.exit_code == 1 and "hint: " in r.stderr and "--max-file-size 1G" in r.stderr, r.stderr
    assert "--use PATH" not in r.stderr and "--from FILE" not in r.stderr
    assert fingerprint(root) == before
    assert run("--root", root, "--max-file-size", "1G", "show", cid).exit_code == 0  # and the hint works
