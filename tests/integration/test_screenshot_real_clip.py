"""`aglw screenshot` of a real AGL1K recording from ../shared/media."""

from __future__ import annotations

import pytest

from storage import open_store
from storage.models import Clip, Dataset, MediaRoot
from cli.main import main

pytestmark = [pytest.mark.integration, pytest.mark.qt_log_ignore("does not support propagateSizeHints")]


def test_screenshot_of_a_real_agl1k_clip(qapp, shared_dir, sqlite_path, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.ui.test_gui_screenshot_cli import assert_not_blank

    media = shared_dir / "media"
    recording = sorted(media.glob("*.mp3"))[0]
    store = open_store(sqlite_path)
    with store.write() as s:
        dataset = Dataset(name="agl1k-sample", source_path=str(shared_dir / "data/agl1k"))
        s.add(dataset)
        s.flush()
        s.add(MediaRoot(dataset_id=dataset.id, path=str(media)))
        s.add(Clip(dataset_id=dataset.id, key="real-1", title="real AGL1K clip", description="a<br />b",
                   audio_path=recording.name, n_channels=2, layout="stereo"))
    store.dispose()
    out = tmp_path / "real.png"
    assert main(["--db", str(sqlite_path), "screenshot", "--clip", "real-1", "--out", str(out)]) == 0
    assert_not_blank(out)
