"""`aglw events`: import/export round trip, bad input (one line, exit 1, nothing stored), eval, QA."""

from __future__ import annotations

import json
from pathlib import Path

from cli.main import main
from storage import open_store
from storage.models import Clip, Dataset
from tests.cli_helpers import run_json
from workbench.events.scene import SceneSource, render_scene, write_scene

CSV = "3,1,0,-50,10\n4,1,0,-46,10\n4,8,0,120,-20\n9,12,0,5,5\n"


def _project(path: Path, keys=("scene_1",), duration_s: float = 10.0) -> None:
    store = open_store(path)
    with store.write() as s:
        ds = Dataset(name="d")
        s.add(ds)
        s.flush()
        for key in keys:
            s.add(Clip(dataset_id=ds.id, key=key, duration_s=duration_s, layout="ambix", n_channels=4))
    store.dispose()


def test_import_export_round_trip(sqlite_path, tmp_path, capsys) -> None:
    _project(sqlite_path)
    base = ["--db", str(sqlite_path), "--annotator", "ana", "--json"]
    source = tmp_path / "scene_1.csv"
    source.write_text(CSV)
    report = run_json(capsys, *base, "events", "import", str(source))  # the file name is the clip key
    assert (report["clip_key"], report["n_events"], report["n_rows"], report["format"]) == ("scene_1", 3, 4, "dcase2023")
    out = tmp_path / "out.csv"
    exported = run_json(capsys, *base, "events", "export", "--clip", "scene_1", str(out))
    assert exported["n_rows"] == 4 and out.read_text() == CSV
    # exports never overwrite without --force
    assert main([*base, "events", "export", "--clip", "scene_1", str(out)]) == 1
    assert "exists; pass --force" in capsys.readouterr().err
    assert main([*base, "events", "export", "--clip", "scene_1", str(out), "--force"]) == 0


