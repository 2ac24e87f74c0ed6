"""P18: curation sensitivity sweep (studies.md §5; target: 10 × 10 × 10 settings on 1,444 clips in under a minute).

Builds a 1,444-clip SQLite project (3 judges × 8 categories, tags, ALM predictions), stores one
fit, then times the whole sweep path: reading the fixed inputs from the store, and the sweep
itself (100 refits over γ × α, each thresholded at 10 θ).  Synthetic data, fixed seed.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_p6_refit import populate  # noqa: E402
from storage import open_store  # noqa: E402
from workbench.curation import service  # noqa: E402
from workbench.curation.model import FitParameters  # noqa: E402
from workbench.studies import sensitivity  # noqa: E402

SEED = 18


def main() -> int:
    rng = np.random.default_rng(SEED)
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "bench.sqlite")
        try:
            populate(store, 1444, 8, rng)
            service.fit(store, FitParameters())
            start = time.perf_counter()
            inputs, scores = sensitivity.load_sweep_inputs(store)
            loaded = time.perf_counter() - start
            gammas = list(np.geomspace(250, 4000, 10))
            alphas = list(np.linspace(0.0, 0.2, 10))
            thetas = sensitivity.default_thetas(scores, inputs.base.theta, 10)
            start = time.perf_counter()
            result = sensitivity.sweep(inputs, gammas, alphas, thetas)
            swept = time.perf_counter() - start
        finally:
            store.dispose()
    n = len(result.table)
    print(f"sensitivity sweep, 1,444 clips x 8 categories: {len(gammas)} gamma x {len(alphas)} alpha x "
          f"{len(thetas)} theta = {n} settings")
    print(f"    read inputs from SQLite {loaded:.2f} s; sweep {swept:.2f} s ({swept / n * 1000:.2f} ms per setting); "
          f"total {loaded + swept:.2f} s (target < 60 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
