"""Direction pre-fill for an event's span (and band) from the existing direction analysis.

FOA: the band-summed pseudo-intensity vectors of the span's ~100 ms frames, weighted by their
direct energy E·(1 − ψ), summed: the direction of the sum (diffuse noise averages out). Per
frame, the same vector gives a track for a moving source.
Two channels (binaural): the lateral angle from the median GCC-PHAT ITD (Woodworth model), with
both o'clock candidates (front and its back mirror): which one it is stays the expert's call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from workbench.audio.direction import (
    DEFAULT_BAND_HZ,
    foa_frames,
    gcc_phat_frames,
    lateral_from_itd_woodworth,
    oclock,
    oclock_mirror,
)
from workbench.errors import InputError
from workbench.events.model import FRAME_S, mirror_lateral


@dataclass(frozen=True)
class DirectionPrefill:
    """A suggested direction for a span.

    ``kind`` is ``azel`` (FOA: ``azimuth_deg``, ``elevation_deg``) or ``lateral`` (two channels:
    ``azimuth_deg`` holds the lateral angle, ``elevation_deg`` is 0, ``hours`` the two o'clock
    candidates front and back). ``track`` has one (azimuth, elevation) per 100 ms frame of the
    span (NaN where a frame is silent). ``confidence`` is 1 − diffuseness (FOA) or the share of
    frames whose ITD agrees with the median within 0.1 ms (two channels).
    """

    kind: str
    azimuth_deg: float
    elevation_deg: float
    track: tuple[tuple[float, float], ...]
    confidence: float
    hours: tuple[int, ...] = ()


def _span(samples: np.ndarray, sample_rate: int, start_s: float, end_s: float) -> np.ndarray:
    if end_s <= start_s:
        raise InputError(f"the span {start_s:g}-{end_s:g} s is empty")
    a = max(0, int(round(start_s * sample_rate)))
    b = min(samples.shape[0], int(round(end_s * sample_rate)))
    if b - a < int(FRAME_S * sample_rate):
        raise InputError(f"the span {start_s:g}-{end_s:g} s is shorter than one 100 ms frame of the clip")
    return samples[a:b]


def prefill_foa(
    samples_ambix: np.ndarray, sample_rate: int, start_s: float, end_s: float,
    band: tuple[float, float] | None = None,
) -> DirectionPrefill:
    """Suggested azimuth/elevation of the dominant direct sound in a span of an ambiX clip."""
    span = _span(samples_ambix, sample_rate, start_s, end_s)
    n_fft = 1024 if sample_rate >= 32_000 else 512
    frames = foa_frames(span, sample_rate, n_fft=n_fft, hop=n_fft // 2, band=band or DEFAULT_BAND_HZ, frame_s=FRAME_S)
    ok = np.isfinite(frames.azimuth_deg) & np.isfinite(frames.diffuseness)
    if not ok.any():
        raise InputError(f"the span {start_s:g}-{end_s:g} s is silent in the analysis band; no direction to suggest")
    az = np.radians(frames.azimuth_deg[ok])
    el = np.radians(frames.elevation_deg[ok])
    weight = frames.energy[ok] * np.clip(1.0 - frames.diffuseness[ok], 0.0, 1.0)
    vectors = np.stack([np.cos(az) * np.cos(el), np.sin(az) * np.cos(el), np.sin(el)], axis=-1) * weight[:, None]
    total = vectors.sum(0)
    azimuth = math.degrees(math.atan2(total[1], total[0]))
    elevation = math.degrees(math.atan2(total[2], math.hypot(total[0], total[1])))
    direct = float(np.linalg.norm(total) / max(frames.energy[ok].sum(), 1e-30))
    track = tuple(
        (float(a), float(e)) for a, e in zip(frames.azimuth_deg, frames.elevation_deg)
    )
    return DirectionPrefill("azel", azimuth, elevation, track, min(1.0, direct), ())


def prefill_binaural(
    samples_lr: np.ndarray, sample_rate: int, start_s: float, end_s: float,
    band: tuple[float, float] | None = None,
) -> DirectionPrefill:
    """Suggested lateral angle (+ = left) of a span of a binaural clip, with both o'clock candidates."""
    span = _span(samples_lr, sample_rate, start_s, end_s)
    _, tau = gcc_phat_frames(span[:, 0], span[:, 1], sample_rate, frame_s=FRAME_S, band=band)
    itd = -tau[np.isfinite(tau)]
    if itd.size == 0:
        raise InputError(f"the span {start_s:g}-{end_s:g} s is silent; no direction to suggest")
    median_itd = float(np.median(itd))
    lateral = math.degrees(float(lateral_from_itd_woodworth(median_itd)))
    agree = float(np.mean(np.abs(itd - median_itd) <= 1e-4))
    per_frame = np.degrees(np.asarray(lateral_from_itd_woodworth(-tau)))
    track = tuple((float(a), 0.0) for a in np.atleast_1d(per_frame))
    front = oclock(lateral)
    back = oclock_mirror(front)
    hours = (front,) if back is None else (front, back)
    return DirectionPrefill("lateral", lateral, 0.0, track, agree, hours)


def prefill_direction(
    samples: np.ndarray, sample_rate: int, layout: str, start_s: float, end_s: float,
    band: tuple[float, float] | None = None,
) -> DirectionPrefill:
    """Suggested direction for a span by the clip's layout (``ambix``/``fuma`` or ``binaural``).

    Raises
    ------
    InputError
        A mono clip or a layout without a lateral model (stereo, XY, MS), an empty or silent span.
    """
    from workbench.audio.direction import fuma_to_ambix

    if layout in ("ambix", "fuma"):
        if samples.ndim != 2 or samples.shape[1] != 4:
            raise InputError(f"an FOA clip needs 4 channels, got {samples.shape[1] if samples.ndim == 2 else 1}")
        ambix = fuma_to_ambix(samples) if layout == "fuma" else samples
        return prefill_foa(ambix, sample_rate, start_s, end_s, band)
    if layout == "binaural":
        if samples.ndim != 2 or samples.shape[1] != 2:
            raise InputError("a binaural clip needs 2 channels")
        return prefill_binaural(samples, sample_rate, start_s, end_s, band)
    raise InputError(
        f"no direction pre-fill for a {layout} clip: events get directions from FOA (4 channels) or binaural clips; "
        "set the clip's layout if it is one of those"
    )


def lateral_to_azimuths(lateral_deg: float) -> tuple[float, float]:
    """The front and back azimuths sharing a lateral angle."""
    return lateral_deg, mirror_lateral(lateral_deg)
