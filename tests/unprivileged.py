"""Running samctl as a user who is not root, so that permission cases bite in a run as root too.

As root (CI, this machine), ``run`` starts ``python -m samctl`` through ``runuser -u nobody``
with this checkout and its venv's packages on PYTHONPATH; as anyone else, as that user.  Trees
must live where that user can go: ``workdir()`` gives a fresh 0755 folder in /tmp that
``give()`` hands over.  ``skip_reason()`` says why none of this can run here, if it cannot.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
USER = "nobody"
IS_ROOT = os.geteuid() == 0


def _pythonpath() -> str:
    """This checkout, then every folder this process imports from (its venv's packages, a PYTHONPATH)."""
    paths = [
        str(REPO),
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        *(p for p in sys.path if p and os.path.isdir(p)),
    ]
    return os.pathsep.join(dict.fromkeys(paths))


def _as_user(argv: list, env: dict, cwd=None, timeout: float = 60) -> subprocess.CompletedProcess:
    if IS_ROOT:
        argv = ["runuser", "-u", USER, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]
    else:  # the caller's settings only: none of this process's SAMCTL_* or cache folders
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SAMCTL_", "XDG_"))}, **env}
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=None if IS_ROOT else env,
        cwd=cwd,
    )


@functools.cache
def _python() -> str | None:
    """A Python the user may run that imports samctl's dependencies (the venv's own may sit under /root)."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    for py in (sys.executable, shutil.which(f"python{here}") or "", "/usr/bin/python3"):
        if not py:
            continue
        try:
            r = _as_user(
                [py, "-c", f"import sys, orjson, click; assert sys.version.startswith('{here}')"],
                {"PYTHONPATH": _pythonpath(), "HOME": "/", "PATH": "/usr/bin:/bin"},
                cwd="/",
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if r.returncode == 0:
            return py
    return None


def skip_reason() -> str | None:
    if IS_ROOT and not shutil.which("runuser"):
        return "no runuser to run samctl as a user other than root"
    if _python() is None:
        return f"no Python that {USER} may run with samctl's dependencies"
    return None


def workdir() -> Path:
    """A fresh folder in /tmp the user may enter (remove it with ``cleanup``)."""
    d = Path(tempfile.mkdtemp(prefix="samctl-unpriv-"))
    os.chmod(d, 0o755)
    return d


def give(path: Path) -> None:
    """Hand ``path`` and all under it to the user (as root; otherwise it is the user's already)."""
    if IS_ROOT:
        subprocess.run(["chown", "-R", f"{USER}:", str(path)], check=True)


def cleanup(path: Path) -> None:
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            try:
                os.chmod(os.path.join(dirpath, d), 0o700)
            except OSError:
                pass
    os.chmod(path, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def run(args: list, home: Path, cwd=None, env: dict | None = None) -> subprocess.CompletedProcess:
    """``samctl ARGS`` as the user, with HOME=``home`` and no SAMCTL_* settings but ``env``'s."""
    full = {
        "PYTHONPATH": _pythonpath(),
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "COLUMNS": "200",
        **(env or {}),
    }
    return _as_user([_python(), "-m", "samctl", *map(str, args)], full, cwd=cwd or "/")
