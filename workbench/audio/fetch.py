"""Downloading recordings: parallel, resumable, verified, placed by pooch.

Each file is downloaded to ``<dest>.part`` by a resuming pooch downloader, and pooch moves the
finished file into place. An interrupted download resumes with an HTTP
``Range`` request when the server honours it (206), and starts over otherwise (200). A file is
accepted only when its size matches the announced length (``Content-Length`` /
``Content-Range``) and libsndfile recognises it as audio; only then is it renamed to ``dest``.
Failures are collected per item, never raised, so one bad URL does not stop a batch.
"""

from __future__ import annotations

import logging
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from http.client import HTTPException
from pathlib import Path
from typing import Any

from sqlmodel import select

from storage import Store
from storage.models import Clip, MediaRoot
from workbench.audio.loader import AudioError, audio_info, content_hash
from workbench.errors import InputError, UsageError
from workbench.tasks import TaskCancelled, TaskContext

log = logging.getLogger(__name__)

AGL1K_URL = "https://archive.org/download/{key}/{mp3name}"
USER_AGENT = "aglw-fetch/0.1 (AGL Workbench)"
_CHUNK = 1 << 16
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")


@dataclass(frozen=True)
class FetchItem:
    """One file to download: ``url`` is saved as ``dest``; ``key`` names it in reports."""

    key: str
    url: str
    dest: Path


@dataclass(frozen=True)
class FetchResult:
    """What happened to one item: status is ``downloaded``, ``present`` or ``failed``."""

    key: str
    status: str
    dest: Path
    bytes: int = 0
    resumed: bool = False
    error: str | None = None
    content_hash: str | None = None


@dataclass
class FetchSummary:
    """Per-item results of a batch."""

    results: list[FetchResult] = field(default_factory=list)

    @property
    def downloaded(self) -> list[str]:
        return [r.key for r in self.results if r.status == "downloaded"]

    @property
    def present(self) -> list[str]:
        return [r.key for r in self.results if r.status == "present"]

    @property
    def failed(self) -> dict[str, str]:
        return {r.key: r.error or "failed" for r in self.results if r.status == "failed"}

    def as_dict(self) -> dict[str, object]:
        """Counts plus the failures (key -> reason), for JSON output."""
        return {
            "downloaded": len(self.downloaded),
            "present": len(self.present),
            "failed": len(self.failed),
            "failures": self.failed,
            "bytes": sum(r.bytes for r in self.results),
        }


# Further attempts after a lost connection; each resumes where the last one stopped.
DEFAULT_RETRIES = 3


class _DownloadFailed(Exception):
    pass


class _ConnectionLost(Exception):
    pass


def _part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def _verify_audio(path: Path, label: str) -> None:
    try:
        audio_info(path)
    except AudioError as exc:
        raise _DownloadFailed(f"{label}: the server's file is not usable audio ({exc})") from exc


