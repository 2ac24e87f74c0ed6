"""Selection builder: the counts match `aglw select` for the same parameters; export writes CSV + manifest."""

from __future__ import annotations

import json
import shutil

from tests.storage.test_curation_fixtures import add_annotator, set_clip_label
from tests.storage.test_curation_selection_export import project
from ui.cockpit.selection_view import SelectionView
from cli.main import main
from workbench.curation import service
from workbench.curation.export import manifest_path_for
from workbench.curation.model import FitParameters


def test_builder_counts_match_aglw_select_and_export(qtbot, store, sqlite_path, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    ids = project(store)
    expert = add_annotator(store, "erin")
    set_clip_label(store, expert, ids["clip_00"], decision="reject")
    set_clip_label(store, expert, ids["clip_11"], decision="accept")
    service.fit(store, FitParameters(n_min=1))
    twin = tmp_path / "twin.sqlite"
    store.dispose()
    shutil.copy(sqlite_path, twin)

    assert main(["--db", str(twin), "--json", "select", "--size", "6"]) == 0
    cli = json.loads(capsys.readouterr().out)

    view = SelectionView(store)
    qtbot.addWidget(view)
    view.size.setValue(6)
    before = view.count_rows()
    assert before["total"] == ("11", "")  # 12 clips, one rejected
    assert before["expert accepts"] == ("1", "") and before["expert rejects"] == ("1", "")
    result = view.build()
    assert result is not None and result.keys == cli["keys"] and result.counts == cli["counts"]
    rows = view.count_rows()
    assert rows["total"][1] == str(cli["counts"]["selected"]) == "6"
    assert rows["speech"][1] == str(cli["counts"]["speech"]) and rows["no speech"][1] == str(cli["counts"]["no_speech"])
    for continent, n in cli["counts"]["by_continent"].items():
        assert rows[f"continent: {continent}"][1] == str(n)
    assert rows["expert accepts"][1] == "1" and rows["expert rejects"][1] == "1"
    assert [view.decisions.item(i).text() for i in range(view.decisions.count())] == ["reject: clip_00", "accept: clip_11"]
    assert [view.chosen.item(i).text() for i in range(view.chosen.count())] == cli["keys"]

    exported = view.export_to(tmp_path / "out.csv")
    assert exported is not None and exported.n_rows == 6
    manifest = json.loads(manifest_path_for(tmp_path / "out.csv").read_text())
    assert manifest["selection_id"] == result.selection_id and manifest["n_rows"] == 6
    assert manifest["counts"] == cli["counts"]
    assert len((tmp_path / "out.csv").read_text().splitlines()) == 7


def test_the_view_says_why_an_accepted_clip_was_left_out(qtbot, store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.storage.test_curation_fixtures import set_quality

    ids = project(store)
    expert = add_annotator(store, "erin")
    set_clip_label(store, expert, ids["clip_02"], decision="accept")
    set_quality(store, ids["clip_02"], rms_dbfs=-80.0, spectral_flatness=0.1, clipping_ratio=0.0, aci=5.0)
    service.fit(store, FitParameters(n_min=1))
    view = SelectionView(store)
    qtbot.addWidget(view)
    view.resize(1100, 600)
    view.size.setValue(6)
    result = view.build()
    assert result is not None and "clip_02" not in result.keys
    texts = [view.left_out.item(i).text() for i in range(view.left_out.count())]
    assert len(texts) == 1 and texts[0].startswith("clip_02: unresolved quality flag(s): low_level")
    assert "aglw quality overrule" in texts[0]
    view.grab().save(str(tmp_path / "selection_left_out.png"))
    view.decisions_hidden = "hidden in blind mode"
    view._show_result(result)
    assert [view.left_out.item(i).text() for i in range(view.left_out.count())] == ["hidden in blind mode"]
