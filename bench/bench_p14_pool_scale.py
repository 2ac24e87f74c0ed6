"""P14: pool-scale quality analysis — local engine vs Ray with 1 and 2 workers (issue [M]).

A folder pool of the real AGL1K example recordings (../shared/media, ~2 min stereo MP3 each),
copied N times, measured by `analyze_pool(folder=...)` (decode + the four quality metrics; the
same function on both engines). Prints clips/s and audio-seconds per wall second for each
engine, the ratio Ray/local in the same run, Ray's overhead per clip (start-up excluded and
included), and the projection for 50,000 three-minute clips on N machines of this kind.

Usage: python bench/bench_p14_pool_scale.py [COPIES]   (default 6 copies = 12 long clips)
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("AGLW_SHARED_DIR", REPO.parent / "shared"))


def main() -> int:
    copies = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    sources = sorted((SHARED / "media").glob("*.mp3"))
    if not sources:
        print(f"P14 skipped: no recordings under {SHARED / 'media'}")
        return 0
    try:
        import ray
    except ImportError:
        print("P14 skipped: Ray is not installed (pip install 'agl-workbench[scale]')")
        return 0
    from workbench.pool.engines import RayMeasuring
    from workbench.pool.service import analyze_pool

    with tempfile.TemporaryDirectory() as folder:
        pool = Path(folder) / "pool"
        pool.mkdir()
        for i in range(copies):
            for source in sources:
                shutil.copy(source, pool / f"{i:03d}_{source.name}")
        n = copies * len(sources)
        warmup = Path(folder) / "warmup"
        warmup.mkdir()
        for i in range(2):
            shutil.copy(SHARED / "media" / "efficientat_metro_station_paris.wav", warmup / f"{i}.wav")
        pool_files = [p for p in pool.glob("*.mp3")]
        assert len(pool_files) == n
        warm = analyze_pool(folder=pool, workers=1)  # page cache warm, librosa imported
        audio_s = sum(row.duration_s for row in warm.rows)
        results: dict[str, float] = {}
        start = time.perf_counter()
        local = analyze_pool(folder=pool, workers=2)
        results["local (2 threads)"] = time.perf_counter() - start
        start = time.perf_counter()
        analyze_pool(folder=pool, workers=1)
        results["local (1 thread)"] = time.perf_counter() - start
        startup: dict[int, float] = {}
        for workers in (1, 2):
            start = time.perf_counter()
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
            # Start-up: the cluster, then one small job so every worker process has imported the
            # audio stack (a long-running cluster pays this once, not per job).
            analyze_pool(folder=warmup, remote=RayMeasuring(workers=workers))
            startup[workers] = time.perf_counter() - start
            start = time.perf_counter()
            distributed = analyze_pool(folder=pool, remote=RayMeasuring(workers=workers))
            results[f"ray ({workers} worker{'s' if workers > 1 else ''})"] = time.perf_counter() - start
            ray.shutdown()
            same = sorted((r.key, r.aci, r.rms_dbfs) for r in distributed.rows) == sorted(
                (r.key, r.aci, r.rms_dbfs) for r in local.rows)
            print(f"P14 ray {workers} worker(s): rows identical to the local engine: {same}")
    print(f"P14 pool: {n} clips, {audio_s / 60:.1f} min of audio ({audio_s / n:.0f} s per clip), 2-core machine")
    for name, seconds in results.items():
        print(f"P14 {name:18s}: {seconds:6.1f} s  {n / seconds:5.2f} clips/s  {audio_s / seconds:6.1f}x real time")
    base = results["local (2 threads)"]
    for workers in (1, 2):
        key = f"ray ({workers} worker{'s' if workers > 1 else ''})"
        per_clip = results[key] / n
        print(f"P14 {key}: {results[key] / base:.2f}x the local engine's time; start-up {startup[workers]:.1f} s once; "
              f"Ray's overhead per clip (worker time per clip minus local 1-thread time per clip): "
              f"{1000 * (per_clip * workers - results['local (1 thread)'] / n):+.0f} ms")
    # Projection: one machine = this machine's 2-worker Ray rate scaled to 3-minute clips.
    rate_audio = audio_s / results["ray (2 workers)"]  # audio seconds per wall second per machine
    total_audio = 50_000 * 180.0
    for machines in (1, 4, 16):
        hours = total_audio / (rate_audio * machines) / 3600
        print(f"P14 projection: 50,000 x 3-min clips on {machines:2d} machine(s) like this one: {hours:6.1f} h "
              f"(from {rate_audio:.0f}x real time per 2-core machine, linear in machines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
