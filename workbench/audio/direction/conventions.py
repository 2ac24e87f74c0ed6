"""Conventions shared by every direction method (shared design doc ``spatial.md``).

Azimuth φ counter-clockwise from the front (+90° = left), elevation θ up, degrees at the API
boundary; ambiX = ACN order [W, Y, Z, X] with SN3D normalisation; FuMa = [W, X, Y, Z] with W
scaled by 1/√2; o'clock sectors as in OWL. Pure numpy, no database.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

import numpy as np

from workbench.errors import InputError

SPEED_OF_SOUND_M_S = 343.0
HEAD_RADIUS_M = 0.0875
DEFAULT_BAND_HZ = (200.0, 8000.0)
FOA_LAYOUTS = ("ambix", "fuma")
TWO_CHANNEL_LAYOUTS = ("stereo", "binaural", "ab", "xy", "ms")
# Layouts whose geometry is unknown or coincident: only a level panorama is meaningful.
PANORAMA_LAYOUTS = ("stereo", "xy", "ms")
MONO_EXPLANATION = (
    "mono clips carry no direction information: a direction view needs two channels "
    "(binaural, AB, XY or MS pair) or four (first-order Ambisonics)"
)

# Frames quieter than this mean square (about -100 dBFS) have no meaningful direction.
SILENCE_MEAN_SQUARE = 1e-10
_SQRT2 = math.sqrt(2.0)
SQRT3 = math.sqrt(3.0)


def _same_values(left: Any, right: Any) -> bool:
    """Field equality for records holding arrays: same shape and values, NaN equal to NaN."""
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        a, b = np.asarray(left), np.asarray(right)
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(left, tuple) and isinstance(right, tuple):
        return len(left) == len(right) and all(_same_values(a, b) for a, b in zip(left, right))
    return bool(left == right)


class ArrayRecord:
    """Value equality for frozen dataclasses with array fields (two analyses of the same audio
    compare equal; NaN marks the same unknown value on both sides)."""

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside: not hashable

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(_same_values(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))  # type: ignore[arg-type]


class NoDirectionInformation(InputError):
    """The recording's layout (mono) carries no direction information."""


# ---------------------------------------------------------------------------------------------
# Conventions
# ---------------------------------------------------------------------------------------------


def oclock(azimuth_deg: float) -> int:
    """O'clock sector of an azimuth (12 = front, 3 = right, 6 = back, 9 = left).

    Parameters
    ----------
    azimuth_deg
        Azimuth in degrees, counter-clockwise from the front (+90° = left).

    Returns
    -------
    int
        Hour 1..12, from β = (−φ) mod 360 and hour = ((round(β/30) − 1) mod 12) + 1.
        Halves round up (β = 15° is 1 o'clock) so the result never depends on banker's rounding.
    """
    if not math.isfinite(azimuth_deg):
        raise ValueError(f"azimuth must be finite, got {azimuth_deg!r}")
    beta = (-azimuth_deg) % 360.0
    return (int(math.floor(beta / 30.0 + 0.5)) - 1) % 12 + 1


def oclock_mirror(hour: int) -> int | None:
    """Front/back mirror of an o'clock hour (12↔6, 1↔5, 2↔4, 11↔7, 10↔8; 3 and 9 → None).

    Two-channel recordings cannot tell front from back, so a lateral angle maps to an hour
    and this mirror hour, never to a guess between them.
    """
    if hour not in range(1, 13):
        raise ValueError(f"o'clock hour must be 1..12, got {hour!r}")
    mirrored = (6 - hour) % 12 or 12
    return None if mirrored == hour else mirrored


def fuma_to_ambix(samples: np.ndarray) -> np.ndarray:
    """Convert FuMa B-format [W, X, Y, Z] (W scaled by 1/√2) to ambiX [W, Y, Z, X] SN3D.

    Parameters
    ----------
    samples
        Array shaped (frames, 4).

    Returns
    -------
    numpy.ndarray
        A new array shaped (frames, 4) in ambiX order, same dtype.
    """
    samples = require_foa(samples)
    w, x, y, z = samples.T
    return np.stack([w * _SQRT2, y, z, x], axis=1).astype(samples.dtype, copy=False)


