"""The leaderboard's column-wise computation equals a record-by-record reference on a small project.

The service reads the stored columns without a DataFrame, orders the rows by model and group once
and aggregates slices; this reference applies the per-record formulas of
:mod:`workbench.metrics.core` to every record read back through ``prediction_records`` and
averages them with plain Python, per model, profile and group.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from tests.storage.test_import_dataset import clip_row, write_csv
from tests.storage.test_import_predictions import write_jsonl
from workbench.importing import import_dataset, import_predictions
from workbench.metrics import core
from workbench.metrics.continents import continent_of_iso
from workbench.metrics.distance import is_missing
from workbench.metrics.service import leaderboard, prediction_records

# Truths: (city, country, continent, lat, lon); naming gaps between the profiles on purpose.
_PLACES = [
    ("Kampala", "Uganda", "Africa", 0.3, 32.6),
    ("Seoul", "Korea, Republic of", "Asia", 37.5, 127.0),
    ("Turin", "Italy", "Europe", 45.0, 7.7),
    ("Sydney", "Australia", "Australia", -33.9, 151.2),
    ("Ankara", "Türkiye", "", 39.9, 32.9),  # no continent: iso derives it, agl1k has none
    ("Taipei", "Taiwan", "Asia", 25.0, 121.5),
    ("Quito", "Ecuador", "south america", -0.2, -78.5),
]
_GUESSED_COUNTRIES = ["South Korea", "uganda", "Italia", "Turkey", "Unknown", "", None, "Atlantis", "China"]
_GUESSED_CONTINENTS = ["Asia", "africa", "Europe", "Oceania", "", None, "n/a", "South America"]
_GUESSED_COORDINATES = [None, "Unknown", "north", "0", "", "95"]  # refusals, unparseable, off the globe
_N_CLIPS = 12


def _records(rng: random.Random) -> list[dict[str, Any]]:
    records = []
    for index in range(_N_CLIPS + 3):  # the last three keys are in no dataset
        city, country, continent, lat, lon = _PLACES[index % len(_PLACES)]
        record: dict[str, Any] = dict(
            question_id=f"c{index}", true_city=city, true_country=country, true_continent=continent,
            true_latitude=lat, true_longitude=lon,
            predicted_city=rng.choice([city, city.upper(), "Paris", "", "unknown"]),
            predicted_country=rng.choice([country, *_GUESSED_COUNTRIES]),
            predicted_continent=rng.choice([continent, *_GUESSED_CONTINENTS]),
            predicted_latitude=round(lat + rng.uniform(-3, 3), 4),
            predicted_longitude=str(round(lon + rng.uniform(-3, 3), 4)),
        )
        if rng.random() < 0.3:
            record[rng.choice(["predicted_latitude", "predicted_longitude"])] = rng.choice(_GUESSED_COORDINATES)
        records.append(record)
    return records


@pytest.fixture
def project(store, tmp_path: Path):  # type: ignore[no-untyped-def]
    rng = random.Random(7)
    # Each clip stands where its records say (the clip's position is the truth distances use).
    clips = [clip_row(i, key=f"c{i}", human_sounds=rng.choice([0.0, 0.05, 0.1, 0.7]),
                      latitude=_PLACES[i % len(_PLACES)][3], longitude=_PLACES[i % len(_PLACES)][4])
             for i in range(_N_CLIPS)]
    import_dataset(store, write_csv(tmp_path / "clips.csv", clips), name="clips")
    for model in ("zeta", "alpha", "mid"):
        import_predictions(store, model, write_jsonl(tmp_path / f"{model}.jsonl", _records(rng)))
    return store


def _city(value: Any) -> str | None:
    return None if is_missing(value) or not str(value).strip() else str(value).lower()


def _keys(row: dict[str, Any], profile: str, side: str) -> tuple[Any, Any]:
    country, continent = row[f"{side}_country"], row[f"{side}_continent"]
    if profile == "agl1k":
        return core.normalize_country_agl1k(country), core.normalize_continent_agl1k(continent)
    iso = core.country_iso(country)
    return (iso or core.normalize_country_agl1k(country),
            continent_of_iso(iso) or core.normalize_continent_agl1k(continent))


def _group(row: dict[str, Any], profile: str, by: str | None) -> str | None:
    if by is None:
        return None
    if by == "speech":
        sounds = row["human_sounds"]
        return "(no clip)" if sounds is None or math.isnan(sounds) else ("speech" if sounds >= 0.1 else "no speech")
    return _keys(row, profile, "true")[1] or "(missing)"


def _accuracy(pairs: list[tuple[Any, Any]]) -> float:
    both = [(a.casefold(), b.casefold()) for a, b in pairs if a is not None and b is not None]
    return sum(a == b for a, b in both) / len(both) if both else math.nan


def reference(store, by: str | None) -> dict[tuple, dict[str, Any]]:  # type: ignore[no-untyped-def]
    """(group, profile, model) -> metrics, one record at a time."""
    rows = prediction_records(store).to_dict("records")
    buckets: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        for profile in core.PROFILES:
            buckets[(_group(row, profile, by), profile, row["model"])].append(row)
    result = {}
    for (group, profile, model), members in buckets.items():
        n = len(members)
        distances = [d for r in members if (d := core.prediction_error_km(
            r["true_latitude"], r["true_longitude"], r["predicted_latitude"], r["predicted_longitude"])) is not None]
        truths = [_keys(r, profile, "true") for r in members]
        guesses = [_keys(r, profile, "predicted") for r in members]
        metrics = {
            "n": n,
            "distance_error_km": sum(distances) / len(distances) if distances else math.nan,
            "continent_acc": _accuracy([(t[1], g[1]) for t, g in zip(truths, guesses)]),
            "country_acc": _accuracy([(t[0], g[0]) for t, g in zip(truths, guesses)]),
            "city_acc": _accuracy([(_city(r["true_city"]), _city(r["predicted_city"])) for r in members]),
            "reject_rate": sum(any(core.is_refusal(r[f]) for f in core.PREDICTED_FIELDS) for r in members) / n,
            "geoscore_mean": sum(core.geoscore(d) for d in distances) / len(distances) if distances else math.nan,
        }
        for threshold in core.WITHIN_THRESHOLDS_KM:
            metrics[f"within_{threshold}km"] = sum(d < threshold for d in distances) / n
        result[(group, profile, model)] = metrics
    return result


def assert_matches_reference(store, by: str | None) -> None:  # type: ignore[no-untyped-def]
    table = leaderboard(store, "both", by)
    expected = reference(store, by)
    got = {(row.get("group"), row["profile"], row["model"]): row for row in table.to_dict("records")}
    assert set(got) == set(expected)
    for key, metrics in expected.items():
        for name, value in metrics.items():
            assert got[key][name] == pytest.approx(value, rel=1e-12, nan_ok=True), (key, name)


@pytest.mark.parametrize("by", [None, "continent", "speech"])
def test_leaderboard_equals_the_record_by_record_reference(project, by) -> None:  # type: ignore[no-untyped-def]
    assert_matches_reference(project, by)


def test_rows_without_stored_values_still_match_the_reference(project) -> None:  # type: ignore[no-untyped-def]
    # Rows written before migration 0003 or by hand carry no stored distance or rejection.
    with project.write() as session:
        session.execute(text("UPDATE prediction SET distance_error_km = NULL, refused = NULL WHERE id % 3 = 0"))
    for by in (None, "continent", "speech"):
        assert_matches_reference(project, by)


def test_reference_sees_every_kind_of_group(project) -> None:  # type: ignore[no-untyped-def]
    # The data exercise what the grouping must get right: records without a clip, without a
    # continent in one profile only, and more than one model.
    speech = {key[0] for key in reference(project, "speech")}
    assert {"(no clip)", "speech", "no speech"} <= speech
    continents = reference(project, "continent")
    assert ("(missing)", "agl1k", "alpha") in continents and ("(missing)", "iso", "alpha") not in continents
    assert {key[2] for key in continents} == {"alpha", "mid", "zeta"}
