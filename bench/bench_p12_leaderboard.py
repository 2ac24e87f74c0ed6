"""P12: the leaderboard of 16 models x 1,444 clips, after import.

Target (issue [I]): ``aglw leaderboard`` computes its table in <= 0.2 s once the predictions are
imported (the distance errors are stored at import; before, 73 % of the time went to
per-record geodesics). Printed: the median of 5 calls of the service behind the command
(``workbench.metrics.service.leaderboard``, default profile ``both``, ``--by continent`` and
``--by speech``), and for reference the wall time of the whole ``aglw leaderboard`` process,
whose start-up (Python, pandas, SQLAlchemy) comes on top.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_p5_import import CSV, write_result_files  # noqa: E402

from storage import open_store  # noqa: E402
from workbench.importing import import_dataset, import_predictions  # noqa: E402
from workbench.metrics.service import leaderboard  # noqa: E402

N_MODELS = 16
RUNS = 5
TARGET_S = 0.2


def median_s(call, clock=time.perf_counter) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(RUNS):
        start = clock()
        call()
        times.append(clock() - start)
    return statistics.median(times)


def main() -> int:
    if not CSV.is_file():
        print(f"skip: {CSV} is absent (the shared reference material is needed)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = write_result_files(folder, N_MODELS)
        db = folder / "bench.sqlite"
        store = open_store(db)
        try:
            import_dataset(store, CSV, name="agl1k")
            for index, path in enumerate(files):
                import_predictions(store, f"model{index:02d}", path)
            # As on the command line: `aglw import predictions` ends (SQLite folds its WAL
            # into the database file on close), then `aglw leaderboard` opens the project.
            store.dispose()
            store = open_store(db)
            table = leaderboard(store, "both")
            assert len(table) == 2 * N_MODELS, table
            both_s = median_s(lambda: leaderboard(store, "both"))
            # CPU time of the same call: steadier than wall time when the machine is busy.
            both_cpu = median_s(lambda: leaderboard(store, "both"), time.process_time)
            agl1k_s = median_s(lambda: leaderboard(store, "agl1k"))
            by_s = median_s(lambda: leaderboard(store, "both", "continent"))
            speech_s = median_s(lambda: leaderboard(store, "both", "speech"))
        finally:
            store.dispose()
        env = {**os.environ, "AGLW_CONFIG_DIR": tmp, "AGLW_CACHE_DIR": tmp}
        argv = [sys.executable, "-m", "cli.main", "--db", str(db), "leaderboard"]
        process_s = median_s(lambda: subprocess.run(argv, check=True, capture_output=True, env=env, cwd=ROOT))
    records = N_MODELS * 1444
    print(f"P12 leaderboard {N_MODELS} models x 1,444 clips ({records:,} records), profiles both: "
          f"median {1000 * both_s:.0f} ms wall, {1000 * both_cpu:.0f} ms CPU (target <= {1000 * TARGET_S:.0f} ms; "
          f"load average {os.getloadavg()[0]:.1f})")
    print(f"P12 leaderboard agl1k profile only: median {1000 * agl1k_s:.0f} ms; "
          f"--by continent (both): median {1000 * by_s:.0f} ms; --by speech (both): median {1000 * speech_s:.0f} ms")
    print(f"P12 `aglw leaderboard` process wall time (start-up included): median {1000 * process_s:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
