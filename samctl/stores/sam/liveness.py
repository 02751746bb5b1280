"""Is SAM running?  (sam.md §5.1: never modify files while it runs.)

On macOS the process is named ``SAM`` (bundle id
com.fewtarius.syntheticautonomicmind).  We look at process names without
spawning a shell: /proc on Linux (for tests and copies of a tree), ``ps`` on
macOS.  ``SAMCTL_ASSUME_SAM_RUNNING=1`` forces the answer for tests.
"""

from __future__ import annotations

import os
import subprocess
import sys

PROCESS_NAMES = {"SAM"}


def sam_is_running() -> bool:
    forced = os.environ.get("SAMCTL_ASSUME_SAM_RUNNING")
    if forced is not None:
        return forced == "1"
    if sys.platform == "darwin":
        try:
            out = subprocess.run(["ps", "-Axo", "comm="], capture_output=True, text=True, timeout=5).stdout
        except (OSError, subprocess.SubprocessError):
            return False
        return any(os.path.basename(line.strip()) in PROCESS_NAMES for line in out.splitlines())
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return False
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
                if f.read().strip() in PROCESS_NAMES:
                    return True
        except OSError:
            continue
    return False
