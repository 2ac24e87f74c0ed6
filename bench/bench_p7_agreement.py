"""P7: full agreement export for 1,444 clips × 8 categories × 4 raters, B = 2,000 (target ≤ 30 s).

Synthetic in-memory ratings (three judges and one expert rating contribution and effect on
every unit), derived raters added, then the coefficients with their cluster bootstrap and the
whole bundle (tables, figures, manifest) are written to a temporary folder.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.agreement.analysis import compute_coefficients  # noqa: E402
from workbench.agreement.report import write_bundle  # noqa: E402
from workbench.agreement.units import RATING_COLUMNS, RatingData, add_derived_raters  # noqa: E402

N_CLIPS, N_CATEGORIES, B = 1444, 8, 2000
RATERS = [("judge:a", "judge"), ("judge:b", "judge"), ("judge:c", "judge"), ("expert:annotator-1", "expert")]
EFFECTS = np.array(["helped", "misled", "neutral"])
CONTINENTS = ["Africa", "Asia", "Europe", "North America", "Oceania", "South America"]


def synthetic() -> RatingData:
    rng = np.random.default_rng(7)
    categories = [f"/m/cat{i}" for i in range(N_CATEGORIES)]
    clip_ids = np.repeat(np.arange(1, N_CLIPS + 1), N_CATEGORIES)
    category_ids = np.tile(categories, N_CLIPS)
    truth = rng.integers(0, 4, clip_ids.size)
    frames = []
    for rater, kind in RATERS:
        contribution = np.clip(truth + rng.integers(-1, 2, truth.size), 0, 3)
        effect = EFFECTS[np.where(rng.random(truth.size) < 0.7, truth % 3, rng.integers(0, 3, truth.size))]
        keys = np.char.add("clip-", clip_ids.astype(str))
        units = np.char.add(np.char.add(keys, "|"), category_ids)
        for label, values in (("contribution", contribution), ("effect", effect)):
            frames.append(pd.DataFrame({"clip_id": clip_ids, "clip_key": keys, "category_id": category_ids,
                                        "unit": units, "rater": rater, "rater_kind": kind, "label": label,
                                        "value": values.astype(object)}))
    ratings = add_derived_raters(pd.concat(frames, ignore_index=True)[RATING_COLUMNS])
    clips = pd.DataFrame({"clip_id": np.arange(1, N_CLIPS + 1), "clip_key": [f"clip-{i}" for i in range(1, N_CLIPS + 1)],
                          "continent": rng.choice(CONTINENTS, N_CLIPS), "speech": rng.random(N_CLIPS) < 0.4})
    return RatingData(ratings=ratings, retest=pd.DataFrame(columns=RATING_COLUMNS + ["judge_run_id"]), clips=clips)


def main() -> int:
    data = synthetic()
    roots = {f"/m/cat{i}": ["Human sounds", "Animal", "Music", "Natural sounds"][i % 4] for i in range(N_CATEGORIES)}
    start = time.perf_counter()
    coefficients = compute_coefficients(data.ratings, data.clips, category_roots=roots, bootstrap=0, seed=0)
    no_bootstrap = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        coefficients = compute_coefficients(data.ratings, data.clips, category_roots=roots, bootstrap=B, seed=0)
        computed = time.perf_counter() - start
        write_bundle(Path(tmp), data, coefficients, bootstrap=B, seed=0, reveal_annotators=False, root_breakdown=True)
        total = time.perf_counter() - start
    print(f"P7 agreement export: {N_CLIPS} clips x {N_CATEGORIES} categories x {len(RATERS)} raters, B = {B}")
    print(f"  ratings rows (with derived raters): {len(data.ratings)}; coefficient rows: {len(coefficients)}")
    print(f"  point estimates only (B = 0):      {no_bootstrap:6.2f} s")
    print(f"  coefficients + bootstrap:          {computed:6.2f} s  ({computed / no_bootstrap:.1f}x the B = 0 run)")
    print(f"  full export incl. files, figures:  {total:6.2f} s  (target <= 30 s: {'met' if total <= 30 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
