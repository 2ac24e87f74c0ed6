"""P5: import the AGL1K CSV plus ALM result files of 1,444 records into a fresh SQLite store.

Targets: 16 result files in <= 5 s in total (quality-bar.md); 50 result files in one process
peak at <= 300 MB resident (issue [I]). The result files are generated from the CSV with
synthetic predictions (jittered coordinates, some refusals) whose question, chain-of-thought
and raw model output are as long as in AGL1K's published files (~4.7 kB a record), in a
temporary folder. The peak is measured in a fresh child process that only imports, so the
generation of the files does not count.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
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
N_MODELS_PEAK = 50
TARGET_S = 5.0
TARGET_PEAK_MB = 300.0
# Lengths as in AGL1K's published result files (mean characters per record).
_QUESTION = "Listen carefully to the provided audio recording and identify where it was recorded. " * 21
_REASONING = "Church bells at 0:42 and a tram at 1:08 suggest a European city. " * 16


def write_result_files(folder: Path, n_models: int = N_MODELS) -> list[Path]:
    table = read_agl1k_csv(CSV)
    rng = random.Random(42)
    paths = []
    for m in range(n_models):
        path = folder / f"model{m:02d}_seed_42_ABCD.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for row in table.rows:
                refused = rng.random() < 0.03
                record = {
                    "question": _QUESTION,
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
                    "reasoning": _REASONING,
                    "model_output": json.dumps({"reason": _REASONING, "city": row["city"]}) + " " * 120,
                    "seed": 42,
                }
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        paths.append(path)
    return paths


def peak_child(folder: Path, pattern: str = "*.jsonl") -> None:
    """Import the dataset and every result file in ``folder`` in this process; print the peak."""
    store = open_store(folder / f"peak{len(pattern)}.sqlite")
    try:
        import_dataset(store, CSV, name="agl1k")
        start = time.perf_counter()
        files = sorted(folder.glob(pattern))
        for index, path in enumerate(files):
            import_predictions(store, f"model{index:02d}", path)
        elapsed = time.perf_counter() - start
    finally:
        store.dispose()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"files": len(files), "seconds": elapsed, "peak_mb": peak_mb}))


def measure_peak() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = write_result_files(folder, N_MODELS_PEAK)
        size_mb = sum(p.stat().st_size for p in files) / 2**20
        out = subprocess.run(
            [sys.executable, __file__, "--peak-child", str(folder)],
            check=True, capture_output=True, text=True,
        ).stdout
        # One large file (16 models' records in one file: 23,104 lines, the keys repeated, so
        # the later copies are reported as duplicates): what streaming bounds per file.
        big = folder / "all16.big"
        with big.open("wb") as handle:
            for path in files[:N_MODELS]:
                handle.write(path.read_bytes())
        big_mb = big.stat().st_size / 2**20
        out_big = subprocess.run(
            [sys.executable, __file__, "--peak-child", str(folder), "*.big"],
            check=True, capture_output=True, text=True,
        ).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    print(f"P5 peak: {figures['files']} result files ({size_mb:,.0f} MB, {figures['files'] * 1444:,} "
          f"records) in one process: peak RSS {figures['peak_mb']:,.0f} MB "
          f"(target <= {TARGET_PEAK_MB:.0f} MB), {figures['seconds']:.1f} s")
    single = json.loads(out_big.strip().splitlines()[-1])
    print(f"P5 peak: one result file of {big_mb:,.0f} MB ({N_MODELS * 1444:,} lines): peak RSS "
          f"{single['peak_mb']:,.0f} MB, {single['seconds']:.1f} s")


def main() -> int:
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--peak-child":
        peak_child(Path(sys.argv[2]), *sys.argv[3:])
        return 0
    if not CSV.is_file():
        print(f"skip: {CSV} is absent (the shared reference material is needed)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = write_result_files(folder)
        store = open_store(folder / "bench.sqlite")
        try:
            start, start_cpu = time.perf_counter(), time.process_time()
            import_dataset(store, CSV, name="agl1k")
            dataset_s = time.perf_counter() - start
            for index, path in enumerate(files):
                import_predictions(store, f"model{index:02d}", path)
            total_s = time.perf_counter() - start
            # CPU time: steadier than wall time on a busy machine (the wall time adds the
            # commits' disk syncs and whatever else runs).
            total_cpu = time.process_time() - start_cpu
        finally:
            store.dispose()
    records = N_MODELS * 1444
    print(f"P5 dataset CSV (1,444 clips): {dataset_s:.2f} s")
    print(f"P5 {N_MODELS} result files ({records:,} records): {total_s - dataset_s:.2f} s "
          f"({records / (total_s - dataset_s):,.0f} records/s)")
    print(f"P5 total: {total_s:.2f} s wall, {total_cpu:.2f} s CPU (target <= {TARGET_S:.0f} s; ratio "
          f"{total_s / TARGET_S:.2f} of budget; load average {os.getloadavg()[0]:.1f})")
    measure_peak()
    return 0


if __name__ == "__main__":
    sys.exit(main())
