"""Every leaderboard number says what it counts (issue [N]): coverage, --common, --ci, human
localizers scored exactly like an ALM, and `aglw compare` — each checked against values
computed by hand in the test (geodesics from geographiclib, Holm's step-down by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from geographiclib.geodesic import Geodesic

from cli.main import main
from tests.cli_helpers import run_json
from tests.storage.test_import_dataset import clip_row, write_csv
from workbench.importing import import_dataset, import_predictions

# key -> (lat, lon, city, country, continent)
CLIPS = {
    "c0": (31.5085, -9.7595, "Essaouira", "Morocco", "Africa"),
    "c1": (45.7640, 4.8357, "Lyon", "France", "Europe"),
    "c2": (37.5665, 126.9780, "Seoul", "Korea, Republic of", "Asia"),
    "c3": (-0.2200, -78.5100, "Quito", "Ecuador", "South America"),
}
PARIS = (48.8566, 2.3522)
CASABLANCA = (33.5731, -7.5898)


def km(a: tuple[float, float], b: tuple[float, float]) -> float:
    return Geodesic.WGS84.Inverse(a[0], a[1], b[0], b[1])["s12"] / 1000.0


def answer(key: str, lat: object, lon: object, city: str, country: str, continent: str) -> dict:
    t = CLIPS[key]
    return {"question_id": key, "true_latitude": t[0], "true_longitude": t[1], "true_city": t[2],
            "true_country": t[3], "true_continent": t[4], "predicted_latitude": lat, "predicted_longitude": lon,
            "predicted_city": city, "predicted_country": country, "predicted_continent": continent}


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def db(sqlite_path, tmp_path):  # type: ignore[no-untyped-def]
    return make_project(sqlite_path, tmp_path)


def make_project(sqlite_path, tmp_path):  # type: ignore[no-untyped-def]
    """Four clips; model A answers c0 (exact), c1 (Paris) and c2 (refused); B answers c0
    (Casablanca), c1 (exact) and c3 (exact)."""
    from storage import open_store

    store = open_store(sqlite_path)
    rows = [clip_row(i, key=k, latitude=v[0], longitude=v[1], city=v[2], country=v[3], continent=v[4])
            for i, (k, v) in enumerate(CLIPS.items())]
    import_dataset(store, write_csv(tmp_path / "d.csv", rows), name="d")
    a = [answer("c0", CLIPS["c0"][0], CLIPS["c0"][1], "Essaouira", "Morocco", "Africa"),
         answer("c1", *PARIS, "Paris", "France", "Europe"),
         answer("c2", "Unknown", "Unknown", "Unknown", "Unknown", "Unknown")]
    b = [answer("c0", *CASABLANCA, "Casablanca", "Morocco", "Africa"),
         answer("c1", CLIPS["c1"][0], CLIPS["c1"][1], "Lyon", "France", "Europe"),
         answer("c3", CLIPS["c3"][0], CLIPS["c3"][1], "Quito", "Ecuador", "South America")]
    import_predictions(store, "A", write(tmp_path / "a.jsonl", a))
    import_predictions(store, "B", write(tmp_path / "b.jsonl", b))
    store.dispose()
    return str(sqlite_path)


def _rows(capsys, db: str, *args: str) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    out = run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "agl1k", *args)
    return {r["model"]: r for r in out["rows"]}


def test_coverage_and_the_common_clips(db, capsys) -> None:  # type: ignore[no-untyped-def]
    d_paris = km(CLIPS["c1"][:2], PARIS)
    rows = _rows(capsys, db)
    assert (rows["A"]["n"], rows["A"]["n_dataset"], rows["B"]["n"], rows["B"]["n_dataset"]) == (3, 4, 3, 4)
    assert rows["A"]["distance_error_km"] == pytest.approx((0 + d_paris + 10_000) / 3, rel=1e-9)
    assert rows["A"]["reject_rate"] == pytest.approx(1 / 3)

    out = run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "agl1k", "--common")
    assert out["common"] is True and out["n_common"] == 2
    common = {r["model"]: r for r in out["rows"]}
    assert set(common) == {"A", "B"}  # the human rows are not ranked on the models' common clips
    assert (common["A"]["n"], common["B"]["n"]) == (2, 2)
    assert common["A"]["distance_error_km"] == pytest.approx(d_paris / 2, rel=1e-9)
    assert common["B"]["distance_error_km"] == pytest.approx(km(CLIPS["c0"][:2], CASABLANCA) / 2, rel=1e-9)
    assert common["A"]["city_acc"] == 0.5 and common["B"]["city_acc"] == 0.5 and common["A"]["reject_rate"] == 0

    assert main(["--db", db, "leaderboard", "--common"]) == 0
    text = capsys.readouterr().out
    assert "2 / 4" in text and "on the 2 clips every listed model answered" in text
    assert "refusal counts" in text and "10,000 km)" in text
    assert main(["--db", db, "leaderboard", "--by", "country"]) == 2  # a usage error


def test_bootstrap_intervals_are_seeded_percentiles(db, capsys) -> None:  # type: ignore[no-untyped-def]
    d_paris = km(CLIPS["c1"][:2], PARIS)
    first = _rows(capsys, db, "--common", "--ci", "--bootstrap", "2000", "--seed", "3")
    again = _rows(capsys, db, "--common", "--ci", "--bootstrap", "2000", "--seed", "3")
    assert first == again
    # Two clips at 0 and d km: a resample's mean is 0, d/2 or d with chances 1/4, 1/2, 1/4, so the
    # 2.5th and 97.5th percentiles are 0 and d.
    assert first["A"]["distance_error_km_ci"] == pytest.approx([0.0, d_paris], rel=1e-9)
    assert first["A"]["city_acc_ci"] == pytest.approx([0.0, 1.0])
    assert first["A"]["reject_rate_ci"] == [0.0, 0.0]
    whole = _rows(capsys, db, "--ci", "--bootstrap", "500")
    for model in ("A", "B"):
        low, high = whole[model]["distance_error_km_ci"]
        assert low <= whole[model]["distance_error_km"] <= high


def test_humans_are_scored_like_an_alm(db, capsys) -> None:  # type: ignore[no-untyped-def]
    """A guess's city, country and continent come from the offline gazetteer; it is never a refusal."""
    from sqlmodel import select

    from storage import open_store
    from storage.models import Annotator

    guess_c0 = (31.5100, -9.7700)
    for key, (lat, lon) in (("c0", guess_c0), ("c1", PARIS)):
        assert main(["--db", db, "--annotator", "ada", "study", "guess", "--clip", key, "--lat", str(lat),
                     "--lon", str(lon)]) == 0
    store = open_store(db)
    with store.session() as s:
        pseudonym = s.exec(select(Annotator.pseudonym).where(Annotator.name == "ada")).one()
    distances = [km(CLIPS["c0"][:2], guess_c0), km(CLIPS["c1"][:2], PARIS)]
    expected = {"n": 2, "n_dataset": 4, "reject_rate": 0.0, "city_acc": 0.5, "country_acc": 1.0,
                "continent_acc": 1.0, "distance_error_km": sum(distances) / 2, "within_1000km": 1.0,
                "within_1km": 0.0}

    def check(row: dict) -> None:
        for key, value in expected.items():
            assert row[key] == pytest.approx(value, rel=1e-9), key

    localizers = {r["model"]: r for r in run_json(capsys, "--db", db, "--json", "study", "localizers", "--json")["rows"]}
    check(localizers[f"human:{pseudonym}"])
    check(localizers["human (pooled)"])
    board = _rows(capsys, db)
    check(board[f"human:{pseudonym}"])

    from ui.cockpit.leaderboard_view import read_leaderboard

    cockpit = read_leaderboard(store, "agl1k", None)
    check(cockpit.set_index("model").loc[f"human:{pseudonym}"].to_dict())
    store.dispose()