def _download_once(item: FetchItem, part: Path, timeout: float) -> tuple[int, bool]:
    """One HTTP attempt; returns (bytes received, resumed). Raises _ConnectionLost to retry."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(item.url, headers={"User-Agent": USER_AGENT})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - scheme checked
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:
            # Nothing left to send: the part file already holds the whole body.
            return 0, True
        raise _DownloadFailed(f"HTTP {exc.code} {exc.reason} for {item.url}") from exc
    except (urllib.error.URLError, TimeoutError, OSError, HTTPException) as exc:
        raise _ConnectionLost(f"cannot connect to {item.url}: {getattr(exc, 'reason', exc)}") from exc
    with response:
        resumed = response.status == 206
        if resumed:
            match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
            if not match or int(match.group(1)) != have:
                raise _DownloadFailed(f"{item.url}: server answered the resume with an unexpected range")
            total = None if match.group(3) == "*" else int(match.group(3))
        else:
            have = 0
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
        received = 0
        try:
            with part.open("ab" if resumed else "wb") as handle:
                while chunk := response.read(_CHUNK):
                    handle.write(chunk)
                    received += len(chunk)
        except (TimeoutError, OSError, HTTPException) as exc:
            raise _ConnectionLost(f"connection to {item.url} lost after {have + received} bytes: {exc}") from exc
    size = part.stat().st_size
    if total is not None and size < total:
        raise _ConnectionLost(f"{item.url}: got {size} of {total} bytes")
    if total is not None and size != total:
        raise _DownloadFailed(f"{item.url}: got {size} bytes but the server announced {total}")
    return received, resumed


class _GaveUp(Exception):
    pass


class _ResumingDownloader:
    """A pooch downloader for one recording that resumes ``<dest>.part`` across attempts and runs.

    pooch places the file (a temporary file moved to ``dest`` only when the downloader returns)
    but cannot resume, and recordings are large: the transfer itself stays here. Each attempt
    continues the ``.part`` file with a ``Range`` request; a complete file is checked as audio
    and then handed to pooch.
    """

    def __init__(self, item: FetchItem, timeout: float, retries: int) -> None:
        self.item, self.timeout, self.retries = item, timeout, retries
        self.received, self.resumed = 0, False

    def __call__(self, url: str, output_file: str, pooch: Any, check_only: bool = False) -> None:
        part = _part_path(self.item.dest)
        last_problem = ""
        for _attempt in range(self.retries + 1):
            try:
                received, resumed = _download_once(self.item, part, self.timeout)
            except _ConnectionLost as exc:
                last_problem = str(exc)
                self.received = part.stat().st_size if part.exists() else 0
                continue
            self.received += received
            self.resumed = self.resumed or resumed
            _verify_audio(part, self.item.key)
            os.replace(part, output_file)
            return
        # The .part file stays so that the next run resumes.
        raise _GaveUp(f"{last_problem} (gave up after {self.retries + 1} attempts; rerun to resume)")


def _fetch_one(item: FetchItem, timeout: float, retries: int) -> FetchResult:
    import pooch

    scheme = urllib.parse.urlsplit(item.url).scheme
    if scheme not in ("http", "https"):
        return FetchResult(item.key, "failed", item.dest, error=f"{item.url}: only http(s) URLs are fetched")
    if item.dest.exists():
        try:
            audio_info(item.dest)
            return FetchResult(item.key, "present", item.dest, content_hash=content_hash(item.dest))
        except AudioError:
            log.info("%s exists but is not usable audio; downloading it again", item.dest)
    part = _part_path(item.dest)
    try:
        item.dest.parent.mkdir(parents=True, exist_ok=True)
        # pooch keeps an existing file when no hash is known; this one is not usable audio.
        item.dest.unlink(missing_ok=True)
    except OSError as exc:
        return FetchResult(item.key, "failed", item.dest, error=f"cannot prepare {item.dest}: {exc}")
    download = _ResumingDownloader(item, timeout, retries)
    pooch.get_logger().setLevel(logging.WARNING)  # its "Downloading ..." lines are not ours to print
    try:
        pooch.retrieve(item.url, known_hash=None, fname=item.dest.name, path=item.dest.parent, downloader=download)
    except _GaveUp as exc:
        return FetchResult(item.key, "failed", item.dest, download.received, download.resumed, error=str(exc))
    except _DownloadFailed as exc:
        part.unlink(missing_ok=True)
        return FetchResult(item.key, "failed", item.dest, download.received, error=str(exc))
    except OSError as exc:
        return FetchResult(item.key, "failed", item.dest, download.received, error=f"{item.dest}: {exc}")
    return FetchResult(
        item.key, "downloaded", item.dest, download.received, download.resumed, content_hash=content_hash(item.dest)
    )


def fetch_audio(
    items: Sequence[FetchItem],
    *,
    workers: int = 4,
    task: TaskContext | None = None,
    timeout: float = 60.0,
    retries: int = DEFAULT_RETRIES,
) -> FetchSummary:
    """Download files in parallel, resuming partial downloads and verifying each.

    Parameters
    ----------
    items
        What to fetch; a ``dest`` that already holds usable audio is left alone.
    workers
        Parallel downloads.
    task
        Progress and cancel: each finished item (downloaded, present or failed) is one item. A
        cancel lets the downloads in flight finish and starts no more (then raises
        :class:`~workbench.tasks.TaskCancelled`); fetching again skips the files present.
    timeout
        Seconds of socket inactivity before an attempt counts as a lost connection.
    retries
        Further attempts after a lost connection; each resumes where the last stopped.

    Returns
    -------
    FetchSummary
        One result per item, in the order of ``items``.
    """
    summary, stopped = _fetch_many(items, workers, task or TaskContext(), timeout, retries)
    if stopped:
        raise TaskCancelled()
    return summary


def _fetch_many(
    items: Sequence[FetchItem], workers: int, task: TaskContext, timeout: float, retries: int
) -> tuple[FetchSummary, bool]:
    """The items finished (in the order of ``items``) and whether a cancel stopped the rest."""
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    task.set_total(task.total + len(items))
    results: dict[int, FetchResult] = {}
    queue = list(enumerate(items))
    in_flight: dict[Future[FetchResult], int] = {}
    stopping = False
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aglw-fetch") as pool:
        while in_flight or (queue and not stopping):
            # Submitting lazily keeps at most `workers` downloads started, so a cancel is prompt.
            while queue and not stopping and len(in_flight) < workers:
                index, item = queue.pop(0)
                in_flight[pool.submit(_fetch_one, item, timeout, retries)] = index
            done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                index = in_flight.pop(future)
                result = results[index] = future.result()
                try:
                    task.item_done(result.key, result.status != "failed", result.error or "")
                except TaskCancelled:
                    stopping = True
    return FetchSummary([results[index] for index in sorted(results)]), stopping


_SAFE_NAME = re.compile(r"^[^/\\\x00]+$")


def _safe_component(value: str, what: str, key: str) -> str:
    if not _SAFE_NAME.match(value) or value in (".", ".."):
        raise InputError(f"clip {key!r}: {what} {value!r} is not a plain file name; fix the dataset")
    return value


def fetch_dataset_audio(
    store: Store,
    keys: Sequence[str] | None,
    to_dir: Path,
    workers: int = 4,
    *,
    url_template: str = AGL1K_URL,
    task: TaskContext | None = None,
    timeout: float = 60.0,
) -> FetchSummary:
    """Download the recordings of a project's clips and record where they are.

    Files go to ``to_dir/<key>/<mp3name>``; ``to_dir`` becomes a media root of each clip's
    dataset, and each clip fetched (or already present) gets ``audio_path`` (relative to it)
    and ``content_hash``, in one transaction after the downloads.

    Parameters
    ----------
    store
        The project.
    keys
        Clip keys to fetch; ``None`` for every clip with an ``mp3name``.
    to_dir
        Download directory.
    workers
        Parallel downloads.
    url_template
        ``str.format`` template with ``{key}`` and ``{mp3name}`` (URL-quoted).
    task
        Progress and cancel (see :func:`fetch_audio`); on a cancel the files fetched so far
        are recorded before :class:`~workbench.tasks.TaskCancelled` is raised.

    Raises
    ------
    InputError
        Unknown keys, or a key / mp3name that is not a plain file name.
    """
    to_dir = Path(to_dir).expanduser().resolve()
    try:
        url_template.format(key="k", mp3name="n.mp3")
    except (KeyError, IndexError, ValueError) as exc:
        raise InputError(
            f"URL template {url_template!r} is invalid ({exc}); use only the {{key}} and {{mp3name}} placeholders"
        ) from exc
    with store.session() as s:
        query = select(Clip)
        if keys is not None:
            query = query.where(Clip.key.in_(list(keys)))  # type: ignore[attr-defined]
        clips = list(s.exec(query))
    if keys is not None:
        unknown = sorted(set(keys) - {clip.key for clip in clips})
        if unknown:
            raise InputError(f"unknown clip keys: {', '.join(unknown[:10])}; check `aglw import dataset` ran")
    items: list[FetchItem] = []
    clip_of_key: dict[str, Clip] = {}
    missing_name: list[FetchResult] = []
    for clip in clips:
        if not clip.mp3name:
            missing_name.append(FetchResult(clip.key, "failed", to_dir, error=f"clip {clip.key!r} has no mp3name"))
            continue
        key = _safe_component(clip.key, "key", clip.key)
        name = _safe_component(clip.mp3name, "mp3name", clip.key)
        url = url_template.format(key=urllib.parse.quote(key), mp3name=urllib.parse.quote(name))
        items.append(FetchItem(key=clip.key, url=url, dest=to_dir / key / name))
        clip_of_key[clip.key] = clip
    task = task or TaskContext()
    task.set_total(len(missing_name))
    for failure in missing_name:
        task.item_done(failure.key, False, failure.error or "no mp3name")
    summary, stopped = _fetch_many(items, workers, task, timeout, DEFAULT_RETRIES)
    fetched = [r for r in summary.results if r.status in ("downloaded", "present")]
    if fetched:
        with store.write() as s:
            dataset_ids = {clip_of_key[r.key].dataset_id for r in fetched}
            for dataset_id in dataset_ids:
                exists = s.exec(
                    select(MediaRoot).where(MediaRoot.dataset_id == dataset_id, MediaRoot.path == str(to_dir))
                ).first()
                if exists is None:
                    s.add(MediaRoot(dataset_id=dataset_id, path=str(to_dir)))
            for result in fetched:
                clip = s.get(Clip, clip_of_key[result.key].id)
                if clip is None:
                    continue
                clip.audio_path = result.dest.relative_to(to_dir).as_posix()
                clip.content_hash = result.content_hash
                s.add(clip)
    summary.results.extend(missing_name)
    if stopped:
        raise TaskCancelled()
    return summary
