"""May the LLM judges replace the experts?  The alt-test on a ratings file or on the project's labels.

Beside the test, the comparison a reader needs to weigh it: the human–human baseline next to
human–LLM and LLM–LLM (from the agreement coefficients, with their cluster-bootstrap
intervals), per-item difficulty, per-category confusion matrices and judge test–retest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.errors import InputError
from workbench.studies.alt_test import (
    DEFAULT_ALPHA,
    DEFAULT_EPSILON,
    MIN_ITEMS_PER_HUMAN,
    AltTestResult,
    alt_test,
    split_long_ratings,
)

# label → (metric, raters that may stand in for the experts); contribution is a 0–3 score.
PROJECT_LABELS = {"contribution": "neg_rmse", "effect": "accuracy", "polarity": "accuracy"}


def read_alt_ratings(path: str | Path, metric: str) -> list[tuple[str, str, Any]]:
    """(unit, rater, value) rows of a long-format CSV, values typed for ``metric``.

    ``neg_rmse`` needs numbers (the first other value is a one-line error naming its line);
    for ``accuracy`` values compare as numbers when every value is one (so ``1`` equals
    ``1.0``), else as text.
    """
    from workbench.agreement.ratings_csv import is_number, numeric_value, read_rating_rows

    rows = read_rating_rows(path)  # one-line errors naming the physical line and the field
    need = "--metric neg_rmse needs numeric ratings (use --metric accuracy for categories)"
    if metric == "neg_rmse" or (rows and all(is_number(r.value) for r in rows)):
        values: list[Any] = [numeric_value(path, r, need) for r in rows]
    else:
        values = [r.value for r in rows]
    return [(r.unit, r.rater, value) for r, value in zip(rows, values)]


def alt_test_file(
    path: str | Path,
    llm: str,
    *,
    metric: str = "accuracy",
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
    min_items: int = MIN_ITEMS_PER_HUMAN,
    ignore: tuple[str, ...] = (),
) -> AltTestResult:
    """The alt-test of rater ``llm`` against every other rater of a long-format CSV."""
    from workbench.studies.alt_test import METRICS

    if metric not in METRICS:
        raise InputError(f"--metric {metric!r}: use one of {', '.join(METRICS)}")
    rows = read_alt_ratings(path, metric)
    llm_annotations, humans = split_long_ratings(rows, llm, ignore=ignore)
    return alt_test(llm_annotations, humans, metric=metric, epsilon=epsilon, alpha=alpha, llm_name=llm,
                    min_items_per_human=min_items)


def project_alt_tests(
    ratings: pd.DataFrame,
    *,
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
    min_items: int = MIN_ITEMS_PER_HUMAN,
) -> list[dict[str, Any]]:
    """The alt-test of each judge (and the judge majority / mean, and the curation fit for P/N) per label.

    Parameters
    ----------
    ratings
        The long rating table of :func:`workbench.agreement.units.load_ratings`.

    Returns
    -------
    list of dict
        One row per (label, candidate): the result's fields, or ``refused`` with the reason
        (too few experts, too few shared units) — a refusal is a finding, not a failure.
    """
    rows: list[dict[str, Any]] = []
    for label, metric in PROJECT_LABELS.items():
        part = ratings[ratings["label"] == label]
        experts = part[part["rater_kind"] == "expert"]
        humans: dict[str, dict[str, Any]] = {}
        for unit, rater, value in experts[["unit", "rater", "value"]].itertuples(index=False):
            humans.setdefault(str(rater), {})[unit] = float(value) if metric == "neg_rmse" else value
        candidates = sorted(set(part.loc[part["rater_kind"] == "judge", "rater"]))
        candidates += [r for r in ("judge_majority", "judge_mean", "curation_fit") if r in set(part["rater"])]
        for candidate in candidates:
            mine = part[part["rater"] == candidate]
            llm = {u: (float(v) if metric == "neg_rmse" else v) for u, v in zip(mine["unit"], mine["value"])}
            try:
                result = alt_test(llm, humans, metric=metric, epsilon=epsilon, alpha=alpha, llm_name=candidate,
                                  min_items_per_human=min_items, label=label)
            except InputError as exc:
                rows.append({"label": label, "llm": candidate, "metric": metric, "epsilon": epsilon, "alpha": alpha,
                             "refused": str(exc), "n_humans": len(humans)})
                continue
            rows.append({**result.to_dict(), "refused": None})
    return rows


def baseline_table(coefficients: pd.DataFrame) -> pd.DataFrame:
    """Human–human beside human–LLM and LLM–LLM (and test–retest), all units, one headline coefficient per label.

    Cohen's κ for the nominal labels, quadratic weighted κ for contribution, each pair with its
    cluster-bootstrap interval and n, grouped by section (expert-expert, expert-judge,
    judge-judge, test-retest).
    """
    headline = {"contribution": "weighted_kappa_quadratic", "effect": "cohen_kappa", "polarity": "cohen_kappa",
                "rating": "weighted_kappa_quadratic", "decision": "cohen_kappa"}
    wanted = coefficients[
        (coefficients["subset_kind"] == "all")
        & coefficients["section"].isin(["expert-expert", "expert-judge", "judge-judge", "test-retest"])
        & (coefficients["coefficient"] == coefficients["label"].map(headline))
    ]
    columns = ["label", "section", "rater_a", "rater_b", "coefficient", "value", "ci_low", "ci_high", "n_units",
               "n_clips", "reason"]
    order = {"expert-expert": 0, "expert-judge": 1, "judge-judge": 2, "test-retest": 3}
    return wanted.assign(_o=wanted["section"].map(order)).sort_values(["label", "_o", "rater_a", "rater_b"])[
        columns].reset_index(drop=True)


def item_difficulty(ratings: pd.DataFrame, label: str) -> pd.DataFrame:
    """Per unit: do the experts disagree among themselves, or does only the LLM deviate?

    Returns columns unit, n_experts, expert_majority, expert_agreement (share of experts on the
    majority value), judge_majority_matches, and ``kind``: ``experts disagree`` (agreement < 1),
    ``only the LLM deviates`` (experts unanimous, the judge majority differs), or ``all agree``.
    Nominal labels only (contribution is compared after rounding the judge mean).
    """
    part = ratings[ratings["label"] == label]
    experts = part[part["rater_kind"] == "expert"]
    counts = experts.groupby("unit")["rater"].nunique()
    multi = counts[counts >= 2].index
    experts = experts[experts["unit"].isin(multi)].assign(value=lambda f: f["value"].astype(str))
    if experts.empty:
        return pd.DataFrame(columns=["unit", "n_experts", "expert_majority", "expert_agreement", "llm_value", "kind"])
    table = pd.crosstab(experts["unit"], experts["value"])
    majority = table.idxmax(axis=1)
    agreement = table.max(axis=1) / table.sum(axis=1)
    llm_rater = "judge_mean" if label == "contribution" else "judge_majority"
    llm = part[part["rater"] == llm_rater].set_index("unit")["value"]
    if label == "contribution":
        llm = llm.astype(float).round().astype(int).astype(str)
    llm = llm.astype(str).reindex(table.index)
    kind = np.where(agreement < 1, "experts disagree",
                    np.where(llm.notna() & (llm != majority), "only the LLM deviates", "all agree"))
    return pd.DataFrame({"unit": table.index, "n_experts": table.sum(axis=1).to_numpy(), "expert_majority": majority.to_numpy(),
                         "expert_agreement": agreement.to_numpy(), "llm_value": llm.to_numpy(), "kind": kind})


def category_confusions(ratings: pd.DataFrame, label: str = "effect") -> dict[str, pd.DataFrame]:
    """Per category: the confusion matrix of the expert consensus (rows) against the judge majority (columns)."""
    part = ratings[ratings["label"] == label]
    reference = "expert_consensus" if "expert_consensus" in set(part["rater"]) else None
    if reference is None:
        experts = part[part["rater_kind"] == "expert"]["rater"].unique()
        if len(experts) == 0:
            return {}
        reference = sorted(experts)[0]
    a = part[part["rater"] == reference].set_index("unit")["value"].astype(str)
    b = part[part["rater"] == "judge_majority"].set_index("unit")["value"].astype(str)
    both = a.index.intersection(b.index)
    if not len(both):
        return {}
    category = part.drop_duplicates("unit").set_index("unit")["category_id"]
    frame = pd.DataFrame({"expert": a[both], "judge": b[both], "category": category.reindex(both)})
    return {str(c): pd.crosstab(g["expert"], g["judge"]) for c, g in frame.groupby("category", sort=True)}
