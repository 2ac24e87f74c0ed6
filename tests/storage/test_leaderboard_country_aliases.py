"""The country metrics apply the country alias table (issue 30): a clip the dataset files under
China whose coordinates lie in Taiwan counts an answer "Taiwan" as correct when the table
accepts that convention, through the one rule `check locations` asks
(workbench.country_aliases.alias_for), and every output says how many answers it changed and of
how many. Without a table (or with an empty one) every number stays as it was."""

from __future__ import annotations

import math

import pytest

from cli.main import main
from tests.cli_helpers import run_json
from tests.storage.test_import_dataset import clip_row, write_csv
from tests.storage.test_leaderboard_counting import write
from workbench.country_aliases import alias_table, template_path
from workbench.importing import import_dataset, import_predictions
from workbench.metrics.service import leaderboard, model_metrics

TAIPEI = (25.0330, 121.5654)
BEIJING = (39.9042, 116.4074)
# key -> (lat, lon, city, stated country, continent): both filed under China, as AGL1K does
CLIPS = {"t0": (*TAIPEI, "Taipei", "China", "Asia"), "b0": (*BEIJING, "Beijing", "China", "Asia")}
TEMPLATE_ALIAS = "CN covers TW (AGL1K files recordings made in Taiwan under China)"


def answer(key: str, country: str) -> dict:
    lat, lon, city, stated, continent = CLIPS[key]
    return {"question_id": key, "true_latitude": lat, "true_longitude": lon, "true_city": city,
            "true_country": stated, "true_continent": continent, "predicted_latitude": lat,
            "predicted_longitude": lon, "predicted_city": city, "predicted_country": country,
            "predicted_continent": "Asia"}


@pytest.fixture
def db(sqlite_path, tmp_path):  # type: ignore[no-untyped-def]
    """Model "alm" answers Taiwan for both clips (right for Taipei, wrong for Beijing); model
    "plain" answers China for both (right as the dataset states it)."""
    from storage import open_store

    store = open_store(sqlite_path)
    rows = [clip_row(i, key=k, latitude=v[0], longitude=v[1], city=v[2], country=v[3], continent=v[4])
            for i, (k, v) in enumerate(CLIPS.items())]
    import_dataset(store, write_csv(tmp_path / "d.csv", rows), name="d")
    import_predictions(store, "alm", write(tmp_path / "alm.jsonl", [answer("t0", "Taiwan"), answer("b0", "Taiwan")]))
    import_predictions(store, "plain", write(tmp_path / "plain.jsonl", [answer("t0", "China"), answer("b0", "China")]))
    store.dispose()
    return str(sqlite_path)


def _configure(text: str) -> None:
    from workbench.config import config_dir

    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "country_aliases.toml").write_text(text, encoding="utf-8")


def _board(store, table, profile="iso") -> dict[str, dict]:  # type: ignore[no-untyped-def]
    return {r["model"]: r for r in leaderboard(store, profile, aliases=table).to_dict(orient="records")}


def test_an_accepted_alias_counts_the_covered_country_as_correct_in_both_paths(db) -> None:  # type: ignore[no-untyped-def]
    from storage import open_store

    store = open_store(db)
    try:
        table = alias_table(template_path())
        rows = _board(store, table)
        alm = model_metrics(store, "alm", "iso", aliases=table)
        # Taipei answered Taiwan: correct under CN covers TW; Beijing answered Taiwan: still wrong.
        assert rows["alm"]["country_acc"] == alm["country_acc"] == 0.5
        assert rows["alm"]["country_alias_n"] == alm["country_alias_n"] == 1
        assert rows["alm"]["continent_alias_n"] == alm["continent_alias_n"] == 0  # Asia either way
        assert rows["plain"]["country_acc"] == 1.0 and rows["plain"]["country_alias_n"] == 0
        # the agl1k profile already files Taiwan under China: the table changes nothing there
        agl1k = _board(store, table, "agl1k")["alm"]
        assert agl1k["country_acc"] == model_metrics(store, "alm", "agl1k", aliases=table)["country_acc"] == 1.0
        assert agl1k["country_alias_n"] == 0
        # the same clip set through both paths with --ci: the intervals follow the counted answers
        with_ci = leaderboard(store, "iso", ci=True, bootstrap=50, aliases=table)
        assert with_ci.set_index("model").loc["alm", "country_acc"] == 0.5
    finally:
        store.dispose()


