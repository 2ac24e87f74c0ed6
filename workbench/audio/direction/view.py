"""What the review window's direction view shows, as plain data built from an analysis.

The image is time-aligned with the spectrogram: FOA shows the direct energy per azimuth bin
and frame, binaural / AB pairs one mark per frame at its lateral angle, coincident and plain
stereo pairs one mark at the level panorama index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.audio.direction.analysis import DirectionAnalysis

AB_SPACING_SETTING = "ab_spacing_m"
AB_NEEDS_SPACING = (
    "AB (spaced pair) recording: its direction view needs the microphone spacing. Set it in "
    "config.toml, e.g. `ab_spacing_m = 0.5` (metres), or choose another layout for the clip."
)
MONO_NOTE = "Mono recording: it carries no direction information."
# Azimuth bins of the FOA heatmap the view shows (5° each).
HEATMAP_BINS = 72


@dataclass(frozen=True)
class DirectionImage:
    """What the direction view shows, time-aligned with the spectrogram.

    Attributes
    ----------
    kind
        ``azimuth`` (FOA: energy per azimuth bin × frame), ``lateral`` (binaural / AB:
        frames per lateral-angle bin, front/back mirror ambiguous), ``panorama``
        (coincident or plain stereo: level panorama index), or ``none`` (mono or no
        usable direction; ``image`` is None and ``note`` says why).
    image
        float32 shaped (n_direction_bins, n_frames), rows from ``y_range[0]`` upwards.
    t0, t1
        Time span covered by the columns.
    y_range
        Direction value at the bottom and top edge of the image.
    y_label
        Axis label.
    note
        A sentence for the user (the mirror caveat, or why nothing is shown).
    """

    kind: str
    image: Any
    t0: float
    t1: float
    y_range: tuple[float, float]
    y_label: str
    note: str


def no_direction_image(note: str) -> DirectionImage:
    """A view with nothing to draw and ``note`` saying why."""
    return DirectionImage("none", None, 0.0, 0.0, (0.0, 1.0), "", note)


def unavailable_note(layout: str | None, n_channels: int, spacing_m: float | None) -> str | None:
    """Why a clip gets no direction view before any analysis (mono, AB without spacing), else None.

    These are facts about the recording or a missing setting, not errors: the note says what
    to set or that there is nothing to show.
    """
    chosen = layout or ("ambix" if n_channels == 4 else "stereo" if n_channels >= 2 else "mono")
    if n_channels < 2 or chosen == "mono":
        return MONO_NOTE
    if chosen == "ab" and not (spacing_m is not None and spacing_m > 0):
        return AB_NEEDS_SPACING
    return None


def _time_span(times: np.ndarray) -> tuple[float, float]:
    if not len(times):
        return 0.0, 0.0
    step = float(times[1] - times[0]) if len(times) > 1 else 0.1
    return float(times[0] - step / 2), float(times[-1] + step / 2)


def direction_image(analysis: DirectionAnalysis) -> DirectionImage:
    """The direction view of an analysis (FOA analyses need their heatmap: ``heatmap_bins``).

    Parameters
    ----------
    analysis
        From :class:`~workbench.audio.direction.analysis.DirectionAnalyzer` or
        :func:`~workbench.audio.direction.analysis.analyze_file`; an FOA analysis must carry its
        heatmap (``heatmap_bins=HEATMAP_BINS``).

    Returns
    -------
    DirectionImage
    """
    if analysis.method == "foa":
        heatmap = analysis.heatmap
        if heatmap is None:
            raise ValueError("an FOA direction view needs the analysis' heatmap (analyse with heatmap_bins)")
        values = np.asarray(heatmap.values, dtype=np.float32)
        peak = float(values.max()) if values.size else 0.0
        image = values / peak if peak > 0 else values
        t0, t1 = _time_span(np.asarray(heatmap.times, dtype=float))
        edges = heatmap.azimuth_edges_deg
        return DirectionImage(
            "azimuth", image, t0, t1, (float(edges[0]), float(edges[-1])),
            "azimuth (°, +90 = left)", "FOA azimuth × time (direct energy; counter-clockwise from the front).",
        )
    frames = analysis.frames
    times = np.asarray(frames.t, dtype=float)
    if analysis.method == "panorama":
        values = np.asarray(frames.panorama_index, dtype=float)  # type: ignore[union-attr]
        edges = np.linspace(-1.0, 1.0, 41)
        kind, label = "panorama", "panorama index (+1 = left)"
        note = f"{analysis.layout}: a level panorama index, not an angle."
    else:
        values = np.asarray(frames.lateral_deg, dtype=float)  # type: ignore[union-attr]
        edges = np.linspace(-90.0, 90.0, 37)
        kind, label = "lateral", "lateral angle (°, +90 = left)"
        note = "Lateral angle from the time difference: front and back cannot be told apart (each angle has a mirror)."
        if analysis.layout == "ab":
            note = f"AB pair, spacing {analysis.spacing_m:g} m (config.toml {AB_SPACING_SETTING}). " + note
    image = np.zeros((len(edges) - 1, len(times)), dtype=np.float32)
    valid = np.isfinite(values)
    rows = np.clip(np.searchsorted(edges, values[valid], side="right") - 1, 0, len(edges) - 2)
    image[rows, np.flatnonzero(valid)] = 1.0
    t0, t1 = _time_span(times)
    return DirectionImage(kind, image, t0, t1, (float(edges[0]), float(edges[-1])), label, note)

