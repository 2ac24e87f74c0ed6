"""The Attribution grid shows every category labelled on the clip, also outside its top tags
(issue [N]): the annotator's own at once, marked "not among the top tags" and editable like the
others; another expert's only once the judges show (blind mode)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from ui.attribution_grid import NOT_TOP_TAG
from workbench.labels import LabelService
from workbench.review.service import ReviewService

OUTSIDE_MINE = "/m/0own-outside"
OUTSIDE_THEIRS = "/m/0their-outside"


def _rows(window) -> dict[str, int]:  # type: ignore[no-untyped-def]
    model = window.grid.grid_model
    return {row.category_id: i for i, row in enumerate(model.rows)}


def test_labels_outside_the_top_tags_have_rows_marked_and_editable(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    clip = ReviewService(demo_store, {}, {}).clip_id_for_key("DEMO-0001")
    labels = LabelService(demo_store)
    me = labels.ensure_annotator("tester")
    other = labels.ensure_annotator("someone else")
    labels.set_clip_label(me.id, clip, rating=3)
    labels.set_category_label(me.id, clip, OUTSIDE_MINE, contribution=1, effect="misled")
    labels.set_category_label(other.id, clip, OUTSIDE_THEIRS, contribution=3, effect="helped")
    window = make_window()
    assert window.blind_mode
    window.open_clip(clip)
    rows = _rows(window)
    model = window.grid.grid_model
    assert OUTSIDE_MINE in rows and OUTSIDE_THEIRS not in rows  # another expert's: hidden while blind
    mine = model.index(rows[OUTSIDE_MINE], 0)
    assert NOT_TOP_TAG in mine.data() and NOT_TOP_TAG in mine.data(Qt.ItemDataRole.ToolTipRole)
    top = next(i for cid, i in rows.items() if cid != OUTSIDE_MINE)
    assert NOT_TOP_TAG not in model.index(top, 0).data()
    contribution = model.index(rows[OUTSIDE_MINE], model.contribution_column)
    assert contribution.data() == "1 minor" and contribution.flags() & Qt.ItemFlag.ItemIsEditable
    # edited like any other row: a command through the stack, undone with Ctrl+Z
    assert model.setData(contribution, 3)
    assert window.detail.category(OUTSIDE_MINE).expert_contribution == 3
    window.undo()
    assert window.detail.category(OUTSIDE_MINE).expert_contribution == 1

    window.reveal_current()  # rated: the judges and the other experts show, with the other's row
    rows = _rows(window)
    assert OUTSIDE_THEIRS in rows
    theirs = model.index(rows[OUTSIDE_THEIRS], 0)
    assert NOT_TOP_TAG in theirs.data()
    assert model.index(rows[OUTSIDE_THEIRS], model.contribution_column).flags() & Qt.ItemFlag.ItemIsEditable
