"""P10: one expert edit in the review window at 1,000 clips × 60,000 judgments (issue [I]).

What is timed is what a person waits for: a contribution typed into the attribution grid
(``setData`` → a committed command → the window's refresh of the clip and the browser), on
the GUI thread, offscreen. Synthetic project (the P6 generator: 1,000 clips × 20 categories ×
3 judges, 20 tags per clip), fixed seed; median and maximum of 20 edits, at 1,000 clips and at
10,000 clips (600,000 judgments).
Target: a label edit must not stall the window (≤ 50 ms per edit).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_p6_refit import populate  # noqa: E402

N_CATEGORIES, N_EDITS = 20, 20


def main() -> int:
    for n_clips in (1000, 10_000):
        measure(n_clips)
    return 0


def measure(n_clips: int) -> None:
    from PySide6.QtWidgets import QApplication

    from storage import open_store
    from ui.main_window import MainWindow
    from workbench.audio.playback import NullSink, Player
    from workbench.labels import LabelService

    os.environ.setdefault("AGLW_CONFIG_DIR", tempfile.mkdtemp(prefix="aglw-bench-config-"))
    os.environ.setdefault("AGLW_CACHE_DIR", tempfile.mkdtemp(prefix="aglw-bench-cache-"))
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "bench.sqlite")
        populate(store, n_clips, N_CATEGORIES, np.random.default_rng(10))
        annotator = LabelService(store).ensure_annotator("bench")
        window = MainWindow(store, annotator, player=Player(NullSink()), force_sync=True)
        window.open_clip(n_clips // 2)
        model = window.grid.grid_model
        times = []
        for i in range(N_EDITS):
            row = i % model.rowCount()
            start = time.perf_counter()
            model.setData(model.index(row, model.contribution_column), (i % 3) + 1)
            app.processEvents()
            times.append(time.perf_counter() - start)
        window.shutdown()
        window.deleteLater()
        store.dispose()
    print(f"P10 edit in the review window, {n_clips} clips x {n_clips * N_CATEGORIES * 3:,} judgments: "
          f"median {1000 * statistics.median(times):.0f} ms, max {1000 * max(times):.0f} ms "
          f"(target <= 50 ms)")


if __name__ == "__main__":
    sys.exit(main())
