"""Builds small curation projects directly in a store (shared by the curation storage tests)."""

from __future__ import annotations

from dataclasses import dataclass, field

from geographiclib.geodesic import Geodesic

from storage import Store
from storage.models import (
    AlmRun,
    Annotator,
    CategoryLabel,
    CategoryPolarity,
    Clip,
    ClipLabel,
    ClipQuality,
    Dataset,
    JudgeRun,
    Judgment,
    Prediction,
    Tag,
    TaggerRun,
)

SPEECH, BIRD = "/m/09x0r", "/m/015p6"
JUDGES = ("judge-a", "judge-b", "judge-c")
OTHER_CATEGORY_COLUMNS = (
    "animal", "music", "natural_sounds", "channel", "environment_and_background", "sounds_of_things",
    "source_ambiguous_sounds",
)


@dataclass
class ClipSpec:
    key: str
    error_km: float
    scores: dict[str, int]
    latitude: float = 48.0
    longitude: float = 11.0
    continent: str = "Europe"
    country: str = "Germany"
    city: str = "Munich"
    human_sounds: float = 0.0
    tags: dict[str, float] = field(default_factory=dict)


def point_at(latitude: float, longitude: float, distance_km: float) -> tuple[float, float]:
    """A point ``distance_km`` due east-north-east of the given one (the geodesic error is exact)."""
    hit = Geodesic.WGS84.Direct(latitude, longitude, 60.0, distance_km * 1000.0)
    return hit["lat2"], hit["lon2"]


def build_project(store: Store, specs: list[ClipSpec], *, with_tags: bool = False) -> dict[str, int]:
    """Dataset, clips, one ALM run with predictions, three judges, optional tags; returns key → clip id."""
    ids: dict[str, int] = {}
    with store.write() as s:
        dataset = Dataset(name="test-agl1k")
        s.add(dataset)
        s.flush()
        alm = AlmRun(model="alm-x")
        s.add(alm)
        s.flush()
        judge_runs = [
            JudgeRun(judge_name=name, provider="offline", model_id=name, prompt_version="v1", alm_run_id=alm.id,
                     status="done")
            for name in JUDGES
        ]
        s.add_all(judge_runs)
        tagger = TaggerRun(model_name="mn10_as", status="done") if with_tags else None
        if tagger is not None:
            s.add(tagger)
        s.flush()
        for spec in specs:
            clip = Clip(
                dataset_id=dataset.id, key=spec.key, short_key=spec.key[-3:], latitude=spec.latitude,
                longitude=spec.longitude, continent=spec.continent, country=spec.country, city=spec.city,
                human_sounds=spec.human_sounds, mp3name=f"{spec.key}.mp3", mp3seconds=60.0,
                **{column: 0.0 for column in OTHER_CATEGORY_COLUMNS},
            )
            s.add(clip)
            s.flush()
            ids[spec.key] = int(clip.id)
            if spec.error_km >= 10_000:
                predicted = ("Unknown", "Unknown")
            else:
                lat, lon = point_at(spec.latitude, spec.longitude, spec.error_km)
                predicted = (repr(lat), repr(lon))
            s.add(
                Prediction(
                    alm_run_id=alm.id, clip_id=clip.id, question_id=spec.key, true_latitude=spec.latitude,
                    true_longitude=spec.longitude, predicted_latitude=predicted[0], predicted_longitude=predicted[1],
                )
            )
            for category, score in spec.scores.items():
                for run in judge_runs:
                    s.add(Judgment(judge_run_id=run.id, clip_id=clip.id, category_id=category, contribution=score))
            for index, (category, probability) in enumerate(spec.tags.items()):
                assert tagger is not None
                s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=index, audioset_id=category,
                          probability=probability))
    return ids


def add_annotator(store: Store, name: str, role: str = "expert") -> int:
    with store.write() as s:
        row = Annotator(name=name, role=role, pseudonym=f"p-{name}")
        s.add(row)
        s.flush()
        return int(row.id)


def set_polarity(store: Store, annotator: int, category: str, polarity: str) -> None:
    with store.write() as s:
        s.add(CategoryPolarity(annotator_id=annotator, category_id=category, polarity=polarity))


def set_category_label(store: Store, annotator: int, clip: int, category: str, **values: object) -> None:
    with store.write() as s:
        s.add(CategoryLabel(annotator_id=annotator, clip_id=clip, category_id=category, **values))


def set_clip_label(store: Store, annotator: int, clip: int, **values: object) -> None:
    with store.write() as s:
        s.add(ClipLabel(annotator_id=annotator, clip_id=clip, **values))


def set_quality(store: Store, clip: int, **values: float) -> None:
    with store.write() as s:
        s.add(ClipQuality(clip_id=clip, **values))


WORKED_EXAMPLE = [
    ClipSpec("clip_A", 100.0, {SPEECH: 3, BIRD: 0}),
    ClipSpec("clip_B", 5000.0, {SPEECH: 1, BIRD: 3}),
    ClipSpec("clip_C", 300.0, {SPEECH: 2, BIRD: 1}),
]
