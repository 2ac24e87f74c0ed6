"""A benchmark others can load: the whole dataset, chosen clips or a selection as a Hugging Face
dataset folder with a dataset card and Croissant metadata (``design/datasets.md``).

``OUT/data/test-0000i-of-0000n.parquet`` hold one row per clip (in selection order, else in key
order): the clip's metadata, its recording as an ``Audio`` value (the file's bytes and its path
relative to the media root; only the path with ``embed_audio=False``; stored undecoded, see
:func:`features`), the curation values the
project holds (localizability of the selection's run or the latest run, quality flags, the top
tags of the current tagger run, the speech rule) and ``extra`` (the source's unmapped columns as
JSON). ``datasets.load_dataset(OUT)`` reads it with no other argument: the card's front matter
names the split and its files. The folder is built beside ``OUT`` and swapped in whole
(:mod:`workbench.outputs`): an existing folder is replaced only with ``force`` and only when it
holds an earlier export.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import select

import workbench
from storage import Store
from storage.models import Clip, CurationClipResult, Dataset, Tag
from workbench.errors import AglwError, UsageError
from workbench.media import clip_audio, dataset_roots
from workbench.speech import SPEECH_CLASS_ID, SPEECH_TAG_THRESHOLD, is_speech_clip
from workbench.tasks import TaskContext

SPLIT = "test"  # a benchmark is for evaluation
TOP_TAGS = 5
SHARD_BYTES = 256 * 1024 * 1024  # audio bytes per Parquet file before a new one starts
CARD, CROISSANT, DATA = "README.md", "croissant.json", "data"
AGL1K_CATEGORIES = (
    "human_sounds", "animal", "music", "natural_sounds", "channel", "environment_and_background",
    "sounds_of_things", "source_ambiguous_sounds",
)
# export column -> Clip column, for the clip metadata (text unless listed in NUMBER_COLUMNS)
CLIP_FIELDS: dict[str, str] = {
    "key": "key", "latitude": "latitude", "longitude": "longitude", "city": "city", "country": "country",
    "continent": "continent", "title": "title", "description": "description", "duration_s": "mp3seconds",
    "licence": "licence", "recordist": "recordist", "url": "url", "recorded_at": "recorded_at",
    "audio_file": "mp3name",
}
AGL1K_FIELDS: dict[str, str] = {"short_key": "short_key", "altitude": "altitude", **{c: c for c in AGL1K_CATEGORIES}}
NUMBER_COLUMNS = frozenset({"latitude", "longitude", "duration_s", "altitude", *AGL1K_CATEGORIES, "localizability"})


def missing_share_extra() -> str | None:
    """The one-line message when the ``[share]`` extra is missing, else None."""
    from workbench.extras import has, missing_extra_message

    for module in ("datasets", "pyarrow"):
        if not has(module):
            return missing_extra_message(module)
    return None


@dataclass
class ExportedClips:
    """What an export holds, before it is written."""

    rows: list[dict[str, Any]]
    columns: list[str]  # export columns, in order (``audio`` included)
    dataset_names: list[str]
    selection: dict[str, Any] | None
    run: dict[str, Any] | None
    tagger_run_id: int | None
    provenance: list[dict[str, Any]]


@dataclass(frozen=True)
class HfExportResult:
    out: Path
    n_rows: int
    files: dict[str, str]  # relative path -> SHA-256 of every data file
    embedded: bool
    without_audio: list[str]
    selection_id: int | None
    datasets: list[str]


def _is_earlier_export(path: Path) -> bool:
    names = {p.name for p in path.iterdir()}
    return CROISSANT in names and names <= {CARD, CROISSANT, DATA}


def _choose_clips(session: Any, dataset: str | None, keys: list[str] | None, selection: str | int | None
                  ) -> tuple[list[int], dict[str, Any] | None]:
    """Clip ids in export order, and the selection they come from."""
    if selection is not None:
        from workbench.curation.selection import stored_selection

        chosen = stored_selection(session, None if selection == "latest" else int(selection))
        about = {"id": int(chosen.id), "run_id": chosen.run_id, "size": chosen.size,
                 "parameters": chosen.parameters, "counts": chosen.counts,
                 "created_at": chosen.created_at.isoformat() if chosen.created_at else None}
        return [int(c) for c in chosen.clip_ids or []], about
    datasets = session.execute(select(Dataset.id, Dataset.name).order_by(Dataset.id)).all()
    if dataset is not None:
        matching = [d for d in datasets if d.name == dataset]
        if not matching:
            raise AglwError(f"no dataset named {dataset!r} (known: {', '.join(d.name for d in datasets) or 'none'})")
    elif len(datasets) == 1:
        matching = datasets
    elif not datasets:
        raise AglwError("the project has no dataset; import one with `aglw import dataset`")
    else:
        raise AglwError(f"the project has {len(datasets)} datasets ({', '.join(d.name for d in datasets)}); "
                        "pass --dataset NAME")
    dataset_id = matching[0].id
    ids = dict(session.execute(select(Clip.key, Clip.id).where(Clip.dataset_id == dataset_id)).all())
    if keys is None:
        return [ids[k] for k in sorted(ids)], None
    unknown = [k for k in keys if k not in ids]
    if unknown:
        raise AglwError(f"unknown clip key(s) in dataset {matching[0].name!r}: {', '.join(unknown[:20])}")
    return [ids[k] for k in dict.fromkeys(keys)], None


def _curation(session: Any, run_id: int | None, clip_ids: list[int]) -> tuple[dict[str, Any] | None, dict[int, Any]]:
    if run_id is None:
        from workbench.project import latest_curation_run_id

        run_id = latest_curation_run_id(session)
    if run_id is None:
        return None, {}
    results = {
        r.clip_id: r for r in session.execute(
            select(CurationClipResult).where(CurationClipResult.run_id == run_id,
                                             CurationClipResult.clip_id.in_(clip_ids))).scalars()
    }
    return {"id": run_id}, results


def _tags(session: Any, clip_ids: list[int]) -> tuple[int | None, dict[int, list[Tag]]]:
    from workbench.project import current_tagger_run_id

    run_id = current_tagger_run_id(session)
    if run_id is None:
        return None, {}
    by_clip: dict[int, list[Tag]] = {}
    for tag in session.execute(select(Tag).where(Tag.tagger_run_id == run_id, Tag.clip_id.in_(clip_ids))).scalars():
        by_clip.setdefault(tag.clip_id, []).append(tag)
    return run_id, by_clip


def gather(store: Store, *, dataset: str | None = None, keys: list[str] | None = None,
           selection: str | int | None = None) -> ExportedClips:
    """The rows of an export (see the module doc), audio not yet read."""
    from workbench.project import category_names

    with store.session() as session:
        clip_ids, about_selection = _choose_clips(session, dataset, keys, selection)
        if not clip_ids:
            raise AglwError("nothing to export: the selection or dataset has no clips")
        clips = {c.id: c for c in session.execute(select(Clip).where(Clip.id.in_(clip_ids))).scalars()}
        gone = [c for c in clip_ids if c not in clips]
        if gone:
            raise AglwError(f"the selection names clip id {gone[0]}, which no longer exists; select again")
        ordered = [clips[c] for c in clip_ids]
        datasets = {d.id: d for d in session.execute(select(Dataset)).scalars()}
        run, results = _curation(session, about_selection["run_id"] if about_selection else None, clip_ids)
        tagger_run_id, tags = _tags(session, clip_ids)
    if run is not None:
        from workbench.curation import runs

        info = runs.run_info(store, run["id"])
        run.update(input_fingerprint=info.input_fingerprint, parameters=info.parameters,
                   created_at=info.created_at.isoformat())
    names = category_names(store) if tags else {}
    roots = dataset_roots(store)
    if run is not None:
        # the flags each clip has now (the one owner, with the run's cut-offs), less those the experts overrule now
        from workbench.audio.flags import quality_flags_now
        from workbench.curation.inputs import flag_overrules_now
        from workbench.curation.model import FitParameters, quality_thresholds

        flags_now = quality_flags_now(store, quality_thresholds(FitParameters.from_dict(run.get("parameters") or {})))
        overruled = flag_overrules_now(store)
    # the speech rule with the curation run's τ, as the selection applies it
    tau = float(((run or {}).get("parameters") or {}).get("tau", SPEECH_TAG_THRESHOLD))
    agl1k = any(getattr(c, column) is not None for c in ordered for column in AGL1K_FIELDS.values())
    rows = []
    for clip in ordered:
        row: dict[str, Any] = {name: getattr(clip, column) for name, column in CLIP_FIELDS.items()}
        if agl1k:
            row.update({name: getattr(clip, column) for name, column in AGL1K_FIELDS.items()})
        row["derived"] = list(clip.derived or [])
        row["extra"] = json.dumps(clip.extra, ensure_ascii=False, sort_keys=True) if clip.extra is not None else None
        status = clip_audio(clip.key, clip.audio_path, roots.get(clip.dataset_id, []))
        row["_audio_file"] = status.path if status.ok else None
        row["_audio_path"] = clip.audio_path
        if run is not None:
            result = results.get(clip.id)
            row["localizability"] = float(result.localizability) if result else None
            row["candidate"] = bool(result.candidate) if result else None
            row["quality_flags"] = [name for name in flags_now.names(clip.id) if not overruled(clip.id, name)]
        if tagger_run_id is not None:
            clip_tags = sorted(tags.get(clip.id, []), key=lambda t: (-t.probability, t.class_index))
            row["tags"] = [{"id": t.audioset_id, "name": names.get(t.audioset_id, t.audioset_id),
                            "probability": float(t.probability)} for t in clip_tags[:TOP_TAGS]]
            # A tagged clip without a stored Speech tag scored below the tagger's floor (< τ).
            speech = next((t.probability for t in clip_tags if t.audioset_id == SPEECH_CLASS_ID), 0.0 if clip_tags else None)
            row["speech"] = is_speech_clip(clip.human_sounds, speech, tag_threshold=tau)
        else:
            row["speech"] = is_speech_clip(clip.human_sounds, None)
        rows.append(row)
    columns = ["key", "audio", *[c for c in CLIP_FIELDS if c != "key"],
               *(AGL1K_FIELDS if agl1k else ()), "derived", "extra", "speech"]
    if run is not None:
        columns += ["localizability", "candidate", "quality_flags"]
    if tagger_run_id is not None:
        columns.append("tags")
    used = sorted({c.dataset_id for c in ordered})
    provenance = [{"name": datasets[d].name, "format": datasets[d].format, "source": Path(datasets[d].source_path).name
                   if datasets[d].source_path else None, "source_sha256": datasets[d].source_sha256,
                   "imported_at": datasets[d].imported_at.isoformat() if datasets[d].imported_at else None,
                   "mapping": datasets[d].mapping} for d in used]
    return ExportedClips(rows=rows, columns=columns, dataset_names=[datasets[d].name for d in used],
                         selection=about_selection, run=run, tagger_run_id=tagger_run_id, provenance=provenance)


def features(columns: list[str]) -> Any:
    """The ``datasets.Features`` of the export's columns."""
    import datasets as hf

    text, number = hf.Value("string"), hf.Value("float64")
    kinds: dict[str, Any] = {
        # decode=False: datasets 4+ decodes audio only through torchcodec, whose PyPI build must match
        # the user's torch exactly (and CUDA); the bytes load anywhere and soundfile decodes them (the card)
        "audio": hf.Audio(decode=False), "derived": hf.List(text), "quality_flags": hf.List(text), "candidate": hf.Value("bool"),
        "speech": hf.Value("bool"),
        "tags": hf.List({"id": text, "name": text, "probability": number}),
    }
    return hf.Features({c: kinds.get(c, number if c in NUMBER_COLUMNS else text) for c in columns})


