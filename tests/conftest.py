"""Shared fixtures: trees built by fixtures/make_fixtures.py into tmp_path, a
CliRunner with separate stderr, and a tree fingerprint for read-only proofs.

Also the run's rules: tests marked ``slow`` (long sweeps) run only when the -m expression names them
(``.ci/run``); each test is independent of order and of other pytest-xdist workers (its own HOME, cache,
data dir and tmp path); the adversarial tally of every worker is added up and printed once.

Hypothesis: the default run tries at most ``FAST_EXAMPLES`` examples per property (a test's own lower figure
stands); ``SAMCTL_TEST_THOROUGH=1`` (set by ``.ci/run``'s slow stage) runs every property at its full figure.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings as hypothesis_settings

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("make_fixtures", REPO / "fixtures" / "make_fixtures.py")
make_fixtures = importlib.util.module_from_spec(_spec)
sys.modules["make_fixtures"] = make_fixtures
_spec.loader.exec_module(make_fixtures)


# The default run's cap on examples per property; the thorough run keeps each test's own figure.
FAST_EXAMPLES = 50
THOROUGH = os.environ.get("SAMCTL_TEST_THOROUGH") == "1"
hypothesis_settings.register_profile("fast", max_examples=FAST_EXAMPLES)
hypothesis_settings.register_profile("thorough")
hypothesis_settings.load_profile("thorough" if THOROUGH else "fast")


def _cap_examples(item) -> None:
    """An explicit ``@settings(max_examples=N)`` overrides any profile, so the fast run lowers N on the test
    itself (hypothesis reads these settings when the test is called, not when it is decorated)."""
    fn = getattr(item, "obj", None)
    current = getattr(fn, "_hypothesis_internal_use_settings", None)
    if current is not None and current.max_examples > FAST_EXAMPLES:
        fn._hypothesis_internal_use_settings = hypothesis_settings(current, max_examples=FAST_EXAMPLES)


def pytest_collection_modifyitems(config, items):
    """Slow tests run only when the -m expression asks for them (``-m slow``, ``-m "slow or not slow"``):
    the README's test command leaves them to ``.ci/run``. Outside the thorough run, properties are capped."""
    if not THOROUGH:
        for item in items:
            _cap_examples(item)
    if "slow" in (config.option.markexpr or ""):
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("slow") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_sessionfinish(session):
    """A pytest-xdist worker hands its adversarial tally (tests/adversarial/harness.py) to the controller."""
    harness = sys.modules.get("tests.adversarial.harness")
    out = getattr(session.config, "workeroutput", None)
    if harness is not None and out is not None:
        out["adversarial_tally"] = dataclasses.asdict(harness.TALLY)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """The controller adds up the tallies of its workers."""
    tally = getattr(node, "workeroutput", {}).get("adversarial_tally")
    if tally:
        from tests.adversarial.harness import TALLY

        TALLY.add(tally)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The adversarial line, when adversarial tests ran: printed, and kept in test-artifacts/adversarial.txt."""
    harness = sys.modules.get("tests.adversarial.harness")
    if harness is None or not harness.TALLY.cases:
        return
    tally = harness.TALLY
    line = tally.line()
    if os.geteuid() != 0:
        line += f" [as uid {os.geteuid()}]"
    terminalreporter.write_line(line)
    for p in tally.problems[:40]:
        terminalreporter.write_line(f"  {p}")
    folder = Path(os.environ.get("SAMCTL_ARTIFACTS") or REPO / "test-artifacts")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "adversarial.txt").write_text(line + "\n" + "".join(f"  {p}\n" for p in tally.problems))
    except OSError as exc:
        terminalreporter.write_line(f"(could not write {folder}/adversarial.txt: {exc.strerror})")


@pytest.fixture(scope="session")
def _env_folders(tmp_path_factory) -> Path:
    """One folder per worker that holds each test's own cache, data and home folders (``_isolated_env``)."""
    return tmp_path_factory.mktemp("env", numbered=False)


@pytest.fixture(autouse=True)
def _isolated_env(_env_folders, monkeypatch):
    """Never touch the user's cache or real stores; SAM is never 'running' unless a test says so.
    HOME and every app's own variable point at an empty folder: without --root, the reading commands
    cover every store found on the machine (issue #23), and a test must find only what it made.

    The folders are made with ``tempfile.mkdtemp``, not ``tmp_path_factory.mktemp``: the latter lists the
    whole base folder to number each new one, which made the setup of 4,000 tests cost a minute."""
    own = Path(tempfile.mkdtemp(dir=_env_folders))
    for name in ("cache", "data", "home"):
        (own / name).mkdir()
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(own / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(own / "data"))  # the attic of Claude Code, Codex
    monkeypatch.setenv("HOME", str(own / "home"))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "LLM_USER_PATH", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SAMCTL_ASSUME_SAM_RUNNING", "0")
    monkeypatch.delenv("SAMCTL_ROOT", raising=False)
    monkeypatch.setenv("TZ", "UTC")
    # every search checks every file (the quick path, trusting a recent check: tests/search/test_index_checked.py)
    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "0")
    # fsync is a no-op in tests (test-only switch, samctl/fs/syncing.py); a test of durability unsets it
    monkeypatch.setenv("SAMCTL_TEST_NO_FSYNC", "1")
    # a locked SQLite database is given up on after 0.1 s, not 2 s (test-only switch, samctl/stores/sqlite.py)
    monkeypatch.setenv("SAMCTL_TEST_LOCK_WAIT", "0.1")


