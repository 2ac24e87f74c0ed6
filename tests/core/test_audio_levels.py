"""The spectrogram's coarser levels pooled while the columns arrive equal those pooled at the end.

The image is time-major, (columns, rows), as the spectrogram stores it.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.pooling import pool_pairs_min
from workbench.audio.levels import StreamingLevels, pool_pairs_max


def _reference(base: np.ndarray, reduce: np.ufunc) -> list[np.ndarray]:
    """Pooled along axis 0 the plain way, level after level down to a single column."""
    pool = pool_pairs_max if reduce is np.maximum else pool_pairs_min
    levels = [base]
    while levels[-1].shape[0] > 1:
        levels.append(pool(levels[-1], axis=0))
    return levels


@settings(max_examples=300, deadline=None)
@given(
    capacity=st.integers(0, 70),
    final_width=st.integers(1, 90),
    cuts=st.lists(st.integers(0, 90), max_size=8),
    seed=st.integers(0, 2**32 - 1),
    envelope=st.booleans(),
)
def test_streaming_levels_equal_the_levels_of_the_finished_image(
    capacity: int, final_width: int, cuts: list[int], seed: int, envelope: bool
) -> None:
    """A spectrogram image (uint8, max) or an envelope's minima (1-D float32, min)."""
    rng = np.random.default_rng(seed)
    width = max(capacity, final_width)
    if envelope:
        stream, reduce = rng.standard_normal(width).astype(np.float32), np.minimum
    else:
        stream, reduce = rng.integers(0, 256, size=(width, 3), dtype=np.uint8), np.maximum
    # Columns are written in order and never change. The final image starts with them but may
    # be shorter than what was preallocated (a generous length estimate), even shorter than
    # what was written (a tail cut off), or longer (columns beyond it kept apart).
    final = stream[:final_width]
    image = np.empty((capacity, *stream.shape[1:]), dtype=stream.dtype)
    levels = StreamingLevels(image, reduce)
    written = 0
    for cut in sorted(min(cut, capacity) for cut in cuts):
        image[written:cut] = stream[written:cut]
        written = max(written, cut)
        levels.update(written)
    got = levels.finish(final)
    want = _reference(final, reduce)
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(a, b, err_msg=f"level {k}")


def test_a_full_stream_pools_everything_before_the_end() -> None:
    rng = np.random.default_rng(3)
    final = rng.integers(0, 256, size=(64, 5), dtype=np.uint8)
    image = np.empty_like(final)
    levels = StreamingLevels(image)
    for written in range(8, 65, 8):
        image[written - 8 : written] = final[written - 8 : written]
        levels.update(written)
    # Every level was complete before finish: it only hands the preallocated levels over.
    assert levels.done == [32, 16, 8, 4, 2, 1]
    got = levels.finish(image)
    assert all(np.shares_memory(a, b) for a, b in zip(got[1:], levels.levels))
    for a, b in zip(got, _reference(final, np.maximum)):
        np.testing.assert_array_equal(a, b)


def test_pool_pairs_max_along_either_axis() -> None:
    image = np.array([[1, 5, 2], [4, 0, 9]], dtype=np.uint8)
    np.testing.assert_array_equal(pool_pairs_max(image), [[5, 2], [4, 9]])
    np.testing.assert_array_equal(pool_pairs_max(image, axis=0), [[4, 5, 9]])
    np.testing.assert_array_equal(pool_pairs_max(image.T, axis=0), pool_pairs_max(image).T)

