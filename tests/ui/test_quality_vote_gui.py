"""The Judgment panel's quality row: the annotator overrules (or restores) a clip's quality flag
through a command (history, undo), and the row names her vote."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from storage.models import ClipQuality
from tests.ui.test_gui_edits import _clip_id
from workbench.labels import LabelService

# window.show() offscreen: Qt says this once per window
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")


def test_overrule_a_flag_from_the_judgment_panel_and_undo(make_window, demo_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    clip = _clip_id(demo_store, "DEMO-0001")
    with demo_store.write() as s:  # too quiet: the flag comes from the clip's metrics now (workbench/audio/flags.py)
        s.execute(update(ClipQuality).where(ClipQuality.clip_id == clip).values(rms_dbfs=-70.0))
    window = make_window()
    window.show()
    window.open_clip(clip)
    panel = window.clip_panel
    items = [panel.quality_vote.itemText(i) for i in range(panel.quality_vote.count())]
    assert items == ["—", "overrule low_level", "restore low_level"]
    # each flag names its value and cut-off; the pool-relative one says why the demo's 4 clips raise none
    assert "low_level (rms_dbfs -70 < -50)" in panel.flags.toolTip()
    assert "low_complexity not raised: 4 analysed clips" in panel.flags.toolTip()
    panel._quality_vote_activated(items.index("overrule low_level"))

    def votes() -> list[tuple[str, object]]:
        return [(v["flag"], v["overruled"]) for v in LabelService(demo_store).quality_overrules(clip)
                if v["annotator_id"] == window.annotator.id]

    assert votes() == [("low_level", True)]
    assert "low_level (overruled by you)" in panel.flags.text()
    assert [panel.quality_vote.itemText(i) for i in range(panel.quality_vote.count())] == [
        "—", "restore low_level"]
    panel.grab().save(str(tmp_path / "quality_row.png"))
    window.undo()
    assert votes() == [("low_level", None)]
    assert "overruled" not in panel.flags.text()