@pytest.fixture
def zone(monkeypatch):
    """``zone(name)``: this process runs in time zone ``name`` (TZ and ``time.tzset``) until the
    test ends; then the zone the test started in is back."""
    import time

    before = os.environ.get("TZ")

    def set_zone(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield set_zone
    if before is None:
        monkeypatch.delenv("TZ", raising=False)
    else:
        monkeypatch.setenv("TZ", before)
    time.tzset()


@pytest.fixture
def mermaid_demo(tmp_path) -> Path:
    project = tmp_path / "proj"
    make_fixtures.build_demo_mermaid(project)
    return project


@pytest.fixture
def sam_demo(tmp_path) -> Path:
    base = tmp_path / "SAM"
    make_fixtures.build_demo_sam(base)
    return base


@pytest.fixture
def mermaid_broken(tmp_path):
    project = tmp_path / "proj"
    outside = tmp_path / "outside"
    outside.mkdir()
    expected = make_fixtures.build_broken_mermaid(project, outside)
    return project, expected


@pytest.fixture
def sam_broken(tmp_path):
    base = tmp_path / "SAM"
    outside = tmp_path / "outside-sam"
    outside.mkdir()
    expected = make_fixtures.build_broken_sam(base, outside)
    return base, expected


def count_pools(monkeypatch) -> list:
    """The worker pools (``ProcessPoolExecutor``) made from now on in this test: their arguments, one entry each."""
    import concurrent.futures

    made: list = []
    real = concurrent.futures.ProcessPoolExecutor

    def counting(*args, **kw):
        made.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", counting)
    return made


def pools_with(monkeypatch, settings: dict) -> list:
    """``count_pools``, after setting each ``(module, name): value`` of ``settings`` (the thresholds
    that make a small fixture go to worker processes)."""
    made = count_pools(monkeypatch)
    for (mod, name), value in settings.items():
        monkeypatch.setattr(mod, name, value)
    return made


def resealed(doc: dict) -> bytes:
    """A listing cache's document, changed by a test, sealed as samctl seals what it writes: what reaches
    the checks of each entry (a cache whose seal is broken is ignored whole, ``metacache.is_sealed``)."""
    from samctl.stores.metacache import seal

    return seal({k: v for k, v in doc.items() if k != "sum"})


def fingerprint(root: Path) -> dict:
    """Every entry under root (not following symlinks): kind, mode, size, mtime_ns, sha256 of regular files."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames + ([] if dirpath != str(root) else ["."]):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            digest = None
            if stat.S_ISREG(st.st_mode) and st.st_size < 8 << 20:
                with open(p, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(p, root)] = (
                stat.S_IFMT(st.st_mode),
                stat.S_IMODE(st.st_mode),
                st.st_size,
                st.st_mtime_ns,
                digest,
            )
    return out


@pytest.fixture
def run():
    """run(*args) -> click Result with .exit_code, .stdout, .stderr."""
    from samctl.cli import cli

    def _run(*args, input=None, env=None):
        runner = CliRunner()
        return runner.invoke(cli, [str(a) for a in args], input=input, env=env, catch_exceptions=False)

    return _run


@pytest.fixture
def folder_write_rule(monkeypatch):
    """The kernel's rule for a user who is not root, for tests that run as root: adding, removing or
    renaming a name needs write permission on its folder (root may do it in a 0555 folder; nobody
    else may)."""
    import errno

    from samctl.fs import writing

    def check(*paths):
        for p in paths:
            parent = os.path.dirname(os.path.abspath(os.fspath(p)))
            if not os.stat(parent).st_mode & stat.S_IWUSR:
                raise PermissionError(errno.EACCES, "Permission denied (folder not writable)", os.fspath(p))

    def guard(fn, n):
        def wrapped(*args, **kw):
            check(*args[:n])
            return fn(*args, **kw)

        return wrapped

    for name, n in (
        ("unlink", 1),
        ("remove", 1),
        ("rmdir", 1),
        ("mkdir", 1),
        ("rename", 2),
        ("replace", 2),
        ("link", 2),
    ):
        monkeypatch.setattr(os, name, guard(getattr(os, name), n))
    if writing.renameat2 is writing._UNSET:
        writing.renameat2 = writing._load_renameat2()
    if writing.renameat2 is not None:
        monkeypatch.setattr(writing, "renameat2", guard(writing.renameat2, 2))
