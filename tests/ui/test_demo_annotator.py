"""`aglw demo` opens the workbench as the annotator whose events the demo holds (issue 30):
events are per annotator, and the README's DEMO-0004 events must be there when the demo opens."""

from __future__ import annotations


def test_the_demo_opens_as_the_owner_of_its_events(demo_store, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import cli.gui_cmds as gui_cmds
    from cli.main import main
    from workbench.demo import DEMO_ANNOTATOR, DEMO_DB_NAME
    from workbench.events.service import EventService
    from workbench.labels import LabelService

    owner = LabelService(demo_store).find_annotator(DEMO_ANNOTATOR)
    assert owner is not None
    clip_id = LabelService(demo_store).clip_id_for_key("DEMO-0004")
    assert len(EventService(demo_store).events(clip_id=clip_id, annotator_id=owner.id)) == 4
    # `aglw demo` (an existing demo project) hands the GUI that annotator when none is given
    opened: list[tuple[str, str | None]] = []

    class FakeUi:
        @staticmethod
        def run_gui(db: str, annotator: str | None, **_kwargs: object) -> int:
            opened.append((db, annotator))
            return 0

    monkeypatch.setattr(gui_cmds, "_ui_app", lambda: FakeUi)
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / DEMO_DB_NAME).write_bytes(b"")  # an existing demo project is opened as it is
    assert main(["demo", "--dir", str(folder)]) == 0
    assert opened and opened[0][1] == DEMO_ANNOTATOR
