"""The spatial sound event as plain data (spatial-events.md "The event"), no database.

Conventions are those of ``spatial.md``: azimuth counter-clockwise from the front (+90° =
left), elevation up, degrees. A direction track holds one entry per 100 ms frame from the
event's onset frame: ``[azimuth, elevation]`` or ``[azimuth, elevation, distance_cm]``. For
two-channel clips (``direction_kind == "lateral"``) the azimuth entry is the lateral angle λ
in [−90, 90] and the front/back choice is the expert's, never a guess.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from workbench.errors import InputError

FRAME_S = 0.1  # STARSS23 / DCASE label resolution: one direction per 100 ms

# The 13 STARSS23 classes in index order (DCASE 2023/2024 Task 3).
STARSS23_CLASSES: tuple[str, ...] = (
    "female speech",
    "male speech",
    "clapping",
    "telephone",
    "laughter",
    "domestic sounds",
    "footsteps",
    "door",
    "music",
    "musical instrument",
    "water tap",
    "bell",
    "knock",
)

VOCABULARIES = ("starss23", "audioset", "project")
DIRECTION_KINDS = ("azel", "lateral")
FRONT_BACK = ("front", "back", "undecided")


def vocabulary_of(class_name: str, audioset_names: Any = ()) -> str:
    """The vocabulary a class name belongs to: the 13 STARSS23 classes, else an AudioSet name the
    project knows, else the project's own list (a "Bird" event is never stored as ``starss23``)."""
    if class_name in STARSS23_CLASSES:
        return "starss23"
    return "audioset" if class_name in set(audioset_names) else "project"


def lowest_free_source(events: Any, class_name: str, onset_s: float, offset_s: float,
                       exclude_uid: str | None = None) -> int:
    """The lowest source index no event of ``class_name`` overlapping [onset, offset) holds
    (two overlapping dogs are sources 0 and 1; a dog later on is source 0 again)."""
    taken = {e.source_index for e in events
             if e.class_name == class_name and e.uid != exclude_uid and e.onset_s < offset_s and onset_s < e.offset_s}
    index = 0
    while index in taken:
        index += 1
    return index


def frame_of(time_s: float) -> int:
    """The 100 ms frame index that starts at ``time_s`` (rounded: times are multiples of 0.1 s)."""
    return int(round(time_s / FRAME_S))


def frame_span(onset_s: float, offset_s: float) -> tuple[int, int]:
    """First frame and number of frames an event covers (at least one)."""
    first = int(math.floor(onset_s / FRAME_S + 1e-9))
    last = int(math.ceil(offset_s / FRAME_S - 1e-9))
    return first, max(1, last - first)


def wrap_azimuth(azimuth_deg: float) -> float:
    """Azimuth wrapped to (−180, 180]."""
    wrapped = (azimuth_deg + 180.0) % 360.0 - 180.0
    return 180.0 if wrapped == -180.0 else wrapped


def mirror_lateral(lateral_deg: float) -> float:
    """The azimuth behind the listener that has the same lateral angle (front/back mirror)."""
    return wrap_azimuth(math.copysign(180.0, lateral_deg if lateral_deg != 0 else 1.0) - lateral_deg)


@dataclass(frozen=True)
class SpatialEventData:
    """One sound event: what the annotation says, without storage details.

    ``uid`` is the stable id (None before the event is stored). ``track`` has one entry per
    100 ms frame from ``frame_of(onset_s)``; a static source may give a single entry, which
    holds for every frame.
    """

    onset_s: float
    offset_s: float
    class_name: str
    track: tuple[tuple[float, ...], ...]
    source_index: int = 0
    vocabulary: str = "starss23"
    direction_kind: str = "azel"
    distance_cm: float | None = None
    front_back: str | None = None
    confidence: float | None = None
    note: str | None = None
    uid: str | None = None
    clip_id: int | None = None
    annotator_id: int | None = None
    version: int = 0
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def n_frames(self) -> int:
        return frame_span(self.onset_s, self.offset_s)[1]

    def direction_at(self, frame_offset: int) -> tuple[float, ...]:
        """Track entry of the ``frame_offset``-th frame (a one-entry track holds throughout)."""
        if len(self.track) == 1:
            return self.track[0]
        return self.track[min(frame_offset, len(self.track) - 1)]

    def mean_direction(self) -> tuple[float, float]:
        """Mean (azimuth, elevation) of the track (circular mean of the azimuth)."""
        az = [math.radians(t[0]) for t in self.track]
        el = [t[1] for t in self.track]
        mean_az = math.degrees(math.atan2(sum(math.sin(a) for a in az), sum(math.cos(a) for a in az)))
        return mean_az, sum(el) / len(el)

    def world_azimuth(self) -> float | None:
        """Azimuth in the full circle: for a lateral track it needs the expert's front/back choice.

        Returns None for a lateral event whose front/back is undecided (unknown, never guessed).
        """
        az, _ = self.mean_direction()
        if self.direction_kind == "azel":
            return az
        if self.front_back == "front":
            return az
        if self.front_back == "back":
            return mirror_lateral(az)
        return None

    def mean_distance_cm(self) -> float | None:
        """Event distance: the stored one, else the mean of the track's per-frame distances."""
        if self.distance_cm is not None:
            return self.distance_cm
        values = [t[2] for t in self.track if len(t) > 2 and t[2] is not None]
        return sum(values) / len(values) if values else None

    def with_changes(self, **changes: Any) -> "SpatialEventData":
        return replace(self, **changes)


