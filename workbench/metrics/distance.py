"""A prediction's distance error: refusal values, coordinate parsing and the geodesic (pure, light).

This module imports neither numpy nor pandas: the importers and the ALM runner compute each
record's distance and rejection once, when the record is stored (``prediction.distance_error_km``,
``prediction.refused``), and should not pay for the DataFrame stack to do it. :mod:`workbench.metrics.core` re-exports
these names for the metric formulas.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from workbench.agl1k_record import PREDICTED_FIELDS  # noqa: F401 - re-exported for the metrics

REFUSAL_STRINGS = frozenset(
    {"0", "-1", "", "null", "none", "n/a", "na", "unknown", "unable", "cannot", "0.0"}
)
REFUSAL_DISTANCE_KM = 10_000.0


def is_missing(value: Any) -> bool:
    """Whether a value is absent: None, a NaN of any float type, or a pandas missing marker.

    NaN is the one value unequal to itself (Python, numpy and ``pd.NaT`` alike); ``pd.NA``
    refuses to be a truth value at all. Testing that way keeps pandas and numpy out of this module.
    """
    if value is None:
        return True
    if isinstance(value, (str, bool, int)):
        return False
    try:
        return bool(value != value)
    except TypeError:  # pd.NA: "boolean value of NA is ambiguous"
        return True


def is_refusal(value: Any) -> bool:
    """Whether a predicted field is a refusal value in AGL1K's sense.

    Parameters
    ----------
    value : Any
        A predicted field as found in a result record (string, number, None or NaN).

    Returns
    -------
    bool
        True when the value is missing/NaN or its stripped lower-cased text is one of
        ``0, -1, "", null, none, n/a, na, unknown, unable, cannot, 0.0``.
    """
    if type(value) is str:  # the raw text of a result record: the common case, checked first
        return value.strip().lower() in REFUSAL_STRINGS
    if is_missing(value):
        return True
    # str() keeps a JSON 0.0 as "0.0", which AGL1K's refusal list names explicitly.
    return str(value).strip().lower() in REFUSAL_STRINGS


def parse_coordinate(value: Any) -> float | None:
    """Parse a coordinate given as a number or a numeric string; never raises.

    Parameters
    ----------
    value : Any
        The raw value (e.g. ``41.5``, ``"41.5"``, ``" -3 "``, ``"Unknown"``, None).

    Returns
    -------
    float or None
        The finite float value, or None when it is missing, not numeric or not finite.
    """
    # Floats and text first: what a record holds, and cheaper to tell than numbers.Real.
    if type(value) is float:
        return value if math.isfinite(value) else None
    if type(value) is str:
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    if is_missing(value) or isinstance(value, bool):
        return None
    # numpy's scalar types register themselves as numbers.Real.
    if isinstance(value, numbers.Real):
        number = float(value)
    else:
        try:
            number = float(str(value).strip())
        except (TypeError, ValueError):
            return None
    return number if math.isfinite(number) else None


def prediction_error_km(true_lat: Any, true_lon: Any, pred_lat: Any, pred_lon: Any) -> float | None:
    """Geodesic distance (km) between the true and predicted positions on the WGS-84 ellipsoid.

    Parameters
    ----------
    true_lat, true_lon, pred_lat, pred_lon : Any
        Coordinates in degrees, as numbers or numeric strings.

    Returns
    -------
    float or None
        Karney's geodesic distance in km; ``10,000`` when the predicted latitude or longitude is a
        refusal value; None (undefined, left out of the mean) when a coordinate cannot be parsed
        or a latitude lies outside [-90, 90].
    """
    if is_refusal(pred_lat) or is_refusal(pred_lon):
        return REFUSAL_DISTANCE_KM
    return _geodesic_km(true_lat, true_lon, pred_lat, pred_lon)


def _geodesic_km(true_lat: Any, true_lon: Any, pred_lat: Any, pred_lon: Any) -> float | None:
    """:func:`prediction_error_km` once the predicted coordinates are known not to be refusals."""
    coords = [parse_coordinate(v) for v in (true_lat, true_lon, pred_lat, pred_lon)]
    if any(c is None for c in coords):
        return None
    lat1, lon1, lat2, lon2 = coords
    # An impossible latitude has no geodesic; such a row has no defined distance.
    if abs(lat1) > 90 or abs(lat2) > 90:
        return None
    _, _, metres = _wgs84().inv(lon1, lat1, lon2, lat2)
    return float(metres) / 1000.0


_GEOD: Any = None


def _wgs84() -> Any:
    """PROJ's geodesic on WGS-84: Karney's algorithm in C, the same numbers as geographiclib
    (within nanometres; a test compares them) at ~40x its speed, which is what lets an import
    compute every record's distance once (pure-Python geographiclib took 0.14 ms per record)."""
    global _GEOD
    if _GEOD is None:
        from pyproj import Geod

        _GEOD = Geod(ellps="WGS84")
    return _GEOD


def record_refused(values: Any) -> bool:
    """Whether a result record (a mapping of the prediction's fields) is a rejection: any of
    :data:`PREDICTED_FIELDS` is a refusal value (the ``reject_rate`` of the leaderboard)."""
    return any(is_refusal(values.get(name)) for name in PREDICTED_FIELDS)


def record_distance_km(values: Any) -> float | None:
    """:func:`prediction_error_km` of a result record (a mapping of the prediction's fields)."""
    return prediction_error_km(
        values.get("true_latitude"),
        values.get("true_longitude"),
        values.get("predicted_latitude"),
        values.get("predicted_longitude"),
    )


