"""Time pyramids of images and envelopes: level k pools 2**k columns of level 0.

Pooling is by pairs, level by level; an odd last column is kept as it is (pooled with
itself), so level k's column j covers level-0 columns [j*2**k, (j+1)*2**k) clipped to the
image. The spectrogram pools with max (a short loud event stays visible at every zoom), the
waveform envelope with min for its minima and max for its maxima.

:class:`StreamingLevels` builds the coarser levels of an image while its columns are still
being written (a clip being decoded), so that when the last block arrives only its last few
columns are left to pool: on a cold open the spectrogram then reaches the screen without a
~15 ms pass over the whole image (P2). It works on the image stored time-major, (columns,
rows), as the spectrogram keeps it: a column is then a contiguous row of bins, so writing a
batch of STFT frames is a plain cast and pooling a pair of columns is one vectorised maximum
of two contiguous rows (the (rows, columns) layout needed a transposing write and strided
pairs: ~40 ms more CPU per cold open of a 140 s clip). Its result equals pooling the finished
image pair by pair with :func:`pool_pairs_max` (or ``_min``) along axis 0, level after level. The waveform
envelope's minima and maxima (1-D) are pooled the same way.
"""

from __future__ import annotations

import numpy as np


def _pool_pairs(values: np.ndarray, axis: int, reduce: np.ufunc) -> np.ndarray:
    axis = axis % values.ndim
    before = (slice(None),) * axis
    if values.shape[axis] % 2:
        values = np.concatenate([values, values[(*before, slice(-1, None))]], axis=axis)
    return reduce(values[(*before, slice(0, None, 2))], values[(*before, slice(1, None, 2))])


def pool_pairs_max(image: np.ndarray, axis: int = -1) -> np.ndarray:
    """Max of each pair of columns along ``axis`` (default the last); an odd last one stays as it is."""
    return _pool_pairs(image, axis, np.maximum)


def pick_level(n_levels: int, unit_s: float, t0: float, t1: float, wanted: int) -> int:
    """Coarsest level still giving at least ``wanted`` units over [t0, t1] (else level 0)."""
    span = max(t1 - t0, 0.0)
    best = 0
    for level in range(n_levels):
        if span / (unit_s * (1 << level)) >= wanted:
            best = level
        else:
            break
    return best


def _n_pooled(n: int) -> int:
    return (n + 1) // 2


class StreamingLevels:
    """The pooled levels of an image stored time-major, (columns, ...), whose columns are written in order.

    Parameters
    ----------
    image
        The preallocated level-0 image, shaped (columns, rows) or (columns,); its length is the
        expected number of columns.
    reduce
        How a pair of columns is pooled: ``np.maximum`` (the spectrogram, the envelope's
        maxima) or ``np.minimum`` (the envelope's minima).

    Call :meth:`update` with the number of columns written so far (they must not change
    afterwards), and :meth:`finish` with the final level-0 image, whose first columns are
    those written into ``image`` (it may be shorter or longer than ``image``). Every level is
    time-major too.
    """

    def __init__(self, image: np.ndarray, reduce: np.ufunc = np.maximum) -> None:
        self.image = image
        self.reduce = reduce
        self.levels: list[np.ndarray] = []
        width = image.shape[0]
        while width > 1:
            width = _n_pooled(width)
            self.levels.append(np.empty((width, *image.shape[1:]), dtype=image.dtype))
        # Complete columns of each coarser level: each pools a pair of final columns below it.
        self.done = [0] * len(self.levels)

    def update(self, written: int) -> None:
        """Pool every complete pair among level 0's first ``written`` columns, level by level."""
        below, available = self.image, min(written, self.image.shape[0])
        for k, level in enumerate(self.levels):
            pairs = available // 2
            first = self.done[k]
            if pairs > first:
                self.reduce(below[2 * first : 2 * pairs : 2], below[2 * first + 1 : 2 * pairs : 2], out=level[first:pairs])
                self.done[k] = pairs
            below, available = level, self.done[k]
            if available < 2:
                break

    def finish(self, base: np.ndarray) -> list[np.ndarray]:
        """All levels of ``base`` (the finished level 0, time-major), reusing what :meth:`update` pooled."""
        levels = [base]
        # Columns of the level below known to equal the pooled ones: at first, the written
        # columns that the final image kept.
        valid = min(2 * self.done[0], base.shape[0]) if self.done else 0
        k = 0
        while levels[-1].shape[0] > 1:
            below = levels[-1]
            width = _n_pooled(below.shape[0])
            kept = min(self.done[k], valid // 2) if k < len(self.levels) else 0
            if k < len(self.levels) and width <= self.levels[k].shape[0]:
                level = self.levels[k][:width]
            else:
                level = np.empty((width, *base.shape[1:]), dtype=base.dtype)
                if kept:
                    level[:kept] = self.levels[k][:kept]
            if kept < width:
                level[kept:] = _pool_pairs(below[2 * kept :], 0, self.reduce)
            levels.append(level)
            valid, k = kept, k + 1
        return levels
