"""ALM result import (every ALM-file bad-input case) and metrics/leaderboard on stored records."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from storage.models import AlmRun, Prediction
from tests.cli_helpers import run_json as cli_json
from tests.storage.test_import_dataset import clip_row, write_csv
from cli.main import main
from workbench.errors import AglwError, InputError
from workbench.importing import import_dataset, import_predictions
from workbench.metrics.service import leaderboard, model_metrics

MERIDIAN_DEGREE_AT_EQUATOR_KM = 6378.137 * (1 - 0.00669437999014) * math.pi / 180

# The five hand-checked records of tests/core/test_metrics_core.py, keyed k1..k5.
HAND_RECORDS = [
    dict(question_id="k1", true_latitude=-0.5, true_longitude=30, true_city="Kampala",
         true_country="Uganda", true_continent="Africa", predicted_latitude=0.5,
         predicted_longitude=30, predicted_city="kampala", predicted_country="uganda",
         predicted_continent="africa"),
    dict(question_id="k2", true_latitude=45, true_longitude=7, true_city="Turin",
         true_country="Italy", true_continent="Europe", predicted_latitude="Unknown",
         predicted_longitude="unknown", predicted_city="Unknown", predicted_country="Italia",
         predicted_continent="europe"),
    dict(question_id="k3", true_latitude=37.5, true_longitude=127, true_city="Seoul",
         true_country="Korea, Republic of", true_continent="Asia", predicted_latitude="north",
         predicted_longitude="east", predicted_city="Busan", predicted_country="South Korea",
         predicted_continent="Europe"),
    dict(question_id="k4", true_latitude=-33.9, true_longitude=151.2, true_city="Sydney",
         true_country="Australia", true_continent="Oceania", predicted_latitude="-33.9",
         predicted_longitude="151.2", predicted_city="SYDNEY", predicted_country="Australia",
         predicted_continent="Australia"),
    dict(question_id="k5", true_latitude=39, true_longitude=35, true_city="Ankara",
         true_country="Türkiye", true_continent="Asia", predicted_latitude=39,
         predicted_longitude=35, predicted_city="", predicted_country="Turkey",
         predicted_continent=""),
]
HUMAN_SOUNDS = {"k1": 1.0, "k2": 0.0, "k3": 0.1, "k4": 0.05, "k5": 0.5}


def full_record(record: dict) -> dict:
    return {"question": "Where?", "task_id": "audio_localization", "description": "", "title": "",
            "reasoning": "Birds at 0:12.", "model_output": "{}", "seed": 42, **record}


def write_jsonl(path: Path, records: list, raw_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(full_record(r) if isinstance(r, dict) else r, ensure_ascii=False) for r in records]
    for index, text in (raw_lines or {}).items():
        lines.insert(index, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def hand_dataset(store, tmp_path: Path) -> None:
    # The clips stand where the records say (the dataset's position is the truth distances use).
    truth = {r["question_id"]: (r["true_latitude"], r["true_longitude"]) for r in HAND_RECORDS}
    rows = [clip_row(i, key=k, human_sounds=v, latitude=truth[k][0], longitude=truth[k][1])
            for i, (k, v) in enumerate(HUMAN_SOUNDS.items())]
    import_dataset(store, write_csv(tmp_path / "hand.csv", rows), name="hand")


def n_predictions(store) -> int:
    with store.session() as s:
        return s.execute(select(func.count()).select_from(Prediction)).scalar_one()


def test_jsonl_import_keeps_raw_values_and_links_clips(any_store, tmp_path):
    hand_dataset(any_store, tmp_path)
    records = [*HAND_RECORDS, dict(HAND_RECORDS[0], question_id="k9", predicted_latitude=0.0,
                                   predicted_longitude=0, predicted_city=None)]
    report = import_predictions(any_store, "toy", write_jsonl(tmp_path / "r.jsonl", records))
    assert report.stored and report.counts["stored"] == 6
    assert report.details["unknown_keys"] == ["k9"] and report.counts["linked"] == 5
    assert any("k9" in w and "not in dataset 'hand'" in w for w in report.warnings)
    with any_store.session() as s:
        rows = {p.question_id: p for p in s.execute(select(Prediction)).scalars()}
        run = s.execute(select(AlmRun)).scalar_one()
    assert (run.model, run.container, run.seed) == ("toy", "jsonl", 42)
    assert rows["k9"].clip_id is None and rows["k1"].clip_id is not None
    assert (rows["k9"].predicted_latitude, rows["k9"].predicted_longitude) == ("0.0", "0")
    assert rows["k9"].predicted_city is None
    assert (rows["k4"].predicted_latitude, rows["k2"].predicted_latitude) == ("-33.9", "Unknown")
    assert rows["k3"].true_latitude == 37.5 and rows["k3"].line_no == 3


def test_numbers_as_strings_for_true_coordinates(store, tmp_path):
    record = dict(HAND_RECORDS[0], true_latitude="-0.5", true_longitude=" 30 ")
    import_predictions(store, "m", write_jsonl(tmp_path / "r.jsonl", [record]))
    assert model_metrics(store, "m")["distance_error_km"] == pytest.approx(
        MERIDIAN_DEGREE_AT_EQUATOR_KM, abs=0.01)


def test_malformed_line_stops_import_with_line_numbers(any_store, tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", HAND_RECORDS,
                       raw_lines={1: '{"question_id": "k7", "true_latitude": 1,', 3: "[1, 2]"})
    with pytest.raises(InputError, match=r"2 malformed record\(s\): line 2: not valid JSON.*line 4: "
                                         r"expected a JSON object.*--skip-malformed to import the 5 good"):
        import_predictions(any_store, "toy", path)
    assert n_predictions(any_store) == 0
    report = import_predictions(any_store, "toy", path, skip_malformed=True)
    assert report.counts["stored"] == 5 and report.counts["malformed"] == 2
    assert [m["line"] for m in report.details["malformed"]] == [2, 4]
    assert any("skipped 2 malformed" in p for p in report.problems)
    assert n_predictions(any_store) == 5


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"true_latitude": 1}, "no question_id"),
        ({"question_id": "  "}, "no question_id"),
        ({"question_id": "k1", "true_latitude": 95}, r"field true_latitude: 95 is not a coordinate"),
        ({"question_id": "k1", "true_longitude": "west"}, r"field true_longitude: 'west'"),
    ],
)
def test_record_level_malformations(store, tmp_path, record, reason):
    path = write_jsonl(tmp_path / "r.jsonl", [HAND_RECORDS[1]], raw_lines={1: json.dumps(record)})
    with pytest.raises(InputError, match=rf"line 2: {reason}"):
        import_predictions(store, "m", path)
    assert n_predictions(store) == 0


def test_duplicates_keep_first_and_report_lines(store, tmp_path):
    later = dict(HAND_RECORDS[0], predicted_city="Entebbe")
    path = write_jsonl(tmp_path / "r.jsonl", [HAND_RECORDS[0], HAND_RECORDS[1], later])
    report = import_predictions(store, "m", path)
    assert report.details["duplicates"] == [{"line": 3, "first_line": 1, "question_id": "k1"}]
    assert any("line 3 repeats line 1 (k1)" in p for p in report.problems)
    with store.session() as s:
        assert s.execute(select(Prediction.predicted_city).where(Prediction.question_id == "k1")).scalar_one() == "kampala"


def test_unknown_fields_are_reported(store, tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [dict(HAND_RECORDS[0], confidence=0.9),
                                              dict(HAND_RECORDS[1], confidence=0.2, extra=1)])
    report = import_predictions(store, "m", path)
    assert report.details["unknown_fields"] == {"confidence": 1, "extra": 2}
    assert any("confidence (first on line 1)" in w for w in report.warnings)


def test_json_array_container_and_broken_array(store, tmp_path):
    array = tmp_path / "r.json"
    array.write_text(json.dumps([full_record(r) for r in HAND_RECORDS], indent=1), encoding="utf-8")
    report = import_predictions(store, "arr", array)
    assert report.details["container"] == "json-array" and report.counts["stored"] == 5
    broken = tmp_path / "broken.json"
    broken.write_text('[\n{"question_id": "a"},\n{"question_id": "b",,}\n]', encoding="utf-8")
    with pytest.raises(InputError, match=r"broken.json, line 3: the JSON array is malformed"):
        import_predictions(store, "broken", broken, skip_malformed=True)
    with store.session() as s:
        assert s.execute(select(AlmRun.model)).scalars().all() == ["arr"]


def test_jsonl_whose_first_record_is_an_array_is_still_jsonl(store, tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", HAND_RECORDS[:2], raw_lines={0: "[]"})
    with pytest.raises(InputError, match=r"line 1: expected a JSON object, found list"):
        import_predictions(store, "m", path)
    assert import_predictions(store, "m", path, skip_malformed=True).counts["stored"] == 2


def test_empty_file_and_no_good_record(store, tmp_path):
    (tmp_path / "e.jsonl").write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="empty"):
        import_predictions(store, "m", tmp_path / "e.jsonl")
    path = write_jsonl(tmp_path / "bad.jsonl", [], raw_lines={0: "nonsense"})
    with pytest.raises(InputError, match="no importable record"):
        import_predictions(store, "m", path, skip_malformed=True)
    assert n_predictions(store) == 0


def test_reimport_requires_replace_and_keeps_the_run(any_store, tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", HAND_RECORDS[:3])
    import_predictions(any_store, "m", path)
    with any_store.session() as s:
        run_id = s.execute(select(AlmRun.id)).scalar_one()
    with pytest.raises(InputError, match=r"'m' already has 3 prediction\(s\).*--replace"):
        import_predictions(any_store, "m", write_jsonl(tmp_path / "r2.jsonl", HAND_RECORDS))
    assert n_predictions(any_store) == 3
    dry = import_predictions(any_store, "m", tmp_path / "r2.jsonl", replace=True, dry_run=True)
    assert dry.counts["replaced"] == 3 and n_predictions(any_store) == 3
    report = import_predictions(any_store, "m", tmp_path / "r2.jsonl", replace=True)
    assert report.counts["stored"] == 5 and any("replacing 3" in w for w in report.warnings)
    with any_store.session() as s:
        assert s.execute(select(AlmRun.id)).scalars().all() == [run_id]
    assert n_predictions(any_store) == 5
    other = import_predictions(any_store, "copy", tmp_path / "r2.jsonl")
    assert any("already imported as model(s) m" in w for w in other.warnings)


def test_predictions_without_dataset_are_stored_unlinked(store, tmp_path):
    report = import_predictions(store, "m", write_jsonl(tmp_path / "r.jsonl", HAND_RECORDS))
    assert report.details["dataset"] is None
    assert any("no dataset imported yet" in w for w in report.warnings)
    with pytest.raises(InputError, match="no dataset named 'x'"):
        import_predictions(store, "n", tmp_path / "r.jsonl", dataset="x")


# --------------------------------------------------------------------------- metrics via the CLI


def run_json(capsys, db: Path, *args: str):
    return cli_json(capsys, "--db", str(db), "--json", *args)


@pytest.fixture
def hand_db(sqlite_path, tmp_path):
    from storage import open_store

    store = open_store(sqlite_path)
    hand_dataset(store, tmp_path)
    import_predictions(store, "toy", write_jsonl(tmp_path / "r.jsonl", HAND_RECORDS))
    import_predictions(store, "perfect", write_jsonl(tmp_path / "p.jsonl", [
        dict(r, predicted_latitude=r["true_latitude"], predicted_longitude=r["true_longitude"],
             predicted_city=r["true_city"], predicted_country=r["true_country"],
             predicted_continent=r["true_continent"]) for r in HAND_RECORDS]))
    store.dispose()
    return sqlite_path


def test_cli_metrics_match_hand_computation(hand_db, capsys):
    m = run_json(capsys, hand_db, "metrics", "--model", "toy")
    d_a = MERIDIAN_DEGREE_AT_EQUATOR_KM
    assert m["model"] == "toy" and m["profile"] == "agl1k" and m["n"] == 5
    assert m["distance_error_km"] == pytest.approx((d_a + 10_000) / 4, abs=0.01)
    assert (m["within_1km"], m["within_10km"], m["within_100km"], m["within_1000km"]) == pytest.approx(
        (0.4, 0.4, 0.4, 0.6))
    assert m["reject_rate"] == pytest.approx(0.4)
    assert (m["city_acc"], m["country_acc"], m["continent_acc"]) == pytest.approx((0.5, 0.8, 0.75))
    assert m["geoscore_mean"] == pytest.approx(
        (5000 * math.exp(-d_a / 1492) + 5000 * math.exp(-10_000 / 1492) + 10_000) / 4, abs=0.01)
    iso = run_json(capsys, hand_db, "metrics", "--model", "toy", "--profile", "iso")
    assert (iso["country_acc"], iso["continent_acc"]) == pytest.approx((1.0, 1.0))
    assert main(["--db", str(hand_db), "metrics", "--model", "toy"]) == 0
    assert "75.0 %" in capsys.readouterr().out  # the house accuracy format (workbench.formatting)
    assert main(["--db", str(hand_db), "metrics", "--model", "nobody"]) == 1
    assert "no predictions for model 'nobody' (models: perfect, toy)" in capsys.readouterr().err


def test_cli_leaderboard_profiles_and_groups(hand_db, capsys):
    rows = run_json(capsys, hand_db, "leaderboard")["rows"]
    assert [(r["model"], r["profile"]) for r in rows] == [
        ("perfect", "agl1k"), ("toy", "agl1k"), ("perfect", "iso"), ("toy", "iso")]
    perfect = rows[0]
    # k3's coordinates are real numbers now: all five rows at distance 0 -> everything perfect.
    assert perfect["distance_error_km"] == 0 and perfect["within_1km"] == 1.0
    assert perfect["country_acc"] == 1.0 and perfect["reject_rate"] == 0.0

    speech = run_json(capsys, hand_db, "leaderboard", "--profile", "agl1k", "--by", "speech")["rows"]
    toy = {r["group"]: r for r in speech if r["model"] == "toy"}
    assert set(toy) == {"speech", "no speech"}
    assert toy["speech"]["n"] == 3  # k1 (1.0), k3 (0.1: >= 0.1), k5 (0.5)
    assert toy["speech"]["distance_error_km"] == pytest.approx(MERIDIAN_DEGREE_AT_EQUATOR_KM / 2, abs=0.01)
    assert toy["speech"]["country_acc"] == pytest.approx(2 / 3)
    assert toy["no speech"]["n"] == 2  # k2 (0.0), k4 (0.05)
    assert toy["no speech"]["distance_error_km"] == pytest.approx(5000)
    assert toy["no speech"]["reject_rate"] == pytest.approx(0.5)

    by_continent = run_json(capsys, hand_db, "leaderboard", "--profile", "iso", "--by", "continent")["rows"]
    toy = {r["group"]: r for r in by_continent if r["model"] == "toy"}
    assert {g: r["n"] for g, r in toy.items()} == {"Africa": 1, "Asia": 2, "Europe": 1, "Oceania": 1}
    assert toy["Asia"]["country_acc"] == 1.0

    assert main(["--db", str(hand_db), "leaderboard", "--by", "continent"]) == 0
    out = capsys.readouterr().out
    assert "country acc" in out and "Oceania" in out
    assert main(["--db", str(hand_db), "leaderboard", "--profile", "xyz"]) == 2  # a usage error
    err = capsys.readouterr().err
    assert "--profile" in err and "'xyz' is not one of" in err


def test_cli_import_predictions_skip_malformed_reports_lines(hand_db, tmp_path, capsys):
    path = write_jsonl(tmp_path / "m.jsonl", HAND_RECORDS, raw_lines={2: "{oops"})
    assert main(["--db", str(hand_db), "import", "predictions", "--model", "x", str(path)]) == 1
    assert "line 3: not valid JSON" in capsys.readouterr().err
    report = run_json(capsys, hand_db, "import", "predictions", "--model", "x", str(path), "--skip-malformed")
    assert report["counts"]["stored"] == 5 and report["details"]["malformed"][0]["line"] == 3


def test_leaderboard_empty_store(store):
    assert leaderboard(store, "both").empty
    with pytest.raises(AglwError, match="no predictions"):
        model_metrics(store, "m")


# --------------------------------------------------------------------------- properties

_value = st.one_of(st.none(), st.text(max_size=12), st.integers(-200, 200),
                   st.floats(allow_nan=False, allow_infinity=False, width=32))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(predicted=st.lists(st.tuples(_value, _value, _value), min_size=1, max_size=5),
       bad_line=st.sampled_from(["{", "[]", "42", '"text"', '{"title": "x"}']), data=st.data())
def test_any_malformed_line_stops_everything_or_is_skipped(store, tmp_path, predicted, bad_line, data):
    records = [dict(HAND_RECORDS[0], question_id=f"q{i}", predicted_latitude=lat,
                    predicted_longitude=lon, predicted_city=city)
               for i, (lat, lon, city) in enumerate(predicted)]
    position = data.draw(st.integers(0, len(records)))
    path = write_jsonl(tmp_path / "p.jsonl", records, raw_lines={position: bad_line})
    with pytest.raises(InputError, match=rf"line {position + 1}: "):
        import_predictions(store, "prop", path)
    assert n_predictions(store) == 0
    report = import_predictions(store, "prop", path, skip_malformed=True, dry_run=True)
    assert report.counts["importable"] == len(records) and n_predictions(store) == 0
