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

# What a reader sees above each number (CLI tables, the cockpit, the README): the distance is a
# mean over the answers with a defined distance, and a refusal is counted as 10,000 km.
DISTANCE_HEADER = "mean distance error (km; a refusal counts 10,000 km)"
COVERAGE_HEADER = "coverage (answered / in dataset)"