def test_without_a_table_or_with_an_empty_one_nothing_changes(db, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from storage import open_store

    store = open_store(db)
    try:
        empty = tmp_path / "empty.toml"
        empty.write_text("# no aliases\n", encoding="utf-8")
        for table in (None, alias_table(), alias_table(empty)):
            rows = _board(store, table)
            alm = model_metrics(store, "alm", "iso", aliases=table)
            assert rows["alm"]["country_acc"] == alm["country_acc"] == 0.0
            assert "country_alias_n" not in rows["alm"] and "country_alias_n" not in alm
    finally:
        store.dispose()


def test_no_geocoding_unless_an_alias_touches_the_answers(db, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from storage import open_store

    def refuse(points):  # type: ignore[no-untyped-def]
        raise AssertionError(f"geocoded {len(points)} position(s) for an alias no answer touches")

    monkeypatch.setattr("workbench.gazetteer.reverse_geocode", refuse)
    other = tmp_path / "other.toml"
    other.write_text('[[alias]]\nstated = "FR"\ncovers = "GF"\n', encoding="utf-8")
    store = open_store(db)
    try:
        rows = _board(store, alias_table(other))
        assert rows["alm"]["country_acc"] == 0.0 and rows["alm"]["country_alias_n"] == 0
    finally:
        store.dispose()


def test_cli_applies_the_configured_table_and_says_how_many_answers_it_changed(db, capsys) -> None:  # type: ignore[no-untyped-def]
    before = run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "iso")
    assert before["alias_table"] is None
    assert {r["model"]: r["country_acc"] for r in before["rows"]} == {"plain": 1.0, "alm": 0.0}
    assert "country_alias_n" not in before["rows"][0]
    assert "country_alias_n" not in run_json(capsys, "--db", db, "--json", "metrics", "--model", "alm",
                                             "--profile", "iso")
    capsys.readouterr()
    assert main(["--db", db, "leaderboard", "--profile", "iso"]) == 0
    assert "alias table" not in capsys.readouterr().out

    _configure(template_path().read_text(encoding="utf-8"))
    after = run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "iso")
    rows = {r["model"]: r for r in after["rows"]}
    assert rows["alm"]["country_acc"] == 0.5 and rows["alm"]["country_alias_n"] == 1 and rows["alm"]["n"] == 2
    assert after["alias_table"]["aliases"] == [TEMPLATE_ALIAS]
    assert after["alias_table"]["file"].endswith("country_aliases.toml")
    metrics = run_json(capsys, "--db", db, "--json", "metrics", "--model", "alm", "--profile", "iso")
    assert metrics["country_acc"] == 0.5 and metrics["country_alias_n"] == 1
    assert metrics["alias_table"]["aliases"] == [TEMPLATE_ALIAS]

    capsys.readouterr()
    assert main(["--db", db, "leaderboard"]) == 0  # both profiles side by side
    text = capsys.readouterr().out
    assert "country (iso): 1 of 2 answers of alm counted correct under the alias table" in text
    assert TEMPLATE_ALIAS in text
    assert main(["--db", db, "metrics", "--model", "alm", "--profile", "iso"]) == 0
    text = capsys.readouterr().out
    assert "country: 1 of 2 answers counted correct under the alias table" in text
    assert "50.0 %" in text  # the house's accuracy format (workbench.formatting)


def test_cli_aliases_option_names_a_table(db, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    rows = run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "iso", "--aliases",
                    str(template_path()))["rows"]
    assert {r["model"]: r["country_alias_n"] for r in rows} == {"alm": 1, "plain": 0}
    metrics = run_json(capsys, "--db", db, "--json", "metrics", "--model", "alm", "--profile", "iso",
                       "--aliases", str(template_path()))
    assert metrics["country_alias_n"] == 1 and not math.isnan(metrics["country_acc"])
    capsys.readouterr()
    assert main(["--db", db, "leaderboard", "--aliases", str(tmp_path / "missing.toml")]) == 1
    assert "no such alias table" in capsys.readouterr().err


def test_compare_and_the_human_localizers_follow_the_same_table(db, capsys) -> None:  # type: ignore[no-untyped-def]
    """`aglw compare` and a human's guess (its country from the gazetteer: Taiwan) are counted
    as the models' answers are in the leaderboard."""
    assert main(["--db", db, "--annotator", "ada", "study", "guess", "--clip", "t0", "--lat", "25.04",
                 "--lon", "121.56"]) == 0
    compare = run_json(capsys, "--db", db, "--json", "compare", "--models", "alm,plain", "--profile", "iso",
                       "--bootstrap", "10")
    assert {m["metric"]: m["a"] for m in compare["metrics"]}["country_acc"] == 0.0 and "alias_table" not in compare
    humans = [r for r in run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "iso")["rows"]
              if r["model"] == "human (pooled)"]
    assert humans[0]["country_acc"] == 0.0

    _configure(template_path().read_text(encoding="utf-8"))
    compare = run_json(capsys, "--db", db, "--json", "compare", "--models", "alm,plain", "--profile", "iso",
                       "--bootstrap", "10")
    assert {m["metric"]: m["a"] for m in compare["metrics"]}["country_acc"] == 0.5
    assert compare["alias_table"]["country_alias_n"] == [1, 0] and compare["n_common"] == 2
    rows = {r["model"]: r for r in run_json(capsys, "--db", db, "--json", "leaderboard", "--profile", "iso")["rows"]}
    assert rows["human (pooled)"]["country_acc"] == 1.0 and rows["human (pooled)"]["country_alias_n"] == 1
    localizers = run_json(capsys, "--db", db, "--json", "study", "localizers", "--profile", "iso")["rows"]
    assert {r["model"]: r["country_alias_n"] for r in localizers}["human (pooled)"] == 1
    capsys.readouterr()
    assert main(["--db", db, "compare", "--models", "alm,plain", "--profile", "iso", "--bootstrap", "10"]) == 0
    assert "country: 1 of 2 answers of alm counted correct under the alias table" in capsys.readouterr().out
