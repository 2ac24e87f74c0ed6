"""Leaderboard metrics: pure formulas (:mod:`.core`), their vectorised aggregation over a model's
records (:mod:`.aggregate`, :func:`compute_metrics`) and the store-backed service (:mod:`.service`).

The names below load :mod:`.core` (numpy, pandas, geographiclib) on first use, so that reading
:mod:`.keys` stays light.
"""

from __future__ import annotations

from typing import Any

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


def __getattr__(name: str) -> Any:
    if name == "compute_metrics":
        from workbench.metrics.aggregate import compute_metrics

        return compute_metrics
    if name in __all__:
        from workbench.metrics import core

        return getattr(core, name)
    raise AttributeError(f"module 'workbench.metrics' has no attribute {name!r}")
