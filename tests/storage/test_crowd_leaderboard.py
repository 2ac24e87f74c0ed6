"""The crowd of a web study on the leaderboard and in `compare`, scored like the models (issue 38).

A small project: four clips, two models (A and B of test_leaderboard_counting), a web study on
three clips with an attention clip, four participants driven through
:mod:`workbench.studies.web_session` (consent, headphone check, submits); the fourth fails the
headphone check in ``record`` mode and is excluded by the study's stored rule. Every expected
number is computed here by hand (geodesics from geographiclib).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.storage.test_leaderboard_counting import CASABLANCA, CLIPS, PARIS, answer, km, write
from tests.storage.test_import_dataset import clip_row, write_csv

TOKYO = (35.6762, 139.6503)
LYON = CLIPS["c1"][:2]
SOUTH, NORTH = (40.0, LYON[1]), (50.0, LYON[1])  # on Lyon's meridian: Lyon is their median with Lyon
QUITO = CLIPS["c3"][:2]
# participant -> clip -> guess (None: "I can't tell"); c3 is the attention clip, answered right by all
PLAN = [
    {"c0": CASABLANCA, "c1": SOUTH, "c2": None, "c3": QUITO},
    {"c0": CASABLANCA, "c1": LYON, "c2": None, "c3": QUITO},
    {"c0": None, "c1": NORTH, "c2": TOKYO, "c3": QUITO},
    {"c0": (0.0, 0.0), "c1": (0.0, 0.0), "c2": (0.0, 0.0), "c3": QUITO},  # fails the headphone check
]
STUDY = "crowd-1"
POOLED, CONSENSUS = f"human ({STUDY})", f"human ({STUDY}, consensus)"


def d(key: str, guess: tuple[float, float] | None) -> float:
    return 10_000.0 if guess is None else km(CLIPS[key][:2], guess)


def build(store, tmp_path: Path, name: str = STUDY) -> list[str]:  # type: ignore[no-untyped-def]
    """The project, the study and its four participants; their pseudonyms in PLAN's order."""
    from tests.storage.studies_project import link_audio
    from workbench.importing import import_dataset, import_predictions
    from workbench.studies import web_session, web_study

    rows = [clip_row(i, key=k, latitude=v[0], longitude=v[1], city=v[2], country=v[3], continent=v[4])
            for i, (k, v) in enumerate(CLIPS.items())]
    import_dataset(store, write_csv(tmp_path / "d.csv", rows), name="d")
    a = [answer("c0", CLIPS["c0"][0], CLIPS["c0"][1], "Essaouira", "Morocco", "Africa"),
         answer("c1", *PARIS, "Paris", "France", "Europe"),
         answer("c2", "Unknown", "Unknown", "Unknown", "Unknown", "Unknown")]
    b = [answer("c0", *CASABLANCA, "Casablanca", "Morocco", "Africa"),
         answer("c1", CLIPS["c1"][0], CLIPS["c1"][1], "Lyon", "France", "Europe"),
         answer("c3", CLIPS["c3"][0], CLIPS["c3"][1], "Quito", "Ecuador", "South America")]
    import_predictions(store, "A", write(tmp_path / "a.jsonl", a))
    import_predictions(store, "B", write(tmp_path / "b.jsonl", b))
    link_audio(store, tmp_path / "media", list(CLIPS))
    study, _ = web_study.create_study(store, name, clips=["c0", "c1", "c2"], attention=["c3"], per_participant=3,
                                      headphone_check="record", seed=1)
    study, nonces = web_study.invite(store, name, len(PLAN))
    key_of = {}
    from sqlalchemy import select

    from storage import tables as T

    with store.read() as connection:
        key_of = {int(i): k for i, k in connection.execute(select(T.clip.c.id, T.clip.c.key))}
    pseudonyms = []
    for plan, nonce in zip(PLAN, nonces, strict=True):
        pid = web_session.enter_by_invite(store, study, nonce)
        web_session.consent(store, study, pid)
        truth = web_session.headphone_trials(study, pid)
        passes = plan["c0"] != (0.0, 0.0)
        state = web_session.record_headphones(store, study, pid, truth if passes else [t % 3 + 1 for t in truth])
        pseudonyms.append(state.pseudonym)
        while state.stage == "items":
            assert state.item is not None
            guess = plan[key_of[web_session.item_clip(store, study, pid, state.item.item_id)]]
            values = {"refused": True} if guess is None else {"latitude": guess[0], "longitude": guess[1]}
            state = web_session.submit(store, study, pid, state.item.item_id,
                                       web_session.check_answer({**values, "confidence": 0.5})).state
        assert state.stage == "done"
    return pseudonyms


