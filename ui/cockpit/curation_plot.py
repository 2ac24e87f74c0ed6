"""The curation view's picture of a fit: each category's a − ā against the ±α margin.

One row per fitted category (its name and support n on the axis, beside the data), one mark at
a − ā, sized by support and coloured by the decision the table shows: P, N, neutral,
insufficient (support under n_min) or forced (an expert's polarity, or a what-if one). The
band is ±α: a category right of it is P, left of it N, inside it neutral. The legend and the
caption are widgets above the plot, never over its data. The values are the fit's own
(:class:`workbench.curation.runs.FitResult`'s categories), nothing is recomputed here but the
difference that places a mark.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from ui.legend import ColourLegend
from workbench.curation.runs import CategoryResult

DECISION_COLOURS = {
    "P": "#2ca02c",
    "N": "#d62728",
    "neutral": "#7f7f7f",
    "insufficient": "#ff9f1c",
    "forced": "#7b3fbf",
}
DECISION_TEXT = {
    "P": "P: a − ā > α",
    "N": "N: ā − a > α",
    "neutral": "neutral: within ±α",
    "insufficient": "insufficient: n < n_min",
    "forced": "forced (expert, what-if)",
}
ROW_PX = 22  # a category's row: its name on the axis a text line high, with air


@dataclass(frozen=True)
class Mark:
    """One category as drawn: its axis label, decision, position and support."""

    category: str
    label: str
    decision: str
    x: float
    y: float
    support: int


def decision_of(category: CategoryResult, what_if: Iterable[str] = ()) -> str:
    """The decision a category's mark shows: forced (by an expert or a what-if) or the fitted one."""
    if category.overridden or category.id in set(what_if):
        return "forced"
    return category.fitted_polarity


def axis_label(category: CategoryResult) -> str:
    return f"{category.name or category.id} (n = {category.support:,})"


class FitPlot(QWidget):
    """a − ā per category with the ±α band; :meth:`set_fit` shows a fit, :meth:`marks` what is drawn."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.caption = QLabel()
        self.caption.setTextFormat(Qt.TextFormat.PlainText)
        self.caption.setWordWrap(True)
        self.legend = ColourLegend([(colour, DECISION_TEXT[d], "circle") for d, colour in DECISION_COLOURS.items()],
                                   columns=1)
        self.plot = pg.PlotWidget(background="w")
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        item = self.plot.getPlotItem()
        self.tick_font = QFont(self.font())
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            axis.setPen(pg.mkPen("#333333"))
            axis.setTextPen(pg.mkPen("#222222"))
            axis.setTickFont(self.tick_font)
        item.setLabel("bottom", "a − ā")
        self.band_item = pg.LinearRegionItem(values=(-0.05, 0.05), orientation="vertical", movable=False,
                                             brush=pg.mkBrush(0, 0, 0, 22), pen=pg.mkPen("#999999"))
        self.band_item.setZValue(-10)
        self.plot.addItem(self.band_item)
        zero = pg.InfiniteLine(pos=0.0, angle=90, pen=pg.mkPen("#666666", style=Qt.PenStyle.DashLine))
        zero.setZValue(-5)
        self.plot.addItem(zero)
        self.scatters: dict[str, pg.ScatterPlotItem] = {}
        for decision, colour in DECISION_COLOURS.items():
            scatter = pg.ScatterPlotItem(pen=pg.mkPen("#333333"), brush=pg.mkBrush(colour), hoverable=True,
                                         tip=lambda x, y, data: data)
            self.scatters[decision] = scatter
            self.plot.addItem(scatter)
        self._marks: list[Mark] = []
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self.plot)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.legend)
        layout.addWidget(self.scroll, 1)
        self.set_fit([], 0.05)

    def set_fit(self, categories: Iterable[CategoryResult], alpha: float, what_if: Iterable[str] = (),
                n_min: int | None = None) -> None:
        """Draw ``categories`` (a fit's, stored or preview) against the margin ``alpha``."""
        what_if = set(what_if)
        rows = sorted(categories, key=lambda c: (-(c.a - c.a_bar), c.id))  # most localizing on top
        top_support = max((c.support for c in rows), default=1) or 1
        self._marks = [
            Mark(category=c.id, label=axis_label(c), decision=decision_of(c, what_if), x=c.a - c.a_bar,
                 y=float(len(rows) - 1 - i), support=c.support)
            for i, c in enumerate(rows)
        ]
        by_id = {c.id: c for c in rows}
        for decision, scatter in self.scatters.items():
            spots = []
            for mark in self._marks:
                if mark.decision != decision:
                    continue
                c = by_id[mark.category]
                size = 7 + 11 * math.sqrt(max(c.support, 0) / top_support)
                tip = (f"{c.name or c.id} ({c.id}): a = {c.a:.3f}, ā = {c.a_bar:.3f}, a − ā = {mark.x:+.3f}, "
                       f"support n = {c.support:,}; fitted {c.fitted_polarity}, shown {c.polarity}")
                spots.append({"pos": (mark.x, mark.y), "size": size, "data": tip})
            scatter.setData(spots)
        self.band_item.setRegion((-alpha, alpha))
        item = self.plot.getPlotItem()
        left = item.getAxis("left")
        left.setTicks([[(mark.y, mark.label) for mark in self._marks], []])
        metrics = QFontMetrics(self.tick_font)
        widest = max((metrics.horizontalAdvance(mark.label) for mark in self._marks), default=40)
        left.setWidth(widest + 16)
        span = max([abs(mark.x) for mark in self._marks] + [alpha * 2, 0.1])
        item.setXRange(-span * 1.15, span * 1.15, padding=0.05)  # a large marker stays off the axis
        item.setYRange(-0.7, max(len(self._marks), 1) - 0.3, padding=0)
        self.plot.setMinimumHeight(ROW_PX * max(len(self._marks), 4) + 60)
        support = f"; n_min = {n_min:,}" if n_min is not None else ""
        self.caption.setText(
            f"{len(self._marks):,} fitted categories: a (success slope) − ā (failure slope), marker size "
            f"support n; band ±α = ±{alpha:g}{support}. P right of the band, N left of it.")

    def marks(self) -> list[Mark]:
        """What is drawn, one per fitted category, top row first."""
        return list(self._marks)

    def band(self) -> tuple[float, float]:
        low, high = self.band_item.getRegion()
        return float(low), float(high)
