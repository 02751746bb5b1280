"""The whole ``samctl browse`` process in a pseudo-terminal, from its start to the first frame showing rows,
against the floor measured the same way in the same run (issue #38's first paint):

- floor: ``python -c`` importing ``textual.app`` and running an App whose only widget is a Static with one
  word (the least a Textual program can put on a screen), timed until that word is on the terminal;
- samctl: ``samctl browse`` over ``--root``s (default: a copy of fixtures/demo's four stores), timed until the
  title of the newest conversation (``samctl ls -n 1``) is on the terminal (samctl's own first frame,
  ``tui.prepaint``, when rows were kept from the last run), until Textual's first frame (a key of its
  footer, filled in after its first frame) and until every store is listed (the status line without "loading");
- ``python -c pass``, for scale.

The output is read from the pseudo-terminal as it comes (escape sequences stripped), so the time is that of
the bytes reaching a terminal, with no polling of a multiplexer.  Runs alternate (floor, samctl) so the
machine's load weighs on both alike; one untimed run of each first (samctl's caches warm, the page cache too).

    .venv/bin/python bench/bench_browse_paint.py --runs 7
    .venv/bin/python bench/bench_browse_paint.py --runs 5 --root bench/out/mermaid-100000-m12

With ``--importtime``, one more run of samctl under ``python -X importtime`` prints the slowest imports.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ESC = re.compile(rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|P[^\x1b]*\x1b\\|[@-Z\\-_])")
FLOOR = (
    "from textual.app import App\n"
    "from textual.widgets import Static\n"
    "class Floor(App):\n"
    "    def compose(self):\n"
    "        yield Static('FLOOR-READY')\n"
    "Floor().run()\n"
)


def timed(argv: list, env: dict, marks: dict, size=(120, 30), quit_keys: bytes = b"q", limit: float = 60.0) -> dict:
    """Run ``argv`` on a new pseudo-terminal of ``size``; ``marks``: name -> a regex (bytes) on the text shown
    so far; the seconds from the start until each matched.  Once all did, ``quit_keys`` are typed; the
    process is killed if it has not ended 5 s later."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True, close_fds=True)
    os.close(slave)
    got: dict = {}
    text = b""
    deadline = t0 + limit
    quit_at = None
    try:
        while True:
            now = time.perf_counter()
            if now > deadline or (quit_at is not None and now > quit_at + 5):
                break
            r, _, _ = select.select([master], [], [], 0.05)
            if not r:
                if p.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            at = time.perf_counter() - t0
            # (no frame is cut in a way that hides a mark for long: the next read completes it)
            text = (text + ESC.sub(b"", chunk))[-(1 << 20) :]
            for name, rx in marks.items():
                if name not in got and re.search(rx, text):
                    got[name] = at
            if len(got) == len(marks) and quit_at is None:
                os.write(master, quit_keys)
                quit_at = time.perf_counter()
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        os.close(master)
    return got


def newest_title(samctl: str, env: dict) -> str:
    out = subprocess.run([samctl, "ls", "-n", "1", "--format", "json"], env=env, capture_output=True, text=True)
    rows = json.loads(out.stdout or "[]")
    if not rows:
        sys.exit(f"samctl ls found nothing: {out.stderr.strip()}")
    return rows[0]["title"]


