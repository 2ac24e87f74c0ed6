"""A curator's real day, end to end, on the real AGL1K CSV, ALM output and recordings in ../shared.

import → recordings arrive afterwards → media link → tag → judge against a fake Anthropic API that
misbehaves (wrong base URL, 401, duplicate keys, an HTML 200, 529 on collect) → fit → label edits
from two processes with one conflict → refit → select → export selection → agreement.

Asserted at every step: exit codes, that stdout of every --json command is one JSON value, the
rows stored, that no request was answered twice and that every answer received is stored.

A blind study (needs nothing from ../shared): plan for three annotators → blind labels and location
guesses → two judges against the fake API → alt-test → report, its numbers recomputed here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import deque
from pathlib import Path

import pytest
from sqlmodel import select

from storage import open_store
from storage.models import CategoryLabel, Clip, JudgeCall, JudgeRun, Judgment, LabelHistory, Prediction, Tag
from tests.support.fake_anthropic import FakeAnthropicAPI

pytestmark = [pytest.mark.slow]

KEY = "sk-ant-curator-day-0123456789abcdef"
ESSAOUIRA = "aporee_26839_30948"  # has a Gemini answer in the shared partial result file
BERLIN = "aporee_5201_6631"


@pytest.fixture
def day(shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(shared_dir / "fixtures" / "efficientat-mn04" / "mn04_random_state_dict.pt", models / "mn04_as.pt")
    env = {
        "AGLW_EFFICIENTAT_DIR": str(models),
        "AGLW_ONTOLOGY": str(shared_dir / "audioset" / "ontology.json"),
        "AGLW_AUDIOSET_CLASSES": str(shared_dir / "audioset" / "class_labels_indices.csv"),
        "ANTHROPIC_API_KEY": KEY,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    return {"shared": shared_dir, "tmp": tmp_path, "db": str(tmp_path / "agl1k.sqlite"), "env": env}


def aglw(day: dict, *argv: str, expect: int = 0) -> object:
    """Run `aglw` as a separate process, as a curator's shell does; parse stdout when --json."""
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "--db", day["db"], *argv],
        capture_output=True, text=True, timeout=600, env={**os.environ, **day["env"]},
    )
    assert result.returncode == expect, f"aglw {' '.join(argv)}: exit {result.returncode}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    if "--json" in argv and result.stdout.strip():
        return json.loads(result.stdout)  # exactly one JSON value, or this raises
    if expect:
        assert result.stderr.strip().splitlines()[-1].startswith("aglw: "), result.stderr
    return result


