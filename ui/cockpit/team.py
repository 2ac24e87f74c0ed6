"""Team panel: per-annotator progress; Refresh (F5) re-reads everyone's finished labels."""

from __future__ import annotations

from PySide6.QtWidgets import QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from storage import Store, display_url
from workbench.team import AnnotatorProgress, annotator_progress

COLUMNS = ["Annotator", "Role", "Clips labelled", "Rated", "Decided", "Category labels", "Forced polarities", "Last activity (UTC)"]


class TeamView(QWidget):
    """A table of :func:`workbench.team.annotator_progress`."""

    def __init__(self, store: Store, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        # a PostgreSQL URL may carry a password: never show it
        self.where = QLabel(f"project: {display_url(store.url)}")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        layout = QVBoxLayout(self)
        layout.addWidget(self.where)
        layout.addWidget(self.table, 1)
        layout.addWidget(QLabel("Press F5 to see the others' latest finished labels."))
        self.progress: list[AnnotatorProgress] = []
        self.refresh()

    def refresh(self) -> None:
        self.progress = annotator_progress(self.store)
        self.table.setRowCount(len(self.progress))
        for r, p in enumerate(self.progress):
            values = [p.name, p.role, f"{p.clips_labelled} / {p.n_clips}", str(p.clips_rated), str(p.clips_decided),
                      str(p.category_labels), str(p.polarity_overrides),
                      p.last_activity.strftime("%Y-%m-%d %H:%M:%S") if p.last_activity else ""]
            for c, value in enumerate(values):
                self.table.setItem(r, c, QTableWidgetItem(value))