def ms(xs: list) -> str:
    return f"median {statistics.median(xs) * 1000:,.0f} ms (min {min(xs) * 1000:,.0f}, max {max(xs) * 1000:,.0f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--root", action="append", help="a store root (repeatable; default: fixtures/demo's four)")
    ap.add_argument("--cache", help="SAMCTL_CACHE_DIR (default: a temporary folder, warmed by the first run)")
    ap.add_argument("--size", default="120x30")
    ap.add_argument("--importtime", action="store_true")
    a = ap.parse_args()
    py = str(Path(sys.executable))
    samctl = str(Path(sys.executable).with_name("samctl"))
    size = tuple(int(x) for x in a.size.split("x"))
    tmp = Path(tempfile.mkdtemp(prefix="bench-browse-paint-"))
    try:
        if a.root:
            roots = [str(Path(r).resolve()) for r in a.root]
        else:
            shutil.copytree(REPO / "fixtures" / "demo", tmp / "demo", symlinks=True)
            roots = [str(tmp / "demo" / r) for r in ("SAM", "mermaid-project", "claude_code", "codex")]
        (tmp / "home").mkdir()
        env = dict(
            os.environ,
            HOME=str(tmp / "home"),
            SAMCTL_CACHE_DIR=a.cache or str(tmp / "cache"),
            XDG_DATA_HOME=str(tmp / "data"),
            XDG_CONFIG_HOME=str(tmp / "home" / ".config"),
            SAMCTL_ROOT=os.pathsep.join(roots),
            TZ="UTC",
            TERM="xterm-256color",
        )
        title = newest_title(samctl, env)[:30]
        first = re.escape(title.encode())
        # (the status line once every store is listed: no "loading n/m stores… " before the count)
        marks = {
            "rows": first,
            "textual": rb"To attic",  # (a key of Textual's footer, filled in some 180 ms after its first frame)
            "listed": rb"(?<![\d,])(?<!stores\xe2\x80\xa6 )[1-9][\d,]* of [\d,]+ conversations in",
        }
        floor, paint, textual_frame, listed, bare = [], [], [], [], []
        print(
            f"samctl browse first paint: {len(roots)} store(s), {a.runs} runs, {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.1f}; newest title {title!r}",
            flush=True,
        )
        for i in range(a.runs + 1):
            f = timed([py, "-c", FLOOR], env, {"floor": rb"FLOOR-READY"}, size, b"\x11")
            s = timed([samctl, "browse"], env, marks, size)
            t = time.perf_counter()
            subprocess.run([py, "-c", "pass"], env=env, check=True)
            b = time.perf_counter() - t
            if i == 0:
                continue  # (warm-up: caches filled)
            if "floor" not in f or "rows" not in s:
                print(f"run {i}: a mark was never seen (floor {f}, samctl {s})", file=sys.stderr)
                continue
            floor.append(f["floor"])
            paint.append(s["rows"])
            textual_frame.append(s.get("textual", float("nan")))
            listed.append(s.get("listed", float("nan")))
            bare.append(b)
            print(
                f"  run {i}: floor {f['floor'] * 1000:.0f} ms, first rows {s['rows'] * 1000:.0f} ms "
                f"({s['rows'] / f['floor']:.2f}x), Textual's frame {s.get('textual', float('nan')) * 1000:.0f} ms, listed {s.get('listed', float('nan')) * 1000:.0f} ms",
                flush=True,
            )
        if not paint:
            return 1
        ratio = [p / f for p, f in zip(paint, floor)]
        print(f"python -c pass: {ms(bare)}")
        print(f"floor (python + textual.app + an App's first frame): {ms(floor)}")
        print(f"samctl browse, first rows: {ms(paint)}; / floor median {statistics.median(ratio):.2f}x")
        print(f"samctl browse, Textual's footer (after its first frame): {ms(textual_frame)}")
        print(f"samctl browse, every store listed: {ms(listed)}")
        print(
            f"overhead over the floor: median {statistics.median([p - f for p, f in zip(paint, floor)]) * 1000:,.0f} ms"
        )
        if a.importtime:
            imp = dict(env, PYTHONPROFILEIMPORTTIME="1")
            log = tmp / "importtime.txt"
            with open(log, "wb") as err:
                master, slave = os.openpty()
                fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
                p = subprocess.Popen([samctl, "browse"], stdin=slave, stdout=slave, stderr=err, env=imp)
                os.close(slave)
                time.sleep(3)
                os.write(master, b"q")
                time.sleep(1)
                p.kill()
                p.wait()
                os.close(master)
            rows = []
            for line in log.read_text(errors="replace").splitlines():
                parts = line.split("|")
                if len(parts) == 3 and parts[1].strip().isdigit():
                    rows.append((int(parts[1]), parts[2].rstrip()))
            print("slowest imports (cumulative µs):")
            for us, name in sorted(rows, reverse=True)[:25]:
                print(f"  {us:>9,} {name}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
