"""Metric formulas checked against values computed by hand (data-and-metrics.md definitions)."""

from __future__ import annotations

import math

import pandas as pd
import pycountry
import pytest

from workbench.metrics import core
from workbench.metrics.aggregate import compute_metrics
from workbench.metrics.continents import CONTINENT_BY_ISO2
from workbench.metrics.core import (
    METRIC_KEYS,
    country_iso,
    geoscore,
    is_refusal,
    normalize_continent_agl1k,
    normalize_country_agl1k,
    parse_coordinate,
    prediction_error_km,
)

# One degree of meridian centred on the equator: a(1 - e^2) * pi / 180 on WGS-84.
MERIDIAN_DEGREE_AT_EQUATOR_KM = 6378.137 * (1 - 0.00669437999014) * math.pi / 180


@pytest.mark.parametrize(
    "value",
    [None, math.nan, "", "  ", "0", 0, "-1", -1, "null", "None", "N/A", "na", "Unknown",
     " UNABLE ", "cannot", "0.0", 0.0],
)
def test_refusal_values(value):
    assert is_refusal(value)


@pytest.mark.parametrize("value", ["Paris", "1", 1, "0.5", -1.5, "unknown city", "00"])
def test_non_refusal_values(value):
    assert not is_refusal(value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("41.5", 41.5), (" -3 ", -3.0), (12, 12.0), (1.25, 1.25), ("1e2", 100.0),
     ("north", None), ("", None), (None, None), (math.nan, None), ("inf", None), (True, None)],
)
def test_parse_coordinate(raw, expected):
    assert parse_coordinate(raw) == expected


def test_distance_one_meridian_degree_at_equator():
    d = prediction_error_km(-0.5, 30, 0.5, 30)
    assert d == pytest.approx(MERIDIAN_DEGREE_AT_EQUATOR_KM, abs=0.01)


def test_distance_pole_to_pole_is_twice_the_quarter_meridian():
    # WGS-84 quarter meridian is 10,001.965729 km.
    assert prediction_error_km(90, 0, -90, "0.5") == pytest.approx(2 * 10001.965729, abs=1e-3)


def test_distance_refusal_is_10000_and_unparsable_is_undefined():
    assert prediction_error_km(45, 7, "Unknown", 7) == 10_000.0
    assert prediction_error_km(45, 7, 45, "0") == 10_000.0
    assert prediction_error_km(45, 7, "north", 7) is None
    assert prediction_error_km(45, 7, 95, 7) is None
    assert prediction_error_km("x", 7, 45, 7) is None


def test_geoscore():
    assert geoscore(0) == 5000.0
    assert geoscore(1492) == pytest.approx(5000 / math.e)


def test_country_normalisation_agl1k():
    assert normalize_country_agl1k("  u.s.a. ") == "United States"
    assert normalize_country_agl1k("The United Kingdom") == "United Kingdom"
    assert normalize_country_agl1k("Republic of China (Taiwan)") == "China"
    assert normalize_country_agl1k("Türkiye") == "Turkey"
    assert normalize_country_agl1k("S. Korea") == "South Korea"
    assert normalize_country_agl1k("Korea, Republic of") == "Korea, Republic Of"
    assert normalize_country_agl1k("españa") == "Spain"
    assert normalize_country_agl1k("new zealand") == "New Zealand"
    assert normalize_country_agl1k("   ") is None
    assert normalize_country_agl1k(None) is None


def test_continent_normalisation_agl1k():
    assert normalize_continent_agl1k("the americas") == "Americas"
    assert normalize_continent_agl1k("Arctic") == "Antarctica"
    assert normalize_continent_agl1k("australia") == "Oceania"
    assert normalize_continent_agl1k(" south america ") == "South America"
    assert normalize_continent_agl1k("") is None


