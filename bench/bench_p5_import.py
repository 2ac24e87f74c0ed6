"""P5: import the AGL1K CSV plus 16 ALM result files of 1,444 records into a fresh SQLite store.

Target (quality-bar.md): <= 5 s in total. The 16 result files are generated from the CSV with
synthetic predictions (jittered coordinates, some refusals) in a temporary folder.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from storage import open_store  # noqa: E402
from workbench.importing import import_dataset, import_predictions  # noqa: E402
from workbench.importing.agl1k import read_agl1k_csv  # noqa: E402

SHARED = ROOT.parent / "shared"
CSV = SHARED / "data" / "agl1k" / "geoLocalization_schema.csv"
N_MODELS = 16
TARGET_S = 5.0


def write_result_files(folder: Path) -> list[Path]:
    table = read_agl1k_csv(CSV)
    rng = random.Random(42)
    paths = []
    for m in range(N_MODELS):
        path = folder / f"model{m:02d}_seed_42_ABCD.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for row in table.rows:
                refused = rng.random() < 0.03
                record = {
                    "question": "Listen and locate the recording.",
                    "task_id": "audio_localization",
                    "question_id": row["key"],
                    "true_city": row["city"],
                    "true_country": row["country"],
                    "true_continent": row["continent"],
                    "true_longitude": row["longitude"],
                    "true_latitude": row["latitude"],
                    "description": row["description"],
                    "title": row["title"],
                    "predicted_city": "Unknown" if refused else row["city"],
                    "predicted_country": row["country"],
                    "predicted_continent": row["continent"],
                    "predicted_longitude": "Unknown" if refused else row["longitude"] + rng.gauss(0, 5),
                    "predicted_latitude": "Unknown" if refused else max(-90, min(90, row["latitude"] + rng.gauss(0, 5))),
                    "reasoning": "Church bells at 0:42 and a tram at 1:08 suggest a European city. " * 8,
                    "model_output": "{}",
                    "seed": 42,
                }
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        paths.append(path)
    return paths


def main() -> int:
    if not CSV.is_file():
        print(f"skip: {CSV} is absent (the shared reference material is needed)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = write_result_files(folder)
        store = open_store(folder / "bench.sqlite")
        try:
            start = time.perf_counter()
            import_dataset(store, CSV, name="agl1k")
            dataset_s = time.perf_counter() - start
            for index, path in enumerate(files):
                import_predictions(store, f"model{index:02d}", path)
            total_s = time.perf_counter() - start
        finally:
            store.dispose()
    records = N_MODELS * 1444
    print(f"P5 dataset CSV (1,444 clips): {dataset_s:.2f} s")
    print(f"P5 {N_MODELS} result files ({records:,} records): {total_s - dataset_s:.2f} s "
          f"({records / (total_s - dataset_s):,.0f} records/s)")
    print(f"P5 total: {total_s:.2f} s (target <= {TARGET_S:.0f} s; ratio {total_s / TARGET_S:.2f} of budget)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
