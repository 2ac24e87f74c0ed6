"""The curation view's texts and its run diff tree: settings named in full, a run's numbers,
and a diff whose clips are links into the review workbench (split from
:mod:`ui.cockpit.curation_view`, which lays them out).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHeaderView, QLabel, QTreeWidget, QTreeWidgetItem, QWidget

from workbench.curation import runs
from workbench.curation.model import FitParameters, RunDiff

DEFAULTS = FitParameters()
CLIP_KEY_ROLE = Qt.ItemDataRole.UserRole + 1


def settings_text(params: FitParameters, alm_model: str | None = None, what_if: dict[str, str] | None = None) -> str:
    """"settings: γ = 1000 km, α = 0.05, ..." naming every setting a fit used (non-default extras too)."""
    parts = [f"γ = {params.gamma_km:g} km", f"α = {params.alpha:g}", f"θ = {params.theta:g}", f"τ = {params.tau:g}",
             f"n_min = {params.n_min}", f"roll-up {params.rollup}"]
    for name in ("top_n", "rms_min_dbfs", "flatness_max", "clipping_max", "aci_min_percentile"):
        if getattr(params, name) != getattr(DEFAULTS, name):
            parts.append(f"{name} = {getattr(params, name):g}")
    if alm_model:
        parts.append(f"ALM {alm_model}")
    text = "settings: " + ", ".join(parts)
    if what_if:
        text += "; what if " + ", ".join(f"{c}={p}" for c, p in sorted(what_if.items()))
    return text


def summary_numbers(result: runs.FitResult) -> str:
    """Counts read off the result's own rows (a stored run written by another tool may have a
    shorter summary), θ from its summary or parameters."""
    theta = result.summary.get("theta_used", result.parameters.get("theta"))
    polarities = [c.polarity for c in result.categories]
    at = f" at θ = {float(theta):.4g}" if theta is not None else ""
    return (f"{sum(c.candidate for c in result.clips)} candidates of {len(result.clips)} clips{at}; "
            f"{polarities.count('P')} P, {polarities.count('N')} N of {len(polarities)} categories")


def plain(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    return label


class DiffTree(QTreeWidget):
    """A run diff: flipped categories, clips entering / leaving the candidates, largest moves.

    Signals
    -------
    clipActivated(str)
        The key of a clip the user activated (double click / Enter).
    """

    clipActivated = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setHeaderLabels(["Change", "Detail"])
        self.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.itemActivated.connect(self._activated)
        self.diff: RunDiff | None = None

    def set_diff(self, diff: RunDiff | None, title: str = "") -> None:
        self.clear()
        self.diff = diff
        if diff is None:
            QTreeWidgetItem(self, [title or "no run to compare with", ""])
            return
        flips = QTreeWidgetItem(self, [f"Categories that flipped ({len(diff.polarity_changes)})", title])
        for change in diff.polarity_changes:
            QTreeWidgetItem(flips, [change.category, f"{change.old} → {change.new}"])
        for label, keys in (("Entered the candidates", diff.entered), ("Left the candidates", diff.left)):
            group = QTreeWidgetItem(self, [f"{label} ({len(keys)})", ""])
            for key in keys:
                self._clip_item(group, str(key), "open in review")
        moves = QTreeWidgetItem(self, [f"Largest moves ({len(diff.largest_moves)})", ""])
        for move in diff.largest_moves:
            self._clip_item(moves, str(move.clip), f"{move.old:+.3f} → {move.new:+.3f}")
        self.expandAll()

    @staticmethod
    def _clip_item(parent: QTreeWidgetItem, key: str, detail: str) -> None:
        item = QTreeWidgetItem(parent, [key, detail])
        item.setData(0, CLIP_KEY_ROLE, key)
        item.setForeground(0, Qt.GlobalColor.blue)
        item.setToolTip(0, "double-click to open this clip in the review workbench")

    def _activated(self, item: QTreeWidgetItem, _column: int) -> None:
        key = item.data(0, CLIP_KEY_ROLE)
        if key:
            self.clipActivated.emit(str(key))
