"""Fixtures of the browser's tests: a copy of fixtures/demo (never the user's data: HOME, the cache and
the data folder are the temporary ones tests/conftest.py sets), its stores opened, and a fixed "now"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOW = 1_790_000_000.0  # 2026-09-21 14:13 UTC: the relative dates of the screens count from here
ROOTS = ("SAM", "mermaid-project", "claude_code", "codex", "llm/logs.db")


@pytest.fixture
def demo(tmp_path) -> Path:
    """A copy of fixtures/demo (mtimes kept, so no session of it is live unless a test says so)."""
    dest = tmp_path / "demo"
    shutil.copytree(REPO / "fixtures" / "demo", dest, symlinks=True)
    return dest


def open_stores(demo: Path, roots=ROOTS) -> list:
    from samctl.stores import open_store
    from samctl.stores.base import Caps

    return [open_store(str(demo / r), Caps(), True) for r in roots]


@pytest.fixture
def stores(demo, monkeypatch) -> list:
    monkeypatch.setenv("SAMCTL_LIVE_MINUTES", "0")  # (a copy made now is not a session being written)
    return open_stores(demo)


@pytest.fixture(autouse=True)
def _quick_idle_checks(monkeypatch):
    """Textual's pilot waits after every key until the process looks idle, measured in 20 ms naps (at least
    two a key); in 5 ms naps the same check (CPU under a twentieth of the nap) passes 4x sooner.  The tests do
    not lean on it for what the workers do: ``settle`` waits for them by name."""
    from textual import _wait

    monkeypatch.setattr(_wait, "SLEEP_GRANULARITY", 0.005)
    monkeypatch.setattr(_wait, "SLEEP_IDLE", 0.005 / 20)
