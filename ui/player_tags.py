"""The player's tag lanes: per-second tag probabilities as image rows, one named lane per tag.

Each lane's name is written once, on the lane's left axis, at the lane's height: nothing else
names a lane, so what the reader sees on the axis is the lane beside it. Lanes are at least a
line of text high; when the plot is too low for every tag, the lanes show the most likely tags
(highest peak first, top to bottom) and the last lane is ``+k more``: the maximum over the
tags left out, whose names are in its tooltip. A span where a lane's probability stays at or
above :data:`TAG_SEGMENT_P` keeps the tag's name, times and peak in a tooltip. A mixin of
:class:`ui.player.PlayerView` (which builds the plot and sets the attributes named below).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QFontMetrics, QPen
from PySide6.QtWidgets import QGraphicsRectItem

from ui.evidence import plain_tooltip
from ui.image_items import quantise_unit
from workbench.formatting import probability
from workbench.review.views import TimelineView

if TYPE_CHECKING:
    import pyqtgraph as pg

    from ui.image_items import ArgbImageItem
    from workbench.audio.spectrogram import SpectrogramPyramid

TAG_SEGMENT_P = 0.5  # a tag counts as present in a frame from this probability on
LANE_PADDING_PX = 4  # a lane is a line of text plus this much


@dataclass(frozen=True)
class TagSegment:
    """A span where one lane's probability stays at or above :data:`TAG_SEGMENT_P`."""

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


def _peak(timeline: TimelineView) -> float:
    values = np.nan_to_num(np.asarray(timeline.values, dtype=np.float64))
    return float(values.max()) if values.size else 0.0


def choose_lanes(timelines: Sequence[TimelineView], capacity: int) -> tuple[list[TimelineView], list[TimelineView]]:
    """The lanes to draw, top to bottom, for room for ``capacity`` lanes, and the tags left out.

    The tags with the highest peak come first; when not all fit, the last lane is ``+k more``
    (the frame-wise maximum of the k tags left out, which are returned second)."""
    ordered = sorted(timelines, key=lambda t: (-_peak(t), t.name))
    capacity = max(1, capacity)
    if len(ordered) <= capacity:
        return ordered, []
    kept, rest = ordered[: capacity - 1], ordered[capacity - 1:]
    length = max(len(t.values) for t in rest)
    combined = np.zeros(length, dtype=np.float64)
    for timeline in rest:
        values = np.nan_to_num(np.asarray(timeline.values, dtype=np.float64))
        combined[: len(values)] = np.maximum(combined[: len(values)], values)
    more = TimelineView("", f"+{len(rest)} more", rest[0].hop_s, tuple(float(v) for v in combined))
    return [*kept, more], rest


class TagLaneMixin:
    """The tag lanes of :class:`ui.player.PlayerView`."""

    tags_plot: pg.PlotItem
    tags_image: ArgbImageItem
    spec_plot: pg.PlotItem
    pyramid: SpectrogramPyramid | None
    _tags_table: np.ndarray  # the lanes' colour table (ARGB32)
    tag_segments: list[QGraphicsRectItem]
    _segments: list[TagSegment]
    _timelines: list[TimelineView]
    lanes: list[TimelineView]  # drawn, top to bottom
    hidden_tags: list[TimelineView]  # folded into the "+k more" lane

    def set_timelines(self, timelines: Sequence[TimelineView]) -> None:
        """Show the per-second tag probabilities of a clip as named lanes (see the module)."""
        self._timelines = list(timelines)
        self.lanes, self.hidden_tags = [], []
        if not timelines:
            self._set_tag_segments([])
            self.tags_image.clear()
            self.tags_plot.getAxis("left").setTicks([[]])
            self.tags_plot.getAxis("left").setToolTip("")
            return
        if self.pyramid is None:
            # No spectrogram (yet, or no audio at all): the time axis spans the tag timeline.
            span = max(max(len(t.values) for t in timelines) * timelines[0].hop_s, 0.1)
            self.spec_plot.setLimits(xMin=0.0, xMax=span, minXRange=0.05)
            self.spec_plot.setXRange(0.0, span, padding=0)
        self._layout_lanes()

    def lane_capacity(self) -> int:
        """How many lanes of a text line each fit the plot's present height."""
        line = QFontMetrics(self.tags_plot.getAxis("left").font()).height() + LANE_PADDING_PX
        height = self.tags_plot.getViewBox().height()
        return max(1, int(height // line)) if height > 0 else len(self._timelines)

    def _layout_lanes(self, *_args: object) -> None:
        """Choose the lanes for the plot's height and draw them, if they changed."""
        if not getattr(self, "_timelines", None):
            return
        lanes, hidden = choose_lanes(self._timelines, self.lane_capacity())
        if [(lane.name, lane.values) for lane in lanes] == [(lane.name, lane.values) for lane in self.lanes]:
            return
        self.lanes, self.hidden_tags = lanes, hidden
        rows = len(lanes)
        length = max(len(t.values) for t in lanes)
        image = np.zeros((rows, length), dtype=np.float32)
        bottom_up = list(reversed(lanes))  # image row 0 is drawn at the bottom
        for row, lane in enumerate(bottom_up):
            image[row, : len(lane.values)] = lane.values
        hop = lanes[0].hop_s
        self.tags_image.set_indexed(quantise_unit(image, 1.0), self._tags_table,
                                    QRectF(0.0, 0.0, length * hop, rows), source=image)
        axis = self.tags_plot.getAxis("left")
        metrics = QFontMetrics(axis.font())
        room = max(int(axis.width()) - 10, 20)  # the tick and the gap to the text
        axis.setTicks([[(row + 0.5, metrics.elidedText(lane.name, Qt.TextElideMode.ElideRight, room))
                        for row, lane in enumerate(bottom_up)]])
        described = [f"{lane.name} (peak {probability(_peak(lane))})" for lane in lanes if lane.audioset_id]
        if hidden:
            described.append(f"+{len(hidden)} more: " + ", ".join(
                f"{t.name} ({probability(_peak(t))})" for t in hidden))
        axis.setToolTip(plain_tooltip("Tag lanes, top to bottom: " + "; ".join(described)))
        self.tags_plot.setYRange(0, rows, padding=0)
        self._set_tag_segments(bottom_up)

    def _set_tag_segments(self, bottom_up: Sequence[TimelineView]) -> None:
        for item in self.tag_segments:
            self.tags_plot.removeItem(item)
        self._segments = tag_segments(bottom_up)
        self.tag_segments = []
        members = ", ".join(t.name for t in self.hidden_tags)
        for segment in self._segments:
            span = QGraphicsRectItem(QRectF(segment.t0, segment.row, segment.t1 - segment.t0, 1.0))
            span.setPen(QPen(Qt.PenStyle.NoPen))
            span.setBrush(QBrush(Qt.BrushStyle.NoBrush))
            span.setAcceptedMouseButtons(Qt.MouseButton.NoButton)  # clicks seek, drags select a loop
            folded = not bottom_up[segment.row].audioset_id and members  # the "+k more" lane
            name = f"{segment.name} ({members})" if folded else segment.name
            span.setToolTip(plain_tooltip(
                f"{name}: {segment.t0:.1f}–{segment.t1:.1f} s, p up to {probability(segment.peak)}"))
            self.tags_plot.addItem(span, ignoreBounds=True)
            self.tag_segments.append(span)
