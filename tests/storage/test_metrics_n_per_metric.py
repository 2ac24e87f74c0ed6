"""Every metric carries the n it was computed on (issue 40): `aglw metrics --json` adds `n_<metric>`
wherever a metric counts fewer answers than `n`, and `n_unreadable`; the text says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlmodel import select

from cli.main import main
from storage import open_store
from storage.models import Clip, Prediction
from workbench.demo import create_demo_project

MODEL = "DEMO-ALM (synthetic reasoning)"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return create_demo_project(tmp_path_factory.mktemp("demo"))


def _copy(demo, tmp_path: Path) -> str:  # type: ignore[no-untyped-def]
    db = tmp_path / "demo.sqlite"
    shutil.copy(demo.db_path, db)
    return str(db)


def _metrics(capsys: pytest.CaptureFixture[str], db: str, *extra: str) -> str:
    capsys.readouterr()
    assert main(["--db", db, *extra, "metrics", "--model", MODEL, "--profile", "agl1k"]) == 0
    return capsys.readouterr().out


def test_an_unreadable_answer_and_a_clip_without_continent_are_counted_apart(demo, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = _copy(demo, tmp_path)
    before = json.loads(_metrics(capsys, db, "--json"))
    assert before["n"] == 4 and before["n_unreadable"] == 0
    assert not [k for k in before if k.startswith("n_") and k != "n_unreadable"]  # every metric counted all 4

    store = open_store(db)
    try:
        with store.write() as s:
            first, second = s.exec(select(Prediction).order_by(Prediction.id).limit(2)).all()
            # an answer whose latitude is Arabic-Indic digits: not a number the metrics can read
            s.execute(update(Prediction).where(Prediction.id == first.id)
                      .values(predicted_latitude="٣٫٥", distance_error_km=None))
            # a clip with no continent: its answer cannot be scored for the continent
            s.execute(update(Prediction).where(Prediction.id == second.id).values(true_continent=None))
            s.execute(update(Clip).where(Clip.id == second.clip_id).values(continent=None))
    finally:
        store.dispose()
    after = json.loads(_metrics(capsys, db, "--json"))
    assert after["n"] == 4 and after["n_unreadable"] == 1
    assert after["n_distance_error_km"] == 3 and after["n_geoscore_mean"] == 3
    assert after["n_continent_acc"] == 3
    assert "n_country_acc" not in after and "n_city_acc" not in after and "n_reject_rate" not in after
    # the figures themselves are what they were: the n beside them is new
    assert {k: v for k, v in after.items() if not k.startswith("n_")}.keys() == {
        k for k in before if not k.startswith("n_")}

    text = _metrics(capsys, db)
    lines = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") >= 3}
    assert "(n = 3)" in lines["mean distance error (km; a refusal counts 10,000 km)"]
    assert "(n = 3)" in lines["continent acc."] and "(n = " not in lines["country acc."]
    assert "1 of the 4 answers is unreadable" in text
