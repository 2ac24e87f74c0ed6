"""Downloading model files and reference data into the user cache, safely, with pooch.

A download is fetched by :func:`pooch.retrieve` (HTTP with a rich progress bar on stderr),
which streams it to a temporary file and moves it to ``<dest>.part`` only when its SHA-256
matches ``expected_sha256`` (when one is published). The caller's ``validate`` check (e.g.
"loads as a state dict with the right keys") then runs on the ``.part`` file, and only then is
it renamed into place, with its digest written beside it (``<dest>.sha256``) so later runs can
detect a cache file that was damaged afterwards. A connection cut short is caught by the HTTP
client (the body must match the server's Content-Length).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.errors import AglwError

_CHUNK = 1 << 16
_INCOMPLETE = re.compile(r"IncompleteRead\((\d+) bytes read, (\d+) more expected\)")
_TIMEOUT_S = 60.0
USER_AGENT = "agl-workbench"


class DownloadError(AglwError):
    """A download failed; the message names the URL, the destination and what to do."""


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file (pooch's hash, read in chunks)."""
    import pooch

    return pooch.file_hash(str(path), alg="sha256")


def digest_file(path: Path) -> Path:
    """Where the recorded digest of a downloaded file is kept."""
    return path.with_name(path.name + ".sha256")


def verify_cached(path: Path) -> bool:
    """True when a cached download still has the digest recorded when it was fetched."""
    record = digest_file(path)
    if not path.is_file() or not record.is_file():
        return False
    return record.read_text(encoding="ascii").strip() == sha256_of(path)


class _RichBar:
    """The progress-bar object pooch's HTTP downloader drives (``total``, ``update``, ``reset``,
    ``close``), drawn with rich on stderr like every other bar of the CLI."""

    def __init__(self, description: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._progress.add_task(description, total=None)
        self._progress.start()

    @property
    def total(self) -> float | None:
        return self._progress.tasks[0].total

    @total.setter
    def total(self, value: float | None) -> None:
        # pooch sets 0 when the server sends no Content-Length: an open-ended bar.
        self._progress.update(self._task, total=value or None)

    def update(self, n: float) -> None:
        self._progress.advance(self._task, n)

    def reset(self) -> None:
        self._progress.reset(self._task, total=self.total)

    def close(self) -> None:
        self._progress.stop()


def _quiet_pooch() -> Any:
    """pooch, with its own log lines ("Downloading data from ...") off: the CLI shows its bar."""
    import logging

    import pooch

    pooch.get_logger().setLevel(logging.WARNING)
    return pooch


def _message(exc: BaseException, url: str, dest: Path, hint: str) -> str:
    import requests

    if isinstance(exc, requests.exceptions.HTTPError) and exc.response is not None:
        response = exc.response
        return f"{url}: HTTP {response.status_code} {response.reason} while fetching {dest.name}; {hint}"
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        # urllib3 enforces the Content-Length: "IncompleteRead(100 bytes read, 900 more expected)".
        counts = _INCOMPLETE.search(str(exc))
        if counts:
            received, missing = int(counts.group(1)), int(counts.group(2))
            return f"{url}: download cut short ({received} of {received + missing} bytes) for {dest}; retry, or {hint}"
        return f"{url}: download cut short for {dest} ({_first_line(exc)}); retry, or {hint}"
    return f"{url}: cannot download {dest.name} ({_first_line(exc)}); {hint}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def download_file(
    url: str,
    dest: Path,
    *,
    description: str | None = None,
    expected_sha256: str | None = None,
    validate: Callable[[Path], None] | None = None,
    show_progress: bool = True,
    provide_hint: str | None = None,
) -> str:
    """Fetch ``url`` into ``dest`` with pooch, a progress bar on stderr and an integrity check.

    Parameters
    ----------
    url
        Where to fetch from (http or https).
    dest
        Final path; its parent is created. Nothing appears there unless every check passes.
    description
        Progress-bar label (default: the file name).
    expected_sha256
        Known digest of the file, when one is published (pooch checks it).
    validate
        Called with the downloaded file before it is put in place; raises to reject the content.
    show_progress
        Draw a rich progress bar on stderr.
    provide_hint
        How to provide the file without a download (an environment variable, a setting),
        added to every failure message: offline users need the way around, not a traceback.

    Returns
    -------
    str
        The SHA-256 of the downloaded file.

    Raises
    ------
    DownloadError
        Network failure, short read, HTTP error, digest mismatch, empty file; nothing is left
        behind.
    """
    import requests

    pooch = _quiet_pooch()
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".part")
    # pooch reuses an existing file without a known hash: start from nothing.
    partial.unlink(missing_ok=True)
    hint = f"check the network, or download it yourself and place it at {dest}"
    if provide_hint:
        hint += f", or {provide_hint}"
    bar = _RichBar(description or f"downloading {dest.name}") if show_progress else False
    downloader = pooch.HTTPDownloader(
        progressbar=bar, chunk_size=_CHUNK, timeout=_TIMEOUT_S, headers={"User-Agent": USER_AGENT}
    )
    try:
        pooch.retrieve(
            url,
            known_hash=f"sha256:{expected_sha256.lower()}" if expected_sha256 else None,
            fname=partial.name,
            path=partial.parent,
            downloader=downloader,
        )
        if partial.stat().st_size == 0:
            raise DownloadError(f"{url}: the server sent an empty file for {dest}; retry later, or {hint}")
        actual = sha256_of(partial)
        if validate is not None:
            validate(partial)
        os.replace(partial, dest)
        digest_file(dest).write_text(actual + "\n", encoding="ascii")
        return actual
    except ValueError as exc:
        # pooch's hash mismatch: "SHA256 hash of downloaded file (...) does not match the known hash".
        raise DownloadError(
            f"{url}: integrity check failed for {dest} ({_first_line(exc)}, expected SHA-256 "
            f"{expected_sha256}); the file on the server or in transit is not the published one; {hint}"
        ) from exc
    except (requests.exceptions.RequestException, OSError) as exc:
        raise DownloadError(_message(exc, url, dest, hint)) from exc
    finally:
        if bar:
            bar.close()
        partial.unlink(missing_ok=True)
