"""The attribution grid and evidence panels: other experts, the ALM choice, blind mode (pytest-qt)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from sqlmodel import select

from storage.models import AlmRun, JudgeRun, Judgment, Prediction
from workbench.demo import DEMO_ALM, DEMO_JUDGES
from workbench.labels import LabelService
from workbench.metrics.core import prediction_error_km
from workbench.review.service import ReviewService

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

SECOND_ALM = "AAA second ALM"  # sorts before the demo ALM: the old code showed its reasoning first
SECOND_REASONING = {
    "DEMO-0002": "SECOND-ALM reasoning. Surf and a tram bell at 0:07; I guess Lisbon.",
    "DEMO-0004": "SECOND-ALM reasoning. Birdsong from 0:02 in a wet forest.",
}
LISBON = (38.7223, -9.1393)


def _clip_id(store, key: str) -> int:  # type: ignore[no-untyped-def]
    return ReviewService(store, {}, {}).clip_id_for_key(key)


def _add_second_alm(store) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """A second ALM predicting DEMO-0002 (not judged) and DEMO-0004, where the first demo judge
    re-ran on it (a newer run than the demo one) for Bird. Returns (demo ALM id, second ALM id)."""
    with store.write() as s:
        demo_alm = s.exec(select(AlmRun).where(AlmRun.model == DEMO_ALM)).one()
        alm = AlmRun(model=SECOND_ALM)
        s.add(alm)
        s.flush()
        for key, reasoning in SECOND_REASONING.items():
            s.add(Prediction(alm_run_id=alm.id, clip_id=_clip_id(store, key), question_id=key,
                             predicted_city="Lisbon", predicted_country="Portugal", predicted_continent="Europe",
                             predicted_latitude=str(LISBON[0]), predicted_longitude=str(LISBON[1]),
                             reasoning=reasoning))
        run = JudgeRun(judge_name=DEMO_JUDGES[0], provider="demo", model_id="x", prompt_version="v",
                       alm_run_id=alm.id, status="done")
        s.add(run)
        s.flush()
        s.add(Judgment(judge_run_id=run.id, clip_id=_clip_id(store, "DEMO-0004"), category_id="/m/015p6",
                       contribution=0, effect="neutral", evidence="SECOND-ALM evidence", status="ok"))
        return int(demo_alm.id), int(alm.id)


def _choose(window, alm_run_id: int) -> None:  # type: ignore[no-untyped-def]
    box = window.info.model_box
    index = box.findData(alm_run_id)
    assert index >= 0
    box.setCurrentIndex(index)
    box.activated.emit(index)


def _judge_cell(model, category_id: str, judge: str, role=Qt.ItemDataRole.DisplayRole):  # type: ignore[no-untyped-def]
    row = [r.category_id for r in model.rows].index(category_id)
    return model.index(row, 2 + model.judges.index(judge)).data(role)


def test_other_experts_labels_are_a_column_hidden_like_the_judges(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    labels = LabelService(demo_store)
    clip_id = _clip_id(demo_store, "DEMO-0002")
    someone = labels.ensure_annotator("someone else")
    third = labels.ensure_annotator("third expert")
    labels.set_category_label(someone.id, clip_id, "/m/05kq4", contribution=3, effect="helped", polarity="P")
    labels.set_category_label(third.id, clip_id, "/m/05kq4", contribution=1, effect="misled")
    window = make_window()
    assert window.blind_mode
    window.open_clip(clip_id)
    model, grid = window.grid.grid_model, window.grid
    column = model.others_column
    assert model.headerData(column, Qt.Orientation.Horizontal) == "other experts"
    ids = [r.category_id for r in model.rows]
    cell = model.index(ids.index("/m/05kq4"), column)
    assert sorted(cell.data().split(" / ")) == ["1−", "3+"]
    tooltip = cell.data(Qt.ItemDataRole.ToolTipRole)
    assert "someone else: 3 decisive, helped, P/N P" in tooltip and "third expert: 1 minor, misled" in tooltip
    assert model.index(ids.index("/m/015p6"), column).data() == ""
    assert model.index(ids.index("/m/015p6"), column).data(Qt.ItemDataRole.ToolTipRole) is None
    assert not model.flags(cell) & Qt.ItemFlag.ItemIsEditable

    def hidden() -> tuple[bool, bool]:
        judges = [grid.isColumnHidden(c) for c in model.judge_columns()]
        assert judges and len(set(judges)) == 1
        return judges[0], grid.isColumnHidden(column)

    assert hidden() == (True, True)  # blind mode, nothing entered yet
    assert not grid.isColumnHidden(model.contribution_column)
    for row in range(model.rowCount()):
        model.setData(model.index(row, model.contribution_column), 2)
    assert hidden() == (False, False)
    window.undo()
    assert hidden() == (True, True)
    window.blind_action.setChecked(False)
    assert hidden() == (False, False)


def test_reasoning_prediction_and_judges_follow_the_chosen_alm(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    # The window is built first: the cockpit's selection view cannot yet build its pool when
    # two ALMs have judge runs (curation.inputs asks for --alm); that is not what this tests.
    window = make_window()
    demo_alm, second_alm = _add_second_alm(demo_store)
    grid_model = window.grid.grid_model
    box = window.info.model_box
    porto = _clip_id(demo_store, "DEMO-0002")
    window.open_clip(porto)
    detail = window.detail
    demo_prediction = next(p for p in detail.predictions if p.alm_run_id == demo_alm)
    # Default: the ALM the judges read, although the other one sorts first.
    assert [p.model for p in detail.predictions] == [SECOND_ALM, DEMO_ALM]
    assert window.reasoning.toPlainText() == demo_prediction.reasoning
    assert detail.alm_run_id == demo_alm
    assert box.count() == 2 and box.isEnabled() and box.currentData() == demo_alm
    assert "Cornwall" in window.info.predictions.toPlainText() and "Lisbon" not in window.info.predictions.toPlainText()
    assert grid_model.judges == list(DEMO_JUDGES)
    assert DEMO_ALM in window.evidence_tabs.tabToolTip(window.evidence_tabs.indexOf(window.reasoning))

    _choose(window, second_alm)
    assert window.detail.alm_run_id == second_alm
    assert window.reasoning.toPlainText() == SECOND_REASONING["DEMO-0002"]
    assert window.player_view.time_refs == [7.0]
    error = prediction_error_km(41.1579, -8.6291, *LISBON)
    info = window.info.predictions.toPlainText()
    assert SECOND_ALM in info and "Lisbon" in info and f"error {error:,.0f} km" in info and "Cornwall" not in info
    assert SECOND_ALM in window.evidence_tabs.tabToolTip(window.evidence_tabs.indexOf(window.reasoning))
    # Nobody judged this ALM's reasoning on the clip: no judge columns and no consensus.
    assert grid_model.judges == [] and window.detail.judge_names == ()
    assert all(grid_model.index(r, grid_model.consensus_column).data() == "" for r in range(grid_model.rowCount()))
    assert not window.grid.isColumnHidden(grid_model.contribution_column)
    assert not window.grid.isColumnHidden(grid_model.category_polarity_column)

    # The choice is kept on a clip that has the same ALM ...
    window.open_clip(_clip_id(demo_store, "DEMO-0004"))
    assert window.detail.alm_run_id == second_alm and box.currentData() == second_alm
    assert window.reasoning.toPlainText() == SECOND_REASONING["DEMO-0004"]
    # ... where only the judge that read this ALM's reasoning is shown, with its own verdict.
    assert grid_model.judges == [DEMO_JUDGES[0]]
    assert _judge_cell(grid_model, "/m/015p6", DEMO_JUDGES[0]) == "0 neutral"
    from ui.evidence import plain_tooltip  # the evidence is shown as written, never as markup

    assert _judge_cell(grid_model, "/m/015p6", DEMO_JUDGES[0], Qt.ItemDataRole.ToolTipRole) == (
        plain_tooltip("evidence: SECOND-ALM evidence")
    )
    # A clip without that ALM falls back to its default; the choice comes back afterwards,
    # also where the default would be the other ALM.
    window.open_clip(_clip_id(demo_store, "DEMO-0001"))
    assert window.detail.alm_run_id == demo_alm and box.count() == 1 and not box.isEnabled()
    assert grid_model.judges == list(DEMO_JUDGES)
    window.open_clip(porto)
    assert window.detail.alm_run_id == second_alm and grid_model.judges == []
    assert window.reasoning.toPlainText() == SECOND_REASONING["DEMO-0002"]
    window.open_clip(_clip_id(demo_store, "DEMO-0004"))

    # The demo ALM on DEMO-0004: all three judges, the first one with its demo-run verdict
    # even though its run on the other ALM is newer.
    _choose(window, demo_alm)
    assert window.reasoning.toPlainText() == next(
        p.reasoning for p in window.detail.predictions if p.alm_run_id == demo_alm
    )
    assert grid_model.judges == list(DEMO_JUDGES)
    with demo_store.session() as s:
        demo_run = s.exec(select(JudgeRun).where(JudgeRun.judge_name == DEMO_JUDGES[0],
                                                 JudgeRun.alm_run_id == demo_alm)).one()
        original = s.exec(select(Judgment).where(Judgment.judge_run_id == demo_run.id,
                                                 Judgment.clip_id == window.detail.clip_id,
                                                 Judgment.category_id == "/m/015p6")).one()
        expected = f"{original.contribution} {original.effect or ''}".strip()
    assert _judge_cell(grid_model, "/m/015p6", DEMO_JUDGES[0]) == expected
    tooltip = _judge_cell(grid_model, "/m/015p6", DEMO_JUDGES[0], Qt.ItemDataRole.ToolTipRole)
    assert "SECOND-ALM" not in (tooltip or "")
    bird = window.detail.category("/m/015p6")
    assert bird.judgments[DEMO_JUDGES[0]].judge_run_id == demo_run.id
    assert bird.consensus == pytest.approx(sum(v.contribution for v in bird.judgments.values()) / 3 / 3)
    # an edit re-reads the clip and keeps showing the chosen ALM
    window.blind_action.setChecked(False)
    grid_model.setData(grid_model.index(0, grid_model.contribution_column), 1)
    assert window.detail.alm_run_id == demo_alm and grid_model.judges == list(DEMO_JUDGES)


def test_clip_detail_defaults_to_the_judged_alm(demo_store) -> None:  # type: ignore[no-untyped-def]
    demo_alm, second_alm = _add_second_alm(demo_store)
    service = ReviewService(demo_store, {}, {})
    forest = service.clip_detail(_clip_id(demo_store, "DEMO-0004"))
    # both ALMs have judge runs on DEMO-0004: the first one by model name
    assert forest.alm_run_id == second_alm and forest.prediction.model == SECOND_ALM
    assert forest.judge_names == (DEMO_JUDGES[0],)
    assert {v.alm_run_id for r in forest.categories for v in r.alm_judgments} == {demo_alm, second_alm}
    demo_view = forest.for_alm(demo_alm)
    assert demo_view.judge_names == DEMO_JUDGES and demo_view.prediction.model == DEMO_ALM
    assert all(v.alm_run_id == demo_alm for r in demo_view.categories for v in r.judgments.values())
    with pytest.raises(KeyError):
        forest.for_alm(10_000)
    # a clip without the second ALM keeps every judge on the demo ALM
    market = service.clip_detail(_clip_id(demo_store, "DEMO-0001"))
    assert market.alm_run_id == demo_alm and market.judge_names == DEMO_JUDGES


def test_blind_mode_hides_the_localizability_until_the_judges_show(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    assert window.blind_mode
    window.open_clip(_clip_id(demo_store, "DEMO-0001"))
    detail = window.detail
    assert detail.localizability is not None
    score = window.clip_panel.score
    assert score.text() == "hidden in blind mode"
    window.clip_panel.rating.setCurrentIndex(4)
    window.clip_panel.rating.activated.emit(4)
    assert score.text() == "hidden in blind mode"  # rated, not yet revealed
    window.reveal_current()
    assert f"{detail.localizability:.3f}" in score.text() and f"percentile {detail.percentile:.0f}" in score.text()
    window.open_clip(_clip_id(demo_store, "DEMO-0002"))
    assert score.text() == "hidden in blind mode"
    window.blind_action.setChecked(False)
    assert f"{window.detail.localizability:.3f}" in score.text() and "percentile" in score.text()
