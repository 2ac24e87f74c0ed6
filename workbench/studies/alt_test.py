"""The Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025), pure.

May an LLM judge stand in for the human annotators?  Each human j is held out in turn.  On
the items j annotated (and the LLM rated, and at least one other human rated), j and the LLM
are each scored against the *remaining* humans' annotations of the item with the same
alignment function; the LLM "wins" the item when its score is ≥ j's, j wins when j's score is
≥ the LLM's (a tie is a win for both).  A one-sided one-sample t-test asks whether the mean of
(j wins − LLM wins) is below ε, the cost-benefit margin granted to the LLM; the p-values of all
held-out humans are corrected together with the Benjamini–Yekutieli procedure at level α.  The
winning rate is the share of humans whose null was rejected (the LLM "beats" them) and the test
passes at a winning rate ≥ 0.5.  The advantage probability is the mean, over humans, of the
share of items the LLM wins.

Every step follows the authors' reference procedure (github.com/nitaytech/AltTest,
``alt_test``): items need ≥ ``min_humans_per_item`` human annotations (2) and an LLM
annotation; a human with fewer than ``min_items_per_human`` (30) such items is left out of the
test (and of the winning rate's denominator).  Beyond the reference, this module refuses what
the test cannot support: fewer than 3 humans (the authors' own recommendation) and no human
left with enough items.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from workbench.errors import InputError, UsageError

METRICS = ("accuracy", "neg_rmse")
MIN_HUMANS = 3
DEFAULT_EPSILON = 0.2
DEFAULT_ALPHA = 0.05
MIN_HUMANS_PER_ITEM = 2
MIN_ITEMS_PER_HUMAN = 30


def accuracy(prediction: Any, annotations: Sequence[Any]) -> float:
    """Share of ``annotations`` equal to ``prediction``."""
    return float(np.mean([prediction == a for a in annotations]))


def neg_rmse(prediction: float, annotations: Sequence[float]) -> float:
    """Minus the root mean squared difference between ``prediction`` and ``annotations``."""
    return -float(np.sqrt(np.mean([(prediction - a) ** 2 for a in annotations])))


SCORERS: dict[str, Callable[[Any, Sequence[Any]], float]] = {"accuracy": accuracy, "neg_rmse": neg_rmse}


def benjamini_yekutieli(p_values: Sequence[float], q: float) -> list[bool]:
    """Which hypotheses the Benjamini–Yekutieli step-up procedure rejects at FDR level ``q``.

    The i-th smallest p-value (1-based) is compared with i/m · q / H_m, H_m = Σ 1/k; every
    hypothesis up to the largest i that passes is rejected.  A NaN p-value is never rejected.
    """
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    if m == 0:
        return []
    order = np.argsort(p)  # NaN sorts last, as in the reference
    harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
    thresholds = np.arange(1, m + 1) / m * (q / harmonic)
    passing = np.nonzero(p[order] <= thresholds)[0]
    rejected = np.zeros(m, dtype=bool)
    if len(passing):
        rejected[order[: passing[-1] + 1]] = True
    return rejected.tolist()


def one_sided_pvalue(differences: Sequence[float], epsilon: float) -> float:
    """p-value of H0: mean(differences) ≥ ε against H1: mean < ε (one-sample t-test).

    Constant differences (every item a tie, or the LLM winning every item) give scipy's
    limits: t = −∞ → p = 0 below ε, t = +∞ → p = 1 above it, NaN exactly at ε.  scipy warns
    about the zero variance; the limit is the reference's value, so the warning is silenced.
    """
    from scipy.stats import ttest_1samp

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(ttest_1samp(np.asarray(differences, dtype=float), epsilon, alternative="less").pvalue)


@dataclass
class AnnotatorOutcome:
    """One held-out human: on how many items, the p-value, and whether the LLM beat them."""

    annotator: str
    n_units: int
    p_value: float | None = None
    rejected: bool = False
    llm_advantage: float | None = None  # share of items where the LLM scored ≥ the human
    human_advantage: float | None = None  # share where the human scored ≥ the LLM
    skipped: str | None = None  # why the human is not part of the test


@dataclass
class AltTestResult:
    """The test's outcome (keys of ``aglw study alt-test --json``, cli.md)."""

    llm: str
    metric: str
    epsilon: float
    alpha: float
    winning_rate: float
    passed: bool
    advantage_probability: float
    annotators: list[AnnotatorOutcome]
    n_units: int  # items with an LLM annotation and ≥ min_humans_per_item humans
    n_units_dropped: int
    n_humans: int
    min_items_per_human: int
    label: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def n_tested(self) -> int:
        return sum(1 for a in self.annotators if a.skipped is None)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["n_tested"] = self.n_tested
        return out


