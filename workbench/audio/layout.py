"""Channel-layout detection (spatial.md "Conventions").

Four channels are first-order Ambisonics (ambiX unless set to FuMa); two channels are plain
stereo unless the clip's metadata names a binaural head or a coincident/spaced microphone pair.
A curator's override always wins.
"""

from __future__ import annotations

import re

from workbench.errors import InputError

LAYOUTS: tuple[str, ...] = ("mono", "stereo", "binaural", "ab", "xy", "ms", "ambix", "fuma")

_CHANNELS_OF_LAYOUT = {
    "mono": 1,
    "stereo": 2,
    "binaural": 2,
    "ab": 2,
    "xy": 2,
    "ms": 2,
    "ambix": 4,
    "fuma": 4,
}

# Order matters: a description mentioning both a dummy head and "stereo" is binaural.
_TWO_CHANNEL_HINTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("binaural", re.compile(r"binaural|dummy[\s-]?head|kunstkopf|in[\s-]?ear mic", re.IGNORECASE)),
    ("ms", re.compile(r"\bm\s*/?\s*s\b(?:[\s-]*(?:setup|stereo|pair|mic|technique|recording))?|mid[\s-]?side", re.IGNORECASE)),
    ("xy", re.compile(r"\bx\s*/?\s*y\b|\bxy[\s-]?(?:pair|setup|stereo|mic)", re.IGNORECASE)),
    ("ab", re.compile(r"\ba\s*/?\s*b\b(?:[\s-]*(?:pair|setup|stereo|mic|technique|spaced))|spaced[\s-]?pair|\bab[\s-]?(?:pair|setup|stereo)", re.IGNORECASE)),
)

_FUMA_HINT = re.compile(r"\bfuma\b|furse[\s-]?malham|b[\s-]?format \(fuma\)", re.IGNORECASE)


def detect_layout(n_channels: int, description: str | None = None, override: str | None = None) -> str:
    """Decide a clip's channel layout.

    Parameters
    ----------
    n_channels
        Number of channels in the file.
    description
        Free-text metadata (e.g. the Aporee description); used to recognise binaural and
        microphone-pair recordings.
    override
        A curator's choice; it always wins (case-insensitive).

    Returns
    -------
    str
        One of ``mono``, ``stereo``, ``binaural``, ``ab``, ``xy``, ``ms``, ``ambix``, ``fuma``.

    Raises
    ------
    InputError
        If ``override`` is not a known layout, or ``n_channels`` is below 1.
    """
    if override is not None and override.strip():
        chosen = override.strip().lower()
        if chosen not in LAYOUTS:
            raise InputError(
                f"unknown layout override {override!r}: choose one of {', '.join(LAYOUTS)}"
            )
        return chosen
    if n_channels < 1:
        raise InputError(f"cannot detect a layout for {n_channels} channels: the file has no audio channels")
    text = description or ""
    if n_channels == 1:
        return "mono"
    if n_channels == 2:
        for layout, pattern in _TWO_CHANNEL_HINTS:
            if pattern.search(text):
                return layout
        return "stereo"
    if n_channels == 4:
        return "fuma" if _FUMA_HINT.search(text) else "ambix"
    # Other channel counts have no spatial convention here: the direction view treats them
    # as a stereo pair of the first two channels.
    return "stereo"


def channels_for_layout(layout: str) -> int:
    """Number of channels a layout needs (1, 2 or 4)."""
    try:
        return _CHANNELS_OF_LAYOUT[layout]
    except KeyError:
        raise InputError(f"unknown layout {layout!r}: choose one of {', '.join(LAYOUTS)}") from None