def _shards(rows: list[dict[str, Any]], embed: bool) -> list[list[dict[str, Any]]]:
    shards: list[list[dict[str, Any]]] = [[]]
    size = 0
    for row in rows:
        file = row["_audio_file"]
        weight = file.stat().st_size if embed and file is not None else 0
        if shards[-1] and size + weight > SHARD_BYTES:
            shards.append([])
            size = 0
        shards[-1].append(row)
        size += weight
    return shards


def _audio_value(row: dict[str, Any], embed: bool) -> dict[str, Any] | None:
    file, relative = row["_audio_file"], row["_audio_path"]
    if file is None:
        return None
    return {"bytes": file.read_bytes() if embed else None, "path": relative}


def write_shards(
    folder: Path, exported: ExportedClips, *, embed: bool, task: TaskContext | None = None
) -> Iterator[tuple[str, str, int]]:
    """Write the Parquet files under ``folder/data``; yields (relative path, SHA-256, Arrow bytes) of each.

    Each clip is one item of ``task``; a cancel stops before the next clip (the caller's staging
    folder is then dropped, so nothing reaches the target)."""
    task = task or TaskContext()

    def record(row: dict[str, Any]) -> dict[str, Any]:
        task.check_cancel()
        values = {c: (_audio_value(row, embed) if c == "audio" else row.get(c)) for c in exported.columns}
        task.item_done(str(row["key"]))
        return values

    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = features(exported.columns).arrow_schema
    shards = _shards(exported.rows, embed)
    (folder / DATA).mkdir()
    for index, shard in enumerate(shards):
        name = f"{DATA}/{SPLIT}-{index:05d}-of-{len(shards):05d}.parquet"
        records = [record(r) for r in shard]
        table = pa.Table.from_pylist(records, schema=schema)
        pq.write_table(table, folder / name)
        digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        yield name, digest, int(table.nbytes)


