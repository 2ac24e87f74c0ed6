"""Downloading model files and reference data into the user cache, safely.

A download goes to ``<dest>.part`` while a SHA-256 is computed on the fly; it is accepted
only when the byte count matches the server's Content-Length (a cut connection is caught),
the digest matches ``expected_sha256`` when one is given, and the caller's ``validate``
check (e.g. "loads as a state dict with the right keys") passes. Only then is it renamed
into place, with its digest written beside it (``<dest>.sha256``) so later runs can detect
a cache file that was damaged afterwards.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from workbench.errors import AglwError

_CHUNK = 1 << 16
_TIMEOUT_S = 60.0


class DownloadError(AglwError):
    """A download failed; the message names the URL, the destination and what to do."""


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def digest_file(path: Path) -> Path:
    """Where the recorded digest of a downloaded file is kept."""
    return path.with_name(path.name + ".sha256")


def verify_cached(path: Path) -> bool:
    """True when a cached download still has the digest recorded when it was fetched."""
    record = digest_file(path)
    if not path.is_file() or not record.is_file():
        return False
    return record.read_text(encoding="ascii").strip() == sha256_of(path)


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
    """Fetch ``url`` into ``dest`` with a progress bar on stderr and an integrity check.

    Parameters
    ----------
    url
        Where to fetch from (http, https or file).
    dest
        Final path; its parent is created. Nothing appears there unless every check passes.
    description
        Progress-bar label (default: the file name).
    expected_sha256
        Known digest of the file, when one is published.
    validate
        Called with the temporary file; raises to reject the content.
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
        Network failure, short read, digest mismatch; the partial file is removed.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".part")
    digest = hashlib.sha256()
    received = 0
    hint = f"check the network, or download it yourself and place it at {dest}"
    if provide_hint:
        hint += f", or {provide_hint}"
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "agl-workbench"})
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            length_header = response.headers.get("Content-Length")
            expected_length = int(length_header) if length_header and length_header.isdigit() else None
            progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                console=Console(stderr=True),
                disable=not show_progress,
                transient=True,
            )
            with progress, partial.open("wb") as out:
                task = progress.add_task(description or f"downloading {dest.name}", total=expected_length)
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    received += len(chunk)
                    progress.advance(task, len(chunk))
        if expected_length is not None and received != expected_length:
            raise DownloadError(
                f"{url}: download cut short ({received} of {expected_length} bytes) for {dest}; retry, or {hint}"
            )
        if received == 0:
            raise DownloadError(f"{url}: the server sent an empty file for {dest}; retry later, or {hint}")
        actual = digest.hexdigest()
        if expected_sha256 is not None and actual != expected_sha256.lower():
            raise DownloadError(
                f"{url}: integrity check failed for {dest} (SHA-256 {actual}, expected {expected_sha256}); "
                f"the file on the server or in transit is not the published one; {hint}"
            )
        if validate is not None:
            validate(partial)
        os.replace(partial, dest)
        digest_file(dest).write_text(actual + "\n", encoding="ascii")
        return actual
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason} while fetching {dest.name}; {hint}") from exc
    except (OSError, http.client.HTTPException) as exc:
        # URLError, timeouts, resets and IncompleteRead all land here.
        reason = getattr(exc, "reason", None) or exc
        raise DownloadError(f"{url}: cannot download {dest.name} ({reason}); {hint}") from exc
    finally:
        partial.unlink(missing_ok=True)
