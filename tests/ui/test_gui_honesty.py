"""The review window shows what is true and nothing else (pytest-qt, offscreen).

Text from datasets, models and experts is shown as text, never as markup; playback without an
output device says so instead of pretending to play; the clip list's keys are whole; the tag
lane's labels do not overlap; colour scales carry a legend with their unit; a clip without audio
says why its plots are empty; the reasoning's highlighting does not take the word "country" for
the music genre; the clip list can be searched; the true and predicted location are side by side.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QKeySequence, QTextDocument
from PySide6.QtGui import Qt as QtGuiNamespace
from PySide6.QtWidgets import QApplication, QLabel, QWidget
from sqlmodel import select

from storage.models import AlmRun, Clip, Judgment
from workbench.labels import LabelService
from workbench.review.service import ReviewService
from workbench.review.views import CategoryRow, TimelineView

# The offscreen platform plugin reports this on every show(); it is not an application problem.
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

NASTY_TITLE = '<img src="file:///etc/passwd">'
NASTY_EVIDENCE = "DEMO evidence: <b>x</b> quoted"
NASTY_MODEL = "DEMO <u>ALM</u>"
NASTY_NOTE = "<i>my note</i>"
NO_DEVICE = "no audio output device — playback unavailable"


def _clip_id(store, key: str) -> int:  # type: ignore[no-untyped-def]
    return ReviewService(store, {}, {}).clip_id_for_key(key)


def _press(window, keys: str) -> None:  # type: ignore[no-untyped-def]
    """Trigger the window action bound to ``keys`` (offscreen windows get no real shortcuts)."""
    sequence = QKeySequence(keys)
    matches = [a for a in window.actions() if sequence in a.shortcuts()]
    assert len(matches) == 1
    matches[0].trigger()


def _shown_keys(window) -> list[str]:  # type: ignore[no-untyped-def]
    keys = {row.clip_id: row.key for row in window.browser.model.rows}
    return [keys[i] for i in window.browser.visible_clip_ids()]


def _renders_as(tooltip: str) -> str:
    """What Qt shows for a tooltip: rich text when it looks like markup, else the characters."""
    if not QtGuiNamespace.mightBeRichText(tooltip):
        return tooltip
    document = QTextDocument()
    document.setHtml(tooltip)
    return document.toPlainText()


def _model_tooltips(model) -> list[str]:  # type: ignore[no-untyped-def]
    tips = []
    for row in range(model.rowCount()):
        for column in range(model.columnCount()):
            tip = model.index(row, column).data(Qt.ItemDataRole.ToolTipRole)
            if tip:
                tips.append(tip)
    return tips


# --------------------------------------------------------------------------- 1, 2: plain text


def test_data_in_tooltips_and_labels_is_never_rendered_as_markup(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    clip_id = _clip_id(demo_store, "DEMO-0002")
    with demo_store.write() as s:
        s.get(Clip, clip_id).title = NASTY_TITLE
        for judgment in s.exec(select(Judgment).where(Judgment.clip_id == clip_id)):
            judgment.evidence = NASTY_EVIDENCE
        for run in s.exec(select(AlmRun)):
            run.model = NASTY_MODEL
    window = make_window()
    LabelService(demo_store).set_clip_label(window.annotator.id, clip_id, note=NASTY_NOTE)
    window.set_blind_mode(False)  # the judges' columns (and their evidence tooltips) are shown
    window.open_clip(clip_id)

    # The browser's tooltip of the key cell is the title: escaped, and it reads as the title.
    proxy = window.browser.proxy
    row = window.browser.visible_clip_ids().index(clip_id)
    tip = proxy.index(row, 0).data(Qt.ItemDataRole.ToolTipRole)
    assert "&lt;img" in tip and "<img" not in tip
    assert _renders_as(tip) == NASTY_TITLE

    # The judges' evidence in the attribution grid's tooltips.
    tips = _model_tooltips(window.grid.grid_model)
    evidence = [t for t in tips if "DEMO evidence" in t]
    assert evidence, "the judges' evidence tooltips are shown"
    for tip in evidence:
        assert "<b>x</b>" not in tip and "&lt;b&gt;x&lt;/b&gt;" in tip
        assert "evidence: " + NASTY_EVIDENCE in _renders_as(tip)
    for tip in tips:
        assert "<b>x</b>" not in tip and "<img" not in tip

    # Every tooltip and label of the window: data is escaped (tooltips) or plain text (labels).
    tab = window.evidence_tabs.indexOf(window.reasoning)
    tab_tip = window.evidence_tabs.tabToolTip(tab)
    assert "<u>" not in tab_tip and NASTY_MODEL in _renders_as(tab_tip)
    for widget in window.findChildren(QWidget):
        tip = widget.toolTip()
        for raw in ("<img", "<b>x", "<u>", "<i>my"):
            assert raw not in tip, f"{type(widget).__name__} tooltip renders data as markup: {tip!r}"
    data_labels = [label for label in window.findChildren(QLabel)
                   if any(raw in label.text() for raw in (NASTY_TITLE, "<b>x", NASTY_MODEL, NASTY_NOTE))]
    assert data_labels, "the title is shown in a label"
    for label in data_labels:
        assert label.textFormat() == Qt.TextFormat.PlainText, label.text()
    assert NASTY_TITLE in window.info.title.text()


def test_description_line_breaks_are_shown_as_line_breaks_not_markup(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    # DEMO-0001's description comes with an AGL1K-style "<br />".
    window.open_clip(_clip_id(demo_store, "DEMO-0001"))
    assert window.info.description.toPlainText() == (
        "DEMO synthetic mono recording.\nVoices, footsteps and a church bell at 0:04."
    )
    clip_id = _clip_id(demo_store, "DEMO-0002")
    with demo_store.write() as s:
        s.get(Clip, clip_id).description = "Caf&eacute; &amp; bar<br>next line<BR/>&lt;br /&gt; <img src=x>"
    window.open_clip(clip_id)
    # Line breaks become lines, entities their characters; anything else stays literal text.
    assert window.info.description.toPlainText() == "Café & bar\nnext line\n<br /> <img src=x>"


# --------------------------------------------------------------------------- 3: no audio device


def _no_portaudio_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """sounddevice as on a machine without an output device: opening a stream fails."""

    class PortAudioError(Exception):
        pass

    def no_device(**_kwargs: object) -> None:
        raise PortAudioError("Error querying device -1")

    fake = types.SimpleNamespace(PortAudioError=PortAudioError, OutputStream=no_device)
    monkeypatch.setitem(sys.modules, "sounddevice", fake)


def _window_with_player(qtbot, demo_store, player):  # type: ignore[no-untyped-def]
    from ui.main_window import MainWindow

    info = LabelService(demo_store).ensure_annotator("tester")
    window = MainWindow(demo_store, info, player=player, force_sync=True)
    qtbot.addWidget(window)
    return window


@pytest.mark.parametrize("explicit_sink", [True, False], ids=["sounddevice-player", "real-sink-on-first-play"])
def test_without_an_output_device_nothing_pretends_to_play(qtbot, demo_store, monkeypatch, explicit_sink) -> None:  # type: ignore[no-untyped-def]
    from workbench.audio.playback import Player, PlayerState, SounddeviceSink

    _no_portaudio_device(monkeypatch)
    window = _window_with_player(qtbot, demo_store, Player(SounddeviceSink()) if explicit_sink else None)
    try:
        window.show()
        window.open_clip(_clip_id(demo_store, "DEMO-0002"))
        view = window.player_view
        _press(window, "Space")
        qtbot.wait(150)  # several playhead polls, were the timer running
        assert view.player.state != PlayerState.PLAYING
        assert not view.timer.isActive()
        assert view.play_button.text() == "Play"
        assert all(line.value() == 0.0 for line in view.playheads)
        assert view.position_label.text() == "0:00.0"
        assert NO_DEVICE in window.statusBar().currentMessage()
        assert view.output_notice.isVisible() and NO_DEVICE in view.output_notice.text()
        # Pressing again does not start a pretend playback either.
        _press(window, "Space")
        assert view.player.state != PlayerState.PLAYING and view.play_button.text() == "Play"
    finally:
        window.shutdown()


def test_the_silent_test_sink_still_plays(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    from workbench.audio.playback import PlayerState

    window = make_window()
    window.open_clip(_clip_id(demo_store, "DEMO-0002"))
    view = window.player_view
    _press(window, "Space")
    assert view.player.state == PlayerState.PLAYING and view.play_button.text() == "Pause"
    view.player.sink.advance(1.0)
    view._poll_position()
    assert view.playheads[0].value() == pytest.approx(1.0)
    assert not view.output_notice.isVisible()


# --------------------------------------------------------------------------- 4: J/K at the ends


def test_next_and_previous_say_last_or_first_only_at_the_ends(make_window) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    ids = window.browser.visible_clip_ids()
    assert len(ids) == 4
    window.browser.select_clip(ids[0])
    for position in (1, 2, 3):
        _press(window, "J")
        assert window.detail.clip_id == ids[position]
        message = window.statusBar().currentMessage()
        assert "last clip" not in message and "first clip" not in message, message
    _press(window, "J")
    assert window.detail.clip_id == ids[3]
    assert window.statusBar().currentMessage() == "last clip in the list"
    for position in (2, 1, 0):
        _press(window, "K")
        assert window.detail.clip_id == ids[position]
        message = window.statusBar().currentMessage()
        assert "last clip" not in message and "first clip" not in message, message
    _press(window, "K")
    assert window.detail.clip_id == ids[0]
    assert window.statusBar().currentMessage() == "first clip in the list"


# --------------------------------------------------------------------------- 5: whole keys


def test_clip_keys_are_shown_whole_in_the_browser(make_window, demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    long_key = "aporee_12345_67890_a_rather_long_recording_key_of_agl1k"
    with demo_store.write() as s:
        s.get(Clip, _clip_id(demo_store, "DEMO-0002")).key = long_key
    window = make_window()
    window.show()
    qtbot.waitExposed(window)
    table = window.browser.table
    row = _shown_keys(window).index(long_key)
    index = window.browser.proxy.index(row, 0)
    assert index.data() == long_key
    needed = table.fontMetrics().horizontalAdvance(long_key)
    assert table.columnWidth(0) >= needed, (table.columnWidth(0), needed)
    assert table.visualRect(index).width() >= needed


# --------------------------------------------------------------------------- 6: tag lane labels


def _lane(qtbot):  # type: ignore[no-untyped-def]
    from ui.player import PlayerView
    from workbench.audio.playback import NullSink, Player

    view = PlayerView(Player(NullSink()))
    qtbot.addWidget(view)
    view.resize(900, 500)
    view.show()
    qtbot.waitExposed(view)
    view.spec_plot.setXRange(0.0, 12.0, padding=0)
    return view


def _timeline(name: str, start: int, length: int, n: int = 12) -> TimelineView:
    values = [0.0] * n
    for i in range(start, start + length):
        values[i] = 0.9
    return TimelineView(f"/m/{name.lower()}", name, 1.0, tuple(values))


def _lane_ticks(view) -> list[str]:  # type: ignore[no-untyped-def]
    """The names on the tag plot's axis, top to bottom."""
    (ticks,) = view.tags_plot.getAxis("left")._tickLevels
    return [name for _y, name in sorted(ticks, key=lambda tick: -tick[0])]


