"""Evidence panels: tags, the ALM's reasoning, location, metadata, and the clip judgment panel.

Text from datasets and models is shown as plain text only (``setPlainText``), never as
rich text or HTML: a description containing ``<img src=http://…>`` shows those characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont, QMouseEvent, QSyntaxHighlighter, QTextCharFormat, QTextDocument
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.review import ClipDetail, TagView
from workbench.timerefs import TimeRef, find_time_references

ROOT_COLOURS = {
    "Human sounds": "#e07b39",
    "Animal": "#4caf50",
    "Music": "#ab47bc",
    "Natural sounds": "#29b6f6",
    "Sounds of things": "#ffca28",
    "Source-ambiguous sounds": "#90a4ae",
    "Channel, environment and background": "#8d6e63",
}


HIDDEN_IN_BLIND_MODE = "hidden in blind mode"


def plain_label(text: str = "") -> QLabel:
    """A QLabel that never interprets its text as rich text."""
    label = QLabel()
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(text)
    label.setWordWrap(True)
    return label


class TagsPanel(QTableWidget):
    """Top-k EfficientAT tags with probability bars coloured by ontology root."""

    def __init__(self, top_k: int = 10, parent: QWidget | None = None) -> None:
        super().__init__(0, 2, parent)
        self.top_k = top_k
        self.setHorizontalHeaderLabels(["tag", "probability"])
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setStretchLastSection(True)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)

    def set_tags(self, tags: Sequence[TagView]) -> None:
        shown = list(tags)[: self.top_k]
        self.setRowCount(len(shown))
        for row, tag in enumerate(shown):
            item = QTableWidgetItem(tag.name)
            item.setToolTip(f"{tag.audioset_id} — {tag.root}")
            self.setItem(row, 0, item)
            bar = QProgressBar()
            bar.setRange(0, 1000)
            bar.setValue(int(round(tag.probability * 1000)))
            bar.setFormat(f"{tag.probability:.2f}")
            colour = ROOT_COLOURS.get(tag.root, "#bdbdbd")
            bar.setStyleSheet(f"QProgressBar::chunk {{ background-color: {colour}; }}")
            self.setCellWidget(row, 1, bar)
        self.resizeColumnToContents(0)


class _ReasoningHighlighter(QSyntaxHighlighter):
    """Highlights detected category names and time references in the reasoning."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self.category_pattern: re.Pattern[str] | None = None
        self.category_format = QTextCharFormat()
        self.category_format.setBackground(QColor("#5c4b00"))
        self.category_format.setForeground(QColor("#ffe082"))
        self.time_format = QTextCharFormat()
        self.time_format.setForeground(QColor("#4fc3f7"))
        self.time_format.setFontUnderline(True)
        self.time_format.setFontWeight(QFont.Weight.Bold)

    def set_categories(self, names: Sequence[str]) -> None:
        words = sorted({n for n in names if n}, key=len, reverse=True)
        self.category_pattern = (
            re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE) if words else None
        )
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt override
        if self.category_pattern is not None:
            for match in self.category_pattern.finditer(text):
                self.setFormat(match.start(), match.end() - match.start(), self.category_format)
        for ref in find_time_references(text):
            self.setFormat(ref.start_char, ref.end_char - ref.start_char, self.time_format)


class ReasoningView(QPlainTextEdit):
    """The ALM's chain-of-thought as plain text; a click on a time reference emits ``seekRequested``."""

    seekRequested = Signal(float)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.highlighter = _ReasoningHighlighter(self.document())
        self.references: list[TimeRef] = []

    def set_reasoning(self, text: str, category_names: Sequence[str]) -> None:
        self.setPlainText(text)
        self.references = find_time_references(text)
        self.highlighter.set_categories(category_names)

    def reference_at(self, position: int) -> TimeRef | None:
        """The time reference covering character ``position`` of the text, if any."""
        for ref in self.references:
            if ref.start_char <= position < ref.end_char:
                return ref
        return None

    def click_reference(self, index: int) -> None:
        """Activate the ``index``-th time reference (what a click on it does)."""
        self.seekRequested.emit(self.references[index].seconds)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        super().mouseReleaseEvent(event)
        if event.button() == Qt.MouseButton.LeftButton:
            ref = self.reference_at(self.cursorForPosition(event.position().toPoint()).position())
            if ref is not None:
                self.seekRequested.emit(ref.seconds)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        super().mouseMoveEvent(event)
        over = self.reference_at(self.cursorForPosition(event.position().toPoint()).position())
        self.viewport().setCursor(Qt.CursorShape.PointingHandCursor if over else Qt.CursorShape.IBeamCursor)


