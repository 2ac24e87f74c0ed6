"""Curation view: live what-if preview stores nothing; forcing a polarity is undoable and diffs as expected."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from storage.models import CategoryPolarity, CurationRun
from tests.storage.test_curation_fixtures import SPEECH
from tests.storage.test_curation_selection_export import project
from ui.cockpit.curation_view import CurationView
from workbench.commands import CommandStack
from workbench.curation import service
from workbench.curation.model import FitParameters
from workbench.labels import LabelService

# The offscreen platform plugin reports this when a shown window's minimum size changes (the tables
# keep their columns' width); it is not an application problem.
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")


def _runs(store) -> int:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return int(s.execute(select(func.count()).select_from(CurationRun)).scalar_one())


def _view(qtbot, store, annotator_id, stack):  # type: ignore[no-untyped-def]
    view = CurationView(store, annotator_id, stack, live=False)
    qtbot.addWidget(view)
    view.n_min.setValue(1)
    return view


def test_what_if_change_updates_preview_without_storing_a_run(qtbot, store) -> None:  # type: ignore[no-untyped-def]
    project(store)
    first = service.fit(store, FitParameters(n_min=1))
    annotator = LabelService(store).ensure_annotator("cleo")
    view = _view(qtbot, store, annotator.id, CommandStack())
    view.live = True
    before = view.preview_now()
    assert before is not None and before.run_id is None
    assert view.category_rows()[SPEECH]["Polarity"] == "P"
    assert _runs(store) == 1

    # a parameter change re-previews by itself (debounced) and changes the candidates
    with qtbot.waitSignal(view._timer.timeout, timeout=2000):
        view.theta.setValue(1.0)
    raised = view.preview
    assert raised is not None and raised is not before
    assert raised.summary["n_candidates"] < before.summary["n_candidates"]
    assert f"{raised.summary['n_candidates']} candidates" in view.summary.text()

    # what-if polarity: table and diff show it, nothing is stored or recorded
    view.what_if_mode.setChecked(True)
    assert view.select_category(SPEECH)
    view.force_selected("N")
    rows = view.category_rows()
    assert rows[SPEECH]["Polarity"] == "N" and rows[SPEECH]["Forced by expert"] == "what-if"
    flips = {c.category: (c.old, c.new) for c in view.preview.diff.polarity_changes}
    assert flips[SPEECH] == ("P", "N") and view.preview.diff.base_run_id == first.run_id
    assert _runs(store) == 1
    with store.session() as s:
        assert s.scalars(select(CategoryPolarity)).all() == []


def test_forcing_a_polarity_is_undoable_and_gives_the_expected_run_diff(qtbot, store) -> None:  # type: ignore[no-untyped-def]
    project(store)
    annotator = LabelService(store).ensure_annotator("cleo")
    stack = CommandStack()
    view = _view(qtbot, store, annotator.id, stack)
    view.theta.setValue(1.0)
    params = FitParameters(n_min=1, theta=1.0)
    run_1 = view.fit_and_store()
    baseline = {c.key for c in service.fit(store, params, preview=True).clips if c.candidate}

    assert view.force_polarity(SPEECH, "N")
    assert stack.can_undo and stack.undo_text == f"force {SPEECH} to N"
    assert view.category_rows()[SPEECH]["Polarity"] == "N"
    assert view.category_rows()[SPEECH]["Forced by expert"] == "yes"
    run_2 = view.fit_and_store()
    assert run_2 == run_1 + 1 and view.run_ids() == [run_1, run_2]
    diff = view.show_run_diff()
    assert [(c.category, c.old, c.new) for c in diff.polarity_changes] == [(SPEECH, "P", "N")]
    after = {c.key for c in service.fit(store, params, preview=True).clips if c.candidate}
    assert set(diff.left) == baseline - after and set(diff.entered) == after - baseline
    assert diff.left and not diff.entered  # speech clips drop below θ once speech counts against them
    assert {m.clip for m in diff.largest_moves} >= set(diff.left)
    shown = view.run_diff.topLevelItem(0)
    assert shown.text(0).startswith("Categories that flipped (1)") and shown.child(0).text(1) == "P → N"

    # clips in the diff are links into the review workbench
    left_group = view.run_diff.topLevelItem(2)
    with qtbot.waitSignal(view.clipActivated) as activated:
        view.run_diff.itemActivated.emit(left_group.child(0), 0)
    assert activated.args == [diff.left[0]]

    stack.undo()
    with store.session() as s:
        assert s.scalars(select(CategoryPolarity.polarity)).all() == [None]
    view.preview_now()
    assert view.category_rows()[SPEECH]["Polarity"] == "P"
    assert [(c.category, c.old, c.new) for c in view.preview.diff.polarity_changes] == [(SPEECH, "N", "P")]
    view.shutdown()


def test_fit_plot_draws_each_category_with_the_decision_the_table_shows(qtbot, store) -> None:  # type: ignore[no-untyped-def]
    """Beside the table: one mark per fitted category at a − ā, the ±α band, each mark's decision
    (P, N, neutral, insufficient, forced) as the table shows it, category names with their support
    on the axis, and no text over the data (issue 39)."""
    from tests.ui.test_readability import (
        captions_over_data,
        clipped_texts,
        colours_without_legend,
        overlapping_plot_texts,
    )

    project(store)
    service.fit(store, FitParameters(n_min=1))
    annotator = LabelService(store).ensure_annotator("cleo")
    view = _view(qtbot, store, annotator.id, CommandStack())
    view.resize(1280, 800)
    view.show()
    qtbot.waitExposed(view)
    view.show_stored()
    assert view.force_polarity(SPEECH, "N")  # a forced category: the preview shows it as forced
    top = max(int(row["Support"]) for row in view.category_rows().values())
    view.n_min.setValue(top + 1)  # and every other category with too little support: insufficient
    view.preview_now()
    qtbot.wait(20)
    rows = view.category_rows()
    marks = view.fit_plot.marks()
    assert sorted(mark.category for mark in marks) == sorted(rows)
    decisions = set()
    for mark in marks:
        row = rows[mark.category]
        expected = "forced" if row["Forced by expert"] else row["Fitted"]
        assert mark.decision == expected, (mark, row)
        decisions.add(mark.decision)
        assert mark.x == pytest.approx(float(row["a"]) - float(row["ā"]), abs=1e-3)
        assert mark.label.startswith(row["Name"] or mark.category) and f"n = {row['Support']}" in mark.label
    assert "forced" in decisions and "insufficient" in decisions, decisions
    assert view.fit_plot.band() == pytest.approx((-view.alpha.value(), view.alpha.value()))
    plot = view.fit_plot
    assert not captions_over_data(plot), captions_over_data(plot)
    assert not overlapping_plot_texts(plot), overlapping_plot_texts(plot)
    assert not clipped_texts(plot) and not colours_without_legend(plot)
    # every category's name is drawn whole on the left axis
    axis = plot.plot.getAxis("left")
    widest = max(axis.fontMetrics().horizontalAdvance(mark.label) if hasattr(axis, "fontMetrics")
                 else plot.fontMetrics().horizontalAdvance(mark.label) for mark in marks)
    assert axis.width() >= widest, (axis.width(), widest)
