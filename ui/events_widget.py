"""The events panel widget: one clip's event list, class/front-back controls and headphone controls,
and the per-class colours events are drawn in. The logic that edits events is
:class:`ui.events_panel.EventsController`; this module only lays out what it drives.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.audio.binaural import SPHERICAL_HEAD_NAME
from workbench.events.model import FRONT_BACK, STARSS23_CLASSES

# One colour per class (Okabe–Ito and Tableau hues: distinguishable, also for most colour-blind eyes).
_PALETTE = ("#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7", "#ffffff",
            "#8c564b", "#bcbd22", "#17becf", "#ff9896", "#9467bd")


def class_colour(name: str, classes: tuple[str, ...] = STARSS23_CLASSES) -> QColor:
    """The colour of a class (classes outside the list get a stable colour from their name)."""
    index = classes.index(name) if name in classes else sum(map(ord, name))
    return QColor(_PALETTE[index % len(_PALETTE)])


class EventsPanel(QWidget):
    """The list and controls of one clip's events (the logic lives in :class:`EventsController`)."""

    markToggled = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.mark = QCheckBox("Mark events")
        self.mark.setToolTip("Shift+drag a span on the spectrogram to add an event (drag a rectangle to pre-fill "
                             "the direction from that frequency band only); click the direction view to correct "
                             "it, Ctrl+drag there to draw a moving source's track, Ctrl+click to add a track point")
        self.mark.toggled.connect(self.markToggled.emit)
        self.list = QListWidget()
        self.class_box = QComboBox()
        self.class_box.addItems(list(STARSS23_CLASSES))
        # Narrow enough for the right dock column: long class names are read in the popup.
        self.class_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.class_box.setMinimumContentsLength(8)
        self.source = QSpinBox()
        self.source.setRange(0, 99)
        self.source.setToolTip("Source index: tells two overlapping sounds of one class apart (two dogs are 0 "
                               "and 1); a new event gets the lowest index free among overlapping events of its class")
        self.front_back = QComboBox()
        self.front_back.addItems(list(FRONT_BACK[::-1]))  # undecided first: never a guess
        self.delete_button = QPushButton("Delete")
        self.prefill_label = QLabel("")
        self.prefill_label.setTextFormat(Qt.TextFormat.PlainText)
        self.prefill_label.setWordWrap(True)
        self.headphones = QCheckBox("Headphones (binaural)")
        self.hrir_label = QLabel(f"HRIRs: {SPHERICAL_HEAD_NAME}")
        self.hrir_label.setTextFormat(Qt.TextFormat.PlainText)
        self.hrir_label.setWordWrap(True)
        self.sofa_button = QPushButton("SOFA file…")
        self.yaw = QSlider(Qt.Orientation.Horizontal)
        self.yaw.setRange(-180, 180)
        self.yaw_label = QLabel("yaw 0°")
        row = QHBoxLayout()
        row.addWidget(QLabel("class"))
        row.addWidget(self.class_box, 1)
        row.addWidget(QLabel("source"))
        row.addWidget(self.source)
        row2 = QHBoxLayout()
        row2.addWidget(QLabel("front/back"))
        row2.addWidget(self.front_back, 1)
        row2.addWidget(self.delete_button)
        yaw_row = QHBoxLayout()
        yaw_row.addWidget(self.yaw_label)
        yaw_row.addWidget(self.yaw, 1)
        hrir_row = QHBoxLayout()
        hrir_row.addWidget(self.hrir_label, 1)
        hrir_row.addWidget(self.sofa_button)
        box = QVBoxLayout(self)
        box.addWidget(self.mark)
        box.addWidget(self.list, 1)
        box.addLayout(row)
        box.addLayout(row2)
        box.addWidget(self.prefill_label)
        box.addWidget(self.headphones)
        box.addLayout(yaw_row)
        box.addLayout(hrir_row)
        self.set_foa(False)

    def set_foa(self, foa: bool) -> None:
        """Headphone decoding applies to FOA clips only."""
        for widget in (self.headphones, self.yaw, self.yaw_label, self.sofa_button, self.hrir_label):
            widget.setEnabled(foa)
