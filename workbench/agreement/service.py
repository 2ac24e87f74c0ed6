"""Agreement services: the project export bundle and agreement of any long-format CSV."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from storage import Store
from workbench.agreement import minimums, stats
from workbench.agreement.analysis import UNDEFINED, compute_coefficients
from workbench.agreement.report import Manifest, check_bundle_target, write_bundle, write_bundle_into

if TYPE_CHECKING:
    from workbench.tasks import TaskContext
from workbench.agreement.units import RatingData, load_ratings
from workbench.errors import InputError, UsageError

LEVELS = ("nominal", "ordinal", "interval")


def read_ratings_csv(path: str | Path, level: str) -> pd.DataFrame:
    """Read a long-format ratings CSV (columns unit, rater, value) with one-line errors
    naming the file, physical line and field (:mod:`workbench.agreement.ratings_csv`)."""
    from workbench.agreement.ratings_csv import numeric_value, read_rating_rows

    path = Path(path)
    if level not in LEVELS:
        raise UsageError(f"--level {level!r}: use one of {', '.join(LEVELS)}")
    rows = read_rating_rows(path)
    frame = pd.DataFrame({"unit": [r.unit for r in rows], "rater": [r.rater for r in rows],
                          "value": [r.value for r in rows]}, columns=["unit", "rater", "value"], dtype=object)
    if level != "nominal":
        need = f"--level {level} needs numeric ratings (use --level nominal for labels)"
        frame["value"] = pd.Series([numeric_value(path, r, need) for r in rows], dtype=float)
    return frame


def agreement_from_ratings(ratings: pd.DataFrame, level: str) -> dict:
    """Agreement of a long table (unit, rater, value) at ``level`` (the ``--ratings`` JSON).

    Returns
    -------
    dict
        ``n_units``, ``raters``, ``percent_agreement``, ``cohen_kappa`` ("A|B" → value or None),
        ``fleiss_kappa`` (units rated by every rater), ``krippendorff_alpha``, ``gwet_ac1``; for
        ordinal/interval also ``weighted_kappa_linear``, ``weighted_kappa_quadratic``, ``icc2_1``,
        ``icc3_1``.  Undefined values are None, and so is every value below its floor in
        :mod:`workbench.agreement.minimums`.  ``details`` repeats each coefficient (per pair for
        the pairwise ones) as ``{value, n_units, n_raters, reason}``; ``minimums`` gives the floors.
    """
    if level not in LEVELS:
        raise InputError(f"level {level!r}: use one of {', '.join(LEVELS)}")
    wide = ratings.pivot(index="unit", columns="rater", values="value")
    raters = [str(r) for r in wide.columns]
    domain = sorted(pd.unique(ratings["value"]))
    code_of = {v: float(i) for i, v in enumerate(domain)}
    codes = wide.apply(lambda col: col.map(code_of)).to_numpy(dtype=float)  # units × raters, NaN = missing
    values = wide.to_numpy(dtype=float) if level != "nominal" else codes
    rated = ~np.isnan(codes)

    ratings_per_unit = rated.sum(axis=1)
    counts = stats.unit_counts(np.where(np.isnan(codes), -1, codes).astype(np.int64), len(domain))
    pairable = ratings_per_unit >= 2
    complete = rated.all(axis=1)
    percent = None
    if pairable.any():
        agree = (counts[pairable] * (counts[pairable] - 1)).sum(1) / (ratings_per_unit[pairable] * (ratings_per_unit[pairable] - 1))
        percent = float(agree.mean())
    # the raters and units each coefficient uses
    n_pairable = (int(pairable.sum()), int(rated[pairable].any(axis=0).sum()))
    n_complete = (int(complete.sum()), len(raters) if complete.any() else 0)

    details: dict = {}

    def checked(name: str, value: float | None, n: tuple[int, int]) -> dict:
        why = minimums.reason(name, *n)
        if why is None and value is None:
            why = UNDEFINED
        shown = None if why is not None else value
        return {"value": shown, "n_units": n[0], "n_raters": n[1], "reason": why}

    details["percent_agreement"] = checked("percent_agreement", percent, n_pairable)
    details["fleiss_kappa"] = checked(
        "fleiss_kappa", stats.fleiss_kappa_from_ratings(codes) if len(raters) >= 2 else None, n_complete)
    details["krippendorff_alpha"] = checked("krippendorff_alpha", stats.krippendorff_alpha(values.T, level), n_pairable)
    details["gwet_ac1"] = checked("gwet_ac1", stats.gwet_ac1(codes.T, len(domain)), n_pairable)
    labels = list(range(len(domain)))
    column = {r: codes[:, j] for j, r in enumerate(raters)}

    def as_list(array: np.ndarray) -> list:
        return [None if np.isnan(x) else int(x) for x in array]

    pairs = list(itertools.combinations(raters, 2))
    n_pair = {(a, b): (int((~np.isnan(column[a]) & ~np.isnan(column[b])).sum()), 2) for a, b in pairs}
    weightings = [("cohen_kappa", None)]
    if level != "nominal":
        weightings += [("weighted_kappa_linear", "linear"), ("weighted_kappa_quadratic", "quadratic")]
    for name, weights in weightings:
        details[name] = {
            f"{a}|{b}": checked(
                name, stats.cohen_kappa(as_list(column[a]), as_list(column[b]), labels=labels, weights=weights),
                n_pair[(a, b)])
            for a, b in pairs
        }
    if level != "nominal":
        iccs = stats.icc(values)
        details["icc2_1"] = checked("icc2_1", iccs.icc2_1, n_complete)
        details["icc3_1"] = checked("icc3_1", iccs.icc3_1, n_complete)

    result: dict = {"n_units": int(wide.shape[0]), "raters": raters}
    for name in ("percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1",
                 "weighted_kappa_linear", "weighted_kappa_quadratic", "icc2_1", "icc3_1"):
        if name not in details:
            continue
        entry = details[name]
        pairwise = name in dict(weightings)
        result[name] = {pair: d["value"] for pair, d in entry.items()} if pairwise else entry["value"]
    result["details"] = details
    result["minimums"] = minimums.describe()
    return result


def export_agreement(
    store: Store,
    out_dir: str | Path,
    *,
    bootstrap: int = 2000,
    seed: int = 0,
    reveal_annotators: bool = False,
    category_roots: Mapping[str, str] | None = None,
    alm_model: str | None = None,
    replace: bool = False,
    task: TaskContext | None = None,
    extra_tables: Callable[[Store, RatingData], dict[str, pd.DataFrame]] | None = None,
) -> Manifest:
    """Write the agreement bundle of a project into ``out_dir``.

    Parameters
    ----------
    store
        The project.
    out_dir
        A new or empty folder (created if needed).  A non-empty folder is refused, except one
        holding an earlier agreement bundle and nothing else when ``replace`` is set.
    bootstrap, seed
        Cluster-bootstrap resamples (B) and seed.
    reveal_annotators
        Name experts by annotator name instead of pseudonym (names appear in the files).
    category_roots
        category id → AudioSet root name for the root breakdown (skipped without it).
    alm_model
        The ALM whose judged reasoning is studied (default: that of the latest judge run).
    replace
        Replace an earlier agreement bundle in ``out_dir`` (``--force``).
    task
        Progress and cancel of the bootstrap (the long part); a cancel writes nothing and
        leaves an earlier bundle in ``out_dir`` as it was.
    extra_tables
        More tables for the bundle, from the store and the loaded ratings (the caller passes
        the studies' error-mode tables, :func:`workbench.studies.error_modes.bundle_tables`:
        the agreement package sits below the studies and does not reach up for them).

    Returns
    -------
    Manifest
        What was written (also saved as ``manifest.json``).
    """
    if bootstrap < 0:
        raise UsageError(f"--bootstrap {bootstrap}: the number of resamples cannot be negative")
    out = Path(out_dir)
    check_bundle_target(out, replace=replace)  # before the long computation, not after it
    data = load_ratings(store, alm_model=alm_model, reveal_annotators=reveal_annotators)
    if data.ratings.empty:
        raise InputError("the project has no judge or expert ratings yet; run `aglw judge` or record labels first")
    coefficients = compute_coefficients(
        data.ratings, data.clips, category_roots=category_roots, bootstrap=bootstrap, seed=seed, retest=data.retest,
        task=task,
    )
    extra = extra_tables(store, data) if extra_tables is not None else {}
    from workbench.project import category_names

    categories = category_names(store)
    return write_bundle_into(
        out,
        lambda folder: write_bundle(
            folder, data, coefficients, bootstrap=bootstrap, seed=seed, reveal_annotators=reveal_annotators,
            root_breakdown=category_roots is not None, extra_tables=extra, categories=categories,
        ),
        replace=replace,
    )
