"""Leaderboard metrics: pure formulas (:mod:`.core`) and the store-backed service (:mod:`.service`)."""

from workbench.metrics.core import (
    METRIC_KEYS,
    PROFILES,
    compute_metrics,
    country_iso,
    geoscore,
    is_refusal,
    normalize_continent_agl1k,
    normalize_country_agl1k,
    parse_coordinate,
    prediction_error_km,
)

__all__ = [
    "METRIC_KEYS",
    "PROFILES",
    "compute_metrics",
    "country_iso",
    "geoscore",
    "is_refusal",
    "normalize_continent_agl1k",
    "normalize_country_agl1k",
    "parse_coordinate",
    "prediction_error_km",
]
