"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (standard library only).

Chromium reads commands from fd 3 and writes replies/events to fd 4, each a JSON
object followed by a NUL byte.  Enough for tests: open a page, evaluate
JavaScript, click with real mouse events, take screenshots, and collect every
console error, uncaught exception and JavaScript dialog.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


class CDPError(RuntimeError):
    pass


class Browser:
    def __init__(self, binary: str, user_data_dir: str, width: int = 1000, height: int = 900):
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def plumb():  # runs in the child: put the pipe ends at fds 3 and 4
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 100)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 100)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [
            binary,
            *FLAGS,
            f"--user-data-dir={user_data_dir}",
            "--remote-debugging-pipe",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=plumb,
            close_fds=False,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict] = []
        self.session = None

    # -- wire ------------------------------------------------------------------------------
    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self._w, data)
            data = data[n:]
        return self._next

    def _read_one(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise CDPError("Chromium closed the DevTools pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict | None = None, timeout: float = 30.0, session: str | None = "page"):
        sid = self.session if session == "page" else session
        mid = self._send(method, params, sid)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read_one(deadline)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise CDPError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict:
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read_one(deadline)
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self.events.append(msg)

    # -- page helpers -----------------------------------------------------------------------------
    def open_page(self) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=None)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=None)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def navigate(self, url: str) -> None:
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def eval(self, expression: str):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise CDPError(f"evaluate failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def click(self, x: float, y: float) -> None:
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            params = {"type": kind, "x": x, "y": y}
            if kind != "mouseMoved":
                params.update(button="left", clickCount=1)
            self.call("Input.dispatchMouseEvent", params)

    def screenshot(self, path: str, full_page: bool = True) -> None:
        params = {"format": "png"}
        if full_page:
            m = self.call("Page.getLayoutMetrics")
            size = m.get("cssContentSize") or m["contentSize"]
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
            )
        data = self.call("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and dialogs seen so far (pulls pending events)."""
        try:
            self.call("Runtime.evaluate", {"expression": "1"})  # flush events queued before this point
        except CDPError:
            pass
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails', {}).get('text')}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(f"console.{p.get('type')}: {[a.get('value') for a in p.get('args', [])]}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"log: {p['entry'].get('source')}: {p['entry'].get('text')}")
            elif m == "Page.javascriptDialogOpening":
                out.append(f"dialog: {p.get('message')}")
        return out

    def close(self) -> None:
        try:
            self.call("Browser.close", session=None, timeout=5)
        except (CDPError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass
