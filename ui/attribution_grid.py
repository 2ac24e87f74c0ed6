"""Attribution grid: one row per detected category; judges, consensus, polarity, the expert's label.

The expert's contribution, effect and polarities are edited through combo-box delegates; an
edit is handed to the window as ``editRequested(category_id, field, value)`` and becomes a
command there (house rule 1): ``contribution``, ``effect`` and ``polarity`` (the per-clip
polarity) are :class:`~workbench.commands.SetCategoryLabel` fields, ``category_polarity`` is
the expert's pool-wide P / N / neutral for the category
(:class:`~workbench.commands.SetCategoryPolarity`, curation-model.md section 4); every edit
can be undone. In blind mode the judges' columns, the consensus, the run's polarity and the
other experts' labels (and the rows of categories only they labelled) are hidden until the
expert has entered their own labels; the window's visibility policy
(:class:`workbench.review.visibility.VisibilityPolicy`) decides and hands over the rows. The
judges' columns are those of the ALM the detail was made for
(:meth:`workbench.review.views.ClipDetail.for_alm`).

Every category labelled on the clip has a row, also one outside the clip's top tags (an expert's
label there drives the fit): its name says "not among the top tags", and it is edited like the others.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtWidgets import QComboBox, QStyledItemDelegate, QTableView, QWidget

from ui.evidence import plain_tooltip
from workbench.labels import CONTRIBUTIONS, EFFECTS, POLARITIES
from workbench.review.views import CategoryRow, ClipDetail, ExpertLabelView

NOT_TOP_TAG = "not among the top tags"
CONTRIBUTION_TEXT = {0: "0 not used", 1: "1 minor", 2: "2 supporting", 3: "3 decisive"}
EFFECT_SIGN = {"helped": "+", "misled": "−", "neutral": "="}
_Index = QModelIndex | QPersistentModelIndex


def other_experts_text(experts: tuple[ExpertLabelView, ...]) -> str:
    """Compact summary of other experts' labels: contribution and effect sign per expert,
    e.g. ``3+ / 1−`` (+ helped, − misled, = neutral, ? no contribution given)."""
    return " / ".join(
        f"{'?' if e.contribution is None else e.contribution}{EFFECT_SIGN.get(e.effect or '', '')}" for e in experts
    )


def other_experts_tooltip(experts: tuple[ExpertLabelView, ...]) -> str | None:
    """One line per other expert: name, contribution, effect and per-clip polarity."""
    if not experts:
        return None
    lines = []
    for e in experts:
        contribution = "—" if e.contribution is None else CONTRIBUTION_TEXT.get(e.contribution, str(e.contribution))
        polarity = f", P/N {e.polarity}" if e.polarity else ""
        lines.append(f"{e.annotator_name}: {contribution}, {e.effect or 'no effect given'}{polarity}")
    return "\n".join(lines)


class AttributionModel(QAbstractTableModel):
    """Columns: category, tag p, one per judge, consensus, polarity, other experts, your contribution,
    your effect, your polarity on this clip, your polarity of the category on all clips."""

    editRequested = Signal(str, str, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[CategoryRow] = []
        self.judges: list[str] = []

    def set_detail(self, detail: ClipDetail | None, rows: list[CategoryRow] | None = None) -> None:
        """Show ``detail``'s categories, or the ``rows`` of it the visibility policy allows."""
        self.beginResetModel()
        self.rows = list(rows) if rows is not None else list(detail.categories) if detail else []
        self.judges = list(detail.judge_names) if detail else []
        self.endResetModel()

    # column layout
    def judge_columns(self) -> range:
        return range(2, 2 + len(self.judges))

    @property
    def consensus_column(self) -> int:
        return 2 + len(self.judges)

    @property
    def polarity_column(self) -> int:
        return self.consensus_column + 1

    @property
    def others_column(self) -> int:
        return self.consensus_column + 2

    @property
    def contribution_column(self) -> int:
        return self.consensus_column + 3

    @property
    def effect_column(self) -> int:
        return self.consensus_column + 4

    @property
    def clip_polarity_column(self) -> int:
        return self.consensus_column + 5

    @property
    def category_polarity_column(self) -> int:
        return self.consensus_column + 6

    def editable_fields(self) -> dict[int, str]:
        """Editable column → the edited field (as sent with ``editRequested``)."""
        return {
            self.contribution_column: "contribution",
            self.effect_column: "effect",
            self.clip_polarity_column: "polarity",
            self.category_polarity_column: "category_polarity",
        }

    @staticmethod
    def _value(row: CategoryRow, field: str) -> Any:
        return {
            "contribution": row.expert_contribution,
            "effect": row.expert_effect,
            "polarity": row.expert_polarity,
            "category_polarity": row.expert_category_polarity,
        }[field]

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else 9 + len(self.judges)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation != Qt.Orientation.Horizontal or role != Qt.ItemDataRole.DisplayRole:
            return None
        if section in self.judge_columns():
            return self.judges[section - 2]
        names = {0: "category", 1: "tag p", self.consensus_column: "consensus", self.polarity_column: "polarity",
                 self.others_column: "other experts", self.contribution_column: "your contribution",
                 self.effect_column: "your effect",
                 self.clip_polarity_column: "your P/N (this clip)",
                 self.category_polarity_column: "your P/N (all clips)"}
        return names.get(section)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = self.rows[index.row()], index.column()
        field = self.editable_fields().get(column)
        if role == Qt.ItemDataRole.EditRole:
            return self._value(row, field) if field is not None else None
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == self.clip_polarity_column:
                return "Your polarity for this category on this clip only (overrides the category's sign here)"
            if column == self.category_polarity_column:
                return ("Your polarity for this category on every clip (overrides the fitted one at the next fit); "
                        "— keeps the fitted polarity")
            if column in self.judge_columns():
                judgment = row.judgments.get(self.judges[column - 2])
                if judgment is None:
                    return None
                if judgment.status != "ok":
                    return "failed judgment"
                # Quotes from a model: shown as written, never as markup.
                return plain_tooltip(f"evidence: {judgment.evidence}") if judgment.evidence else "no evidence quoted"
            if column == self.others_column:
                return plain_tooltip(other_experts_tooltip(row.other_experts))
            if column == 0:
                outside = "" if row.among_top_tags else f" ({NOT_TOP_TAG} of this clip; labelled or judged on it)"
                return plain_tooltip(f"{row.name}: {row.category_id} — {row.root}{outside}")
            return None
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if column == 0:
            return row.name if row.among_top_tags else f"{row.name} ({NOT_TOP_TAG})"
        if column == 1:
            return "" if row.tag_probability is None else f"{row.tag_probability:.2f}"
        if column in self.judge_columns():
            judgment = row.judgments.get(self.judges[column - 2])
            if judgment is None:
                return ""
            if judgment.status != "ok" or judgment.contribution is None:
                return "failed"
            return f"{judgment.contribution} {judgment.effect or ''}".strip()
        if column == self.consensus_column:
            return "" if row.consensus is None else f"{row.consensus:.2f}"
        if column == self.polarity_column:
            if row.polarity is None:
                return ""
            return row.polarity if row.polarity == row.fitted_polarity else f"{row.polarity} (fitted {row.fitted_polarity})"
        if column == self.others_column:
            return other_experts_text(row.other_experts)
        if column == self.contribution_column:
            return CONTRIBUTION_TEXT.get(row.expert_contribution, "") if row.expert_contribution is not None else ""
        if column == self.effect_column:
            return row.expert_effect or ""
        if column == self.clip_polarity_column:
            return row.expert_polarity or ""
        if column == self.category_polarity_column:
            return row.expert_category_polarity or ""
        return None

    def flags(self, index: _Index) -> Qt.ItemFlag:
        base = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.column() in self.editable_fields():
            return base | Qt.ItemFlag.ItemIsEditable
        return base

    def setData(self, index: _Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        """Ask for an edit; the model itself changes only when the window reloads the clip."""
        if role != Qt.ItemDataRole.EditRole or not index.isValid():
            return False
        row = self.rows[index.row()]
        field = self.editable_fields().get(index.column())
        if field is None or value == self._value(row, field):
            return False
        self.editRequested.emit(row.category_id, field, value)
        return True


class ChoiceDelegate(QStyledItemDelegate):
    """A combo box of fixed choices (value, text); the first entry clears the value."""

    def __init__(self, choices: list[tuple[Any, str]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.choices = [(None, "—")] + choices

    def createEditor(self, parent: QWidget, option: Any, index: _Index) -> QWidget:  # noqa: N802
        editor = QComboBox(parent)
        for _value, text in self.choices:
            editor.addItem(text)
        return editor

    def setEditorData(self, editor: QWidget, index: _Index) -> None:  # noqa: N802
        current = index.data(Qt.ItemDataRole.EditRole)
        values = [value for value, _ in self.choices]
        editor.setCurrentIndex(values.index(current) if current in values else 0)  # type: ignore[attr-defined]

    def setModelData(self, editor: QWidget, model: Any, index: _Index) -> None:  # noqa: N802
        model.setData(index, self.choices[editor.currentIndex()][0], Qt.ItemDataRole.EditRole)  # type: ignore[attr-defined]


class AttributionGrid(QTableView):
    """The table view with delegates and blind-mode column hiding."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.grid_model = AttributionModel(self)
        self.setModel(self.grid_model)
        self.contribution_delegate = ChoiceDelegate([(c, CONTRIBUTION_TEXT[c]) for c in CONTRIBUTIONS], self)
        self.effect_delegate = ChoiceDelegate([(e, e) for e in EFFECTS], self)
        self.polarity_delegate = ChoiceDelegate([(p, p) for p in POLARITIES], self)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setStretchLastSection(True)
        self.setEditTriggers(QTableView.EditTrigger.AllEditTriggers)
        self.judges_visible = True

    def set_detail(self, detail: ClipDetail | None, *, judges_visible: bool,
                   rows: list[CategoryRow] | None = None) -> None:
        """Show the clip's ``rows`` (the visibility policy's choice; default: every category)."""
        self.grid_model.set_detail(detail, rows)
        for column in range(self.grid_model.columnCount()):
            self.setItemDelegateForColumn(column, None)  # type: ignore[arg-type]
            # The header keeps hidden sections across a model reset: with fewer judges (another
            # clip or ALM) a hidden judge column would otherwise hide the expert's own columns.
            self.setColumnHidden(column, False)
        self.setItemDelegateForColumn(self.grid_model.contribution_column, self.contribution_delegate)
        self.setItemDelegateForColumn(self.grid_model.effect_column, self.effect_delegate)
        self.setItemDelegateForColumn(self.grid_model.clip_polarity_column, self.polarity_delegate)
        self.setItemDelegateForColumn(self.grid_model.category_polarity_column, self.polarity_delegate)
        self.set_judges_visible(judges_visible)
        self.resizeColumnsToContents()

    def set_judges_visible(self, visible: bool) -> None:
        """Blind mode hides the judges' columns, the consensus, the fitted polarity and the other
        experts' labels."""
        self.judges_visible = visible
        model = self.grid_model
        for column in [*model.judge_columns(), model.consensus_column, model.polarity_column, model.others_column]:
            self.setColumnHidden(column, not visible)