def test_bad_files_get_one_line_and_nothing_is_imported(sqlite_path, tmp_path, capsys) -> None:
    _project(sqlite_path, duration_s=0.5)
    base = ["--db", str(sqlite_path), "--annotator", "ana"]
    cases = {
        "scene_1.csv": ("0,1,0,-50,10\n1,1,0,200,0\n", "scene_1.csv:2: azimuth 200 is outside [-180, 180]"),
        "late.csv": ("0,1,0,0,0\n7,1,0,0,0\n", "late.csv:2: frame 7 (0.7 s) is past the clip's end"),
        "unknown_clip.csv": ("0,1,0,0,0\n", "unknown_clip.csv: no clip with key 'unknown_clip' in this project"),
        "cls.csv": ("0,20,0,0,0\n", "cls.csv:1: class 20 is unknown"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        args = [*base, "events", "import", str(path)] + ([] if name in ("scene_1.csv", "unknown_clip.csv")
                                                        else ["--clip", "scene_1"])
        capsys.readouterr()
        assert main(args) == 1, name
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err
    assert run_json(capsys, "--db", str(sqlite_path), "--json", "events", "export", "--clip", "scene_1",
                    str(tmp_path / "none.csv"))["n_events"] == 0


def test_dry_run_stores_nothing(sqlite_path, tmp_path, capsys) -> None:
    _project(sqlite_path)
    path = tmp_path / "scene_1.csv"
    path.write_text(CSV)
    base = ["--db", str(sqlite_path), "--annotator", "ana", "--json"]
    assert run_json(capsys, *base, "events", "import", str(path), "--dry-run")["dry_run"] is True
    assert run_json(capsys, *base, "events", "import", str(path))["n_events"] == 3  # no --replace needed


def test_eval_prints_the_cli_md_keys(tmp_path, capsys) -> None:
    ref, pred = tmp_path / "ref", tmp_path / "pred"
    ref.mkdir()
    pred.mkdir()
    (ref / "a.csv").write_text("0,0,0,10,0,100\n1,0,0,10,0,100\n2,0,0,10,0,100\n")
    (pred / "a.csv").write_text("0,0,0,14,0,120\n1,0,0,14,0,120\n")
    result = run_json(capsys, "--json", "events", "eval", "--ref", str(ref), "--pred", str(pred))
    assert {"n_files", "error_rate", "f_score", "doa_error_deg", "localization_recall", "seld_score",
            "relative_distance_error"} <= set(result)
    assert result["n_files"] == 1 and abs(result["doa_error_deg"] - 4.0) < 1e-3
    assert abs(result["relative_distance_error"] - 0.2) < 1e-9
    (ref / "b.csv").write_text("0,0,0,10,0,100\n")
    capsys.readouterr()
    assert main(["events", "eval", "--ref", str(ref), "--pred", str(pred)]) == 1
    assert "no prediction for 1 reference file(s), first b.csv" in capsys.readouterr().err


def test_qa_and_score_qa_on_a_synthetic_scene(sqlite_path, tmp_path, capsys) -> None:
    _project(sqlite_path, keys=("scene_qa",), duration_s=3.0)
    scene = render_scene([SceneSource(0, 0.0, 1.0, 60.0, 0.0), SceneSource(7, 1.0, 2.0, -120.0, 30.0)], 3.0)
    paths = write_scene(scene, tmp_path, "scene_qa")
    base = ["--db", str(sqlite_path), "--annotator", "ana", "--json"]
    run_json(capsys, *base, "events", "import", str(paths["csv"]))
    questions = tmp_path / "qa.jsonl"
    made = run_json(capsys, *base, "events", "qa", "--out", str(questions))
    records = [json.loads(line) for line in questions.read_text().splitlines()]
    assert made["n_questions"] == len(records) > 5
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": q["id"], "answer": q["answer"]}) + "\n" for q in records))
    score = run_json(capsys, *base, "events", "score-qa", "--questions", str(questions), "--answers", str(answers))
    assert score["accuracy"] == 1.0 and score["oclock"]["exact"] == 2
    answers.write_text('{"id": "x", "answer": "left"}\nnot json\n')
    capsys.readouterr()
    assert main(["events", "score-qa", "--questions", str(questions), "--answers", str(answers)]) == 1
    assert f"{answers}:2: not JSON" in capsys.readouterr().err


def test_an_unknown_annotator_is_an_error_for_export_and_qa(sqlite_path, tmp_path, capsys) -> None:
    """--annotator on the reading commands names an existing expert; a typo is one line and exit 1,
    never an export of nobody's events (or of everyone's)."""
    _project(sqlite_path)
    base = ["--db", str(sqlite_path), "--annotator", "nobody"]
    for argv in (["events", "export", "--clip", "scene_1", str(tmp_path / "e.csv")],
                 ["events", "qa", "--out", str(tmp_path / "q.json")]):
        assert main([*base, *argv]) == 1
        assert "no annotator called 'nobody' in this project" in capsys.readouterr().err
    assert not (tmp_path / "e.csv").exists() and not (tmp_path / "q.json").exists()


def test_the_class_list_travels_with_the_events(sqlite_path, tmp_path, capsys) -> None:
    """Exported with --class-list, imported again without it: the names stay (never "female speech")."""
    _project(sqlite_path, keys=("scene_1", "scene_2"))
    base = ["--db", str(sqlite_path), "--annotator", "ana", "--json"]
    classes = tmp_path / "ours.txt"
    classes.write_text("dog\ncar horn\n")
    source = tmp_path / "scene_1.csv"
    source.write_text("0,0,0,30,0\n1,0,0,32,0\n5,1,0,-90,10\n")
    run_json(capsys, *base, "events", "import", str(source), "--class-list", str(classes))
    out = tmp_path / "out" / "scene_1.csv"
    out.parent.mkdir()
    exported = run_json(capsys, *base, "events", "export", "--clip", "scene_1", str(out))  # no --class-list: stored
    assert out.read_text() == source.read_text()
    assert exported["class_list"] == str(out.with_suffix(".classes.txt"))
    assert out.with_suffix(".classes.txt").read_text() == "dog\ncar horn\n"
    # imported again into another clip without --class-list: the list beside the file gives the names
    again = run_json(capsys, *base, "events", "import", str(out), "--clip", "scene_2")
    assert again["n_events"] == 2
    store = open_store(sqlite_path)
    try:
        from workbench.events.service import EventService

        names = {e.class_name for e in EventService(store).events()}
    finally:
        store.dispose()
    assert names == {"dog", "car horn"}
    # without the list beside it, the clip's stored list is used, and an index outside it is refused
    lone = tmp_path / "lone.csv"
    lone.write_text("0,5,0,0,0\n")
    capsys.readouterr()
    assert main(["--db", str(sqlite_path), "--annotator", "ana", "events", "import", str(lone), "--clip", "scene_1",
                 "--replace"]) == 1
    err = capsys.readouterr().err.strip()
    assert "class 5 is unknown" in err and len(err.splitlines()) == 1


def test_qa_refuses_to_pool_annotators_as_export_does(sqlite_path, tmp_path, capsys) -> None:
    _project(sqlite_path)
    source = tmp_path / "scene_1.csv"
    source.write_text(CSV)
    for who in ("ana", "ben"):
        run_json(capsys, "--db", str(sqlite_path), "--annotator", who, "--json", "events", "import", str(source))
    capsys.readouterr()
    for argv in (["events", "export", "--clip", "scene_1", str(tmp_path / "e.csv")],
                 ["events", "qa", "--out", str(tmp_path / "q.jsonl")]):
        assert main(["--db", str(sqlite_path), *argv]) == 1
        err = capsys.readouterr().err.strip()
        assert "has events by 2 annotators; pass --annotator NAME" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "q.jsonl").exists()
    made = run_json(capsys, "--db", str(sqlite_path), "--annotator", "ben", "--json", "events", "qa",
                    "--out", str(tmp_path / "q.jsonl"))
    assert made["n_clips"] == 1
