"""`aglw screenshot` and `aglw demo --no-gui` through the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PySide6.QtGui import QImage

from cli.main import main

# The offscreen platform plugin reports these when a cockpit view floats; not application problems.
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints", "does not support raise")


def assert_not_blank(path) -> None:  # type: ignore[no-untyped-def]
    image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB32)
    assert not image.isNull()
    pixels = np.frombuffer(image.constBits(), dtype=np.uint32, count=image.width() * image.height())
    assert len(np.unique(pixels)) > 200  # a painted spectrogram, not a flat window


def test_screenshot_of_a_demo_clip(qapp, demo_db, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "shot.png"
    rc = main(["--db", str(demo_db), "--json", "screenshot", "--clip", "DEMO-0004", "--out", str(out),
               "--size", "1200x800"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["out"] == str(out) and (payload["width"], payload["height"]) == (1200, 800)
    assert QImage(str(out)).width() == 1200
    assert_not_blank(out)


def test_screenshot_writes_nothing_to_the_project_and_refuses_to_overwrite(qapp, demo_db, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    def annotators() -> list[str]:
        with sqlite3.connect(demo_db) as con:
            return sorted(name for (name,) in con.execute("select name from annotator"))

    before = annotators()
    out = tmp_path / "shot.png"
    assert main(["--db", str(demo_db), "screenshot", "--clip", "DEMO-0001", "--out", str(out), "--size", "800x600"]) == 0
    assert annotators() == before and "screenshot" not in before
    stamp = out.read_bytes()
    assert main(["--db", str(demo_db), "screenshot", "--clip", "DEMO-0002", "--out", str(out)]) == 1
    assert "exists; pass --force" in capsys.readouterr().err and out.read_bytes() == stamp
    assert main(["--db", str(demo_db), "screenshot", "--clip", "DEMO-0002", "--out", str(out), "--force",
                 "--size", "800x600"]) == 0
    assert out.read_bytes() != stamp
    assert main(["--db", str(tmp_path / "typo.sqlite"), "screenshot", "--clip", "DEMO-0001", "--out", str(tmp_path / "y.png")]) == 1
    assert "no project at" in capsys.readouterr().err and not (tmp_path / "typo.sqlite").exists()


def test_screenshot_errors(qapp, demo_db, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["--db", str(demo_db), "screenshot", "--clip", "NOPE", "--out", str(tmp_path / "x.png")]) == 1
    assert "no clip with key 'NOPE'" in capsys.readouterr().err
    assert main(["--db", str(demo_db), "screenshot", "--clip", "DEMO-0001", "--out", str(tmp_path / "x.png"),
                 "--size", "huge"]) == 2  # a usage error (issue 40)
    assert "Invalid value for --size: must look like" in capsys.readouterr().err


def test_demo_no_gui_prints_a_summary(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    rc = main(["--json", "demo", "--dir", str(tmp_path / "d"), "--no-gui"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["demo"] is True and payload["layouts"] == ["mono", "stereo", "binaural", "ambix"]
    assert (tmp_path / "d" / "demo.sqlite").is_file()


def test_demo_twice_reuses_the_project_and_keeps_labels(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`make demo` run a second time opens the same project instead of failing."""
    directory = tmp_path / "d"
    assert main(["--json", "demo", "--dir", str(directory), "--no-gui"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["reused"] is False
    assert main(["--db", first["db"], "--annotator", "ana", "label", "clip", "--clip", "DEMO-0001",
                 "--rating", "4"]) == 0
    capsys.readouterr()
    assert main(["--json", "demo", "--dir", str(directory), "--no-gui"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second == {"db": first["db"], "reused": True, "demo": True}
    assert main(["--db", first["db"], "--json", "label", "history", "--clip", "DEMO-0001"]) == 0
    assert '"rating"' in capsys.readouterr().out  # the label survived the second `aglw demo`
    assert main(["--json", "demo", "--dir", str(directory), "--no-gui", "--overwrite"]) == 0
    assert json.loads(capsys.readouterr().out)["reused"] is False


def test_gui_takes_the_project_after_the_command_too(monkeypatch, demo_db, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`aglw gui --db X` (the issue's spelling) and `aglw --db X gui` open the same project."""
    import ui.app

    opened: list[tuple[str, str | None]] = []
    monkeypatch.setattr(ui.app, "run_gui", lambda db, annotator, clip_key=None: opened.append((db, clip_key)) or 0)
    assert main(["gui", "--db", str(demo_db), "--clip", "DEMO-0002"]) == 0
    assert main(["--db", str(demo_db), "gui"]) == 0
    assert main(["--db", str(tmp_path / "other.sqlite"), "gui", "--db", str(demo_db)]) == 0  # the later one wins
    assert opened == [(str(demo_db), "DEMO-0002"), (str(demo_db), None), (str(demo_db), None)]


def test_every_view_the_screenshot_offers_renders(qapp, demo_db, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`screenshot --view` for each view it lists (issue 30: it covered 6): one PNG each, at the
    size asked, or at the view's smallest size, and then the JSON and a line on stderr say so
    (the review window's docks do not fit 800x600: it claimed 800x600 for a 1185x783 picture)."""
    from cli.gui_cmds import SCREENSHOT_VIEWS

    assert {"review", "curation", "map", "leaderboard", "team", "jobs", "events", "guess", "error-modes"} <= set(
        SCREENSHOT_VIEWS)
    for view in SCREENSHOT_VIEWS:
        out = tmp_path / f"{view}.png"
        rc = main(["--db", str(demo_db), "--json", "screenshot", "--clip", "DEMO-0004", "--view", view,
                   "--out", str(out), "--size", "800x600"])
        captured = capsys.readouterr()
        assert rc == 0, (view, captured.err)
        payload = json.loads(captured.out)
        image = QImage(str(out))
        assert payload["out"] == str(out) and not image.isNull(), view
        assert (image.width(), image.height()) == (payload["width"], payload["height"]), view
        assert payload["size_asked"] == [800, 600]
        if (image.width(), image.height()) != (800, 600):
            assert image.width() >= 800 and image.height() >= 600, view
            assert f"cannot be 800x600: its smallest size is {image.width()}x{image.height()}" in captured.err


def test_a_screenshot_neither_uses_nor_changes_the_remembered_layout(qapp, demo_db, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A screenshot at 800x600 once saved its layout, and `aglw gui` and the next screenshot
    restored it: docks squeezed, the Evidence tabs cut, a stray title over the menu bar."""
    from PySide6.QtCore import QByteArray

    from ui.main_window import open_settings

    settings = open_settings()
    settings.setValue("window_state", QByteArray(b"the reviewer's layout"))
    settings.setValue("geometry", QByteArray(b"the reviewer's geometry"))
    settings.sync()
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    assert main(["--db", str(demo_db), "screenshot", "--clip", "DEMO-0001", "--out", str(first), "--size", "800x600"]) == 0
    assert main(["--db", str(demo_db), "screenshot", "--clip", "DEMO-0001", "--out", str(second)]) == 0
    settings = open_settings()
    assert bytes(settings.value("window_state")) == b"the reviewer's layout"
    assert bytes(settings.value("geometry")) == b"the reviewer's geometry"
    assert QImage(str(second)).width() == 1600  # the default size, not the one remembered from the first


def test_a_demo_screenshot_shows_what_the_demo_opens_with(qapp, demo_db, store) -> None:  # type: ignore[no-untyped-def]
    """Without --annotator a demo project is seen as `aglw demo` opens it: as the demo's expert, whose
    events fill the Events dock (issue 39); another project as an unstored viewer."""
    from storage import open_store
    from ui.screenshot import screenshot_viewer
    from workbench.demo import DEMO_ANNOTATOR
    from workbench.clip_ids import clip_id_for_key
    from workbench.events.service import EventService

    demo = open_store(demo_db)
    try:
        viewer = screenshot_viewer(demo, None)
        assert viewer.name == DEMO_ANNOTATOR and viewer.id > 0
        clip_id = clip_id_for_key(demo, "DEMO-0004")
        assert len(EventService(demo).events(clip_id, annotator_id=viewer.id)) == 4  # what the dock lists
        assert screenshot_viewer(demo, "nobody here").id == -1  # a name asked for is kept, not stored
    finally:
        demo.dispose()
    other = screenshot_viewer(store, None)
    assert other.name == "screenshot" and other.id == -1
