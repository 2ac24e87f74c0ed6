"""Study planning (overlap, balance over strata, progress, export) and humans as localizers."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from geographiclib.geodesic import Geodesic

from cli.main import main
from tests.cli_helpers import run_json
from tests.storage.studies_project import EXPERTS, N_CLIPS, link_audio, populate
from workbench.studies.planning import assign

N_AUDIO = N_CLIPS - 4  # the last four clips of the fixture have no recording


@pytest.fixture
def project(tmp_path):  # type: ignore[no-untyped-def]
    from storage import open_store

    store = open_store(tmp_path / "project.sqlite")
    populate(store)
    link_audio(store, tmp_path / "media", [f"clip{i:03d}" for i in range(N_AUDIO)])
    yield store, str(tmp_path / "project.sqlite"), tmp_path
    store.dispose()


@pytest.mark.parametrize("n_clips,n_people,overlap", [(40, 4, 2), (37, 5, 3), (12, 3, 1), (9, 2, 2)])
def test_assignment_overlap_and_balance(n_clips: int, n_people: int, overlap: int) -> None:
    strata = ["Europe/speech", "Europe/no speech", "Asia/speech", "Africa/no speech"]
    clips = pd.DataFrame({"clip_id": range(n_clips), "stratum": [strata[(i * 7) % 4] if i % 5 else strata[0]
                                                                 for i in range(n_clips)]})
    people = [f"p{i}" for i in range(n_people)]
    plan = assign(clips, people, overlap, seed=1)
    per_clip = plan.groupby("clip_id")["annotator"].agg(["nunique", "size"])
    assert (per_clip["nunique"] == overlap).all() and (per_clip["size"] == overlap).all()
    assert len(per_clip) == n_clips
    loads = plan.groupby("annotator").size().reindex(people, fill_value=0)
    assert loads.max() - loads.min() <= 1
    per_stratum = plan.groupby(["stratum", "annotator"]).size().unstack(fill_value=0).reindex(columns=people,
                                                                                              fill_value=0)
    assert ((per_stratum.max(axis=1) - per_stratum.min(axis=1)) <= 1).all()
    for _, part in plan.groupby("annotator"):
        assert sorted(part["position"]) == list(range(len(part)))
    assert assign(clips, people, overlap, seed=1).equals(plan)  # reproducible


def test_too_few_annotators_for_the_overlap_is_one_line(project, capsys) -> None:  # type: ignore[no-untyped-def]
    _, db, _ = project
    capsys.readouterr()
    assert main(["--db", db, "study", "plan", "--name", "p", "--annotators", "ada", "--overlap", "2"]) == 1
    err = capsys.readouterr().err.strip()
    assert "needs at least 2 annotators" in err and len(err.splitlines()) == 1


def test_plan_progress_and_export(project, capsys) -> None:  # type: ignore[no-untyped-def]
    _, db, tmp = project
    plan = run_json(capsys, "--db", db, "study", "plan", "--name", "pilot", "--annotators", "ada,eve,fay",
                    "--overlap", "2", "--json")
    assert plan["n_clips"] == N_AUDIO and plan["blind"] is True and plan["overlap"] == 2
    assigned = {a["annotator"]: a for a in plan["annotators"]}
    assert sum(a["assigned"] for a in assigned.values()) == 2 * N_AUDIO
    # ada labelled every clip in the fixture already; eve and fay start from nothing
    assert assigned["ada"]["done"] == assigned["ada"]["assigned"] and assigned["eve"]["done"] == 0
    first = assigned["eve"]["next_clip"]
    run_json(capsys, "--db", db, "--annotator", "eve", "study", "guess", "--clip", first, "--lat", "10", "--lon", "20",
             "--json")
    out = tmp / "plan.csv"
    progress = run_json(capsys, "--db", db, "study", "progress", "--out", str(out), "--json")
    eve = next(a for a in progress["annotators"] if a["annotator"] == "eve")
    assert eve["done"] == 1 and eve["next_clip"] != first
    table = pd.read_csv(out)
    assert len(table) == 2 * N_AUDIO and set(table.columns) >= {"annotator", "pseudonym", "clip_key", "continent",
                                                                 "position", "done"}
    assert table.groupby("clip_key")["annotator"].nunique().eq(2).all()
    capsys.readouterr()
    assert main(["--db", db, "study", "plan", "--name", "pilot", "--annotators", "ada,eve"]) == 1
    assert "exists already" in capsys.readouterr().err


def test_human_localizers_are_scored_like_an_alm_per_annotator_and_pooled(project, capsys) -> None:  # type: ignore[no-untyped-def]
    from sqlmodel import select

    from storage.models import Clip
    from workbench.commands import CommandStack, SetHumanGuess
    from workbench.labels import LabelService
    from workbench.studies.localizers import GuessService

    store, db, _ = project
    with store.session() as s:
        clips = {c.key: c for c in s.exec(select(Clip)).all()}
    guesses = {"ada": [("clip000", 1.0, 1.0, 0.9), ("clip001", 5.0, -3.0, 0.4)], "bea": [("clip000", -2.0, 0.5, None)]}
    for who, items in guesses.items():
        for key, dlat, dlon, confidence in items:
            clip = clips[key]
            args = ["--db", db, "--annotator", who, "study", "guess", "--clip", key, "--lat",
                    str(clip.latitude + dlat), "--lon", str(clip.longitude + dlon), "--json"]
            run_json(capsys, *args, *(["--confidence", str(confidence)] if confidence is not None else []))
    out = run_json(capsys, "--db", db, "study", "localizers", "--json")
    rows = {r["model"]: r for r in out["rows"]}
    assert set(rows) == {"human:annotator-0000", "human:annotator-0001", "human (pooled)"}

    def km(key: str, dlat: float, dlon: float) -> float:
        c = clips[key]
        return Geodesic.WGS84.Inverse(c.latitude, c.longitude, c.latitude + dlat, c.longitude + dlon)["s12"] / 1000

    ada = [km(k, a, b) for k, a, b, _ in guesses["ada"]]
    assert rows["human:annotator-0000"]["distance_error_km"] == pytest.approx(sum(ada) / 2, rel=1e-6)
    assert rows["human:annotator-0000"]["mean_confidence"] == pytest.approx(0.65)
    pooled = ada + [km("clip000", -2.0, 0.5)]
    assert rows["human (pooled)"]["n"] == 3
    assert rows["human (pooled)"]["distance_error_km"] == pytest.approx(sum(pooled) / 3, rel=1e-6)
    assert rows["human (pooled)"]["geoscore_mean"] == pytest.approx(
        5000 * sum(math.exp(-d / 1492.0) for d in pooled) / 3, rel=1e-6)  # AGL1K GeoScore, 0..5000
    # The same rows on the leaderboard, beside the models, under each profile.
    board = run_json(capsys, "--db", db, "leaderboard", "--json")["rows"]
    human_rows = {(r["model"], r["profile"]): r for r in board if str(r["model"]).startswith("human")}
    assert set(human_rows) == {(name, profile) for name in rows for profile in ("agl1k", "iso")}
    assert human_rows[("human (pooled)", "agl1k")]["distance_error_km"] == pytest.approx(sum(pooled) / 3, rel=1e-6)

    capsys.readouterr()
    assert main(["--db", db, "--annotator", "ada", "study", "guess", "--clip", "clip002", "--lat", "95",
                 "--lon", "0"]) == 1
    err = capsys.readouterr().err
    assert "latitude" in err and "[-90, 90]" in err
    assert main(["--db", db, "--annotator", "ada", "study", "guess", "--clip", "clip002", "--lat", "5"]) == 1
    assert "together" in capsys.readouterr().err

    service = GuessService(store)
    ada_id = LabelService(store).find_annotator("ada").id
    stack = CommandStack()
    stack.push(SetHumanGuess(service, ada_id, clips["clip001"].id, base_version=1, latitude=0.0, longitude=0.0))
    stack.undo()
    again = {r["model"]: r for r in run_json(capsys, "--db", db, "study", "localizers", "--json")["rows"]}
    assert again["human:annotator-0000"]["distance_error_km"] == pytest.approx(sum(ada) / 2, rel=1e-6)
    assert EXPERTS[0] == "ada"


def test_a_plan_draws_only_clips_with_audio_and_lists_the_others(project, capsys) -> None:  # type: ignore[no-untyped-def]
    _, db, _ = project
    plan = run_json(capsys, "--db", db, "study", "plan", "--name", "audio", "--annotators", "ada,eve,fay",
                    "--overlap", "2", "--json")
    without = {f"clip{i:03d}" for i in range(N_AUDIO, N_CLIPS)}
    assert {e["key"] for e in plan["excluded"]} == without
    assert all("no usable recording" in e["reason"] for e in plan["excluded"])
    table = run_json(capsys, "--db", db, "study", "progress", "--plan", "audio", "--json")
    assert {e["key"] for e in table["excluded"]} == without
    from storage import open_store
    from workbench.studies.planning import plan_table

    store = open_store(db)
    try:
        _, frame = plan_table(store, "audio")
    finally:
        store.dispose()
    assert not set(frame["clip_key"]) & without and frame["clip_key"].nunique() == N_AUDIO
    # balanced over continent x speech: per stratum, the annotators' counts differ by at most one
    speech = {f"clip{i:03d}": bool(i % 2) for i in range(N_CLIPS)}
    frame["stratum"] = frame["continent"] + "/" + frame["clip_key"].map(speech).astype(str)
    counts = frame.groupby(["stratum", "annotator"]).size().unstack(fill_value=0)
    assert counts.shape == (6, 3) and ((counts.max(axis=1) - counts.min(axis=1)) <= 1).all()


def test_a_plan_of_clips_none_of_which_has_audio_is_refused(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from storage import open_store

    store = open_store(tmp_path / "p.sqlite")
    populate(store)
    store.dispose()
    capsys.readouterr()
    assert main(["--db", str(tmp_path / "p.sqlite"), "study", "plan", "--name", "p", "--annotators", "a,b"]) == 1
    err = capsys.readouterr().err.strip()
    assert "usable recording" in err and len(err.splitlines()) == 1


def test_an_undone_guess_or_label_is_not_done(project, capsys) -> None:  # type: ignore[no-untyped-def]
    from workbench.commands import CommandStack, SetClipLabel, SetHumanGuess
    from workbench.labels import LabelService
    from workbench.studies.localizers import GuessService

    store, db, _ = project
    plan = run_json(capsys, "--db", db, "study", "plan", "--name", "undo", "--annotators", "eve,fay", "--json")
    eve = next(a for a in plan["annotators"] if a["annotator"] == "eve")
    labels = LabelService(store)
    eve_id = labels.find_annotator("eve").id
    first = labels.clip_id_for_key(eve["next_clip"])
    stack = CommandStack()
    stack.push(SetHumanGuess(GuessService(store), eve_id, first, base_version=0, latitude=1.0, longitude=2.0))
    stack.push(SetClipLabel(labels, eve_id, first, base_version=0, rating=3))

    def done() -> int:
        progress = run_json(capsys, "--db", db, "study", "progress", "--plan", "undo", "--json")
        return next(a for a in progress["annotators"] if a["annotator"] == "eve")["done"]

    assert done() == 1
    stack.undo()
    assert done() == 1  # the guess is still there
    stack.undo()
    assert done() == 0  # both undone: the rows remain, empty, and label nothing
    stack.redo()
    assert done() == 1
