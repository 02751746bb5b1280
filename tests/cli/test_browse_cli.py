"""samctl browse from the command line (issue #38): Textual is an optional extra; without it the command
says how to install it (exit 1, nothing read or changed), and no other command ever loads it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import fingerprint

REPO = Path(__file__).resolve().parents[2]

# Run samctl with Textual made unimportable, as in a base install (``pip install samctl``).
WITHOUT_TEXTUAL = """
import sys

class NoTextual:
    def find_spec(self, name, path=None, target=None):
        if name == "textual" or name.startswith("textual."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTextual())
sys.argv = ["samctl"] + sys.argv[1:]
from samctl.cli import main
main()
"""


def _samctl(*args, code=WITHOUT_TEXTUAL):
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ),
        timeout=120,
    )


def test_without_textual_browse_says_how_to_install_it(tmp_path):
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "fixtures" / "demo", demo, symlinks=True)
    before = fingerprint(demo)
    r = _samctl("--root", demo / "SAM", "browse")
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""
    assert r.stderr == (
        "samctl: error: samctl browse needs Textual, an optional extra; nothing was done\n"
        "hint: pip install 'samctl[tui]'\n"
    )
    assert fingerprint(demo) == before


def test_without_textual_the_other_commands_and_the_help_still_work():
    r = _samctl("--help")
    assert r.returncode == 0 and "browse" in r.stdout and "Browse every archive" in r.stdout
    r = _samctl("browse", "--help")
    assert r.returncode == 0 and "samctl[tui]" in r.stdout


def test_no_other_command_imports_textual(tmp_path):
    probe = (
        "import sys, runpy\nsys.argv = ['samctl'] + sys.argv[1:]\nfrom samctl.cli import cli\n"
        "try:\n    cli.main(prog_name='samctl')\nexcept SystemExit:\n    pass\n"
        "print('textual' in sys.modules, file=sys.stderr)\n"
    )
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "fixtures" / "demo", demo, symlinks=True)
    for args in ((), ("--help",), ("--root", demo / "SAM", "ls"), ("--root", demo / "SAM", "show", "8B58")):
        r = _samctl(*args, code=probe)
        assert r.stderr.strip().endswith("False"), (args, r.stderr)


def test_off_a_terminal_browse_refuses_and_reads_nothing(tmp_path, run, monkeypatch):
    import pytest

    pytest.importorskip("textual")
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "fixtures" / "demo", demo, symlinks=True)
    before = fingerprint(demo)
    r = run("--root", demo / "SAM", "browse")  # (the test runner's streams are not a terminal)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith(
        "samctl: error: samctl browse needs a terminal (its input and output); nothing was "
        "done\nhint: in a pipe or a script"
    )
    assert fingerprint(demo) == before
