"""How much data a coefficient needs before the report prints it.

Every coefficient carries its n (units and raters it used).  Below these floors the value is
reported as null with a reason, never as a number: a κ of 1.0 over three units reads like a
result and is not one.  The floors refuse numbers that carry no information; they do not make
the numbers above them precise (the bootstrap intervals say how precise they are).
"""

from __future__ import annotations

# Chance-corrected and raw agreement (percent agreement, Cohen's and weighted κ, Gwet's AC1,
# PABAK, Krippendorff's α, balanced accuracy, prevalence, rank correlations, bias, MAE) and
# Fleiss' κ.  With n units one unit moves the observed agreement by 1/n; below 5 units that is
# more than 0.2, the width of a whole Landis & Koch (1977) band ("fair" → "moderate"), so the
# coefficient cannot even be placed in a band.  Units are the paired units of a rater pair,
# the pairable units (≥ 2 ratings) for α and AC1 over many raters, and the *complete* units
# (rated by every judge) for Fleiss' κ, which is only defined on them.
MIN_UNITS = 5

# ICC(2,1) and ICC(3,1) come from a two-way ANOVA whose between-unit mean square has n − 1
# degrees of freedom, over complete units only.  With two raters and a true ICC of 0.7 the
# Shrout & Fleiss (1979) F interval at n = 5 is [−0.26, 0.96] (no information at all); at
# n = 10 it is [0.17, 0.92].  Koo & Li (2016) advise ≥ 30 units for an ICC study; the report
# repeats that advice, the floor here only refuses what carries no information.
MIN_UNITS_ICC = 10

# An agreement coefficient compares at least two raters.
MIN_RATERS = 2

# A consensus compared with one expert is built from the *other* experts on the unit (leave one
# out) and needs at least two of them: a "consensus" of one other expert is just that expert,
# and including the expert herself would compare her with herself.
MIN_OTHER_EXPERTS = 2

_ICC = {"icc2_1", "icc3_1"}


def min_units(coefficient: str) -> int:
    """The floor on units for ``coefficient`` (a name of the coefficient table)."""
    return MIN_UNITS_ICC if coefficient in _ICC else MIN_UNITS


def unit_kind(coefficient: str) -> str:
    """What counts as a unit for ``coefficient``: the words used in reasons."""
    if coefficient in _ICC or coefficient == "fleiss_kappa":
        return "complete units (rated by every rater)"
    return "units"


def reason(coefficient: str, n_units: int, n_raters: int) -> str | None:
    """Why ``coefficient`` is not reported over ``n_units`` units and ``n_raters`` raters, or None."""
    if n_raters < MIN_RATERS:
        return f"needs at least {MIN_RATERS} raters; {n_raters} available"
    floor = min_units(coefficient)
    if n_units < floor:
        return f"needs at least {floor} {unit_kind(coefficient)}; {n_units} available"
    return None


def describe() -> dict[str, object]:
    """The floors as data, for the manifest, the report and the CLI JSON."""
    return {
        "min_units": MIN_UNITS,
        "min_units_icc": MIN_UNITS_ICC,
        "min_complete_units_fleiss": MIN_UNITS,
        "min_raters": MIN_RATERS,
        "min_other_experts_for_consensus": MIN_OTHER_EXPERTS,
    }


def describe_text() -> str:
    """One paragraph stating the floors (Markdown report, coding decisions)."""
    return (
        f"A coefficient is reported only with at least {MIN_RATERS} raters and {MIN_UNITS} units "
        f"(paired units for a rater pair, pairable units for α and AC1, complete units for Fleiss' κ); "
        f"ICC(2,1) and ICC(3,1) need at least {MIN_UNITS_ICC} complete units (Koo & Li 2016 advise ≥ 30 "
        f"for an ICC study). An expert is compared with the consensus of the other experts only, on units "
        f"at least {MIN_OTHER_EXPERTS} other experts rated. Below a floor the value is empty and the "
        f"reason column says why."
    )
