"""The two-channel frame path's fast GCC-PHAT equals the textbook one (spatial.md).

The reference below is the straightforward algorithm: float64 rfft of each windowed, zero-padded
frame, PHAT weighting, a full ×interp zero-padded inverse FFT, peak within ±max τ and parabolic
refinement. The fast path (float32 spectra in chunks, chirp-z evaluation of the lag window only)
must find the same τ.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import scipy.fft
import scipy.signal
import soundfile as sf

from workbench.audio import direction, synth
from workbench.audio.direction import pair
from workbench.errors import InputError

RATE = 48000


def _reference_tau(
    left: np.ndarray,
    right: np.ndarray,
    rate: int,
    max_tau_s: float,
    interp: int,
    band: tuple[float, float] | None,
    n_fft: int | None = None,
) -> np.ndarray:
    frame_len = int(round(0.1 * rate))
    n_frames = left.size // frame_len
    frames_l = left[: n_frames * frame_len].reshape(n_frames, frame_len).astype(np.float64)
    frames_r = right[: n_frames * frame_len].reshape(n_frames, frame_len).astype(np.float64)
    if n_fft is None:
        n_fft = scipy.fft.next_fast_len(2 * frame_len, real=True)
    window = scipy.signal.get_window("hann", frame_len)
    cross = np.fft.rfft(frames_l * window, n=n_fft) * np.conj(np.fft.rfft(frames_r * window, n=n_fft))
    magnitude = np.abs(cross)
    phat = np.divide(cross, magnitude, out=np.zeros_like(cross), where=magnitude > 0)
    if band is not None:
        freqs = np.arange(n_fft // 2 + 1) * rate / n_fft
        phat[:, (freqs < band[0]) | (freqs > band[1])] = 0.0
    correlation = np.fft.irfft(phat, n=interp * n_fft)
    max_lag = int(math.ceil(max_tau_s * rate * interp))
    window_lags = np.concatenate([correlation[:, -max_lag:], correlation[:, : max_lag + 1]], axis=1)
    tau = []
    for row in window_lags:
        peak = int(np.argmax(row))
        offset = 0.0
        if 0 < peak < row.size - 1:
            before, centre, after = row[peak - 1], row[peak], row[peak + 1]
            curvature = before - 2 * centre + after
            if curvature < 0:
                offset = float(np.clip(0.5 * (before - after) / curvature, -0.5, 0.5))
        tau.append((peak + offset - max_lag) / (interp * rate))
    return np.array(tau)


@pytest.mark.parametrize(
    ("delay_samples", "interp", "band", "max_tau_s"),
    [
        (7.3, 4, None, 0.0009),
        (-12.6, 4, (200.0, 8000.0), 0.0009),
        (3.0, 1, None, 0.0005),  # interp 1 with an even n_fft: the Nyquist bin is weighted once
        (40.2, 2, (500.0, 12000.0), 0.002),
    ],
)
def test_fast_gcc_phat_equals_the_full_inverse_fft(
    delay_samples: float, interp: int, band: tuple[float, float] | None, max_tau_s: float
) -> None:
    rng = np.random.default_rng(abs(int(delay_samples * 10)))
    source = synth.white_noise(RATE, rng)
    left = synth.fractional_delay(source, delay_samples / RATE, RATE)
    # Uncorrelated noise 10 dB down, so the peaks are not trivially sharp.
    left = (left + 0.3 * synth.white_noise(RATE, rng)).astype(np.float32)
    right = (source + 0.3 * synth.white_noise(RATE, rng)).astype(np.float32)
    expected = _reference_tau(left, right, RATE, max_tau_s, interp, band)
    _, tau = direction.gcc_phat_frames(left, right, RATE, max_tau_s=max_tau_s, interp=interp, band=band)
    assert tau.shape == expected.shape == (10,)
    np.testing.assert_allclose(tau, expected, atol=0.01 / RATE)
    np.testing.assert_allclose(tau, delay_samples / RATE, atol=0.25 / RATE)


@pytest.mark.parametrize(
    ("rate", "delay_samples", "max_tau_s"), [(48000, 7.3, 0.0009), (44100, -21.6, 0.0009), (16000, 30.4, 0.003)]
)
def test_streaming_pair_pads_frames_by_the_lag_window_only(rate: int, delay_samples: float, max_tau_s: float) -> None:
    # The streaming analysis (what opening a clip runs) zero-pads each frame by the lag window,
    # not to twice its length: the circular correlation equals the linear one at every searched
    # lag, so it is the textbook GCC-PHAT at that FFT length and finds the same τ as the full
    # padding of gcc_phat_frames, at about half the cost.
    rng = np.random.default_rng(int(rate + abs(delay_samples) * 10))
    source = synth.white_noise(rate, rng)
    left = synth.fractional_delay(source, delay_samples / rate, rate) + 0.3 * synth.white_noise(rate, rng)
    left = left.astype(np.float32)
    right = (source + 0.3 * synth.white_noise(rate, rng)).astype(np.float32)
    band = (200.0, 8000.0)
    stream = pair.PairStream(rate, frame_s=0.1, band=band, max_tau_s=max_tau_s)
    frame_len = int(round(0.1 * rate))
    assert math.ceil(max_tau_s * rate) + 1 < stream.n_fft - frame_len < frame_len // 4
    stream.push(np.stack([left, right], axis=1))
    tau = stream.results()["tau_s"]
    assert tau.shape == (10,)
    textbook = _reference_tau(left, right, rate, max_tau_s, 4, band, n_fft=stream.n_fft)
    np.testing.assert_allclose(tau, textbook, atol=0.01 / rate)
    _, fully_padded = direction.gcc_phat_frames(left, right, rate, max_tau_s=max_tau_s, band=band)
    np.testing.assert_allclose(tau, fully_padded, atol=0.1 / rate)
    np.testing.assert_allclose(tau, delay_samples / rate, atol=0.25 / rate)


def test_frames_are_independent_of_the_chunking(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    left = synth.white_noise(int(2.05 * RATE), rng).astype(np.float32)
    right = np.roll(left, 5)
    _, whole = direction.gcc_phat_frames(left, right, RATE)
    monkeypatch.setattr(pair, "_PAIR_CHUNK_FRAMES", 3)  # 20 frames in chunks of 3, the last short
    _, chunked = direction.gcc_phat_frames(left, right, RATE)
    assert whole.size == 20
    np.testing.assert_allclose(chunked, whole, atol=1e-3 / RATE)
    np.testing.assert_allclose(whole, -5 / RATE, atol=0.05 / RATE)


def test_lag_window_of_zero_searches_lag_zero_only() -> None:
    rng = np.random.default_rng(4)
    left = synth.white_noise(RATE // 2, rng)
    _, tau = direction.gcc_phat_frames(left, np.roll(left, 3), RATE, max_tau_s=0.0)
    np.testing.assert_array_equal(tau, np.zeros(5))


def test_analyze_samples_equals_analyze_file(tmp_path: Path) -> None:
    samples = synth.woodworth_binaural(synth.white_noise(RATE * 3, np.random.default_rng(5)), RATE, -50.0)
    samples = samples.astype(np.float32)
    path = tmp_path / "binaural.wav"
    sf.write(path, samples, RATE, subtype="FLOAT")
    for layout in ("binaural", None, "ms"):
        from_file = direction.analyze_file(path, layout=layout)
        from_samples = direction.analyze_samples(samples, RATE, layout=layout, name=str(path))
        assert from_samples == from_file
    assert from_file.layout == "ms"
    binaural = direction.analyze_samples(samples, RATE, layout="binaural")
    lateral = binaural.frames.lateral_deg.tolist()
    assert len(lateral) == 30 and all(abs(value + 50.0) <= 2.0 for value in lateral)
    # The comparison is a real one: another analysis is not equal.
    assert binaural != direction.analyze_samples(samples[: RATE * 2], RATE, layout="binaural")


def test_streaming_analyzer_does_not_depend_on_the_block_cuts() -> None:
    rng = np.random.default_rng(9)
    pair_samples = synth.woodworth_binaural(synth.white_noise(RATE * 2 + 777, rng), RATE, 25.0).astype(np.float32)
    foa_samples = synth.encode_plane_wave(synth.white_noise(RATE * 2 + 777, rng), 30.0, 10.0).astype(np.float32)
    for samples, layout in ((pair_samples, "binaural"), (pair_samples, "stereo"), (foa_samples, "ambix")):
        whole = direction.analyze_samples(samples, RATE, layout=layout, heatmap_bins=72)
        analyzer = direction.DirectionAnalyzer(RATE, samples.shape[1], layout=layout, heatmap_bins=72)
        cuts = [0, 1, 1000, 4800 * 3 + 1, 50_000, samples.shape[0]]
        for start, stop in zip(cuts[:-1], cuts[1:]):
            analyzer.push(samples[start:stop])
        streamed = analyzer.finish()
        assert streamed.layout == layout and len(streamed.frames.t) > 10
        for name in ("t", "energy"):
            np.testing.assert_allclose(getattr(streamed.frames, name), getattr(whole.frames, name), rtol=1e-6)
        assert [p.weight for p in streamed.peaks] == pytest.approx([p.weight for p in whole.peaks], rel=1e-6)


def test_analyze_samples_refuses_mono_and_misshapen_input() -> None:
    mono = np.zeros((RATE, 1), dtype=np.float32)
    with pytest.raises(direction.NoDirectionInformation, match="clip.wav: mono clips"):
        direction.analyze_samples(mono, RATE, name="clip.wav")
    with pytest.raises(ValueError, match="frames, channels"):
        direction.analyze_samples(np.zeros(RATE), RATE)
    with pytest.raises(InputError, match="needs the microphone spacing"):
        direction.analyze_samples(np.zeros((RATE, 2), dtype=np.float32), RATE, layout="ab")


@pytest.mark.parametrize(
    ("n_fft", "interp", "first", "stop", "max_lag"),
    [(9600, 4, 0, 4801, 173), (9600, 1, 0, 4801, 40), (2250, 2, 13, 700, 9), (2250, 3, 1, 1126, 0), (64, 4, 2, 33, 20)],
)
def test_lag_window_equals_the_zero_padded_inverse_fft(
    n_fft: int, interp: int, first: int, stop: int, max_lag: int
) -> None:
    rng = np.random.default_rng(n_fft + interp + first)
    n_bins = n_fft // 2 + 1
    full = np.zeros((3, n_bins), dtype=np.complex128)
    full[:, first:stop] = rng.standard_normal((3, stop - first)) + 1j * rng.standard_normal((3, stop - first))
    full[:, 0] = full[:, 0].real  # DC (and Nyquist, for even sizes) of a real signal are real
    if n_fft % 2 == 0:
        full[:, -1] = full[:, -1].real
    correlation = np.fft.irfft(full, n=interp * n_fft)
    expected = np.concatenate([correlation[:, correlation.shape[1] - max_lag :], correlation[:, : max_lag + 1]], axis=1)
    lags = pair._correlation_at_lags(full[:, first:stop].astype(np.complex64), n_fft, interp, first, max_lag)
    assert lags.shape == (3, 2 * max_lag + 1)
    np.testing.assert_allclose(lags, expected, atol=2e-6 * np.abs(expected).max())


def test_level_panorama_of_float32_and_float64_input_is_identical() -> None:
    rng = np.random.default_rng(6)
    pair = rng.standard_normal((RATE, 2)).astype(np.float32) * np.array([0.3, 0.1], dtype=np.float32)
    _, from_float32 = direction.level_panorama(pair[:, 0], pair[:, 1], RATE)
    _, from_float64 = direction.level_panorama(pair[:, 0].astype(np.float64), pair[:, 1].astype(np.float64), RATE)
    np.testing.assert_array_equal(from_float32, from_float64)
    np.testing.assert_allclose(from_float32, (0.09 - 0.01) / 0.1, atol=0.03)
