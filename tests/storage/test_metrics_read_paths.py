"""`aglw metrics` and `aglw leaderboard` compute on the values read, without a DataFrame (issue 32:
pandas cost them ~0.3 s of start-up); the DataFrame entries give exactly the same numbers.

The fixture has what tells orders and missing values apart: a model whose distances are all
undefined (NaN, sorted last), a model whose records link to no clip (coverage unknown), a clip
whose AGL1K continent label differs from its country's ISO continent (the continent groups differ
by profile, so a side-by-side row lacks one profile), a refusal, and human guesses.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

from cli.main import main
from tests.cli_helpers import run_json
from tests.storage.test_import_dataset import clip_row, write_csv
from tests.storage.test_leaderboard_counting import CLIPS, PARIS, answer, write
from workbench.importing import import_dataset, import_predictions

CAIRO = ("c4", 30.0444, 31.2357, "Cairo", "Egypt", "Asia")  # AGL1K label Asia; ISO: Africa


@pytest.fixture
def db(sqlite_path, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    from storage import open_store

    monkeypatch.setitem(CLIPS, CAIRO[0], CAIRO[1:])
    store = open_store(sqlite_path)
    rows = [clip_row(i, key=k, latitude=v[0], longitude=v[1], city=v[2], country=v[3], continent=v[4])
            for i, (k, v) in enumerate(CLIPS.items())]
    import_dataset(store, write_csv(tmp_path / "d.csv", rows), name="d")
    answers = {
        "A": [answer("c0", *PARIS, "Paris", "France", "Europe"), answer("c4", 30.0, 31.0, "Cairo", "Egypt", "Africa"),
              answer("c2", "Unknown", "Unknown", "Unknown", "Unknown", "Unknown")],
        "B": [answer("c1", *PARIS, "Paris", "France", "Europe"), answer("c2", 37.5, 127.0, "Seoul", "Korea", "Asia")],
        "no distance": [answer("c3", None, None, "Quito", "Ecuador", "South America")],
        "unlinked": [dict(answer("c0", *PARIS, "Paris", "France", "Europe"), question_id="elsewhere")],
    }
    for model, records in answers.items():
        import_predictions(store, model, write(tmp_path / f"{len(model)}{model[0]}.jsonl", records))
    store.dispose()
    for who, clip, lat, lon in (("ada", "c0", "48.85", "2.35"), ("bob", "c4", "30.0", "31.2")):
        assert main(["--db", str(sqlite_path), "--annotator", who, "study", "guess", "--clip", clip,
                     "--lat", lat, "--lon", lon]) == 0
    return str(sqlite_path)


def _same(a: Any, b: Any) -> bool:
    """Equal values; NaN and None (a DataFrame's missing cell) alike."""
    def missing(v: Any) -> bool:
        return v is None or (isinstance(v, float) and math.isnan(v))

    if missing(a) or missing(b):
        return missing(a) and missing(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _same_rows(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> None:
    assert len(left) == len(right)
    for a, b in zip(left, right):
        assert list(a) == list(b)
        assert all(_same(a[k], b[k]) for k in a), (a, b)


def test_model_metrics_equal_the_dataframe_entry(db) -> None:  # type: ignore[no-untyped-def]
    from storage import open_store
    from workbench.metrics.aggregate import compute_metrics
    from workbench.metrics.service import model_metrics, prediction_records

    store = open_store(db)
    try:
        for model in ("A", "B", "no distance", "unlinked"):
            for profile in ("agl1k", "iso"):
                expected = compute_metrics(prediction_records(store, model), profile, model=model)  # type: ignore[arg-type]
                got = model_metrics(store, model, profile)  # type: ignore[arg-type]
                # model_metrics adds how many answers each metric counted (n_<metric>, n_unreadable)
                assert "n_unreadable" in got
                got = {k: v for k, v in got.items() if k == "n" or not k.startswith("n_")}
                assert list(got) == list(expected)
                # identical to the last digit, not approximately
                assert all(_same(got[k], expected[k]) for k in got), (model, profile, got, expected)
    finally:
        store.dispose()


@pytest.mark.parametrize("by", [None, "continent", "speech"])
def test_leaderboard_rows_are_the_dataframe_in_pandas_order(db, by) -> None:  # type: ignore[no-untyped-def]
    from storage import open_store
    from workbench.metrics.service import leaderboard, leaderboard_rows

    store = open_store(db)
    try:
        for ci in (False, True):
            found = leaderboard_rows(store, "both", by, ci=ci, bootstrap=20)  # type: ignore[arg-type]
            frame = leaderboard(store, "both", by, ci=ci, bootstrap=20)  # type: ignore[arg-type]
            assert list(frame.columns) == found.columns
            _same_rows(frame.to_dict(orient="records"), found.rows)
            # The order the table had when pandas sorted it (missing distances last).
            keys = (["group"] if by else []) + ["profile", "distance_error_km", "model"]
            ordered = pd.DataFrame(found.rows, columns=found.columns).sort_values(keys, kind="stable",
                                                                                  na_position="last")
            assert list(ordered.index) == list(range(len(found.rows)))
            if by is None:  # the undefined distance sorts last among each profile's rows
                assert [r["model"] for r in found.rows if r["profile"] == "agl1k"][-1] == "no distance"
    finally:
        store.dispose()


def test_cli_rows_and_side_by_side_table(db, capsys) -> None:  # type: ignore[no-untyped-def]
    from storage import open_store
    from workbench.metrics.service import leaderboard
    from workbench.studies.localizers import human_rows

    store = open_store(db)
    try:
        models = leaderboard(store, "both")
        expected = [*models.to_dict(orient="records"), *human_rows(store, "both", list(models.columns))]
    finally:
        store.dispose()
    out = run_json(capsys, "--db", db, "--json", "leaderboard")
    _same_rows(out["rows"], expected)
    assert "human (pooled)" in {r["model"] for r in out["rows"]}

    capsys.readouterr()
    assert main(["--db", db, "leaderboard", "--by", "continent"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("│")]
    # one row per (group, model), in name order; A's Cairo answer is in Africa (iso) and Asia (agl1k)
    cells = [[c.strip() for c in line.strip("│").split("│")][:2] for line in lines]
    assert cells == sorted(cells)
    assert ["Africa", "A"] in cells and ["Asia", "A"] in cells
