"""A headless Chromium to look at a report as a person would: load it, collect console
errors, script exceptions, failed requests and dialogs, read the DOM, take screenshots.

Speaks the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (NUL-separated
JSON on file descriptors 3 and 4, as Puppeteer's pipe transport does), so it needs no
websocket library, no debugging port and no browser download: only the Debian
``chromium`` package. Hand-written because no maintained Python CDP client works
over the pipe transport without pulling in a browser download of its own.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError

#: Flags for a quiet, isolated, offline headless browser (no sync, updates, QUIC, GPU).
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--no-default-browser-check",
    "--remote-debugging-pipe",
]

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class BrowserError(PerflabError):
    """Chromium is missing, did not start, or did not answer in time."""


def find_chromium() -> str | None:
    env = os.environ.get("PERFLAB_CHROMIUM")
    if env:
        return env if shutil.which(env) or Path(env).is_file() else None
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageLoad:
    """What happened while a page loaded (and until the last call on it)."""

    url: str
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.console_errors or self.exceptions or self.failed_requests or self.dialogs)


class Browser:
    """``with Browser() as b: page = b.open(path); b.evaluate("document.title")``."""

    _target: str  # the open tab's target id (set by `open`)

    def __init__(
        self,
        executable: str | None = None,
        *,
        width: int = 1280,
        height: int = 900,
        timeout: float = 60.0,
    ):
        self.executable = executable or find_chromium()
        if not self.executable:
            raise BrowserError(
                "chromium not found (install the Debian package: apt-get install chromium; "
                "scripts/setup does)"
            )
        self.width, self.height, self.timeout = width, height, timeout
        self._next_id = 0
        self._buf = b""
        self._events: list[dict[str, Any]] = []
        self._session: str | None = None
        self._page: PageLoad | None = None
        self._urls: dict[str, str] = {}
        self._profile = tempfile.mkdtemp(prefix="perflab-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def fds() -> None:
            """In the child: the pipe ends become fds 3 (commands in) and 4 (replies out)."""
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        # A file, not a pipe: a full pipe would stall it.
        self._log = Path(self._profile) / "chromium.log"
        try:
            with open(self._log, "wb") as log:
                self._proc = subprocess.Popen(
                    [
                        self.executable,
                        *FLAGS,
                        f"--user-data-dir={self._profile}",
                        f"--window-size={width},{height}",
                        "about:blank",
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    preexec_fn=fds,  # noqa: PLW1509 -- called before any thread starts
                    close_fds=False,
                    start_new_session=True,
                )
        except OSError as e:
            shutil.rmtree(self._profile, ignore_errors=True)
            raise BrowserError(f"cannot start {self.executable}: {e}") from None
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self.call("Browser.getVersion")

    # ----- protocol ---------------------------------------------------------------------------

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"chromium did not answer within {self.timeout:g} s")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                err = (
                    self._log.read_text(errors="replace").strip().splitlines()
                    if self._log.exists()
                    else []
                )
                raise BrowserError("chromium exited" + (f": {err[-1]}" if err else ""))
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: bool = False,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        self._next_id += 1
        mid = self._next_id
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self._session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            if m.get("id") == mid:
                if "error" in m:
                    raise BrowserError(f"{method}: {m['error'].get('message')}")
                result: dict[str, Any] = m.get("result", {})
                return result
            self._event(m)

    def _event(self, m: dict[str, Any]) -> None:
        self._events.append(m)
        page, method, p = self._page, m.get("method"), m.get("params", {})
        if page is None or method is None:
            return
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            page.console_errors.append(
                " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            )
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            page.console_errors.append(
                f"{e.get('source')}: {e.get('text')}" + (f" ({e['url']})" if e.get("url") else "")
            )
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            page.exceptions.append(
                d.get("exception", {}).get("description") or d.get("text", "exception")
            )
        elif method == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            self._urls[p.get("requestId", "")] = url
            page.requests.append(url[:120])
        elif method == "Network.loadingFailed":
            page.failed_requests.append(
                f"{self._urls.get(p.get('requestId', ''), '?')[:200]}: {p.get('errorText')}"
                + (f" (blocked: {p['blockedReason']})" if p.get("blockedReason") else "")
            )
        elif (
            method == "Network.responseReceived" and p.get("response", {}).get("status", 200) >= 400
        ):
            r = p["response"]
            page.failed_requests.append(f"{r.get('url', '?')[:200]}: HTTP {r.get('status')}")
        elif method == "Page.javascriptDialogOpening":
            page.dialogs.append(f"{p.get('type')}: {p.get('message')}")
            self._send_nowait("Page.handleJavaScriptDialog", {"accept": True})

    def _send_nowait(self, method: str, params: dict[str, Any]) -> None:
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params, "sessionId": self._session}
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")

    def _wait_event(self, name: str, timeout: float | None = None) -> dict[str, Any]:
        for i, m in enumerate(self._events):
            if m.get("method") == name:
                return self._events.pop(i)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            if m.get("method") == name:
                self._event(m)
                return m
            self._event(m)

    # ----- pages ------------------------------------------------------------------------------

    def open(self, target: str | Path, *, settle: float = 0.3) -> PageLoad:
        """Load a file (path) or URL in a fresh tab and wait for its load event and images."""
        url = (
            target
            if isinstance(target, str) and "://" in target
            else Path(target).resolve().as_uri()
        )
        if self._session:
            self.call("Target.closeTarget", {"targetId": self._target})
        self._target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self.call(
            "Target.attachToTarget", {"targetId": self._target, "flatten": True}
        )["sessionId"]
        self._events.clear()
        self._page = PageLoad(url)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )
        nav = self.call("Page.navigate", {"url": url}, session=True)
        if nav.get("errorText"):
            self._page.failed_requests.append(f"{url}: {nav['errorText']}")
        self._wait_event("Page.loadEventFired")
        self.evaluate(
            "Promise.all(Array.from(document.images, i => i.decode().catch(() => null)))",
            await_promise=True,
        )
        end = time.monotonic() + settle  # late console messages / requests
        while time.monotonic() < end:
            try:
                self._event(self._read_message(end))
            except BrowserError:
                break
        return self._page

    def view(self, height: int, top: float) -> None:
        """The viewport made ``height`` CSS px tall and scrolled to ``top``, once painted
        (two animation frames)."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )
        self.evaluate(
            f"window.scrollTo(0, {top}); new Promise(r => requestAnimationFrame("
            "() => requestAnimationFrame(() => r(true))))",
            await_promise=True,
        )

    def evaluate(self, expression: str, *, await_promise: bool = False) -> Any:
        r = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": await_promise},
            session=True,
        )
        if "exceptionDetails" in r:
            raise BrowserError(f"evaluate failed: {r['exceptionDetails'].get('text')}")
        return r.get("result", {}).get("value")

    def screenshot(
        self,
        path: str | Path | None = None,
        *,
        full_page: bool = True,
        clip: dict[str, Any] | None = None,
        max_height: int | None = None,
    ) -> bytes:
        """PNG of the page (whole, or the viewport, or ``clip`` = {x, y, width, height} in CSS px)."""
        params: dict[str, Any] = {"format": "png"}
        if clip is None and full_page:
            h = int(
                self.evaluate("Math.ceil(document.documentElement.scrollHeight)") or self.height
            )
            if max_height:
                h = min(h, max_height)
            clip = {"x": 0, "y": 0, "width": self.width, "height": h}
        if clip is not None:
            params["clip"] = {**clip, "scale": 1}
            params["captureBeyondViewport"] = True
        data = base64.b64decode(
            self.call("Page.captureScreenshot", params, session=True, timeout=120)["data"]
        )
        if path is not None:
            from perflab.report.writable import write_atomically

            write_atomically(Path(path), data, "screenshot")
        return data

    # ----- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        try:
            if self._proc.poll() is None:
                try:
                    self.call("Browser.close", timeout=5)
                except (BrowserError, OSError):
                    pass
                try:
                    self._proc.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(
                        self._proc.pid, 9
                    )  # its own session: the browser and its helpers only
                    self._proc.wait(5)
        finally:
            for fd in (self._to_child, self._from_child):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def screenshot_file(
    html: str | Path,
    png: str | Path,
    *,
    width: int = 1280,
    max_height: int | None = None,
    section: str | None = None,
) -> PageLoad:
    """Load a report and write its screenshot (its top, or the section whose id is
    ``section``); returns what the load reported. BrowserError when the page has no such
    section (the ids it has are named)."""
    from perflab.report.writable import check_writable

    check_writable(png, "screenshot")  # before starting a browser
    with Browser(width=width) as b:
        page = b.open(html)
        if section is None:
            b.screenshot(png, max_height=max_height)
            return page
        box = b.evaluate(
            "(() => { const e = document.getElementById(" + json.dumps(section) + ");"
            " if (!e) return null; const r = e.getBoundingClientRect();"
            " return [r.top + window.scrollY, r.height]; })()"
        )
        if not box:
            ids = b.evaluate("[...document.querySelectorAll('section[id]')].map(e => e.id)")
            raise BrowserError(
                f"the report has no section '{section}' (it has: {', '.join(ids or []) or 'none'})"
            )
        top, height = float(box[0]), float(box[1])
        if max_height:
            height = min(height, max_height)
        # in view, in a viewport its height: what lies beyond the viewport (a flame graph's
        # frame) may not be painted
        b.view(int(height), top)
        b.screenshot(png, clip={"x": 0, "y": top, "width": width, "height": height})
        return page