@pytest.mark.parametrize(
    ("name", "code"),
    [("Korea, Republic of", "KR"), ("South Korea", "KR"), ("Türkiye", "TR"), ("Turkey", "TR"),
     ("Holy See (Vatican City State)", "VA"), ("Vatican City", "VA"), ("UK", "GB"),
     ("England", "GB"), ("United Kingdom", "GB"), ("USA", "US"), ("Russia", "RU"),
     ("Deutschland", "DE"), ("The Netherlands", "NL"), ("Palestine, State of", "PS"),
     ("Bolivia, Plurinational State of", "BO"), ("Réunion", "RE"), ("DEU", "DE")],
)
def test_country_iso(name, code):
    assert country_iso(name) == code


def test_country_iso_unresolvable():
    assert country_iso("Unknown") is None
    assert country_iso("") is None
    assert country_iso(None) is None


def test_continent_table_covers_every_iso_country():
    assert {c.alpha_2 for c in pycountry.countries} <= set(CONTINENT_BY_ISO2)
    assert CONTINENT_BY_ISO2["VA"] == "Europe"
    assert CONTINENT_BY_ISO2["TR"] == "Asia"  # where AGL1K places its Türkiye clips


def _synthetic_records() -> pd.DataFrame:
    rows = [
        # A: one meridian degree apart; everything matches up to case.
        dict(true_latitude=-0.5, true_longitude=30, true_city="Kampala", true_country="Uganda",
             true_continent="Africa", predicted_latitude=0.5, predicted_longitude=30,
             predicted_city="kampala", predicted_country="uganda", predicted_continent="africa"),
        # B: refused coordinates -> 10,000 km; native country name matches; rejected.
        dict(true_latitude=45, true_longitude=7, true_city="Turin", true_country="Italy",
             true_continent="Europe", predicted_latitude="Unknown", predicted_longitude="unknown",
             predicted_city="Unknown", predicted_country="Italia", predicted_continent="europe"),
        # C: unparsable coordinates (undefined distance, not a refusal); naming gap for agl1k.
        dict(true_latitude=37.5, true_longitude=127, true_city="Seoul",
             true_country="Korea, Republic of", true_continent="Asia", predicted_latitude="north",
             predicted_longitude="east", predicted_city="Busan", predicted_country="South Korea",
             predicted_continent="Europe"),
        # D: coordinates as strings, exact hit; Australia -> Oceania.
        dict(true_latitude=-33.9, true_longitude=151.2, true_city="Sydney",
             true_country="Australia", true_continent="Oceania", predicted_latitude="-33.9",
             predicted_longitude="151.2", predicted_city="SYDNEY", predicted_country="Australia",
             predicted_continent="Australia"),
        # E: exact hit; empty city and continent (refusals, and missing for accuracy).
        dict(true_latitude=39, true_longitude=35, true_city="Ankara", true_country="Türkiye",
             true_continent="Asia", predicted_latitude=39, predicted_longitude=35,
             predicted_city="", predicted_country="Turkey", predicted_continent=""),
    ]
    return pd.DataFrame(rows)


def test_compute_metrics_agl1k_by_hand():
    m = compute_metrics(_synthetic_records(), "agl1k", model="toy")
    assert list(m) == list(METRIC_KEYS)
    d_a = MERIDIAN_DEGREE_AT_EQUATOR_KM
    assert m["model"] == "toy" and m["profile"] == "agl1k" and m["n"] == 5
    # Defined distances: A, B (10,000), D (0), E (0); C is left out.
    assert m["distance_error_km"] == pytest.approx((d_a + 10_000 + 0 + 0) / 4, abs=0.01)
    assert m["within_1km"] == pytest.approx(2 / 5)
    assert m["within_10km"] == pytest.approx(2 / 5)
    assert m["within_100km"] == pytest.approx(2 / 5)
    assert m["within_1000km"] == pytest.approx(3 / 5)
    expected_geo = (5000 * math.exp(-d_a / 1492) + 5000 * math.exp(-10_000 / 1492) + 10_000) / 4
    assert m["geoscore_mean"] == pytest.approx(expected_geo, abs=0.01)
    assert m["reject_rate"] == pytest.approx(2 / 5)  # B and E
    assert m["city_acc"] == pytest.approx(2 / 4)  # E's empty city is left out
    assert m["country_acc"] == pytest.approx(4 / 5)  # C: Korea, Republic Of != South Korea
    assert m["continent_acc"] == pytest.approx(3 / 4)  # E left out, C wrong


