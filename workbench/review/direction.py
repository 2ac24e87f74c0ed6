"""The direction view of a clip: what the review window draws under the spectrogram (spatial.md).

The image is built in :mod:`workbench.audio.direction.view` from a direction analysis; this
module adds the project setting it needs (the AB microphone spacing in ``config.toml``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from workbench.audio.direction.view import (
    AB_NEEDS_SPACING,
    AB_SPACING_SETTING,
    HEATMAP_BINS,
    DirectionImage,
    no_direction_image,
    unavailable_note,
)
from workbench.errors import InputError

__all__ = ["AB_NEEDS_SPACING", "AB_SPACING_SETTING", "DirectionImage", "ab_spacing_from_config", "direction_image"]


def ab_spacing_from_config() -> tuple[float | None, str | None]:
    """The AB microphone spacing configured for the direction view.

    Read from the ``ab_spacing_m`` key (metres) of the user's ``config.toml``. There is no
    built-in default: a guessed spacing would silently give wrong angles.

    Returns
    -------
    tuple[float or None, str or None]
        The spacing (None when unset or unusable) and, when the configured value is unusable
        or the file cannot be read, a sentence saying why.
    """
    from workbench.config import Settings

    try:
        value = Settings.load().extra.get(AB_SPACING_SETTING)
    except InputError as exc:
        return None, str(exc)
    if value is None:
        return None, None
    try:
        spacing = float(value)
    except (TypeError, ValueError):
        spacing = float("nan")
    if not (math.isfinite(spacing) and 0.0 < spacing <= 100.0):
        return None, f"config.toml: {AB_SPACING_SETTING} = {value!r} is not a spacing in metres (0 < d <= 100)"
    return spacing, None


def direction_image(
    path: Path,
    layout: str | None,
    n_channels: int,
    *,
    spacing_m: float | None = None,
    audio: Any = None,
) -> DirectionImage:
    """The direction view of a clip's recording.

    Parameters
    ----------
    path
        The audio file (analysed from the file when ``audio`` is None).
    layout
        The clip's layout; detected from ``n_channels`` when None.
    n_channels
        Channels in the file.
    spacing_m
        Microphone spacing of an AB pair in metres (see :func:`ab_spacing_from_config`).
        Without it an AB clip gets no view, only a note saying what to set.
    audio
        The file already decoded (:class:`workbench.audio.loader.AudioData`): the analysis
        then runs on its samples instead of decoding the file again.

    Returns
    -------
    DirectionImage
        ``kind`` ``none`` with a note for mono recordings and for AB without a spacing.
    """
    from workbench.audio.direction import analyze_file, analyze_samples, direction_image as image_of

    note = unavailable_note(layout, n_channels, spacing_m)
    if note is not None:
        return no_direction_image(note)
    if audio is not None:
        analysis = analyze_samples(audio.samples, audio.sample_rate, layout=layout, spacing_m=spacing_m,
                                   name=str(path), heatmap_bins=HEATMAP_BINS)
    else:
        analysis = analyze_file(path, layout=layout, spacing_m=spacing_m, heatmap_bins=HEATMAP_BINS)
    return image_of(analysis)