@pytest.mark.integration
def test_a_curators_day_on_the_real_data(day, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    shared = day["shared"]
    media = tmp_path / "media"
    media.mkdir()

    # import: nothing at hand yet
    report = aglw(day, "--json", "import", "dataset", "--format", "agl1k",
                  str(shared / "data" / "agl1k" / "geoLocalization_schema.csv"), "--media-root", str(media))
    assert report["counts"]["clips_stored"] > 1000 and report["counts"]["audio_found"] == 0
    n_clips = report["counts"]["clips_stored"]
    report = aglw(day, "--json", "import", "predictions", "--model", "gemini-3-pro-preview",
                  str(shared / "data" / "agl1k" / "gemini-3-pro-preview_seed_42_ABCD.partial.jsonl"))
    assert report["stored"]
    assert aglw(day, "--json", "clips", "list", "--has-audio") == []

    # the recordings arrive afterwards, under the names the dataset gives them
    shutil.copy(shared / "media" / "agl1k_case2_essaouira.mp3", media / "20020207EssaouiraRempartsMuezzin.mp3")
    (media / "berlin").mkdir()
    shutil.copy(shared / "media" / "agl1k_case4_berlin_blackbird.mp3",
                media / "berlin" / "AmselanDietersFensterJuni2003Edit.mp3")
    linked = aglw(day, "--json", "media", "link")
    assert sorted(e["key"] for e in linked["linked"]) == sorted([BERLIN, ESSAOUIRA])
    assert len(linked["missing"]) == n_clips - 2 and not linked["ambiguous"]
    assert [c["key"] for c in aglw(day, "clips", "list", "--has-audio", "--json")] == sorted([BERLIN, ESSAOUIRA])

    # tag: the two recordings; the clips without audio are named, not failed
    tagged = aglw(day, "--json", "tag", "--model", "mn04_as", "--workers", "1")
    assert tagged["tagged"] == 2 and tagged["failed"] == [] and len(tagged["no_audio"]) == n_clips - 2
    shown = aglw(day, "--json", "clips", "show", ESSAOUIRA)
    assert shown["audio"]["state"] == "ok" and shown["tags"] and all(t["name"] for t in shown["tags"])
    assert shown["predictions"][0]["model"] == "gemini-3-pro-preview"

    # a second ALM answered both clips (written here), so both can be judged in a batch
    second = tmp_path / "second-alm.jsonl"
    second.write_text("".join(json.dumps({
        "question_id": key, "question": "Where?", "task_id": "audio_localization", "reasoning": reasoning,
        "model_output": "{}", "predicted_city": city, "predicted_country": country, "predicted_continent": "Europe",
        "predicted_latitude": lat, "predicted_longitude": lon, "seed": 1,
    }) + "\n" for key, reasoning, city, country, lat, lon in (
        (ESSAOUIRA, "A muezzin's call and sea wind: a coastal Moroccan town.", "Tangier", "Morocco", "35.76", "-5.83"),
        (BERLIN, "A blackbird sings in a quiet courtyard with distant traffic.", "Hamburg", "Germany", "53.55", "9.99"),
    )), encoding="utf-8")
    aglw(day, "--json", "import", "predictions", "--model", "second-alm", str(second))

    with FakeAnthropicAPI(expected_key=KEY) as api:
        # wrong base URL, then a key the API refuses: one line each, exit 1, nothing stored
        aglw(day, "judge", "--alm", "gemini-3-pro-preview", "--base-url", "http://127.0.0.1:9", expect=1)
        api.expected_key = "another-key"
        result = aglw(day, "judge", "--alm", "gemini-3-pro-preview", "--base-url", api.base_url, expect=1)
        assert KEY not in result.stderr  # type: ignore[union-attr]
        api.expected_key = KEY
        # a key given twice is sent once; one HTML 200 becomes a stored failed judgment
        api.script = deque(["ok", "html_body", "ok"])
        judged = aglw(day, "--json", "judge", "--alm", "gemini-3-pro-preview", "--concurrency", "1",
                      "--clips", f"{ESSAOUIRA},{ESSAOUIRA}", "--base-url", api.base_url, expect=1)
        assert sum(j["ok"] for j in judged["judges"]) == 2 and sum(j["failed"] for j in judged["judges"]) == 1
        assert len(api.message_requests()) == 3
        # the rerun resends only the failed judge
        aglw(day, "--json", "judge", "--alm", "gemini-3-pro-preview", "--clips", ESSAOUIRA,
             "--base-url", api.base_url)
        assert len(api.message_requests()) == 4
        # batch on the second ALM; 529 while collecting; a later collect stores everything
        submitted = aglw(day, "--json", "judge", "--alm", "second-alm", "--judges", "haiku", "--mode", "batch",
                         "--base-url", api.base_url)
        assert submitted["judges"][0]["status"] == "submitted" and submitted["judges"][0]["cost_usd"] is None
        api.route_faults["GET /v1/messages/batches"] = deque(["529"] * 10)
        aglw(day, "judge", "--collect", "--base-url", api.base_url, expect=1)
        api.route_faults.clear()
        collected = aglw(day, "--json", "judge", "--collect", "--base-url", api.base_url)
        assert collected["judges"][0]["ok"] == 2 and collected["cost_usd"] > 0
        assert api.count("POST", "/v1/messages/batches") == 1
        answered = [r for r in api.message_requests()]
        bodies = [json.dumps(r.body, sort_keys=True) for r in answered]

    store = open_store(day["db"])
    try:
        with store.session() as s:
            calls = s.exec(select(JudgeCall)).all()
            keys = {c.id: c.key for c in s.exec(select(Clip).where(Clip.key.in_([ESSAOUIRA, BERLIN])))}  # type: ignore[attr-defined]
            judgments = s.exec(select(Judgment)).all()
            linked_predictions = s.exec(select(Prediction).where(Prediction.clip_id.is_(None))).all()  # type: ignore[union-attr]
            n_tags = len(s.exec(select(Tag)).all())
        # every answer received is stored: 4 sync replies (one HTML) and 2 batch results
        assert len(calls) == 6 and sum(c.status == "ok" for c in calls) == 5
        ok_bodies = [b for b, c in zip(bodies, calls) if c.status == "ok"]
        assert len(set(ok_bodies)) == len(ok_bodies)  # no answered request was sent again
        assert {keys[j.clip_id] for j in judgments if j.status == "ok"} == {ESSAOUIRA, BERLIN}
        assert not linked_predictions and n_tags > 0
    finally:
        store.dispose()
    named = aglw(day, "--json", "judgments", "show", "--clip", ESSAOUIRA)
    assert named and all(r["category"] for r in named)

    # fit, then two experts' labels; two processes edit one label, the second is refused
    fit = aglw(day, "--json", "fit", "--alm", "gemini-3-pro-preview")
    assert fit["categories"] and all(c["name"] for c in fit["categories"])
    category = named[0]["category_id"]
    label = ["label", "set", "--clip", ESSAOUIRA, "--category", category, "--expect-version", "0"]
    aglw(day, "--annotator", "ana", "--json", *label, "--contribution", "3")
    refused = aglw(day, "--annotator", "ana", *label, "--contribution", "1", expect=1)
    assert "contribution=3" in refused.stderr and "contribution=1" in refused.stderr  # type: ignore[union-attr]
    for annotator, value in (("ben", "2"), ("chloe", "3")):
        aglw(day, "--annotator", annotator, "label", "set", "--clip", ESSAOUIRA, "--category", category,
             "--contribution", value)
        aglw(day, "--annotator", annotator, "label", "clip", "--clip", ESSAOUIRA, "--rating", "4",
             "--decision", "accept")
    history = aglw(day, "--json", "label", "history", "--clip", ESSAOUIRA)
    assert [(h["annotator"], h["new"]) for h in history if h["field"] == "contribution"] == [
        ("ana", 3), ("ben", 2), ("chloe", 3)]
    assert all(h["clip"] == ESSAOUIRA for h in history)
    store = open_store(day["db"])
    try:
        with store.session() as s:
            stored = {(l.category_id, l.contribution) for l in s.exec(select(CategoryLabel))}
            n_history = len(s.exec(select(LabelHistory)).all())
        assert (category, 3) in stored and n_history == len(history)
    finally:
        store.dispose()

    # refit, select, export (refused over an existing file without --force), agreement
    refit = aglw(day, "--json", "fit", "--alm", "gemini-3-pro-preview")
    assert refit["run_id"] > fit["run_id"]
    selected = aglw(day, "--json", "select", "--size", "1")
    assert selected
    out = tmp_path / "selection.csv"
    aglw(day, "--json", "export", "selection", str(out))
    assert out.is_file()
    before = out.read_bytes()
    aglw(day, "export", "selection", str(out), expect=1)
    assert out.read_bytes() == before
    bundle = tmp_path / "agreement"
    aglw(day, "--json", "agreement", "--out", str(bundle))
    assert any(bundle.iterdir())
    aglw(day, "agreement", "--out", str(bundle), expect=1)  # not mixed into an old bundle


# ---------------------------------------------------------------------------------------------
# A blind study, end to end through `aglw` in-process (needs nothing from ../shared): plan for three
# annotators → blind labels and location guesses → two judges against the fake Anthropic API →
# alt-test → report; the report's numbers are checked against a computation written here from the
# values this test entered and the judgments read straight from the store.

STUDY_KEY = "sk-ant-blind-study-0123456789abcdef"
STUDY_EXPERTS = ("ada", "bea", "cyd")
STUDY_JUDGES = ("opus", "sonnet")
# key → (true latitude, longitude, city, country, continent); the truths are real cities, so the
# offline gazetteer names the guesses' countries as written in GUESSES below
STUDY_CLIPS = {
    "bs0": (48.8566, 2.3522, "Paris", "France", "Europe"),
    "bs1": (52.5200, 13.4050, "Berlin", "Germany", "Europe"),
    "bs2": (35.6762, 139.6503, "Tokyo", "Japan", "Asia"),
    "bs3": (-1.2864, 36.8172, "Nairobi", "Kenya", "Africa"),
    "bs4": (-12.0464, -77.0428, "Lima", "Peru", "South America"),
    "bs5": (-33.8688, 151.2093, "Sydney", "Australia", "Oceania"),
}
STUDY_TAGS = (("/m/09x0r", 0, 0.9), ("/m/07jdr", 1, 0.5), ("/m/04rlf", 2, 0.2))
# the clips each expert labels (nobody labels bs5: judges rate six clips, experts five)
LABELLED = {"ada": ("bs0", "bs1", "bs2", "bs3", "bs4"), "bea": ("bs0", "bs1", "bs2", "bs3", "bs4"),
            "cyd": ("bs0", "bs1", "bs2", "bs3")}
# annotator → (clip, guessed lat, lon, confidence, the guess's country by hand)
GUESSES = {
    "ada": (("bs0", 48.85, 2.35, "0.9", "France"), ("bs1", 48.137, 11.575, "0.6", "Germany"),
            ("bs2", 37.5665, 126.978, "0.3", "Korea, Republic of")),
    "bea": (("bs3", -1.29, 36.82, "0.8", "Kenya"), ("bs4", 4.711, -74.0721, "0.4", "Colombia"),
            ("bs5", -33.87, 151.21, "1.0", "Australia")),
    "cyd": (("bs0", 51.5074, -0.1278, "0.5", "United Kingdom"), ("bs5", -37.8136, 144.9631, "0.7", "Australia")),
}


def _study_project(store, media: Path) -> None:  # type: ignore[no-untyped-def]
    """Six clips with a recording, three tags each and one ALM answer each; no labels, no judges."""
    from storage.models import AlmRun, Dataset, TaggerRun
    from tests.storage.studies_project import link_audio

    with store.write() as s:
        dataset, alm = Dataset(name="blind-study"), AlmRun(model="alm-b")
        tagger = TaggerRun(model_name="mn10_as", status="done")
        s.add_all([dataset, alm, tagger])
        s.flush()
        for i, (key, (lat, lon, city, country, continent)) in enumerate(STUDY_CLIPS.items()):
            clip = Clip(dataset_id=dataset.id, key=key, latitude=lat, longitude=lon, city=city, country=country,
                        continent=continent, human_sounds=0.9)
            s.add(clip)
            s.flush()
            s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id=key, true_latitude=lat,
                             true_longitude=lon, predicted_latitude=f"{lat + 3 * i:.4f}",
                             predicted_longitude=f"{lon:.4f}",
                             predicted_city="Somewhere", predicted_country="Elsewhere",
                             reasoning=f"Speech and a train in clip {i}; the announcement sounds like {country}."))
            for audioset_id, index, probability in STUDY_TAGS:
                s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=index, audioset_id=audioset_id,
                          probability=probability))
    link_audio(store, media, list(STUDY_CLIPS))


