"""Leaderboard metric formulas for ALM geo-localization records (pure functions, no storage).

The ``agl1k`` profile follows AGL1K's published analysis literally (see
``design/data-and-metrics.md``); the ``iso`` profile resolves countries to ISO 3166-1 codes so that
naming differences ("Korea, Republic of" vs "South Korea") do not count as errors.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

import numpy as np

from workbench.agl1k_record import TRUE_FIELDS
from workbench.metrics.continents import continent_of_iso

# The distance error and its refusal rule live in .distance (light: the importers store each
# record's distance once); re-exported here for the formulas' callers.
from workbench.metrics.distance import (  # noqa: F401 - re-exported
    PREDICTED_FIELDS,
    REFUSAL_DISTANCE_KM,
    REFUSAL_STRINGS,
    is_refusal,
    parse_coordinate,
    prediction_error_km,
)
from workbench.metrics.distance import is_missing as _is_missing
from workbench.metrics.keys import METRIC_KEYS, PROFILES, Profile  # re-exported: callers import them from here

GEOSCORE_MAX = 5000.0
GEOSCORE_SCALE_KM = 1492.0
WITHIN_THRESHOLDS_KM = (1, 10, 100, 1000)


REQUIRED_COLUMNS = (*TRUE_FIELDS, *PREDICTED_FIELDS)

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


def _as_text(value: Any) -> str:
    # str() keeps a JSON 0.0 as "0.0", which AGL1K's refusal list names explicitly.
    return str(value)


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
    # Loaded with the first country name the iso profile looks up: the agl1k profile's reads
    # (`aglw metrics`, `leaderboard`) start without it (issue 32).
    import pycountry

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
