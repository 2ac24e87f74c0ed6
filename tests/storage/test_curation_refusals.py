"""`fit` and `select` refuse what they cannot do, store nothing and say what to run first; their
error paths answer before the curation model loads (issue 40).

Before: on a project with clips and predictions but no tags or judgments `fit` stored a run with
no category (every l = 0, exit 0), `select` stored an empty selection from it ("263 below θ" with
θ = 0), and `select` / `export selection` loaded scipy.stats (6-7 s) to say "run `aglw fit` first".
The imports are checked by module, never timed (as tests/storage/test_read_imports.py does).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from cli.main import main
from storage import open_store
from storage.models import AlmRun, Clip, CurationRun, Dataset, Prediction, Selection

REPO = Path(__file__).resolve().parents[2]


def _bare_project(path: Path) -> str:
    """Three clips answered by one ALM: no tags, no judgments, no expert labels."""
    store = open_store(path)
    with store.write() as s:
        dataset, alm = Dataset(name="d"), AlmRun(model="alm-x")
        s.add_all([dataset, alm])
        s.flush()
        for i in range(3):
            clip = Clip(dataset_id=dataset.id, key=f"k{i}", latitude=1.0, longitude=2.0, continent="Europe")
            s.add(clip)
            s.flush()
            s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id=clip.key, predicted_latitude="1",
                             predicted_longitude="2"))
    store.dispose()
    return str(path)


def _counts(db: str) -> tuple[int, int]:
    store = open_store(db)
    try:
        with store.session() as s:
            return (s.exec(select(func.count()).select_from(CurationRun)).one()[0],
                    s.exec(select(func.count()).select_from(Selection)).one()[0])
    finally:
        store.dispose()


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    rc = main(list(argv))
    err = capsys.readouterr().err
    assert rc == 1, err
    [line] = err.strip().splitlines()
    return line


def test_fit_without_tags_or_judgments_stores_no_run(sqlite_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = _bare_project(sqlite_path)
    line = _error(capsys, "--db", db, "fit")
    assert "no run was stored" in line and "aglw tag" in line and "aglw judge" in line and "aglw label set" in line, line
    assert _counts(db) == (0, 0)
    # a preview stores nothing anyway: it shows what is missing, as before
    capsys.readouterr()
    assert main(["--db", db, "fit", "--preview"]) == 0
    assert "missing tags" in capsys.readouterr().err
    assert _counts(db) == (0, 0)


def test_select_refuses_a_run_that_fitted_no_category(sqlite_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = _bare_project(sqlite_path)
    assert "run `aglw fit` first" in _error(capsys, "--db", db, "select", "--size", "2")
    # a run stored by an earlier version with no category (every l = 0): nothing to select from
    store = open_store(db)
    with store.write() as s:
        s.add(CurationRun(input_fingerprint="x", parameters={"theta": 0.0},
                          summary={"n_categories": 0, "missing": ["tags: no finished tagger run (run `aglw tag`)"]}))
    store.dispose()
    line = _error(capsys, "--db", db, "select", "--size", "2")
    assert "curation run 1 fitted no category" in line and "aglw tag" in line and "aglw fit" in line, line
    assert _counts(db) == (1, 0)
    assert "no selection is stored; run `aglw select --size M` first" in _error(
        capsys, "--db", db, "export", "selection", str(sqlite_path.parent / "sel.csv"))
    assert not (sqlite_path.parent / "sel.csv").exists()


def _imported_by(argv: list[str], tmp_path: Path) -> tuple[int, set[str]]:
    code = (
        "import sys, json\n"
        "from cli.main import main\n"
        f"code = main({argv!r})\n"
        "heavy = ('scipy', 'scipy.stats', 'pandas', 'numpy', 'sqlmodel')\n"
        "print(json.dumps([code, sorted(m for m in heavy if m in sys.modules)]))\n"
    )
    env = {"AGLW_CONFIG_DIR": str(tmp_path / "config"), "AGLW_CACHE_DIR": str(tmp_path / "cache"),
           "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                            env=env)
    status, loaded = json.loads(result.stdout.strip().splitlines()[-1])
    return status, set(loaded)


def test_the_error_paths_of_select_and_export_selection_load_no_curation_model(sqlite_path: Path,
                                                                             tmp_path: Path) -> None:
    db = _bare_project(sqlite_path)
    for argv in (["select", "--size", "2"], ["export", "selection", str(tmp_path / "sel.csv")]):
        status, loaded = _imported_by(["--db", db, *argv], tmp_path)
        assert status == 1, argv
        assert loaded.isdisjoint({"scipy", "scipy.stats", "pandas"}), (argv, loaded)
