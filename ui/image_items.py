"""Fast image items for the player's plots: colour once, then only scale on repaint.

pyqtgraph's ``ImageItem`` hands Qt an 8-bit indexed image, which the raster engine converts
to ARGB on every paint, and the player used to replace the image on every view-range change.
Here an image is coloured once into a premultiplied-ARGB ``QImage`` through a fixed
256-entry colour table (fixed levels: no autoLevels, no float conversion per repaint), so a
repaint is a plain nearest-neighbour scaled blit of the visible part.

:class:`PyramidImageItem` shows a :class:`~workbench.audio.spectrogram.SpectrogramPyramid`:
it serves the level with 1–2 columns per screen pixel and renders a window somewhat wider
than the view (``margin`` spans on each side), so scrolling within that window and zooming
that keeps the same level only change the view transform; the image is re-coloured when the
level changes or the view leaves the rendered window.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Signal
from PySide6.QtGui import QImage, QPainter, QTransform

_ARGB = QImage.Format.Format_ARGB32_Premultiplied


def colour_table(lut: np.ndarray, low: float = 0.0, high: float = 255.0) -> np.ndarray:
    """A 256-entry opaque ARGB32 table: uint8 value ``v`` → colour of ``(v − low) / (high − low)``.

    Parameters
    ----------
    lut
        Colours shaped (n, 3) or (n, 4), uint8 (e.g. ``ColorMap.getLookupTable(0, 1, 256)``).
    low, high
        The uint8 values mapped to the first and last colour (values outside are clipped).

    Returns
    -------
    numpy.ndarray
        uint32 shaped (256,), ``0xFFRRGGBB`` (opaque, so premultiplied equals straight alpha).
    """
    lut = np.asarray(lut)
    if lut.ndim != 2 or lut.shape[1] not in (3, 4) or len(lut) < 1:
        raise ValueError(f"lut must be shaped (n, 3) or (n, 4), got {lut.shape}")
    span = max(float(high) - float(low), 1e-9)
    position = (np.arange(256, dtype=np.float64) - float(low)) / span
    index = np.clip(np.rint(position * (len(lut) - 1)), 0, len(lut) - 1).astype(np.intp)
    rgb = lut[index, :3].astype(np.uint32)
    return (np.uint32(0xFF000000) | (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]).astype(np.uint32)


def quantise_unit(image: np.ndarray, peak: float) -> np.ndarray:
    """Float image in [0, peak] (NaN = 0) → uint8 0..255, for :func:`colour_table` lookups."""
    scale = 255.0 / peak if peak > 0 else 0.0
    values = np.nan_to_num(np.asarray(image, dtype=np.float32) * np.float32(scale), nan=0.0, posinf=255.0, neginf=0.0)
    return np.clip(np.rint(values), 0, 255).astype(np.uint8)


class ArgbImageItem(pg.GraphicsObject):
    """Draws an already coloured image over a rectangle of data coordinates.

    Attributes
    ----------
    image
        The uint8 (or float) data last shown, for inspection; None when cleared.
    renders
        How many times an image was coloured (for tests and benchmarks).

    Signals
    -------
    firstPainted()
        A newly set image was drawn for the first time (emitted from ``paint``).
    """

    firstPainted = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.image: np.ndarray | None = None
        self.qimage: QImage | None = None
        self._argb: np.ndarray | None = None  # keeps the QImage's pixels alive
        self._size = (0, 0)
        self._fresh = False
        self.renders = 0

    # ------------------------------------------------------------------ content

    def clear(self) -> None:
        """Show nothing."""
        self.prepareGeometryChange()
        self.image = None
        self.qimage = None
        self._argb = None
        self._size = (0, 0)
        self._fresh = False
        self.update()

    def set_indexed(self, values: np.ndarray, table: np.ndarray, rect: QRectF, source: np.ndarray | None = None) -> None:
        """Colour uint8 ``values`` (rows × columns, row 0 at ``rect.top()``) with ``table`` and show them in ``rect``."""
        argb = np.take(table, values)  # (rows, columns) uint32, C-contiguous
        rows, columns = argb.shape
        self.prepareGeometryChange()
        self._argb = argb
        self.qimage = QImage(argb.data, columns, rows, columns * 4, _ARGB)
        self._size = (columns, rows)
        self.image = values if source is None else source
        self.renders += 1
        self._fresh = True
        self.set_rect(rect)

    def set_rect(self, rect: QRectF) -> None:
        """Place the image's pixels over ``rect`` (data coordinates)."""
        columns, rows = self._size
        if not columns or not rows:
            return
        transform = QTransform()
        transform.translate(rect.left(), rect.top())
        transform.scale(rect.width() / columns, rect.height() / rows)
        self.setTransform(transform)
        self.update()

    # ------------------------------------------------------------------ QGraphicsItem

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        columns, rows = self._size
        return QRectF(0.0, 0.0, float(columns), float(rows))

    def paint(self, painter: QPainter, *args: Any) -> None:
        if self.qimage is not None:
            painter.drawImage(QPointF(0.0, 0.0), self.qimage)
            if self._fresh:
                self._fresh = False
                self.firstPainted.emit()


