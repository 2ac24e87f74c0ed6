"""Agreement services: the project export bundle and agreement of any long-format CSV."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from storage import Store
from workbench.agreement import stats
from workbench.agreement.analysis import compute_coefficients
from workbench.agreement.report import Manifest, write_bundle
from workbench.agreement.units import load_ratings
from workbench.errors import InputError

LEVELS = ("nominal", "ordinal", "interval")


def read_ratings_csv(path: str | Path, level: str) -> pd.DataFrame:
    """Read a long-format ratings CSV (columns unit, rater, value) with clear errors."""
    path = Path(path)
    if level not in LEVELS:
        raise InputError(f"--level {level!r}: use one of {', '.join(LEVELS)}")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file; pass a CSV with columns unit,rater,value") from exc
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: cannot read it as CSV ({exc}); pass a UTF-8 CSV with columns unit,rater,value") from exc
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    missing = [c for c in ("unit", "rater", "value") if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}; the header must name unit,rater,value")
    frame = frame[["unit", "rater", "value"]].copy()
    frame["line"] = np.arange(len(frame)) + 2
    frame["value"] = frame["value"].str.strip()
    frame = frame[frame["value"] != ""]  # an empty value is a missing rating
    duplicated = frame[frame.duplicated(["unit", "rater"], keep=False)]
    if not duplicated.empty:
        first = duplicated.iloc[1]
        raise InputError(
            f"{path}, line {first['line']}: rater {first['rater']!r} rates unit {first['unit']!r} twice; "
            "keep one row per unit and rater"
        )
    if level != "nominal":
        numeric = pd.to_numeric(frame["value"], errors="coerce")
        bad = frame[numeric.isna() | ~np.isfinite(numeric.fillna(0))]
        if not bad.empty:
            row = bad.iloc[0]
            raise InputError(
                f"{path}, line {row['line']}, field value: {row['value']!r} is not a number; "
                f"--level {level} needs numeric ratings (use --level nominal for labels)"
            )
        frame["value"] = numeric.astype(float)
    return frame.drop(columns="line")


def agreement_from_ratings(ratings: pd.DataFrame, level: str) -> dict:
    """Agreement of a long table (unit, rater, value) at ``level`` (the ``--ratings`` JSON).

    Returns
    -------
    dict
        ``n_units``, ``raters``, ``percent_agreement``, ``cohen_kappa`` ("A|B" → value or None),
        ``fleiss_kappa`` (units rated by every rater), ``krippendorff_alpha``, ``gwet_ac1``; for
        ordinal/interval also ``weighted_kappa_linear``, ``weighted_kappa_quadratic``, ``icc2_1``,
        ``icc3_1``.  Undefined values are None.
    """
    if level not in LEVELS:
        raise InputError(f"level {level!r}: use one of {', '.join(LEVELS)}")
    wide = ratings.pivot(index="unit", columns="rater", values="value")
    raters = [str(r) for r in wide.columns]
    domain = sorted(pd.unique(ratings["value"]))
    code_of = {v: float(i) for i, v in enumerate(domain)}
    codes = wide.apply(lambda col: col.map(code_of)).to_numpy(dtype=float)  # units × raters, NaN = missing
    values = wide.to_numpy(dtype=float) if level != "nominal" else codes

    ratings_per_unit = (~np.isnan(codes)).sum(axis=1)
    counts = stats.unit_counts(np.where(np.isnan(codes), -1, codes).astype(np.int64), len(domain))
    pairable = ratings_per_unit >= 2
    percent = None
    if pairable.any():
        agree = (counts[pairable] * (counts[pairable] - 1)).sum(1) / (ratings_per_unit[pairable] * (ratings_per_unit[pairable] - 1))
        percent = float(agree.mean())

    result: dict = {
        "n_units": int(wide.shape[0]),
        "raters": raters,
        "percent_agreement": percent,
        "cohen_kappa": {},
        "fleiss_kappa": stats.fleiss_kappa_from_ratings(codes) if len(raters) >= 2 else None,
        "krippendorff_alpha": stats.krippendorff_alpha(values.T, level),
        "gwet_ac1": stats.gwet_ac1(codes.T, len(domain)),
    }
    labels = list(range(len(domain)))
    column = {r: codes[:, j] for j, r in enumerate(raters)}

    def as_list(array: np.ndarray) -> list:
        return [None if np.isnan(x) else int(x) for x in array]

    for a, b in itertools.combinations(raters, 2):
        result["cohen_kappa"][f"{a}|{b}"] = stats.cohen_kappa(as_list(column[a]), as_list(column[b]), labels=labels)
    if level != "nominal":
        for weights in ("linear", "quadratic"):
            result[f"weighted_kappa_{weights}"] = {
                f"{a}|{b}": stats.cohen_kappa(as_list(column[a]), as_list(column[b]), labels=labels, weights=weights)
                for a, b in itertools.combinations(raters, 2)
            }
        iccs = stats.icc(values)
        result["icc2_1"], result["icc3_1"] = iccs.icc2_1, iccs.icc3_1
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
) -> Manifest:
    """Write the agreement bundle of a project into ``out_dir``.

    Parameters
    ----------
    store
        The project.
    out_dir
        Created if needed; existing bundle files are replaced.
    bootstrap, seed
        Cluster-bootstrap resamples (B) and seed.
    reveal_annotators
        Name experts by annotator name instead of pseudonym (names appear in the files).
    category_roots
        category id → AudioSet root name for the root breakdown (skipped without it).
    alm_model
        The ALM whose judged reasoning is studied (default: that of the latest judge run).

    Returns
    -------
    Manifest
        What was written (also saved as ``manifest.json``).
    """
    if bootstrap < 0:
        raise InputError(f"--bootstrap {bootstrap}: the number of resamples cannot be negative")
    data = load_ratings(store, alm_model=alm_model, reveal_annotators=reveal_annotators)
    if data.ratings.empty:
        raise InputError("the project has no judge or expert ratings yet; run `aglw judge` or record labels first")
    coefficients = compute_coefficients(
        data.ratings, data.clips, category_roots=category_roots, bootstrap=bootstrap, seed=seed, retest=data.retest
    )
    return write_bundle(
        Path(out_dir), data, coefficients, bootstrap=bootstrap, seed=seed, reveal_annotators=reveal_annotators,
        root_breakdown=category_roots is not None,
    )
