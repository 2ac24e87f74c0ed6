"""A small project for the studies' tests: 40 clips × 3 categories, 4 experts, 3 judges (one re-run),
an ALM with right and wrong answers, and a stored curation fit."""

from __future__ import annotations

import numpy as np

from storage.models import AlmRun, Annotator, CategoryLabel, Clip, Dataset, JudgeRun, Judgment, Prediction

CATEGORIES = ["/m/09x0r", "/m/04rlf", "/m/0jbk"]
EFFECTS = ["helped", "misled", "neutral"]
N_CLIPS = 40
EXPERTS = ("ada", "bea", "cyd", "dov")
JUDGES = ("opus", "sonnet", "haiku")
ALM = "alm-x"


def thin_project(db, *, model: str = "alm", expert: bool = True) -> None:  # type: ignore[no-untyped-def]
    """A project too thin for any study or fit: three clips with one ALM answer each, no tag, no
    judge, and (``expert``) one expert's contribution label per clip."""
    from storage import open_store

    store = open_store(db)
    with store.write() as s:
        dataset, alm = Dataset(name="d"), AlmRun(model=model)
        annotator = Annotator(name="ada", pseudonym="annotator-1") if expert else None
        s.add_all([dataset, alm, *([annotator] if annotator else [])])
        s.flush()
        for i in range(3):
            clip = Clip(dataset_id=dataset.id, key=f"k{i}", latitude=1.0, longitude=2.0)
            s.add(clip)
            s.flush()
            s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id=clip.key, predicted_latitude="1",
                             predicted_longitude="2"))
            if annotator is not None:
                s.add(CategoryLabel(annotator_id=annotator.id, clip_id=clip.id, category_id="/m/09x0r",
                                    contribution=2))
    store.dispose()


def populate(store) -> None:  # type: ignore[no-untyped-def]
    """Write the project and store one curation fit."""
    from workbench.curation import service
    from workbench.curation.model import FitParameters

    rng = np.random.default_rng(18)
    with store.write() as s:
        dataset = Dataset(name="studies-test")
        alm = AlmRun(model=ALM)
        s.add_all([dataset, alm])
        s.flush()
        lat = rng.uniform(-50, 60, N_CLIPS)
        lon = rng.uniform(-150, 150, N_CLIPS)
        clips = [Clip(dataset_id=dataset.id, key=f"clip{i:03d}", continent=["Europe", "Asia", "Africa"][i % 3],
                      human_sounds=0.3 if i % 2 else 0.0, latitude=float(lat[i]), longitude=float(lon[i]))
                 for i in range(N_CLIPS)]
        s.add_all(clips)
        s.flush()
        for i, clip in enumerate(clips):
            wrong = i % 4 == 0  # every fourth answer is far off, every tenth a refusal
            refused = i % 10 == 5
            p_lat = "Unknown" if refused else f"{np.clip(lat[i] + (40 if wrong else 0.5), -89, 89):.4f}"
            p_lon = "Unknown" if refused else f"{lon[i] + (60 if wrong else 0.5):.4f}"
            s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id=clip.key, true_latitude=float(lat[i]),
                             true_longitude=float(lon[i]), predicted_latitude=p_lat, predicted_longitude=p_lon,
                             predicted_city="Somewhere", predicted_country="Elsewhere",
                             reasoning=f"I hear birds and a Swedish announcement in clip {i}; perhaps Finland."))
        experts = [Annotator(name=n, pseudonym=f"annotator-{k:04x}") for k, n in enumerate(EXPERTS)]
        s.add_all(experts)
        runs = [JudgeRun(judge_name=j, provider="test", model_id=j, prompt_version="v1", alm_run_id=alm.id,
                         status="done") for j in JUDGES]
        s.add_all(runs)
        s.flush()
        rerun = JudgeRun(judge_name="opus", provider="test", model_id="opus", prompt_version="v1", alm_run_id=alm.id,
                         status="done")
        s.add(rerun)
        s.flush()
        truth = {(c.id, cat): int(rng.integers(0, 4)) for c in clips for cat in CATEGORIES}
        for run, noise in zip(runs + [rerun], (0.2, 0.5, 0.7, 0.2)):
            for (clip_id, cat), value in truth.items():
                noisy = int(np.clip(value + (rng.integers(-1, 2) if rng.random() < noise else 0), 0, 3))
                s.add(Judgment(judge_run_id=run.id, clip_id=clip_id, category_id=cat, contribution=noisy,
                               effect=EFFECTS[noisy % 3], status="ok"))
        for k, expert in enumerate(experts):
            labelled = clips if k < 2 else clips[: 3 * N_CLIPS // 4]
            noise = (0.1, 0.3, 0.6, 0.8)[k]
            for clip in labelled:
                for cat in CATEGORIES:
                    value = int(np.clip(truth[(clip.id, cat)] + (rng.integers(-1, 2) if rng.random() < noise else 0),
                                        0, 3))
                    s.add(CategoryLabel(annotator_id=expert.id, clip_id=clip.id, category_id=cat, contribution=value,
                                        effect=EFFECTS[value % 3]))
    service.fit(store, FitParameters(n_min=1))


def link_audio(store, folder, keys) -> None:  # type: ignore[no-untyped-def]
    """Give the clips ``keys`` a recording (an empty file under a media root in ``folder``)."""
    from pathlib import Path

    from sqlmodel import select

    from storage.models import MediaRoot

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with store.write() as s:
        dataset_id = s.exec(select(Dataset.id)).first()
        s.add(MediaRoot(dataset_id=dataset_id, path=str(folder)))
        for clip in s.exec(select(Clip).where(Clip.key.in_(list(keys)))).all():  # type: ignore[attr-defined]
            (folder / f"{clip.key}.wav").write_bytes(b"RIFF")
            clip.audio_path = f"{clip.key}.wav"
            s.add(clip)
