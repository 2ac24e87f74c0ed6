"""`aglw label set/clip/polarity/history`: acknowledged only after commit, clear errors."""

from __future__ import annotations

import json

from storage import open_store
from storage.models import Clip, Dataset
from cli.main import main
from workbench.labels import LabelService


def _project(path) -> None:
    store = open_store(path)
    with store.write() as s:
        ds = Dataset(name="t")
        s.add(ds)
        s.flush()
        s.add(Clip(dataset_id=ds.id, key="aporee_1_2"))
    store.dispose()


def test_label_set_and_clip_then_history(sqlite_path, capsys) -> None:
    _project(sqlite_path)
    base = ["--db", str(sqlite_path), "--annotator", "ana", "--json"]
    assert main(base + ["label", "set", "--clip", "aporee_1_2", "--category", "/m/09x0r", "--contribution", "2", "--effect", "helped"]) == 0
    ack = json.loads(capsys.readouterr().out)
    assert ack["ok"] and ack["new"] == {"contribution": 2, "effect": "helped"} and ack["version"] == 1
    assert main(base + ["label", "clip", "--clip", "aporee_1_2", "--rating", "4", "--decision", "accept", "--note", "<b>gulls</b>"]) == 0
    capsys.readouterr()
    assert main(base + ["label", "polarity", "--category", "/m/09x0r", "--polarity", "N"]) == 0
    capsys.readouterr()

    store = open_store(sqlite_path)
    svc = LabelService(store)
    [cat] = svc.category_labels()
    [clip] = svc.clip_labels()
    [pol] = svc.category_polarities()
    assert (cat.contribution, cat.effect) == (2, "helped")
    assert (clip.rating, clip.decision, clip.note) == (4, "accept", "<b>gulls</b>")
    assert pol.polarity == "N"
    store.dispose()

    assert main(base + ["label", "history"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["field"] for r in rows] == ["contribution", "effect", "rating", "decision", "note", "polarity"]
    assert {r["annotator"] for r in rows} == {"ana"}


def test_label_errors_are_one_line_exit_1(sqlite_path, capsys) -> None:
    _project(sqlite_path)
    base = ["--db", str(sqlite_path), "--annotator", "ana"]
    assert main(base + ["label", "set", "--clip", "missing", "--category", "/m/09x0r", "--contribution", "1"]) == 1
    err = capsys.readouterr().err
    assert "no clip with key 'missing'" in err and "Traceback" not in err
    assert main(base + ["label", "set", "--clip", "aporee_1_2", "--category", "/m/09x0r", "--contribution", "7"]) == 2
    err = capsys.readouterr().err
    assert "--contribution" in err and "'7' is not one of: 0, 1, 2, 3" in err
    assert main(["--db", str(sqlite_path), "label", "clip", "--clip", "aporee_1_2", "--rating", "3"]) == 1
    assert "no annotator" in capsys.readouterr().err
    assert main(base + ["label", "clip", "--clip", "aporee_1_2", "--rating", "x"]) == 2


def test_category_ids_are_checked_against_the_project(sqlite_path, capsys) -> None:
    """A typo must not become a label nobody can see: unknown ids are refused with close matches."""
    from storage.models import Tag, TaggerRun

    _project(sqlite_path)
    store = open_store(sqlite_path)
    with store.write() as s:
        run = TaggerRun(model_name="mn10_as", status="done")
        s.add(run)
        s.flush()
        clip = s.exec(__import__("sqlmodel").select(Clip)).one()
        s.add(Tag(tagger_run_id=run.id, clip_id=clip.id, class_index=0, audioset_id="/m/09x0r", probability=0.9))
        s.add(Tag(tagger_run_id=run.id, clip_id=clip.id, class_index=1, audioset_id="/m/015p6", probability=0.4))
    store.dispose()
    base = ["--db", str(sqlite_path), "--annotator", "ana"]
    assert main(base + ["label", "set", "--clip", "aporee_1_2", "--category", "/m/09x0", "--contribution", "1"]) == 1
    err = capsys.readouterr().err
    assert "'/m/09x0' is neither in the AudioSet ontology nor used by this project" in err
    assert "did you mean /m/09x0r" in err and len(err.strip().splitlines()) == 1
    assert main(base + ["label", "polarity", "--category", "Speech!", "--polarity", "N"]) == 1
    assert "is not an AudioSet id" in capsys.readouterr().err
    assert main(base + ["label", "set", "--clip", "aporee_1_2", "--category", "/m/015p6", "--contribution", "1"]) == 0
    store = open_store(sqlite_path)
    assert [l.category_id for l in LabelService(store).category_labels()] == ["/m/015p6"]
    store.dispose()
