"""Plain references for the tests of the pyramid levels and the agreement tables (the product keeps
only what it uses)."""

from __future__ import annotations

import numpy as np


def pool_pairs_min(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """Min of each pair of columns along ``axis``; an odd last one stays as it is (the reference
    that the streaming minimum levels are checked against)."""
    values = np.moveaxis(np.asarray(values), axis, 0)
    if values.shape[0] % 2:
        values = np.concatenate([values, values[-1:]], axis=0)
    return np.moveaxis(np.minimum(values[0::2], values[1::2]), 0, axis)


def pair_table(a_codes: np.ndarray, b_codes: np.ndarray, n_categories: int) -> np.ndarray:
    """q × q count table of two raters' integer codes (rows: rater a, columns: rater b)."""
    table = np.zeros((n_categories, n_categories))
    np.add.at(table, (np.asarray(a_codes), np.asarray(b_codes)), 1)
    return table