def validate_event(event: SpatialEventData, *, clip_duration_s: float | None = None, where: str = "event") -> SpatialEventData:
    """Check an event's fields; returns it with the track as tuples of floats.

    Raises
    ------
    InputError
        One line naming ``where`` and the field: a time span that is empty, negative or past
        the clip's end, an azimuth outside [−180, 180] (lateral: [−90, 90]), an elevation outside
        [−90, 90], a negative distance, an unknown front/back value, a confidence outside [0, 1].
    """
    if not (math.isfinite(event.onset_s) and math.isfinite(event.offset_s)):
        raise InputError(f"{where}: onset/offset must be numbers")
    if event.onset_s < 0:
        raise InputError(f"{where}: onset {event.onset_s:g} s is negative")
    if event.offset_s <= event.onset_s:
        raise InputError(f"{where}: offset {event.offset_s:g} s is not after onset {event.onset_s:g} s")
    if clip_duration_s is not None and event.offset_s > clip_duration_s + FRAME_S / 2:
        raise InputError(
            f"{where}: event ends at {event.offset_s:g} s, past the clip's end ({clip_duration_s:g} s)"
        )
    if not event.class_name or not event.class_name.strip():
        raise InputError(f"{where}: class is empty")
    if event.vocabulary not in VOCABULARIES:
        raise InputError(f"{where}: vocabulary must be one of {', '.join(VOCABULARIES)}, got {event.vocabulary!r}")
    if event.direction_kind not in DIRECTION_KINDS:
        raise InputError(f"{where}: direction kind must be azel or lateral, got {event.direction_kind!r}")
    if event.source_index < 0:
        raise InputError(f"{where}: source index {event.source_index} is negative")
    if event.front_back is not None:
        if event.front_back not in FRONT_BACK:
            raise InputError(f"{where}: front/back must be front, back or undecided, got {event.front_back!r}")
        if event.direction_kind != "lateral":
            raise InputError(f"{where}: front/back applies only to two-channel (lateral) events")
    if event.confidence is not None and not 0.0 <= event.confidence <= 1.0:
        raise InputError(f"{where}: confidence {event.confidence:g} is outside [0, 1]")
    if event.distance_cm is not None and not (math.isfinite(event.distance_cm) and event.distance_cm >= 0):
        raise InputError(f"{where}: distance {event.distance_cm} cm must be a non-negative number")
    if not event.track:
        raise InputError(f"{where}: the direction track is empty")
    n_frames = event.n_frames
    if len(event.track) not in (1, n_frames):
        raise InputError(
            f"{where}: the direction track has {len(event.track)} frames; the span needs 1 or {n_frames}"
        )
    az_limit = 90.0 if event.direction_kind == "lateral" else 180.0
    clean: list[tuple[float, ...]] = []
    for i, entry in enumerate(event.track):
        if len(entry) not in (2, 3):
            raise InputError(f"{where}: track frame {i} must be [azimuth, elevation(, distance_cm)]")
        az, el = float(entry[0]), float(entry[1])
        if not (math.isfinite(az) and -az_limit <= az <= az_limit):
            name = "lateral angle" if event.direction_kind == "lateral" else "azimuth"
            raise InputError(f"{where}: track frame {i}: {name} {entry[0]} is outside [{-az_limit:g}, {az_limit:g}]")
        if not (math.isfinite(el) and -90.0 <= el <= 90.0):
            raise InputError(f"{where}: track frame {i}: elevation {entry[1]} is outside [-90, 90]")
        if len(entry) == 3 and entry[2] is not None:
            d = float(entry[2])
            if not (math.isfinite(d) and d >= 0):
                raise InputError(f"{where}: track frame {i}: distance {entry[2]} cm must be non-negative")
            clean.append((az, el, d))
        else:
            clean.append((az, el))
    return replace(event, track=tuple(clean), class_name=event.class_name.strip())
