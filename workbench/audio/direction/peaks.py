"""Dominant directions of reduced maps: 1-D angle histograms, sphere histograms, weighted values."""

from __future__ import annotations

import math

import numpy as np

from workbench.audio.direction.conventions import angular_distance_deg

def azimuth_peaks(
    profile: np.ndarray,
    edges_deg: np.ndarray,
    *,
    max_peaks: int = 3,
    min_relative: float = 0.1,
    circular: bool = True,
) -> list[tuple[float, float]]:
    """Dominant directions of a 1-D energy histogram over angle.

    Parameters
    ----------
    profile
        Non-negative energy per bin (e.g. a heatmap summed over time).
    edges_deg
        Bin edges in degrees (``len(profile) + 1``).
    max_peaks
        At most this many peaks, strongest first.
    min_relative
        Local maxima lower than this fraction of the highest bin are ignored.
    circular
        Whether the first and last bins are neighbours (azimuth) or not (lateral angle).

    Returns
    -------
    list[tuple[float, float]]
        ``(angle_deg, weight)``: the angle is the energy-weighted mean over the peak bin and its
        two neighbours (sub-bin accuracy), the weight is that neighbourhood's share of all energy.
    """
    profile = np.asarray(profile, dtype=np.float64)
    edges_deg = np.asarray(edges_deg, dtype=np.float64)
    if profile.ndim != 1 or edges_deg.shape != (profile.size + 1,):
        raise ValueError("profile must be 1-D and edges_deg one longer than it")
    total = float(profile.sum())
    if profile.size == 0 or total <= 0:
        return []
    centres = (edges_deg[:-1] + edges_deg[1:]) / 2.0
    n = profile.size
    if circular:
        left, right = np.roll(profile, 1), np.roll(profile, -1)
    else:
        left = np.concatenate([[-np.inf], profile[:-1]])
        right = np.concatenate([profile[1:], [-np.inf]])
    # Ties on a plateau: count only its first bin, so one flat peak is not reported twice.
    is_peak = (profile > left) & (profile >= right) & (profile >= min_relative * profile.max())
    candidates = np.nonzero(is_peak)[0]
    candidates = candidates[np.argsort(profile[candidates])[::-1]][:max_peaks]
    span = edges_deg[-1] - edges_deg[0]
    peaks = []
    for index in candidates:
        neighbours = np.array([index - 1, index, index + 1])
        if circular:
            neighbours %= n
        else:
            neighbours = neighbours[(neighbours >= 0) & (neighbours < n)]
        weights = profile[neighbours]
        angles = centres[neighbours]
        if circular:
            # Unwrap neighbours around the peak so the mean across ±180° is right.
            angles = centres[index] + (angles - centres[index] + span / 2) % span - span / 2
        angle = float(np.sum(weights * angles) / np.sum(weights))
        if circular:
            angle = (angle - edges_deg[0]) % span + edges_deg[0]
        peaks.append((angle, float(np.sum(weights) / total)))
    return peaks


def sphere_peaks(
    histogram: np.ndarray, vector_sums: np.ndarray, bin_deg: float, *, max_peaks: int = 3, min_relative: float = 0.1
) -> list[dict[str, float]]:
    """Peaks of an (n_el, n_az) direction histogram.

    Each peak points along the summed weighted unit vectors (``vector_sums``, shaped
    (3, n_el, n_az) as x, y, z) of its 3×3 neighbourhood, so it is not limited to bin centres.
    """
    total = float(histogram.sum())
    if total <= 0:
        return []
    n_el, n_az = histogram.shape
    import scipy.ndimage

    neighbourhood_max = scipy.ndimage.maximum_filter(histogram, size=3, mode=("nearest", "wrap"))
    is_peak = (histogram == neighbourhood_max) & (histogram >= min_relative * histogram.max()) & (histogram > 0)
    el_index, az_index = np.nonzero(is_peak)
    order = np.argsort(histogram[el_index, az_index])[::-1]
    peaks: list[dict[str, float]] = []
    for index in order:
        e, a = el_index[index], az_index[index]
        rows = np.clip(np.arange(e - 1, e + 2), 0, n_el - 1)
        cols = np.arange(a - 1, a + 2) % n_az
        block = histogram[np.ix_(rows, cols)]
        mean_vector = vector_sums[:, rows][:, :, cols].sum(axis=(1, 2))
        azimuth = math.degrees(math.atan2(mean_vector[1], mean_vector[0]))
        elevation = math.degrees(math.atan2(mean_vector[2], math.hypot(mean_vector[0], mean_vector[1])))
        if any(angular_distance_deg(azimuth, elevation, p["azimuth_deg"], p["elevation_deg"]) < 2 * bin_deg
               for p in peaks):
            continue
        peaks.append({"azimuth_deg": azimuth, "elevation_deg": elevation, "weight": float(block.sum() / total)})
        if len(peaks) == max_peaks:
            break
    return peaks


def value_peaks(values: np.ndarray, weights: np.ndarray, edges: np.ndarray) -> list[tuple[float, float]]:
    """Peaks of weighted per-frame values (non-circular), each placed at the weighted mean of
    the frames within its histogram neighbourhood rather than at a bin centre."""
    histogram, _ = np.histogram(values, bins=edges, weights=weights)
    bin_width = float(edges[1] - edges[0])
    peaks = []
    for centre, weight in azimuth_peaks(histogram, edges, circular=False):
        near = np.abs(values - centre) <= 1.5 * bin_width
        if np.sum(weights[near]) > 0:
            centre = float(np.average(values[near], weights=weights[near]))
        peaks.append((centre, weight))
    return peaks
