"""The player's image items: colour tables, level choice, windowed rendering of a pyramid."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage

from ui.image_items import ArgbImageItem, PyramidImageItem, colour_table, quantise_unit
from workbench.audio.spectrogram import SpectrogramParams, SpectrogramPyramid

LUT = np.stack([np.arange(256), 255 - np.arange(256), np.full(256, 7)], axis=1).astype(np.uint8)


def _pyramid(n_columns: int = 5000, n_bins: int = 9, hop_s: float = 0.01, seed: int = 3) -> SpectrogramPyramid:
    rng = np.random.default_rng(seed)
    levels = [rng.integers(0, 256, size=(n_bins, n_columns), dtype=np.uint8)]
    while levels[-1].shape[1] > 1:
        image = levels[-1]
        if image.shape[1] % 2:
            image = np.concatenate([image, image[:, -1:]], axis=1)
        levels.append(np.maximum(image[:, 0::2], image[:, 1::2]))
    return SpectrogramPyramid(levels, hop_s, n_columns * hop_s, np.linspace(0, 8000, n_bins), SpectrogramParams())


def _level_of(pyramid: SpectrogramPyramid, image: np.ndarray) -> int:
    owners = [k for k, level in enumerate(pyramid.levels) if np.shares_memory(image, level)]
    assert len(owners) == 1
    return owners[0]


def _pixel(item: ArgbImageItem, x: int, y: int) -> int:
    assert item.qimage is not None
    return item.qimage.pixel(x, y) & 0xFFFFFFFF


def test_colour_table_maps_levels_onto_the_lut() -> None:
    table = colour_table(LUT)
    assert table.dtype == np.uint32 and table.shape == (256,)
    assert table[0] == 0xFF000000 | (0 << 16) | (255 << 8) | 7
    assert table[255] == 0xFF000000 | (255 << 16) | (0 << 8) | 7
    narrowed = colour_table(LUT, 100, 200)
    assert narrowed[50] == narrowed[100] == table[0]  # at or below low: the first colour
    assert narrowed[230] == narrowed[200] == table[255]  # at or above high: the last colour
    assert (narrowed[150] >> 16) & 0xFF == pytest.approx(128, abs=1)  # half way
    with pytest.raises(ValueError):
        colour_table(np.zeros((4, 2), dtype=np.uint8))


def test_quantise_unit_handles_nan_and_peak() -> None:
    values = quantise_unit(np.array([[0.0, 0.5, 1.0, np.nan, 2.0]]), 1.0)
    assert values.dtype == np.uint8 and values.tolist() == [[0, 128, 255, 0, 255]]
    assert quantise_unit(np.ones((2, 2)), 0.0).max() == 0


def test_indexed_image_is_coloured_once_and_placed_over_its_rect(qapp) -> None:  # type: ignore[no-untyped-def]
    item = ArgbImageItem()
    values = np.array([[0, 255, 10], [20, 30, 40]], dtype=np.uint8)
    table = colour_table(LUT)
    item.set_indexed(values, table, QRectF(1.0, 100.0, 6.0, 50.0))
    assert item.renders == 1 and item.qimage.format() == QImage.Format.Format_ARGB32_Premultiplied
    assert (item.qimage.width(), item.qimage.height()) == (3, 2)
    assert _pixel(item, 1, 0) == table[255] and _pixel(item, 2, 1) == table[40]
    rect = item.mapRectToParent(item.boundingRect())
    assert (rect.left(), rect.top(), rect.width(), rect.height()) == pytest.approx((1.0, 100.0, 6.0, 50.0))
    item.clear()
    assert item.image is None and item.qimage is None and item.boundingRect().isEmpty()


@pytest.mark.parametrize("width", [200, 640, 1500])
def test_level_choice_follows_the_pyramid_view_rule(qapp, width: int) -> None:  # type: ignore[no-untyped-def]
    pyramid = _pyramid()
    item = PyramidImageItem(LUT)
    item.set_pyramid(pyramid, 8000.0)
    rng = np.random.default_rng(width)
    for _ in range(50):
        t0 = float(rng.uniform(0, pyramid.duration_s - 0.1))
        t1 = float(rng.uniform(t0 + 0.05, pyramid.duration_s))
        image, _start, _end = pyramid.view(t0, t1, width)
        assert item.level_for(t0, t1, width) == _level_of(pyramid, image)


def test_scrolling_inside_the_rendered_window_does_not_recolour(qapp) -> None:  # type: ignore[no-untyped-def]
    pyramid = _pyramid()  # 50 s, 0.01 s per level-0 column
    item = PyramidImageItem(LUT, margin=0.5)
    item.set_pyramid(pyramid, 8000.0)
    width = 500
    assert item.show_range(10.0, 20.0, width)  # 1000 level-0 columns → level 1 (500 columns)
    level, first, end = item.window
    assert level == 1 and item.renders == 1
    assert item.image.shape == (9, end - first) and np.shares_memory(item.image, pyramid.levels[1])
    # at most 2 columns per pixel over the view, plus the margins
    assert end - first <= (1 + 2 * item.margin) * 2 * width + 2
    covered = item.mapRectToParent(item.boundingRect())
    assert covered.left() <= 10.0 and covered.right() >= 20.0
    assert covered.left() == pytest.approx(first * 0.02) and covered.right() == pytest.approx(end * 0.02)
    # scroll and zoom a little at the same level: no new image
    for t0, t1 in [(11.0, 21.0), (8.0, 18.0), (9.0, 20.5), (12.0, 22.0)]:
        assert not item.show_range(t0, t1, width)
    assert item.renders == 1
    # leaving the window renders a new one around the view
    assert item.show_range(30.0, 40.0, width)
    covered = item.mapRectToParent(item.boundingRect())
    assert item.renders == 2 and covered.left() <= 30.0 and covered.right() >= 40.0
    # zooming out 4× changes the level
    assert item.show_range(10.0, 50.0, width)
    assert item.window[0] == 3 and item.renders == 3
    # the pixels are the colour table applied to the level's columns
    level, first, _end = item.window
    assert _pixel(item, 5, 4) == item.table[pyramid.levels[level][4, first + 5]]


def test_new_levels_recolour_the_current_window(qapp) -> None:  # type: ignore[no-untyped-def]
    pyramid = _pyramid()
    item = PyramidImageItem(LUT)
    item.set_pyramid(pyramid, 8000.0)
    item.show_range(0.0, 50.0, 300)
    level, first, _end = item.window
    value = int(pyramid.levels[level][2, first + 3])
    before = _pixel(item, 3, 2)
    item.set_levels(0.0, 1.0)  # everything at or above 1 takes the last colour
    assert item.renders == 2 and item.window == (level, first, _end)
    assert _pixel(item, 3, 2) == (colour_table(LUT)[255] if value >= 1 else colour_table(LUT)[0])
    assert before == colour_table(LUT)[value]


def test_nothing_to_show_without_a_pyramid_or_span(qapp) -> None:  # type: ignore[no-untyped-def]
    item = PyramidImageItem(LUT)
    assert not item.show_range(0.0, 1.0, 100)
    item.set_pyramid(_pyramid(), 8000.0)
    assert not item.show_range(60.0, 70.0, 100)  # beyond the end
    assert item.renders == 0 and item.qimage is None