def _geodesic_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """The WGS-84 geodesic (Karney, through geographiclib: not the product's PROJ call)."""
    from geographiclib.geodesic import Geodesic

    return Geodesic.WGS84.Inverse(lat1, lon1, lat2, lon2)["s12"] / 1000


def _alt_test_by_hand(llm: dict, humans: dict[str, dict], metric: str, epsilon: float, alpha: float,
                      min_items: int) -> dict:
    """Calderon et al.'s procedure, written out: leave-one-out scores, one-sided t-test against ε,
    Benjamini–Yekutieli (statsmodels' fdr_by) over the tested annotators."""
    import warnings

    import numpy as np
    from scipy.stats import ttest_1samp
    from statsmodels.stats.multitest import multipletests

    def score(value, others):  # type: ignore[no-untyped-def]
        if metric == "accuracy":
            return float(np.mean([value == o for o in others]))
        return -float(np.sqrt(np.mean([(value - o) ** 2 for o in others])))

    kept = {u for u in llm if sum(u in h for h in humans.values()) >= 2}
    tested, p_values, llm_shares = [], [], []
    n_units = {}
    for name, mine in humans.items():
        items = [u for u in mine if u in kept]
        n_units[name] = len(items)
        if len(items) < min_items:
            continue
        llm_wins, human_wins = [], []
        for u in items:
            others = [h[u] for other, h in humans.items() if other != name and u in h]
            s_llm, s_human = score(llm[u], others), score(mine[u], others)
            llm_wins.append(int(s_llm >= s_human))
            human_wins.append(int(s_human >= s_llm))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            p = ttest_1samp(np.subtract(human_wins, llm_wins), epsilon, alternative="less").pvalue
        tested.append(name)
        p_values.append(float(p))
        llm_shares.append(float(np.mean(llm_wins)))
    rejected = multipletests(np.nan_to_num(p_values, nan=1.0), alpha=alpha, method="fdr_by")[0]
    return {"winning_rate": float(np.mean(rejected)), "n_units": len(kept), "n_humans": len(humans),
            "tested": tested, "rejected": dict(zip(tested, map(bool, rejected))),
            "advantage_probability": float(np.mean(llm_shares)), "n_units_of": n_units}


