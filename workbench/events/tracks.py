"""Direction tracks drawn by hand: a dragged path turned into per-frame track values.

The direction view shows time on x and the (lateral) azimuth on y. A drag is a polyline of
pointer positions; the track gets a value at every 100 ms frame the polyline passes over,
read off the polyline (linear between pointer positions, so a fast drag that jumps over
frames still fills them). Frames the drag did not pass over keep their values: a drag
replaces that part of the track only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from workbench.events.model import FRAME_S, frame_span


def dragged_frames(path: Sequence[tuple[float, float]], first_frame: int, n_frames: int) -> dict[int, float]:
    """Track values (frame offset from the event's first frame → angle) a dragged path sets.

    Parameters
    ----------
    path
        Pointer positions in drag order, as (time s, angle °).
    first_frame
        The event's first 100 ms frame (``frame_span(onset, offset)[0]``).
    n_frames
        The event's number of frames; frames outside the event are ignored.

    Returns
    -------
    dict
        One angle per frame passed over. Where the drag goes back over a frame, the later
        pass wins (the expert corrected it).
    """
    values: dict[int, float] = {}
    points = [(float(t), float(a)) for t, a in path if math.isfinite(t) and math.isfinite(a)]
    if not points:
        return values
    segments = list(zip(points[:-1], points[1:])) or [(points[0], points[0])]
    for (ta, aa), (tb, ab) in segments:
        lo, hi = min(ta, tb), max(ta, tb)
        for frame in range(math.floor(lo / FRAME_S + 1e-9), math.floor(hi / FRAME_S + 1e-9) + 1):
            k = frame - first_frame
            if not 0 <= k < n_frames:
                continue
            # The frame's centre, held inside the segment: the end frames get the pointer's own value.
            t = min(hi, max(lo, (frame + 0.5) * FRAME_S))
            values[k] = aa if tb == ta else aa + (ab - aa) * (t - ta) / (tb - ta)
    return values


def apply_dragged_path(
    track: Sequence[Sequence[float]], onset_s: float, offset_s: float, path: Sequence[tuple[float, float]],
    *, limit_deg: float = 180.0,
) -> tuple[tuple[tuple[float, ...], ...], list[int]]:
    """The event's track with the frames a dragged path passes over replaced.

    A one-entry (static) track is first spread over all the event's frames. Elevations (and
    distances) of the replaced frames are kept; angles are clipped to ±``limit_deg`` and
    rounded to 0.1°.

    Returns
    -------
    tuple
        The new track (one entry per frame) and the sorted frame offsets that changed hands.
    """
    first, n = frame_span(onset_s, offset_s)
    full = [tuple(track[0])] * n if len(track) == 1 else [tuple(track[min(k, len(track) - 1)]) for k in range(n)]
    values = dragged_frames(path, first, n)
    for k, angle in values.items():
        clipped = round(max(-limit_deg, min(limit_deg, angle)), 1)
        full[k] = (clipped, *full[k][1:])
    return tuple(full), sorted(values)


def is_moving(track: Sequence[Sequence[float]]) -> bool:
    """Whether a track changes direction over its frames (a static source has one value)."""
    return len({tuple(t) for t in track}) > 1