def test_compute_metrics_iso_resolves_naming_gaps():
    m = compute_metrics(_synthetic_records(), "iso", model="toy")
    assert m["profile"] == "iso"
    assert m["country_acc"] == pytest.approx(5 / 5)
    # Continents come from the country codes on both sides (C: KR/KR -> Asia/Asia).
    assert m["continent_acc"] == pytest.approx(5 / 5)
    agl1k = compute_metrics(_synthetic_records(), "agl1k")
    for key in ("distance_error_km", "city_acc", "reject_rate", "within_1000km", "geoscore_mean"):
        assert m[key] == agl1k[key]


def test_iso_unresolvable_prediction_counts_as_wrong_not_missing():
    records = _synthetic_records().iloc[[0]].copy()
    records["predicted_country"] = "Atlantis"
    records["predicted_continent"] = "Atlantis"
    m = compute_metrics(records, "iso")
    assert m["country_acc"] == 0.0
    assert m["continent_acc"] == 0.0


def test_within_thresholds_are_strict(monkeypatch):
    distances = iter([1.0, 10.0, 100.0, 1000.0, 0.999])
    monkeypatch.setattr(core, "prediction_error_km", lambda *args: next(distances))
    m = compute_metrics(_synthetic_records(), "agl1k")
    assert m["within_1km"] == pytest.approx(1 / 5)
    assert m["within_10km"] == pytest.approx(2 / 5)
    assert m["within_100km"] == pytest.approx(3 / 5)
    assert m["within_1000km"] == pytest.approx(4 / 5)


def test_model_taken_from_column_and_bad_profile_refused():
    records = _synthetic_records().assign(model="m1")
    assert compute_metrics(records)["model"] == "m1"
    with pytest.raises(ValueError, match="profile"):
        compute_metrics(records, "bogus")
    with pytest.raises(ValueError, match="true_city"):
        compute_metrics(records.drop(columns=["true_city"]))


def test_empty_records_give_nan_not_crash():
    m = compute_metrics(_synthetic_records().iloc[0:0], "agl1k")
    assert m["n"] == 0
    assert math.isnan(m["distance_error_km"]) and math.isnan(m["reject_rate"])


def test_distance_error_equals_geographiclib_karney_everywhere() -> None:
    """The stored distance uses PROJ's geodesic; it must equal geographiclib's (the definition of
    data-and-metrics.md) on random pairs, identical points, poles, the antimeridian and near-antipodes."""
    import numpy as np
    from geographiclib.geodesic import Geodesic

    from workbench.metrics.distance import prediction_error_km

    rng = np.random.default_rng(7)
    pairs = [tuple(row) for row in np.column_stack([rng.uniform(-90, 90, 500), rng.uniform(-180, 180, 500),
                                                    rng.uniform(-90, 90, 500), rng.uniform(-180, 180, 500)])]
    pairs += [(10.0, 20.0, 10.0, 20.0), (90.0, 10.0, -90.0, 10.0), (0.0, 179.9, 0.1, -179.9),
              (0.0, 0.0, 0.5, 179.7), (-33.9, 18.4, 33.9, -161.6), (45.0, 0.0, -45.0, 179.999999)]
    for lat1, lon1, lat2, lon2 in pairs:
        expected = Geodesic.WGS84.Inverse(lat1, lon1, lat2, lon2, Geodesic.DISTANCE)["s12"] / 1000
        assert prediction_error_km(lat1, lon1, lat2, lon2) == pytest.approx(expected, abs=1e-6), (lat1, lon1, lat2, lon2)
