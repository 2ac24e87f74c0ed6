"""Leaderboard view: the numbers in the table are the hand-computed metrics of two small models."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.storage.test_import_predictions import HAND_RECORDS, MERIDIAN_DEGREE_AT_EQUATOR_KM, hand_dataset, write_jsonl
from ui.cockpit.leaderboard_view import LeaderboardView, cell_text
from workbench.importing import import_predictions


def rows_of(view: LeaderboardView) -> dict[tuple[str, ...], dict[str, str]]:
    """The table: (group?, model, profile) → column key (the header's tooltip) → the cell's value (its
    full number, the tooltip, written like the old cells so the hand computations compare)."""
    from workbench.formatting import metric_title

    table = view.table
    headers = [table.horizontalHeaderItem(c).toolTip() for c in range(table.columnCount())]
    # the shown titles are the readable ones (no snake_case), the key is kept beside them
    # (a long title on a few lines, so the table fits the window: issue 39)
    assert [table.horizontalHeaderItem(c).text().replace("\n", " ") for c in range(table.columnCount())] == [
        metric_title(h) for h in headers]
    rows = {}
    for r in range(table.rowCount()):
        row = {h: _raw_text(table.item(r, c)) for c, h in enumerate(headers)}
        key = tuple(row[k] for k in ("group", "model", "profile") if k in row)
        assert key not in rows
        rows[key] = row
    return rows


def _raw_text(item) -> str:  # type: ignore[no-untyped-def]
    """A numeric cell's full value (its tooltip) in the old cell format (4 significant digits, 1 decimal from 1000)."""
    full = item.toolTip()
    if not full:
        return item.text()
    if full.lstrip("-").isdigit():
        return full
    raw = float(full)
    if raw != raw:
        return ""
    return f"{raw:.1f}" if abs(raw) >= 1000 else f"{raw:.4g}"


@pytest.fixture
def hand_store(store, tmp_path):  # type: ignore[no-untyped-def]
    hand_dataset(store, tmp_path)
    import_predictions(store, "toy", write_jsonl(tmp_path / "toy.jsonl", HAND_RECORDS))
    perfect = [
        dict(r, predicted_latitude=r["true_latitude"], predicted_longitude=r["true_longitude"],
             predicted_city=r["true_city"], predicted_country=r["true_country"], predicted_continent=r["true_continent"])
        for r in HAND_RECORDS
    ]
    import_predictions(store, "perfect", write_jsonl(tmp_path / "perfect.jsonl", perfect))
    return store


def test_overall_table_shows_the_hand_computed_metrics(qtbot, hand_store) -> None:  # type: ignore[no-untyped-def]
    view = LeaderboardView(hand_store)
    qtbot.addWidget(view)
    rows = rows_of(view)
    assert set(rows) == {("toy", "agl1k"), ("toy", "iso"), ("perfect", "agl1k"), ("perfect", "iso")}
    d_a = MERIDIAN_DEGREE_AT_EQUATOR_KM  # k1 is one degree of latitude off at the equator
    toy = rows[("toy", "agl1k")]
    assert toy["n"] == "5"
    # the hand computation of tests/storage/test_import_predictions.py (AGL1K's distance rules)
    assert toy["distance_error_km"] == f"{(d_a + 10_000) / 4:.1f}" == "2527.6"
    assert (toy["city_acc"], toy["country_acc"], toy["continent_acc"]) == ("0.5", "0.8", "0.75")
    assert (toy["reject_rate"], toy["within_1km"], toy["within_1000km"]) == ("0.4", "0.4", "0.6")
    geoscore = (5000 * math.exp(-d_a / 1492) + 5000 * math.exp(-10_000 / 1492) + 10_000) / 4
    assert float(toy["geoscore_mean"]) == pytest.approx(geoscore, abs=0.05)
    # the iso profile resolves "Korea, Republic of" / "South Korea" and Türkiye / Turkey
    iso = rows[("toy", "iso")]
    assert (iso["country_acc"], iso["continent_acc"]) == ("1", "1")
    assert iso["distance_error_km"] == toy["distance_error_km"]
    perfect = rows[("perfect", "agl1k")]
    assert (perfect["distance_error_km"], perfect["within_1km"], perfect["country_acc"]) == ("0", "1", "1")


def test_profile_and_breakdown_choosers_change_the_numbers(qtbot, hand_store) -> None:  # type: ignore[no-untyped-def]
    view = LeaderboardView(hand_store)
    qtbot.addWidget(view)
    view.profile.setCurrentText("iso")
    assert set(rows_of(view)) == {("toy", "iso"), ("perfect", "iso")}
    view.profile.setCurrentText("agl1k")
    view.by.setCurrentIndex(view.by.findData("speech"))
    rows = rows_of(view)
    speech, silent = rows[("speech", "toy", "agl1k")], rows[("no speech", "toy", "agl1k")]
    assert speech["n"] == "3" and silent["n"] == "2"  # human_sounds ≥ 0.1: k1, k3, k5
    assert speech["distance_error_km"] == f"{MERIDIAN_DEGREE_AT_EQUATOR_KM / 2:.4g}" == "55.29"
    assert float(speech["country_acc"]) == pytest.approx(2 / 3, abs=5e-5)
    assert (silent["distance_error_km"], silent["reject_rate"]) == ("5000.0", "0.5")
    view.profile.setCurrentText("iso")
    view.by.setCurrentIndex(view.by.findData("continent"))
    by_continent = {key[0]: row for key, row in rows_of(view).items() if key[1] == "toy"}
    assert {group: row["n"] for group, row in by_continent.items()} == {"Africa": "1", "Asia": "2", "Europe": "1", "Oceania": "1"}
    assert by_continent["Asia"]["country_acc"] == "1"
    view.by.setCurrentIndex(view.by.findData(None))
    assert len(rows_of(view)) == 2 and "group" not in [
        view.table.horizontalHeaderItem(c).text() for c in range(view.table.columnCount())
    ]


def test_cells_read_as_a_reader_writes_them_down() -> None:
    assert cell_text(10771.394809, "distance_error_km") == "10,771 km"
    assert cell_text(np.float64(0.05592), "country_acc") == "5.6 %"
    assert cell_text(np.float64(2281.7), "geoscore_mean") == "2,282"
    assert cell_text(np.float64(0.004161), "kappa") == "0.00416"
    assert cell_text(float("nan"), "city_acc") == "" and cell_text(None) == ""
    assert cell_text(np.int64(12345), "n") == "12,345" and cell_text("Europe", "group") == "Europe"


def test_the_live_refresh_reads_the_leaderboard_off_the_gui_thread(qtbot, hand_store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The live refresh (every 2 s while a job stores answers) does not block the GUI thread, and a
    synchronous re-read (F5, a job's end) is not overwritten by an older background read."""
    import threading

    import pandas as pd

    import ui.cockpit.leaderboard_view as module

    real = module.read_leaderboard
    release = threading.Event()
    background: list[int] = []
    stale = pd.DataFrame({"model": ["stale"]})

    def read(store: object, profile: str, by: str | None) -> pd.DataFrame:
        if threading.current_thread() is threading.main_thread():
            return real(store, profile, by)
        background.append(threading.get_ident())
        release.wait(10)
        return stale

    monkeypatch.setattr(module, "read_leaderboard", read)
    view = module.LeaderboardView(hand_store)
    qtbot.addWidget(view)
    view.refresh_in_background()
    qtbot.waitUntil(lambda: bool(background))
    assert set(view.frame["model"]) == {"toy", "perfect"}  # the GUI thread did not wait for it
    view.refresh()  # F5 while the live read is under way: the older read must not win
    release.set()
    qtbot.waitUntil(lambda: view._reader.dropped == 1)
    assert set(view.frame["model"]) == {"toy", "perfect"}
    view.refresh_in_background()  # and a live read nobody overtook is shown
    qtbot.waitUntil(lambda: list(view.frame["model"]) == ["stale"])
    view.shutdown()


def test_the_view_counts_honestly_and_compares_two_models(qtbot, sqlite_path, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Coverage, common clips, intervals and the paired comparison, as the CLI gives them."""
    from PySide6.QtCore import Qt

    from storage import open_store
    from tests.storage.test_leaderboard_counting import make_project
    from ui.cockpit.leaderboard_view import LeaderboardView
    from workbench.metrics.compare import compare_models
    from workbench.metrics.service import leaderboard

    store = open_store(make_project(sqlite_path, tmp_path))
    view = LeaderboardView(store, force_sync=True)
    qtbot.addWidget(view)
    view.profile.setCurrentText("agl1k")
    assert {"n", "n_dataset"} <= set(view.frame.columns)
    assert "a refusal counts 10,000 km" in view.counting.text()
    view.common.setChecked(True)
    view.ci.setChecked(True)
    expected = leaderboard(store, "agl1k", common=True, ci=True)
    shown = view.frame.set_index("model")
    for row in expected.to_dict("records"):
        assert shown.loc[row["model"], "n"] == row["n"] == 2
        assert shown.loc[row["model"], "distance_error_km_ci"] == row["distance_error_km_ci"]
    assert "on the 2 clips all of them answered" in view.counting.text()
    view.compare_a.setCurrentText("A")
    view.compare_b.setCurrentText("B")
    view.run_compare()
    cli = {m["metric"]: m for m in compare_models(store, "A", "B", profile="agl1k")["metrics"]}
    assert view.compare_table.rowCount() == len(cli)
    headers = [view.compare_table.horizontalHeaderItem(c).data(Qt.ItemDataRole.UserRole)
               for c in range(view.compare_table.columnCount())]
    for r in range(view.compare_table.rowCount()):
        metric = view.compare_table.item(r, headers.index("metric")).text()
        p_holm = view.compare_table.item(r, headers.index("p_holm")).data(Qt.ItemDataRole.UserRole)
        assert float(p_holm) == pytest.approx(cli[metric]["p_holm"])  # the full value (a number or its repr)
    assert "2 clips both answered" in view.compare_status.text()
    view.shutdown()
    store.dispose()


def test_the_view_shows_every_row_aglw_leaderboard_prints_crowds_too(qtbot, store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """One leaderboard: the desktop's table has the rows of `aglw leaderboard` (the web study's
    crowd and its consensus too), says who the crowd's rows leave out, and compares a crowd row
    with a model as `aglw compare` does (before: the crowd rows were in the CLI only)."""
    from tests.storage.test_crowd_leaderboard import CONSENSUS, POOLED, build
    from workbench.country_aliases import alias_table
    from workbench.studies.board import leaderboard_board
    from workbench.studies.crowd import compare_rows

    pseudonyms = build(store, tmp_path)
    view = LeaderboardView(store, force_sync=True)
    qtbot.addWidget(view)
    view.profile.setCurrentText("agl1k")
    for common in (False, True):
        view.common.setChecked(common)
        board = leaderboard_board(store, "agl1k", None, common=common, aliases=alias_table())
        assert list(view.frame["model"]) == [row["model"] for row in board.rows]
        assert {POOLED, CONSENSUS} <= set(view.frame["model"])
        shown = view.frame.set_index("model")
        for row in board.rows:
            assert shown.loc[row["model"], "n"] == row["n"]
            assert shown.loc[row["model"], "distance_error_km"] == pytest.approx(row["distance_error_km"])
        if not common:
            assert list(shown.loc[POOLED, ["n", "n_clips", "n_participants"]]) == [9, 3, 3]
    # the excluded participant is named with the rule, as under the CLI's table
    assert f"human (crowd-1): 3 participant(s) analyzed" in view.counting.text()
    assert pseudonyms[3] in view.counting.text()
    view.common.setChecked(False)
    # the crowd row can be compared, with the CLI's numbers
    assert POOLED in [view.compare_a.itemText(i) for i in range(view.compare_a.count())]
    view.compare_a.setCurrentText(POOLED)
    view.compare_b.setCurrentText("B")
    view.run_compare()
    cli = compare_rows(store, POOLED, "B", profile="agl1k", aliases=alias_table())
    assert f"on the {cli['n_common']} clips both answered" in view.compare_status.text()
    assert view.compare_table.rowCount() == len(cli["metrics"])
    view.shutdown()
