"""The moving binaural source of workbench.audio.synth (used by the demo project)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import butter, sosfiltfilt

from workbench.audio import synth
from workbench.audio.direction import woodworth_itd

RATE = 48_000


def _band_limited_noise(n: int, seed: int = 5) -> np.ndarray:
    sos = butter(6, 2_000.0, btype="low", fs=RATE, output="sos")
    return sosfiltfilt(sos, np.random.default_rng(seed).standard_normal(n))


def _lag_s(left: np.ndarray, right: np.ndarray, max_lag: int = 60) -> float:
    """t_right − t_left from the cross-correlation peak (positive: the left ear hears it first)."""
    lags = np.arange(-max_lag, max_lag + 1)
    scores = [np.dot(left[max_lag : -max_lag], np.roll(right, -lag)[max_lag : -max_lag]) for lag in lags]
    return float(lags[int(np.argmax(scores))]) / RATE


def test_fixed_azimuth_matches_the_fixed_woodworth_pair() -> None:
    signal = _band_limited_noise(RATE)
    moving = synth.moving_woodworth_binaural(signal, RATE, 40.0)
    fixed = synth.woodworth_binaural(signal, RATE, 40.0)
    middle = slice(1_000, -1_000)  # the fixed pair's delay is circular, the moving one holds the ends
    rms = float(np.sqrt(np.mean(fixed[middle] ** 2)))
    # Linear interpolation of a signal below 2 kHz at 48 kHz is within a few per cent of the exact delay.
    assert np.max(np.abs(moving[middle] - fixed[middle])) < 0.05 * rms
    assert np.sqrt(np.mean((moving[middle] - fixed[middle]) ** 2)) < 0.01 * rms


def test_source_passing_from_left_to_right() -> None:
    seconds = 4
    signal = _band_limited_noise(seconds * RATE)
    azimuth = np.linspace(75.0, -75.0, signal.size)
    pair = synth.moving_woodworth_binaural(signal, RATE, azimuth)
    first, last = slice(0, RATE // 4), slice(-RATE // 4, None)
    expected = float(woodworth_itd(np.radians(73.0)))
    assert _lag_s(pair[first, 0], pair[first, 1]) == pytest.approx(expected, abs=2.0 / RATE)
    assert _lag_s(pair[last, 0], pair[last, 1]) == pytest.approx(-expected, abs=2.0 / RATE)
    level_db = lambda x: 10 * np.log10(np.mean(x**2))  # noqa: E731
    # The far ear is attenuated by 10·|sin φ| dB: about 9.6 dB at ±75°.
    assert level_db(pair[first, 0]) - level_db(pair[first, 1]) == pytest.approx(9.6, abs=0.6)
    assert level_db(pair[last, 1]) - level_db(pair[last, 0]) == pytest.approx(9.6, abs=0.6)
    with pytest.raises(ValueError, match="1-D"):
        synth.moving_woodworth_binaural(np.zeros((4, 2)), RATE, 0.0)
