"""Fuzzing samctl's readers: the checked-in corpus replayed, hypothesis-driven mutations of it
(a few in the normal run, many under -m slow), and a short coverage-guided atheris run per
reader under -m slow (skipped where atheris is not installed, unless SAMCTL_REQUIRE_ATHERIS=1)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.adversarial import fuzz
from tests.adversarial.harness import REPO, TALLY

SEEDS = {name: fuzz.corpus(name) for name in fuzz.TARGET_NAMES}
ATHERIS_SECONDS = int(os.environ.get("SAMCTL_FUZZ_SECONDS", "20"))


def run_target(name: str, data: bytes) -> None:
    TALLY.cases += 1
    TALLY.fuzz_inputs += 1
    try:
        fuzz.TARGETS[name](data)
    except Exception:
        TALLY.note("crashes", f"fuzz {name}: {data[:80]!r}")
        raise


@pytest.mark.parametrize("name", fuzz.TARGET_NAMES)
def test_corpus_replays_cleanly(name):
    assert SEEDS[name], f"no seeds in tests/adversarial/corpus/{name}"
    for data in SEEDS[name]:
        run_target(name, data)


@st.composite
def mutated(draw, name: str):
    seeds = SEEDS[name]
    data = bytearray(draw(st.sampled_from(seeds)) if seeds and draw(st.booleans()) else draw(st.binary(max_size=512)))
    for _ in range(draw(st.integers(1, 6))):
        how = draw(st.sampled_from(["flip", "insert", "delete", "dup", "splice", "interesting"]))
        i = draw(st.integers(0, len(data)))
        if how == "flip" and data:
            j = min(i, len(data) - 1)
            data[j] ^= draw(st.integers(1, 255))
        elif how == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif how == "delete":
            del data[i : i + draw(st.integers(1, 64))]
        elif how == "dup":
            data[i:i] = data[i : i + draw(st.integers(1, 128))]
        elif how == "splice" and seeds:
            other = draw(st.sampled_from(seeds))
            k = draw(st.integers(0, len(other)))
            data = data[:i] + other[k : k + draw(st.integers(1, 512))] + data[i:]
        elif how == "interesting":
            data[i:i] = draw(
                st.sampled_from(
                    [
                        b"\0" * 32,
                        b"\xff\xfe",
                        b"\\ud800",
                        b"NaN",
                        b"1e999",
                        b"[" * 130,
                        b"\r\n",
                        b'"v":2',
                        b"\n",
                        b'"id":"../../x"',
                        b"-1",
                        b"9" * 30,
                    ]
                )
            )
    return bytes(data)


def _fuzz_test(name: str, examples: int):
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=bool(os.environ.get("CI")),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=mutated(name))
    def test(data):
        run_target(name, data)

    return test


for _name in fuzz.TARGET_NAMES:
    _slug = _name.replace("-", "_")
    globals()[f"test_hypothesis_{_slug}"] = _fuzz_test(_name, 25)
    globals()[f"test_hypothesis_{_slug}_long"] = pytest.mark.slow(_fuzz_test(_name, 400))


def _atheris_available() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("name", fuzz.TARGET_NAMES)
def test_atheris_short_run(name, tmp_path):
    if not _atheris_available():
        if os.environ.get("SAMCTL_REQUIRE_ATHERIS") == "1":
            pytest.fail("atheris is required here (SAMCTL_REQUIRE_ATHERIS=1) but not installed")
        pytest.skip("atheris is not installed (pip install atheris)")
    new = tmp_path / "new"
    new.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.adversarial.fuzz",
            name,
            f"-max_total_time={ATHERIS_SECONDS}",
            "-rss_limit_mb=4096",
            "-timeout=30",
            f"-artifact_prefix={tmp_path}/",
            "-print_final_stats=1",
            str(new),
            str(fuzz.CORPUS / name),
        ],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env=env,
        timeout=ATHERIS_SECONDS * 4 + 120,
    )
    runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", p.stderr)
    done = int(runs[-1]) if runs else 0
    TALLY.cases += done
    TALLY.fuzz_inputs += done
    crashes = sorted(x.name for x in tmp_path.iterdir() if x.name.startswith(("crash-", "timeout-", "oom-")))
    if p.returncode != 0 or crashes:
        TALLY.note("crashes", f"atheris {name}: {crashes}")
    assert p.returncode == 0 and not crashes, f"{crashes}\n{p.stderr[-4000:]}"
    assert done > 0, p.stderr[-2000:]
