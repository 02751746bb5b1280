"""Copy samctl browse's snapshots (tests/tui/__snapshots__, made by pytest-textual-snapshot on a copy of
fixtures/demo) to docs/browse-*.svg, the screenshots docs/browse.md shows.  Regenerate with:

    .venv/bin/python -m pytest -q tests/tui/test_browse_snapshots.py --snapshot-update
    .venv/bin/python docs/make_browse_screens.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAPS = REPO / "tests" / "tui" / "__snapshots__" / "test_browse_snapshots"
SCREENS = {  # snapshot -> docs/browse-NAME.svg
    "test_list[160x48]": "list",
    "test_search[160x48]": "search",
    "test_transcript[160x48]": "transcript",
    "test_attic[160x48]": "attic",
    "test_list[80x24]": "list-80x24",
    "test_keys": "keys",
}

if __name__ == "__main__":
    for snap, name in SCREENS.items():
        shutil.copyfile(SNAPS / f"{snap}.svg", REPO / "docs" / f"browse-{name}.svg")
        print(f"docs/browse-{name}.svg")
