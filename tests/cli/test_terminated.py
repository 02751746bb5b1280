"""SIGTERM (`timeout`, a service manager, `kill`) is handled as Ctrl-C is: samctl cleans up what it
was writing, says so, and dies of the signal, so that whoever sent it sees that it worked.
(Stopped at every write step: test_faults' "term" mode.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from samctl.stores import open_store
from tests.cli.test_lifecycle import MID, attic_of, conv, files_state
from tests.conftest import REPO

_DRIVER = r"""
import os, signal, sys
from samctl.fs import faults
import samctl.cli

count = 0

def hook(step):
    global count
    count += 1
    if count == int(os.environ["TERM_AT_STEP"]):
        os.kill(os.getpid(), signal.SIGTERM)

faults.fault_hook = hook
sys.argv = ["samctl", *sys.argv[1:]]
samctl.cli.main()
"""


def test_sigterm_cleans_up_says_so_and_dies_of_the_signal(run, mermaid_demo, tmp_path):
    (tmp_path / "driver.py").write_text(_DRIVER)
    before = files_state(mermaid_demo, MID)
    # the sixth write step: the batch's journal record is on disk, the archive's temp is about to be made
    p = subprocess.run(
        [sys.executable, str(tmp_path / "driver.py"), "--root", str(mermaid_demo), "rm", MID],
        cwd=REPO,
        env=dict(os.environ, TERM_AT_STEP="6"),
        capture_output=True,
        text=True,
    )
    assert p.returncode == -signal.SIGTERM, (p.returncode, p.stderr)
    assert p.stderr.endswith("samctl: terminated\n") and "Traceback" not in p.stderr, p.stderr
    assert [q for q in mermaid_demo.rglob("*.tmp")] == []  # what it was writing is gone
    assert files_state(mermaid_demo, MID) == before  # and the conversation is whole where it was
    r = run("--root", mermaid_demo, "rm", MID)  # the next writing command finishes what was interrupted
    assert r.exit_code == 0, r.stderr
    assert MID not in open_store(str(mermaid_demo)).all_ids() and files_state(mermaid_demo, MID) == {}
    assert [p.name for p in attic_of(mermaid_demo).glob("*.manifest.json")][0].startswith(MID)
    assert list((attic_of(mermaid_demo) / ".journal").iterdir()) == []
    assert conv(mermaid_demo).is_dir()


_TWICE = r'''
import os, signal, sys, time
import click
import samctl.cli
from samctl.errors import Terminated

@click.command("slow")
def command():
    """Stopped, then stopped again while it cleans up."""
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    finally:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except Terminated:
            print("the second SIGTERM was raised too")

samctl.cli.COMMANDS["slow"] = ("__main__", "")
sys.argv = ["samctl", "slow"]
samctl.cli.main()
'''


def test_a_second_sigterm_ends_it_at_once(tmp_path):
    """The handler lets go after the first signal: a second one, during the clean-up, ends samctl at once."""
    (tmp_path / "twice.py").write_text(_TWICE)
    p = subprocess.run(
        [sys.executable, str(tmp_path / "twice.py")], cwd=REPO, capture_output=True, text=True, timeout=30
    )
    assert p.returncode == -signal.SIGTERM, (p.returncode, p.stderr)
    assert p.stdout == "" and p.stderr == "", (p.stdout, p.stderr)  # (not even the first one's message)
