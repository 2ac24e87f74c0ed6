"""Location consistency report with the offline reverse geocoder (deliberate mismatches included)."""

from __future__ import annotations

import pandas as pd

from storage.models import Clip, Dataset
from workbench.curation.geocheck import check_locations, location_report


def test_report_lists_the_vatican_mismatch_and_bad_rows(store) -> None:  # type: ignore[no-untyped-def]
    rows = [
        ("rome_as_vatican", 41.8933, 12.4829, "Holy See (Vatican City State)", "Vatican City"),
        ("seoul", 37.5665, 126.9780, "Korea, Republic of", "Seoul"),
        ("berlin_as_france", 52.52, 13.405, "France", "Berlin"),
        ("istanbul", 41.0082, 28.9784, "Türkiye", "Istanbul"),
        ("atlantis", 10.0, 10.0, "Atlantis", "Poseidonia"),
        ("nowhere", None, None, "Germany", "Munich"),
    ]
    with store.write() as s:
        dataset = Dataset(name="geo")
        s.add(dataset)
        s.flush()
        for key, lat, lon, country, city in rows:
            s.add(Clip(dataset_id=dataset.id, key=key, latitude=lat, longitude=lon, country=country, city=city))
    report = location_report(store)
    assert report.n_checked == 6
    assert report.counts == {"match": 2, "alias": 0, "mismatch": 2, "unknown_country": 1, "no_coordinates": 1}
    mismatches = {c.key: c for c in report.mismatches}
    assert set(mismatches) == {"rome_as_vatican", "berlin_as_france"}
    assert (mismatches["rome_as_vatican"].stated_iso, mismatches["rome_as_vatican"].geocoded_iso) == ("VA", "IT")
    assert mismatches["berlin_as_france"].geocoded_iso == "DE"
    assert mismatches["berlin_as_france"].nearest_place_km < 20
    assert [c.key for c in report.unknown_country] == ["atlantis"]
    assert [c.key for c in report.no_coordinates] == ["nowhere"]
    assert report.to_dict()["mismatches"][0]["status"] == "mismatch"


def test_check_locations_uses_the_given_geocoder() -> None:
    frame = pd.DataFrame(
        [("a", 1.0, 2.0, "Kenya", "Nairobi"), ("b", 95.0, 2.0, "Kenya", "Nairobi")],
        columns=["key", "latitude", "longitude", "country", "city"],
    )
    calls = []

    def fake(coordinates):  # type: ignore[no-untyped-def]
        calls.append(coordinates)
        return [{"name": "Nairobi", "admin1": "", "cc": "KE", "lat": "1.0", "lon": "2.0"}]

    checks = check_locations(frame, geocode=fake)
    assert calls == [[(1.0, 2.0)]]  # the impossible latitude is never geocoded
    assert [c.status for c in checks] == ["match", "no_coordinates"]
    assert checks[0].city_matches_nearest is True and checks[0].nearest_place_km == 0.0