def _holm(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    adjusted, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def test_compare_two_models_on_their_common_clips(db, capsys) -> None:  # type: ignore[no-untyped-def]
    d_paris, d_casa = km(CLIPS["c1"][:2], PARIS), km(CLIPS["c0"][:2], CASABLANCA)
    out = run_json(capsys, "--db", db, "--json", "compare", "--models", "A,B", "--bootstrap", "1000", "--seed", "1")
    assert out["models"] == ["A", "B"] and out["profile"] == "agl1k" and out["n_common"] == 2
    metrics = {m["metric"]: m for m in out["metrics"]}
    distance = metrics["distance_error_km"]
    assert distance["test"] == "paired_bootstrap" and distance["n"] == 2
    assert (distance["a"], distance["b"]) == pytest.approx((d_paris / 2, d_casa / 2), rel=1e-9)
    assert distance["difference"] == pytest.approx((d_paris - d_casa) / 2, rel=1e-9)
    # city: A right on c0 only, B right on c1 only: one discordant pair each way, exact p = 1
    city = metrics["city_acc"]
    assert city["test"] == "mcnemar_exact" and (city["a"], city["b"], city["p_value"]) == (0.5, 0.5, 1.0)
    # no discordant pair at all (both right on both countries): p = 1 by definition
    assert metrics["country_acc"]["p_value"] == 1.0
    ps = [m["p_value"] for m in out["metrics"]]
    assert [m["p_holm"] for m in out["metrics"]] == pytest.approx(_holm(ps))
    assert 1 / 1000 <= distance["p_value"] <= 1.0

    only = run_json(capsys, "--db", db, "--json", "compare", "--models", "A,B", "--metric", "city_acc")
    assert [m["metric"] for m in only["metrics"]] == ["city_acc"] and only["metrics"][0]["p_holm"] == 1.0
    assert main(["--db", db, "compare", "--models", "A"]) == 2
    assert main(["--db", db, "compare", "--models", "A,B", "--metric", "nonsense"]) == 2
    assert main(["--db", db, "compare", "--models", "A,Z"]) == 1
    assert main(["--db", db, "compare", "--models", "A,B"]) == 0
    assert "McNemar exact" in capsys.readouterr().out
