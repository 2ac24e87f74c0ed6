"""The agreement bundle of a small project: two experts, three judges (one re-run), a curation fit."""

from __future__ import annotations

import io
import json
import sys
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread
from sklearn.metrics import cohen_kappa_score

from storage.models import (
    AlmRun,
    Annotator,
    CategoryLabel,
    Clip,
    ClipLabel,
    CurationCategoryResult,
    CurationClipResult,
    CurationRun,
    Dataset,
    JudgeRun,
    Judgment,
)
from workbench.agreement.report import FIGURE_DPI, FIGURE_SIZE_IN
from cli.main import main

EXPERT_NAMES = ("Dr Alice Quenneville", "Prof Bartholomew Xuereb-Lindqvist")
CATEGORIES = ["/m/09x0r", "/m/04rlf", "/m/0jbk", "/m/059j3w"]
ROOTS = {"/m/09x0r": "Human sounds", "/m/04rlf": "Music", "/m/0jbk": "Animal", "/m/059j3w": "Natural sounds"}
EFFECTS = ["helped", "misled", "neutral"]
N_CLIPS = 36


def _populate(store) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(11)
    with store.write() as s:
        dataset = Dataset(name="agl1k-test")
        alm = AlmRun(model="alm-x")
        s.add_all([dataset, alm])
        s.flush()
        clips = [
            Clip(dataset_id=dataset.id, key=f"clip{i:03d}", continent=["Europe", "Asia", "Africa"][i % 3],
                 human_sounds=0.3 if i % 2 else 0.0)
            for i in range(N_CLIPS)
        ]
        s.add_all(clips)
        experts = [Annotator(name=n, pseudonym=f"annotator-{k:04x}") for k, n in enumerate(EXPERT_NAMES)]
        s.add_all(experts)
        runs = [JudgeRun(judge_name=j, provider="test", model_id=j, prompt_version="v1", alm_run_id=None, status="done")
                for j in ("opus", "sonnet", "haiku")]
        s.add_all(runs)
        s.flush()
        for run in runs:
            run.alm_run_id = alm.id
        rerun = JudgeRun(judge_name="opus", provider="test", model_id="opus", prompt_version="v1", alm_run_id=alm.id,
                         status="done")
        s.add(rerun)
        s.flush()
        # the re-run is newer than the first opus run: it is opus's rating, the first run the re-test
        truth = {(c.id, cat): int(rng.integers(0, 4)) for c in clips for cat in CATEGORIES}
        for run in runs + [rerun]:
            for (clip_id, cat), value in truth.items():
                noisy = int(np.clip(value + rng.integers(-1, 2), 0, 3))
                failed = rng.random() < 0.05
                s.add(Judgment(judge_run_id=run.id, clip_id=clip_id, category_id=cat,
                               contribution=None if failed else noisy, effect=None if failed else EFFECTS[noisy % 3],
                               status="failed" if failed else "ok"))
        for k, expert in enumerate(experts):
            labelled = clips if k == 0 else clips[: N_CLIPS // 2]  # the second expert: doubly annotated half
            for clip in labelled:
                for cat in CATEGORIES:
                    value = int(np.clip(truth[(clip.id, cat)] + rng.integers(-1, 2), 0, 3))
                    s.add(CategoryLabel(annotator_id=expert.id, clip_id=clip.id, category_id=cat, contribution=value,
                                        effect=EFFECTS[value % 3], polarity=["P", "N", "neutral"][value % 3]))
                s.add(ClipLabel(annotator_id=expert.id, clip_id=clip.id, rating=int(rng.integers(1, 6)),
                                decision=["accept", "reject", "unsure"][int(rng.integers(0, 3))]))
        curation = CurationRun(input_fingerprint="test", alm_run_id=alm.id, parameters={"theta": 0.0})
        s.add(curation)
        s.flush()
        for cat, polarity in zip(CATEGORIES, ["P", "N", "neutral", "insufficient"]):
            s.add(CurationCategoryResult(run_id=curation.id, category_id=cat, a=0.5, a_bar=0.4, support=10,
                                         fitted_polarity=polarity, polarity=polarity))
        for clip in clips:
            score = float(rng.normal())
            s.add(CurationClipResult(run_id=curation.id, clip_id=clip.id, localizability=score, percentile=50.0,
                                     candidate=score > 0))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One populated project exported twice through the CLI (pseudonymised and revealed)."""
    from storage import open_store

    base = tmp_path_factory.mktemp("agreement")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGLW_CONFIG_DIR", str(base / "config"))
        patch.setenv("AGLW_CACHE_DIR", str(base / "cache"))
        store = open_store(base / "project.sqlite")
        _populate(store)
        db = str(base / "project.sqlite")
        hidden = main(["--db", db, "agreement", "--out", str(base / "hidden"), "--bootstrap", "200", "--seed", "3",
                       "--ontology", str(_ontology(base))])
        shown = main(["--db", db, "agreement", "--out", str(base / "shown"), "--bootstrap", "20",
                      "--reveal-annotators"])
        yield store, base, (hidden, shown)
        store.dispose()


def _ontology(base: Path) -> Path:
    entries = [{"id": f"/root/{i}", "name": root, "child_ids": [cat]} for i, (cat, root) in enumerate(ROOTS.items())]
    entries += [{"id": cat, "name": cat, "child_ids": []} for cat in ROOTS]
    path = base / "ontology.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


@pytest.fixture
def bundle(project):  # type: ignore[no-untyped-def]
    _, base, (hidden_rc, _) = project
    assert hidden_rc == 0
    return base / "hidden", json.loads((base / "hidden" / "manifest.json").read_text())


def _all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_bundle_files_and_consistency(bundle) -> None:  # type: ignore[no-untyped-def]
    out, manifest = bundle
    for name in ("ratings_long.csv", "ratings_long.parquet", "ratings_wide.csv", "ratings_wide.parquet",
                 "coefficients.csv", "coefficients.parquet", "tables.md", "tables.tex", "manifest.json",
                 "ratings_retest.csv", "figures/bland_altman_contribution.png", "figures/per_category_effect.png",
                 "figures/per_category_contribution.png"):
        assert (out / name).stat().st_size > 0, name
    for judge in ("opus", "sonnet", "haiku"):
        assert (out / f"figures/confusion_judge_{judge}_effect.png").is_file()
    long = pd.read_csv(out / "ratings_long.csv", dtype=str, keep_default_na=False)
    wide = pd.read_csv(out / "ratings_wide.csv", dtype=str)
    rater_columns = [c for c in wide.columns if c not in ("label_type", "unit", "clip_key", "category_id")]
    assert int(wide[rater_columns].notna().sum().sum()) == len(long)
    assert len(wide) == long.groupby(["label_type", "unit"]).ngroups
    assert pd.read_parquet(out / "ratings_long.parquet").shape == long.shape
    coefficients = pd.read_csv(out / "coefficients.csv")
    assert pd.read_parquet(out / "coefficients.parquet").shape == coefficients.shape
    manifest_json = json.loads((out / "manifest.json").read_text())
    import hashlib

    assert manifest_json["data_fingerprint"] == hashlib.sha256((out / "ratings_long.csv").read_bytes()).hexdigest()
    assert manifest_json["parameters"]["bootstrap"] == 200 and manifest_json["parameters"]["seed"] == 3
    assert any("missing, not 0" in d for d in manifest_json["coding_decisions"])
    assert manifest == manifest_json
    assert manifest_json["parameters"]["root_breakdown"] is True
    # units and raters: judges, experts (pseudonymised), derived raters
    raters = set(long["rater"])
    assert {"judge:opus", "judge:sonnet", "judge:haiku", "expert:annotator-0000", "expert:annotator-0001",
            "judge_majority", "judge_mean", "expert_consensus", "curation_fit"} <= raters
    assert set(long["label_type"]) == {"contribution", "effect", "polarity", "rating", "decision", "localizability"}
    # failed judgments are missing, not 0
    contribution = long[long["label_type"] == "contribution"]
    assert (contribution["rater"] == "judge:haiku").sum() < N_CLIPS * len(CATEGORIES)
    # expert-expert agreement only on the doubly annotated clips
    ee = coefficients[(coefficients["section"] == "expert-expert") & (coefficients["rater_a"] == "expert:annotator-0000")
                      & (coefficients["rater_b"] == "expert:annotator-0001") & (coefficients["subset_kind"] == "all")
                      & (coefficients["label"] == "effect") & (coefficients["coefficient"] == "cohen_kappa")]
    assert ee["n_units"].item() == N_CLIPS // 2 * len(CATEGORIES)
    assert {"judge-judge", "expert-judge", "test-retest", "all-raters", "curation-expert"} <= set(coefficients["section"])
    assert {"all", "category", "root", "continent", "speech"} <= set(coefficients["subset_kind"])
    assert "fleiss_kappa" in set(coefficients["coefficient"])
    assert "changed_fraction" in set(coefficients["coefficient"])


def test_coefficients_match_the_libraries_on_the_long_table(bundle) -> None:  # type: ignore[no-untyped-def]
    out, _ = bundle
    long = pd.read_csv(out / "ratings_long.csv", dtype=str, keep_default_na=False)
    coefficients = pd.read_csv(out / "coefficients.csv")
    for label, weights, name in (("effect", None, "cohen_kappa"), ("contribution", "quadratic", "weighted_kappa_quadratic")):
        part = long[long["label_type"] == label]
        a = part[part["rater"] == "judge:opus"].set_index("unit")["value"]
        b = part[part["rater"] == "judge:sonnet"].set_index("unit")["value"]
        common = a.index.intersection(b.index)
        labels = ["0", "1", "2", "3"] if label == "contribution" else EFFECTS
        expected = cohen_kappa_score(a[common], b[common], labels=labels, weights=weights)
        row = coefficients[(coefficients["label"] == label) & (coefficients["subset_kind"] == "all")
                           & (coefficients["coefficient"] == name)
                           & (coefficients[["rater_a", "rater_b"]].apply(set, axis=1) == {"judge:opus", "judge:sonnet"})]
        assert row["value"].item() == pytest.approx(expected)
        assert row["n_units"].item() == len(common)
        assert row["ci_low"].item() <= row["value"].item() <= row["ci_high"].item()


def test_markdown_numbers_equal_the_csv(bundle) -> None:  # type: ignore[no-untyped-def]
    """tables.md names raters and coefficients as a reader knows them, 3 decimals; the CSV keeps keys and full precision."""
    from workbench.agreement.names import readable
    from workbench.formatting import column_title

    out, _ = bundle
    coefficients = readable(pd.read_csv(out / "coefficients.csv"))
    markdown = (out / "tables.md").read_text()
    assert "Cohen's κ" in markdown and "weighted κ (quadratic)" in markdown and "cohen_kappa" not in markdown
    assert "judge:" not in markdown and "judge_mean" not in markdown
    checked = 0
    header: list[str] = []
    for line in markdown.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "section":
            # the reader's titles ("rater A", "units", "95 % CI"); the CSV keeps the keys
            keys = {column_title(k): k for k in ("section", "rater_a", "rater_b", "coefficient", "n_units",
                                                   "n_raters", "value", "ci_95", "reason")}
            header = [keys[c] for c in cells]
            continue
        if set(cells[0]) <= {"-", ":"}:
            continue
        row = dict(zip(header, cells))
        section, rater_a, rater_b, coefficient = row["section"], row["rater_a"], row["rater_b"], row["coefficient"]
        n_units, value, ci = row["n_units"], row["value"], row["ci_95"]
        label = _label_of_line(markdown, line)
        match = coefficients[(coefficients["section"] == section) & (coefficients["rater_a"] == rater_a)
                             & (coefficients["rater_b"] == rater_b) & (coefficients["coefficient"] == coefficient)
                             & (coefficients["subset_kind"] == "all") & (coefficients["label"] == label)]
        assert len(match) == 1, line
        assert int(n_units) == match["n_units"].item()
        assert int(row["n_raters"]) == match["n_raters"].item()
        # a value is printed, or the reason why not
        assert bool(value) != bool(row["reason"]), line
        if value:
            assert re.fullmatch(r"-?\d+\.\d{3}", value), value
            assert float(value) == pytest.approx(match["value"].item(), abs=5e-4)
            low, high = (float(x) for x in re.findall(r"-?\d+\.\d+", ci))
            assert low == pytest.approx(match["ci_low"].item(), abs=5e-4)
            assert high == pytest.approx(match["ci_high"].item(), abs=5e-4)
        checked += 1
    assert checked > 20
    assert "\\begin{longtable}" in (out / "tables.tex").read_text()


def _label_of_line(markdown: str, line: str) -> str:
    label = None
    for current in markdown.splitlines():
        if current.startswith("## "):
            label = current[3:].strip()
        if current == line:
            return label
    raise AssertionError(line)


def test_figures_render_at_the_expected_size(bundle) -> None:  # type: ignore[no-untyped-def]
    out, _ = bundle
    figures = sorted((out / "figures").glob("*.png"))
    assert len(figures) >= 6
    for path in figures:
        image = imread(io.BytesIO(path.read_bytes()), format="png")
        assert image.shape[:2] == (FIGURE_SIZE_IN[1] * FIGURE_DPI, FIGURE_SIZE_IN[0] * FIGURE_DPI), path.name
        assert float(image[..., :3].std()) > 0.01, path.name  # not a blank canvas


def test_bootstrap_is_reproducible(project) -> None:  # type: ignore[no-untyped-def]
    from workbench.agreement.analysis import compute_coefficients
    from workbench.agreement.units import load_ratings

    store = project[0]
    data = load_ratings(store)
    tables = [compute_coefficients(data.ratings, data.clips, bootstrap=100, seed=seed, retest=data.retest)
              for seed in (5, 5, 6)]
    pd.testing.assert_frame_equal(tables[0], tables[1])
    assert not np.allclose(tables[0]["ci_low"].fillna(9), tables[2]["ci_low"].fillna(9))
    pd.testing.assert_series_equal(tables[0]["value"], tables[2]["value"])
    assert (tables[0]["n_boot"].max()) == 100


def test_annotator_names_only_when_revealed(project) -> None:  # type: ignore[no-untyped-def]
    _, base, (hidden_rc, shown_rc) = project
    assert hidden_rc == 0 and shown_rc == 0
    hidden = _all_bytes(base / "hidden")
    for name in EXPERT_NAMES:
        for encoding in ("utf-8", "utf-16-le"):
            assert name.encode(encoding) not in hidden
        assert name.split()[-1].encode() not in hidden
    assert json.loads((base / "shown" / "manifest.json").read_text())["parameters"]["reveal_annotators"] is True
    shown = _all_bytes(base / "shown")
    for name in EXPERT_NAMES:
        assert name.encode() in shown


def test_json_output_and_errors(store, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:  # type: ignore[no-untyped-def]
    assert main(["--db", str(store.sqlite_path), "agreement", "--out", str(tmp_path / "x")]) == 1
    assert "no judge or expert ratings" in capsys.readouterr().err
    assert main(["--db", str(store.sqlite_path), "agreement"]) == 2  # a usage error (issue 40)
    assert "exactly one of --out" in capsys.readouterr().err
    _populate(store)
    assert main(["--db", str(store.sqlite_path), "--json", "agreement", "--out", str(tmp_path / "y"),
                 "--bootstrap", "0"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["out"] == str(tmp_path / "y")
    assert result["parameters"]["bootstrap"] == 0
    assert result["n_units"]["effect"] == N_CLIPS * len(CATEGORIES)


@pytest.mark.postgres
def test_export_from_postgresql_equals_the_sqlite_export(pg_url: str, tmp_path: Path) -> None:
    """The same project on PostgreSQL and on SQLite gives the same bundle, byte for byte in its tables."""
    from storage import open_store

    for url in (pg_url, str(tmp_path / "project.sqlite")):
        store = open_store(url)
        try:
            _populate(store)
        finally:
            store.dispose()
    ontology = str(_ontology(tmp_path))
    common = ["agreement", "--bootstrap", "30", "--seed", "4", "--ontology", ontology]
    assert main(["--db", pg_url, *common, "--out", str(tmp_path / "pg")]) == 0
    assert main(["--db", str(tmp_path / "project.sqlite"), *common, "--out", str(tmp_path / "sqlite")]) == 0
    for name in ("ratings_long.csv", "ratings_wide.csv", "ratings_retest.csv", "coefficients.csv", "tables.md"):
        assert (tmp_path / "pg" / name).read_bytes() == (tmp_path / "sqlite" / name).read_bytes(), name
    manifest = json.loads((tmp_path / "pg" / "manifest.json").read_text())
    assert manifest["parameters"]["root_breakdown"] is True
    long = pd.read_csv(tmp_path / "pg" / "ratings_long.csv", dtype=str, keep_default_na=False)
    # 3 judges + 2 experts (one on half the clips) rate contribution on every (clip, category) they judged
    contribution = long[(long["label_type"] == "contribution") & long["rater"].str.startswith(("judge:", "expert:"))]
    failed_or_missing = 5 * N_CLIPS * len(CATEGORIES) - N_CLIPS // 2 * len(CATEGORIES) - len(contribution)
    assert 0 < failed_or_missing < 0.1 * len(contribution)  # ~5 % failed judgments are missing, not 0
    coefficients = pd.read_csv(tmp_path / "pg" / "coefficients.csv")
    assert {"judge-judge", "expert-judge", "test-retest", "root"} <= set(coefficients["section"]) | set(
        coefficients["subset_kind"]
    )


def test_without_the_parquet_extra_the_bundle_has_csv_and_says_how_to_get_parquet(project, tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    store, base, _ = project
    from workbench import extras

    # as if agl-workbench[parquet] were not installed (pandas, imported with pyarrow present,
    # would still reach for it, so the check itself answers "missing")
    monkeypatch.setattr(extras, "has", lambda module: module != "pyarrow")
    out = tmp_path / "csv-only"
    assert main(["--db", str(base / "project.sqlite"), "--json", "agreement", "--out", str(out), "--bootstrap", "0"]) == 0
    captured = capsys.readouterr()
    manifest = json.loads(captured.out)
    assert "pip install 'agl-workbench[parquet]'" in captured.err
    assert "ratings_long.csv" in manifest["files"] and not any(n.endswith(".parquet") for n in manifest["files"])
    assert not list(out.glob("*.parquet"))


def test_a_team_project_without_the_postgres_extra_is_one_line(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "psycopg", None)
    assert main(["--db", "postgresql+psycopg://aglw@127.0.0.1:5432/test", "clips", "list"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'agl-workbench[postgres]'" in err


def test_a_cancelled_export_writes_nothing_and_keeps_the_earlier_bundle(project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The bootstrap reports progress per label and subset; a cancel midway leaves the folder's
    earlier bundle byte for byte, and running again writes the new one (issue 15: every long job)."""
    from workbench.agreement.service import export_agreement
    from workbench.tasks import TaskCancelled, TaskContext

    store, base, _ = project
    out = tmp_path / "bundle"
    export_agreement(store, out, bootstrap=10, seed=1)
    before = _all_bytes(out)

    seen: list[tuple[int, int | None]] = []
    context = TaskContext()

    def listen(event) -> None:  # type: ignore[no-untyped-def]
        seen.append((event.done, event.total))
        if event.done == 3:
            context.cancel()

    context.subscribe(listen)
    with pytest.raises(TaskCancelled):
        export_agreement(store, out, bootstrap=10, seed=2, replace=True, task=context)
    total = seen[-1][1]
    assert total is not None and total > 3  # cancelled midway, not at the end
    assert max(done for done, _ in seen) == 3
    assert _all_bytes(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]  # no staging folder left

    finished = TaskContext()
    export_agreement(store, out, bootstrap=10, seed=2, replace=True, task=finished)
    assert finished.done == total
    assert _all_bytes(out) != before  # the new seed's intervals were written