def test_each_tag_lane_has_one_name_on_the_axis_and_a_text_line_of_height(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Issue 30: the axis named "Whir / Squish / Fire" while the lanes said "Sine wave / Squish /
    Flamenco": now a lane's name is written once, on the axis at the lane, and every lane is at
    least a line of text high; what does not fit is one "+k more" lane whose tooltip names them."""
    from PySide6.QtGui import QFontMetrics

    view = _lane(qtbot)
    names = ["Speech", "Church bell", "Walk, footsteps", "Vehicle", "Bird", "Wind", "Ocean", "Music",
             "Sine wave", "Squish"]
    peaks = {name: 0.95 - 0.05 * i for i, name in enumerate(names)}
    timelines = [TimelineView(f"/m/{i}", name, 1.0, tuple([0.0] * 2 + [peaks[name]] * 3 + [0.0] * 7))
                 for i, name in enumerate(reversed(names))]  # stored order is not the shown order
    line = QFontMetrics(view.tags_plot.getAxis("left").font()).height()
    for height in (300, 500, 1400):
        view.resize(900, height)
        qtbot.wait(20)
        QApplication.processEvents()
        view.set_timelines(timelines)
        lanes = view.lanes
        lane_px = view.tags_plot.getViewBox().height() / len(lanes)
        assert lane_px >= line, (height, lane_px, line)
        ticks = _lane_ticks(view)  # one name per lane, in the lanes' order (a long one elided, whole in the tooltip)
        assert len(ticks) == len(lanes)
        for tick, lane in zip(ticks, lanes):
            assert tick == lane.name or (tick.endswith("…") and lane.name.startswith(tick[:-1])), (tick, lane.name)
        assert ticks[:3] == [lane.name for lane in lanes][:3]  # "Walk, footsteps" fits whole
        if len(lanes) < len(names):
            kept = [lane.name for lane in lanes[:-1]]
            assert kept == names[: len(kept)]  # the most likely first
            assert lanes[-1].name == f"+{len(names) - len(kept)} more"
            assert all(name in view.tags_plot.getAxis("left").toolTip() for name in names[len(kept):])
        else:
            assert [lane.name for lane in lanes] == names
    # the image rows are the lanes: the top row holds the top lane's values
    assert np.allclose(view.tags_image.image[-1][: len(view.lanes[0].values)], view.lanes[0].values)
    # no name is drawn inside the lanes: spans keep their name in a tooltip only
    assert not hasattr(view, "tag_labels")
    tips = [segment.toolTip() for segment in view.tag_segments]
    assert any("Speech" in tip for tip in tips)


# --------------------------------------------------------------------------- 7: colour legends


def test_spectrogram_and_direction_view_have_a_colour_legend_with_their_unit(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.show()
    window.open_clip(_clip_id(demo_store, "DEMO-0004"))  # ambiX: azimuth × time
    view = window.player_view
    spec = view.spec_legend
    assert spec.isVisible() and "dB" in spec.axis.labelText
    assert spec.levels() == pytest.approx((view.db_low.value(), view.db_high.value()))
    view.db_low.setValue(-70.0)
    assert spec.levels() == pytest.approx((-70.0, view.db_high.value()))
    direction = view.direction_legend
    assert direction.isVisible() and "energy" in direction.axis.labelText
    window.open_clip(_clip_id(demo_store, "DEMO-0003"))  # binaural: lateral angle, frames per bin
    assert direction.isVisible() and "frame" in direction.axis.labelText
    window.open_clip(_clip_id(demo_store, "DEMO-0001"))  # mono: no direction image, no legend
    assert not direction.isVisible()
    assert "probability" in view.tags_legend.axis.labelText


# --------------------------------------------------------------------------- 8: decoded channels


def test_clip_tab_shows_the_decoded_channels_and_layout(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    clip_id = _clip_id(demo_store, "DEMO-0002")
    with demo_store.write() as s:
        clip = s.get(Clip, clip_id)
        clip.n_channels = None
        clip.layout = None
    window = make_window()
    window.open_clip(clip_id)
    text = window.info.truth.text()
    assert "2 ch, stereo" in text and "?" not in text and "unknown" not in text
    # An edit re-reads the detail from the store: the decoded facts stay.
    window.clip_panel.ratingChanged.emit(3)
    assert "2 ch, stereo" in window.info.truth.text()


# --------------------------------------------------------------------------- 9: no audio


def test_clip_without_audio_says_why_on_the_plots(make_window, demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    clip_id = _clip_id(demo_store, "DEMO-0002")
    with demo_store.write() as s:
        clip = s.get(Clip, clip_id)
        clip.audio_path = None
        clip.mp3name = None
    window = make_window()
    window.show()
    qtbot.waitExposed(window)
    window.open_clip(clip_id)
    notice = window.player_view.audio_notice
    assert notice.isVisible()
    assert "No audio for this clip" in notice.text() and "aglw media link" in notice.text()
    assert notice.textFormat() == Qt.TextFormat.PlainText
    # A clip with audio hides it again.
    window.open_clip(_clip_id(demo_store, "DEMO-0001"))
    assert not notice.isVisible()


# --------------------------------------------------------------------------- 10: "country"


def _highlighted(view) -> list[str]:  # type: ignore[no-untyped-def]
    """The stretches of text the highlighter formats."""
    document = view.document()
    out = []
    block = document.begin()
    while block.isValid():
        for fmt in block.layout().formats():
            out.append(block.text()[fmt.start : fmt.start + fmt.length])
        block = block.next()
    return out


def _category(category_id: str, name: str) -> CategoryRow:
    return CategoryRow(category_id, name, "Music", 0.5, {}, None, None, None, None, None, None, ())


def test_music_genre_country_is_not_highlighted_in_a_location_reasoning(qtbot) -> None:  # type: ignore[no-untyped-def]
    from ui.evidence import ReasoningView

    view = ReasoningView()
    qtbot.addWidget(view)
    view.set_reasoning("the country is Morocco; a Bird sings at 0:03",
                       [_category("/m/01lyv", "Country"), _category("/m/015p6", "Bird")])
    marked = [s.lower() for s in _highlighted(view)]
    assert "country" not in marked
    assert "bird" in marked and "0:03" in marked  # other categories and time references still are


def test_window_does_not_highlight_country_for_the_country_tag(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    from storage.models import Prediction, Tag, TaggerRun

    clip_id = _clip_id(demo_store, "DEMO-0002")
    with demo_store.write() as s:
        run = s.exec(select(TaggerRun)).first()
        params = dict(run.parameters or {})
        params["class_names"] = {**params.get("class_names", {}), "/m/01lyv": "Country"}
        run.parameters = params
        s.add(Tag(tagger_run_id=run.id, clip_id=clip_id, class_index=229, audioset_id="/m/01lyv", probability=0.9))
        for prediction in s.exec(select(Prediction).where(Prediction.clip_id == clip_id)):
            prediction.reasoning = "The country is Morocco, judging by the Ocean."
    window = make_window()
    window.open_clip(clip_id)
    assert "Country" in [row.name for row in window.detail.categories]
    marked = [s.lower() for s in _highlighted(window.reasoning)]
    assert "country" not in marked and "ocean" in marked


# --------------------------------------------------------------------------- 11: search


def test_search_box_filters_the_clip_list_by_key_city_or_title(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    search = window.browser.search
    assert search.isVisibleTo(window.browser)

    def shows(keys: list[str]) -> None:
        # The filter runs once typing pauses.
        qtbot.waitUntil(lambda: _shown_keys(window) == keys, timeout=2000)

    qtbot.keyClicks(search, "PORTO")  # city of DEMO-0002, any case
    shows(["DEMO-0002"])
    search.clear()
    qtbot.waitUntil(lambda: len(_shown_keys(window)) == 4, timeout=2000)
    qtbot.keyClicks(search, "circling")  # title of DEMO-0004
    shows(["DEMO-0004"])
    search.setText("demo-0003")  # key
    shows(["DEMO-0003"])
    search.setText("no such clip")
    shows([])


# --------------------------------------------------------------------------- 12: true vs predicted


def test_review_view_shows_true_and_predicted_location_with_the_error(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.open_clip(_clip_id(demo_store, "DEMO-0001"))
    line = window.location_line
    assert line.isVisibleTo(window) and line.textFormat() == Qt.TextFormat.PlainText
    text = line.text()
    assert "Kraków" in text and "Poland" in text and "50.0617" in text  # truth
    assert "Prague" in text and "Czech Republic" in text and "50.0755" in text  # the ALM's answer
    error = window.detail.prediction.error_km
    assert error is not None and f"{error:,.0f} km" in text
    assert text.index("Kraków") < text.index("Prague")
