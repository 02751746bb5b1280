"""The whole sweep of tests/test_faults.py's ``every_command_after_a_kill`` (issue 20, finding 6): each
lifecycle command killed at every write step, then every other command on what that left (slow)."""

from __future__ import annotations

import os

import pytest

from tests.test_faults import SCENARIOS, every_command_after_a_kill


@pytest.mark.slow
@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if not s.endswith("in-workers")])  # (same states)
def test_every_command_after_a_kill_at_every_step(scenario, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # a kill loses nothing the kernel has; keeps it fast
    assert every_command_after_a_kill(scenario, tmp_path) >= 1
