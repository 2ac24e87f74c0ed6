"""Driving the study page in the distribution's Chromium (Playwright for Python, no browser download).

:func:`chromium` skips the test, with the reason, where Debian's ``chromium`` or Playwright is
absent. :class:`Server` runs ``aglw serve`` on 127.0.0.1 (port 0) as a separate process, as a
researcher would, and :class:`Capture` records every request and response a page makes: URL,
headers, body — the material of the blinding census.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium_path() -> str:
    """Debian's Chromium, or skip with the reason."""
    for candidate in (os.environ.get("AGLW_CHROMIUM"), *CHROMIUM_CANDIDATES):
        if candidate and Path(candidate).exists():
            return candidate
    found = shutil.which("chromium")
    if found:
        return found
    pytest.skip("browser test: Debian's chromium is not installed (apt-get install chromium; .ci/run does)")


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium browser (Playwright), closed afterwards."""
    path = chromium_path()
    sync_api = pytest.importorskip("playwright.sync_api", reason="browser test: playwright is not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, headless=True, args=["--autoplay-policy=no-user-gesture-required"])
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Server:
    """``aglw --db DB serve STUDY --port 0 --json`` in its own process; ``url`` from its ready line."""

    db: Path
    study: str
    cache_dir: Path
    extra: tuple[str, ...] = ()
    process: subprocess.Popen | None = None
    url: str = ""
    ready: dict[str, Any] = field(default_factory=dict)

    def start(self, timeout_s: float = 120.0) -> Server:
        env = {**os.environ, "AGLW_CACHE_DIR": str(self.cache_dir), "PYTHONUNBUFFERED": "1"}
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        # stderr to a file: a pipe nobody reads would stall a server that logs much
        self._log = open(self.cache_dir / "serve-stderr.txt", "w+", encoding="utf-8")  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "--db", str(self.db), "--json", "serve", self.study, "--port", "0",
             *self.extra],
            stdout=subprocess.PIPE, stderr=self._log, text=True, env=env,
            cwd=Path(__file__).resolve().parents[2])
        assert self.process.stdout is not None
        import select as _select

        ready, _, _ = _select.select([self.process.stdout], [], [], timeout_s)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.stop()
            raise AssertionError(f"aglw serve printed no ready line: {self.stderr()[-2000:]}")
        self.ready = json.loads(line)
        self.url = self.ready["url"].rstrip("/")
        return self

    @property
    def origin(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    def stderr(self) -> str:
        """What the server said on stderr so far."""
        return (self.cache_dir / "serve-stderr.txt").read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGINT)
                try:
                    self.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()
        if getattr(self, "_log", None) is not None:
            self._log.close()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class Capture:
    """Everything a page received and where it asked: the census searches ``received``."""

    requests: list[str] = field(default_factory=list)
    received: list[tuple[str, bytes]] = field(default_factory=list)  # (what, bytes)

    def attach(self, page: Any) -> None:
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("response", self._on_response)

    def _on_response(self, response: Any) -> None:
        self.received.append((f"URL {response.url}", response.url.encode()))
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
        self.received.append((f"headers of {response.url}", headers.encode()))
        try:
            body = response.body()
        except Exception:  # a redirect or an aborted media request has no body to read
            return
        self.received.append((f"body of {response.url}", body))

    def add(self, what: str, data: bytes) -> None:
        self.received.append((what, data))

    def hosts(self) -> set[str]:
        return {urlsplit(url).netloc for url in self.requests if not url.startswith(("data:", "blob:", "about:"))}


def click_map_at(page: Any, latitude: float, longitude: float) -> None:
    """Click the map where (latitude, longitude) is drawn, from its ``data-bounds`` (equirectangular)."""
    element = page.get_by_test_id("map")
    assert element.get_attribute("data-projection") == "equirectangular"
    west, south, east, north = (float(v) for v in element.get_attribute("data-bounds").split(","))
    box = element.bounding_box()
    assert box is not None
    x = (longitude - west) / (east - west) * box["width"]
    y = (north - latitude) / (north - south) * box["height"]
    element.click(position={"x": x, "y": y})
