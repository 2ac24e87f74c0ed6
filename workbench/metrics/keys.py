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
HEADERS: dict[str, str] = {
    "distance_error_km": DISTANCE_HEADER,
    "geoscore_mean": "mean GeoScore (0–5,000)",
    "reject_rate": "reject rate",
    "continent_acc": "continent accuracy",
    "country_acc": "country accuracy",
    "city_acc": "city accuracy",
    "within_1km": "within 1 km",
    "within_10km": "within 10 km",
    "within_100km": "within 100 km",
    "within_1000km": "within 1,000 km",
    "n": "answers (n)",
    "n_dataset": "clips in dataset",
    "coverage": COVERAGE_HEADER,
}


def header(key: str) -> str:
    """The reader's header of a leaderboard column (``country_acc_iso`` -> ``country accuracy (iso)``)."""
    for profile in PROFILES:
        if key.endswith(f"_{profile}") and key[: -len(profile) - 1] in HEADERS:
            return f"{HEADERS[key[: -len(profile) - 1]]} ({profile})"
    return HEADERS.get(key, key.replace("_", " "))
