"""Synthetic spatial test signals (spatial.md "Test-signal recipes").

Used by the direction tests, the P3 benchmark and the demo-project generator: plane waves
encoded in first-order Ambisonics (ambiX or FuMa), diffuse fields, a source moving around the
listener, and binaural signals with a Woodworth ITD (fractional delay) plus a level difference,
for a fixed or a moving source.
All angles follow the project convention: azimuth counter-clockwise from the front (+90° = left),
elevation up, in degrees.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.audio.direction import ambix_steering, ambix_to_fuma, woodworth_itd


def _as_signal(signal: np.ndarray) -> np.ndarray:
    signal = np.asarray(signal, dtype=np.float64)
    if signal.ndim != 1:
        raise ValueError(f"signal must be 1-D, got shape {signal.shape}")
    return signal


def _check_format(fmt: str) -> None:
    if fmt not in ("ambix", "fuma"):
        raise ValueError(f"format must be 'ambix' or 'fuma', got {fmt!r}")


def white_noise(n_frames: int, rng: np.random.Generator, *, rms: float = 0.1) -> np.ndarray:
    """Gaussian white noise with the given RMS."""
    return rng.standard_normal(n_frames) * rms


def encode_plane_wave(
    signal: np.ndarray, azimuth_deg: float, elevation_deg: float = 0.0, *, fmt: str = "ambix"
) -> np.ndarray:
    """First-order Ambisonics of a plane wave: W = s, Y = s·sinφcosθ, Z = s·sinθ, X = s·cosφcosθ.

    Parameters
    ----------
    signal
        1-D source signal.
    azimuth_deg, elevation_deg
        Direction the sound comes from.
    fmt
        ``ambix`` ([W, Y, Z, X], SN3D) or ``fuma`` ([W, X, Y, Z], W scaled by 1/√2).

    Returns
    -------
    numpy.ndarray
        float64 samples shaped (frames, 4).
    """
    _check_format(fmt)
    signal = _as_signal(signal)
    encoded = signal[:, None] * ambix_steering(azimuth_deg, elevation_deg)[None, :]
    return ambix_to_fuma(encoded) if fmt == "fuma" else encoded


def diffuse_noise(
    n_frames: int,
    rng: np.random.Generator,
    *,
    rms: float = 0.1,
    fmt: str = "ambix",
    n_plane_waves: int | None = None,
) -> np.ndarray:
    """An isotropic diffuse field whose W channel has the given RMS.

    Parameters
    ----------
    n_frames
        Length in samples.
    rng
        Random generator (tests pass a seeded one).
    rms
        RMS of the W channel.
    fmt
        ``ambix`` or ``fuma``.
    n_plane_waves
        None: independent channels W = n₀, X/Y/Z = nᵢ/√3 (the SN3D diffuse covariance).
        Otherwise the sum of that many independent white-noise plane waves from directions
        drawn uniformly on the sphere.

    Returns
    -------
    numpy.ndarray
        float64 samples shaped (frames, 4).
    """
    _check_format(fmt)
    if n_plane_waves is None:
        noise = rng.standard_normal((n_frames, 4))
        noise[:, 1:] /= math.sqrt(3.0)
        encoded = noise * rms
    else:
        if n_plane_waves < 1:
            raise ValueError(f"n_plane_waves must be >= 1, got {n_plane_waves}")
        z = rng.uniform(-1.0, 1.0, n_plane_waves)
        azimuths = rng.uniform(-180.0, 180.0, n_plane_waves)
        elevations = np.degrees(np.arcsin(z))
        steering = ambix_steering(azimuths, elevations)  # (n_waves, 4)
        sources = rng.standard_normal((n_frames, n_plane_waves)) * (rms / math.sqrt(n_plane_waves))
        encoded = sources @ steering
    return ambix_to_fuma(encoded) if fmt == "fuma" else encoded


def moving_source(
    signal: np.ndarray,
    sample_rate: int,
    *,
    start_azimuth_deg: float = 0.0,
    degrees_per_second: float = 30.0,
    elevation_deg: float = 0.0,
    fmt: str = "ambix",
) -> np.ndarray:
    """A plane wave circling the listener at constant angular speed (counter-clockwise if positive).

    Returns float64 FOA samples shaped (frames, 4).
    """
    _check_format(fmt)
    signal = _as_signal(signal)
    azimuth = start_azimuth_deg + degrees_per_second * np.arange(signal.size) / sample_rate
    encoded = signal[:, None] * ambix_steering(azimuth, elevation_deg)
    return ambix_to_fuma(encoded) if fmt == "fuma" else encoded


def moving_source_azimuth(t_s: np.ndarray, *, start_azimuth_deg: float = 0.0, degrees_per_second: float = 30.0) -> np.ndarray:
    """True azimuth of :func:`moving_source` at times ``t_s``, wrapped to [−180, 180)."""
    return (start_azimuth_deg + degrees_per_second * np.asarray(t_s) + 180.0) % 360.0 - 180.0


def fractional_delay(signal: np.ndarray, delay_s: float, sample_rate: int) -> np.ndarray:
    """Delay a signal by any (fractional, possibly negative) time with an FFT phase ramp.

    The delay is circular: samples shifted past the end reappear at the start, which keeps
    stationary test noise stationary.
    """
    signal = _as_signal(signal)
    spectrum = np.fft.rfft(signal)
    frequencies = np.fft.rfftfreq(signal.size, d=1.0 / sample_rate)
    ramp = np.exp(-2j * np.pi * frequencies * delay_s)
    return np.fft.irfft(spectrum * ramp, n=signal.size)


def woodworth_binaural(
    signal: np.ndarray,
    sample_rate: int,
    azimuth_deg: float,
    *,
    far_ear_attenuation_db: float = 10.0,
) -> np.ndarray:
    """A binaural pair for a horizontal source using the Woodworth ITD and a broadband ILD.

    The lateral angle is λ = arcsin(sin φ) (a source behind maps to its frontal mirror, as for
    a real head); each ear is delayed by ∓ITD/2 with :func:`fractional_delay` and the far ear
    is attenuated by ``far_ear_attenuation_db``·|sin φ|.

    Returns
    -------
    numpy.ndarray
        float64 samples shaped (frames, 2): [left, right].
    """
    signal = _as_signal(signal)
    sin_phi = math.sin(math.radians(azimuth_deg))
    lateral = math.asin(max(-1.0, min(1.0, sin_phi)))
    itd = float(woodworth_itd(lateral))
    left = fractional_delay(signal, -itd / 2.0, sample_rate)
    right = fractional_delay(signal, itd / 2.0, sample_rate)
    attenuation = 10.0 ** (-far_ear_attenuation_db * abs(sin_phi) / 20.0)
    if sin_phi > 0:
        right *= attenuation
    elif sin_phi < 0:
        left *= attenuation
    return np.stack([left, right], axis=1)


def moving_woodworth_binaural(
    signal: np.ndarray,
    sample_rate: int,
    azimuth_deg: np.ndarray | float,
    *,
    far_ear_attenuation_db: float = 10.0,
) -> np.ndarray:
    """A binaural pair for a horizontal source whose azimuth may change sample by sample.

    The head model of :func:`woodworth_binaural` (lateral angle λ = arcsin(sin φ), Woodworth
    ITD, far ear attenuated by ``far_ear_attenuation_db``·|sin φ|), with a time-varying delay:
    each ear reads the source at t ± ITD(t)/2 by linear interpolation. Unlike
    :func:`woodworth_binaural` the delay is not circular: the first and last samples are held.

    Parameters
    ----------
    signal
        1-D source signal.
    sample_rate
        Samples per second.
    azimuth_deg
        The source's azimuth per sample (same length as ``signal``), or one value for all.

    Returns
    -------
    numpy.ndarray
        float64 samples shaped (frames, 2): [left, right].
    """
    signal = _as_signal(signal)
    azimuth = np.broadcast_to(np.asarray(azimuth_deg, dtype=np.float64), signal.shape)
    sin_phi = np.sin(np.radians(azimuth))
    itd = np.asarray(woodworth_itd(np.arcsin(np.clip(sin_phi, -1.0, 1.0))))
    t = np.arange(signal.size) / sample_rate
    # A source on the left (ITD > 0) reaches the left ear ITD/2 early and the right ear ITD/2 late.
    left = np.interp(t + itd / 2.0, t, signal)
    right = np.interp(t - itd / 2.0, t, signal)
    attenuation = 10.0 ** (-far_ear_attenuation_db * np.abs(sin_phi) / 20.0)
    left = np.where(sin_phi < 0, left * attenuation, left)
    right = np.where(sin_phi > 0, right * attenuation, right)
    return np.stack([left, right], axis=1)


def spaced_pair(signal: np.ndarray, sample_rate: int, lateral_deg: float, spacing_m: float, c: float = 343.0) -> np.ndarray:
    """A spaced (AB) pair for a far source at lateral angle λ: τ = t_L − t_R = −d·sin λ / c.

    Returns float64 samples shaped (frames, 2): [left, right].
    """
    signal = _as_signal(signal)
    path_difference_s = spacing_m * math.sin(math.radians(lateral_deg)) / c
    left = fractional_delay(signal, -path_difference_s / 2.0, sample_rate)
    right = fractional_delay(signal, path_difference_s / 2.0, sample_rate)
    return np.stack([left, right], axis=1)
