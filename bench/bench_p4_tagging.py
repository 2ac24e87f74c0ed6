"""P4: EfficientAT mn10 tagging on CPU (clip level + 1 s timeline), in × real time.

Random weights (speed does not depend on them). Prints decode time separately, the model
time split into clip-level windows and timeline windows, and the overall ratio against the
≥ 100× real-time target on 2 cores.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
MEDIA = SHARED / "media" / "agl1k_case2_essaouira.mp3"


def main() -> int:
    if not MEDIA.is_file():
        print(f"P4 skipped: {MEDIA} is absent")
        return 0
    from workbench.audio.loader import load_audio
    from workbench.tagging.inference import AudioTagger
    from workbench.tagging.model import build_model
    from workbench.tagging.preprocess import SAMPLE_RATE

    torch.set_num_threads(2)
    start = time.perf_counter()
    audio = load_audio(MEDIA, sample_rate=SAMPLE_RATE, mono=True)
    decode_s = time.perf_counter() - start
    waveform = audio.samples[:, 0]
    duration = waveform.size / SAMPLE_RATE

    torch.manual_seed(0)
    tagger = AudioTagger(build_model("mn10"), batch_size=16)
    with torch.inference_mode():
        tagger.tag(waveform[: 12 * SAMPLE_RATE])  # warm-up (allocator, kernels)
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            tagger.tag(waveform, timeline=False)
            t1 = time.perf_counter()
            result = tagger.tag(waveform, timeline=True)
            t2 = time.perf_counter()
            runs.append((t1 - t0, t2 - t1))
    clip_only, full = min(runs, key=lambda r: r[1])
    print(f"P4 EfficientAT mn10, CPU, torch threads = {torch.get_num_threads()}")
    print(f"  file: {MEDIA.name}, {duration:.1f} s, {result.n_windows} clip windows, {result.timeline.shape[0]} timeline seconds")
    print(f"  decode + resample to 32 kHz mono: {decode_s:.3f} s ({duration / decode_s:.0f}x real time)")
    print(f"  clip level only: {clip_only:.3f} s ({duration / clip_only:.0f}x real time)")
    print(f"  clip level + 1 s timeline: {full:.3f} s ({duration / full:.0f}x real time; target >= 100x)")
    print(f"  timeline share of model time: {(full - clip_only) / full:.0%}")
    print(f"  end to end incl. decode: {duration / (full + decode_s):.0f}x real time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
