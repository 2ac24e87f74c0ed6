"""P2: GUI clip selected → spectrogram painted (cold and cached), and a zoom-step repaint median.

Offscreen. Uses the 140 s stereo MP3 from ../shared/media when present (else prints a skip).
Target (quality-bar.md): ≤ 300 ms cold, ≤ 50 ms cached, ≤ 16 ms median per scroll/zoom step.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared"


def main() -> int:
    media = SHARED / "media"
    recordings = sorted(media.glob("*.mp3")) if media.is_dir() else []
    if not recordings:
        print(f"P2 skipped: {media} (shared reference media) is absent")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGLW_CONFIG_DIR"] = str(Path(tmp) / "config")
        os.environ["AGLW_CACHE_DIR"] = str(Path(tmp) / "cache")
        from PySide6.QtWidgets import QApplication

        from storage import open_store
        from storage.models import Clip, Dataset, MediaRoot
        from ui.main_window import MainWindow
        from workbench.audio.playback import NullSink, Player
        from workbench.labels import LabelService

        app = QApplication.instance() or QApplication([])
        store = open_store(Path(tmp) / "p2.sqlite")
        with store.write() as s:
            dataset = Dataset(name="p2")
            s.add(dataset)
            s.flush()
            s.add(MediaRoot(dataset_id=dataset.id, path=str(media)))
            clip = Clip(dataset_id=dataset.id, key="p2", audio_path=recordings[0].name, n_channels=2, layout="stereo")
            s.add(clip)
            s.flush()
            clip_id = clip.id
        window = MainWindow(store, LabelService(store).ensure_annotator("bench"), player=Player(NullSink()),
                            force_sync=True)
        window.resize(1600, 1000)
        window.show()
        app.processEvents()

        view = window.player_view
        painted_at: list[float] = []
        show_spectrogram = view.set_spectrogram

        def set_and_paint(*args):  # type: ignore[no-untyped-def]
            show_spectrogram(*args)
            view.graphics.viewport().repaint()
            painted_at.append(time.perf_counter())

        view.set_spectrogram = set_and_paint

        def open_and_paint() -> tuple[float, float]:
            painted_at.clear()
            start = time.perf_counter()
            window.open_clip(clip_id)
            return painted_at[0] - start, time.perf_counter() - start

        cold, cold_total = open_and_paint()
        runs = [open_and_paint() for _ in range(3)]
        cached = statistics.median(r[0] for r in runs)
        cached_total = statistics.median(r[1] for r in runs)
        from workbench.audio.loader import load_audio

        start = time.perf_counter()
        load_audio(recordings[0])
        decode = time.perf_counter() - start
        steps = []
        for i in range(40):
            t0 = 10.0 + i * 0.5
            start = time.perf_counter()
            view.spec_plot.setXRange(t0, t0 + 20.0 + (i % 5), padding=0)
            view.graphics.viewport().repaint()
            steps.append(time.perf_counter() - start)
        window.shutdown()
        window.close()
        window.deleteLater()
        app.processEvents()
        del window, view
        store.dispose()
        print(f"P2 clip: {recordings[0].name}")
        print(f"P2 cold: clip selected → spectrogram painted {cold * 1000:.0f} ms (target ≤ 300 ms); "
              f"decode alone {decode * 1000:.0f} ms (ratio {cold / decode:.1f})")
        print(f"P2 cached: clip selected → spectrogram painted {cached * 1000:.0f} ms (target ≤ 50 ms, median of 3)")
        print(f"P2 everything (playback decode + direction view) ready: cold {cold_total * 1000:.0f} ms, "
              f"cached {cached_total * 1000:.0f} ms")
        print(f"P2 scroll/zoom step repaint median: {statistics.median(steps) * 1000:.1f} ms (target ≤ 16 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
