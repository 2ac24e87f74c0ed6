"""AGL1K result records: an ALM answer as a record, and a model's predictions exported as ``seed_42_ABCD.jsonl``.

An answer becomes a prediction by the import's own path: the answer is first written as the AGL1K
result record (the shape ``aglw export predictions`` writes and AGL1K's analysis reads), then
converted by the importer's record reader and stored with
:func:`workbench.importing.prediction_rows.prediction_row`. So a prediction from ``aglw alm run``
and one from ``aglw import predictions`` of the same record are the same row, and exporting then
importing gives identical predictions.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import InputError

TASK_ID = "audio_localization"


@dataclass(frozen=True)
class ClipFacts:
    """What an AGL1K record repeats about its clip (plain data)."""

    clip_id: int
    key: str
    city: str | None = None
    country: str | None = None
    continent: str | None = None
    longitude: float | None = None
    latitude: float | None = None
    description: str | None = None
    title: str | None = None


def answer_record(clip: ClipFacts, *, question: str, fields: dict[str, Any], model_output: str,
                  seed: int | None) -> dict[str, Any]:
    """The AGL1K result record of one answer (``fields`` as the parser found them, under canonical names)."""
    return {
        "question": question,
        "task_id": TASK_ID,
        "question_id": clip.key,
        "true_city": clip.city,
        "true_country": clip.country,
        "true_continent": clip.continent,
        "true_longitude": clip.longitude,
        "true_latitude": clip.latitude,
        "description": clip.description,
        "title": clip.title,
        "predicted_city": fields.get("city"),
        "predicted_country": fields.get("country"),
        "predicted_continent": fields.get("continent"),
        "predicted_longitude": fields.get("longitude"),
        "predicted_latitude": fields.get("latitude"),
        "reasoning": fields.get("reason"),
        "model_output": model_output,
        "seed": seed,
    }


def record_values(record: dict[str, Any]) -> dict[str, Any]:
    """The stored values of a record, converted exactly as ``aglw import predictions`` converts them."""
    from workbench.importing import predictions

    converted = predictions.to_record(record, 0)  # the importer's one conversion rule
    if isinstance(converted, str):
        raise InputError(f"clip {record.get('question_id')}: {converted}")
    return converted.values


def _number_or_text(text: str | None) -> Any:
    """A stored raw value back as the JSON the model wrote: a number when the text is exactly
    that number's own spelling (so importing the export stores the same text), else the text."""
    if text is None:
        return None
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        if str(value) == text and math.isfinite(value):
            return value
    return text


@dataclass(frozen=True)
class ExportResult:
    path: Path
    n_records: int
    model: str


def export_predictions(store: Any, model: str, out: str | Path, *, overwrite: bool = False) -> ExportResult:
    """Write the predictions of ``model`` as AGL1K result records (JSON Lines), one per clip.

    Parameters
    ----------
    store
        The project store.
    model
        The model name (as imported or as ``aglw alm run --model`` filed it).
    out
        The ``.jsonl`` file to write (written to a temporary name, then moved into place).
    overwrite
        Replace an existing file.

    Raises
    ------
    InputError
        Unknown model, no predictions, or an existing file without ``overwrite``.
    """
    from sqlalchemy import select

    from storage.models import AlmRun, Clip, Prediction

    from workbench.outputs import check_file_target, output_file

    path = check_file_target(out, force=overwrite)  # refused before any work; a link is never written through
    with store.session() as session:
        run = session.execute(select(AlmRun).where(AlmRun.model == model)).scalars().first()
        if run is None:
            known = ", ".join(session.execute(select(AlmRun.model).order_by(AlmRun.model)).scalars()) or "none"
            raise InputError(f"no model named {model!r} (known: {known})")
        rows = session.execute(
            select(Prediction, Clip.description, Clip.title)
            .join(Clip, Clip.id == Prediction.clip_id, isouter=True)
            .where(Prediction.alm_run_id == run.id)
            .order_by(Prediction.line_no, Prediction.id)
        ).all()
    if not rows:
        raise InputError(f"model {model!r} has no predictions to export")
    with output_file(path, force=overwrite) as tmp:
        with tmp.open("w", encoding="utf-8") as handle:
            for prediction, description, title in rows:
                record = {
                    "question": prediction.question,
                    "task_id": prediction.task_id,
                    "question_id": prediction.question_id,
                    "true_city": prediction.true_city,
                    "true_country": prediction.true_country,
                    "true_continent": prediction.true_continent,
                    "true_longitude": prediction.true_longitude,
                    "true_latitude": prediction.true_latitude,
                    "description": description,
                    "title": title,
                    "predicted_city": prediction.predicted_city,
                    "predicted_country": prediction.predicted_country,
                    "predicted_continent": prediction.predicted_continent,
                    "predicted_longitude": _number_or_text(prediction.predicted_longitude),
                    "predicted_latitude": _number_or_text(prediction.predicted_latitude),
                    "reasoning": prediction.reasoning,
                    "model_output": prediction.model_output,
                    "seed": prediction.seed,
                }
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return ExportResult(path=path, n_records=len(rows), model=model)
