"""Two-channel direction analysis (spatial.md): GCC-PHAT sign, Woodworth binaural, AB, panorama, ILD."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.audio import direction, synth

SAMPLE_RATE = 48000


def _noise(seconds: float, seed: int) -> np.ndarray:
    return synth.white_noise(int(seconds * SAMPLE_RATE), np.random.default_rng(seed))


def test_source_on_the_left_gives_negative_tau() -> None:
    delay_samples = 10
    signal = _noise(0.5, 1)
    left = signal
    right = np.concatenate([np.zeros(delay_samples), signal[:-delay_samples]])  # right hears it later
    _, tau = direction.gcc_phat_frames(left, right, SAMPLE_RATE)
    np.testing.assert_allclose(tau, -delay_samples / SAMPLE_RATE, atol=1e-6)


def test_fractional_delay_is_resolved_below_one_sample() -> None:
    signal = _noise(0.5, 2)
    delay_s = 3.3 / SAMPLE_RATE
    left = synth.fractional_delay(signal, delay_s, SAMPLE_RATE)
    times, tau = direction.gcc_phat_frames(left, signal, SAMPLE_RATE)
    assert times.size == 5
    np.testing.assert_allclose(times, [0.05, 0.15, 0.25, 0.35, 0.45])
    np.testing.assert_allclose(tau, delay_s, atol=0.1 / SAMPLE_RATE)


def _binaural_lateral(azimuth: float) -> tuple[np.ndarray, float]:
    pair = synth.woodworth_binaural(_noise(1.0, int(abs(azimuth))), SAMPLE_RATE, azimuth)
    _, tau = direction.gcc_phat_frames(pair[:, 0], pair[:, 1], SAMPLE_RATE)
    lateral = np.degrees(direction.lateral_from_itd_woodworth(-tau))
    return lateral, math.degrees(math.asin(math.sin(math.radians(azimuth))))


@pytest.mark.parametrize("azimuth", [75.0, -75.0, 105.0, -105.0])
def test_woodworth_binaural_accuracy_at_the_75_degree_limit(azimuth: float) -> None:
    lateral, true_lateral = _binaural_lateral(azimuth)
    assert abs(true_lateral) == pytest.approx(75.0)
    assert np.abs(lateral - true_lateral).max() <= 2.0


# Azimuths away from the o'clock sector edges (β = 15° + k·30°), where a hundredth of a degree
# decides between two hours.
@pytest.mark.parametrize("azimuth", [0.0, 20.0, -35.0, 50.0, -65.0, 74.0, -74.0, 110.0, -160.0, 134.0, 90.0, -90.0])
def test_woodworth_binaural_lateral_angle_and_oclock(azimuth: float) -> None:
    lateral, true_lateral = _binaural_lateral(azimuth)
    assert np.abs(lateral - true_lateral).max() <= 2.0
    true_hour = direction.oclock(azimuth)
    for angle in lateral:
        hour = direction.oclock(float(angle))
        assert true_hour in (hour, direction.oclock_mirror(hour))


def test_binaural_ild_is_a_consistent_check() -> None:
    pair = synth.woodworth_binaural(_noise(0.5, 3), SAMPLE_RATE, 60.0, far_ear_attenuation_db=10.0)
    _, ild = direction.ild_db(pair[:, 0], pair[:, 1], SAMPLE_RATE)
    np.testing.assert_allclose(ild, 10.0 * math.sin(math.radians(60.0)), atol=0.2)


@pytest.mark.parametrize("lateral", [-60.0, -10.0, 0.0, 25.0, 70.0])
def test_ab_pair_lateral_angle(lateral: float) -> None:
    spacing = 0.3
    pair = synth.spaced_pair(_noise(0.5, 4), SAMPLE_RATE, lateral, spacing)
    _, tau = direction.gcc_phat_frames(pair[:, 0], pair[:, 1], SAMPLE_RATE, max_tau_s=spacing / 343.0 * 1.05)
    estimate = np.degrees(direction.lateral_from_tau_ab(tau, spacing))
    assert np.abs(estimate - lateral).max() <= 1.0


def test_level_panorama_is_signed_and_bounded() -> None:
    signal = _noise(0.3, 5)
    times, left_only = direction.level_panorama(signal, np.zeros_like(signal) + 1e-9 * signal, SAMPLE_RATE)
    assert times.size == 3
    np.testing.assert_allclose(left_only, 1.0, atol=1e-6)
    _, centre = direction.level_panorama(signal, signal, SAMPLE_RATE)
    np.testing.assert_allclose(centre, 0.0, atol=1e-12)
    _, right_louder = direction.level_panorama(0.5 * signal, signal, SAMPLE_RATE)
    np.testing.assert_allclose(right_louder, (0.25 - 1.0) / 1.25)


def test_silent_frames_give_nan() -> None:
    signal = np.concatenate([np.zeros(SAMPLE_RATE // 10), _noise(0.1, 6)])
    _, tau = direction.gcc_phat_frames(signal, signal, SAMPLE_RATE)
    assert math.isnan(tau[0])
    assert tau[1] == pytest.approx(0.0, abs=1e-7)


def test_mismatched_channels_are_refused() -> None:
    with pytest.raises(ValueError, match="equal length"):
        direction.gcc_phat_frames(np.zeros(100), np.zeros(99), SAMPLE_RATE)
