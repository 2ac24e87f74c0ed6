"""The Alternative Annotator Test against the authors' procedure, written out independently here.

The reference (github.com/nitaytech/AltTest, ``alt_test``) is restated below step by step in
plain Python (no shared code with the product): keep items with ≥ 2 humans and an LLM
annotation, hold each human out, score both against the remaining humans, one-sided t-test of
(human ≥ LLM) − (LLM ≥ human) against ε, Benjamini–Yekutieli at α, winning rate over the humans
tested.  The t-test is computed by hand from the t distribution, not with ttest_1samp.
"""

from __future__ import annotations

import csv
import json
import math
import random

import pytest
from scipy.stats import t as student_t

from cli.main import main
from tests.cli_helpers import run_json
from workbench.errors import InputError
from workbench.studies.alt_test import alt_test, benjamini_yekutieli


def reference_alt_test(llm, humans, metric, epsilon, q, min_humans=2, min_items=30):
    def score(pred, anns):
        if metric == "accuracy":
            return sum(1.0 for a in anns if a == pred) / len(anns)
        return -math.sqrt(sum((pred - a) ** 2 for a in anns) / len(anns))

    who_rated = {}
    for h, anns in humans.items():
        for i in anns:
            who_rated.setdefault(i, []).append(h)
    keep = {i for i, hs in who_rated.items() if len(hs) >= min_humans and i in llm}
    tested, pvals, advs = [], [], []
    for h in humans:
        items = [i for i in humans[h] if i in keep]
        if len(items) < min_items:
            continue
        diffs, llm_wins = [], []
        for i in items:
            rest = [humans[o][i] for o in who_rated[i] if o != h]
            hs, ls = score(humans[h][i], rest), score(llm[i], rest)
            lw, hw = int(ls >= hs), int(hs >= ls)
            llm_wins.append(lw)
            diffs.append(hw - lw)
        n = len(diffs)
        mean = sum(diffs) / n
        sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
        if sd == 0:
            p = 0.0 if mean < epsilon else (1.0 if mean > epsilon else float("nan"))
        else:
            p = float(student_t.cdf((mean - epsilon) / (sd / math.sqrt(n)), n - 1))
        tested.append(h)
        pvals.append(p)
        advs.append(sum(llm_wins) / n)
    # Benjamini–Yekutieli, step-up
    m = len(pvals)
    c_m = sum(1 / k for k in range(1, m + 1))
    ranked = sorted(range(m), key=lambda j: (math.isnan(pvals[j]), pvals[j]))
    k_max = 0
    for rank, j in enumerate(ranked, start=1):
        if pvals[j] <= rank * q / (m * c_m):
            k_max = rank
    rejected = {tested[j] for j in ranked[:k_max]}
    return {"p": dict(zip(tested, pvals)), "rejected": rejected, "winning_rate": len(rejected) / m,
            "advantage": sum(advs) / m}


def synthetic(metric: str, seed: int, n_items: int = 80, llm_noise: float = 0.45):
    """Five humans of very different reliability, the LLM in between; about a fifth of ratings missing."""
    rng = random.Random(seed)
    noise = {"h_expert1": 0.0, "h_expert2": 0.05, "h_crowd1": 0.8, "h_crowd2": 0.9, "h_mid": 0.4}
    truth = {f"u{i}": rng.randrange(4) for i in range(n_items)}

    def rate(value, p):
        if metric == "accuracy":
            return value if rng.random() > p else rng.randrange(4)
        return min(3.0, max(0.0, value + rng.gauss(0, 3 * p)))

    humans = {h: {i: rate(v, p) for i, v in truth.items() if rng.random() > 0.2} for h, p in noise.items()}
    llm = {i: rate(v, llm_noise) for i, v in truth.items() if rng.random() > 0.05}
    return llm, humans


@pytest.mark.parametrize("metric,seed,epsilon", [("accuracy", 1, 0.2), ("accuracy", 7, 0.1), ("neg_rmse", 3, 0.15),
                                                 ("neg_rmse", 11, 0.2)])
def test_equals_the_reference_procedure(metric: str, seed: int, epsilon: float) -> None:
    llm, humans = synthetic(metric, seed)
    got = alt_test(llm, humans, metric=metric, epsilon=epsilon, alpha=0.05)
    want = reference_alt_test(llm, humans, metric, epsilon, 0.05)
    assert got.winning_rate == pytest.approx(want["winning_rate"], abs=1e-12)
    assert got.advantage_probability == pytest.approx(want["advantage"], abs=1e-9)
    assert got.passed == (want["winning_rate"] >= 0.5)
    for a in got.annotators:
        assert a.p_value == pytest.approx(want["p"][a.annotator], abs=1e-6)
        assert a.rejected == (a.annotator in want["rejected"])
    # the examples are informative: the LLM beats the crowd but not the experts
    beaten = {a.annotator for a in got.annotators if a.rejected}
    assert beaten & {"h_crowd1", "h_crowd2"}
    assert not beaten & {"h_expert1", "h_expert2"}


