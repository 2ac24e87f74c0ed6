"""Every view readable at 1280×800 and 1920×1080 (issue 30).

One window per size walks through the views an expert uses — the review window with each
Evidence tab, the Events dock, guess mode, every cockpit view (floated at the window's size, as
``aglw screenshot --view`` renders it) and the ALM dialog — and checks, in each:

* no label, header section, tab, button or check box is narrower than its text (its needed width
  is measured with ``QFontMetrics.horizontalAdvance``), and no word-wrapped label is cut off below;
* a scroll area shows a useful part of what it holds (not only a check box of a whole panel);
* no text drawn in a plot (text items, axis titles, tick labels) overlaps another text;
* no caption or legend in a plot is drawn over the data of a view box that shows an image or a
  trace (captions go above the plot, legends beside it; issue 39);
* every colour that codes data has a legend that shows the colour itself (a swatch), and no
  colour is written out as text (``[#e6194b]``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QPoint, QRect, QRectF
from PySide6.QtGui import QFontMetrics, QImage, QPainter, QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QCheckBox,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QStyle,
    QTabBar,
    QWidget,
)

# The offscreen platform plugin reports these when a dock floats; they are not application problems.
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints", "does not support raise")

SIZES = [(1280, 800), (1920, 1080)]
_SLACK_PX = 1  # rounding of font metrics
_HEX = re.compile(r"#[0-9a-fA-F]{6}\b")
_SNAKE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")


def _settle() -> None:
    for _ in range(3):
        QApplication.processEvents()


def _visible_rect(widget: QWidget) -> QRect:
    """The part of ``widget`` (its own coordinates) inside every parent up to its window."""
    rect, child, offset = widget.rect(), widget, QPoint(0, 0)
    while not child.isWindow():
        parent = child.parentWidget()
        offset += child.pos()
        rect = rect.translated(child.pos()).intersected(parent.rect())
        if rect.isEmpty():
            return QRect()
        child = parent
    return rect.translated(-offset)


def _shown(widget: QWidget) -> bool:
    # A dock behind another dock's tab stays "visible", moved out of the window: not shown.
    if not (widget.isVisible() and widget.width() > 0 and widget.height() > 0):
        return False
    return not _visible_rect(widget).isEmpty()


def _plain(label: QLabel) -> str:
    text = label.text()
    if label.textFormat() != label.textFormat().PlainText and ("<" in text and ">" in text):
        document = QTextDocument()
        document.setHtml(text)
        text = document.toPlainText()
    return text


def _widgets(root: QWidget) -> Iterator[QWidget]:
    yield root
    yield from root.findChildren(QWidget)


def clipped_texts(root: QWidget) -> list[str]:
    """Texts in ``root`` that are wider (or, wrapped, taller) than the space they are given."""
    problems: list[str] = []
    for widget in _widgets(root):
        if not _shown(widget):
            continue
        metrics = QFontMetrics(widget.font())
        if isinstance(widget, QLabel) and widget.text() and widget.pixmap().isNull():
            text = _plain(widget)
            space = widget.contentsRect().width() - 2 * widget.margin() - max(widget.indent(), 0)
            if widget.wordWrap():
                needed_height = widget.heightForWidth(widget.width())
                if needed_height > widget.height() + _SLACK_PX:
                    problems.append(f"label {text[:60]!r} cut below ({widget.height()} of {needed_height} px)")
                continue
            needed = max(metrics.horizontalAdvance(line) for line in text.splitlines() or [""])
            if needed > space + _SLACK_PX:
                problems.append(f"label {text[:60]!r} needs {needed} px, has {space}")
        elif isinstance(widget, QHeaderView):
            model = widget.model()
            if model is None:
                continue
            style = widget.style()
            margin = 2 * style.pixelMetric(QStyle.PixelMetric.PM_HeaderMargin, None, widget)
            count = model.columnCount() if widget.orientation().name == "Horizontal" else model.rowCount()
            for section in range(count):
                if widget.isSectionHidden(section) or widget.sectionSize(section) == 0:
                    continue
                text = str(model.headerData(section, widget.orientation()) or "")
                needed = max((metrics.horizontalAdvance(line) for line in text.splitlines()), default=0) + margin
                if widget.orientation().name != "Horizontal":
                    continue
                if needed > widget.sectionSize(section) + _SLACK_PX:
                    problems.append(f"header {text!r} needs {needed} px, has {widget.sectionSize(section)}")
                if _SNAKE.search(text):
                    problems.append(f"header {text!r} is a program name, not a reader's")
        elif isinstance(widget, QTabBar):
            for index in range(widget.count()):
                if not widget.isTabVisible(index):
                    continue
                rect, wanted = widget.tabRect(index), widget.tabSizeHint(index)
                text = widget.tabText(index)
                # a tab narrower than its text is elided ("Erro"); one past the bar's edge is cut
                elided = QFontMetrics(widget.font()).horizontalAdvance(text) > rect.width()
                room = _visible_rect(widget)
                if elided or rect.right() > room.right() + _SLACK_PX or rect.left() < room.left():
                    problems.append(f"tab {text!r} shown in {rect.width()} px of {wanted.width()}"
                                    f" (bar {widget.width()} px)")
        elif isinstance(widget, QAbstractButton) and widget.text():
            text = widget.text().replace("&&", "\0").replace("&", "").replace("\0", "&")
            needed = metrics.horizontalAdvance(text)
            style = widget.style()
            if isinstance(widget, QCheckBox):
                needed += style.pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth, None, widget)
                needed += style.pixelMetric(QStyle.PixelMetric.PM_CheckBoxLabelSpacing, None, widget)
            elif isinstance(widget, QRadioButton):
                needed += style.pixelMetric(QStyle.PixelMetric.PM_ExclusiveIndicatorWidth, None, widget)
                needed += style.pixelMetric(QStyle.PixelMetric.PM_RadioButtonLabelSpacing, None, widget)
            elif isinstance(widget, QPushButton):
                needed += 2 * style.pixelMetric(QStyle.PixelMetric.PM_ButtonMargin, None, widget) // 2
            if needed > widget.width() + _SLACK_PX:
                problems.append(f"button {text!r} needs {needed} px, has {widget.width()}")
    return problems


def cramped_scroll_areas(root: QWidget) -> list[str]:
    """Scroll areas that show less than half of what they hold (and less than 150 px of it)."""
    problems = []
    for area in root.findChildren(QScrollArea):
        inner = area.widget()
        if not _shown(area) or inner is None:
            continue
        needed = inner.minimumSizeHint().height()
        shown = area.viewport().height()
        if shown < min(needed / 2, 150):
            problems.append(f"scroll area of {type(inner).__name__} shows {shown} of {needed} px")
    return problems


def cut_table_columns(root: QWidget) -> list[str]:
    """Table columns cut at the table's right edge or hidden past it (the table scrolls sideways),
    and cells whose text is wider than their column (elided: "unrevie…", "1,")."""
    from PySide6.QtWidgets import QAbstractItemView

    problems = []
    for view in root.findChildren(QAbstractItemView):
        header = getattr(view, "horizontalHeader", lambda: None)() or getattr(view, "header", lambda: None)()
        model = view.model()
        if not _shown(view) or header is None or model is None or header.isHidden():
            continue
        room = view.viewport().width()
        visible = [c for c in range(model.columnCount()) if not header.isSectionHidden(c) and header.sectionSize(c) > 0]
        last_stretches = header.stretchLastSection() and visible and header.sectionPosition(visible[-1]) < room
        for column in visible:
            title = str(model.headerData(column, header.orientation()) or column)
            start, size = header.sectionPosition(column), header.sectionSize(column)
            if start + size > room + _SLACK_PX and not (last_stretches and column == visible[-1]):
                shown = max(0, room - start)
                problems.append(f"column {title!r} shows {shown} of {size} px (the table scrolls sideways)")
                continue
            metrics = QFontMetrics(view.font())
            margin = 2 * (view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1)
            for row in range(min(model.rowCount(), 200)):
                text = model.index(row, column).data()
                if text is None or not isinstance(text, str) or not text:
                    continue
                needed = metrics.horizontalAdvance(text) + margin
                if needed > size + _SLACK_PX:
                    problems.append(f"cell {text[:40]!r} in column {title!r} needs {needed} px, has {size}")
                    break
    return problems


def sideways_scroll_areas(root: QWidget) -> list[str]:
    """Scroll areas (a cockpit view's dock) that scroll sideways: the view is wider than the window."""
    problems = []
    for area in root.findChildren(QScrollArea):
        inner = area.widget()
        if not _shown(area) or inner is None:
            continue
        if area.horizontalScrollBar().maximum() > 0 and area.horizontalScrollBar().isVisible():
            problems.append(f"scroll area of {type(inner).__name__} scrolls sideways "
                            f"({inner.minimumSizeHint().width()} px wide in {area.viewport().width()})")
    return problems


def cut_combo_boxes(root: QWidget) -> list[str]:
    """Combo boxes whose current text is wider than their text field ("DEMO-ALM (synthetic re")."""
    from PySide6.QtWidgets import QComboBox, QStyleOptionComboBox

    problems = []
    for combo in root.findChildren(QComboBox):
        if not _shown(combo) or not combo.currentText():
            continue
        option = QStyleOptionComboBox()
        combo.initStyleOption(option)
        field = combo.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                             QStyle.SubControl.SC_ComboBoxEditField, combo)
        needed = QFontMetrics(combo.font()).horizontalAdvance(combo.currentText())
        if needed > field.width() + _SLACK_PX:
            problems.append(f"combo box {combo.currentText()[:60]!r} needs {needed} px, has {field.width()}")
    return problems


