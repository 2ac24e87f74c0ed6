"""P17: FOA → binaural decoding with a yaw control on one core (target ≥ 20 × real time).

60 s of 4-channel 48 kHz noise decoded in 4096-sample blocks (the player's block size order),
the yaw changing every block, through the spherical-head model (Brown & Duda) and 50 virtual
loudspeakers folded into eight filters. Threads are limited to one for numpy's FFT.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audio.binaural import make_decoder  # noqa: E402

SAMPLE_RATE = 48_000
SECONDS = 60
BLOCK = 4096
TARGET = 20.0


def main() -> None:
    foa = np.random.default_rng(0).standard_normal((SAMPLE_RATE * SECONDS, 4)) * 0.1
    start = time.perf_counter()
    decoder = make_decoder(SAMPLE_RATE)
    setup = time.perf_counter() - start
    best = float("inf")
    for _ in range(3):
        decoder.reset()
        start = time.perf_counter()
        for i, first in enumerate(range(0, foa.shape[0], BLOCK)):
            decoder.process(foa[first:first + BLOCK], yaw_deg=(i * 3) % 360)
        best = min(best, time.perf_counter() - start)
    print(f"decoder set-up ({decoder.source_name}): {setup * 1000:.0f} ms")
    print(f"{SECONDS} s of FOA at {SAMPLE_RATE} Hz decoded in {best:.2f} s: {SECONDS / best:.0f} × real time "
          f"(target ≥ {TARGET:g} ×), block {BLOCK} samples = {1000 * BLOCK / SAMPLE_RATE:.0f} ms, "
          f"{1000 * best / (foa.shape[0] / BLOCK):.2f} ms per block")


if __name__ == "__main__":
    main()
