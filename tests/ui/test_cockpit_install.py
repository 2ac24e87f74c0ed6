"""The cockpit inside the review workbench: docks, clip links, map follows the clip, F5 shows others' labels."""

from __future__ import annotations

from workbench.labels import LabelService


def test_cockpit_docks_links_map_and_refresh(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    cockpit = window.cockpit
    assert set(cockpit.docks) == {"curation", "selection", "map", "leaderboard", "agreement", "jobs", "team"}
    assert window.findChild(type(cockpit.docks["map"]), "dock-Attribution") is not None

    key = "DEMO-0003"
    cockpit.curation.clipActivated.emit(key)  # a diff link
    assert window.detail is not None and window.detail.key == key
    assert cockpit.map.true_point == (window.detail.longitude, window.detail.latitude)
    assert [p.model for p in cockpit.map.points] == [p.model for p in window.detail.predictions
                                                      if p.predicted_latitude not in (None, "", "Unknown")]

    # another annotator finishes a label; F5 shows it in the team view
    other = LabelService(demo_store).ensure_annotator("colleague")
    LabelService(demo_store).set_clip_label(other.id, window.detail.clip_id, rating=3, command_id="x1")
    assert "colleague" not in [p.name for p in cockpit.team.progress]
    cockpit.refresh_action.trigger()
    progress = {p.name: p for p in cockpit.team.progress}
    assert progress["colleague"].clips_rated == 1
    assert progress["tester"].clips_labelled == 0
