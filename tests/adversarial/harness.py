"""Running samctl's commands against hostile trees and keeping the score.

``TALLY`` counts every command run on a hostile tree (and every fuzzed input),
and every crash, changed byte, escape, wrong exit code and missed finding;
``tests/adversarial/conftest.py`` prints it as one line when the session ends.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import stat
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
HANG_SECONDS = 60  # no single command on a small tree may take this long: a FIFO read would block forever


@dataclass
class Tally:
    cases: int = 0
    crashes: int = 0
    changed: int = 0  # trees whose bytes, modes or mtimes a read-only command changed
    escapes: int = 0  # writes outside the store root and the attic, or files created open to group/others
    bad_exits: int = 0
    missed: int = 0  # hostile items check (or attic) did not report
    trees: int = 0
    fuzz_inputs: int = 0
    problems: list = field(default_factory=list)

    def note(self, kind: str, what: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.problems) < 200:
            self.problems.append(f"{kind}: {what}")

    def add(self, other: dict) -> None:
        """Add the counts of another process (a pytest-xdist worker: tests/conftest.py) to these."""
        for kind, value in other.items():
            if kind == "problems":
                self.problems.extend(value[: max(0, 200 - len(self.problems))])
            else:
                setattr(self, kind, getattr(self, kind) + value)

    def line(self) -> str:
        return (
            f"adversarial: {self.cases} cases, {self.crashes} crashes, {self.changed} changed bytes, "
            f"{self.escapes} escapes, {self.bad_exits} wrong exit codes, {self.missed} missed findings "
            f"({self.trees} hostile trees, {self.fuzz_inputs} fuzzed inputs)"
        )


TALLY = Tally()


# --------------------------------------------------------------------------------- fingerprints
def fingerprint(root: Path, skip: tuple = ()) -> dict:
    """tests/conftest.fingerprint that also copes with what it cannot open (it records that instead).

    ``skip``: paths (absolute) whose subtrees are left out.
    """
    out = {}
    root = Path(root)
    skip = tuple(str(s) for s in skip)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in skip]
        names = dirnames + filenames + ([] if dirpath != str(root) else ["."])
        for name in names:
            p = os.path.join(dirpath, name)
            if p in skip:
                continue
            try:
                st = os.lstat(p)
            except OSError:
                continue
            digest = None
            if stat.S_ISREG(st.st_mode) and st.st_size < 8 << 20:
                try:
                    with open(p, "rb") as f:
                        digest = hashlib.sha256(f.read()).hexdigest()
                except OSError:
                    digest = "unreadable"
            elif stat.S_ISLNK(st.st_mode):
                digest = os.readlink(p)
            out[os.path.relpath(p, root)] = (
                stat.S_IFMT(st.st_mode),
                stat.S_IMODE(st.st_mode),
                st.st_size,
                st.st_mtime_ns,
                digest,
            )
    return out


def diff(before: dict, after: dict) -> list[str]:
    lines = []
    for k in sorted(set(before) | set(after)):
        if before.get(k) != after.get(k):
            lines.append(f"{k!r}: {before.get(k)} -> {after.get(k)}")
    return lines


# --------------------------------------------------------------------------------- running
class Hang(Exception):
    pass


@contextlib.contextmanager
def watchdog(seconds: float = HANG_SECONDS):
    def fire(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Outcome:
    args: list
    exit_code: int | None
    stdout: bytes
    stderr: str
    crash: str | None  # the traceback, when one escaped


def invoke(args: list, env: dict | None = None) -> Outcome:
    """Run samctl in-process; an exception (SAMCTL_DEBUG=1 lets it out) is a crash, never swallowed."""
    from samctl.cli import cli

    runner = CliRunner()
    env = dict(env or {}, SAMCTL_DEBUG="1")
    try:
        with watchdog():
            r = runner.invoke(
                cli, [str(a) if not isinstance(a, str) else a for a in args], env=env, catch_exceptions=False
            )
    except SystemExit as exc:  # pragma: no cover - CliRunner turns these into exit codes
        return Outcome(args, exc.code if isinstance(exc.code, int) else 1, b"", "", None)
    except BaseException as exc:  # noqa: BLE001 - every escape is what we are looking for
        if isinstance(exc, KeyboardInterrupt):
            raise
        return Outcome(args, None, b"", "", "".join(traceback.format_exception(exc))[-4000:])
    crash = None
    if "Traceback" in r.stderr or "internal error" in r.stderr:
        crash = r.stderr[-4000:]
    return Outcome(args, r.exit_code, r.stdout_bytes, r.stderr, crash)


def invoke_subprocess(
    args: list, env: dict | None = None, timeout: float = HANG_SECONDS, broken_pipe: bool = False
) -> Outcome:
    """The same through a real process (``python -m samctl``): what a user's shell sees.
    ``broken_pipe``: stdout and stderr go into a pipe whose reader is gone (``samctl ... 2>&1 | head -c0``,
    without the race); nothing is captured then, only the exit code."""
    full_env = {k: v for k, v in dict(os.environ, **(env or {})).items() if v is not None}  # None: unset
    full_env.pop("SAMCTL_DEBUG", None)
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    out = subprocess.PIPE
    if broken_pipe:
        r, out = os.pipe()
        os.close(r)
    try:
        p = subprocess.run(
            [sys.executable, "-m", "samctl", *args],
            stdout=out,
            stderr=out,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env=full_env,
            cwd=str(REPO),
        )
    except subprocess.TimeoutExpired:
        return Outcome(args, None, b"", "", f"no answer within {timeout} s")
    finally:
        if broken_pipe:
            os.close(out)
    if broken_pipe:
        return Outcome(args, p.returncode, b"", "", None)
    err = p.stderr.decode("utf-8", "replace")
    crash = err[-4000:] if ("Traceback" in err or "internal error" in err) else None
    return Outcome(args, p.returncode, p.stdout, err, crash)


# --------------------------------------------------------------------------------- findings
def code_matches(pattern: str, code: str) -> bool:
    for alt in pattern.split("|"):
        if alt.endswith("*") and code.startswith(alt[:-1]) or alt == code:
            return True
    return False


def findings_of(out: Outcome) -> list[dict]:
    """The findings of a JSON output's "findings", else the "severity: code: path: reason" lines on stderr."""
    try:
        doc = orjson.loads(out.stdout)
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and "findings" in doc:
        return doc["findings"]
    found = []
    for line in out.stderr.splitlines():
        parts = line.split(": ", 3)
        if len(parts) == 4 and parts[0] in ("error", "warning", "info"):
            found.append({"severity": parts[0], "code": parts[1], "path": parts[2], "reason": parts[3]})
    return found


def missing_expectations(case, ctx, outputs: dict) -> list[str]:
    """The expected findings no output carried."""
    missing = []
    for e in case.expect:
        found = findings_of(outputs[e.command]) if e.command in outputs else []
        ok = False
        for f in found:
            if not code_matches(e.code, str(f.get("code"))):
                continue
            if e.path is None:
                ok = True
                break
            path = str(f.get("path", ""))
            want = e.path if e.path != "." else ""
            rel_ok = path.rstrip("/").endswith(want.rstrip("/")) if want else True
            if rel_ok:
                ok = True
                break
        if not ok:
            missing.append(
                f"{e.command}: expected {e.code} at {e.path!r}; got "
                f"{[(f.get('code'), f.get('path', '')[-60:]) for f in found][:12]}"
            )
    return missing
