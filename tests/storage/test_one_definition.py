"""One definition per concept: every part of the workbench reads the same current tagger run, and
measures an answer's distance error and refusal by the same rule."""

from __future__ import annotations

import pytest
from sqlmodel import select

from storage.models import AlmRun, Clip, Dataset, Prediction, Tag, TaggerRun
from workbench.attribution.inputs import latest_tagger_run_id
from workbench.curation.inputs import gather_inputs
from workbench.project import clip_record, current_tagger_run_id
from workbench.review.service import ReviewService


def _run(store, status: str, clip_id: int | None, probability: float) -> int:  # type: ignore[no-untyped-def]
    with store.write() as s:
        run = TaggerRun(model_name="mn10_as", status=status)
        s.add(run)
        s.flush()
        if clip_id is not None:
            s.add(Tag(tagger_run_id=run.id, clip_id=clip_id, class_index=0, audioset_id="/m/09x0r",
                      probability=probability))
        return int(run.id)


def test_review_judges_curation_and_read_back_use_one_tagger_run(store) -> None:  # type: ignore[no-untyped-def]
    with store.write() as s:
        dataset = Dataset(name="d")
        alm = AlmRun(model="alm")
        s.add_all([dataset, alm])
        s.flush()
        clip = Clip(dataset_id=dataset.id, key="k1", human_sounds=0.0, latitude=1.0, longitude=1.0)
        s.add(clip)
        s.flush()
        s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id="k1", predicted_latitude="1",
                         predicted_longitude="1"))
        clip_id = int(clip.id)

    def everyone() -> set[object]:
        """The run each reader uses, told apart by the probability each run stored."""
        with store.session() as s:
            by_run = {run_id: p for run_id, p in s.exec(select(Tag.tagger_run_id, Tag.probability))}
            seen = {by_run[current_tagger_run_id(s)], by_run[latest_tagger_run_id(s)]}
        seen |= {t.probability for t in ReviewService(store, {}, {}).clip_detail(clip_id, None).tags}
        inputs = gather_inputs(store, "alm")
        seen.add(by_run[inputs.tagger_run_id])
        seen |= {t["probability"] for t in clip_record(store, "k1")["tags"]}
        return seen

    _run(store, "running", clip_id, 0.2)  # interrupted, nothing finished yet
    assert everyone() == {0.2}
    _run(store, "done", clip_id, 0.9)
    _run(store, "cancelled", clip_id, 0.4)  # a newer run stopped midway
    _run(store, "done", None, 0.0)  # finished, but stored no tags (every clip failed)
    assert everyone() == {0.9}


def test_the_speech_rule_is_one_rule_over_the_current_tagger_run(store) -> None:  # type: ignore[no-untyped-def]
    """The browser's speech column and the agreement breakdown agree: tag of the current run
    (not of a newer cancelled one), threshold 0.15, or human_sounds >= 0.1."""
    from workbench.agreement.units import load_ratings

    with store.write() as s:
        dataset = Dataset(name="d")
        alm = AlmRun(model="alm")
        s.add_all([dataset, alm])
        s.flush()
        clips = {key: Clip(dataset_id=dataset.id, key=key, human_sounds=hs)
                 for key, hs in (("quiet", 0.0), ("talk", 0.5), ("tagged", None))}
        s.add_all(clips.values())
        s.flush()
        ids = {key: int(c.id) for key, c in clips.items()}
    done = _run(store, "done", ids["quiet"], 0.1)
    with store.write() as s:
        s.add(Tag(tagger_run_id=done, clip_id=ids["tagged"], class_index=0, audioset_id="/m/09x0r", probability=0.2))
    _run(store, "cancelled", ids["quiet"], 0.9)  # would make "quiet" a speech clip if it counted
    browser = {r.key: r.speech for r in ReviewService(store, {}, {}).clip_rows()}
    agreement = dict(zip(load_ratings(store).clips["clip_key"], load_ratings(store).clips["speech"]))
    assert browser == {"quiet": False, "talk": True, "tagged": True}
    assert agreement == browser


# --------------------------------------------------------------------------- distance and refusal

