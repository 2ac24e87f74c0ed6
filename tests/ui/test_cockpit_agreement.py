"""Agreement view: the export job's bundle opens in tabs, with the numbers of the stored judgments."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from sqlmodel import select

from storage.models import Clip, JudgeRun, Judgment
from ui.cockpit.agreement_view import MAX_TABLE_ROWS, AgreementView
from ui.cockpit.jobs import JobsPanel


def _tab(view: AgreementView, prefix: str):  # type: ignore[no-untyped-def]
    matches = [i for i in range(view.tabs.count()) if view.tabs.tabText(i).startswith(prefix)]
    assert len(matches) == 1, [view.tabs.tabText(i) for i in range(view.tabs.count())]
    return view.tabs.widget(matches[0])


def _shown(table) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """The table by column key (the header shows a readable title, its tooltip the key); a number
    cell as its full value (its tooltip; the cell shows it rounded for the reader), other cells as shown."""
    def cell(r: int, c: int) -> str:
        item = table.item(r, c)
        full = item.toolTip()  # a number cell's full value (repr)
        if not full:
            return item.text()
        if full.lstrip("-").isdigit():
            return full
        number = float(full)
        return "" if number != number else f"{number:.6g}"

    headers = [table.horizontalHeaderItem(c).toolTip() or table.horizontalHeaderItem(c).text()
               for c in range(table.columnCount())]
    return pd.DataFrame(
        [[cell(r, c) for c in range(table.columnCount())] for r in range(table.rowCount())],
        columns=headers,
    )


def _stored_contributions(store) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    with store.session() as s:
        rows = s.exec(
            select(JudgeRun.judge_name, Clip.key, Judgment.category_id, Judgment.contribution)
            .join(JudgeRun, Judgment.judge_run_id == JudgeRun.id)
            .join(Clip, Judgment.clip_id == Clip.id)
        ).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=["judge", "clip_key", "category_id", "contribution"])


def _make_view(qtbot, demo_store, tmp_path: Path, *, force_sync: bool):  # type: ignore[no-untyped-def]
    jobs = JobsPanel(demo_store, force_sync=force_sync)
    view = AgreementView(demo_store, jobs)
    qtbot.addWidget(jobs)
    qtbot.addWidget(view)
    view.folder.setText(str(tmp_path / "bundle"))
    view.bootstrap.setValue(20)
    return jobs, view


def test_export_opens_tables_with_the_stored_ratings_and_their_kappa(qtbot, demo_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    jobs, view = _make_view(qtbot, demo_store, tmp_path, force_sync=True)
    assert view.run_export()
    assert jobs.last_status == "done", jobs.status.text()
    titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
    assert "ratings_long" in titles and "ratings_wide" in titles
    assert any(t.startswith("per_category_") for t in titles)  # the figures
    assert "ratings written to" in view.message.text()

    # every stored judge score is in the ratings table as shown, and nothing else for the judges
    stored = _stored_contributions(demo_store)
    long = _shown(_tab(view, "ratings_long"))
    shown_judges = long[(long["label_type"] == "contribution") & long["rater"].str.startswith("judge:")]
    assert sorted(zip(shown_judges["rater"], shown_judges["clip_key"], shown_judges["category_id"],
                      shown_judges["value"].astype(int))) == sorted(
        zip("judge:" + stored["judge"], stored["clip_key"], stored["category_id"], stored["contribution"]))

    # Cohen's kappa of judge A vs judge B, computed here from the store, is the number shown
    wide = stored.pivot_table(index=["clip_key", "category_id"], columns="judge", values="contribution")
    expected = cohen_kappa_score(wide["DEMO judge A"], wide["DEMO judge B"], labels=[0, 1, 2, 3])
    coefficients = _shown(_tab(view, "coefficients"))
    row = coefficients[(coefficients["section"] == "judge-judge") & (coefficients["label"] == "contribution")
                       & (coefficients["subset_kind"] == "all") & (coefficients["coefficient"] == "cohen_kappa")
                       & (coefficients["rater_a"] == "judge:DEMO judge A")
                       & (coefficients["rater_b"] == "judge:DEMO judge B")]
    assert len(row) == 1
    assert float(row["value"].item()) == pytest.approx(expected, abs=5e-5)
    assert row["n_units"].item() == str(len(wide))


def test_long_tables_say_they_are_cut(qtbot, demo_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _, view = _make_view(qtbot, demo_store, tmp_path, force_sync=True)
    assert view.run_export()
    n_rows = len(pd.read_csv(tmp_path / "bundle" / "coefficients.csv"))
    assert n_rows > MAX_TABLE_ROWS  # the demo bundle has a few thousand coefficient rows
    table = _tab(view, "coefficients")
    assert table.rowCount() == MAX_TABLE_ROWS
    titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
    assert f"coefficients (first {MAX_TABLE_ROWS} of {n_rows} rows)" in titles


def test_the_bundle_shown_is_the_one_written_even_if_the_folder_is_edited(qtbot, demo_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    jobs, view = _make_view(qtbot, demo_store, tmp_path, force_sync=False)
    other = tmp_path / "other"
    other.mkdir()
    pd.DataFrame({"stale": [1]}).to_csv(other / "stale.csv", index=False)
    with qtbot.waitSignal(jobs.finished, timeout=120_000):
        assert view.run_export()
        view.folder.setText(str(other))  # the user types while the job runs
    jobs.wait()
    titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
    assert "ratings_long" in titles and "stale" not in titles
    # a later job (not an export) does not reopen a bundle
    view.tabs.clear()
    jobs.finished.emit("done", "some other job")
    assert view.tabs.count() == 0
