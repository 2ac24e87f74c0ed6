"""The Judgment panel's quality row: the annotator overrules (or restores) a clip's quality flag
through a command (history, undo), and the row names her vote."""

from __future__ import annotations

import pytest

from tests.ui.test_gui_edits import _clip_id
from workbench.labels import LabelService

# window.show() offscreen: Qt says this once per window
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")


def test_overrule_a_flag_from_the_judgment_panel_and_undo(make_window, demo_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.show()
    clip = _clip_id(demo_store, "DEMO-0001")  # flagged low_complexity (the demo pool's lowest ACI)
    window.open_clip(clip)
    panel = window.clip_panel
    items = [panel.quality_vote.itemText(i) for i in range(panel.quality_vote.count())]
    assert items == ["—", "overrule low_complexity", "restore low_complexity"]
    # the pool-relative flag names its cut-off and the pool it was computed on
    assert "low_complexity (aci 324.4 < 324.5, cut-off at percentile 2 of 4 clips of this fit" in panel.flags.toolTip()
    panel._quality_vote_activated(items.index("overrule low_complexity"))

    def votes() -> list[tuple[str, object]]:
        return [(v["flag"], v["overruled"]) for v in LabelService(demo_store).quality_overrules(clip)
                if v["annotator_id"] == window.annotator.id]

    assert votes() == [("low_complexity", True)]
    assert "low_complexity (overruled by you)" in panel.flags.text()
    assert [panel.quality_vote.itemText(i) for i in range(panel.quality_vote.count())] == [
        "—", "restore low_complexity"]
    panel.grab().save(str(tmp_path / "quality_row.png"))
    window.undo()
    assert votes() == [("low_complexity", None)]
    assert "overruled" not in panel.flags.text()