class ClipInfoPanel(QWidget):
    """Metadata (title, description as plain text), the ALM choice, that ALM's predicted vs true
    location and its error.

    ``model_box`` lists the clip's ALM predictions; the current entry is the detail's ALM
    (:attr:`workbench.review.ClipDetail.alm_run_id`). Choosing one records it as
    ``preferred_alm_run_id`` (kept for the next clips that have that ALM) and emits
    ``almChosen(alm_run_id)``; the window then shows the clip for that ALM.
    """

    almChosen = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.preferred_alm_run_id: int | None = None
        self._updating = False
        self.title = plain_label()
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.truth = plain_label()
        self.predictions = QPlainTextEdit()
        self.predictions.setReadOnly(True)
        self.predictions.setMaximumHeight(90)
        self.description = QPlainTextEdit()
        self.description.setReadOnly(True)
        self.model_box = QComboBox()
        self.model_box.setToolTip("The ALM whose reasoning, prediction and judges are shown")
        self.model_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.model_box.activated.connect(self._model_activated)
        model_row = QHBoxLayout()
        model_row.addWidget(plain_label("ALM"))
        model_row.addWidget(self.model_box, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.truth)
        layout.addLayout(model_row)
        layout.addWidget(self.predictions)
        layout.addWidget(plain_label("Description"))
        layout.addWidget(self.description, 1)

    def set_detail(self, detail: ClipDetail | None) -> None:
        """Show ``detail``; the prediction and the selected ALM are those of ``detail.alm_run_id``."""
        self._fill_models(detail)
        if detail is None:
            for widget in (self.title, self.truth):
                widget.setText("")
            self.predictions.setPlainText("")
            self.description.setPlainText("")
            return
        demo = " [DEMO]" if detail.is_demo else ""
        self.title.setText(f"{detail.key}{demo} — {detail.title}")
        place = ", ".join(p for p in (detail.city, detail.country, detail.continent) if p)
        coords = "" if detail.latitude is None else f" ({detail.latitude:.4f}, {detail.longitude:.4f})"
        audio = f"{detail.n_channels or '?'} ch, {detail.layout or 'layout unknown'}"
        self.truth.setText(f"True location: {place}{coords} · {audio}")
        p = detail.prediction
        if p is None:
            self.predictions.setPlainText("No ALM prediction for this clip.")
        else:
            where = ", ".join(x for x in (p.predicted_city, p.predicted_country, p.predicted_continent) if x)
            coords = ""
            if p.predicted_latitude or p.predicted_longitude:
                coords = f" ({p.predicted_latitude or '?'}, {p.predicted_longitude or '?'})"
            error = "error unknown" if p.error_km is None else f"error {p.error_km:,.0f} km"
            self.predictions.setPlainText(
                f"{p.model}{' [DEMO]' if p.is_demo else ''} predicted: {where or 'no answer'}{coords} — {error}"
            )
        self.description.setPlainText(detail.description)

    def _fill_models(self, detail: ClipDetail | None) -> None:
        self._updating = True
        try:
            self.model_box.clear()
            if detail is not None:
                for p in detail.predictions:
                    judges = len(detail.for_alm(p.alm_run_id).judge_names)
                    suffix = f" · {judges} judge{'s' if judges != 1 else ''}" if judges else " · not judged"
                    self.model_box.addItem(f"{p.model}{' [DEMO]' if p.is_demo else ''}{suffix}", p.alm_run_id)
                self.model_box.setCurrentIndex(self.model_box.findData(detail.alm_run_id))
            self.model_box.setEnabled(self.model_box.count() > 1)
        finally:
            self._updating = False

    def _model_activated(self, index: int) -> None:
        alm_run_id = self.model_box.itemData(index)
        if self._updating or alm_run_id is None:
            return
        self.preferred_alm_run_id = int(alm_run_id)
        self.almChosen.emit(int(alm_run_id))


