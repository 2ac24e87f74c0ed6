"""The player's tag lane: per-second tag probabilities as image rows, the likely spans labelled.

A span is where one tag's probability stays at or above :data:`TAG_SEGMENT_P`; it is labelled
with the tag's name, a label that would overlap another at the current zoom is hidden, and
every span keeps its name in a tooltip. A mixin of :class:`ui.player.PlayerView` (which builds
the plot and sets the attributes named below), split from it to keep that file to its plots.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QFontMetrics, QPen
from PySide6.QtWidgets import QGraphicsRectItem

from ui.evidence import plain_tooltip
from ui.image_items import quantise_unit
from workbench.review.views import TimelineView

TAG_SEGMENT_P = 0.5  # a tag counts as present in a frame from this probability on
_LABEL_GAP_PX = 3.0


@dataclass(frozen=True)
class TagSegment:
    """A span where one tag's probability stays at or above :data:`TAG_SEGMENT_P`."""

    row: int
    name: str
    t0: float
    t1: float
    peak: float


def tag_segments(timelines: Sequence[TimelineView], threshold: float = TAG_SEGMENT_P) -> list[TagSegment]:
    """The spans of each timeline (row = its index) where the probability is at least ``threshold``."""
    segments = []
    for row, timeline in enumerate(timelines):
        values = np.asarray(timeline.values, dtype=np.float64)
        above = np.concatenate(([False], np.nan_to_num(values) >= threshold, [False]))
        edges = np.flatnonzero(np.diff(above.astype(np.int8)))
        for start, stop in zip(edges[0::2], edges[1::2]):
            segments.append(TagSegment(row, timeline.name, start * timeline.hop_s, stop * timeline.hop_s,
                                       float(values[start:stop].max())))
    return segments


class TagLaneMixin:
    """The tag lane of :class:`ui.player.PlayerView`."""

    tags_plot: Any
    tags_image: Any
    spec_plot: Any
    pyramid: Any
    _tags_table: Any
    tag_segments: list[QGraphicsRectItem]
    tag_labels: list[pg.TextItem]
    _segments: list[TagSegment]
    _tick_step: int
    _tag_names: list[str]

    def set_timelines(self, timelines: Sequence[TimelineView]) -> None:
        """Per-second tag probabilities as rows of an image, the likely spans labelled with the tag."""
        self._set_tag_segments(timelines)
        if not timelines:
            self.tags_image.clear()
            return
        length = max(len(t.values) for t in timelines)
        image = np.zeros((len(timelines), length), dtype=np.float32)
        for row, timeline in enumerate(timelines):
            image[row, : len(timeline.values)] = timeline.values
        hop = timelines[0].hop_s
        self.tags_image.set_indexed(quantise_unit(image, 1.0), self._tags_table,
                                    QRectF(0.0, 0.0, length * hop, len(timelines)), source=image)
        self._tag_names = [timeline.name for timeline in timelines]
        self._tick_step = 0
        self.tags_plot.getAxis("left").setToolTip(
            plain_tooltip("Tags, bottom to top: " + ", ".join(self._tag_names)) if self._tag_names else "")
        self.tags_plot.setYRange(0, len(timelines), padding=0)
        if self.pyramid is None:
            # No spectrogram (yet, or no audio at all): the time axis spans the tag timeline.
            span = max(length * hop, 0.1)
            self.spec_plot.setLimits(xMin=0.0, xMax=span, minXRange=0.05)
            self.spec_plot.setXRange(0.0, span, padding=0)
        self._layout_tag_labels()

    def _set_tag_segments(self, timelines: Sequence[TimelineView]) -> None:
        for item in [*self.tag_segments, *self.tag_labels]:
            self.tags_plot.removeItem(item)
        self._segments = tag_segments(timelines)
        self.tag_segments, self.tag_labels = [], []
        for segment in self._segments:
            span = QGraphicsRectItem(QRectF(segment.t0, segment.row, segment.t1 - segment.t0, 1.0))
            span.setPen(QPen(Qt.PenStyle.NoPen))
            span.setBrush(QBrush(Qt.BrushStyle.NoBrush))
            span.setAcceptedMouseButtons(Qt.MouseButton.NoButton)  # clicks seek, drags select a loop
            span.setToolTip(plain_tooltip(
                f"{segment.name}: {segment.t0:.1f}–{segment.t1:.1f} s, p up to {segment.peak:.2f}"))
            self.tags_plot.addItem(span, ignoreBounds=True)
            label = pg.TextItem(segment.name, color="#ffffff", anchor=(0, 0.5), fill=pg.mkBrush(0, 0, 0, 150))
            label.setVisible(False)
            self.tags_plot.addItem(label, ignoreBounds=True)
            self.tag_segments.append(span)
            self.tag_labels.append(label)

    def _layout_tag_labels(self, *_args: object) -> None:
        """Place the span labels for the current view: each at its span's start (or the left edge
        when the span began before it), in its tag's row; a label that would overlap one already
        placed (earlier spans first) is hidden, its span keeps the tooltip. Also thins the row names
        on the axis to those that fit."""
        box = self.tags_plot.getViewBox()
        (x0, x1), (y0, y1) = box.viewRange()
        width, height = box.width(), box.height()
        rows = len(self._tag_names)
        if rows and height > 0:
            line = QFontMetrics(self.tags_plot.getAxis("left").font()).height()
            step = max(1, math.ceil(line / max(height / rows, 1e-9)))
            if step != self._tick_step:
                self._tick_step = step
                ticks = [(row + 0.5, name[:14]) for row, name in enumerate(self._tag_names) if row % step == 0]
                self.tags_plot.getAxis("left").setTicks([ticks])
        if not self.tag_labels:
            return
        if width <= 0 or height <= 0 or x1 <= x0 or y1 <= y0:
            for label in self.tag_labels:
                label.setVisible(False)
            return
        order = sorted(range(len(self._segments)),
                       key=lambda i: (max(self._segments[i].t0, x0), self._segments[i].row))
        placed: list[QRectF] = []
        for i in order:
            segment, label = self._segments[i], self.tag_labels[i]
            if segment.t1 <= x0 or segment.t0 >= x1:
                label.setVisible(False)
                continue
            start = max(segment.t0, x0)
            size = label.textItem.boundingRect()
            left = (start - x0) / (x1 - x0) * width
            middle = (y1 - (segment.row + 0.5)) / (y1 - y0) * height
            rect = QRectF(left, middle - size.height() / 2, size.width(), size.height())
            # Labels are placed left to right: only those reaching past this one's left edge can meet it.
            placed = [r for r in placed if r.right() + _LABEL_GAP_PX > rect.left()]
            if any(rect.adjusted(-_LABEL_GAP_PX, -1, _LABEL_GAP_PX, 1).intersects(r) for r in placed):
                label.setVisible(False)
                continue
            label.setPos(start, segment.row + 0.5)
            label.setVisible(True)
            placed.append(rect)
