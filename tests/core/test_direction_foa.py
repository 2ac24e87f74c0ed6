"""FOA direction accuracy targets of spatial.md on synthetic signals (no room)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.audio import direction, synth

SAMPLE_RATE = 16000


def _angle_error(estimate: np.ndarray, truth: float) -> np.ndarray:
    return np.abs((np.asarray(estimate) - truth + 180.0) % 360.0 - 180.0)


def _source_with_diffuse_noise(azimuth: float, elevation: float, fmt: str, seed: int, seconds: float = 1.5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(seconds * SAMPLE_RATE)
    source = synth.white_noise(n, rng, rms=0.1)
    # Diffuse W at -20 dB relative to the source.
    return synth.encode_plane_wave(source, azimuth, elevation, fmt=fmt) + synth.diffuse_noise(n, rng, rms=0.01, fmt=fmt)


@pytest.mark.parametrize("fmt", ["ambix", "fuma"])
@pytest.mark.parametrize(
    ("azimuth", "elevation"),
    [(0.0, 0.0), (90.0, 0.0), (-135.0, 30.0), (170.0, -45.0), (45.0, 80.0), (-60.0, -80.0), (180.0, 10.0)],
)
def test_single_source_direction_and_diffuseness(fmt: str, azimuth: float, elevation: float) -> None:
    samples = _source_with_diffuse_noise(azimuth, elevation, fmt, seed=int(abs(azimuth * 7 + elevation)))
    if fmt == "fuma":
        samples = direction.fuma_to_ambix(samples)
    frames = direction.foa_frames(samples, SAMPLE_RATE)
    assert frames.t.size == 15
    assert np.all(np.diff(frames.t) > 0)
    assert _angle_error(frames.azimuth_deg, azimuth).max() <= 2.0
    assert np.abs(frames.elevation_deg - elevation).max() <= 2.0
    assert frames.diffuseness.max() < 0.1


def test_source_at_plus_90_is_on_the_left() -> None:
    samples = _source_with_diffuse_noise(90.0, 0.0, "ambix", seed=3)
    frames = direction.foa_frames(samples, SAMPLE_RATE)
    assert np.median(frames.azimuth_deg) == pytest.approx(90.0, abs=1.0)
    assert direction.oclock(float(np.median(frames.azimuth_deg))) == 9


@pytest.mark.parametrize("n_plane_waves", [None, 200])
def test_diffuse_field_has_high_diffuseness(n_plane_waves: int | None) -> None:
    rng = np.random.default_rng(11)
    samples = synth.diffuse_noise(SAMPLE_RATE, rng, rms=0.1, n_plane_waves=n_plane_waves)
    frames = direction.foa_frames(samples, SAMPLE_RATE)
    assert frames.diffuseness.min() > 0.8


def test_block_size_does_not_change_the_result() -> None:
    samples = _source_with_diffuse_noise(30.0, 5.0, "ambix", seed=5, seconds=2.0)
    whole = direction.foa_frames(samples, SAMPLE_RATE, block_s=100.0)
    blocked = direction.foa_frames(samples, SAMPLE_RATE, block_s=0.37)
    np.testing.assert_allclose(blocked.t, whole.t)
    np.testing.assert_allclose(blocked.azimuth_deg, whole.azimuth_deg, atol=1e-6)
    np.testing.assert_allclose(blocked.diffuseness, whole.diffuseness, atol=1e-6)
    heat_whole = direction.foa_heatmap(samples, SAMPLE_RATE, block_s=100.0)
    heat_blocked = direction.foa_heatmap(samples, SAMPLE_RATE, block_s=0.37)
    np.testing.assert_allclose(heat_blocked.values, heat_whole.values, rtol=1e-5, atol=1e-9)


def test_silence_gives_nan_not_a_direction() -> None:
    frames = direction.foa_frames(np.zeros((SAMPLE_RATE, 4), dtype=np.float32), SAMPLE_RATE)
    assert frames.t.size > 0
    assert np.all(np.isnan(frames.azimuth_deg))
    assert np.all(np.isnan(frames.diffuseness))


def test_two_sources_taking_turns_give_two_heatmap_peaks() -> None:
    rng = np.random.default_rng(21)
    n = SAMPLE_RATE
    turns = [synth.encode_plane_wave(synth.white_noise(n, rng), 23.0 if k % 2 == 0 else 83.0, 0.0) for k in range(4)]
    samples = np.concatenate(turns) + synth.diffuse_noise(4 * n, rng, rms=0.01)
    heatmap = direction.foa_heatmap(samples, SAMPLE_RATE)
    assert heatmap.values.shape == (72, heatmap.times.size)
    assert heatmap.values.dtype == np.float32
    assert heatmap.azimuth_edges_deg[0] == -180.0 and heatmap.azimuth_edges_deg[-1] == 180.0
    peaks = direction.azimuth_peaks(heatmap.values.sum(axis=1), heatmap.azimuth_edges_deg)
    assert len(peaks) == 2
    found = sorted(angle for angle, _ in peaks)
    assert abs(found[0] - 23.0) <= 5.0
    assert abs(found[1] - 83.0) <= 5.0
    # In time, the first second belongs to the 23° source.
    first_second = heatmap.values[:, heatmap.times < 0.9].sum(axis=1)
    assert abs(heatmap.azimuth_edges_deg[np.argmax(first_second)] + 2.5 - 23.0) <= 5.0


def test_heatmap_drops_bins_below_the_dynamic_range() -> None:
    samples = _source_with_diffuse_noise(-40.0, 0.0, "ambix", seed=8)
    heatmap = direction.foa_heatmap(samples, SAMPLE_RATE, dynamic_range_db=40.0)
    column = heatmap.values[:, 3]
    kept = column[column > 0]
    assert kept.min() >= column.max() * 1e-4
    assert np.count_nonzero(column) < 72


def test_moving_source_is_tracked() -> None:
    rng = np.random.default_rng(4)
    n = 3 * SAMPLE_RATE
    samples = synth.moving_source(synth.white_noise(n, rng), SAMPLE_RATE, start_azimuth_deg=-90.0, degrees_per_second=60.0)
    frames = direction.foa_frames(samples, SAMPLE_RATE)
    truth = synth.moving_source_azimuth(frames.t, start_azimuth_deg=-90.0, degrees_per_second=60.0)
    # A frame averages ~0.1 s of motion (6°): its centre direction is within a degree or so.
    assert np.max(_angle_error(frames.azimuth_deg - truth, 0.0)) <= 2.0


def test_sphere_srp_peaks_at_the_source() -> None:
    rng = np.random.default_rng(6)
    samples = synth.encode_plane_wave(synth.white_noise(SAMPLE_RATE, rng), -120.0, 30.0)
    sphere = direction.foa_sphere_srp(samples, SAMPLE_RATE, 0.0, 1.0)
    assert sphere.power.shape == (37, 72)
    assert sphere.elevations[0] == -90.0 and sphere.elevations[-1] == 90.0
    el_index, az_index = np.unravel_index(np.argmax(sphere.power), sphere.power.shape)
    assert sphere.azimuths[az_index] == -120.0
    assert sphere.elevations[el_index] == 30.0
    # The beam is (1 + κ·cos γ)² for a plane wave at angle γ from the look direction.
    kappa = 1.73
    opposite = sphere.power[np.argmin(np.abs(sphere.elevations + 30.0)), np.argmin(np.abs(sphere.azimuths - 60.0))]
    assert opposite / sphere.power.max() == pytest.approx(((1 - kappa) / (1 + kappa)) ** 2, rel=0.05)
    side = sphere.power[np.argmin(np.abs(sphere.elevations)), np.argmin(np.abs(sphere.azimuths + 30.0))]
    cos_gamma = float(np.dot(direction.ambix_steering(-30.0, 0.0)[1:], direction.ambix_steering(-120.0, 30.0)[1:]))
    assert side / sphere.power.max() == pytest.approx(((1 + kappa * cos_gamma) / (1 + kappa)) ** 2, rel=0.05)


def test_music_separates_two_simultaneous_sources_60_degrees_apart() -> None:
    rng = np.random.default_rng(9)
    n = 2 * SAMPLE_RATE
    truth = [(10.0, 0.0), (70.0, 10.0)]
    samples = sum(synth.encode_plane_wave(synth.white_noise(n, rng), az, el) for az, el in truth)
    samples = samples + synth.diffuse_noise(n, rng, rms=0.01)
    found = direction.foa_music(samples, SAMPLE_RATE, 0.0, 2.0, n_sources=2)
    assert len(found) == 2
    for azimuth, elevation in truth:
        errors = [max(_angle_error(a, azimuth), abs(e - elevation)) for a, e in found]
        assert min(errors) <= 2.0


def test_srp_alone_cannot_split_two_sources_60_degrees_apart() -> None:
    rng = np.random.default_rng(9)
    n = SAMPLE_RATE
    samples = sum(synth.encode_plane_wave(synth.white_noise(n, rng), az, 0.0) for az in (10.0, 70.0))
    sphere = direction.foa_sphere_srp(samples, SAMPLE_RATE, 0.0, 1.0)
    equator = sphere.power[np.argmin(np.abs(sphere.elevations))]
    peaks = direction.azimuth_peaks(equator, np.append(sphere.azimuths - 2.5, 177.5), min_relative=0.5)
    assert len(peaks) == 1
    assert abs(peaks[0][0] - 40.0) <= 3.0


def test_music_refuses_three_sources() -> None:
    samples = _source_with_diffuse_noise(0.0, 0.0, "ambix", seed=1)
    with pytest.raises(ValueError, match="circle"):
        direction.foa_music(samples, SAMPLE_RATE, 0.0, 1.0, n_sources=3)


def test_window_outside_the_signal_is_refused() -> None:
    samples = _source_with_diffuse_noise(0.0, 0.0, "ambix", seed=1)
    with pytest.raises(ValueError, match="holds no audio"):
        direction.foa_sphere_srp(samples, SAMPLE_RATE, 5.0, 6.0)
