"""P16: `aglw events eval` on 100 files of 60 s (target ≤ 5 s), DCASE 2023 and 2024 metrics.

Reference: 100 STARSS23-style files of 600 frames, each with 15 events (random class, source,
direction, some moving, distances). Prediction: the reference with DOA noise, 10 % of frames
missed, 5 % with the wrong class, plus false alarms. Both folders are written as CSV and the
whole command path (reading, validating, scoring) is timed in-process.
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cli.main import main as aglw  # noqa: E402

N_FILES = 100
N_FRAMES = 600
TARGET_S = 5.0


def _write(folder: Path, with_distance: bool, rng: np.random.Generator) -> None:
    ref_dir, pred_dir = folder / "ref", folder / "pred"
    ref_dir.mkdir()
    pred_dir.mkdir()
    for n in range(N_FILES):
        ref, pred = {}, {}
        for _ in range(15):
            c, s = int(rng.integers(13)), int(rng.integers(2))
            onset, length = int(rng.integers(0, N_FRAMES - 50)), int(rng.integers(5, 50))
            az, el, speed, dist = int(rng.integers(-180, 180)), int(rng.integers(-40, 40)), rng.choice([0, 0, 3]), int(rng.integers(50, 600))
            for f in range(onset, onset + length):
                a = int((az + speed * (f - onset) + 180) % 360 - 180)
                ref[(f, c, s)] = (a, el, dist)
                if rng.random() < 0.1:
                    continue
                pc = c if rng.random() > 0.05 else (c + 1) % 13
                pa = int((a + rng.normal(0, 10) + 180) % 360 - 180)
                pred[(f, pc, s)] = (pa, el, int(dist * (1 + rng.normal(0, 0.3))) if dist else 1)
        for _ in range(5):
            c, onset = int(rng.integers(13)), int(rng.integers(0, N_FRAMES - 10))
            for f in range(onset, onset + 8):
                pred[(f, c, 3)] = (int(rng.integers(-180, 180)), 0, 200)
        for rows, folder_ in ((ref, ref_dir), (pred, pred_dir)):
            lines = [f"{f},{c},{s},{a},{e}" + (f",{max(d, 1)}" if with_distance else "")
                     for (f, c, s), (a, e, d) in sorted(rows.items())]
            (folder_ / f"fold1_room1_mix{n:03d}.csv").write_text("\n".join(lines) + "\n")


def main() -> None:
    rng = np.random.default_rng(7)
    for with_distance, metric in ((False, "DCASE 2023 (segment-based)"), (True, "DCASE 2024 (frame-based, distance)")):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            _write(folder, with_distance, rng)
            out = io.StringIO()
            start = time.perf_counter()
            with redirect_stdout(out), redirect_stderr(io.StringIO()):
                rc = aglw(["--json", "events", "eval", "--ref", str(folder / "ref"), "--pred", str(folder / "pred")])
            elapsed = time.perf_counter() - start
            print(f"{metric}: {N_FILES} files of {N_FRAMES // 10} s scored in {elapsed:.2f} s "
                  f"(target ≤ {TARGET_S:g} s, exit {rc}); {out.getvalue().count(chr(10))} lines of JSON")


if __name__ == "__main__":
    main()
