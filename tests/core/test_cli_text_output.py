"""CLI text a user writes down (issue 30): names beside ids and no Python reprs in `label set`,
`label clip` and `label history`, whose latest edit of each label shows the label's version;
`clips show` quality formatted for a reader with its flags."""

from __future__ import annotations

from cli.main import main
from storage import open_store
from tests.storage.test_curation_fixtures import set_quality
from tests.storage.test_curation_selection_export import project
from workbench.project import category_names


def _run(capsys, *argv: str) -> str:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    assert main(list(argv)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_label_lines_name_the_category_and_history_shows_versions(sqlite_path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = open_store(sqlite_path)
    project(store)
    names = category_names(store)
    store.dispose()
    # a project without tags knows no category names yet: the line then shows the id alone
    category = "/m/0jbk"
    name = names.get(category)
    label = f"{name} ({category})" if name else category
    db = str(sqlite_path)
    out = _run(capsys, "--db", db, "--annotator", "ana", "label", "set", "--clip", "clip_02", "--category", category,
               "--contribution", "3", "--effect", "helped")
    assert out.strip() == f"saved: ana: clip_02, {label}: contribution 3, effect helped (version 1)"
    assert "{" not in out and "'" not in out
    _run(capsys, "--db", db, "--annotator", "ana", "label", "set", "--clip", "clip_02", "--category", category,
         "--contribution", "2")
    out = _run(capsys, "--db", db, "--annotator", "ana", "label", "clip", "--clip", "clip_02", "--note", "fine")
    assert out.strip() == "saved: ana: clip_02: note fine (version 1)"
    history = _run(capsys, "--db", db, "label", "history", "--clip", "clip_02").splitlines()
    assert "{" not in "".join(history) and "'" not in "".join(history)
    contribution = [line for line in history if " contribution: " in line]
    assert contribution[0].endswith(f"clip_02 {label} contribution: none -> 3 (do)")
    assert contribution[1].endswith("contribution: 3 -> 2 (do)  [now version 2]")
    assert history[-1].endswith("note: none -> fine (do)  [now version 1]")


def test_clips_show_quality_is_rounded_and_shows_its_flags(sqlite_path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = open_store(sqlite_path)
    ids = project(store)
    set_quality(store, ids["clip_02"], rms_dbfs=-19.219301711074095, spectral_flatness=0.123456789,
                clipping_ratio=0.0, aci=9.87654)
    set_quality(store, ids["clip_03"], rms_dbfs=-80.0, spectral_flatness=0.1, clipping_ratio=0.0, aci=9.0)
    store.dispose()
    out = _run(capsys, "--db", str(sqlite_path), "clips", "show", "clip_02")
    line = next(line for line in out.splitlines() if line.startswith("quality:"))
    assert "rms -19.2 dBFS" in line and "flatness 0.123" in line and "ACI 9.88" in line and "19.2193" not in line
    assert "no quality flags" in line
    out = _run(capsys, "--db", str(sqlite_path), "clips", "show", "clip_03")
    line = next(line for line in out.splitlines() if line.startswith("quality:"))
    assert "rms -80.0 dBFS" in line and "flags: low_level" in line
    # --json keeps full precision
    import json

    record = json.loads(_run(capsys, "--db", str(sqlite_path), "--json", "clips", "show", "clip_02"))
    assert record["quality"]["rms_dbfs"] == -19.219301711074095