def export_hf(
    store: Store,
    out: str | Path,
    *,
    dataset: str | None = None,
    keys: list[str] | None = None,
    selection: str | int | None = None,
    embed_audio: bool = True,
    force: bool = False,
    url: str | None = None,
    task: TaskContext | None = None,
) -> HfExportResult:
    """Write the Hugging Face dataset folder ``out`` (see the module doc).

    Parameters
    ----------
    dataset
        The dataset to export (default: the project's only one); ignored with ``selection``.
    keys
        Only these clips of the dataset, in this order.
    selection
        ``"latest"`` or a selection id: its clips in selection order, with its run's curation values.
    embed_audio
        The recordings' bytes in the Parquet files; else only their paths relative to the media root.
    force
        Replace an earlier export at ``out``.
    url
        Where the dataset will be published (Croissant's ``url``), when known.
    task
        Progress (one item per clip) and cancel: a cancelled export leaves the target as it was.

    Raises
    ------
    AglwError
        The ``[share]`` extra is missing, ``out`` is refused (see :mod:`workbench.outputs`), an
        unknown dataset, key or selection, or nothing to export. Nothing is written then.
    """
    from workbench.curation.dataset_card import card_text, croissant_document
    from workbench.outputs import check_folder_target, output_folder

    message = missing_share_extra()
    if message:
        raise AglwError(message)
    if selection is not None and keys is not None:
        raise UsageError("--clips and --selection choose the clips two ways; give one")
    target = check_folder_target(Path(out), force=force, earlier=_is_earlier_export, what="Hugging Face export")
    exported = gather(store, dataset=dataset, keys=keys, selection=selection)
    task = task or TaskContext()
    task.set_total(len(exported.rows))
    made = {"tool": "aglw", "tool_version": workbench.__version__,
            "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "embedded_audio": embed_audio, "url": url}
    with output_folder(target, force=force, earlier=_is_earlier_export, what="Hugging Face export") as folder:
        files = {name: (digest, size) for name, digest, size in write_shards(folder, exported, embed=embed_audio, task=task)}
        hashes = {name: digest for name, (digest, _) in files.items()}
        num_bytes = sum(size for _, size in files.values())
        (folder / CROISSANT).write_text(
            json.dumps(croissant_document(target.name, exported, hashes, made, features(exported.columns)), ensure_ascii=False, indent=2) + "\n",
            encoding="utf-8")
        (folder / CARD).write_text(
            card_text(target.name, exported, hashes, made, features(exported.columns), num_bytes), encoding="utf-8")
    return HfExportResult(
        out=target, n_rows=len(exported.rows), files=hashes, embedded=embed_audio,
        without_audio=[r["key"] for r in exported.rows if r["_audio_file"] is None],
        selection_id=exported.selection["id"] if exported.selection else None, datasets=exported.dataset_names,
    )
