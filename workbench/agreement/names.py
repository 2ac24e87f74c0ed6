"""Names a reader knows for the agreement tables' keys: coefficients, raters and categories.

The CSV, Parquet and JSON files keep the keys (``weighted_kappa_quadratic``, ``judge:opus``,
``judge_mean``, ``/m/015p6``) at full precision; every place a person reads them — the study
report's HTML, LaTeX and figures, the agreement bundle's ``tables.md``/``tables.tex`` and figures,
the GUI's agreement view — asks this module, so one coefficient reads the same everywhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import pandas as pd

COEFFICIENT_NAMES = {
    "cohen_kappa": "Cohen's κ",
    "cohen_kappa_asymptotic_se": "Cohen's κ, asymptotic SE",
    "weighted_kappa_linear": "weighted κ (linear)",
    "weighted_kappa_quadratic": "weighted κ (quadratic)",
    "fleiss_kappa": "Fleiss' κ",
    "krippendorff_alpha": "Krippendorff's α",
    "krippendorff_alpha_nominal": "Krippendorff's α (nominal)",
    "krippendorff_alpha_ordinal": "Krippendorff's α (ordinal)",
    "krippendorff_alpha_interval": "Krippendorff's α (interval)",
    "alpha_ordinal": "Krippendorff's α (ordinal)",
    "alpha_interval": "Krippendorff's α (interval)",
    "gwet_ac1": "Gwet's AC1",
    "percent_agreement": "percent agreement",
    "pabak": "PABAK",
    "balanced_accuracy": "balanced accuracy",
    "spearman": "Spearman's ρ",
    "mae": "mean absolute error",
    "icc2_1": "ICC(2,1)",
    "icc3_1": "ICC(3,1)",
}

DERIVED_RATERS = {
    "judge_mean": "mean of the judges",
    "judge_majority": "majority of the judges",
    "expert_consensus": "consensus of the experts",
    "expert_consensus_others": "consensus of the other experts",
    "curation_fit": "curation fit",
}

# the columns that hold a key of each kind (tables of the report, the bundle and the view)
RATER_COLUMNS = ("rater", "rater_a", "rater_b", "candidate", "llm", "annotator")
COEFFICIENT_COLUMNS = ("coefficient",)
CATEGORY_COLUMNS = ("category", "category_id")


def coefficient_name(key: object) -> str:
    """``weighted_kappa_quadratic`` → ``weighted κ (quadratic)``; an unknown key reads as itself."""
    text = str(key)
    return COEFFICIENT_NAMES.get(text, text)


def rater_name(rater: object) -> str:
    """``judge:DEMO judge A`` → ``DEMO judge A``; ``judge:opus@run1`` → ``opus (re-run 1)``;
    ``expert:annotator-0002`` → ``annotator-0002``; ``judge_mean`` → ``mean of the judges``."""
    text = str(rater)
    if "+" in text and ":" in text:  # every rater of a section, joined by the coefficients table
        return ", ".join(rater_name(part) for part in text.split("+"))
    if text in DERIVED_RATERS:
        return DERIVED_RATERS[text]
    kind, _, name = text.partition(":")
    if kind not in ("judge", "expert") or not name:
        return text
    rerun = re.fullmatch(r"(.*)@run(\d+)", name)
    return f"{rerun.group(1)} (re-run {rerun.group(2)})" if rerun else name


def pair_name(a: object, b: object) -> str:
    """Two raters as a reader names the pair: ``DEMO judge A vs mean of the judges``."""
    return f"{rater_name(a)} vs {rater_name(b)}"


def category_name(category_id: object, names: Mapping[str, str] | None) -> str:
    """``/m/015p6`` → ``Bird (/m/015p6)`` when the name is known, else the id."""
    text = str(category_id)
    name = (names or {}).get(text)
    return f"{name} ({text})" if name and name != text else text


def coefficient_text(value: object, digits: int = 3) -> str:
    """A coefficient as a reader sees it (3 decimals); a missing one is an empty string."""
    if value is None or isinstance(value, bool):
        return "" if value is None else str(value)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    return "" if not math.isfinite(number) else f"{number:.{digits}f}"


def readable(frame: pd.DataFrame, categories: Mapping[str, str] | None = None) -> pd.DataFrame:
    """A copy of ``frame`` whose rater, coefficient and category cells read as names (values untouched)."""
    shown = frame.copy()
    for column in shown.columns:
        if column in RATER_COLUMNS:
            shown[column] = shown[column].map(lambda v: v if v is None or v != v else rater_name(v))
        elif column in COEFFICIENT_COLUMNS:
            shown[column] = shown[column].map(lambda v: v if v is None or v != v else coefficient_name(v))
        elif column in CATEGORY_COLUMNS and categories:
            shown[column] = shown[column].map(lambda v: v if v is None or v != v else category_name(v, categories))
    return shown