def alt_test(
    llm_annotations: Mapping[Any, Any],
    human_annotations: Mapping[str, Mapping[Any, Any]],
    *,
    metric: str = "accuracy",
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
    llm_name: str = "llm",
    min_humans_per_item: int = MIN_HUMANS_PER_ITEM,
    min_items_per_human: int = MIN_ITEMS_PER_HUMAN,
    label: str | None = None,
) -> AltTestResult:
    """Run the Alternative Annotator Test.

    Parameters
    ----------
    llm_annotations
        item → the LLM's annotation.
    human_annotations
        human → (item → annotation); a human who did not annotate an item has no key for it.
    metric
        ``accuracy`` (categorical: share of remaining humans matched) or ``neg_rmse``
        (numeric: minus the RMSE against the remaining humans).
    epsilon
        Cost-benefit margin ε (0.2 experts, 0.15 skilled annotators, 0.1 crowd workers).
    alpha
        FDR level q of the Benjamini–Yekutieli correction.
    llm_name, label
        Carried into the result.
    min_humans_per_item, min_items_per_human
        The reference's filters (2 and 30).

    Returns
    -------
    AltTestResult

    Raises
    ------
    InputError
        Unknown metric, ε or α out of range, fewer than 3 humans, non-numeric annotations
        for ``neg_rmse``, or no human with enough items.
    """
    if metric not in SCORERS:
        raise UsageError(f"--metric {metric!r}: use one of {', '.join(METRICS)}")
    if not (math.isfinite(epsilon) and 0 <= epsilon < 1):
        raise UsageError(f"--epsilon {epsilon}: the cost-benefit margin must lie in [0, 1)")
    if not (0 < alpha < 1):
        raise UsageError(f"--alpha {alpha}: the FDR level must lie in (0, 1)")
    humans = [h for h in human_annotations if human_annotations[h]]
    if len(humans) < MIN_HUMANS:
        raise InputError(
            f"the alt-test needs at least {MIN_HUMANS} human annotators besides {llm_name!r}, got {len(humans)}"
            f"{' (' + ', '.join(map(str, humans)) + ')' if humans else ''}; add annotators or use `aglw agreement`"
        )
    if metric == "neg_rmse":
        for who, values in [(llm_name, llm_annotations), *((h, human_annotations[h]) for h in humans)]:
            for item, value in values.items():
                if not _is_number(value):
                    raise InputError(
                        f"rater {who!r}, unit {item!r}: value {value!r} is not a number; --metric neg_rmse needs "
                        "numeric ratings (use --metric accuracy for categories)"
                    )
    score = SCORERS[metric]

    annotators_of: dict[Any, list[str]] = {}
    for h in humans:
        for item in human_annotations[h]:
            annotators_of.setdefault(item, []).append(h)
    kept = {i for i, who in annotators_of.items() if len(who) >= min_humans_per_item and i in llm_annotations}

    outcomes: list[AnnotatorOutcome] = []
    p_values: list[float] = []
    advantages: list[float] = []
    for excluded in humans:
        items = [i for i in human_annotations[excluded] if i in kept]
        if len(items) < min_items_per_human:
            outcomes.append(AnnotatorOutcome(
                excluded, len(items),
                skipped=f"{len(items)} shared units < {min_items_per_human} (min items per annotator)"))
            continue
        llm_wins, human_wins = [], []
        for i in items:
            others = [human_annotations[h][i] for h in annotators_of[i] if h != excluded]
            human_score = score(human_annotations[excluded][i], others)
            llm_score = score(llm_annotations[i], others)
            llm_wins.append(1 if llm_score >= human_score else 0)
            human_wins.append(1 if human_score >= llm_score else 0)
        differences = [hw - lw for hw, lw in zip(human_wins, llm_wins)]
        p = one_sided_pvalue(differences, epsilon)
        p_values.append(p)
        advantages.append(float(np.mean(llm_wins)))
        outcomes.append(AnnotatorOutcome(
            excluded, len(items), p_value=None if math.isnan(p) else p,
            llm_advantage=float(np.mean(llm_wins)), human_advantage=float(np.mean(human_wins))))
    if not p_values:
        raise InputError(
            f"no annotator shares at least {min_items_per_human} units with {llm_name!r} and another annotator "
            f"(most: {max(o.n_units for o in outcomes)}); the t-test needs more shared units "
            "(lower --min-items at your own risk)"
        )
    rejected = iter(benjamini_yekutieli(p_values, alpha))
    for outcome in outcomes:
        if outcome.skipped is None:
            outcome.rejected = bool(next(rejected))
    winning_rate = sum(o.rejected for o in outcomes) / len(p_values)
    notes = []
    if len(p_values) < len(humans):
        notes.append(f"{len(humans) - len(p_values)} annotator(s) left out: fewer than {min_items_per_human} shared units")
    return AltTestResult(
        llm=llm_name, metric=metric, epsilon=float(epsilon), alpha=float(alpha), winning_rate=float(winning_rate),
        passed=bool(winning_rate >= 0.5), advantage_probability=float(np.mean(advantages)), annotators=outcomes,
        n_units=len(kept), n_units_dropped=len(annotators_of) - len(kept), n_humans=len(humans),
        min_items_per_human=min_items_per_human, label=label, notes=notes,
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) and math.isfinite(
        float(value))


def split_long_ratings(
    rows: Sequence[tuple[str, str, Any]], llm: str, *, ignore: Sequence[str] = ()
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """LLM and human annotations from long (unit, rater, value) rows; raters in ``ignore`` are dropped.

    Raises
    ------
    InputError
        ``llm`` is not a rater of the rows (the message lists the raters).
    """
    raters = sorted({r for _, r, _ in rows})
    if llm not in raters:
        raise InputError(f"--llm {llm!r} is not a rater in the ratings; raters: {', '.join(raters) or '(none)'}")
    unknown = sorted(set(ignore) - set(raters))
    if unknown:
        raise InputError(f"--ignore-rater {unknown[0]!r} is not a rater in the ratings; raters: {', '.join(raters)}")
    llm_annotations: dict[str, Any] = {}
    humans: dict[str, dict[str, Any]] = {}
    for unit, rater, value in rows:
        if rater == llm:
            llm_annotations[unit] = value
        elif rater not in ignore:
            humans.setdefault(rater, {})[unit] = value
    return llm_annotations, humans