def ambix_to_fuma(samples: np.ndarray) -> np.ndarray:
    """Convert ambiX [W, Y, Z, X] SN3D to FuMa [W, X, Y, Z] with W scaled by 1/√2."""
    samples = require_foa(samples)
    w, y, z, x = samples.T
    return np.stack([w / _SQRT2, x, y, z], axis=1).astype(samples.dtype, copy=False)


def n3d_from_sn3d(samples: np.ndarray) -> np.ndarray:
    """Scale the first-order channels of an ambiX SN3D signal by √3 (N3D normalisation).

    In N3D an isotropic diffuse field has an identity covariance, which is what MUSIC's
    noise-subspace model assumes.
    """
    samples = require_foa(samples)
    scale = np.array([1.0, SQRT3, SQRT3, SQRT3], dtype=samples.dtype)
    return samples * scale


def ambix_steering(azimuth_deg: np.ndarray | float, elevation_deg: np.ndarray | float) -> np.ndarray:
    """SN3D first-order real spherical harmonics [1, sinφcosθ, sinθ, cosφcosθ] (ACN order).

    Broadcasts its inputs; the result has a trailing axis of length 4.
    """
    phi = np.radians(azimuth_deg)
    theta = np.radians(elevation_deg)
    phi, theta = np.broadcast_arrays(phi, theta)
    cos_theta = np.cos(theta)
    return np.stack([np.ones_like(phi), np.sin(phi) * cos_theta, np.sin(theta), np.cos(phi) * cos_theta], axis=-1)


def require_foa(samples: np.ndarray) -> np.ndarray:
    samples = np.asarray(samples)
    if samples.ndim != 2 or samples.shape[1] != 4:
        raise ValueError(f"FOA samples must be shaped (frames, 4), got {samples.shape}")
    if not np.issubdtype(samples.dtype, np.floating):
        samples = samples.astype(np.float32)
    return samples


def band_bins(band: tuple[float, float], sample_rate: int, n_fft: int) -> tuple[int, int]:
    """First and one-past-last rfft bin inside ``band`` (clipped to 1 .. Nyquist)."""
    low, high = float(band[0]), float(band[1])
    if not (math.isfinite(low) and math.isfinite(high)) or low < 0 or high <= low:
        raise InputError(f"band must be LOW HIGH in Hz with 0 <= LOW < HIGH, got {band!r}")
    nyquist = sample_rate / 2.0
    if low >= nyquist:
        raise InputError(f"band starts at {low:g} Hz, above the Nyquist frequency {nyquist:g} Hz of this audio")
    first = max(1, int(math.ceil(low * n_fft / sample_rate)))
    last = min(n_fft // 2, int(math.floor(min(high, nyquist) * n_fft / sample_rate)))
    if last < first:
        raise InputError(f"band {low:g}–{high:g} Hz contains no frequency bin at n_fft={n_fft}; widen it")
    return first, last + 1


def blocks_of(samples: np.ndarray, block_frames: int) -> Iterator[np.ndarray]:
    for start in range(0, samples.shape[0], block_frames):
        yield samples[start : start + block_frames]


def angular_distance_deg(az1: float, el1: float, az2: float, el2: float) -> float:
    u = ambix_steering(az1, el1)[1:]
    v = ambix_steering(az2, el2)[1:]
    return float(np.degrees(np.arccos(np.clip(np.dot(u, v), -1.0, 1.0))))


def normalised_direction(azimuth_deg: float, elevation_deg: float) -> tuple[float, float]:
    """Map any (φ, θ) to φ ∈ [−180, 180), θ ∈ [−90, 90] via the unit vector."""
    x, y, z = ambix_steering(azimuth_deg, elevation_deg)[[3, 1, 2]]
    azimuth = math.degrees(math.atan2(y, x))
    elevation = math.degrees(math.atan2(z, math.hypot(x, y)))
    if azimuth >= 180.0:
        azimuth -= 360.0
    return azimuth, elevation
