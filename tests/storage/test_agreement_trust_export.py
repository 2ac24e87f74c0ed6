"""Exports that do not overwrite, and a bundle whose every coefficient carries its n."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from storage import open_store
from tests.cli_helpers import run_json
from tests.storage.test_agreement_export import _populate
from tests.storage.test_curation_fixtures import WORKED_EXAMPLE, build_project
from workbench.agreement import minimums
from workbench.agreement.service import export_agreement
from cli.main import main


@pytest.fixture
def agreement_db(sqlite_path: Path) -> str:
    store = open_store(sqlite_path)
    _populate(store)
    store.dispose()
    return str(sqlite_path)


@pytest.fixture
def selection_db(sqlite_path: Path, capsys: pytest.CaptureFixture) -> str:
    store = open_store(sqlite_path)
    build_project(store, WORKED_EXAMPLE)
    store.dispose()
    db = str(sqlite_path)
    run_json(capsys, "--db", db, "--json", "fit", "--n-min", "1")
    run_json(capsys, "--db", db, "--json", "select", "--size", "2")
    return db


def _agreement(db: str, out: Path, *extra: str) -> int:
    return main(["--db", db, "agreement", "--out", str(out), "--bootstrap", "0", *extra])


def _one_line_error(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_bundle_coefficients_carry_n_raters_and_reasons(agreement_db: str, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    assert _agreement(agreement_db, out) == 0
    coefficients = pd.read_csv(out / "coefficients.csv")
    assert {"n_units", "n_raters", "reason"} <= set(coefficients.columns)
    assert coefficients["n_raters"].notna().all()
    floors = coefficients["coefficient"].map(minimums.min_units)
    assert coefficients.loc[coefficients["n_units"] < floors, "value"].isna().all()
    assert coefficients.loc[coefficients["value"].isna(), "reason"].notna().all()
    # two experts: an expert against "the consensus of the other experts" is not available
    loo = coefficients[(coefficients["rater_b"] == "expert_consensus_others") & (coefficients["label"] == "effect")
                       & (coefficients["subset_kind"] == "all")]
    assert set(loo["rater_a"]) == {"expert:annotator-0000", "expert:annotator-0001"}
    assert loo["value"].isna().all()
    assert set(loo["reason"]) == {"needs at least 2 other experts on a unit; 1 available"}
    self_pairs = coefficients[["rater_a", "rater_b"]].apply(set, axis=1)
    assert not self_pairs.isin([{"expert:annotator-0000", "expert_consensus"},
                                {"expert:annotator-0001", "expert_consensus"}]).any()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["minimums"] == minimums.describe()
    markdown = (out / "tables.md").read_text()
    assert minimums.describe_text() in markdown
    headers = [line for line in markdown.splitlines() if line.startswith("| section")]
    assert headers and all("| raters " in line and "| reason " in line for line in headers)  # n_raters, titled


def test_agreement_out_refuses_non_empty_folders_and_files(agreement_db: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.tex").write_text("precious", encoding="utf-8")
    assert _agreement(agreement_db, busy) == 1
    err = _one_line_error(capsys)
    assert str(busy) in err and "choose a new or empty folder" in err
    assert sorted(p.name for p in busy.iterdir()) == ["thesis.tex"]
    # --force never clears a folder that is not an agreement bundle
    assert _agreement(agreement_db, busy, "--force") == 1
    assert "choose a new or empty folder" in _one_line_error(capsys)
    assert (busy / "thesis.tex").read_text(encoding="utf-8") == "precious"
    assert sorted(p.name for p in busy.iterdir()) == ["thesis.tex"]

    a_file = tmp_path / "results.csv"
    a_file.write_text("keep me", encoding="utf-8")
    for extra in ((), ("--force",)):
        assert _agreement(agreement_db, a_file, *extra) == 1
        err = _one_line_error(capsys)
        assert str(a_file) in err and "choose a new or empty folder" in err
        assert a_file.read_text(encoding="utf-8") == "keep me"

    empty = tmp_path / "empty"
    empty.mkdir()
    assert _agreement(agreement_db, empty) == 0
    assert (empty / "manifest.json").is_file()


def test_agreement_force_replaces_only_an_earlier_bundle(agreement_db: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "bundle"
    assert _agreement(agreement_db, out) == 0
    capsys.readouterr()
    first = json.loads((out / "manifest.json").read_text())
    assert _agreement(agreement_db, out) == 1
    err = _one_line_error(capsys)
    assert str(out) in err and "--force to replace it" in err
    assert json.loads((out / "manifest.json").read_text()) == first
    (out / "figures" / "stale_old_figure.png").write_bytes(b"\x89PNG")  # not listed in the manifest
    assert _agreement(agreement_db, out, "--force") == 1
    assert "choose a new or empty folder" in _one_line_error(capsys)
    (out / "figures" / "stale_old_figure.png").unlink()
    assert _agreement(agreement_db, out, "--force", "--seed", "9") == 0
    assert json.loads((out / "manifest.json").read_text())["parameters"]["seed"] == 9


def test_export_selection_refuses_to_overwrite_without_force(selection_db: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "sel.csv"
    out.write_text("my own data\n", encoding="utf-8")
    assert main(["--db", selection_db, "export", "selection", str(out)]) == 1
    err = _one_line_error(capsys)
    assert str(out) in err and "--force to replace it" in err
    assert out.read_text(encoding="utf-8") == "my own data\n"
    assert not (tmp_path / "sel.csv.manifest.json").exists()

    # the manifest beside it counts too
    other = tmp_path / "other.csv"
    manifest = tmp_path / "other.csv.manifest.json"
    manifest.write_text("{}", encoding="utf-8")
    assert main(["--db", selection_db, "export", "selection", str(other)]) == 1
    err = _one_line_error(capsys)
    assert str(manifest) in err and "--force to replace it" in err
    assert not other.exists() and manifest.read_text(encoding="utf-8") == "{}"

    exported = run_json(capsys, "--db", selection_db, "--json", "export", "selection", str(out), "--force")
    assert exported["n_rows"] == 2
    assert out.read_text(encoding="utf-8").startswith("key,short_key,")
    assert json.loads((tmp_path / "sel.csv.manifest.json").read_text())["n_rows"] == 2


def test_a_failed_export_leaves_the_earlier_bundle_untouched(agreement_db: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.agreement import report
    from workbench.outputs import OutputError

    out = tmp_path / "bundle"
    assert _agreement(agreement_db, out) == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def broken(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise OSError("disk full")

    monkeypatch.setattr(report, "_bland_altman_figure", broken)
    store = open_store(agreement_db)
    try:
        # the failure of the machine is one handled line naming the bundle (workbench/outputs.py)
        with pytest.raises(OutputError, match=f"{out}: cannot write it \\(disk full\\)"):
            export_agreement(store, out, bootstrap=0, replace=True)
    finally:
        store.dispose()
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle", "project.sqlite"]  # no staging folder left
