"""`aglw fit / select / export selection / check locations` in-process."""

from __future__ import annotations

import json

import pytest

from storage import open_store
from tests.cli_helpers import run_json
from tests.storage.test_curation_fixtures import BIRD, SPEECH, WORKED_EXAMPLE, build_project
from cli.main import main


@pytest.fixture
def project_db(sqlite_path):  # type: ignore[no-untyped-def]
    store = open_store(sqlite_path)
    build_project(store, WORKED_EXAMPLE)
    store.dispose()
    return str(sqlite_path)


def test_fit_json_contract_preview_and_diff(project_db, capsys) -> None:  # type: ignore[no-untyped-def]
    first = run_json(capsys, "--db", project_db, "--json", "fit", "--n-min", "1")
    assert first["run_id"] == 1 and first["diff"] is None
    assert first["parameters"]["n_min"] == 1 and first["parameters"]["gamma_km"] == 1000.0
    categories = {c["id"]: c for c in first["categories"]}
    assert categories[SPEECH]["a"] == pytest.approx(0.951691, abs=1e-6)
    assert categories[BIRD]["polarity"] == "N" and categories[BIRD]["overridden"] is False
    clips = {c["key"]: c for c in first["clips"]}
    assert clips["clip_B"]["localizability"] == pytest.approx(-0.551232, abs=1e-6)
    assert clips["clip_A"]["percentile"] == 100.0 and clips["clip_B"]["candidate"] is False

    preview = run_json(capsys, "--db", project_db, "--json", "fit", "--n-min", "1", "--preview", "--what-if", f"{BIRD}=neutral")
    assert preview["run_id"] is None
    assert preview["diff"]["entered"] == ["clip_B"]
    again = run_json(capsys, "--db", project_db, "--json", "fit", "--n-min", "1")
    assert again["run_id"] == 2 and again["diff"]["empty"] is True


def test_fit_rejects_bad_parameters_with_a_message(project_db, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["--db", project_db, "fit", "--tau", "2"]) == 2  # a usage error (issue 40)
    assert "tau must lie in [0, 1]" in capsys.readouterr().err
    assert main(["--db", project_db, "fit", "--what-if", f"{BIRD}=N"]) == 2
    assert "--preview" in capsys.readouterr().err
    assert main(["--db", project_db, "fit", "--alm", "nope"]) == 1
    assert "alm-x" in capsys.readouterr().err


def test_select_and_export(project_db, capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    run_json(capsys, "--db", project_db, "--json", "fit", "--n-min", "1")
    selected = run_json(capsys, "--db", project_db, "--json", "select", "--size", "2")
    assert selected["keys"] == ["clip_A", "clip_C"]
    assert selected["counts"]["selected"] == 2
    out = tmp_path / "sel.csv"
    exported = run_json(capsys, "--db", project_db, "--json", "export", "selection", str(out))
    assert exported["n_rows"] == 2 and out.exists()
    assert json.loads((tmp_path / "sel.csv.manifest.json").read_text())["keys"] == ["clip_A", "clip_C"]


def test_check_locations_json(project_db, capsys) -> None:  # type: ignore[no-untyped-def]
    report = run_json(capsys, "--db", project_db, "--json", "check", "locations")
    assert report["n_checked"] == 3 and report["counts"]["match"] == 3 and report["mismatches"] == []


def test_fit_names_its_categories_and_checks_what_if_ids(project_db, tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    onto = tmp_path / "ontology.json"
    onto.write_text(json.dumps([
        {"id": "/m/root", "name": "Human sounds", "child_ids": [SPEECH]},
        {"id": SPEECH, "name": "Speech", "child_ids": []},
        {"id": "/m/animal", "name": "Animal", "child_ids": [BIRD]},
        {"id": BIRD, "name": "Bird", "child_ids": []},
    ]), encoding="utf-8")
    monkeypatch.setenv("AGLW_ONTOLOGY", str(onto))
    fitted = run_json(capsys, "--db", project_db, "--json", "fit", "--n-min", "1")
    assert {c["id"]: c["name"] for c in fitted["categories"]} == {SPEECH: "Speech", BIRD: "Bird"}
    assert main(["--db", project_db, "fit", "--preview", "--what-if", f"{BIRD}x=N"]) == 1
    err = capsys.readouterr().err
    assert f"--what-if '{BIRD}x'" in err and f"did you mean {BIRD} (Bird)" in err


def test_fit_without_tags_or_contributions_says_what_is_missing(sqlite_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from tests.storage.studies_project import thin_project

    thin_project(sqlite_path, model="alm-x", expert=False)
    fit = run_json(capsys, "--db", str(sqlite_path), "--json", "fit", "--preview")
    missing = " ".join(fit["summary"]["missing"])
    capsys.readouterr()
    assert main(["--db", str(sqlite_path), "fit", "--preview"]) == 0
    err = capsys.readouterr().err
    assert "missing tags" in err and "aglw tag" in err
    assert "aglw judge" in err and "expert labels" in err
    assert "aglw tag" in missing and "aglw judge" in missing and fit["categories"] == []


def test_fit_diff_names_each_changed_category_beside_its_id(project_db, tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    onto = tmp_path / "ontology.json"
    onto.write_text(json.dumps([{"id": "/m/animal", "name": "Animal", "child_ids": [BIRD]},
                                {"id": BIRD, "name": "Bird", "child_ids": []},
                                {"id": SPEECH, "name": "Speech", "child_ids": []}]), encoding="utf-8")
    monkeypatch.setenv("AGLW_ONTOLOGY", str(onto))
    assert main(["--db", project_db, "fit", "--n-min", "1"]) == 0
    capsys.readouterr()
    assert main(["--db", project_db, "fit", "--n-min", "1", "--preview", "--what-if", f"{BIRD}=neutral"]) == 0
    out = capsys.readouterr().out
    assert f"  Bird ({BIRD}): N → neutral" in out, out


def test_fit_keeps_the_projects_settings_where_no_option_is_given(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The demo's stored run used n_min 1: a bare `aglw fit` refits with it (issue 40; with the
    command's own default of 5 every demo category was 'insufficient'); an option still wins."""
    from cli.main import main
    from workbench.demo import create_demo_project

    db = str(create_demo_project(tmp_path / "demo").db_path)
    capsys.readouterr()
    assert main(["--db", db, "--json", "fit", "--preview"]) == 0
    kept = json.loads(capsys.readouterr().out)
    assert kept["parameters"]["n_min"] == 1
    assert sum(c["polarity"] in ("P", "N") for c in kept["categories"]) == 8
    assert main(["--db", db, "fit", "--preview"]) == 0
    assert "settings of run 1 kept: n_min 1" in capsys.readouterr().out
    assert main(["--db", db, "--json", "fit", "--preview", "--n-min", "5"]) == 0
    asked = json.loads(capsys.readouterr().out)
    assert asked["parameters"]["n_min"] == 5 and all(c["polarity"] not in ("P", "N") for c in asked["categories"])
    assert main(["--db", db, "fit", "--preview", "--n-min", "0"]) == 2  # still a usage error
