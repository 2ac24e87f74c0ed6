"""P1: open a 140 s stereo 44.1 kHz MP3 without the GUI (quality-bar.md).

Target: decode + spectrogram pyramid + waveform envelope + direction map in <= 3 x the
decode-only time measured in the same run; a cached clip reopens in <= 50 ms.

Target of issue 15: the full open ≤ 1.4 × decode-only.

The full open is measured on the code path the application uses,
:func:`workbench.audio.service.open_clip` (:func:`workbench.audio.opening.open_audio`, which
the review window's worker calls too): one decode on a helper thread whose blocks feed the
playback buffer, the pyramid (written to a fresh, empty cache, as on a first open) and the
direction map as they arrive, the direction map on a third thread when the process has a
second core (the other mode is printed too). For comparison, the path the review window took
before issue 15 is timed as well: the pyramid streamed from the file, then a second decode for
playback and the direction map on it. The clip is
opened as ``binaural`` so that the direction map is the GCC-PHAT one (the detected ``stereo``
layout only needs a level panorama; it is printed too). Decode-only and full-open runs alternate
so that both see the same machine load; medians are reported.

Run: ``.venv/bin/python bench/bench_p1_open_clip.py [REPEATS]`` (default 5).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared"
CLIP = SHARED / "media" / "agl1k_case2_essaouira.mp3"


def _median_time(function: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def main(repeats: int = 5) -> int:
    if not CLIP.exists():
        print(f"skipped: {CLIP} is absent (the shared reference material)")
        return 0
    import soundfile as sf

    from workbench.audio.direction import analyze_samples, gcc_phat_frames
    from workbench.audio.loader import content_hash, load_audio
    from workbench.audio.service import open_clip
    from workbench.audio.spectrogram import SpectrogramParams, compute_pyramids

    params = SpectrogramParams()

    def open_cold(layout: str | None, parallel: bool | None = None) -> Any:
        with tempfile.TemporaryDirectory() as cache:
            return open_clip(CLIP, layout=layout, params=params, cache_dir=Path(cache), parallel=parallel)

    # Warm-up: imports, page cache, FFT plans, thread pool.
    audio = load_audio(CLIP)
    open_cold("binaural")
    gcc_phat_frames(audio.samples[:, 0], audio.samples[:, 1], audio.sample_rate)

    # Decode-only, the default full open and the full open in the other mode alternate, so that
    # all see the same load.
    decode_times: list[float] = []
    open_times: list[float] = []
    other_mode_times: list[float] = []
    stage_times: dict[str, list[float]] = {}
    modes: list[bool] = []
    for _ in range(repeats):
        start = time.perf_counter()
        load_audio(CLIP)
        decode_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        opened = open_cold("binaural")
        open_times.append(time.perf_counter() - start)
        for key, value in opened.timings.items():
            stage_times.setdefault(key, []).append(value)
        modes.append(bool(opened.timings["parallel"]))
        start = time.perf_counter()
        open_cold("binaural", parallel=not modes[-1])
        other_mode_times.append(time.perf_counter() - start)
    decode_s = statistics.median(decode_times)
    open_s = statistics.median(open_times)
    other_mode_s = statistics.median(other_mode_times)
    n_parallel = sum(modes)
    raw_s, _ = _median_time(lambda: sf.read(str(CLIP), dtype="float32"), 3)
    stereo_s, stereo = _median_time(lambda: open_cold(None), 3)

    # Each stage alone on the decoded audio, one after the other (the old-style breakdown).
    left, right = audio.samples[:, 0], audio.samples[:, 1]
    pyramid_s, _ = _median_time(lambda: compute_pyramids(audio, params), 3)
    gcc_s, _ = _median_time(lambda: gcc_phat_frames(left, right, audio.sample_rate), 3)
    direction_s, _ = _median_time(
        lambda: analyze_samples(audio.samples, audio.sample_rate, layout="binaural"), 3
    )

    def sequential() -> None:
        decoded = load_audio(CLIP)
        compute_pyramids(decoded, params)
        gcc_phat_frames(decoded.samples[:, 0], decoded.samples[:, 1], decoded.sample_rate)

    sequential_s, _ = _median_time(sequential, 3)

    def two_decodes() -> None:
        # The review window before issue 15: pyramid streamed from the file, then the playback
        # decode and the direction map on it.
        compute_pyramids(CLIP, params, use_cache=False)
        decoded = load_audio(CLIP)
        analyze_samples(decoded.samples, decoded.sample_rate, layout="binaural")

    two_decodes_s, _ = _median_time(two_decodes, 3)

    with tempfile.TemporaryDirectory() as cache:
        cache_dir = Path(cache)
        compute_pyramids(CLIP, params, cache_dir=cache_dir)
        file_hash = content_hash(CLIP)
        reopen_known_hash_s, (pyramid, _) = _median_time(
            lambda: compute_pyramids(CLIP, params, cache_dir=cache_dir, content_hash=file_hash), 7
        )
        reopen_with_hashing_s, _ = _median_time(lambda: compute_pyramids(CLIP, params, cache_dir=cache_dir), 7)
        view_s, _ = _median_time(lambda: pyramid.view(10.0, 70.0, 1600)[0].copy(), 7)

    def stage(key: str) -> float:
        return statistics.median(stage_times.get(key, [0.0]))

    n_frames, n_channels = audio.samples.shape
    print(f"clip: {CLIP.name}, {n_frames / audio.sample_rate:.1f} s, {n_channels} ch, {audio.sample_rate} Hz; "
          f"medians of {repeats} (alternating runs) or 3")
    print(f"decode only (soundfile.read):                 {_ms(raw_s)}")
    print(f"decode only (load_audio):                     {_ms(decode_s)}   <- reference for the ratios")
    print("each stage alone on decoded audio, one at a time:")
    print(f"  spectrogram pyramid + envelope:             {_ms(pyramid_s)} = {pyramid_s / decode_s:.2f} x decode-only")
    print(f"  direction map, gcc_phat_frames (GCC-PHAT):  {_ms(gcc_s)} = {gcc_s / decode_s:.2f} x decode-only")
    print(f"  direction map, analyze (binaural, + ILD):   {_ms(direction_s)} = {direction_s / decode_s:.2f} x decode-only")
    print(f"decode + pyramid + envelope + GCC-PHAT, one after the other: {_ms(sequential_s)} = "
          f"{sequential_s / decode_s:.2f} x decode-only")
    print(f"before issue 15, review window: pyramid from the file, then decode again + direction: {_ms(two_decodes_s)} = "
          f"{two_decodes_s / decode_s:.2f} x decode-only")
    print(f"full open, service.open_clip (binaural, GCC-PHAT; cold cache): {_ms(open_s)} = "
          f"{open_s / decode_s:.2f} x decode-only (target <= 1.4 x; quality bar <= 3 x)")
    print(f"  direction on its own thread in {n_parallel} of {repeats} opens (whenever the process has two cores); "
          f"last block decoded at {_ms(stage('decode'))}; time in pyramid + envelope {_ms(stage('pyramid'))}, "
          f"in direction {_ms(stage('direction'))}, hash + cache lookup {_ms(stage('hash'))}, "
          f"cache write {_ms(stage('cache_write'))}")
    print(f"full open forced to the other mode ({'one thread' if n_parallel * 2 > repeats else 'side by side'}): "
          f"{_ms(other_mode_s)} = {other_mode_s / decode_s:.2f} x decode-only")
    print(f"full open, detected layout ({stereo.direction.layout if stereo.direction else 'none'}: level panorama + ILD): "
          f"{_ms(stereo_s)} = {stereo_s / decode_s:.2f} x decode-only")
    print(f"cached reopen of the pyramid, content hash known: {_ms(reopen_known_hash_s)} (target <= 50 ms)")
    print(f"cached reopen of the pyramid, hashing the file:   {_ms(reopen_with_hashing_s)}")
    print(f"view() of 60 s at 1600 px (copied):               {view_s * 1000:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
