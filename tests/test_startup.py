"""Fast start: --help and ls on a small tree must not import numpy or zstandard."""

import subprocess
import sys

PROBE = r"""
import sys
from click.testing import CliRunner
from samctl.cli import cli
r = CliRunner().invoke(cli, sys.argv[1:])
assert r.exit_code in (0, 3), (r.exit_code, r.output)
heavy = [m for m in ("numpy", "zstandard") if m in sys.modules]
print(",".join(heavy))
"""


def _heavy(*args) -> str:
    out = subprocess.run([sys.executable, "-c", PROBE, *map(str, args)], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_help_imports_no_heavy_module():
    assert _heavy("--help") == ""


def test_ls_and_show_import_no_heavy_module(mermaid_demo, sam_demo):
    assert _heavy("--root", mermaid_demo, "ls") == ""
    assert _heavy("--root", sam_demo, "ls") == ""
    assert _heavy("--root", mermaid_demo, "show", "20260810") == ""


def test_every_command_help_imports_no_heavy_module():
    from samctl.cli import COMMANDS

    for name in COMMANDS:
        assert _heavy(name, "--help") == "", name