@pytest.fixture
def crowd(any_store, tmp_path):  # type: ignore[no-untyped-def]
    return any_store, build(any_store, tmp_path)


def _by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["model"]: r for r in rows}


def test_geometric_median_on_the_sphere() -> None:
    from workbench.studies.crowd import geometric_median

    # three guesses around the pole, 120 degrees apart: the pole
    lat, _ = geometric_median([(80.0, 0.0), (80.0, 120.0), (80.0, -120.0)])
    assert lat == pytest.approx(90.0, abs=1e-6)
    # three guesses on the equator: the middle one, exactly
    assert geometric_median([(0.0, 20.0), (0.0, 0.0), (0.0, 10.0)]) == pytest.approx((0.0, 10.0), abs=1e-9)
    # two alike and one apart: the pair (the vertex that holds two of three weights)
    assert geometric_median([(10.0, 10.0), (10.0, 10.0), (-30.0, 50.0)]) == pytest.approx((10.0, 10.0), abs=1e-9)
    # a triangle with all angles under 120 degrees: its Fermat point, where the unit vectors
    # toward the three guesses sum to zero, and no nearby point does better
    points = [(0.0, 0.0), (0.0, 30.0), (25.0, 12.0)]
    lat, lon = geometric_median(points)
    total = sum(km_sphere((lat, lon), p) for p in points)
    for dlat, dlon in ((0.01, 0), (-0.01, 0), (0, 0.01), (0, -0.01)):
        assert total < sum(km_sphere((lat + dlat, lon + dlon), p) for p in points)
    assert 0 < lat < 25 and 0 < lon < 30