def record_distance_and_refused(values: Any) -> tuple[float | None, bool]:
    """:func:`record_distance_km` and :func:`record_refused` of a result record at once, each
    predicted field tested for a refusal once (an import does this for every record)."""
    lat, lon = values.get("predicted_latitude"), values.get("predicted_longitude")
    lat_refused, lon_refused = is_refusal(lat), is_refusal(lon)
    refused = lat_refused or lon_refused or any(is_refusal(values.get(name)) for name in PREDICTED_FIELDS[2:])
    if lat_refused or lon_refused:
        return REFUSAL_DISTANCE_KM, refused
    return _geodesic_km(values.get("true_latitude"), values.get("true_longitude"), lat, lon), refused


# --- The one rule every reader asks (issue [O]): which truth an answer is measured from, its
# distance error and whether it is a refusal. Import, the ALM runner, review, curation, the
# judges' inputs, error modes, the leaderboard, `clips show` and the human localizers all come
# here; tests/storage/test_one_definition.py fails if a second implementation appears.

# Two positions closer than this (in degrees, ~1 cm) are the same truth: a result file rounds.
SAME_POSITION_DEG = 1e-7


def has_position(lat: Any, lon: Any) -> bool:
    """Whether both coordinates parse as finite numbers."""
    return parse_coordinate(lat) is not None and parse_coordinate(lon) is not None


def truth_position(clip_lat: Any, clip_lon: Any, record_lat: Any = None, record_lon: Any = None) -> tuple[Any, Any]:
    """The position an answer is measured from: the clip's (the dataset's truth is the truth);
    a result record's own true position only for a record whose clip has none (a key that is
    not in the dataset, or a clip without coordinates)."""
    if has_position(clip_lat, clip_lon):
        return clip_lat, clip_lon
    return record_lat, record_lon


def positions_disagree(clip_lat: Any, clip_lon: Any, record_lat: Any, record_lon: Any) -> bool:
    """Whether a record states a true position other than its clip's (both must be known)."""
    clip = (parse_coordinate(clip_lat), parse_coordinate(clip_lon))
    record = (parse_coordinate(record_lat), parse_coordinate(record_lon))
    if None in clip or None in record:
        return False
    return any(abs(a - b) > SAME_POSITION_DEG for a, b in zip(clip, record))  # type: ignore[operator]


def answer_distance_km(
    pred_lat: Any, pred_lon: Any, clip_lat: Any, clip_lon: Any, record_lat: Any = None, record_lon: Any = None
) -> float | None:
    """An answer's distance error (km) measured from :func:`truth_position`: 10,000 km for a
    refused coordinate, None when undefined (see :func:`prediction_error_km`)."""
    true_lat, true_lon = truth_position(clip_lat, clip_lon, record_lat, record_lon)
    return prediction_error_km(true_lat, true_lon, pred_lat, pred_lon)


def record_answer(values: Any, clip_position: tuple[Any, Any] | None = None) -> tuple[float | None, bool]:
    """Distance error and refusal of a result record (a mapping of its fields), measured from
    its clip's position when one is given: what import and the ALM runner store."""
    if clip_position is None or not has_position(*clip_position):
        return record_distance_and_refused(values)
    measured = dict(values)
    measured["true_latitude"], measured["true_longitude"] = clip_position
    return record_distance_and_refused(measured)


def answer_refused(values: Any) -> bool:
    """Whether an answer (a mapping of the predicted fields) is a refusal: the leaderboard's
    reject rule (any predicted field a refusal value)."""
    return record_refused(values)


@dataclass(frozen=True)
class AnswerScore:
    """An answer's distance error (km; None when undefined) and whether it is a refusal.

    ``refused`` is the leaderboard's reject rule (any predicted field a refusal value);
    ``located`` whether the answer names a place at all (both predicted coordinates readable,
    neither a refusal value): an answer without a location is what the error mode "Refusal"
    tags, and what the distance counts as 10,000 km (or leaves undefined when unreadable).
    """

    distance_km: float | None
    refused: bool
    located: bool = True


def stored_answer(prediction: Any, clip: Any | None) -> AnswerScore:
    """The :class:`AnswerScore` of a stored prediction (an ORM row or any object with its
    fields), measured from its clip's position (``clip``: an object with ``latitude`` and
    ``longitude``, or None).

    The distance and refusal stored at import are used when they were measured from that
    truth; a row stored before the import measured from the clip (its record's true position
    disagrees with the clip's) or without stored values is computed here, by the same rule.
    """
    clip_lat = getattr(clip, "latitude", None)
    clip_lon = getattr(clip, "longitude", None)
    rec_lat, rec_lon = prediction.true_latitude, prediction.true_longitude
    refused = prediction.refused
    if refused is None:
        refused = answer_refused({name: getattr(prediction, name, None) for name in PREDICTED_FIELDS})
    pred_lat, pred_lon = prediction.predicted_latitude, prediction.predicted_longitude
    located = not (is_refusal(pred_lat) or is_refusal(pred_lon)) and has_position(pred_lat, pred_lon)
    stored = prediction.distance_error_km
    if stored is not None and not positions_disagree(clip_lat, clip_lon, rec_lat, rec_lon):
        return AnswerScore(float(stored), bool(refused), located)
    distance = answer_distance_km(pred_lat, pred_lon, clip_lat, clip_lon, rec_lat, rec_lon)
    return AnswerScore(distance, bool(refused), located and distance is not None)


def position_gap_km(clip_lat: Any, clip_lon: Any, record_lat: Any, record_lon: Any) -> float | None:
    """How far a record's stated true position lies from its clip's (km; None when unknown)."""
    return _geodesic_km(clip_lat, clip_lon, record_lat, record_lon)
