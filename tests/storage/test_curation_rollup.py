"""`aglw fit --rollup root` end to end: import a dataset and predictions, store tags and
judgments, fit at the ontology's root level through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import select

from storage import open_store
from storage.models import AlmRun, Clip, JudgeRun, Judgment, Tag, TaggerRun
from tests.cli_helpers import run_json
from tests.core.test_tagging_ontology import write_small_ontology
from tests.storage.test_import_dataset import clip_row, write_csv
from tests.storage.test_import_predictions import write_jsonl
from cli.main import main
from workbench.curation.model import geoscore
from workbench.tagging.ontology import load_ontology

# write_small_ontology: /c/i lies under root /r/(i % 7); /c/0 also under /r/1; /c/14 under /c/7.
HUMAN, ANIMAL, NATURAL, THINGS = "/r/0", "/r/1", "/r/3", "/r/5"
# clip key → (tags {class: probability}, judge score per class, ALM error: exact or far off)
CLIPS = {
    "k1": ({"/c/0": 0.9, "/c/3": 0.5}, {"/c/0": 3, "/c/3": 1}, "exact"),
    "k2": ({"/c/14": 0.8, "/c/7": 0.6}, {"/c/14": 2, "/c/7": 3}, "exact"),
    "k3": ({"/c/1": 0.7}, {"/c/1": 2}, "far"),
    # /c/5 is below τ = 0.15, so it is not detected and Sounds of things gets no contribution;
    # /c/3 is judged 0 here, which is no support.
    "k4": ({"/c/3": 0.4, "/c/5": 0.05}, {"/c/3": 0, "/c/5": 3}, "far"),
}
TRUE_POSITION = {"k1": (48.14, 11.58), "k2": (52.52, 13.40), "k3": (59.33, 18.07), "k4": (40.42, -3.70)}


def _import(db: Path, tmp_path: Path) -> None:
    rows = [
        clip_row(i, key=key, latitude=TRUE_POSITION[key][0], longitude=TRUE_POSITION[key][1])
        for i, key in enumerate(CLIPS)
    ]
    assert main(["--db", str(db), "import", "dataset", "--format", "agl1k", str(write_csv(tmp_path / "d.csv", rows))]) == 0
    records = []
    for key, (_, _, error) in CLIPS.items():
        lat, lon = TRUE_POSITION[key]
        predicted = (lat, lon) if error == "exact" else (-lat, lon + 120.0)
        records.append(dict(
            question_id=key, true_latitude=lat, true_longitude=lon, true_city="x", true_country="x",
            true_continent="Europe", predicted_latitude=predicted[0], predicted_longitude=predicted[1],
            predicted_city="x", predicted_country="x", predicted_continent="Europe",
        ))
    predictions = write_jsonl(tmp_path / "alm.jsonl", records)
    assert main(["--db", str(db), "import", "predictions", "--model", "alm-x", str(predictions)]) == 0


def _store_tags_and_judgments(db: Path) -> None:
    store = open_store(db)
    try:
        with store.write() as s:
            alm = s.exec(select(AlmRun)).one()
            tagger = TaggerRun(model_name="mn10_as", status="done")
            judges = [
                JudgeRun(judge_name=name, provider="offline", model_id=name, prompt_version="v1",
                         alm_run_id=alm.id, status="done")
                for name in ("judge-a", "judge-b", "judge-c")
            ]
            s.add(tagger)
            s.add_all(judges)
            s.flush()
            clip_ids = {c.key: c.id for c in s.exec(select(Clip)).all()}
            for key, (tags, scores, _) in CLIPS.items():
                for category, probability in tags.items():
                    s.add(Tag(tagger_run_id=tagger.id, clip_id=clip_ids[key], class_index=int(category[3:]),
                              audioset_id=category, probability=probability))
                for category, score in scores.items():
                    for judge in judges:
                        s.add(Judgment(judge_run_id=judge.id, clip_id=clip_ids[key], category_id=category,
                                       contribution=score, status="ok"))
    finally:
        store.dispose()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ontology_path, _ = write_small_ontology(tmp_path / "audioset")
    monkeypatch.setenv("AGLW_ONTOLOGY", str(ontology_path))
    db = tmp_path / "project.sqlite"
    _import(db, tmp_path)
    _store_tags_and_judgments(db)
    return db


def _fit(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> dict:
    return run_json(capsys, "--db", str(db), "--json", "fit", "--n-min", "1", *args)


def test_fit_with_root_rollup_uses_the_ontology_roots(project: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    ontology = load_ontology(*write_small_ontology(tmp_path / "expected"))
    result = _fit(capsys, project, "--rollup", "root")
    assert result["parameters"]["rollup"] == "root"
    categories = {c["id"]: c for c in result["categories"]}
    assert set(categories) <= set(ontology.root_ids)
    assert set(categories) == {HUMAN, ANIMAL, NATURAL}  # Sounds of things: only an undetected tag
    for root_id, category in categories.items():
        assert category["name"] == ontology.nodes[root_id].name
    # /c/0 counts under Human sounds and under Animal.
    assert categories[HUMAN]["support"] == 2 and categories[ANIMAL]["support"] == 2
    assert categories[NATURAL]["support"] == 1
    # Human sounds: k1 x = 3/3 and k2 x = max(2/3, 3/3) = 1, both exact: a = g(0) exactly.
    # A sum or a mean over the classes under the root would give another value.
    assert categories[HUMAN]["a"] == pytest.approx(float(geoscore(0.0)))
    assert categories[HUMAN]["a_bar"] == 0.0 and categories[ANIMAL]["a_bar"] > 0.0
    assert {c["key"] for c in result["clips"]} == set(CLIPS)

    leaf = _fit(capsys, project, "--preview", "--rollup", "leaf")  # not given, the stored run's root would be kept
    assert {c["id"] for c in leaf["categories"]} == {"/c/0", "/c/3", "/c/7", "/c/14", "/c/1"}


def test_root_rollup_names_an_unknown_category(project: Path, tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    other = tmp_path / "other" / "ontology.json"
    other.parent.mkdir()
    other.write_text(json.dumps([{"id": "/r/x", "name": "Only root", "child_ids": []}]), encoding="utf-8")
    monkeypatch.setenv("AGLW_ONTOLOGY", str(other))
    capsys.readouterr()
    assert main(["--db", str(project), "fit", "--n-min", "1", "--rollup", "root"]) == 1
    assert "not in the ontology used for the roll-up" in capsys.readouterr().err
