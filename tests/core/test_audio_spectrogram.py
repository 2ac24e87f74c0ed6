"""Spectrogram and waveform pyramids: pooling, view resolution, fixed quantisation, cache."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from workbench.audio import spectrogram as spectrogram_module
from tests.support.pooling import pool_pairs_min
from workbench.audio.levels import pool_pairs_max
from workbench.audio.loader import AudioData, AudioInfo, content_hash, load_audio
from workbench.audio import pyramid_cache
from workbench.audio.pyramid_cache import compute_pyramids
from workbench.audio.spectrogram import ENVELOPE_BUCKET, SpectrogramParams

RATE = 8000


def _audio(samples: np.ndarray, rate: int = RATE) -> AudioData:
    samples = samples.astype(np.float32)
    samples = samples[:, None] if samples.ndim == 1 else samples
    info = AudioInfo(Path("synthetic.wav"), rate, samples.shape[1], samples.shape[0], samples.shape[0] / rate, "WAV", "FLOAT")
    return AudioData(samples=samples, sample_rate=rate, info=info)


@pytest.fixture
def click_signal() -> np.ndarray:
    signal = np.zeros(RATE * 20, dtype=np.float32)  # 20 s of silence ...
    signal[int(13.37 * RATE)] = 1.0  # ... with one click at 13.37 s
    return signal


def test_full_scale_sine_maps_to_the_ceiling_and_silence_to_the_floor() -> None:
    params = SpectrogramParams(n_fft=512, hop=128)
    t = np.arange(RATE * 2) / RATE
    bin_hz = RATE / params.n_fft
    sine = np.sin(2 * np.pi * 64 * bin_hz * t)  # exactly on bin 64
    pyramid, _ = compute_pyramids(_audio(sine), params)
    middle = pyramid.levels[0][:, 20:-20]
    assert np.all(middle[64] >= 254)  # 0 dBFS
    assert np.all(middle[200] <= 40)  # far from the tone: near the floor
    quiet, _ = compute_pyramids(_audio(sine * 0.01), params)  # -40 dB
    expected_level = round(255 * (-40 - params.db_floor) / (params.db_ceiling - params.db_floor))
    assert abs(int(np.median(quiet.levels[0][64, 20:-20])) - expected_level) <= 1
    assert params.db_of_level(255) == pytest.approx(0.0)
    silent, _ = compute_pyramids(_audio(np.zeros(RATE)), params)
    assert not silent.levels[0].any()
    np.testing.assert_allclose(pyramid.freqs_hz[64], 64 * bin_hz)


def test_quantisation_levels_are_fixed_across_clips() -> None:
    params = SpectrogramParams(n_fft=256, hop=64)
    t = np.arange(RATE) / RATE
    loud, _ = compute_pyramids(_audio(0.9 * np.sin(2 * np.pi * 1000 * t)), params)
    soft, _ = compute_pyramids(_audio(0.09 * np.sin(2 * np.pi * 1000 * t)), params)
    row = int(round(1000 / (RATE / params.n_fft)))
    # 20 dB apart -> 51 levels apart on a 100 dB / 255 level scale, whatever the clip's own peak.
    difference = int(np.median(loud.levels[0][row, 5:-5])) - int(np.median(soft.levels[0][row, 5:-5]))
    assert abs(difference - 51) <= 1


def test_click_is_visible_at_every_level(click_signal: np.ndarray) -> None:
    params = SpectrogramParams(n_fft=256, hop=64)
    pyramid, envelope = compute_pyramids(_audio(click_signal), params)
    assert pyramid.levels[0].shape == (129, math.ceil(click_signal.size / 64))
    for level, image in enumerate(pyramid.levels):
        column_s = pyramid.frame_hop_s * 2**level
        loud_columns = np.flatnonzero(image.max(axis=0) > 100)
        assert loud_columns.size >= 1, f"click lost at level {level}"
        assert loud_columns.min() * column_s <= 13.37 + 2 * pyramid.frame_hop_s
        assert (loud_columns.max() + 1) * column_s >= 13.37 - 2 * pyramid.frame_hop_s
        if level:
            previous = pyramid.levels[level - 1]
            padded = np.concatenate([previous, previous[:, -1:]], axis=1) if previous.shape[1] % 2 else previous
            np.testing.assert_array_equal(image, np.maximum(padded[:, 0::2], padded[:, 1::2]))
    assert pyramid.levels[-1].shape[1] == 1
    for level in range(len(envelope.maxs)):
        assert envelope.maxs[level].max() == pytest.approx(1.0)
        assert envelope.mins[level].min() == 0.0


def test_view_gives_one_to_two_columns_per_pixel(click_signal: np.ndarray) -> None:
    pyramid, envelope = compute_pyramids(_audio(click_signal), SpectrogramParams(n_fft=256, hop=64))
    for t0, t1, pixels in [(0.0, 20.0, 800), (5.0, 6.0, 37), (12.0, 15.5, 300), (0.0, 20.0, 1)]:
        image, start, end = pyramid.view(t0, t1, pixels)
        assert start <= t0 + 1e-9 and end >= t1 - 1e-9
        covered_per_pixel = image.shape[1] * (t1 - t0) / ((end - start) * pixels)
        assert 1.0 <= image.shape[1] / pixels <= 2.0 + 2.0 / pixels + 1e-9, (t0, t1, pixels, image.shape)
        assert covered_per_pixel >= 0.9
        times, mins, maxs = envelope.view(t0, t1, pixels)
        assert pixels <= times.size <= 2 * pixels + 2
        assert times[0] <= t0 + 1e-9 and np.all(mins <= maxs)
    # Zoomed in beyond level 0: every level-0 column in the span, fewer than the pixels.
    image, start, end = pyramid.view(10.0, 10.05, 1000)
    assert image.shape[1] == math.ceil(10.05 / pyramid.frame_hop_s) - math.floor(10.0 / pyramid.frame_hop_s)
    # Out-of-range requests are clamped, not errors.
    image, start, end = pyramid.view(-5.0, 99.0, 100)
    assert start == 0.0 and end == pytest.approx(20.0)
    with pytest.raises(ValueError):
        pyramid.view(0.0, math.nan, 10)


def test_envelope_values_match_the_mono_mix() -> None:
    rng = np.random.default_rng(5)
    stereo = rng.uniform(-1, 1, size=(ENVELOPE_BUCKET * 100 + 7, 2)).astype(np.float32)
    _, envelope = compute_pyramids(_audio(stereo), SpectrogramParams(n_fft=64, hop=16))
    mono = stereo.mean(axis=1)
    buckets = mono[: ENVELOPE_BUCKET * 100].reshape(100, ENVELOPE_BUCKET)
    np.testing.assert_allclose(envelope.mins[0][:100], buckets.min(axis=1), atol=1e-6)
    np.testing.assert_allclose(envelope.maxs[0][:100], buckets.max(axis=1), atol=1e-6)
    assert envelope.mins[0].size == 101
    assert envelope.maxs[0][100] == pytest.approx(mono[-7:].max(), abs=1e-6)


def test_streamed_file_equals_in_memory(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    # Longer than one streaming block, so block boundaries are exercised.
    samples = (rng.standard_normal((RATE * 40, 2)) * 0.1).astype(np.float32)
    path = tmp_path / "noise.wav"
    sf.write(path, samples, RATE, subtype="FLOAT")
    params = SpectrogramParams(n_fft=512, hop=128)
    from_file, envelope_file = compute_pyramids(path, params, cache_dir=tmp_path / "cache")
    from_memory, envelope_memory = compute_pyramids(load_audio(path), params)
    np.testing.assert_array_equal(np.asarray(from_file.levels[0]), from_memory.levels[0])
    np.testing.assert_array_equal(np.asarray(envelope_file.maxs[0]), envelope_memory.maxs[0])


def test_mel_scale(click_signal: np.ndarray) -> None:
    params = SpectrogramParams(n_fft=256, hop=64, scale="mel", n_mels=40)
    pyramid, _ = compute_pyramids(_audio(click_signal), params)
    assert pyramid.levels[0].shape[0] == 40
    assert pyramid.freqs_hz.shape == (40,) and np.all(np.diff(pyramid.freqs_hz) > 0)
    assert pyramid.levels[0].max() > 100


def test_cache_hit_is_identical_and_does_not_recompute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(11)
    path = tmp_path / "clip.wav"
    sf.write(path, (rng.standard_normal(RATE * 3) * 0.2).astype(np.float32), RATE, subtype="FLOAT")
    params = SpectrogramParams(n_fft=256, hop=64)
    cache = tmp_path / "cache"
    first, first_env = compute_pyramids(path, params, cache_dir=cache)
    calls = []
    monkeypatch.setattr(pyramid_cache, "build_pyramids", lambda *a, **k: calls.append(a) or (_ for _ in ()).throw(AssertionError("recomputed")))
    second, second_env = compute_pyramids(path, params, cache_dir=cache)
    assert calls == []
    assert len(second.levels) == len(first.levels)
    for a, b in zip(first.levels, second.levels):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(first_env.mins, second_env.mins):
        np.testing.assert_array_equal(a, b)
    assert second.frame_hop_s == first.frame_hop_s and second.duration_s == first.duration_s
    np.testing.assert_array_equal(second.freqs_hz, first.freqs_hz)
    # Same hash passed explicitly with decoded audio: still a hit.
    third, _ = compute_pyramids(load_audio(path), params, cache_dir=cache, content_hash=content_hash(path))
    np.testing.assert_array_equal(third.levels[2], first.levels[2])
    # Other parameters are another cache entry, so they must compute.
    with pytest.raises(AssertionError, match="recomputed"):
        compute_pyramids(path, SpectrogramParams(n_fft=512, hop=64), cache_dir=cache)


def test_default_cache_location_and_corrupt_entry_recomputes(tmp_path: Path) -> None:
    from workbench.config import cache_dir

    path = tmp_path / "clip.wav"
    sf.write(path, np.zeros(RATE, dtype=np.float32), RATE)
    params = SpectrogramParams(n_fft=256, hop=64)
    compute_pyramids(path, params)
    entries = list((cache_dir() / "pyramids").iterdir())
    assert len(entries) == 1
    (entries[0] / "spectrogram.npy").write_bytes(b"garbage")
    pyramid, _ = compute_pyramids(path, params)
    assert pyramid.levels[0].shape == (129, RATE // 64)
    # The broken entry was replaced: the next open is served from the cache (memory-mapped).
    reopened, _ = compute_pyramids(path, params)
    assert isinstance(reopened.levels[0], np.memmap) or isinstance(reopened.levels[0].base, np.memmap)


def test_bad_params_are_refused() -> None:
    with pytest.raises(ValueError):
        SpectrogramParams(n_fft=256, hop=512)
    with pytest.raises(ValueError):
        SpectrogramParams(db_floor=0.0, db_ceiling=-10.0)
    with pytest.raises(ValueError):
        SpectrogramParams(scale="log")  # type: ignore[arg-type]


def test_cache_is_pruned_least_recently_used_first(tmp_path: Path) -> None:
    import os

    from workbench.audio.pyramid_cache import prune_cache

    cache = tmp_path / "cache"
    params = SpectrogramParams(n_fft=256, hop=64)
    for index in range(3):
        audio = _audio(np.full(RATE * 2, 0.1 * (index + 1)))
        compute_pyramids(audio, params, cache_dir=cache, content_hash=f"hash{index}")
    entries = sorted(cache.iterdir())
    assert len(entries) == 3
    for age, entry in enumerate(sorted(entries, key=lambda e: (e / "meta.json").stat().st_mtime)):
        os.utime(entry / "meta.json", (1_000_000 + age, 1_000_000 + age))
    oldest = min(entries, key=lambda e: (e / "meta.json").stat().st_mtime)
    one_entry = sum(item.stat().st_size for item in oldest.iterdir())
    # Reopening the oldest entry makes it the most recently used: another one goes instead.
    compute_pyramids(_audio(np.zeros(10)), params, cache_dir=cache, content_hash="hash0")
    assert prune_cache(cache, budget_bytes=int(one_entry * 2.5)) == 1
    remaining = {e.name for e in cache.iterdir()}
    assert len(remaining) == 2
    reopened, _ = compute_pyramids(_audio(np.zeros(10)), params, cache_dir=cache, content_hash="hash0")
    assert reopened.levels[0].shape[1] == 2 * RATE // 64  # still cached, not the 10-sample dummy
    assert prune_cache(cache, budget_bytes=0) == 2


def test_long_recordings_are_pooled_while_computing(monkeypatch: pytest.MonkeyPatch, click_signal: np.ndarray) -> None:
    params = SpectrogramParams(n_fft=256, hop=64)
    full, full_envelope = compute_pyramids(_audio(click_signal), params)
    # Pretend the limits are tiny so that a 20 s signal counts as a very long one.
    monkeypatch.setattr(spectrogram_module, "MAX_LEVEL0_COLUMNS", 600)
    monkeypatch.setattr(spectrogram_module, "MAX_ENVELOPE_BUCKETS", 1000)
    pooled, pooled_envelope = compute_pyramids(_audio(click_signal), params)
    pool = 8  # 2500 columns / 600 = 4.2 -> the next power of two
    assert pooled.frame_hop_s == pytest.approx(full.frame_hop_s * pool)
    assert pooled.levels[0].shape[1] <= 600
    # Pooling while computing gives exactly the level the full pyramid reaches by pooling.
    np.testing.assert_array_equal(pooled.levels[0], full.levels[3])
    assert pooled_envelope.mins[0].size <= 1000
    assert pooled_envelope.maxs[0].max() == pytest.approx(1.0)
    image, start, end = pooled.view(13.0, 14.0, 10)
    assert image.max() > 100 and start <= 13.37 <= end


def test_quantisation_rounds_to_the_nearest_level_and_saturates() -> None:
    params = SpectrogramParams(n_fft=512, hop=128, db_floor=-90.0, db_ceiling=-5.0)
    accumulator = spectrogram_module._StftAccumulator(params, RATE)
    reference_power = accumulator.reference**2
    rng = np.random.default_rng(12)
    # From 20 dB below the floor to 20 dB above the ceiling.
    db = rng.uniform(params.db_floor - 20.0, params.db_ceiling + 20.0, size=200_000)
    power = (reference_power * 10.0 ** (db / 10.0)).astype(np.float32)
    exact_db = 10.0 * np.log10(power.astype(np.float64) / reference_power)
    scale = 255.0 / (params.db_ceiling - params.db_floor)
    expected = np.clip(np.floor((exact_db - params.db_floor) * scale + 0.5), 0, 255)
    levels = accumulator._quantise(power.copy())
    assert levels.dtype == np.uint8
    # The linear scale quantises magnitudes |X| with power = |X|²: the same levels.
    from_magnitude = accumulator._quantise(np.sqrt(power.astype(np.float64)).astype(np.float32), exponent=2)
    assert np.mean(from_magnitude == levels) > 0.9999
    assert np.abs(from_magnitude.astype(int) - levels.astype(int)).max() <= 1
    difference = np.abs(levels.astype(int) - expected.astype(int))
    assert difference.max() <= 1  # float32 rounding can only matter right at a level boundary
    assert np.mean(difference == 0) > 0.9999
    assert np.all(levels[db >= params.db_ceiling + 0.01] == 255)  # saturates, never wraps
    assert np.all(levels[db <= params.db_floor - 0.01] == 0)


def test_louder_than_full_scale_saturates_in_the_image() -> None:
    params = SpectrogramParams(n_fft=512, hop=128)
    t = np.arange(RATE * 2) / RATE
    loud, _ = compute_pyramids(_audio(4.0 * np.sin(2 * np.pi * 64 * (RATE / params.n_fft) * t)), params)
    assert np.all(loud.levels[0][64, 20:-20] == 255)  # +12 dBFS: clipped at the ceiling


def test_prefetched_keeps_order_reraises_and_stops_early() -> None:
    import threading

    from workbench.audio.spectrogram import prefetched

    assert [int(b[0]) for b in prefetched(np.full(1, i) for i in range(7))] == list(range(7))

    def failing():
        yield np.zeros(1)
        raise ValueError("bad frame at block 2")

    stream = prefetched(failing())
    next(stream)
    with pytest.raises(ValueError, match="block 2"):
        next(stream)

    produced: list[int] = []

    def endless():
        i = 0
        while True:
            produced.append(i)
            yield np.full(1, i)
            i += 1

    stream = prefetched(endless(), depth=2)
    next(stream)
    stream.close()
    assert not any(t.name == "aglw-decode-prefetch" and t.is_alive() for t in threading.enumerate())
    assert len(produced) <= 5  # the producer stayed at most depth + a few ahead, then stopped


def test_write_behind_returns_before_the_entry_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    path = tmp_path / "tone.wav"
    sf.write(path, 0.1 * np.sin(np.arange(48_000) / 10.0).astype(np.float32), 16_000)
    cache = tmp_path / "cache"
    release = threading.Event()
    original = pyramid_cache._write_cache

    def slow_write(*args, **kwargs):  # type: ignore[no-untyped-def]
        release.wait(5)
        return original(*args, **kwargs)

    monkeypatch.setattr(pyramid_cache, "_write_cache", slow_write)
    pyramid, _ = compute_pyramids(path, cache_dir=cache, write_behind=True)
    assert not any(cache.glob("*/levels*")) and not [p for p in cache.glob("*") if not p.name.startswith(".")]
    release.set()
    pyramid_cache.wait_for_cache_writes()
    monkeypatch.setattr(pyramid_cache, "build_pyramids", lambda *a, **k: pytest.fail("recomputed"))
    again, _ = compute_pyramids(path, cache_dir=cache)
    np.testing.assert_array_equal(np.asarray(again.levels[0]), np.asarray(pyramid.levels[0]))


@pytest.mark.parametrize("pool", [1, 4])
def test_image_is_the_same_whatever_the_length_estimate(pool: int) -> None:
    """The image is written into a buffer sized from the header's length, which may be wrong."""
    params = SpectrogramParams(n_fft=256, hop=64)
    rng = np.random.default_rng(5)
    mono = (rng.standard_normal(RATE * 3) * 0.2).astype(np.float32)
    true_columns = math.ceil(mono.size / params.hop)
    images = []
    for expected in (0, true_columns // 3, true_columns, true_columns * 2):
        accumulator = spectrogram_module._StftAccumulator(params, RATE, pool, expected_columns=expected)
        for start in range(0, mono.size, 5000):
            accumulator.feed(mono[start : start + 5000])
        images.append(accumulator.finish(mono.size))
    # The accumulator's image is time-major, (columns, bins).
    assert images[0].shape == (math.ceil(true_columns / pool), params.n_fft // 2 + 1)
    for image in images[1:]:
        np.testing.assert_array_equal(image, images[0])


@pytest.mark.parametrize("estimate", [0.0, 0.5, 1.0, 2.0])
def test_envelope_levels_are_the_same_whatever_the_length_estimate(estimate: float) -> None:
    """The envelope's buckets go into arrays sized from the header's length, which may be wrong."""
    rng = np.random.default_rng(8)
    mono = (rng.standard_normal(RATE * 3 + 7) * 0.3).astype(np.float32)
    accumulator = spectrogram_module._EnvelopeAccumulator(16, expected_buckets=int(mono.size / 16 * estimate))
    for start in range(0, mono.size, 5003):
        accumulator.feed(mono[start : start + 5003])
    mins, maxs = accumulator.finish()
    whole = mono[: mono.size - mono.size % 16].reshape(-1, 16)
    tail = mono[whole.size :]
    want_min = np.append(whole.min(axis=1), tail.min())
    want_max = np.append(whole.max(axis=1), tail.max())
    np.testing.assert_array_equal(mins[0], want_min)
    np.testing.assert_array_equal(maxs[0], want_max)
    for k in range(1, len(mins)):
        np.testing.assert_array_equal(mins[k], pool_pairs_min(mins[k - 1]))
        np.testing.assert_array_equal(maxs[k], pool_pairs_max(maxs[k - 1]))
    assert mins[-1].size == 1 and mins[-1][0] == mono.min() and maxs[-1][0] == mono.max()
