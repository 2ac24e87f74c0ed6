"""P15: direction pre-fill of an event on a synthetic static source at 10 dB SNR (target: within 5°).

50 random scenes (azimuth uniform, |elevation| ≤ 60°, white-noise source over diffuse noise at
10 dB SNR, 2 s at 24 kHz). FOA: great-circle error of the suggested azimuth/elevation. Binaural
(Woodworth ITD and far-ear attenuation, the same scenes in the horizontal plane): error of the
suggested lateral angle against arcsin(sin φ). Prints the median, 95th percentile and maximum.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.events.prefill import prefill_binaural, prefill_foa  # noqa: E402
from workbench.events.qa import angular_error_deg  # noqa: E402
from workbench.events.scene import random_static_scene  # noqa: E402

N_SCENES = 50
TARGET_DEG = 5.0


def main() -> None:
    rng = np.random.default_rng(2026)
    foa_errors, lateral_errors = [], []
    start = time.perf_counter()
    for i in range(N_SCENES):
        scene = random_static_scene(rng, duration_s=2.0, snr_db=10.0, seed=i)
        truth = scene.sources[0]
        foa = prefill_foa(scene.foa, scene.sample_rate, 0.0, 2.0)
        foa_errors.append(angular_error_deg(foa.azimuth_deg, foa.elevation_deg, truth.azimuth_deg, truth.elevation_deg))
        pair = prefill_binaural(scene.binaural, scene.sample_rate, 0.0, 2.0)
        lateral = math.degrees(math.asin(math.sin(math.radians(truth.azimuth_deg))))
        lateral_errors.append(abs(pair.azimuth_deg - lateral))
    elapsed = time.perf_counter() - start
    for name, errors in (("FOA azimuth/elevation", foa_errors), ("binaural lateral angle", lateral_errors)):
        e = np.asarray(errors)
        within = int((e <= TARGET_DEG).sum())
        print(f"{name}: median {np.median(e):.2f}°, p95 {np.percentile(e, 95):.2f}°, max {e.max():.2f}° "
              f"({within}/{N_SCENES} within {TARGET_DEG:g}°)")
    print(f"{N_SCENES} scenes rendered and analysed in {elapsed:.1f} s")


if __name__ == "__main__":
    main()
