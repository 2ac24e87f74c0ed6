"""What a study report counts, and what it says when a section cannot be computed.

The report's methods paragraph and section notes read these counts, so "We compared 2 LLM
judges with 4 experts on 40 clips" counts the clips both rated, and a section without data says
why (too few experts for the alt-test, no judges, no error modes) instead of an empty table.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

# The Alternative Annotator Test needs this many human annotators (Calderon et al., 2025).
MIN_ALT_TEST_EXPERTS = 3


@dataclass(frozen=True)
class StudyCounts:
    """Who rated what, counted once per person and clip."""

    n_experts: int
    n_judges: int
    n_expert_clips: int  # clips at least one expert labelled
    n_judge_clips: int  # clips at least one judge rated
    n_both_clips: int  # clips rated by an expert and by a judge
    n_error_answers: int  # ALM answers an expert tagged with error modes


def study_counts(ratings: pd.DataFrame, mode_table: pd.DataFrame) -> StudyCounts:
    """The counts of ``ratings`` (the agreement's long table: clip_id, rater, rater_kind, ...) and
    of the error-mode labels (``mode_table``: alm, clip_id, rater_kind, ...)."""
    def clips(kind: str) -> set:
        return set(ratings.loc[ratings["rater_kind"] == kind, "clip_id"].tolist())

    def raters(kind: str) -> int:
        return int(ratings.loc[ratings["rater_kind"] == kind, "rater"].nunique())

    answers = 0
    if not mode_table.empty:
        answers = int(mode_table.loc[mode_table["rater_kind"] == "expert", ["alm", "clip_id"]].drop_duplicates().shape[0])
    expert_clips, judge_clips = clips("expert"), clips("judge")
    return StudyCounts(raters("expert"), raters("judge"), len(expert_clips), len(judge_clips),
                       len(expert_clips & judge_clips), answers)


def alt_test_missing(counts: StudyCounts, alt_rows: list[dict]) -> str | None:
    """Why no alt-test result can be shown, or None when at least one test ran."""
    if any(not r.get("refused") for r in alt_rows):
        return None
    if counts.n_judges == 0:
        return "no LLM judge has rated the clips yet (run `aglw judge`), so there is no candidate to test"
    if counts.n_experts < MIN_ALT_TEST_EXPERTS:
        return (f"too few experts for the alt-test: it needs at least {MIN_ALT_TEST_EXPERTS} human annotators, "
                f"the project has {counts.n_experts}")
    if alt_rows:
        return f"no candidate could be tested ({alt_rows[0]['refused']})"
    return "no candidate could be tested"


def agreement_missing(counts: StudyCounts, baseline: pd.DataFrame) -> str | None:
    """Why no agreement coefficient can be shown, or None when one was computed."""
    if not baseline.empty and baseline["value"].notna().any():
        return None
    if counts.n_experts + counts.n_judges < 2:
        return (f"agreement needs two raters of a clip; the project has {counts.n_experts} expert(s) and "
                f"{counts.n_judges} judge(s)")
    return "no two raters share enough units for a coefficient (see the minimums in tables/coefficients.csv)"


def error_modes_missing(counts: StudyCounts) -> str | None:
    """Why the error-mode section is empty, or None."""
    if counts.n_error_answers:
        return None
    return ("no error modes tagged yet: tag wrong or refused ALM answers with `aglw study error-mode` or in the "
            "review window's error-mode column")


def comparison_sentence(counts: StudyCounts) -> str:
    """The methods paragraph's first sentence: what was actually compared, on how many clips."""
    if counts.n_judges and counts.n_experts:
        return (f"We compared {counts.n_judges} LLM judge(s) with {counts.n_experts} human expert(s) on the "
                f"{counts.n_both_clips} clip(s) both rated (experts labelled {counts.n_expert_clips} clip(s), "
                f"judges rated {counts.n_judge_clips}).")
    if counts.n_judges:
        return (f"{counts.n_judges} LLM judge(s) rated {counts.n_judge_clips} clip(s); no human expert labelled any, "
                "so no judge was compared with people.")
    return (f"{counts.n_experts} human expert(s) labelled {counts.n_expert_clips} clip(s); no LLM judge rated any "
            "(run `aglw judge`), so no judge was compared with people.")