@pytest.mark.parametrize("metric", ["accuracy", "neg_rmse"])
def test_a_good_llm_passes_like_the_reference(metric: str) -> None:
    llm, humans = synthetic(metric, 21, n_items=120, llm_noise=0.03)
    got = alt_test(llm, humans, metric=metric, epsilon=0.2)
    want = reference_alt_test(llm, humans, metric, 0.2, 0.05)
    assert got.passed and got.winning_rate == pytest.approx(want["winning_rate"]) and want["winning_rate"] >= 0.5
    assert got.advantage_probability == pytest.approx(want["advantage"], abs=1e-9)


def test_annotator_with_too_few_items_is_left_out_like_the_reference() -> None:
    llm, humans = synthetic("accuracy", 5)
    humans["h_sparse"] = dict(list(humans["h_mid"].items())[:12])
    got = alt_test(llm, humans, metric="accuracy", epsilon=0.2)
    want = reference_alt_test(llm, humans, "accuracy", 0.2, 0.05)
    sparse = next(a for a in got.annotators if a.annotator == "h_sparse")
    assert sparse.skipped is not None and sparse.p_value is None and not sparse.rejected
    assert got.n_tested == 5 and got.winning_rate == pytest.approx(want["winning_rate"])


def test_benjamini_yekutieli_step_up() -> None:
    # m = 4, H = 25/12: thresholds i/4 * 0.05 / H = 0.006, 0.012, 0.018, 0.024
    assert benjamini_yekutieli([0.001, 0.03, 0.011, 0.5], 0.05) == [True, False, True, False]
    assert benjamini_yekutieli([0.02, 0.02, 0.02, 0.02], 0.05) == [True, True, True, True]
    assert benjamini_yekutieli([0.9, float("nan")], 0.05) == [False, False]


def test_refusals() -> None:
    llm, humans = synthetic("accuracy", 2)
    two = dict(list(humans.items())[:2])
    with pytest.raises(InputError, match="at least 3 human annotators"):
        alt_test(llm, two)
    with pytest.raises(InputError, match="not a number"):
        alt_test({**llm, "u0": "loud"}, humans, metric="neg_rmse")
    with pytest.raises(InputError, match="shares at least 30 units"):
        alt_test(llm, {h: dict(list(a.items())[:10]) for h, a in humans.items()})


def _write_long(path, llm, humans, llm_name="gpt-judge"):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["unit", "rater", "value"])
        for h, anns in humans.items():
            for i, v in anns.items():
                w.writerow([i, h, v])
        for i, v in llm.items():
            w.writerow([i, llm_name, v])


@pytest.mark.parametrize("metric", ["accuracy", "neg_rmse"])
def test_cli_json_matches_the_reference(tmp_path, capsys, metric: str) -> None:
    llm, humans = synthetic(metric, 4)
    path = tmp_path / "ratings.csv"
    _write_long(path, llm, humans)
    out = run_json(capsys, "study", "alt-test", "--ratings", str(path), "--llm", "gpt-judge", "--metric", metric,
                   "--epsilon", "0.15", "--alpha", "0.1", "--json")
    want = reference_alt_test(llm, humans, metric, 0.15, 0.1)
    assert {"llm", "metric", "epsilon", "alpha", "winning_rate", "passed", "advantage_probability",
            "annotators"} <= set(out)
    assert (out["llm"], out["metric"], out["epsilon"], out["alpha"]) == ("gpt-judge", metric, 0.15, 0.1)
    assert out["winning_rate"] == pytest.approx(want["winning_rate"])
    assert out["advantage_probability"] == pytest.approx(want["advantage"], abs=1e-6)
    for a in out["annotators"]:
        assert {"annotator", "n_units", "p_value", "rejected"} <= set(a)
        assert a["p_value"] == pytest.approx(want["p"][a["annotator"]], abs=1e-6)
        assert a["rejected"] == (a["annotator"] in want["rejected"])


def _fails(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_cli_bad_input_is_one_line(tmp_path, capsys) -> None:
    llm, humans = synthetic("accuracy", 6)
    two = tmp_path / "two.csv"
    _write_long(two, llm, dict(list(humans.items())[:2]))
    assert "at least 3 human annotators" in _fails(capsys, "study", "alt-test", "--ratings", str(two), "--llm", "gpt-judge")
    full = tmp_path / "full.csv"
    _write_long(full, llm, humans)
    err = _fails(capsys, "study", "alt-test", "--ratings", str(full), "--llm", "gpt-5")
    assert "'gpt-5' is not a rater" in err and "gpt-judge" in err
    words = tmp_path / "words.csv"
    _write_long(words, {**llm, "u1": "loud"}, humans)
    err = _fails(capsys, "study", "alt-test", "--ratings", str(words), "--llm", "gpt-judge", "--metric", "neg_rmse")
    assert "line" in err and "'loud' is not a number" in err
    capsys.readouterr()
    assert main(["study", "alt-test", "--ratings", str(full)]) == 2  # a usage error (issue 40)
    assert "--llm: NAME is required" in capsys.readouterr().err
    capsys.readouterr()
    assert main(["study", "alt-test", "--ratings", str(full), "--llm", "gpt-judge", "--metric", "f1"]) == 2  # usage
    err = capsys.readouterr().err
    assert "--metric" in err and "'f1' is not one of: accuracy, neg_rmse" in err
    json.dumps(llm)  # the fixture data stay JSON-able (used by the report test)
