"""Two writers racing (issue 20, finding 5): the second selects while the first holds samctl's lock,
then selects again under it; nothing is lost and neither reports what the other took as a failure."""

from __future__ import annotations

import pytest


@pytest.mark.slow
@pytest.mark.parametrize("verb, state", [("rm", "deleted"), ("archive", "archived")])
def test_two_writers_racing_lose_nothing_and_exit_0(verb, state, tmp_path):
    """Two `rm` (or `archive`) `--older-than 0d --yes` at once, the second waiting on the lock: every conversation
    ends in the attic exactly once, neither reports a conversation it could not move."""
    import os
    import subprocess
    import sys
    import time

    from bench import gen_archive as gen
    from samctl import lock as samctl_lock

    gen.make_mermaid(tmp_path, 300, seed=5, progress=False)
    conv = tmp_path / ".mermaid" / "conversations"
    ids = sorted(p.name[:-5] for p in conv.glob("*.json"))
    env = dict(os.environ, SAMCTL_JOBS="1")
    cmd = [
        sys.executable,
        "-c",
        "import samctl.cli; samctl.cli.main()",
        "--root",
        str(tmp_path),
        verb,
        "--older-than",
        "0d",
        "--yes",
        "--lock-wait",
        "60",
    ]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)]
    lock = tmp_path / ".mermaid" / ".samctl" / "lock"
    deadline = time.monotonic() + 60
    while not samctl_lock.flock_held(lock) and procs[0].poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)  # the second one starts once the first is writing: it selects while it waits
    procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env))
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err.decode()
        assert b"not-moved" not in err and b"Traceback" not in err, err.decode()
    attic = tmp_path / ".mermaid" / "samctl-attic"
    for cid in ids:
        assert len(list(attic.glob(f"{cid}.{state}.*.manifest.json"))) == 1, cid
    assert not list(conv.glob("*.json")) and not list(conv.glob("*.jsonl"))