def _essaouira_project(store, tmp_path):  # type: ignore[no-untyped-def]
    """A clip at Essaouira and a result record that states its true latitude 5° further north;
    the answer lies ~1 km from the clip and ~555 km from the record's stated truth."""
    import json

    from tests.storage.test_import_dataset import clip_row, write_csv
    from workbench.importing import import_dataset, import_predictions

    import_dataset(store, write_csv(tmp_path / "d.csv", [
        clip_row(0, key="essaouira", latitude=31.5085, longitude=-9.7595, city="Essaouira", country="Morocco",
                 continent="Africa")]), name="d")
    record = {"question_id": "essaouira", "true_latitude": 36.5085, "true_longitude": -9.7595,
              "true_city": "Essaouira", "true_country": "Morocco", "true_continent": "Africa",
              "predicted_latitude": "31.5175", "predicted_longitude": "-9.7595", "predicted_city": "Essaouira",
              "predicted_country": "Morocco", "predicted_continent": "Africa", "reasoning": "Gulls and surf at 0:12."}
    path = tmp_path / "gemini.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return import_predictions(store, "gemini", path), path


def _km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    from geographiclib.geodesic import Geodesic

    return Geodesic.WGS84.Inverse(lat1, lon1, lat2, lon2)["s12"] / 1000.0


