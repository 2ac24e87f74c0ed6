"""The pool step's unit of work: decode one recording and measure it (AGL1K's first stage).

One function, :func:`measure_item`, is what both engines run: the local engine calls it in a
loop, the Ray engine calls :func:`measure_batch` (the same function over a column batch) inside
``map_batches`` on the workers. Results are plain columns (no store, no Qt), so they travel as
Arrow/Parquet and come back identical whichever engine computed them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Column order of a measurement row (also the Parquet shard schema).
COLUMNS = (
    "key", "path", "clip_id", "content_hash", "sample_rate", "n_channels", "duration_s", "layout",
    "rms_dbfs", "spectral_flatness", "clipping_ratio", "aci", "error",
)


@dataclass(frozen=True)
class PoolItem:
    """One recording to measure: its key (clip key or file name), path, and what layout detection reads."""

    key: str
    path: str
    clip_id: int = -1  # -1: a file of a folder, not a project clip
    description: str = ""


@dataclass(frozen=True)
class Measurement:
    """What measuring one recording found; ``error`` is '' on success, else why it failed."""

    key: str
    path: str
    clip_id: int
    content_hash: str = ""
    sample_rate: int = 0
    n_channels: int = 0
    duration_s: float = 0.0
    layout: str = ""
    rms_dbfs: float = math.nan  # -inf for digital silence
    spectral_flatness: float = math.nan
    clipping_ratio: float = math.nan
    aci: float = math.nan
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


def measure_item(item: PoolItem) -> Measurement:
    """Decode ``item`` once (mono mix) and compute its properties and quality metrics.

    Never raises for a bad recording: a file that cannot be decoded becomes a
    :class:`Measurement` with ``error`` set, so one bad clip never stops a pool job.
    """
    from workbench.audio.digests import file_digest
    from workbench.audio.layout import detect_layout
    from workbench.audio.loader import audio_info, load_audio
    from workbench.audio.quality import quality_metrics
    from workbench.errors import AglwError

    try:
        digest = file_digest(Path(item.path))  # remembered in the digest index: the next run only stats it
        info = audio_info(item.path)
        # Metrics use the mono mix only; mixing while loading keeps memory to one channel.
        audio = load_audio(item.path, mono=True)
        metrics = quality_metrics(audio.samples, audio.sample_rate)
    except (AglwError, OSError, ValueError, RuntimeError) as exc:
        return Measurement(item.key, item.path, item.clip_id, error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    return Measurement(
        key=item.key,
        path=item.path,
        clip_id=item.clip_id,
        content_hash=digest,
        sample_rate=int(audio.sample_rate),
        n_channels=int(info.n_channels),
        duration_s=audio.samples.shape[0] / audio.sample_rate,
        layout=detect_layout(info.n_channels, item.description or None),
        rms_dbfs=metrics.rms_dbfs,
        spectral_flatness=metrics.spectral_flatness,
        clipping_ratio=metrics.clipping_ratio,
        aci=metrics.aci,
    )


def measure_batch(batch: dict[str, Any]) -> dict[str, list[Any]]:
    """:func:`measure_item` over a column batch (``key``, ``path``, ``clip_id``, ``description``).

    This is what Ray's ``map_batches`` runs on a worker; it returns columns in :data:`COLUMNS` order.
    """
    keys = list(batch["key"])
    items = [
        PoolItem(str(key), str(path), int(clip_id), str(description))
        for key, path, clip_id, description in zip(keys, batch["path"], batch["clip_id"], batch["description"])
    ]
    rows = [measure_item(item).as_row() for item in items]
    return {column: [row[column] for row in rows] for column in COLUMNS}


def rows_to_measurements(columns: dict[str, Any]) -> list[Measurement]:
    """Column batch (from Ray or a Parquet shard) back to measurements, types restored."""
    n = len(columns["key"])
    out = []
    for i in range(n):
        out.append(Measurement(
            key=str(columns["key"][i]),
            path=str(columns["path"][i]),
            clip_id=int(columns["clip_id"][i]),
            content_hash=str(columns["content_hash"][i]),
            sample_rate=int(columns["sample_rate"][i]),
            n_channels=int(columns["n_channels"][i]),
            duration_s=float(columns["duration_s"][i]),
            layout=str(columns["layout"][i]),
            rms_dbfs=float(columns["rms_dbfs"][i]),
            spectral_flatness=float(columns["spectral_flatness"][i]),
            clipping_ratio=float(columns["clipping_ratio"][i]),
            aci=float(columns["aci"][i]),
            error=str(columns["error"][i]),
        ))
    return out
