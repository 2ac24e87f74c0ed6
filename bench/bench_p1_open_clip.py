"""P1: open a 140 s stereo 44.1 kHz MP3 without the GUI (quality-bar.md).

Prints the decode-only time, the time of decode + spectrogram pyramid + waveform envelope +
direction map (GCC-PHAT per 100 ms frame, from workbench.audio.direction when present) and its
ratio to decode-only (target <= 3x), and the cached reopen time (target <= 50 ms).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared"
CLIP = SHARED / "media" / "agl1k_case2_essaouira.mp3"


def _median_time(function, repeats: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> int:
    if not CLIP.exists():
        print(f"skipped: {CLIP} is absent (the shared reference material)")
        return 0
    import soundfile as sf

    from workbench.audio.loader import content_hash, load_audio
    from workbench.audio.spectrogram import SpectrogramParams, compute_pyramids

    try:
        from workbench.audio.direction import gcc_phat_frames
    except ImportError:
        gcc_phat_frames = None

    params = SpectrogramParams()
    # Warm-up: imports, page cache, FFT plans.
    audio = load_audio(CLIP)
    compute_pyramids(audio, params)

    raw_s, _ = _median_time(lambda: sf.read(str(CLIP), dtype="float32"), 3)
    decode_s, audio = _median_time(lambda: load_audio(CLIP), 3)

    def pipeline() -> None:
        decoded = load_audio(CLIP)
        compute_pyramids(decoded, params)
        if gcc_phat_frames is not None:
            gcc_phat_frames(decoded.samples[:, 0], decoded.samples[:, 1], decoded.sample_rate)

    if gcc_phat_frames is not None:
        gcc_phat_frames(audio.samples[:, 0], audio.samples[:, 1], audio.sample_rate)
    full_s, _ = _median_time(pipeline, 3)
    pyramid_only_s, _ = _median_time(lambda: compute_pyramids(audio, params), 3)
    direction_s = None
    if gcc_phat_frames is not None:
        direction_s, _ = _median_time(
            lambda: gcc_phat_frames(audio.samples[:, 0], audio.samples[:, 1], audio.sample_rate), 3
        )

    with tempfile.TemporaryDirectory() as cache:
        cache_dir = Path(cache)
        cold_s, _ = _median_time(lambda: compute_pyramids(CLIP, params, cache_dir=cache_dir), 1)
        file_hash = content_hash(CLIP)
        reopen_known_hash_s, (pyramid, _) = _median_time(
            lambda: compute_pyramids(CLIP, params, cache_dir=cache_dir, content_hash=file_hash), 7
        )
        reopen_with_hashing_s, _ = _median_time(lambda: compute_pyramids(CLIP, params, cache_dir=cache_dir), 7)
        view_s, _ = _median_time(lambda: pyramid.view(10.0, 70.0, 1600)[0].copy(), 7)

    print(f"clip: {CLIP.name}, {audio.samples.shape[0] / audio.sample_rate:.1f} s, {audio.samples.shape[1]} ch, {audio.sample_rate} Hz")
    print(f"decode only (soundfile.read):           {raw_s * 1000:8.1f} ms")
    print(f"decode only (load_audio):               {decode_s * 1000:8.1f} ms")
    print(f"spectrogram pyramid + envelope alone:   {pyramid_only_s * 1000:8.1f} ms = {pyramid_only_s / decode_s:.2f} x decode-only")
    if direction_s is not None:
        print(f"direction map alone (GCC-PHAT frames):  {direction_s * 1000:8.1f} ms = {direction_s / decode_s:.2f} x decode-only")
    if gcc_phat_frames is None:
        print("direction map: workbench.audio.direction is absent; measured without it")
    label = "decode + pyramid + envelope + direction" if gcc_phat_frames is not None else "decode + pyramid + envelope"
    print(f"{label}: {full_s * 1000:8.1f} ms  = {full_s / decode_s:.2f} x decode-only (target <= 3 x)")
    print(f"first open from the file, cache cold:   {cold_s * 1000:8.1f} ms")
    print(f"cached reopen, content hash known:      {reopen_known_hash_s * 1000:8.1f} ms (target <= 50 ms)")
    print(f"cached reopen, hashing the file first:  {reopen_with_hashing_s * 1000:8.1f} ms")
    print(f"view() of 60 s at 1600 px (copied):     {view_s * 1000:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