class PyramidImageItem(ArgbImageItem):
    """The visible window of a spectrogram pyramid, coloured once per level and window.

    Parameters
    ----------
    lut
        The colour map's lookup table (see :func:`colour_table`).
    margin
        Extra span rendered on each side of the view, as a fraction of the view's span.
    """

    def __init__(self, lut: np.ndarray, margin: float = 0.5) -> None:
        super().__init__()
        self.lut = np.asarray(lut)
        self.margin = margin
        self.pyramid: Any = None
        self.top = 1.0
        self.table = colour_table(self.lut)
        self.window: tuple[int, int, int] | None = None  # (level, first column, end column)

    def set_pyramid(self, pyramid: Any, top: float) -> None:
        """Show ``pyramid`` with its rows spanning 0..``top`` on the y axis (nothing is drawn yet)."""
        self.clear()
        self.pyramid = pyramid
        self.top = float(top)
        self.window = None

    def set_levels(self, low: float, high: float) -> None:
        """Map uint8 ``low``..``high`` onto the colour map (re-colours the rendered window once)."""
        self.table = colour_table(self.lut, low, high)
        if self.window is not None:
            self._render(*self.window)

    def clear(self) -> None:
        self.window = None
        super().clear()

    def level_for(self, t0: float, t1: float, width_px: int) -> int:
        """The pyramid level shown for [t0, t1] on ``width_px`` pixels.

        The coarsest level that still has at least ``width_px`` columns over the span (1–2
        columns per pixel), the rule of :meth:`SpectrogramPyramid.view`; level 0 when even
        that is coarser than the screen.
        """
        pyramid = self.pyramid
        span = max(t1 - t0, 0.0)
        level = 0
        for k in range(len(pyramid.levels)):
            if span / (pyramid.frame_hop_s * (1 << k)) >= width_px:
                level = k
            else:
                break
        return level

    def show_range(self, t0: float, t1: float, width_px: int) -> bool:
        """Make [t0, t1] visible on a screen ``width_px`` pixels wide.

        Returns
        -------
        bool
            True when a new window was coloured, False when the rendered one already covers
            the view at the right level (only the view transform changes then).
        """
        pyramid = self.pyramid
        if pyramid is None:
            return False
        duration = float(pyramid.duration_s)
        t0, t1 = max(0.0, t0), min(duration, t1)
        if t1 <= t0:
            return False
        width_px = max(int(width_px), 1)
        level = self.level_for(t0, t1, width_px)
        n_columns = pyramid.levels[level].shape[1]
        column_s = pyramid.frame_hop_s * (1 << level)
        first = min(int(math.floor(t0 / column_s)), max(n_columns - 1, 0))
        end = max(min(int(math.ceil(t1 / column_s)), n_columns), first + 1)
        if self.window is not None:
            have_level, have_first, have_end = self.window
            if have_level == level and have_first <= first and end <= have_end:
                return False
        extra = int(math.ceil((end - first) * self.margin))
        self._render(level, max(0, first - extra), min(n_columns, end + extra))
        return True

    def _render(self, level: int, first: int, end: int) -> None:
        pyramid = self.pyramid
        values = pyramid.levels[level][:, first:end]
        column_s = pyramid.frame_hop_s * (1 << level)
        self.window = (level, first, end)
        # Column j covers [j, j + 1) × column_s exactly (the last one may reach past the end).
        self.set_indexed(values, self.table, QRectF(first * column_s, 0.0, (end - first) * column_s, self.top))
