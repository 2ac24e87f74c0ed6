"""The agreement bundle carries the error-mode tables that its callers (the CLI, the cockpit) pass in:
the agreement package sits below the studies and does not reach up for them."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.cli_helpers import run_json
from tests.storage.studies_project import ALM, populate


@pytest.fixture
def project(tmp_path):  # type: ignore[no-untyped-def]
    from storage import open_store

    store = open_store(tmp_path / "project.sqlite")
    populate(store)
    yield store, str(tmp_path / "project.sqlite"), tmp_path
    store.dispose()


def test_agreement_out_writes_the_error_mode_tables_of_the_studies(project, capsys) -> None:  # type: ignore[no-untyped-def]
    from workbench.agreement.service import export_agreement

    store, db, base = project
    for annotator in ("ada", "bea"):
        run_json(capsys, "--db", db, "--annotator", annotator, "study", "error-mode", "--clip", "clip000",
                 "--alm", ALM, "--modes", "bird_bias", "--json")
    run_json(capsys, "--db", db, "agreement", "--out", str(base / "bundle"), "--bootstrap", "20", "--json")
    long = pd.read_csv(base / "bundle" / "error_modes_long.csv")
    present = long[long["present"]]
    assert len(present) == 2 and set(present["mode"]) == {"bird_bias"} and set(long["clip_key"]) == {"clip000"}
    assert (base / "bundle" / "error_mode_agreement.csv").exists()
    assert (base / "bundle" / "error_mode_shares.csv").exists()
    # The service alone writes only what it is given.
    export_agreement(store, base / "plain", bootstrap=0)
    assert not (base / "plain" / "error_modes_long.csv").exists()