def km_sphere(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Great-circle distance on the unit sphere (radians), by the haversine formula."""
    p1, p2 = math.radians(a[0]), math.radians(b[0])
    h = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(b[1] - a[1]) / 2) ** 2
    return 2 * math.asin(math.sqrt(h))


def test_the_crowd_rows_count_guesses_clips_and_participants(crowd) -> None:  # type: ignore[no-untyped-def]
    from workbench.studies.crowd import crowd_rows

    store, pseudonyms = crowd
    rows = _by_name(crowd_rows(store, "agl1k"))
    assert set(rows) == {POOLED, CONSENSUS}
    pooled = rows[POOLED]
    # three analyzed participants x three scored clips; the attention clip and the excluded
    # participant's guesses are not scored
    assert (pooled["n"], pooled["n_clips"], pooled["n_participants"]) == (9, 3, 3)
    distances = [d(k, plan[k]) for plan in PLAN[:3] for k in ("c0", "c1", "c2")]
    assert pooled["distance_error_km"] == pytest.approx(sum(distances) / 9, rel=1e-9)
    assert pooled["reject_rate"] == pytest.approx(3 / 9)
    assert pooled["within_1000km"] == pytest.approx(sum(x < 1000 for x in distances) / 9)
    assert pooled["mean_confidence"] == pytest.approx(0.5)
    # consensus: c0 the two Casablanca guesses (one refusal of three is no majority), c1 the
    # median of three guesses on Lyon's meridian (Lyon itself), c2 a refusal (two of three)
    consensus = rows[CONSENSUS]
    assert (consensus["n"], consensus["n_clips"], consensus["n_participants"]) == (3, 3, 3)
    assert consensus["distance_error_km"] == pytest.approx((d("c0", CASABLANCA) + 10_000) / 3, rel=1e-6)
    assert consensus["reject_rate"] == pytest.approx(1 / 3)
    assert consensus["country_acc"] == pytest.approx(2 / 3)  # Morocco, France; the refusal is wrong

    each = _by_name(crowd_rows(store, "agl1k", each=True))
    assert set(each) == {POOLED, CONSENSUS, *(f"human:{STUDY}/{p}" for p in pseudonyms[:3])}
    first = each[f"human:{STUDY}/{pseudonyms[0]}"]
    assert (first["n"], first["n_clips"], first["n_participants"]) == (3, 3, 1)
    assert first["distance_error_km"] == pytest.approx(sum(distances[:3]) / 3, rel=1e-9)


def test_the_consensus_records(crowd) -> None:  # type: ignore[no-untyped-def]
    from workbench.studies.crowd import consensus_records, crowd_records

    store, _ = crowd
    records = {r["question_id"]: r for r in consensus_records(crowd_records(store, STUDY), CONSENSUS)}
    assert float(records["c1"]["predicted_latitude"]) == pytest.approx(LYON[0], abs=1e-9)
    assert float(records["c1"]["predicted_longitude"]) == pytest.approx(LYON[1], abs=1e-9)
    assert (float(records["c0"]["predicted_latitude"]), float(records["c0"]["predicted_longitude"])) == \
        pytest.approx(CASABLANCA, abs=1e-9)
    assert records["c0"]["predicted_country"] == "Morocco" and records["c2"]["refused"] is True


def test_by_group_both_profiles_and_intervals(crowd) -> None:  # type: ignore[no-untyped-def]
    from workbench.studies.crowd import crowd_rows

    store, _ = crowd
    rows = crowd_rows(store, "both", by="continent", ci=True, bootstrap=200, seed=2)
    pooled = [r for r in rows if r["model"] == POOLED]
    assert {(r["profile"], r["group"]) for r in pooled} == {(p, g) for p in ("agl1k", "iso")
                                                          for g in ("Africa", "Asia", "Europe")}
    europe = next(r for r in pooled if r["group"] == "Europe" and r["profile"] == "agl1k")
    assert (europe["n"], europe["n_clips"], europe["n_participants"]) == (3, 1, 3)
    # one clip: every resample is that clip, so the interval is the point
    assert europe["distance_error_km_ci"] == pytest.approx([europe["distance_error_km"]] * 2)
    whole = _by_name(crowd_rows(store, "agl1k", ci=True, bootstrap=500, seed=2))[POOLED]
    low, high = whole["distance_error_km_ci"]
    assert low <= whole["distance_error_km"] <= high


def _per_clip_crowd(keys: tuple[str, ...]) -> dict[str, float]:
    """The crowd's mean distance per clip (its analyzed guesses)."""
    return {k: sum(d(k, plan[k]) for plan in PLAN[:3]) / 3 for k in keys}


def test_compare_the_crowd_with_a_model_by_the_paired_bootstrap(crowd) -> None:  # type: ignore[no-untyped-def]
    from workbench.studies.crowd import compare_rows

    store, _ = crowd
    out = compare_rows(store, POOLED, "A", bootstrap=500, seed=1)
    assert out["models"] == [POOLED, "A"] and out["n_common"] == 3 and out["n_answers"] == [9, 3]
    metrics = {m["metric"]: m for m in out["metrics"]}
    # several guesses per clip: every metric by the paired bootstrap over the three clips
    assert {m["test"] for m in out["metrics"]} == {"paired_bootstrap"}
    crowd_km = _per_clip_crowd(("c0", "c1", "c2"))
    a_km = {"c0": 0.0, "c1": km(LYON, PARIS), "c2": 10_000.0}
    distance = metrics["distance_error_km"]
    assert distance["n"] == 3
    assert distance["a"] == pytest.approx(sum(crowd_km.values()) / 3, rel=1e-9)
    assert distance["b"] == pytest.approx(sum(a_km.values()) / 3, rel=1e-9)
    assert distance["difference"] == pytest.approx(distance["a"] - distance["b"], rel=1e-9)
    # within 1000 km per clip: the crowd 2/3, 3/3, 0/3; A 1, 1, 0
    within = metrics["within_1000km"]
    assert within["n"] == 3 and within["a"] == pytest.approx((2 / 3 + 1 + 0) / 3) and within["b"] == pytest.approx(2 / 3)
    assert within["ci"][0] is not None and 1 / 500 <= within["p_value"] <= 1.0

    # the consensus answers each clip once, as A does: McNemar for the accuracies
    single = compare_rows(store, CONSENSUS, "A", bootstrap=200)
    tests = {m["metric"]: m["test"] for m in single["metrics"]}
    assert tests["distance_error_km"] == "paired_bootstrap" and tests["country_acc"] == "mcnemar_exact"
    assert single["n_answers"] == [3, 3]


def test_compare_the_desktop_pool_with_a_model(crowd) -> None:  # type: ignore[no-untyped-def]
    """`compare --models 'A,human (pooled)'` answered "no predictions for model(s)" before."""
    from sqlalchemy import select

    from storage import tables as T
    from storage.models import Annotator
    from workbench.studies.crowd import compare_rows
    from workbench.studies.localizers import GuessService

    store, _ = crowd
    with store.write() as s:
        people = [Annotator(name="ada", pseudonym="annotator-ada"), Annotator(name="bea", pseudonym="annotator-bea")]
        s.add_all(people)
        s.flush()
        ids = [int(p.id) for p in people]  # type: ignore[arg-type]
    with store.read() as connection:
        clip_id = {k: int(i) for i, k in connection.execute(select(T.clip.c.id, T.clip.c.key))}
    guesses = GuessService(store)
    guess_c0 = (31.51, -9.77)
    guesses.set_guess(ids[0], clip_id["c0"], latitude=guess_c0[0], longitude=guess_c0[1])
    guesses.set_guess(ids[0], clip_id["c1"], latitude=PARIS[0], longitude=PARIS[1])
    guesses.set_guess(ids[1], clip_id["c1"], latitude=LYON[0], longitude=LYON[1])
    out = compare_rows(store, "human (pooled)", "A", bootstrap=300)
    assert out["n_common"] == 2 and out["n_answers"] == [3, 2]
    distance = {m["metric"]: m for m in out["metrics"]}["distance_error_km"]
    assert distance["a"] == pytest.approx((km(CLIPS["c0"][:2], guess_c0) + km(LYON, PARIS) / 2) / 2, rel=1e-9)
    assert distance["b"] == pytest.approx(km(LYON, PARIS) / 2, rel=1e-9)
    assert {m["test"] for m in out["metrics"]} == {"paired_bootstrap"}  # c1 has two guesses
    one = compare_rows(store, "human:annotator-ada", "A", bootstrap=300)
    assert one["n_answers"] == [2, 2] and {m["metric"]: m["test"] for m in one["metrics"]}["city_acc"] == "mcnemar_exact"


def test_leaderboard_cli_crowd_rows_common_and_compare(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main
    from storage import open_store
    from tests.cli_helpers import run_json

    store = open_store(tmp_path / "project.sqlite")
    pseudonyms = build(store, tmp_path)
    store.dispose()
    db = str(tmp_path / "project.sqlite")
    out = run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "agl1k")
    rows = _by_name(out["rows"])
    assert set(rows) == {"A", "B", POOLED, CONSENSUS}
    assert (rows[POOLED]["n"], rows[POOLED]["n_clips"], rows[POOLED]["n_participants"]) == (9, 3, 3)
    assert rows["A"]["n_clips"] is None and rows["A"]["n"] == 3
    # the excluded participant is listed with the rule's reason
    (crowd,) = out["crowds"]
    assert (crowd["study"], crowd["analyzed"], crowd["rule"]) == (STUDY, 3, "finished and not excluded")
    assert [x["participant"] for x in crowd["excluded"]] == [pseudonyms[3]]
    assert "headphone" in crowd["excluded"][0]["reason"]

    each = _by_name(run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "agl1k", "--humans", "each")["rows"])
    assert {f"human:{STUDY}/{p}" for p in pseudonyms[:3]} < set(each)
    assert f"human:{STUDY}/{pseudonyms[3]}" not in each

    # --common: the crowd is ranked with the models on the clips every listed row answered (c0, c1)
    common = run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "agl1k", "--common")
    assert common["n_common"] == 2
    ranked = _by_name(common["rows"])
    assert set(ranked) == {"A", "B", POOLED, CONSENSUS}
    per_clip = _per_clip_crowd(("c0", "c1"))
    assert ranked[POOLED]["distance_error_km"] == pytest.approx(sum(per_clip.values()) / 2, rel=1e-9)
    assert (ranked[POOLED]["n"], ranked[POOLED]["n_clips"]) == (6, 2)
    assert ranked[POOLED]["within_1000km"] == pytest.approx((2 / 3 + 1) / 2)
    assert ranked[CONSENSUS]["distance_error_km"] == pytest.approx(d("c0", CASABLANCA) / 2, rel=1e-6)
    distances = [r["distance_error_km"] for r in common["rows"]]
    assert distances == sorted(distances)  # every row ranked together
    # --models names human rows too: A, the crowd and one participant all answered c0, c1 and c2
    person = f"human:{STUDY}/{pseudonyms[0]}"
    listed = run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "agl1k", "--common", "--models",
                      f"A,{POOLED},{person}")
    assert listed["n_common"] == 3 and {r["model"] for r in listed["rows"]} == {"A", POOLED, person}
    assert _by_name(listed["rows"])[person]["distance_error_km"] == pytest.approx(
        sum(d(k, PLAN[0][k]) for k in ("c0", "c1", "c2")) / 3, rel=1e-9)

    grouped = run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "both", "--by", "speech", "--ci",
                       "--bootstrap", "100")
    assert {r["model"] for r in grouped["rows"]} >= {POOLED, CONSENSUS}

    assert main(["--db", db, "leaderboard", "--profile", "agl1k", "--humans", "each"]) == 0
    text = capsys.readouterr().out
    for name in (POOLED, CONSENSUS, *(f"human:{STUDY}/{p}" for p in pseudonyms[:3])):
        assert name in text  # whole: never cut
    assert pseudonyms[3] in text and "excluded" in text
    assert main(["--db", db, "leaderboard", "--humans", "some"]) == 2

    result = run_json(capsys, "--db", db, "--json", "compare", "--models", f"{POOLED},A", "--bootstrap", "200")
    assert result["n_common"] == 3 and {m["test"] for m in result["metrics"]} == {"paired_bootstrap"}
    assert main(["--db", db, "compare", "--models", f"{POOLED},A"]) == 0
    assert "mean over its answers" in capsys.readouterr().out
    assert main(["--db", db, "compare", "--models", "human (nobody),A"]) == 1
    assert "no answers for row(s) 'human (nobody)'" in capsys.readouterr().err


