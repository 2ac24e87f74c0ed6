"""Curation view: live what-if preview stores nothing; forcing a polarity is undoable and diffs as expected."""

from __future__ import annotations

from sqlalchemy import func, select

from storage.models import CategoryPolarity, CurationRun
from tests.storage.test_curation_fixtures import SPEECH
from tests.storage.test_curation_selection_export import project
from ui.cockpit.curation_view import CurationView
from workbench.commands import CommandStack
from workbench.curation import service
from workbench.curation.model import FitParameters
from workbench.labels import LabelService


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
