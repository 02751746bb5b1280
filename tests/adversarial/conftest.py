"""The adversarial suite's plumbing: the full sweep only with ``-m slow``, and one line of totals per run.

The line (``adversarial: N cases, 0 crashes, 0 changed bytes, 0 escapes, ...``) is
printed at the end of the pytest output and written to
``test-artifacts/adversarial.txt`` (``$SAMCTL_ARTIFACTS`` overrides the folder).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.adversarial.harness import REPO, TALLY

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """Slow tests run only when the -m expression asks for them (``-m slow``, ``-m "slow or not slow"``)."""
    if "slow" in (config.option.markexpr or ""):
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("slow") and HERE in Path(str(item.fspath)).parents else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not TALLY.cases:
        return
    line = TALLY.line()
    if os.geteuid() != 0:
        line += f" [as uid {os.geteuid()}]"
    terminalreporter.write_line(line)
    for p in TALLY.problems[:40]:
        terminalreporter.write_line(f"  {p}")
    folder = Path(os.environ.get("SAMCTL_ARTIFACTS") or REPO / "test-artifacts")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "adversarial.txt").write_text(line + "\n" + "".join(f"  {p}\n" for p in TALLY.problems))
    except OSError as exc:
        terminalreporter.write_line(f"(could not write {folder}/adversarial.txt: {exc.strerror})")
