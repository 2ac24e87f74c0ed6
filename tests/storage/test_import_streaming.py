"""Prediction imports store each record's distance error once and read result files as a stream."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from sqlalchemy import select, text

from storage import open_store
from storage.db import Store, create_store_engine, resolve_url, run_migrations
from storage.models import Prediction
from tests.storage.test_import_predictions import HAND_RECORDS, full_record, hand_dataset, write_jsonl
from workbench.errors import InputError
from workbench.importing import import_predictions
from workbench.importing import predictions as prediction_files
from workbench.importing.prediction_rows import insert_predictions, prediction_row
from workbench.metrics import core
from workbench.metrics.service import leaderboard, model_metrics


def stored_distances(store) -> dict[str, float | None]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return dict(s.execute(select(Prediction.question_id, Prediction.distance_error_km)).all())


def stored_refusals(store) -> dict[str, bool | None]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return dict(s.execute(select(Prediction.question_id, Prediction.refused)).all())


def test_import_stores_each_distance_once(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hand_dataset(store, tmp_path)
    import_predictions(store, "toy", write_jsonl(tmp_path / "r.jsonl", HAND_RECORDS))
    distances = stored_distances(store)
    for record in HAND_RECORDS:
        expected = core.prediction_error_km(
            record["true_latitude"], record["true_longitude"],
            record["predicted_latitude"], record["predicted_longitude"],
        )
        got = distances[record["question_id"]]
        assert got == pytest.approx(expected) if expected is not None else got is None
    assert distances["k2"] == core.REFUSAL_DISTANCE_KM  # "Unknown" is a refusal: 10,000 km
    assert distances["k3"] is None  # "north"/"east" do not parse: undefined
    # Rejections: k2 refused its coordinates, k5 left city and continent empty.
    assert stored_refusals(store) == {"k1": False, "k2": True, "k3": False, "k4": False, "k5": True}


def test_metrics_read_the_stored_distance(store, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    hand_dataset(store, tmp_path)
    import_predictions(store, "toy", write_jsonl(tmp_path / "r.jsonl", HAND_RECORDS))
    expected = model_metrics(store, "toy")
    calls: list[tuple] = []
    real = core.prediction_error_km

    def counting(*args):  # type: ignore[no-untyped-def]
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(core, "prediction_error_km", counting)
    table = leaderboard(store, "agl1k")
    # Only the one record whose distance is undefined (k3) is looked at again.
    assert len(calls) == 1
    assert table.loc[0, "distance_error_km"] == pytest.approx(expected["distance_error_km"])
    # A stored value is what the leaderboard averages: change it and the mean follows.
    with store.write() as s:
        s.execute(text("UPDATE prediction SET distance_error_km = 0 WHERE question_id = 'k1'"))
    moved = leaderboard(store, "agl1k").loc[0, "distance_error_km"]
    k1 = real(-0.5, 30, 0.5, 30)
    assert moved == pytest.approx(expected["distance_error_km"] - k1 / 4)


def test_rows_written_without_a_distance_are_computed(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hand_dataset(store, tmp_path)
    import_predictions(store, "toy", write_jsonl(tmp_path / "r.jsonl", HAND_RECORDS))
    expected = model_metrics(store, "toy")
    with store.write() as s:
        s.execute(text("UPDATE prediction SET distance_error_km = NULL, refused = NULL"))
    again = model_metrics(store, "toy")
    assert again["distance_error_km"] == pytest.approx(expected["distance_error_km"])
    assert again["reject_rate"] == pytest.approx(expected["reject_rate"]) and expected["reject_rate"] == pytest.approx(2 / 5)
    both = leaderboard(store, "agl1k").loc[0]
    assert both["reject_rate"] == pytest.approx(2 / 5)
    assert both["distance_error_km"] == pytest.approx(expected["distance_error_km"])


def test_prediction_row_is_what_the_alm_runner_stores(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hand_dataset(store, tmp_path)
    import_predictions(store, "toy", write_jsonl(tmp_path / "r.jsonl", HAND_RECORDS[:1]))
    with store.session() as s:
        run_id = s.execute(select(Prediction.alm_run_id)).scalar_one()
    values = {"true_latitude": 0.0, "true_longitude": 1.0, "predicted_latitude": "0.5",
              "predicted_longitude": "1", "predicted_city": "X"}
    row = prediction_row(run_id, "k2", values, line_no=7)
    assert row["distance_error_km"] == pytest.approx(core.prediction_error_km(0, 1, "0.5", "1"))
    assert row["predicted_city"] == "X" and row["reasoning"] is None and row["line_no"] == 7
    assert row["refused"] is True  # predicted country and continent are absent
    with store.write() as s:
        assert insert_predictions(s, iter([row])) == 1
    assert stored_distances(store)["k2"] == pytest.approx(55.3, abs=0.1)


def test_migration_backfills_the_distance_of_existing_predictions(sqlite_path: Path) -> None:
    url = resolve_url(sqlite_path)
    old = Store(url=url, engine=create_store_engine(url))
    run_migrations(old, "0002")
    with old.engine.begin() as conn:
        conn.execute(text("INSERT INTO alm_run (id, model, imported_at, is_demo) VALUES (1, 'm', '2026-01-01', 0)"))
        for index, (lat, lon) in enumerate([("0.5", "30"), ("Unknown", "1"), ("north", "east"), (" 0.0 ", "5")]):
            conn.execute(
                text("INSERT INTO prediction (alm_run_id, question_id, true_latitude, true_longitude, "
                     "predicted_latitude, predicted_longitude, predicted_city, predicted_country, "
                     "predicted_continent) VALUES (1, :q, -0.5, 30, :lat, :lon, 'Kampala', 'Uganda', :continent)"),
                {"q": f"k{index}", "lat": lat, "lon": lon, "continent": "N/A" if index == 2 else "Africa"},
            )
    old.dispose()
    store = open_store(sqlite_path)
    try:
        got = stored_distances(store)
        refused = stored_refusals(store)
    finally:
        store.dispose()
    assert refused == {"k0": False, "k1": True, "k2": True, "k3": True}
    assert got["k0"] == pytest.approx(core.prediction_error_km(-0.5, 30, "0.5", "30"))
    assert got["k1"] == core.REFUSAL_DISTANCE_KM and got["k3"] == core.REFUSAL_DISTANCE_KM
    assert got["k2"] is None


def _big_file(path: Path, n: int) -> Path:
    base = full_record(HAND_RECORDS[0])
    with path.open("w", encoding="utf-8") as handle:
        for index in range(n):
            handle.write(json.dumps({**base, "question_id": f"q{index}", "reasoning": "x" * 4000}) + "\n")
    return path


def test_the_scan_keeps_no_record_values(tmp_path: Path) -> None:
    path = _big_file(tmp_path / "big.jsonl", 2000)  # ~8 MB of chain-of-thought
    tracemalloc.start()
    try:
        scanned = prediction_files.scan_prediction_file(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(scanned.records) == 2000 and scanned.records[5].question_id == "q5"
    assert all(record.values == {} for record in scanned.records)
    assert peak < path.stat().st_size / 4, f"scan peaked at {peak / 2**20:.1f} MB"
    streamed = prediction_files.iter_prediction_records(path)
    first = next(streamed)
    assert first.values["reasoning"] == "x" * 4000 and first.line_no == 1


def test_streamed_and_whole_file_readings_agree(tmp_path: Path) -> None:
    lines = [json.dumps(full_record(r)) for r in HAND_RECORDS]
    lines.insert(2, "{not json")
    lines.insert(4, json.dumps(full_record(dict(HAND_RECORDS[0]))))  # duplicate of k1
    lines.insert(0, "")
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode("utf-8"))
    whole = prediction_files.read_prediction_file(path)
    scanned = prediction_files.scan_prediction_file(path)
    streamed = list(prediction_files.iter_prediction_records(path))
    assert [(r.line_no, r.question_id) for r in scanned.records] == [(r.line_no, r.question_id) for r in whole.records]
    assert [r.values for r in streamed] == [r.values for r in whole.records]
    assert scanned.malformed == whole.malformed and scanned.duplicates == whole.duplicates
    assert scanned.malformed[0][0] == 4 and scanned.duplicates[0][:2] == (6, 2)


def test_a_file_changed_between_the_passes_stores_nothing(store, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = write_jsonl(tmp_path / "r.jsonl", HAND_RECORDS)
    real_scan = prediction_files.scan_prediction_file

    def scan_then_edit(p):  # type: ignore[no-untyped-def]
        scanned = real_scan(p)
        write_jsonl(path, [dict(r, question_id=r["question_id"] + "x") for r in HAND_RECORDS])
        return scanned

    monkeypatch.setattr("workbench.importing.service.scan_prediction_file", scan_then_edit)
    with pytest.raises(InputError, match="changed while it was being imported"):
        import_predictions(store, "toy", path)
    assert stored_distances(store) == {}


@pytest.mark.parametrize("content", [b"", b"\xef\xbb\xbf  \n\n", b"\n" * 10_000])
def test_empty_files_are_refused_by_the_stream(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError, match="empty"):
        prediction_files.scan_prediction_file(path)


def test_invalid_utf8_names_its_line_in_the_stream(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"question_id": "a"}\n{"question_id": "b\xff"}\n')
    with pytest.raises(InputError, match=r"line 2: not valid UTF-8"):
        prediction_files.scan_prediction_file(path)
