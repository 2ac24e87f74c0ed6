"""Export a stored selection as an AGL1K-format CSV plus a JSON manifest.

The CSV has the *correct* 20-name header (the published AGL1K file has 19
names for 20 values; see data-and-metrics.md), so
``aglw import dataset --format agl1k`` reads it back field for field. Numbers
are written with Python's shortest round-tripping representation; rows come in
selection order (best localizability first).

The manifest is written beside the CSV as ``<FILE>.manifest.json`` and holds
the selection and run ids, the run's parameters and input fingerprint, the
counts per stratum, the tool version and the CSV's SHA-256. Both files are
written to temporary names and renamed into place, the CSV last but one and
the manifest last, so an interrupted export leaves no half-written file.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import select

import workbench
from storage import Store
from storage.models import Clip
from workbench.curation import runs
from workbench.curation.selection import stored_selection
from workbench.errors import AglwError
from workbench.outputs import check_file_targets, write_text

AGL1K_HEADER = (
    "key", "short_key", "longitude", "latitude", "altitude", "description", "title", "mp3name", "mp3seconds",
    "city", "country", "continent", "human_sounds", "animal", "music", "natural_sounds", "channel",
    "environment_and_background", "sounds_of_things", "source_ambiguous_sounds",
)
REQUIRED_NUMBERS = (
    "longitude", "latitude", "mp3seconds", "human_sounds", "animal", "music", "natural_sounds", "channel",
    "environment_and_background", "sounds_of_things", "source_ambiguous_sounds",
)
MANIFEST_SUFFIX = ".manifest.json"


class TargetExists(AglwError):
    """The CSV or its manifest exists and replacing it was not asked for."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path} exists; pass --force to replace it, or choose another file")
        self.path = path


@dataclass(frozen=True)
class ExportResult:
    csv_path: Path
    manifest_path: Path
    n_rows: int
    selection_id: int


def manifest_path_for(csv_path: str | Path) -> Path:
    """Where the manifest of ``csv_path`` goes: ``<csv_path>.manifest.json``."""
    path = Path(csv_path)
    return path.with_name(path.name + MANIFEST_SUFFIX)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        return repr(value)
    return str(value)


def render_csv(rows: list[dict[str, Any]]) -> str:
    """The AGL1K CSV text of ``rows`` (dicts keyed by the 20 header names)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(AGL1K_HEADER)
    for row in rows:
        writer.writerow([_cell(row.get(name)) for name in AGL1K_HEADER])
    return buffer.getvalue()


def export_selection(
    store: Store, path: str | Path, *, selection_id: int | None = None, overwrite: bool = False
) -> ExportResult:
    """Write a selection (default: the latest) as ``path`` plus ``<path>.manifest.json``.

    Parameters
    ----------
    overwrite
        Replace an existing CSV or manifest (``--force``); without it either one existing is
        refused before anything is written.

    Raises
    ------
    TargetExists
        ``path`` or its manifest exists and ``overwrite`` is False.
    AglwError
        No selection is stored, or a selected clip lacks a field the AGL1K
        format requires (named with the clip key); nothing is written then.
    """
    target = Path(path)
    if not overwrite:
        for existing in (target, manifest_path_for(target)):
            if existing.exists():
                raise TargetExists(existing)
    # the rules every output follows (workbench/outputs.py): no dangling link, no folder, no link followed
    check_file_targets([target, manifest_path_for(target)], force=overwrite)
    with store.session() as s:
        chosen = stored_selection(s, selection_id)
        clip_ids = [int(c) for c in chosen.clip_ids or []]
        clips = {c.id: c for c in s.scalars(select(Clip).where(Clip.id.in_(clip_ids))).all()}
    rows = []
    for clip_id in clip_ids:
        clip = clips.get(clip_id)
        if clip is None:
            raise AglwError(f"selection {chosen.id} names clip id {clip_id}, which no longer exists; select again")
        row = {name: getattr(clip, name) for name in AGL1K_HEADER}
        missing = [name for name in REQUIRED_NUMBERS if row[name] is None]
        if missing:
            raise AglwError(
                f"clip {clip.key} has no {', '.join(missing)}; the AGL1K format requires them. "
                "Fill them in or leave the clip out of the selection."
            )
        rows.append(row)
    text = render_csv(rows)
    info = runs.run_info(store, chosen.run_id) if chosen.run_id is not None else None
    manifest = {
        "format": "agl1k",
        "csv": target.name,
        "csv_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "header": list(AGL1K_HEADER),
        "n_rows": len(rows),
        "selection_id": int(chosen.id),
        "run_id": chosen.run_id,
        "input_fingerprint": info.input_fingerprint if info else None,
        "parameters": info.parameters if info else None,
        "selection_parameters": chosen.parameters,
        "counts": chosen.counts,
        "tool": "aglw",
        "tool_version": workbench.__version__,
        "exported_at": datetime.now(timezone.utc).isoformat(),
        "keys": [r["key"] for r in rows],
    }
    manifest_path = manifest_path_for(target)
    write_text(target, text, force=overwrite)
    write_text(manifest_path, json.dumps(manifest, ensure_ascii=False, indent=2, default=str) + "\n", force=overwrite)
    return ExportResult(csv_path=target, manifest_path=manifest_path, n_rows=len(rows), selection_id=int(chosen.id))
