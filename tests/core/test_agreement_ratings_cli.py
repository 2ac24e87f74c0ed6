"""`aglw agreement --ratings`: the reference values of agreement.md through CSV files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import run_json
from tests.core.test_agreement_stats import COHEN_BINARY, COHEN_THREE, FLEISS, KRIPP
from cli.main import main


def _write(path: Path, rows: list[tuple]) -> Path:
    lines = ["unit,rater,value"] + [",".join(str(x) for x in row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture, path: Path, level: str) -> dict:
    return run_json(capsys, "--json", "agreement", "--ratings", str(path), "--level", level)


def _pairs(a: list, b: list) -> list[tuple]:
    return [(f"u{i}", "A", x) for i, x in enumerate(a)] + [(f"u{i}", "B", y) for i, y in enumerate(b)]


@pytest.mark.parametrize(("data", "expected"), [(COHEN_BINARY, 0.3478), (COHEN_THREE, 0.8013)])
def test_cohen_pairs(tmp_path: Path, capsys: pytest.CaptureFixture, data: tuple, expected: float) -> None:
    result = _run(capsys, _write(tmp_path / "r.csv", _pairs(*data)), "nominal")
    # the contract keys of cli.md (keys may be added, never renamed)
    assert set(result) == {"n_units", "raters", "percent_agreement", "cohen_kappa", "fleiss_kappa",
                           "krippendorff_alpha", "gwet_ac1", "details", "minimums"}
    assert result["n_units"] == 100
    assert result["raters"] == ["A", "B"]
    assert result["cohen_kappa"]["A|B"] == pytest.approx(expected, abs=5e-5)
    assert result["percent_agreement"] == pytest.approx(np.mean(np.array(data[0]) == np.array(data[1])))


def test_krippendorff_matrix_with_missing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rows = [(f"u{j}", f"coder{i}", int(v)) for i, row in enumerate(KRIPP) for j, v in enumerate(row) if not np.isnan(v)]
    nominal = _run(capsys, _write(tmp_path / "k.csv", rows), "nominal")
    interval = _run(capsys, tmp_path / "k.csv", "interval")
    assert nominal["krippendorff_alpha"] == pytest.approx(0.691358, abs=5e-7)
    assert interval["krippendorff_alpha"] == pytest.approx(0.810845, abs=5e-7)
    assert interval["n_units"] == 13  # units 2 and 14 have no rating at all, so no rows
    for key in ("weighted_kappa_linear", "weighted_kappa_quadratic", "icc2_1", "icc3_1"):
        assert key in interval
    assert set(interval["weighted_kappa_linear"]) == {"coder0|coder1", "coder0|coder2", "coder1|coder2"}


def test_fleiss_counts_expanded_to_14_raters(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rows = []
    for unit, counts in enumerate(FLEISS):
        labels = np.repeat(np.arange(5), counts)
        rows += [(f"u{unit}", f"r{k}", f"c{label}") for k, label in enumerate(labels)]
    result = _run(capsys, _write(tmp_path / "f.csv", rows), "nominal")
    assert result["fleiss_kappa"] == pytest.approx(0.2099, abs=5e-5)
    assert len(result["raters"]) == 14


def test_identical_and_constant_raters(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    same = _run(capsys, _write(tmp_path / "s.csv", _pairs(["x", "y", "x"] * 2, ["x", "y", "x"] * 2)), "nominal")
    assert same["cohen_kappa"]["A|B"] == 1.0
    too_few = _run(capsys, _write(tmp_path / "t.csv", _pairs(["x", "y", "x"], ["x", "y", "x"])), "nominal")
    assert too_few["cohen_kappa"]["A|B"] is None  # three units: below the documented minimum
    constant = _run(capsys, _write(tmp_path / "c.csv", _pairs([1] * 5, [1] * 5)), "ordinal")
    assert constant["cohen_kappa"]["A|B"] is None
    assert constant["weighted_kappa_quadratic"]["A|B"] is None
    assert constant["krippendorff_alpha"] is None
    assert constant["icc2_1"] is None


def test_icc_matches_pingouin_on_complete_data(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import pandas as pd
    import pingouin

    rng = np.random.default_rng(1)
    truth = rng.integers(1, 6, 30)
    table = {r: np.clip(truth + rng.integers(-1, 2, 30), 1, 5) for r in ("A", "B", "C")}
    rows = [(f"u{i}", r, int(v[i])) for r, v in table.items() for i in range(30)]
    result = _run(capsys, _write(tmp_path / "i.csv", rows), "ordinal")
    frame = pd.DataFrame(rows, columns=["unit", "rater", "value"])
    icc = pingouin.intraclass_corr(frame, targets="unit", raters="rater", ratings="value").set_index("Type")["ICC"]
    assert result["icc2_1"] == pytest.approx(icc["ICC(A,1)"])
    assert result["icc3_1"] == pytest.approx(icc["ICC(C,1)"])


def test_bad_csv_gets_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("unit,rater,value\nu1,A,2\nu1,B,high\n", encoding="utf-8")
    assert main(["agreement", "--ratings", str(bad), "--level", "ordinal"]) == 1
    err = capsys.readouterr().err
    assert "bad.csv, line 3, field value" in err and "'high'" in err
    missing = tmp_path / "missing.csv"
    missing.write_text("unit,who,value\nu1,A,2\n", encoding="utf-8")
    assert main(["agreement", "--ratings", str(missing)]) == 1
    assert "missing column(s) rater" in capsys.readouterr().err
    duplicate = _write(tmp_path / "dup.csv", [("u1", "A", 1), ("u1", "A", 2)])
    assert main(["agreement", "--ratings", str(duplicate)]) == 1
    assert "line 3: rater 'A' rates unit 'u1' twice" in capsys.readouterr().err
