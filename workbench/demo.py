"""A demo project, generated offline: synthetic clips and clearly marked demo analyses.

Everything written here is DEMO data: clips, ALM run, tagger run and judge runs carry
``is_demo = True`` and "DEMO" in their names or titles, so no demo value can be
mistaken for a measurement. The audio covers the four channel layouts the workbench
shows (mono, stereo, binaural and first-order Ambisonics with a source circling the
listener). Tags, ALM reasoning and judgments are deterministic functions of a seed.

The spatial encodings come from :mod:`workbench.audio.synth` (the test-signal recipes of
spatial.md: an ambiX plane wave circling the listener over a diffuse field, a binaural
source moving with a Woodworth ITD); the sound sources themselves (voices, bells, surf,
gulls, an engine) are small generators here. The demo needs nothing from the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf
from sqlmodel import select

from storage import Store, open_store
from storage.models import (
    AlmRun,
    Clip,
    ClipQuality,
    CurationCategoryResult,
    CurationClipResult,
    CurationRun,
    Dataset,
    JudgeRun,
    Judgment,
    MediaRoot,
    Prediction,
    Tag,
    TaggerRun,
    TagTimeline,
    utcnow,
)
from workbench.audio import synth
from workbench.audio.layout import detect_layout
from workbench.audio.loader import content_hash
from workbench.audio.quality import quality_metrics
from workbench.curation.model import (
    FitParameters,
    consensus_contributions,
    fit_categories,
    localizability,
    percentiles,
    quality_flags,
)
from workbench.errors import InputError
from workbench.metrics.distance import answer_distance_km

DEMO_DATASET = "DEMO dataset (synthetic)"
DEMO_ALM = "DEMO-ALM (synthetic reasoning)"
DEMO_TAGGER = "DEMO tagger (synthetic tags)"
DEMO_JUDGES = ("DEMO judge A", "DEMO judge B", "DEMO judge C")
SAMPLE_RATE = 16_000
DURATION_S = 12.0

# (AudioSet id, class index in class_labels_indices.csv, name, ontology root)
CATEGORIES: dict[str, tuple[int, str, str]] = {
    "/m/09x0r": (0, "Speech", "Human sounds"),
    "/m/07pbtc8": (53, "Walk, footsteps", "Human sounds"),
    "/m/015p6": (111, "Bird", "Animal"),
    "/m/04rlf": (137, "Music", "Music"),
    "/m/03w41f": (201, "Church bell", "Sounds of things"),
    "/m/03m9d0z": (283, "Wind", "Natural sounds"),
    "/m/05kq4": (294, "Ocean", "Natural sounds"),
    "/m/07yv9": (300, "Vehicle", "Sounds of things"),
}

@dataclass(frozen=True)
class DemoClipSpec:
    key: str
    title: str
    description: str
    layout: str
    city: str
    country: str
    continent: str
    latitude: float
    longitude: float
    human_sounds: float
    predicted: tuple[str, str, str, float, float]  # city, country, continent, lat, lon
    reasoning: str
    tags: dict[str, float]


def _category_columns(spec: DemoClipSpec) -> dict[str, float]:
    """The AGL1K category columns of a demo clip: each root's strongest demo tag (0 when none),
    human sounds as written; so a demo selection exports as a complete AGL1K table."""
    from workbench.tagging.ontology import AGL1K_CATEGORY_ROOTS

    columns = {}
    for column, root in AGL1K_CATEGORY_ROOTS.items():
        values = [p for category_id, p in spec.tags.items() if CATEGORIES[category_id][2] == root]
        columns[column] = round(max(values, default=0.0), 3)
    columns["human_sounds"] = spec.human_sounds
    return columns


DEMO_DB_NAME = "demo.sqlite"

DEMO_CLIPS: tuple[DemoClipSpec, ...] = (
    DemoClipSpec(
        key="DEMO-0001",
        title="DEMO: market square with church bell (mono)",
        description="DEMO synthetic mono recording.<br />Voices, footsteps and a church bell at 0:04.",
        layout="mono",
        city="Kraków", country="Poland", continent="Europe", latitude=50.0617, longitude=19.9373,
        human_sounds=0.6,
        predicted=("Prague", "Czech Republic", "Europe", 50.0755, 14.4378),
        reasoning=(
            "DEMO reasoning. Speech is audible from the start; a church bell strikes at 0:04 and again "
            "around 0:09, typical of a Central European old town. Footsteps on cobblestones at 0:02. "
            "The language cannot be made out, so I guess Prague."
        ),
        tags={"/m/09x0r": 0.72, "/m/03w41f": 0.55, "/m/07pbtc8": 0.31, "/m/07yv9": 0.08},
    ),
    DemoClipSpec(
        key="DEMO-0002",
        title="DEMO: surf and gulls (stereo)",
        description="DEMO synthetic stereo recording of surf, with gulls at 0:03 and 0:08.",
        layout="stereo",
        city="Porto", country="Portugal", continent="Europe", latitude=41.1579, longitude=-8.6291,
        human_sounds=0.0,
        predicted=("Cornwall", "United Kingdom", "Europe", 50.2660, -5.0527),
        reasoning=(
            "DEMO reasoning. Continuous surf suggests an Atlantic coast. Gull calls at 0:03 and 0:08 are "
            "consistent with a harbour. No speech. Wind noise after 0:10. I guess Cornwall."
        ),
        tags={"/m/05kq4": 0.81, "/m/015p6": 0.47, "/m/03m9d0z": 0.22},
    ),
    DemoClipSpec(
        key="DEMO-0003",
        title="DEMO: vehicle passing left to right (binaural)",
        description="DEMO synthetic binaural (dummy head) recording: a vehicle passes from left to right.",
        layout="binaural",
        city="Osaka", country="Japan", continent="Asia", latitude=34.6937, longitude=135.5023,
        human_sounds=0.2,
        predicted=("Tokyo", "Japan", "Asia", 35.6762, 139.6503),
        reasoning=(
            "DEMO reasoning. A vehicle passes from left to right between 0:02 and 0:10; a short melody "
            "at 0:05 resembles a Japanese pedestrian-crossing signal. Speech at 0:11 is unclear. "
            "I guess Tokyo."
        ),
        tags={"/m/07yv9": 0.76, "/m/04rlf": 0.35, "/m/09x0r": 0.18},
    ),
    DemoClipSpec(
        key="DEMO-0004",
        title="DEMO: birds and a source circling the listener (FOA ambiX)",
        description="DEMO synthetic first-order Ambisonics (ambiX) recording: a bird circles the listener.",
        layout="ambix",
        city="Manaus", country="Brazil", continent="South America", latitude=-3.1190, longitude=-60.0217,
        human_sounds=0.0,
        predicted=("Nairobi", "Kenya", "Africa", -1.2921, 36.8219),
        reasoning=(
            "DEMO reasoning. Dense bird song throughout, a call circling the listener from 0:00 to 0:12. "
            "Wind at 0:06. Tropical forest, I guess East Africa."
        ),
        tags={"/m/015p6": 0.88, "/m/03m9d0z": 0.27, "/m/04rlf": 0.05},
    ),
)


@dataclass(frozen=True)
class DemoSummary:
    """What :func:`create_demo_project` wrote."""

    db_path: Path
    media_root: Path
    clip_keys: tuple[str, ...]
    layouts: tuple[str, ...]
    judges: tuple[str, ...]
    curation_run_id: int


# --------------------------------------------------------------------------- audio


def _bursts(rng: np.random.Generator, n: int, sr: int, times_s: list[float], freq: float, length_s: float) -> np.ndarray:
    out = np.zeros(n, dtype=np.float64)
    t = np.arange(int(length_s * sr)) / sr
    envelope = np.exp(-t * 6.0)
    partials = sum(np.sin(2 * np.pi * freq * k * t) / k for k in (1, 2.76, 5.4))
    for start in times_s:
        i = int(start * sr)
        piece = (envelope * partials)[: max(0, n - i)]
        out[i : i + len(piece)] += piece
    return out


def _chirps(rng: np.random.Generator, n: int, sr: int, times_s: list[float]) -> np.ndarray:
    out = np.zeros(n, dtype=np.float64)
    length = int(0.25 * sr)
    t = np.arange(length) / sr
    for start in times_s:
        sweep = np.sin(2 * np.pi * (3000 * t + 4000 * t**2)) * np.hanning(length)
        i = int(start * sr)
        piece = sweep[: max(0, n - i)]
        out[i : i + len(piece)] += piece
    return out


def _babble(rng: np.random.Generator, n: int, sr: int) -> np.ndarray:
    t = np.arange(n) / sr
    pitch = 140 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / sr
    voiced = sum(np.sin(k * phase) / k for k in range(1, 8))
    syllables = (np.sin(2 * np.pi * 4.0 * t) > 0.2).astype(float)
    return voiced * syllables * 0.3


def _noise(rng: np.random.Generator, n: int, lowpass_hz: float, sr: int) -> np.ndarray:
    from scipy.signal import butter, sosfilt

    sos = butter(4, lowpass_hz, btype="low", fs=sr, output="sos")
    return sosfilt(sos, rng.standard_normal(n))


def synthesize_demo_audio(spec: DemoClipSpec, seed: int, sr: int = SAMPLE_RATE, duration_s: float = DURATION_S) -> np.ndarray:
    """The demo recording of one clip, float32 shaped (frames, channels).

    Parameters
    ----------
    spec
        Which demo clip (its ``layout`` decides the channel count and encoding).
    seed
        Seed of the noise generators.
    """
    rng = np.random.default_rng(seed)
    n = int(sr * duration_s)
    t = np.arange(n) / sr
    if spec.layout == "mono":
        signal = _babble(rng, n, sr) + 0.5 * _bursts(rng, n, sr, [4.0, 9.0], 440.0, 2.5)
        signal += 0.2 * _bursts(rng, n, sr, [2.0, 2.5, 3.0, 3.5], 900.0, 0.05)
        signal += synth.white_noise(n, rng, rms=0.02)
        channels = [signal]
    elif spec.layout == "stereo":
        surf = _noise(rng, n, 1200.0, sr) * (0.6 + 0.4 * np.sin(2 * np.pi * 0.12 * t))
        gulls = 0.4 * _chirps(rng, n, sr, [3.0, 3.4, 8.0])
        channels = [surf + 0.8 * gulls, 0.8 * surf + gulls + 0.1 * _noise(rng, n, 600.0, sr)]
    elif spec.layout == "binaural":
        engine = _noise(rng, n, 900.0, sr) + 0.3 * np.sin(2 * np.pi * 90 * t)
        engine *= np.exp(-(((t - 6.0) / 3.0) ** 2)) + 0.1
        melody = 0.3 * _bursts(rng, n, sr, [5.0, 5.3, 5.6], 880.0, 0.25)
        # From the left (+75°) at the start to the right (−75°) at the end.
        passing = synth.moving_woodworth_binaural(engine, sr, np.interp(t, [0, duration_s], [75.0, -75.0]))
        channels = [passing[:, 0] + melody, passing[:, 1] + melody]
    elif spec.layout == "ambix":
        bird = _noise(rng, n, 6000.0, sr) * 0.3 + _chirps(rng, n, sr, list(np.arange(0.2, duration_s - 0.3, 0.6)))
        # One full turn counter-clockwise from the front over the clip, over a diffuse wind.
        foa = synth.moving_source(bird, sr, degrees_per_second=360.0 / duration_s) + synth.diffuse_noise(n, rng, rms=0.05)
        channels = list(foa.T)
    else:
        raise ValueError(f"no demo generator for layout {spec.layout!r}")
    audio = np.stack(channels, axis=1)
    audio *= 0.5 / max(float(np.max(np.abs(audio))), 1e-9)
    return audio.astype(np.float32)


# --------------------------------------------------------------------------- project


def _judge_score(rng: np.random.Generator, probability: float, judge_index: int) -> int:
    base = 3.0 * probability + (judge_index - 1) * 0.6 * rng.standard_normal()
    return int(np.clip(round(base), 0, 3))


def _effect(score: int, error_km: float) -> str:
    if score == 0:
        return "neutral"
    return "helped" if error_km < 1000 else "misled"


def create_demo_project(directory: str | Path, *, seed: int = 7, overwrite: bool = False) -> DemoSummary:
    """Write a demo project (``demo.sqlite`` plus ``media/``) into ``directory``.

    Parameters
    ----------
    directory
        Where to write; created if needed.
    seed
        Seed of every random choice (audio noise, judge scores).
    overwrite
        Replace an existing demo project in that directory.

    Returns
    -------
    DemoSummary
        Paths and what was written.

    Raises
    ------
    InputError
        If the directory already holds a project and ``overwrite`` is false.
    """
    directory = Path(directory).expanduser().resolve()
    db_path = directory / DEMO_DB_NAME
    media = directory / "media"
    if db_path.exists():
        if not overwrite:
            raise InputError(f"{db_path} already exists; open it with `aglw --db {db_path} gui` or pass --overwrite")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    media.mkdir(parents=True, exist_ok=True)

    audio_info: dict[str, dict] = {}
    for index, spec in enumerate(DEMO_CLIPS):
        audio = synthesize_demo_audio(spec, seed + index)
        path = media / f"{spec.key}.wav"
        sf.write(path, audio, SAMPLE_RATE, subtype="PCM_16")
        metrics = quality_metrics(audio, SAMPLE_RATE)
        audio_info[spec.key] = {
            "path": path.name,
            "channels": audio.shape[1],
            "hash": content_hash(path),
            "quality": metrics,
            "layout": detect_layout(audio.shape[1], spec.description),
        }

    store = open_store(db_path)
    try:
        # n_min = 1: four demo clips could never reach the default support of 5.
        curation_run_id = _write_project(store, media, audio_info, seed, FitParameters(n_min=1))
        _write_demo_events(store, directory)
    finally:
        store.dispose()
    return DemoSummary(
        db_path=db_path,
        media_root=media,
        clip_keys=tuple(spec.key for spec in DEMO_CLIPS),
        layouts=tuple(audio_info[spec.key]["layout"] for spec in DEMO_CLIPS),
        judges=DEMO_JUDGES,
        curation_run_id=curation_run_id,
    )


# The FOA demo clip's bird circles once in DURATION_S from the front (counter-clockwise); a DEMO
# expert marked four spans of it, a quarter turn apart, with the bird's track at 100 ms.
DEMO_EVENT_ANNOTATOR = "DEMO expert (synthetic events)"
# `aglw demo` opens the workbench as this annotator: events are per annotator, so the demo's
# expert is the one whose events are on DEMO-0004 (opened as anyone else, the dock is empty).
DEMO_ANNOTATOR = DEMO_EVENT_ANNOTATOR
DEMO_EVENT_CLASSES = ("Bird",)
DEMO_EVENT_SPANS_S = ((0.5, 2.5), (3.5, 5.5), (6.5, 8.5), (9.5, 11.5))


def _write_demo_events(store: Store, directory: Path) -> None:
    """Sound events on the FOA demo clip (and ``demo_classes.txt``, the class list to export them with)."""
    from workbench.events.model import SpatialEventData
    from workbench.events.service import EventService
    from workbench.clip_ids import clip_id_for_key
    from workbench.labels import LabelService

    (directory / "demo_classes.txt").write_text("".join(c + "\n" for c in DEMO_EVENT_CLASSES), encoding="utf-8")
    clip_id = clip_id_for_key(store, next(spec.key for spec in DEMO_CLIPS if spec.layout == "ambix"))
    annotator = LabelService(store).ensure_annotator(DEMO_EVENT_ANNOTATOR)
    events = []
    for onset, offset in DEMO_EVENT_SPANS_S:
        centres = np.arange(onset, offset - 1e-9, 0.1) + 0.05
        azimuths = synth.moving_source_azimuth(centres, degrees_per_second=360.0 / DURATION_S)
        track = tuple((float(round(a)), 0.0) for a in azimuths)
        events.append(SpatialEventData(onset, offset, "Bird", track, vocabulary="audioset", confidence=1.0,
                                       note="DEMO event (synthetic ground truth)"))
    EventService(store).import_events(annotator.id, clip_id, events, source="demo")


def _write_project(store: Store, media: Path, audio_info: dict, seed: int, params: FitParameters) -> int:
    rng = np.random.default_rng(seed)
    with store.write() as s:
        if s.exec(select(Dataset).where(Dataset.name == DEMO_DATASET)).first() is not None:
            raise InputError("this project already holds the demo dataset")
        dataset = Dataset(name=DEMO_DATASET, format="demo", column_mapping="demo")
        s.add(dataset)
        s.flush()
        s.add(MediaRoot(dataset_id=dataset.id, path=str(media)))
        alm = AlmRun(model=DEMO_ALM, container="demo", seed=seed, is_demo=True)
        tagger = TaggerRun(
            model_name=DEMO_TAGGER,
            device="none",
            parameters={
                "demo": True,
                "tau": params.tau,
                "top_n": params.top_n,
                "class_names": {k: v[1] for k, v in CATEGORIES.items()},
                "class_roots": {k: v[2] for k, v in CATEGORIES.items()},
            },
            status="done",
            finished_at=utcnow(),
            is_demo=True,
        )
        s.add(alm)
        s.add(tagger)
        s.flush()
        judges = []
        for name in DEMO_JUDGES:
            judge = JudgeRun(
                judge_name=name, provider="demo", model_id="demo-synthetic", prompt_version="demo",
                options={"demo": True}, alm_run_id=alm.id, tagger_run_id=tagger.id, status="done",
                finished_at=utcnow(), is_demo=True,
            )
            s.add(judge)
            judges.append(judge)
        s.flush()

        clip_ids: list[int] = []
        judge_rows, error_rows, quality_rows = [], {}, []
        for spec in DEMO_CLIPS:
            info = audio_info[spec.key]
            clip = Clip(
                dataset_id=dataset.id, key=spec.key, short_key=spec.key, title=spec.title,
                description=spec.description, city=spec.city, country=spec.country, continent=spec.continent,
                latitude=spec.latitude, longitude=spec.longitude, **_category_columns(spec),
                mp3name=info["path"], mp3seconds=DURATION_S, audio_path=info["path"],
                sample_rate=SAMPLE_RATE, n_channels=info["channels"], duration_s=DURATION_S,
                layout=info["layout"], content_hash=info["hash"], is_demo=True,
            )
            s.add(clip)
            s.flush()
            clip_ids.append(clip.id)
            metrics = info["quality"]
            s.add(ClipQuality(clip_id=clip.id, rms_dbfs=metrics.rms_dbfs, spectral_flatness=metrics.spectral_flatness,
                              clipping_ratio=metrics.clipping_ratio, aci=metrics.aci, content_hash=info["hash"]))
            quality_rows.append({"clip": clip.id, "rms_dbfs": metrics.rms_dbfs,
                                 "spectral_flatness": metrics.spectral_flatness,
                                 "clipping_ratio": metrics.clipping_ratio, "aci": metrics.aci})
            p_city, p_country, p_continent, p_lat, p_lon = spec.predicted
            error_km = answer_distance_km(p_lat, p_lon, spec.latitude, spec.longitude)
            s.add(Prediction(
                alm_run_id=alm.id, clip_id=clip.id, question_id=spec.key, task_id="demo",
                true_city=spec.city, true_country=spec.country, true_continent=spec.continent,
                true_latitude=spec.latitude, true_longitude=spec.longitude,
                predicted_city=p_city, predicted_country=p_country, predicted_continent=p_continent,
                predicted_latitude=str(p_lat), predicted_longitude=str(p_lon),
                reasoning=spec.reasoning, model_output=spec.reasoning, seed=seed,
                distance_error_km=error_km,  # stored once, as the importers store it
            ))
            error_rows[clip.id] = error_km
            n_seconds = int(DURATION_S)
            for category_id, probability in spec.tags.items():
                class_index = CATEGORIES[category_id][0]
                s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=class_index,
                          audioset_id=category_id, probability=probability))
                curve = np.clip(probability + 0.25 * np.sin(np.arange(n_seconds) * (1 + class_index % 5) / 3.0), 0, 1)
                s.add(TagTimeline(tagger_run_id=tagger.id, clip_id=clip.id, class_index=class_index,
                                  audioset_id=category_id, hop_s=1.0, values=[round(float(v), 4) for v in curve]))
            for category_id, probability in spec.tags.items():
                if probability < params.tau:
                    continue
                for judge_index, judge in enumerate(judges):
                    score = _judge_score(rng, probability, judge_index)
                    name = CATEGORIES[category_id][1]
                    s.add(Judgment(
                        judge_run_id=judge.id, clip_id=clip.id, category_id=category_id, contribution=score,
                        effect=_effect(score, error_km), mentioned=score > 0,
                        evidence=f"DEMO evidence: the reasoning mentions {name.lower()}" if score > 0 else None,
                        evidence_found=score > 0, status="ok",
                    ))
                    judge_rows.append({"clip": clip.id, "category": category_id, "judge": judge.judge_name,
                                       "score": score})

        contributions = consensus_contributions(pd.DataFrame(judge_rows))
        frame = contributions.assign(error_km=contributions["clip"].map(error_rows).astype(float))
        fitted = fit_categories(frame, params)
        scores = localizability(contributions, fitted, clips=clip_ids)
        ranks = percentiles(scores)
        flags = quality_flags(pd.DataFrame(quality_rows), params)
        run = CurationRun(
            parameters={**params.to_dict(), "alm_model": alm.model, "demo": True},
            input_fingerprint="DEMO",
            alm_run_id=alm.id,
            summary={"demo": True, "note": "DEMO curation run over synthetic judgments"},
        )
        s.add(run)
        s.flush()
        for category_id, row in fitted.iterrows():
            s.add(CurationCategoryResult(
                run_id=run.id, category_id=category_id, name=CATEGORIES[category_id][1], a=float(row["a"]),
                a_bar=float(row["a_bar"]), support=int(row["support"]), fitted_polarity=str(row["fitted_polarity"]),
                polarity=str(row["polarity"]), overridden=bool(row["overridden"]),
            ))
        for clip_id in clip_ids:
            score = float(scores.loc[clip_id])
            s.add(CurationClipResult(
                run_id=run.id, clip_id=clip_id, localizability=score, percentile=float(ranks.loc[clip_id]),
                candidate=score > params.theta, quality_flags=flags.get(clip_id, []),
            ))
        s.flush()
        return int(run.id)
