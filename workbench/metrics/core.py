"""Leaderboard metric formulas for ALM geo-localization records (pure functions, no storage).

The ``agl1k`` profile follows AGL1K's published analysis literally (see
``design/data-and-metrics.md``); the ``iso`` profile resolves countries to ISO 3166-1 codes so that
naming differences ("Korea, Republic of" vs "South Korea") do not count as errors.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import pycountry
from geographiclib.geodesic import Geodesic

from workbench.metrics.continents import continent_of_iso
from workbench.metrics.keys import METRIC_KEYS, PROFILES, Profile  # re-exported: callers import them from here

REFUSAL_STRINGS = frozenset(
    {"0", "-1", "", "null", "none", "n/a", "na", "unknown", "unable", "cannot", "0.0"}
)
REFUSAL_DISTANCE_KM = 10_000.0
GEOSCORE_MAX = 5000.0
GEOSCORE_SCALE_KM = 1492.0
WITHIN_THRESHOLDS_KM = (1, 10, 100, 1000)


PREDICTED_FIELDS = (
    "predicted_latitude",
    "predicted_longitude",
    "predicted_city",
    "predicted_country",
    "predicted_continent",
)
REQUIRED_COLUMNS = (
    "true_latitude",
    "true_longitude",
    "true_city",
    "true_country",
    "true_continent",
    *PREDICTED_FIELDS,
)

# Keys are lower-cased with "," "." ";" removed, exactly as the lookup key is built.
_AGL1K_COUNTRY_VARIANTS: dict[str, str] = {
    "usa": "United States",
    "us": "United States",
    "america": "United States",
    "united states of america": "United States",
    "uk": "United Kingdom",
    "great britain": "United Kingdom",
    "britain": "United Kingdom",
    "england": "United Kingdom",
    "holland": "Netherlands",
    "czech republic": "Czechia",
    "czech": "Czechia",
    "türkiye": "Turkey",
    "turkiye": "Turkey",
    "russian federation": "Russia",
    "korea": "South Korea",
    "republic of korea": "South Korea",
    "s korea": "South Korea",
    "dprk": "North Korea",
    "n korea": "North Korea",
    "democratic people's republic of korea": "North Korea",
    "people's republic of china": "China",
    "prc": "China",
    "mainland china": "China",
    "deutschland": "Germany",
    "italia": "Italy",
    "españa": "Spain",
    "espana": "Spain",
    "brasil": "Brazil",
    "méxico": "Mexico",
    "bharat": "India",
    "nippon": "Japan",
    "suisse": "Switzerland",
    "schweiz": "Switzerland",
    "österreich": "Austria",
    "osterreich": "Austria",
    "sverige": "Sweden",
    "norge": "Norway",
    "danmark": "Denmark",
    "suomi": "Finland",
    "polska": "Poland",
    "magyarország": "Hungary",
    "magyarorszag": "Hungary",
    "românia": "Romania",
    "hellas": "Greece",
    "éire": "Ireland",
    "eire": "Ireland",
    "viet nam": "Vietnam",
    "siam": "Thailand",
    "luxemburg": "Luxembourg",
    "belorussia": "Belarus",
    "islamic republic of iran": "Iran",
    "arab republic of egypt": "Egypt",
}

# Names pycountry does not resolve by itself (or resolves to the wrong entity); same key format.
_ISO_ALIASES: dict[str, str] = {
    "south korea": "KR",
    "korea republic of": "KR",
    "republic of korea": "KR",
    "korea": "KR",
    "s korea": "KR",
    "north korea": "KP",
    "dprk": "KP",
    "n korea": "KP",
    "turkey": "TR",
    "türkiye": "TR",
    "turkiye": "TR",
    "vatican": "VA",
    "vatican city": "VA",
    "vatican city state": "VA",
    "holy see": "VA",
    "the vatican": "VA",
    "uk": "GB",
    "great britain": "GB",
    "britain": "GB",
    "england": "GB",
    "scotland": "GB",
    "wales": "GB",
    "northern ireland": "GB",
    "usa": "US",
    "us": "US",
    "america": "US",
    "united states of america": "US",
    "russia": "RU",
    "taiwan": "TW",
    "iran": "IR",
    "syria": "SY",
    "vietnam": "VN",
    "laos": "LA",
    "bolivia": "BO",
    "venezuela": "VE",
    "tanzania": "TZ",
    "moldova": "MD",
    "palestine": "PS",
    "ivory coast": "CI",
    "cote d'ivoire": "CI",
    "czech republic": "CZ",
    "holland": "NL",
    "burma": "MM",
    "macedonia": "MK",
    "swaziland": "SZ",
    "cape verde": "CV",
    "east timor": "TL",
    "reunion": "RE",
    "congo": "CG",
    "democratic republic of the congo": "CD",
    "drc": "CD",
    "micronesia": "FM",
}

_LOOKUP_PUNCTUATION = re.compile(r"[,.;]")


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, np.floating) and bool(np.isnan(value))


def _as_text(value: Any) -> str:
    # str() keeps a JSON 0.0 as "0.0", which AGL1K's refusal list names explicitly.
    return str(value)


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
    if _is_missing(value):
        return True
    return _as_text(value).strip().lower() in REFUSAL_STRINGS


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
    if _is_missing(value) or isinstance(value, bool):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
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
    coords = [parse_coordinate(v) for v in (true_lat, true_lon, pred_lat, pred_lon)]
    if any(c is None for c in coords):
        return None
    lat1, lon1, lat2, lon2 = coords
    # geographiclib returns NaN for an impossible latitude; such a row has no defined distance.
    if abs(lat1) > 90 or abs(lat2) > 90:
        return None
    metres = Geodesic.WGS84.Inverse(lat1, lon1, lat2, lon2, Geodesic.DISTANCE)["s12"]
    return metres / 1000.0


def geoscore(d_km: float | np.ndarray) -> float | np.ndarray:
    """GeoScore ``5000 * exp(-d / 1492)`` of a distance in km (a scalar or an array of them)."""
    if isinstance(d_km, np.ndarray):
        return GEOSCORE_MAX * np.exp(-d_km.astype(float) / GEOSCORE_SCALE_KM)
    return GEOSCORE_MAX * math.exp(-float(d_km) / GEOSCORE_SCALE_KM)


def _strip_leading_the(text: str) -> str:
    return text[4:].strip() if text.lower().startswith("the ") else text


def _lookup_key(text: str) -> str:
    return _LOOKUP_PUNCTUATION.sub("", text.lower()).strip()


def normalize_country_agl1k(value: Any) -> str | None:
    """Country name as AGL1K's analysis normalises it; None when missing.

    Parameters
    ----------
    value : Any
        A true or predicted country.

    Returns
    -------
    str or None
        Strip; empty -> None; anything containing ``taiwan`` -> ``China``; a leading ``the `` is
        dropped; then the variant table (lookup key lower-cased without ``,.;``); else title case.
    """
    if _is_missing(value):
        return None
    text = _as_text(value).strip()
    if not text:
        return None
    if "taiwan" in text.lower():
        return "China"
    text = _strip_leading_the(text)
    if not text:
        return None
    variant = _AGL1K_COUNTRY_VARIANTS.get(_lookup_key(text))
    return variant if variant is not None else text.title()


def normalize_continent_agl1k(value: Any) -> str | None:
    """Continent as AGL1K's analysis normalises it; None when missing.

    Strip; empty -> None; a leading ``the `` dropped; anything containing ``arctic`` ->
    ``Antarctica``; title case; ``Australia`` -> ``Oceania``.
    """
    if _is_missing(value):
        return None
    text = _strip_leading_the(_as_text(value).strip())
    if not text:
        return None
    if "arctic" in text.lower():
        return "Antarctica"
    text = text.title()
    return "Oceania" if text == "Australia" else text


@lru_cache(maxsize=4096)
def _iso_from_text(text: str) -> str | None:
    key = _lookup_key(_strip_leading_the(text))
    if key in _ISO_ALIASES:
        return _ISO_ALIASES[key]
    candidates = [text, _strip_leading_the(text)]
    english = _AGL1K_COUNTRY_VARIANTS.get(key)
    if english is not None:
        candidates.insert(0, english)
    for candidate in candidates:
        try:
            return pycountry.countries.lookup(candidate).alpha_2
        except LookupError:
            continue
    return None


def country_iso(value: Any) -> str | None:
    """ISO 3166-1 alpha-2 code of a country name, code or common alias.

    Parameters
    ----------
    value : Any
        E.g. ``"Korea, Republic of"``, ``"South Korea"``, ``"Türkiye"``, ``"UK"``, ``"DEU"``.

    Returns
    -------
    str or None
        The code (``"KR"``, ``"TR"``, ``"GB"``, ``"DE"``), or None when missing or unresolvable.
    """
    if _is_missing(value):
        return None
    text = _as_text(value).strip()
    if not text:
        return None
    return _iso_from_text(text)


def _iso_country_key(value: Any) -> str | None:
    """Comparison key for the iso profile: the code, else the agl1k name (so it can still match)."""
    code = country_iso(value)
    if code is not None:
        return code
    return normalize_country_agl1k(value)


def _iso_continent_key(country: Any, continent: Any) -> str | None:
    continent_from_code = continent_of_iso(country_iso(country))
    if continent_from_code is not None:
        return continent_from_code
    return normalize_continent_agl1k(continent)


def _city_key(value: Any) -> str | None:
    if _is_missing(value):
        return None
    text = _as_text(value)
    return text.lower() if text.strip() else None


def _accuracy(true_keys: list[str | None], predicted_keys: list[str | None]) -> float:
    pairs = [
        (t, p) for t, p in zip(true_keys, predicted_keys, strict=True) if t is not None and p is not None
    ]
    if not pairs:
        return math.nan
    return sum(t.casefold() == p.casefold() for t, p in pairs) / len(pairs)


def _column(records: pd.DataFrame, name: str) -> list[Any]:
    return records[name].tolist()


def _row_keys(
    records: pd.DataFrame, fn: Callable[..., str | None], *columns: str
) -> list[str | None]:
    return [fn(*values) for values in zip(*(_column(records, c) for c in columns), strict=True)]


def compute_metrics(
    records: pd.DataFrame, profile: Profile = "agl1k", *, model: str | None = None
) -> dict[str, Any]:
    """Leaderboard metrics of one model's result records.

    Parameters
    ----------
    records : pandas.DataFrame
        One row per clip with the columns ``true_latitude, true_longitude, true_city,
        true_country, true_continent, predicted_latitude, predicted_longitude, predicted_city,
        predicted_country, predicted_continent`` (raw values) and optionally ``model``.
    profile : {"agl1k", "iso"}
        ``agl1k``: AGL1K's published normalisation; ``iso``: countries compared as ISO 3166-1
        codes and continents derived from the country code (falling back to the normalised
        continent field when the country is not resolvable).
    model : str, optional
        Model name to report; defaults to the single value of a ``model`` column, if any.

    Returns
    -------
    dict
        The keys of :data:`METRIC_KEYS`. ``distance_error_km`` and ``geoscore_mean`` are means over
        rows with a defined distance; ``within_*km`` are fractions of all ``n`` rows whose distance
        is defined and strictly below the threshold; ``reject_rate`` is the fraction of rows in
        which any predicted field is a refusal; accuracies leave out rows where either side is
        missing after normalisation. Undefined values (no usable rows) are NaN.

    Raises
    ------
    ValueError
        If ``profile`` is unknown or a required column is absent.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown metric profile {profile!r}; use one of {', '.join(PROFILES)}")
    missing = [c for c in REQUIRED_COLUMNS if c not in records.columns]
    if missing:
        raise ValueError(f"records lack the column(s) {', '.join(missing)}")
    if model is None and "model" in records.columns:
        names = records["model"].dropna().unique().tolist()
        model = str(names[0]) if len(names) == 1 else None

    n = len(records)
    distances = np.array(
        [
            np.nan if d is None else d
            for d in _row_keys(
                records,
                prediction_error_km,
                "true_latitude",
                "true_longitude",
                "predicted_latitude",
                "predicted_longitude",
            )
        ],
        dtype=float,
    )
    defined = distances[~np.isnan(distances)]

    if profile == "agl1k":
        true_country = _row_keys(records, normalize_country_agl1k, "true_country")
        pred_country = _row_keys(records, normalize_country_agl1k, "predicted_country")
        true_continent = _row_keys(records, normalize_continent_agl1k, "true_continent")
        pred_continent = _row_keys(records, normalize_continent_agl1k, "predicted_continent")
    else:
        true_country = _row_keys(records, _iso_country_key, "true_country")
        pred_country = _row_keys(records, _iso_country_key, "predicted_country")
        true_continent = _row_keys(records, _iso_continent_key, "true_country", "true_continent")
        pred_continent = _row_keys(
            records, _iso_continent_key, "predicted_country", "predicted_continent"
        )

    rejected = sum(
        any(is_refusal(v) for v in values)
        for values in zip(*(_column(records, c) for c in PREDICTED_FIELDS), strict=True)
    )

    result: dict[str, Any] = {
        "model": model,
        "profile": profile,
        "n": n,
        "distance_error_km": float(defined.mean()) if defined.size else math.nan,
        "continent_acc": _accuracy(true_continent, pred_continent),
        "country_acc": _accuracy(true_country, pred_country),
        "city_acc": _accuracy(
            _row_keys(records, _city_key, "true_city"),
            _row_keys(records, _city_key, "predicted_city"),
        ),
        "reject_rate": rejected / n if n else math.nan,
    }
    for threshold in WITHIN_THRESHOLDS_KM:
        result[f"within_{threshold}km"] = (
            float(np.count_nonzero(defined < threshold)) / n if n else math.nan
        )
    result["geoscore_mean"] = float(geoscore(defined).mean()) if defined.size else math.nan
    return result