def test_a_blind_study_from_plan_to_report(  # type: ignore[no-untyped-def]
        tmp_path: Path, sqlite_path: Path, capsys, monkeypatch) -> None:
    import numpy as np

    from cli.main import main
    from storage.models import Annotator, ClipLabel, HumanGuess

    monkeypatch.setenv("ANTHROPIC_API_KEY", STUDY_KEY)
    store = open_store(sqlite_path)
    try:
        _study_project(store, tmp_path / "media")
    finally:
        store.dispose()

    def aglw_in(*argv: str, annotator: str | None = None, expect: int = 0) -> object:
        who = ["--annotator", annotator] if annotator else []
        code = main(["--db", str(sqlite_path), *who, *argv])
        out, err = capsys.readouterr()
        assert code == expect, f"aglw {' '.join(argv)}: exit {code}\n{err}"
        assert "Traceback" not in err, err
        return json.loads(out) if "--json" in argv else out

    # plan: every clip (all have audio) seen by all three, blind
    plan = aglw_in("--json", "study", "plan", "--name", "blind-1", "--annotators", ",".join(STUDY_EXPERTS),
                   "--overlap", "3")
    assert plan["blind"] and plan["n_clips"] == len(STUDY_CLIPS) and not plan["excluded"]
    assert {a["annotator"]: a["assigned"] for a in plan["annotators"]} == {n: len(STUDY_CLIPS) for n in STUDY_EXPERTS}

    # blind labels: contribution and effect per category, each expert her own noise (seeded)
    rng = np.random.default_rng(27)
    entered: dict[str, dict[tuple[str, str], tuple[int, str]]] = {n: {} for n in STUDY_EXPERTS}
    for name, noise in zip(STUDY_EXPERTS, (0.1, 0.35, 0.7)):
        for key in LABELLED[name]:
            for k, (category, _, _) in enumerate(STUDY_TAGS):
                value = 2 if k == 0 else 0
                if rng.random() < noise:
                    value = int(rng.integers(0, 4))
                effect = "helped" if value >= 2 else ("misled" if rng.random() < noise / 2 else "neutral")
                aglw_in("label", "set", "--clip", key, "--category", category, "--contribution", str(value),
                        "--effect", effect, annotator=name)
                entered[name][(key, category)] = (value, effect)
    # guesses, blind to the truth
    for name, guesses in GUESSES.items():
        for key, lat, lon, confidence, _ in guesses:
            aglw_in("study", "guess", "--clip", key, "--lat", str(lat), "--lon", str(lon), "--confidence", confidence,
                    annotator=name)
    progress = aglw_in("--json", "study", "progress")
    done = {a["annotator"]: a["done"] for a in progress["annotators"]}
    assert done == {n: len(set(LABELLED[n]) | {g[0] for g in GUESSES[n]}) for n in STUDY_EXPERTS}

    # two judges through the fake Anthropic API
    with FakeAnthropicAPI(expected_key=STUDY_KEY) as api:
        judged = aglw_in("--json", "judge", "--alm", "alm-b", "--judges", ",".join(STUDY_JUDGES),
                         "--base-url", api.base_url)
        assert [(j["judge"], j["ok"], j["failed"]) for j in judged["judges"]] == [
            (j, len(STUDY_CLIPS), 0) for j in STUDY_JUDGES]

    # the independent computation: labels as entered, judgments as stored
    store = open_store(sqlite_path)
    try:
        with store.session() as s:
            key_of = {c.id: c.key for c in s.exec(select(Clip))}
            judge_of = {r.id: r.judge_name for r in s.exec(select(JudgeRun))}
            judged_rows = [(judge_of[j.judge_run_id], key_of[j.clip_id], j.category_id, j.contribution, j.effect)
                           for j in s.exec(select(Judgment).where(Judgment.status == "ok"))]
            pseudonym = {a.name: a.pseudonym for a in s.exec(select(Annotator))}
            stored_labels = {(a, key_of[l.clip_id], l.category_id): (l.contribution, l.effect)
                             for l, a in s.exec(select(CategoryLabel, Annotator.name).join(
                                 Annotator, Annotator.id == CategoryLabel.annotator_id))}
            assert not s.exec(select(ClipLabel)).all() and len(s.exec(select(HumanGuess)).all()) == 8
    finally:
        store.dispose()
    # nothing entered was lost or changed on the way
    assert stored_labels == {(n, k, c): v for n, values in entered.items() for (k, c), v in values.items()}
    expert_clips = {k for values in entered.values() for k, _ in values}
    judge_clips = {k for _, k, _, _, _ in judged_rows}
    assert (len(expert_clips), len(judge_clips)) == (5, 6)

    epsilon, alpha, min_items = 0.2, 0.05, 12
    expected: dict[tuple[str, str], dict] = {}
    for label, metric, index in (("contribution", "neg_rmse", 0), ("effect", "accuracy", 1)):
        # units as the product names them: clip|category; experts by pseudonym, as the ratings are
        humans = {f"expert:{pseudonym[n]}": {f"{k}|{c}": (float(v[index]) if index == 0 else v[index])
                                             for (k, c), v in values.items()}
                  for n, values in entered.items()}
        for judge in STUDY_JUDGES:
            llm = {f"{k}|{c}": (float(v) if index == 0 else e) for j, k, c, v, e in judged_rows if j == judge}
            expected[(label, judge)] = _alt_test_by_hand(llm, humans, metric, epsilon, alpha, min_items)

    def check_alt_rows(rows: list[dict]) -> None:
        by = {(r["label"], r["llm"]): r for r in rows}
        for (label, judge), want in expected.items():
            got = by[(label, f"judge:{judge}")]
            assert got["refused"] is None, got
            assert got["winning_rate"] == pytest.approx(want["winning_rate"]), (label, judge)
            assert got["advantage_probability"] == pytest.approx(want["advantage_probability"]), (label, judge)
            assert (got["n_units"], got["n_humans"]) == (want["n_units"], want["n_humans"]) == (15, 3)
            assert got["passed"] == (want["winning_rate"] >= 0.5)
            tested = {a["annotator"]: a for a in got["annotators"] if not a["skipped"]}
            assert sorted(tested) == sorted(want["tested"])
            assert {a: t["rejected"] for a, t in tested.items()} == want["rejected"], (label, judge)
            assert {a["annotator"]: a["n_units"] for a in got["annotators"]} == want["n_units_of"]

    alt = aglw_in("--json", "study", "alt-test", "--alm", "alm-b", "--min-items", str(min_items))
    assert (alt["epsilon"], alt["alpha"]) == (epsilon, alpha)
    check_alt_rows(alt["tests"])

    out = tmp_path / "report"
    report = aglw_in("--json", "study", "report", "--out", str(out), "--min-items", str(min_items),
                     "--bootstrap", "50", "--alm", "alm-b")
    check_alt_rows(report["alt_tests"])
    assert (out / "report.html").is_file()
    both = expert_clips & judge_clips
    assert (f"We compared {len(STUDY_JUDGES)} LLM judge(s) with {len(STUDY_EXPERTS)} human expert(s) on the "
            f"{len(both)} clip(s) both rated (experts labelled {len(expert_clips)} clip(s), judges rated "
            f"{len(judge_clips)}).") in report["methods"]

    # humans as localizers: each annotator's row and the pooled one, by hand
    import pandas as pd

    table = pd.read_csv(out / "tables" / "human_localizers.csv").set_index("model")
    groups = {f"human:{pseudonym[n]}": list(g) for n, g in GUESSES.items()}
    groups["human (pooled)"] = [g for gs in GUESSES.values() for g in gs]
    assert sorted(table.index) == sorted(groups)
    for model, guesses in groups.items():
        row = table.loc[model]
        km = [_geodesic_km(STUDY_CLIPS[k][0], STUDY_CLIPS[k][1], lat, lon) for k, lat, lon, _, _ in guesses]
        assert row["n"] == len(guesses) and row["n_dataset"] == len(STUDY_CLIPS)
        assert row["distance_error_km"] == pytest.approx(np.mean(km), rel=1e-9)
        assert row["reject_rate"] == 0  # a guess is never a refusal
        assert row["within_1000km"] == pytest.approx(np.mean([d < 1000 for d in km]))
        assert row["country_acc"] == pytest.approx(np.mean([STUDY_CLIPS[k][3] == c for k, *_, c in guesses]))
        assert row["mean_confidence"] == pytest.approx(np.mean([float(c) for *_, c, _ in guesses]))