def test_practice_guesses_are_never_scored(crowd) -> None:  # type: ignore[no-untyped-def]
    from workbench.studies import web_session, web_study
    from workbench.studies.crowd import crowd_records

    store, _ = crowd
    study, _ = web_study.create_study(store, "crowd-2", clips=["c0"], practice="c3", per_participant=1,
                                      headphone_check="off")
    study, (nonce,) = web_study.invite(store, "crowd-2", 1)
    pid = web_session.enter_by_invite(store, study, nonce)
    state = web_session.consent(store, study, pid)
    while state.stage == "items":
        assert state.item is not None
        state = web_session.submit(store, study, pid, state.item.item_id,
                                   web_session.check_answer({"latitude": 1.0, "longitude": 2.0})).state
    records = crowd_records(store, "crowd-2")
    assert [r["question_id"] for r in records] == ["c0"]  # the practice clip c3 was answered, not scored


def test_long_row_names_are_printed_whole(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main
    from storage import open_store

    name = "a-long-study-name-for-a-crowd-baseline-" + "x" * 25  # 64 characters, the most a name may have
    store = open_store(tmp_path / "project.sqlite")
    pseudonyms = build(store, tmp_path, name)
    store.dispose()
    capsys.readouterr()
    assert main(["--db", str(tmp_path / "project.sqlite"), "leaderboard", "--humans", "each", "--ci",
                 "--bootstrap", "50"]) == 0
    text = capsys.readouterr().out
    for row in (f"human ({name})", f"human ({name}, consensus)", *(f"human:{name}/{p}" for p in pseudonyms[:3])):
        assert row in text