def _texts_in_plot(view) -> list[tuple[str, QRectF]]:  # type: ignore[no-untyped-def]
    """(text, scene rectangle) of every visible text in a pyqtgraph scene."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QGraphicsTextItem

    found = []
    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    for item in view.scene().items():
        if not item.isVisible() or not item.isVisibleTo(None):
            continue
        if isinstance(item, QGraphicsTextItem):
            text = item.toPlainText().strip()
            if text and item.opacity() > 0 and all(p.isVisible() for p in _ancestors(item)):
                found.append((text, item.sceneBoundingRect()))
        elif isinstance(item, pg.AxisItem) and item.style.get("showValues", True):
            painter = QPainter(image)
            try:
                specs = item.generateDrawSpecs(painter)
            finally:
                painter.end()
            if specs is None:
                continue
            for rect, _flags, text in specs[2]:
                if text.strip():
                    found.append((text, item.mapRectToScene(rect)))
    return found


def _ancestors(item):  # type: ignore[no-untyped-def]
    parent = item.parentItem()
    while parent is not None:
        yield parent
        parent = parent.parentItem()


def overlapping_plot_texts(root: QWidget) -> list[str]:
    """Pairs of texts drawn over each other in the visible plots of ``root``."""
    import pyqtgraph as pg

    problems = []
    for view in root.findChildren(pg.GraphicsView):
        if not _shown(view):
            continue
        texts = _texts_in_plot(view)
        for i, (text_a, rect_a) in enumerate(texts):
            for text_b, rect_b in texts[i + 1:]:
                overlap = rect_a.intersected(rect_b)
                if overlap.width() > 2 and overlap.height() > 2:
                    problems.append(f"{text_a[:30]!r} drawn over {text_b[:30]!r}")
    return problems


def _holds_data(box) -> bool:  # type: ignore[no-untyped-def]
    """Whether a view box shows an image or a trace (a curve or points with data)."""
    import pyqtgraph as pg

    from ui.image_items import ArgbImageItem

    for item in box.addedItems:
        if not item.isVisible():
            continue
        if isinstance(item, ArgbImageItem) and item.image is not None:
            return True
        if isinstance(item, pg.ImageItem) and item.image is not None:
            return True
        if isinstance(item, (pg.PlotDataItem, pg.PlotCurveItem, pg.ScatterPlotItem)):
            xs = item.getData()[0] if not isinstance(item, pg.ScatterPlotItem) else item.data["x"]
            if xs is not None and len(xs):
                return True
    return False


def captions_over_data(root: QWidget) -> list[str]:
    """Captions (texts that are not an axis's) and legends drawn over a view box's data area.

    A caption belongs above the plot or in its axis title, a legend outside the data (issue 39):
    no such item's scene rectangle may meet the rectangle of a view box that shows an image or a trace.
    """
    import pyqtgraph as pg
    from PySide6.QtWidgets import QGraphicsTextItem

    problems = []
    views = [root] if isinstance(root, pg.GraphicsView) else []
    for view in views + root.findChildren(pg.GraphicsView):
        if not _shown(view):
            continue
        items = view.scene().items()
        boxes = [item for item in items if isinstance(item, pg.ViewBox) and item.isVisible()
                 and all(p.isVisible() for p in _ancestors(item)) and _holds_data(item)]
        for item in items:
            if not item.isVisible() or not all(p.isVisible() for p in _ancestors(item)):
                continue
            if isinstance(item, pg.LegendItem):
                if not item.items:
                    continue
                name = "legend " + ", ".join(label.text for _sample, label in item.items)
            elif isinstance(item, QGraphicsTextItem):
                if any(isinstance(p, (pg.AxisItem, pg.LegendItem)) for p in _ancestors(item)):
                    continue  # axis titles and tick labels sit beside the data; a legend is judged whole
                text = item.toPlainText().strip()
                if not text or item.opacity() == 0:
                    continue
                name = f"caption {text[:50]!r}"
            else:
                continue
            rect = item.sceneBoundingRect()
            for box in boxes:
                overlap = rect.intersected(box.sceneBoundingRect())
                if overlap.width() > 1 and overlap.height() > 1:
                    problems.append(f"{name} drawn over the data of a plot")
                    break
    return problems


def colours_without_legend(root: QWidget) -> list[str]:
    """Colours that code data without a swatch of them in a visible legend, and colours as text."""
    import pyqtgraph as pg

    from ui.legend import ColourLegend

    swatches = {colour.lower() for legend in root.findChildren(ColourLegend) if _shown(legend)
                for colour in legend.colours()}
    for view in root.findChildren(pg.GraphicsView):  # a plot's own legend shows each item's colour too
        if not _shown(view):
            continue
        for item in view.scene().items():
            if isinstance(item, pg.LegendItem) and item.isVisible():
                for sample, _label in item.items:
                    opts = getattr(sample.item, "opts", {})
                    for key in ("brush", "symbolBrush", "pen", "symbolPen"):
                        if opts.get(key) is not None:
                            swatches.add(pg.mkBrush(opts[key]).color().name() if "rush" in key
                                         else pg.mkPen(opts[key]).color().name())
    problems = []
    for widget in _widgets(root):
        if not _shown(widget):
            continue
        if isinstance(widget, QLabel) and _HEX.search(_plain(widget)) and "<" not in widget.text():
            problems.append(f"colour written as text: {_plain(widget)[:60]!r}")
        if isinstance(widget, QProgressBar):
            match = _HEX.search(widget.styleSheet())  # a bar whose colour codes data (not a job's progress)
            if match and match.group(0).lower() not in swatches:
                problems.append(f"bar colour {match.group(0)} has no legend swatch")
            if match and widget.isTextVisible() and widget.text():
                problems.append(f"number {widget.text()!r} drawn over a bar")
    for view in root.findChildren(pg.GraphicsView):
        if not _shown(view):
            continue
        for item in view.scene().items():
            if isinstance(item, pg.ScatterPlotItem) and item.isVisible() and len(item.data):
                if getattr(item, "colour_scale", False):
                    continue  # coloured by a value with its own colour bar
                for brush in {point.brush().color().name() for point in item.points()}:
                    if brush.lower() not in swatches:
                        problems.append(f"plotted colour {brush} has no legend swatch")
    return problems


def readability_problems(root: QWidget) -> list[str]:
    return (clipped_texts(root) + cramped_scroll_areas(root) + overlapping_plot_texts(root)
            + captions_over_data(root) + colours_without_legend(root)
            + cut_table_columns(root) + sideways_scroll_areas(root) + cut_combo_boxes(root))


# ---------------------------------------------------------------------------------------------- the views


@pytest.fixture
def fitted_window(make_window, demo_store):  # type: ignore[no-untyped-def]
    """The demo project's window, its clip open with a stored fit (so scores are shown)."""

    def build(size):  # type: ignore[no-untyped-def]
        window = make_window(annotator="DEMO expert (synthetic events)")  # the demo opens as the owner of its events
        window.resize(*size)
        window.show()
        window.set_blind_mode(False)
        window.open_clip(window.review.clip_id_for_key("DEMO-0004"))
        _settle()
        return window

    return build


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_view_is_readable(fitted_window, qtbot, size, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    window = fitted_window(size)
    problems: dict[str, list[str]] = {}
    tabs = window.evidence_tabs
    for index in range(tabs.count()):
        tabs.setCurrentIndex(index)
        _settle()
        problems[f"review, Evidence tab {tabs.tabText(index)}"] = readability_problems(window)
    events_dock = window.spatial_events.dock
    events_dock.show()
    events_dock.raise_()
    _settle()
    problems["review, Events dock"] = readability_problems(events_dock)
    for name in ("curation", "selection", "map", "leaderboard", "agreement", "jobs", "team"):
        dock = window.cockpit.detach(name, size)
        _settle()
        problems[f"cockpit {name}"] = readability_problems(dock)
        dock.setFloating(False)
    window.guess_mode.action.setChecked(True)
    map_dock = window.cockpit.detach("map", size)
    _settle()
    problems["guess mode"] = readability_problems(map_dock)
    window.guess_mode.action.setChecked(False)
    map_dock.setFloating(False)

    from ui.cockpit.alm_job import AlmRunDialog

    dialog = AlmRunDialog(window.store, window.browser.visible_clip_ids(), window)
    qtbot.addWidget(dialog)
    dialog.show()
    _settle()
    problems["ALM dialog"] = readability_problems(dialog)
    dialog.close()
    failures = [f"{view}: {problem}" for view, found in problems.items() for problem in found]
    assert not failures, "\n".join(failures)


DEMO_LAYOUTS = {"DEMO-0001": "mono", "DEMO-0002": "stereo", "DEMO-0003": "binaural", "DEMO-0004": "ambix"}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_plot_captions_and_legends_leave_the_data_free(fitted_window, size) -> None:  # type: ignore[no-untyped-def]
    """Every channel layout (the direction view's caption differs per layout), with the Events dock in
    front and the demo expert's events drawn: no caption or legend over a plot's data (issue 39)."""
    import pyqtgraph as pg

    window = fitted_window(size)
    window.spatial_events.dock.show()
    window.spatial_events.dock.raise_()
    failures = []
    for key, layout in DEMO_LAYOUTS.items():
        window.open_clip(window.review.clip_id_for_key(key))
        _settle()
        player = window.player_view
        if layout == "ambix":  # the demo expert's Bird events are on the FOA clip: their legend is shown
            legends = [item for item in player.graphics.scene().items()
                       if isinstance(item, pg.LegendItem) and item.items]
            assert legends, "the FOA clip's events have no legend"
        if layout != "mono":  # the direction view shows a trace, with its caption
            assert player.direction_image.image is not None, key
        failures += [f"{key} ({layout}): {problem}" for problem in captions_over_data(window)]
    assert not failures, "\n".join(failures)


def test_the_checker_sees_a_caption_over_an_image(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The caption check itself can fail: a text item and a legend inside a plot with an image."""
    import numpy as np
    import pyqtgraph as pg

    widget = pg.PlotWidget()
    widget.addItem(pg.ImageItem(np.ones((10, 10))))
    text = pg.TextItem("a caption", anchor=(0, 0))
    text.setPos(2, 8)
    widget.addItem(text)
    curve = widget.plot([1, 2, 3], [1, 2, 3], name="Bird")
    widget.addLegend().addItem(curve, "Bird")
    widget.resize(400, 300)
    qtbot.addWidget(widget)
    widget.show()
    _settle()
    found = captions_over_data(widget)
    assert any("a caption" in p for p in found) and any("legend Bird" in p for p in found), found


def test_the_checker_sees_a_cut_header_and_an_elided_tab(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The check itself can fail: a narrow column header and a squeezed tab are reported."""
    from PySide6.QtWidgets import QTableWidget, QTabWidget

    table = QTableWidget(1, 1)
    table.setHorizontalHeaderLabels(["Forced by expert"])
    table.horizontalHeader().resizeSection(0, 30)
    tabs = QTabWidget()
    tabs.addTab(QWidget(), "Reasoning")
    tabs.addTab(table, "Error modes")
    tabs.setCurrentIndex(1)
    tabs.resize(90, 200)
    qtbot.addWidget(tabs)
    tabs.show()
    _settle()
    found = clipped_texts(tabs)
    assert any("Forced by expert" in p for p in found), found
    assert any("Error modes" in p for p in found), found


def test_curation_run_history_counts_the_candidates_its_summary_counts(fitted_window) -> None:  # type: ignore[no-untyped-def]
    """The demo's stored run has a short summary (no ``n_candidates``): the Run history's Candidates
    cell still shows the count the summary line gives, read from the run's stored clips (issue 39)."""
    window = fitted_window((1280, 800))
    view = window.cockpit.curation
    stored = view.show_stored()
    assert stored is not None
    count = sum(clip.candidate for clip in stored.clips)
    assert f"{count} candidates of {len(stored.clips)} clips" in view.summary.text()
    columns = [view.runs.horizontalHeaderItem(c).text() for c in range(view.runs.columnCount())]
    rows = {view.runs.item(r, 0).text(): view.runs.item(r, columns.index("Candidates")).text()
            for r in range(view.runs.rowCount())}
    assert rows[str(stored.run_id)] == f"{count:,}"


def test_the_checker_sees_a_column_past_the_edge_and_a_cut_combo(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The checks can fail: a table wider than its view, an elided cell, a cut combo box."""
    from PySide6.QtWidgets import QComboBox, QTableWidget, QTableWidgetItem, QVBoxLayout

    root = QWidget()
    table = QTableWidget(1, 3)
    table.setHorizontalHeaderLabels(["model", "GeoScore", "n in dataset"])
    table.setItem(0, 0, QTableWidgetItem("a model with a long name"))
    table.setColumnWidth(0, 40)
    table.setColumnWidth(1, 200)
    table.setColumnWidth(2, 200)
    combo = QComboBox()
    combo.addItem("DEMO-ALM (synthetic reasoning)")
    combo.setFixedWidth(90)
    layout = QVBoxLayout(root)
    layout.addWidget(table)
    layout.addWidget(combo)
    root.resize(300, 200)
    qtbot.addWidget(root)
    root.show()
    _settle()
    found = cut_table_columns(root) + cut_combo_boxes(root)
    assert any("'n in dataset'" in p and "scrolls sideways" in p for p in found), found
    assert any("a model with a long name" in p for p in found), found
    assert any("DEMO-ALM" in p for p in found), found
