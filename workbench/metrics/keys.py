"""The names of the leaderboard metrics and profiles (no numpy, no pandas: the CLI reads them
to build its options and tables before any data is loaded)."""

from __future__ import annotations

from typing import Literal

Profile = Literal["agl1k", "iso"]
PROFILES: tuple[Profile, ...] = ("agl1k", "iso")

METRIC_KEYS = (
    "model",
    "profile",
    "n",
    "distance_error_km",
    "continent_acc",
    "country_acc",
    "city_acc",
    "reject_rate",
    "within_1km",
    "within_10km",
    "within_100km",
    "within_1000km",
    "geoscore_mean",
)
