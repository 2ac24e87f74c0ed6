"""``aglw analyze-pool``: decode + the four quality filters over a pool, on either engine.

Two pools:

- the project's clips (``--clips`` or all): each shard of results is stored in one transaction
  through the same writer as a single clip's analysis, so an interrupted job resumes (clips whose
  stored metrics match their file are skipped) and a shard is never half written; on Ray, a shard
  that came back is first kept as a Parquet file (:class:`ShardSpool`) until it is stored;
- a folder of recordings (``--folder``): measured and reported, nothing stored (the project is
  not touched by files it does not hold).

The flags use the pool's own 2nd-percentile ACI, so they are computed after the whole pool is
measured (project: over every analysed clip of the project).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from workbench.errors import InputError, UsageError
from workbench.pool.engines import BatchFunction, run_local
from workbench.pool.measure import Measurement, PoolItem, measure_batch
from workbench.tasks import TaskCancelled, TaskContext

AUDIO_SUFFIXES = frozenset({".wav", ".flac", ".mp3", ".ogg", ".oga", ".opus", ".m4a", ".aif", ".aiff", ".w64", ".caf"})


@dataclass
class PoolSummary:
    """What one pool job did."""

    engine: str
    source: str  # "project" or the folder
    requested: int = 0
    measured: int = 0
    skipped: int = 0  # project clips whose stored metrics already match their file
    no_audio: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    rows: list[Measurement] = field(default_factory=list)  # folder mode: every measured file
    flags: dict[str, list[str]] = field(default_factory=dict)  # key -> failed filters
    # the pool the low-complexity (ACI) cut-off was computed on: clips, percentile, cut_off (None when
    # not raised), minimum, raised, what, why_not
    aci_pool: dict[str, Any] | None = None
    shards_stored: int = 0
    analysed_keys: set[str] = field(default_factory=set)  # project mode: requested clips with audio

    def flag_counts(self) -> dict[str, int]:
        return dict(Counter(flag for names in self.flags.values() for flag in names))


def folder_items(folder: Path) -> list[PoolItem]:
    """Every audio file under ``folder`` (recursively), keyed by its path relative to the folder."""
    if not folder.is_dir():
        raise InputError(f"--folder {folder}: not a directory")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES)
    return [PoolItem(key=p.relative_to(folder).as_posix(), path=str(p)) for p in files]


def project_items(store: Any, clip_keys: Sequence[str] | None, *, force: bool) -> tuple[list[PoolItem], list[str], int, list[str]]:
    """The project's clips to measure: (items, keys without audio, number skipped, keys skipped as already analysed)."""
    from sqlmodel import select

    from storage.models import Clip, ClipQuality
    from workbench.media import audio_statuses

    with store.session() as s:
        query = select(Clip.id, Clip.key, Clip.description, Clip.content_hash)
        if clip_keys is not None:
            query = query.where(Clip.key.in_(list(clip_keys)))  # type: ignore[attr-defined]
        clips = s.exec(query.order_by(Clip.key)).all()
        analysed = dict(s.exec(select(ClipQuality.clip_id, ClipQuality.content_hash)).all())
    if clip_keys is not None:
        missing = sorted(set(clip_keys) - {key for _, key, _, _ in clips})
        if missing:
            raise InputError(f"--clips: no clip {missing[0]!r} in this project"
                             + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    statuses = audio_statuses(store, [clip_id for clip_id, *_ in clips])
    items, no_audio, already = [], [], []
    for clip_id, key, description, stored_hash in clips:
        status = statuses.get(clip_id)
        if status is None or not status.ok or status.path is None:
            no_audio.append(key)
            continue
        # Stored metrics of the same content are kept: the file's hash (from the digest index, by
        # path, size and mtime; hashed when not seen so) is the one the metrics were written with.
        # A replaced file has another hash and is measured again.
        if (not force and stored_hash is not None and analysed.get(clip_id) == stored_hash
                and _current_hash(status.path) == stored_hash):
            already.append(key)
            continue
        items.append(PoolItem(key=key, path=str(status.path), clip_id=clip_id, description=description or ""))
    return items, no_audio, len(already), already


def _current_hash(path: Path) -> str | None:
    from workbench.audio.digests import file_digest
    from workbench.errors import AglwError

    try:
        return file_digest(path)
    except AglwError:
        return None  # gone since the check: measured, and the measurement says why


def _store_shard(store: Any, rows: Sequence[Measurement]) -> None:
    """One shard, one transaction: all its clips are stored or none is."""
    from workbench.audio.quality import QualityMetrics
    from workbench.audio.service import write_clip_analysis

    with store.write() as s:
        for row in rows:
            if not row.ok:
                continue
            write_clip_analysis(
                s, row.clip_id, sample_rate=row.sample_rate, n_channels=row.n_channels, duration_s=row.duration_s,
                layout=row.layout, content_hash=row.content_hash,
                metrics=QualityMetrics(row.rms_dbfs, row.spectral_flatness, row.clipping_ratio, row.aci),
            )


@dataclass
class _SpooledShard:
    path: Path
    rows: list[Measurement]

    def done(self) -> None:
        self.path.unlink(missing_ok=True)


class ShardSpool:
    """Parquet shards of results that came back from the cluster, kept until they are stored.

    A shard is written (atomically: temporary name, then rename) before its transaction and
    deleted after it commits, so results the workers paid for survive a driver that dies in
    between; the next run stores them first. One folder per project in the user cache.
    """

    def __init__(self, store: Any) -> None:
        import hashlib

        from workbench.config import cache_dir

        digest = hashlib.sha256(str(store.url).encode("utf-8")).hexdigest()[:16]
        self.folder = cache_dir() / "pool-shards" / digest / "analyze"
        self.folder.mkdir(parents=True, exist_ok=True)

    def write(self, rows: Sequence[Measurement]) -> _SpooledShard:
        import uuid

        import pyarrow as pa
        import pyarrow.parquet as pq

        from workbench.pool.measure import COLUMNS

        table = pa.table({column: [getattr(row, column) for row in rows] for column in COLUMNS})
        final = self.folder / f"shard-{uuid.uuid4().hex}.parquet"
        partial = final.with_suffix(".partial")
        pq.write_table(table, partial)
        partial.replace(final)
        return _SpooledShard(final, list(rows))

    def leftovers(self) -> list[_SpooledShard]:
        import pyarrow.parquet as pq

        from workbench.pool.measure import rows_to_measurements

        found = []
        for path in sorted(self.folder.glob("shard-*.parquet")):
            found.append(_SpooledShard(path, rows_to_measurements(pq.read_table(path).to_pydict())))
        for partial in self.folder.glob("shard-*.partial"):
            partial.unlink(missing_ok=True)  # never completed: its results were not relied on
        return found


def _folder_flags(rows: Sequence[Measurement]) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The flags of a folder run's files, by the one rule over the folder's pool, and that pool."""
    from workbench.audio.quality import pool_flags

    flags, pool = pool_flags(
        {row.key: (row.rms_dbfs, row.spectral_flatness, row.clipping_ratio, row.aci) for row in rows if row.ok},
        what="files of this folder run with a measured ACI")
    return {key: [f["flag"] for f in value] for key, value in flags.items()}, pool


def _project_flags(store: Any, keys: set[str]) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The flags of the analysed clips now (the one owner, workbench/audio/flags.py), and its pool."""
    from sqlalchemy import select

    from storage import tables as T
    from workbench.audio.flags import quality_flags_now

    now = quality_flags_now(store)
    with store.read() as connection:
        names = dict(connection.execute(select(T.clip.c.id, T.clip.c.key)).all())
    return {names[clip]: list(now.names(clip)) for clip in now.measured if names.get(clip) in keys}, now.pool


class RemoteMeasuring(Protocol):
    """Where :func:`analyze_pool` measures when not in this process.

    The command line chooses it and passes it down (``--engine ray``:
    :class:`workbench.pool.engines.RayMeasuring`); the pool step never branches on an engine name.
    Results come back to this process in shards, which it stores.
    """

    name: str

    @property
    def other_machines(self) -> bool:
        """Whether the workers may be on other machines (then every result comes back through this one)."""
        ...

    def connect(self) -> None:
        """Join the workers (the first thing a wrong address makes the user hear about)."""

    def shards(self, items: Sequence[PoolItem], *, shard_size: int,
               function: BatchFunction = measure_batch) -> Iterator[list[Measurement]]:
        """``function`` over ``items``; the rows in shards of at most ``shard_size``, as they arrive."""
        ...


def analyze_pool(
    store: Any | None = None,
    *,
    folder: Path | None = None,
    clip_keys: Sequence[str] | None = None,
    workers: int = 2,
    shard_size: int = 64,
    force: bool = False,
    task: TaskContext | None = None,
    function: BatchFunction = measure_batch,
    remote: RemoteMeasuring | None = None,
) -> PoolSummary:
    """Measure a pool's recordings (decode + quality metrics) and flag them with the four filters.

    Parameters
    ----------
    store
        The project (required unless ``folder`` is given).
    folder
        Measure the audio files under this folder instead of the project's clips; nothing is stored.
    clip_keys
        Project clips to measure (None: every clip with audio).
    workers
        Threads measuring in this process (a remote executor has its own).
    shard_size
        Results stored per transaction.
    force
        Measure clips again even when their stored metrics match their file.
    task
        Progress, per-clip failures and the cancel token; a cancel stops after the current shard
        is stored, and running the job again resumes.
    function
        The batch function the engine runs (the default is the only one the product uses).
    remote
        Measure on these workers instead of this process (``--engine ray``:
        :class:`workbench.pool.engines.RayMeasuring`); its shards are kept in a Parquet spool
        until stored.
    """
    task = task or TaskContext()
    if folder is not None and clip_keys is not None:
        raise UsageError("pass --folder or --clips, not both")
    if remote is not None:
        # Joined before anything is read: a wrong address is the first thing the user hears about.
        remote.connect()
    engine = "local" if remote is None else remote.name
    spool: ShardSpool | None = None
    if folder is not None:
        items, no_audio, skipped = folder_items(Path(folder)), [], 0
        summary = PoolSummary(engine=engine, source=str(folder))
    else:
        if store is None:
            raise InputError("analyze-pool needs a project (--db) or --folder")
        spool = ShardSpool(store) if remote is not None else None
        if spool is not None:
            # Shards a previous run received but did not store (the driver died in between): stored
            # first, so their clips are not measured again.
            for leftover in spool.leftovers():
                _store_shard(store, leftover.rows)
                leftover.done()
        items, no_audio, skipped, already = project_items(store, clip_keys, force=force)
        summary = PoolSummary(engine=engine, source="project", analysed_keys={item.key for item in items} | set(already))
        if remote is not None and remote.other_machines and store.url.startswith("sqlite"):
            task.note("the project is a SQLite file: workers only measure, and every result comes back "
                      "through this machine, which stores it (a team PostgreSQL store works the same way)")
    summary.requested, summary.no_audio, summary.skipped = len(items) + len(no_audio) + skipped, no_audio, skipped
    task.set_total(len(items))
    if not items:
        return _finish(store, folder, summary)
    shards = (run_local(items, workers=workers, shard_size=shard_size, function=function) if remote is None
              else remote.shards(items, shard_size=shard_size, function=function))
    for shard in shards:
        if folder is None:
            written = spool.write(shard) if spool is not None else None
            _store_shard(store, shard)
            if written is not None:
                written.done()
            summary.shards_stored += 1
        else:
            summary.rows.extend(shard)
        for row in shard:
            if row.ok:
                summary.measured += 1
            else:
                summary.failed.append((row.key, row.error))
        # Report after the shard is stored, every row of it: a cancel stops between shards only.
        cancelled = False
        for row in shard:
            try:
                task.item_done(row.key, row.ok, row.error)
            except TaskCancelled:
                cancelled = True
        if cancelled:
            raise TaskCancelled()
    return _finish(store, folder, summary)


def _finish(store: Any | None, folder: Path | None, summary: PoolSummary) -> PoolSummary:
    if folder is not None:
        summary.flags, summary.aci_pool = _folder_flags(summary.rows)
    elif store is not None:
        summary.flags, summary.aci_pool = _project_flags(store, summary.analysed_keys)
    return summary


def finite(value: float) -> float | None:
    """JSON has no NaN or infinity: those become null."""
    return value if isinstance(value, float) and math.isfinite(value) else None
