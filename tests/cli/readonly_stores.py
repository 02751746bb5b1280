"""What the llm and ChatGPT CLI tests share: a copy of the committed demo tree, and the writing
commands every read-only store must refuse."""

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "fixtures" / "demo"


def demo_copy(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(DEMO / name, dest)
    return dest


# (argv after --root ROOT, what the error line names)
WRITES = [
    (["rm", "--yes", "{id}"], "rm writes"),
    (["rm", "--dry-run", "{id}"], "rm writes"),
    (["archive", "--yes", "--older-than", "1d"], "archive writes"),
    (["restore", "{id}"], "restore writes"),
    (["recover", "{id}"], "recover writes"),
    (["compact"], "compact writes"),
    (["attic"], "attic writes"),
    (["check", "--fix"], "check --fix writes"),
    (["search", "--touch", "x"], "search --touch writes"),
    (["log", "{id}"], "log does not read"),
]
