"""P6: curation model refit (targets: ≤ 0.5 s for 1,444 clips; ≤ 10 s for 100,000 clips × 10 categories).

Measures the pure fit (consensus → a/ā → localizability → percentiles) and,
for 1,444 clips, the full service path that first gathers every input from a
SQLite project (clips, predictions, 3 judges × 8 categories, tags, labels),
both as a preview and as a stored run. Synthetic data, fixed seed.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage import open_store  # noqa: E402
from storage.models import AlmRun, Clip, Dataset, JudgeRun, Judgment, Prediction, Tag, TaggerRun  # noqa: E402
from workbench.curation import model, service  # noqa: E402
from workbench.curation.inputs import gather_inputs  # noqa: E402
from workbench.curation.model import FitParameters  # noqa: E402

SEED = 6


def synthetic_judgments(n_clips: int, n_categories: int, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.Series]:
    clips = np.repeat(np.arange(n_clips), n_categories * 3)
    categories = np.tile(np.repeat(np.arange(n_categories), 3), n_clips)
    judges = np.tile(np.arange(3), n_clips * n_categories)
    scores = rng.integers(0, 4, size=len(clips))
    frame = pd.DataFrame(
        {"clip": clips, "category": [f"/m/c{c}" for c in categories], "judge": judges, "score": scores}
    )
    errors = pd.Series(rng.exponential(2500.0, size=n_clips), index=np.arange(n_clips))
    return frame, errors


def pure_fit(judges: pd.DataFrame, errors: pd.Series, params: FitParameters) -> pd.Series:
    x = model.consensus_contributions(judges)
    frame = x.assign(error_km=x["clip"].map(errors).to_numpy(dtype=float))
    categories = model.fit_categories(frame, params)
    scores = model.localizability(frame, categories, errors.index)
    model.percentiles(scores)
    return scores


def timed(function, repeats: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def populate(store, n_clips: int, n_categories: int, rng: np.random.Generator) -> None:  # type: ignore[no-untyped-def]
    with store.write() as s:
        dataset = Dataset(name="bench")
        alm = AlmRun(model="bench-alm")
        tagger = TaggerRun(model_name="mn10_as", status="done")
        s.add_all([dataset, alm, tagger])
        s.flush()
        runs = [JudgeRun(judge_name=f"j{i}", provider="offline", model_id="m", prompt_version="v1",
                         alm_run_id=alm.id, status="done") for i in range(3)]
        s.add_all(runs)
        s.flush()
        lat = rng.uniform(-60, 70, n_clips)
        lon = rng.uniform(-180, 180, n_clips)
        s.execute(insert(Clip), [
            {"id": i + 1, "dataset_id": dataset.id, "key": f"k{i:05d}", "latitude": float(lat[i]),
             "longitude": float(lon[i]), "continent": ["Europe", "Asia", "Africa"][i % 3],
             "human_sounds": float(i % 2)} for i in range(n_clips)
        ])
        s.execute(insert(Prediction), [
            {"alm_run_id": alm.id, "clip_id": i + 1, "question_id": f"k{i:05d}",
             "predicted_latitude": f"{np.clip(lat[i] + rng.normal(0, 10), -90, 90):.4f}",
             "predicted_longitude": f"{lon[i] + rng.normal(0, 10):.4f}"} for i in range(n_clips)
        ])
        s.execute(insert(Judgment), [
            {"judge_run_id": run.id, "clip_id": i + 1, "category_id": f"/m/c{c}",
             "contribution": int(rng.integers(0, 4)), "status": "ok"}
            for i in range(n_clips) for c in range(n_categories) for run in runs
        ])
        s.execute(insert(Tag), [
            {"tagger_run_id": tagger.id, "clip_id": i + 1, "class_index": c, "audioset_id": f"/m/c{c}",
             "probability": float(rng.uniform(0.1, 1.0))}
            for i in range(n_clips) for c in range(n_categories)
        ])


def main() -> int:
    rng = np.random.default_rng(SEED)
    params = FitParameters()
    small, small_errors = synthetic_judgments(1444, 8, rng)
    large, large_errors = synthetic_judgments(100_000, 10, rng)
    pure_small = timed(lambda: pure_fit(small, small_errors, params), 5)
    pure_large = timed(lambda: pure_fit(large, large_errors, params), 2)
    print(f"P6 pure fit, 1,444 clips x 8 categories x 3 judges: {pure_small:.3f} s (target <= 0.5 s)")
    print(f"P6 pure fit, 100,000 clips x 10 categories x 3 judges: {pure_large:.3f} s (target <= 10 s)")

    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "bench.sqlite")
        try:
            populate(store, 1444, 8, rng)
            cold = timed(lambda: gather_inputs(store), 1)
            gather = timed(lambda: gather_inputs(store), 3)
            preview = timed(lambda: service.fit(store, params, preview=True), 3)
            stored = timed(lambda: service.fit(store, params), 3)
        finally:
            store.dispose()
    print(f"P6 service, 1,444 clips from SQLite: first gather in a process (computes 1,444 geodesic errors) "
          f"{cold:.3f} s")
    print(f"P6 service, 1,444 clips from SQLite: gather inputs {gather:.3f} s; preview fit {preview:.3f} s; "
          f"stored fit (with diff) {stored:.3f} s (target <= 0.5 s)")
    print(f"    pure share of the preview: {pure_small / preview:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