class ClipPanel(QWidget):
    """Localizability, percentile and the expert's rating, decision and note for the clip.

    The localizability score and percentile derive from the judges' contributions: like the
    judges and other experts, blind mode hides them until ``show_others``.

    Signals carry the new value; the window turns them into commands.
    """

    ratingChanged = Signal(object)
    decisionChanged = Signal(object)
    noteChanged = Signal(object)
    revealRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.score = plain_label()
        self.flags = plain_label()
        self.rating = QComboBox()
        self.rating.addItems(["—", "1", "2", "3", "4", "5"])
        self.decision = QComboBox()
        self.decision.addItems(["—", "accept", "reject", "unsure"])
        self.note = QLineEdit()
        self.note.setPlaceholderText("note (Enter saves)")
        self.reveal = QPushButton("Reveal judges")
        self.reveal.setToolTip("Blind mode: show the judges after you rated the clip")
        self.others = plain_label()
        form = QFormLayout()
        form.addRow("Localizability", self.score)
        form.addRow("Quality", self.flags)
        form.addRow("Your rating (1–5)", self.rating)
        form.addRow("Decision", self.decision)
        form.addRow("Note", self.note)
        row = QHBoxLayout()
        row.addWidget(self.reveal)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(row)
        layout.addWidget(self.others)
        layout.addStretch(1)
        self._updating = False
        self.rating.activated.connect(self._rating_activated)
        self.decision.activated.connect(self._decision_activated)
        self.note.editingFinished.connect(self._note_finished)
        self.reveal.clicked.connect(self.revealRequested.emit)
        self._note_value: str | None = None

    def set_detail(self, detail: ClipDetail | None, *, show_others: bool) -> None:
        self._updating = True
        try:
            if detail is None:
                self.score.setText("")
                self.flags.setText("")
                self.rating.setCurrentIndex(0)
                self.decision.setCurrentIndex(0)
                self.note.setText("")
                self.others.setText("")
                return
            if not show_others:
                self.score.setText(HIDDEN_IN_BLIND_MODE)
            elif detail.localizability is None:
                self.score.setText("no curation run yet (aglw fit)")
            else:
                candidate = "candidate" if detail.candidate else "not a candidate"
                self.score.setText(
                    f"{detail.localizability:.3f} (percentile {detail.percentile:.0f}, θ = {detail.theta:g}, {candidate})"
                )
            self.flags.setText(", ".join(detail.quality_flags) or "no quality flags")
            own = detail.own_label
            self.rating.setCurrentIndex(own.rating or 0)
            self.decision.setCurrentIndex(0 if own.decision is None else self.decision.findText(own.decision))
            self._note_value = own.note
            self.note.setText(own.note or "")
            if show_others and detail.other_clip_labels:
                self.others.setText(
                    "Other experts: "
                    + "; ".join(f"{name}: rating {s.rating or '—'}, {s.decision or '—'}" for name, s in detail.other_clip_labels)
                )
            else:
                self.others.setText("")
        finally:
            self._updating = False

    def _rating_activated(self, index: int) -> None:
        if not self._updating:
            self.ratingChanged.emit(index or None)

    def _decision_activated(self, index: int) -> None:
        if not self._updating:
            self.decisionChanged.emit(self.decision.itemText(index) if index else None)

    def _note_finished(self) -> None:
        text = self.note.text().strip() or None
        if not self._updating and text != self._note_value:
            self._note_value = text
            self.noteChanged.emit(text)
