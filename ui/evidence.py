"""Evidence panels: tags, the ALM's reasoning, location, metadata, and the clip judgment panel.

Text from datasets and models is shown as plain text only (``setPlainText``, labels with
``Qt.PlainText``), never as rich text or HTML: a description containing ``<img src=http://…>``
shows those characters. Qt renders a tooltip as rich text when it looks like HTML, so tooltips
with such text go through :func:`plain_tooltip`. Dataset descriptions (AGL1K) break their lines
with ``<br />`` and escape characters as entities: :func:`description_text` turns those into
line breaks and characters, and leaves every other tag as literal text.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from functools import lru_cache

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

from workbench.errors import InputError
from workbench.review.views import CategoryRow, ClipDetail, PredictionView, TagView
from workbench.review.visibility import HIDDEN_IN_BLIND_MODE
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




def plain_label(text: str = "") -> QLabel:
    """A QLabel that never interprets its text as rich text."""
    label = QLabel()
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(text)
    label.setWordWrap(True)
    return label


def plain_tooltip(text: str | None) -> str | None:
    """A tooltip that shows ``text`` as written (line breaks kept), whatever characters it holds.

    Qt renders a tooltip that looks like HTML as rich text (``<img src=…>`` would load an image);
    escaped and wrapped in a paragraph, it is rich text whose rendering is exactly ``text``.
    """
    if not text:
        return text
    return f'<p style="white-space:pre-wrap">{html.escape(text)}</p>'


_LINE_BREAK = re.compile(r"<br\s*/?\s*>", re.IGNORECASE)


def description_text(raw: str) -> str:
    """A dataset description as plain text: ``<br />`` (any spelling) → line break, entities → characters.

    Line breaks are converted first, so an escaped ``&lt;br /&gt;`` stays the characters ``<br />``.
    Any other tag stays literal text (it is shown, never rendered).
    """
    return html.unescape(_LINE_BREAK.sub("\n", raw))


MUSIC_GENRE_ID = "/m/0kpv1t"
# Tag names that are everyday words in a location reasoning ("the country is Morocco"): a mention
# of the word says nothing about the tag. Used with or without an ontology; with one, every
# music genre (descendant of "Music genre") is left out of the highlighting as well.
GENERIC_TAG_WORDS = frozenset({
    "country", "pop", "rock", "house", "world", "soul", "blues", "funk", "swing", "dub", "chant",
    "mantra", "grunge", "electro", "opera",
})


@lru_cache(maxsize=1)
def _music_genre_ids() -> frozenset[str]:
    """The AudioSet music-genre classes, from the local ontology (empty without one)."""
    from workbench.tagging.ontology import load_local_ontology

    try:
        ontology = load_local_ontology()
    except InputError:
        return frozenset()
    if ontology is None or MUSIC_GENRE_ID not in ontology.nodes:
        return frozenset()
    return frozenset(ontology.descendants(MUSIC_GENRE_ID))


def highlighted_names(categories: Sequence[CategoryRow | str]) -> list[str]:
    """The category names worth highlighting in a reasoning: music genres and tag names that are
    everyday words (``Country``) are left out. Plain strings are names without an id."""
    genres = _music_genre_ids()
    names = []
    for category in categories:
        name = category if isinstance(category, str) else category.name
        category_id = None if isinstance(category, str) else category.category_id
        if not name or name.casefold() in GENERIC_TAG_WORDS or category_id in genres:
            continue
        names.append(name)
    return names


def _coordinates(latitude: float | str | None, longitude: float | str | None) -> str:
    """`` (lat, lon)`` with 4 decimals; as written when not numbers (an ALM's answer may be
    anything), ``?`` for a missing one; empty when both are missing."""
    if latitude in (None, "") and longitude in (None, ""):
        return ""
    try:
        lat, lon = float(latitude), float(longitude)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f" ({latitude or '?'}, {longitude or '?'})"
    if not (math.isfinite(lat) and math.isfinite(lon)):
        return f" ({latitude}, {longitude})"
    return f" ({lat:.4f}, {lon:.4f})"


def true_location_text(detail: ClipDetail) -> str:
    place = ", ".join(p for p in (detail.city, detail.country, detail.continent) if p) or "place unknown"
    return f"{place}{_coordinates(detail.latitude, detail.longitude)}"


def predicted_location_text(prediction: PredictionView) -> str:
    where = ", ".join(x for x in (prediction.predicted_city, prediction.predicted_country,
                                  prediction.predicted_continent) if x)
    coords = _coordinates(prediction.predicted_latitude, prediction.predicted_longitude)
    return f"{where or 'no answer'}{coords}"


def error_text(prediction: PredictionView) -> str:
    return "error unknown" if prediction.error_km is None else f"error {prediction.error_km:,.0f} km"


def location_text(detail: ClipDetail | None) -> str:
    """One line: the clip's true location, the shown ALM's predicted one and the distance between."""
    if detail is None:
        return ""
    truth = f"True: {true_location_text(detail)}"
    p = detail.prediction
    if p is None:
        return f"{truth}  ·  no ALM prediction for this clip"
    model = f"{p.model}{' [DEMO]' if p.is_demo else ''}"
    return f"{truth}  ·  {model} predicted: {predicted_location_text(p)}  ·  {error_text(p)}"


class TagsPanel(QTableWidget):
    """Top-k EfficientAT tags with probability bars coloured by ontology root."""

    def __init__(self, top_k: int = 10, parent: QWidget | None = None) -> None:
        super().__init__(0, 3, parent)
        self.top_k = top_k
        # The probability is a number in its own column, never drawn over its bar; the bar's
        # colour (the tag's AudioSet root) is explained by the legend under the table.
        self.setHorizontalHeaderLabels(["tag", "p", "probability"])
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setStretchLastSection(True)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        from ui.legend import ColourLegend

        self.legend = ColourLegend(columns=2)

    def with_legend(self) -> QWidget:
        """The table with its colour legend below it (the Tags tab)."""
        tab = QWidget()
        column = QVBoxLayout(tab)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self, 1)
        column.addWidget(self.legend)
        return tab

    def set_tags(self, tags: Sequence[TagView]) -> None:
        from workbench.formatting import probability

        shown = list(tags)[: self.top_k]
        self.setRowCount(len(shown))
        roots: dict[str, str] = {}
        for row, tag in enumerate(shown):
            item = QTableWidgetItem(tag.name)
            item.setToolTip(plain_tooltip(f"{tag.name}: {tag.audioset_id} — {tag.root}"))
            self.setItem(row, 0, item)
            number = QTableWidgetItem(probability(tag.probability))
            number.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.setItem(row, 1, number)
            bar = QProgressBar()
            bar.setRange(0, 1000)
            bar.setValue(int(round(tag.probability * 1000)))
            bar.setTextVisible(False)
            colour = ROOT_COLOURS.get(tag.root, "#bdbdbd")
            roots.setdefault(tag.root or "other", colour)
            bar.setStyleSheet(f"QProgressBar::chunk {{ background-color: {colour}; }}")
            self.setCellWidget(row, 2, bar)
        self.legend.set_entries([(colour, root) for root, colour in roots.items()])
        self.resizeColumnToContents(0)
        self.resizeColumnToContents(1)


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

    def set_reasoning(self, text: str, categories: Sequence[CategoryRow | str]) -> None:
        """Show ``text``; highlight the categories' names (see :func:`highlighted_names`) and time references."""
        self.setPlainText(text)
        self.references = find_time_references(text)
        self.highlighter.set_categories(highlighted_names(categories))

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
    (:attr:`workbench.review.views.ClipDetail.alm_run_id`). Choosing one records it as
    ``preferred_alm_run_id`` (kept for the next clips that have that ALM) and emits
    ``almChosen(alm_run_id)``; the window then shows the clip for that ALM.
    """

    almChosen = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.preferred_alm_run_id: int | None = None
        self._updating = False
        self._decoded: tuple[int, int, str | None] | None = None  # clip id, channels, layout of the decoded file
        self._detail_clip_id: int | None = None
        self._stored_audio: tuple[int | None, str | None] = (None, None)
        self._place = ""
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
        # the chosen ALM's judges beside the title; the combo on a line of its own keeps a model's name whole
        self.model_judges = plain_label()
        model_row = QHBoxLayout()
        model_row.addWidget(plain_label("ALM"))
        model_row.addWidget(self.model_judges, 1)
        layout = QVBoxLayout(self)
        layout.setSpacing(4)  # the combo's own line costs no window height (the dock sets the window's minimum)
        layout.addWidget(self.title)
        layout.addWidget(self.truth)
        layout.addLayout(model_row)
        layout.addWidget(self.model_box)
        layout.addWidget(self.predictions)
        layout.addWidget(plain_label("Description"))
        layout.addWidget(self.description, 1)

    def set_detail(self, detail: ClipDetail | None) -> None:
        """Show ``detail``; the prediction and the selected ALM are those of ``detail.alm_run_id``."""
        self._fill_models(detail)
        if detail is None:
            self._detail_clip_id = None
            for widget in (self.title, self.truth):
                widget.setText("")
            self.predictions.setPlainText("")
            self.description.setPlainText("")
            return
        demo = " [DEMO]" if detail.is_demo else ""
        self.title.setText(f"{detail.key}{demo} — {detail.title}")
        self._detail_clip_id = detail.clip_id
        self._stored_audio = (detail.n_channels, detail.layout)
        self._show_truth(true_location_text(detail))
        p = detail.prediction
        if p is None:
            self.predictions.setPlainText("No ALM prediction for this clip.")
        else:
            self.predictions.setPlainText(
                f"{p.model}{' [DEMO]' if p.is_demo else ''} predicted: {predicted_location_text(p)} — {error_text(p)}"
            )
        self.description.setPlainText(description_text(detail.description))

    def hide_location(self, key: str, reason: str) -> None:
        """Guess mode: the true location, the ALM's answer, the title and the description (which
        often name the place) give way to ``reason`` until the annotator's guess is saved."""
        self.title.setText(key)
        self._show_truth(reason)
        self.predictions.setPlainText(f"ALM answer: {reason}")
        self.description.setPlainText(f"Description: {reason}")

    def set_decoded_audio(self, clip_id: int, n_channels: int, layout: str | None) -> None:
        """The channels and layout of the clip's decoded file: they replace what the store says
        (an imported clip often records neither) for as long as this clip is shown."""
        self._decoded = (clip_id, n_channels, layout)
        if self._detail_clip_id == clip_id:
            self._show_truth(self._place)

    def _show_truth(self, place: str) -> None:
        self._place = place
        n_channels, layout = self._stored_audio
        if self._decoded is not None and self._decoded[0] == self._detail_clip_id:
            _, n_channels, layout = self._decoded
        audio = f"{n_channels or '?'} ch, {layout or 'layout unknown'}"
        self.truth.setText(f"True location: {place} · {audio}")

    def _fill_models(self, detail: ClipDetail | None) -> None:
        self._updating = True
        try:
            self.model_box.clear()
            if detail is not None:
                for p in detail.predictions:
                    judges = len(detail.for_alm(p.alm_run_id).judge_names)
                    suffix = f"{judges} judge{'s' if judges != 1 else ''}" if judges else "not judged"
                    name = f"{p.model}{' [DEMO]' if p.is_demo else ''}"
                    self.model_box.addItem(name, p.alm_run_id)
                    self.model_box.setItemData(self.model_box.count() - 1, f"{name} · {suffix}",
                                               Qt.ItemDataRole.ToolTipRole)
                    if p.alm_run_id == detail.alm_run_id:
                        self.model_judges.setText(f"· {suffix}")
                self.model_box.setCurrentIndex(self.model_box.findData(detail.alm_run_id))
            else:
                self.model_judges.setText("")
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
    # (flag, True: keep the clip despite the flag / False: the flag stands); the window makes a command
    qualityVoted = Signal(str, bool)

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
        # the curator's control of each flag (curation-model.md: every flag can be overruled)
        self.quality_vote = QComboBox()
        self.quality_vote.setToolTip("Overrule a quality flag to keep the clip in the selection despite it "
                                     "(your vote, in the label history; Ctrl+Z undoes), or restore it")
        self.quality_vote.activated.connect(self._quality_vote_activated)
        form.addRow("Your flag vote", self.quality_vote)
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
                # two short lines rather than one long wrapped one: a narrow Judgment dock cut it
                self.score.setText(f"{detail.localizability:.3f}, percentile {detail.percentile:.0f}\n"
                                   f"{candidate} (θ = {detail.theta:g})")
            self.flags.setText(", ".join(detail.quality_flags) or "no quality flags")
            own = detail.own_label
            self.rating.setCurrentIndex(own.rating or 0)
            self.decision.setCurrentIndex(0 if own.decision is None else self.decision.findText(own.decision))
            self._note_value = own.note
            self.note.setText(own.note or "")
            if show_others and detail.other_clip_labels:
                self.others.setText(
                    "Other experts: "
                    + "; ".join(f"{name}: rating {s.rating or '—'}, {s.decision or '—'}"
                                + (f", note: {s.note}" if s.note else "") for name, s in detail.other_clip_labels)
                )
            else:
                self.others.setText("")
        finally:
            self._updating = False

    def set_quality_votes(self, flags: Sequence[str], own_votes: dict[str, bool | None],
                          details: Sequence[str] = ()) -> None:
        """The clip's flags and this annotator's votes on them: the Quality row names each flag with
        the vote (its tooltip: each flag's value, cut-off and, for a pool-relative flag, the pool),
        the combo offers the other choice per flag."""
        self._updating = True
        try:
            self.quality_vote.clear()
            self.quality_vote.addItem("—", None)
            for flag in flags:
                vote = own_votes.get(flag)
                if vote is not True:
                    self.quality_vote.addItem(f"overrule {flag}", (flag, True))
                if vote is not False:
                    self.quality_vote.addItem(f"restore {flag}", (flag, False))
            self.quality_vote.setEnabled(bool(flags))
            if flags:
                shown = {True: " (overruled by you)", False: " (stands: your vote)", None: ""}
                self.flags.setText(", ".join(f"{f}{shown[own_votes.get(f)]}" for f in flags))
            self.flags.setToolTip("\n".join(details))
        finally:
            self._updating = False

    def _quality_vote_activated(self, index: int) -> None:
        choice = self.quality_vote.itemData(index)
        if not self._updating and choice is not None:
            self.qualityVoted.emit(choice[0], bool(choice[1]))

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
