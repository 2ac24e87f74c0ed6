"""P8: resident memory of the GUI with a 180 s, 4-channel, 48 kHz clip open (synthesised FOA).

Offscreen. Target (quality-bar.md): ≤ 800 MB resident.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> int:
    import numpy as np
    import soundfile as sf

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGLW_CONFIG_DIR"] = str(Path(tmp) / "config")
        os.environ["AGLW_CACHE_DIR"] = str(Path(tmp) / "cache")
        media = Path(tmp) / "media"
        media.mkdir()
        rate, seconds = 48_000, 180
        rng = np.random.default_rng(1)
        with sf.SoundFile(media / "foa.wav", "w", rate, 4, subtype="PCM_16") as out:
            for block in range(seconds // 10):
                t = (np.arange(rate * 10) + block * rate * 10) / rate
                source = 0.2 * rng.standard_normal(len(t))
                azimuth = 2 * np.pi * t / seconds
                out.write(np.stack([source, source * np.sin(azimuth), 0 * source, source * np.cos(azimuth)], axis=1))

        from storage import open_store
        from ui.app import ensure_application
        from storage.models import Clip, Dataset, MediaRoot
        from ui.main_window import MainWindow
        from workbench.audio.playback import NullSink, Player
        from workbench.labels import LabelService

        app = ensure_application()  # as `aglw gui` does, with its process settings
        store = open_store(Path(tmp) / "p8.sqlite")
        with store.write() as s:
            dataset = Dataset(name="p8")
            s.add(dataset)
            s.flush()
            s.add(MediaRoot(dataset_id=dataset.id, path=str(media)))
            clip = Clip(dataset_id=dataset.id, key="foa", audio_path="foa.wav", n_channels=4, layout="ambix")
            s.add(clip)
            s.flush()
            clip_id = clip.id
        window = MainWindow(store, LabelService(store).ensure_annotator("bench"), player=Player(NullSink()),
                            force_sync=True)
        window.resize(1600, 1000)
        window.show()
        app.processEvents()
        before = rss_mb()
        window.open_clip(clip_id)
        app.processEvents()
        after = rss_mb()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        shape = window.player_view.direction_image.image.shape
        window.shutdown()
        window.close()
        window.deleteLater()
        app.processEvents()
        del window
        store.dispose()
        print(f"P8 180 s 4-ch 48 kHz clip open: RSS {after:.0f} MB (window alone {before:.0f} MB, "
              f"process peak {peak:.0f} MB; target ≤ 800 MB resident); heatmap {shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