def test_every_reader_measures_an_answer_from_the_clip_position(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Import, leaderboard, `clips show`, review, the judges' inputs, curation and error modes
    give one distance for one answer: from the clip's position, not the record's stated truth."""
    from workbench.attribution.inputs import select_clip_inputs
    from workbench.metrics.service import leaderboard, model_metrics
    from workbench.studies.error_modes import wrong_answers
    from workbench.tagging.ontology import Ontology

    report, _ = _essaouira_project(store, tmp_path)
    expected = _km(31.5085, -9.7595, 31.5175, -9.7595)
    assert 0.9 < expected < 1.1
    found = report.details["true_position_disagreements"]
    assert found["count"] == 1 and found["first_keys"] == ["essaouira"]
    assert found["largest_km"] == pytest.approx(_km(31.5085, -9.7595, 36.5085, -9.7595), rel=1e-9)
    assert any("other than their clip's" in w and "essaouira" in w for w in report.warnings)
    with store.session() as s:
        clip_id = int(s.exec(select(Clip.id)).one())
        alm_run_id = int(s.exec(select(AlmRun.id)).one())
    _run(store, "done", clip_id, 0.9)

    seen = {
        "leaderboard": float(leaderboard(store, "agl1k")["distance_error_km"].iloc[0]),
        "metrics": model_metrics(store, "gemini")["distance_error_km"],
        "clips show": clip_record(store, "essaouira")["predictions"][0]["error_km"],
        "review": ReviewService(store, {}, {}).clip_detail(clip_id, None).predictions[0].error_km,
        "judges": select_clip_inputs(store, alm_model="gemini", tau=0.0, names=Ontology.empty()).inputs[0].error_km,
        "curation": float(gather_inputs(store, "gemini").errors.iloc[0]),
        "error modes": wrong_answers(store, alm_run_id, gamma_km=0.5)[0]["error_km"],
    }
    assert seen == pytest.approx(dict.fromkeys(seen, expected), rel=1e-9), seen


def test_records_imported_before_their_dataset_are_measured_from_the_clip(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Records stored before any dataset (measured from their stated truth) are measured again
    from the clip when the dataset links them; a row whose stored distance is stale (written
    before the import measured from the clip) is read right by the readers that hold the clip."""
    import json

    from tests.storage.test_import_dataset import clip_row, write_csv
    from workbench.importing import import_dataset, import_predictions
    from workbench.metrics.service import leaderboard

    record = {"question_id": "essaouira", "true_latitude": 36.5085, "true_longitude": -9.7595,
              "predicted_latitude": "31.5175", "predicted_longitude": "-9.7595"}
    path = tmp_path / "early.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    import_predictions(store, "early", path)
    import_dataset(store, write_csv(tmp_path / "d.csv", [
        clip_row(0, key="essaouira", latitude=31.5085, longitude=-9.7595)]), name="d")
    expected = _km(31.5085, -9.7595, 31.5175, -9.7595)
    assert float(leaderboard(store, "agl1k")["distance_error_km"].iloc[0]) == pytest.approx(expected, rel=1e-9)
    with store.write() as s:
        s.exec(select(Prediction)).one().distance_error_km = _km(36.5085, -9.7595, 31.5175, -9.7595)
    assert clip_record(store, "essaouira")["predictions"][0]["error_km"] == pytest.approx(expected, rel=1e-9)


def test_cli_import_reports_records_whose_truth_disagrees(sqlite_path, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`import predictions` names the disagreeing records on stderr and in --json."""
    from storage import open_store
    from tests.cli_helpers import run_json as cli_json

    project = open_store(sqlite_path)
    _, path = _essaouira_project(project, tmp_path)
    project.dispose()
    result = cli_json(capsys, "--db", str(sqlite_path), "--json", "import", "predictions", "--model", "again",
                      str(path))
    assert result["counts"]["true_position_disagreements"] == 1
    assert result["details"]["true_position_disagreements"]["first_keys"] == ["essaouira"]
    assert result["details"]["true_position_disagreements"]["largest_km"] == pytest.approx(
        _km(31.5085, -9.7595, 36.5085, -9.7595), rel=1e-9)


# Names that compute a distance error or a refusal; only workbench/metrics/ may use them.
_DISTANCE_RULES = {"prediction_error_km", "is_refusal", "record_distance_km", "record_refused",
                   "record_distance_and_refused", "_geodesic_km", "REFUSAL_STRINGS", "REFUSAL_DISTANCE_KM"}


def test_no_second_distance_or_refusal_rule_outside_the_metrics() -> None:
    """Every reader asks workbench.metrics.distance (answer_distance_km, stored_answer, ...):
    a module outside workbench/metrics/ that imports the raw formulas, or builds its own
    geodesic from the predicted coordinates, is a second rule and fails here."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    offenders = []
    for folder in ("workbench", "ui", "cli", "storage"):
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative.startswith("workbench/metrics/") or "/migrations/" in relative:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("workbench.metrics"):
                    offenders += [f"{relative}: imports {a.name}" for a in node.names if a.name in _DISTANCE_RULES]
                elif isinstance(node, ast.Attribute) and node.attr in _DISTANCE_RULES:
                    offenders.append(f"{relative}: uses .{node.attr}")
            text = path.read_text(encoding="utf-8")
            # A geodesic of its own beside the prediction's coordinates is a second distance rule.
            if "predicted_lat" in text and ("Geod(" in text or "Geodesic." in text):
                offenders.append(f"{relative}: a geodesic beside predicted coordinates")
    assert not offenders, offenders


# Names of the review window's visibility rule; only workbench/review/visibility.py decides with them.
_VISIBILITY_RULES = {"labels_entered"}
_VISIBILITY_STATE = {"blind_mode", "revealed", "guess_saved", "plan_blind"}


def test_one_visibility_policy_decides_what_the_review_window_shows() -> None:
    """Blind mode, guess mode, a study plan's blind flag and reveal are decided by
    workbench.review.visibility.VisibilityPolicy alone (issue [N]): a module that calls the
    labels-entered rule, keeps a blind/reveal flag of its own or writes its own "hidden in …"
    message is a second rule and fails here."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    policy = "workbench/review/visibility.py"
    offenders = []
    for folder in ("workbench", "ui", "cli"):
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative == policy:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                    if name in _VISIBILITY_RULES:
                        offenders.append(f"{relative}:{node.lineno}: calls {name}")
                elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Attribute) and target.attr in _VISIBILITY_STATE:
                            offenders.append(f"{relative}:{node.lineno}: keeps its own .{target.attr}")
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    if node.value.lower().startswith(("hidden in blind mode", "hidden in guess mode")):
                        offenders.append(f"{relative}:{node.lineno}: its own {node.value!r}")
    assert not offenders, offenders


def test_clips_show_prints_the_distance_from_the_clip(store, sqlite_path, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main

    _essaouira_project(store, tmp_path)
    store.dispose()
    capsys.readouterr()
    assert main(["--db", str(sqlite_path), "clips", "show", "essaouira"]) == 0
    expected = _km(31.5085, -9.7595, 31.5175, -9.7595)
    from workbench.formatting import km

    assert f"{km(expected)} from the clip" in capsys.readouterr().out  # the house's format of a distance


def test_one_rule_says_which_positions_the_gazetteer_looks_up() -> None:
    """workbench.gazetteer.is_position is the rule (finite, |lat| <= 90, |lon| <= 180); the location
    check and the metrics' country aliases ask it. A module that states the range check again beside
    a lookup (the form both had before) is a second rule and fails here."""
    import re
    from pathlib import Path

    from workbench.gazetteer import is_position

    assert is_position(90, -180) and is_position("45.5", "4.8")
    assert not any(is_position(*p) for p in [(90.5, 0), (0, 180.5), (float("nan"), 0), (0, float("inf")),
                                             (None, 0), ("north", 0)])
    root = Path(__file__).resolve().parents[2]
    stated = re.compile(r"abs\([^)]*\)\s*\)?\s*<=\s*90\b.*abs\([^)]*\)\s*\)?\s*<=\s*180\b")
    offenders = [f"{path.relative_to(root)}:{number}"
                 for folder in ("workbench", "ui", "cli")
                 for path in sorted((root / folder).rglob("*.py")) if path.name != "gazetteer.py"
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if stated.search(line)]
    assert not offenders, offenders
