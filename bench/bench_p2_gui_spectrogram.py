"""P2: GUI clip selected → spectrogram painted (cold and cached), and scroll/zoom repaint times.

Offscreen. Uses the 140 s stereo MP3 from ../shared/media when present (else prints a skip).
Target (quality-bar.md): ≤ 300 ms cold, ≤ 50 ms cached, ≤ 16 ms median per scroll/zoom step;
issue 15 asks for ≤ 200 ms cold. On a 2-core machine a cold open is CPU-bound: whatever else runs
meanwhile (other processes, the window's other reads on a clip change) adds to it.

What is measured is the path a user triggers: ``window.open_clip`` (what selecting a row in
the clip browser calls) with the real background loader (a worker thread; ``--sync`` runs the
job inline instead, as the tests do) and the real event loop. "Painted" is the moment the
spectrogram image is drawn by the window's own paint (``PlayerView.spectrogramPainted``, sent
from the image item's paint); nothing forces that repaint. Cold = nothing cached (fresh cache
dir), measured twice: the first open in the process (the first clip after start-up) and then
another uncached clip (stepping to the next clip); cached = the first clip opened again (median
of 5).

The first clip after start-up is one sample per process, so it is also measured in
``--processes`` fresh processes (default 6; each opens the two clips and exits) and reported as
their median and range beside this process's own.

Repaint steps: ``setXRange`` on the spectrogram plot (the four plots are x-linked) followed by
a forced synchronous repaint of the whole plot area, timed together; two sequences of 40
steps each: the original one (scroll by 0.5 s with a jittering 20–24 s span) and wheel-like
steps (zoom in/out by 1.25× around the centre, scroll by 10 % of the span). Reported: median,
90th percentile, and the GUI thread's CPU time per step (less sensitive to other load).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _steps_original() -> list[tuple[float, float]]:
    return [(10.0 + i * 0.5, 10.0 + i * 0.5 + 20.0 + (i % 5)) for i in range(40)]


def _steps_wheel(duration: float) -> list[tuple[float, float]]:
    """Wheel zoom in/out by 1.25× and scrolls by 10 % of the span, kept inside the clip."""
    t0, t1 = 0.0, duration
    moves = (["in"] * 8 + ["right"] * 6 + ["out"] * 4 + ["left"] * 6 + ["in"] * 4 + ["right"] * 6 + ["out"] * 6)[:40]
    steps = []
    for move in moves:
        span, centre = t1 - t0, (t0 + t1) / 2
        if move == "in":
            span /= 1.25
        elif move == "out":
            span = min(span * 1.25, duration)
        elif move == "right":
            centre += 0.1 * span
        else:
            centre -= 0.1 * span
        centre = min(max(centre, span / 2), duration - span / 2)
        t0, t1 = centre - span / 2, centre + span / 2
        steps.append((t0, t1))
    return steps


def _cold_in_fresh_processes(count: int, sync: bool) -> list[dict[str, float | None]]:
    """The cold opens measured again in ``count`` fresh processes, one after the other."""
    runs = []
    for _ in range(max(count, 0)):
        command = [sys.executable, __file__, "--cold-only"] + (["--sync"] if sync else [])
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            print(f"P2: a fresh process failed (exit {done.returncode}): {done.stderr.strip()[-300:]}", file=sys.stderr)
            continue
        runs.append(json.loads(lines[-1]))
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sync", action="store_true", help="run the clip job inline instead of in the worker thread")
    parser.add_argument("--processes", type=int, default=6,
                        help="fresh processes that measure the cold opens again (first clip after start-up)")
    parser.add_argument("--cold-only", action="store_true", help=argparse.SUPPRESS)  # one such process
    args = parser.parse_args(argv)
    media = SHARED / "media"
    recordings = sorted(media.glob("*.mp3")) if media.is_dir() else []
    if not recordings:
        print(f"P2 skipped: {media} (shared reference media) is absent")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGLW_CONFIG_DIR"] = str(Path(tmp) / "config")
        os.environ["AGLW_CACHE_DIR"] = str(Path(tmp) / "cache")
        from PySide6.QtCore import QEventLoop, QTimer

        from storage import open_store
        from ui.app import ensure_application
        from storage.models import Clip, Dataset, MediaRoot
        from ui.main_window import MainWindow
        from workbench.audio.playback import NullSink, Player
        from workbench.labels import LabelService

        app = ensure_application()  # as `aglw gui` does, with its process settings
        store = open_store(Path(tmp) / "p2.sqlite")
        with store.write() as s:
            dataset = Dataset(name="p2")
            s.add(dataset)
            s.flush()
            s.add(MediaRoot(dataset_id=dataset.id, path=str(media)))
            clips = [Clip(dataset_id=dataset.id, key=f"p2-{index}", audio_path=path.name, n_channels=2, layout="stereo")
                     for index, path in enumerate(recordings[:2])]
            s.add_all(clips)
            s.flush()
            clip_ids = [clip.id for clip in clips]
        clip_id = clip_ids[0]
        window = MainWindow(store, LabelService(store).ensure_annotator("bench"), player=Player(NullSink()),
                            force_sync=args.sync)
        window.resize(1600, 1000)
        window.show()
        app.processEvents()

        view = window.player_view
        painted_at: list[float] = []
        ready_at: list[float] = []
        loop = QEventLoop()

        def painted(_clip_id: int) -> None:
            painted_at.append(time.perf_counter())
            if ready_at:
                loop.quit()

        def everything_ready(_clip_id: int) -> None:
            ready_at.append(time.perf_counter())
            if painted_at:
                loop.quit()

        view.spectrogramPainted.connect(painted)
        window.audioShown.connect(everything_ready)
        safety = QTimer()
        safety.setSingleShot(True)
        safety.timeout.connect(loop.quit)

        def open_and_paint(clip_id: int = clip_id) -> tuple[float, float]:
            painted_at.clear()
            ready_at.clear()
            start = time.perf_counter()
            window.open_clip(clip_id)
            if not (painted_at and ready_at):
                safety.start(120_000)  # never reached in practice
                loop.exec()
                safety.stop()
            if not painted_at or not ready_at:
                raise RuntimeError("the clip never finished loading")
            return painted_at[0] - start, ready_at[0] - start

        cold, cold_total = open_and_paint()
        # Another clip, not cached either: the cold open a reviewer meets stepping to the next clip.
        cold_next = open_and_paint(clip_ids[1])[0] if len(clip_ids) > 1 else None
        if args.cold_only:
            print(json.dumps({"cold": cold, "next": cold_next}), flush=True)
            os._exit(0)  # nothing else to measure; skip the teardown
        runs = [open_and_paint() for _ in range(5)]
        cached = statistics.median(r[0] for r in runs)
        cached_total = statistics.median(r[1] for r in runs)
        from workbench.audio.loader import load_audio

        start = time.perf_counter()
        load_audio(recordings[0])
        decode = time.perf_counter() - start

        def repaint_steps(steps: list[tuple[float, float]]) -> tuple[list[float], list[float], int]:
            walls, cpus = [], []
            renders = getattr(view.spec_image, "renders", 0)
            for t0, t1 in steps:
                start, cpu = time.perf_counter(), time.thread_time()
                view.spec_plot.setXRange(t0, t1, padding=0)
                view.graphics.viewport().repaint()
                walls.append(time.perf_counter() - start)
                cpus.append(time.thread_time() - cpu)
            return walls, cpus, getattr(view.spec_image, "renders", 0) - renders

        original = repaint_steps(_steps_original())
        wheel = repaint_steps(_steps_wheel(view.duration))
        plot_size = view.graphics.viewport().size()
        window.shutdown()
        window.close()
        window.deleteLater()
        app.processEvents()
        del window, view
        store.dispose()
        others = _cold_in_fresh_processes(args.processes, args.sync)
        mode = "inline job (--sync)" if args.sync else "worker thread"
        print(f"P2 clip: {recordings[0].name} ({mode}; plot area {plot_size.width()}×{plot_size.height()} px)")
        print(f"P2 cold: clip selected → spectrogram painted {cold * 1000:.0f} ms (target ≤ 300 ms; issue 15: ≤ 200 ms); "
              f"decode alone {decode * 1000:.0f} ms (ratio {cold / decode:.1f})")
        if others:
            firsts = sorted([cold] + [run["cold"] for run in others])
            print(f"P2 cold, first clip after start-up, {len(firsts)} fresh processes: median "
                  f"{statistics.median(firsts) * 1000:.0f} ms (range {firsts[0] * 1000:.0f}–{firsts[-1] * 1000:.0f} ms; "
                  f"issue 15: ≤ 200 ms)")
            nexts = sorted([run["next"] for run in others if run["next"] is not None]
                           + ([cold_next] if cold_next is not None else []))
            if nexts:
                print(f"P2 cold, next clip, {len(nexts)} fresh processes: median {statistics.median(nexts) * 1000:.0f} ms "
                      f"(range {nexts[0] * 1000:.0f}–{nexts[-1] * 1000:.0f} ms)")
        if cold_next is not None:
            print(f"P2 cold, next clip ({recordings[1].name}, not cached either; the process has opened one clip): "
                  f"clip selected → spectrogram painted {cold_next * 1000:.0f} ms (target ≤ 300 ms)")
        print(f"P2 cached: clip selected → spectrogram painted {cached * 1000:.0f} ms (target ≤ 50 ms, median of 5)")
        print(f"P2 everything (playback decode + direction view) ready: cold {cold_total * 1000:.0f} ms, "
              f"cached {cached_total * 1000:.0f} ms")
        for name, (walls, cpus, renders) in (("scroll 0.5 s, span 20–24 s", original), ("wheel zoom 1.25× + scroll", wheel)):
            print(f"P2 repaint per step, {name}: median {statistics.median(walls) * 1000:.1f} ms "
                  f"(target ≤ 16 ms), p90 {_percentile(walls, 0.9) * 1000:.1f} ms, "
                  f"GUI-thread CPU median {statistics.median(cpus) * 1000:.1f} ms; "
                  f"{len(walls)} steps, image re-coloured on {renders}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
