"""The clip opener's file digests: remembered across sessions by path, size and mtime."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from workbench.audio import clip_open, digests
from workbench.audio import loader
from workbench.audio.pyramid_cache import wait_for_cache_writes
from workbench.audio.spectrogram import SpectrogramParams


@pytest.fixture
def counted_hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = loader.content_hash

    def counting(path):  # type: ignore[no-untyped-def]
        calls.append(Path(path))
        return real(path)

    monkeypatch.setattr(loader, "content_hash", counting)
    monkeypatch.setattr(digests, "_digest_memo", type(digests._digest_memo)())  # noqa: SLF001 - a new session
    return calls


def _new_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digests, "_digest_memo", type(digests._digest_memo)())  # noqa: SLF001


def test_a_later_session_knows_the_digest_without_hashing(tmp_path, monkeypatch, counted_hashes) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "a.wav"
    sf.write(path, np.zeros(800, dtype=np.float32), 8000)
    assert digests.known_digest(path) is None
    digest = digests.file_digest(path)
    assert digest == loader.content_hash(path) and len(counted_hashes) == 2
    _new_session(monkeypatch)
    assert digests.known_digest(path) == digest
    assert digests.file_digest(path) == digest and len(counted_hashes) == 2  # not hashed again

    sf.write(path, np.ones(800, dtype=np.float32) * 0.5, 8000)  # changed content...
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # ...and mtime
    _new_session(monkeypatch)
    assert digests.known_digest(path) is None
    assert digests.file_digest(path) == loader.content_hash(path) != digest


def test_a_damaged_index_entry_is_ignored(tmp_path, monkeypatch, counted_hashes) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "a.wav"
    sf.write(path, np.zeros(800, dtype=np.float32), 8000)
    digest = digests.file_digest(path)
    entries = list((Path(os.environ["AGLW_CACHE_DIR"]) / "digests").iterdir())
    assert len(entries) == 1
    entries[0].write_text("not a digest", encoding="ascii")
    _new_session(monkeypatch)
    assert digests.known_digest(path) is None
    assert digests.file_digest(path) == digest


def test_a_new_file_is_hashed_beside_the_transform_and_cached(tmp_path, monkeypatch, counted_hashes) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    path = tmp_path / "noise.wav"
    sf.write(path, (rng.standard_normal((8000 * 3, 2)) * 0.1).astype(np.float32), 8000)
    request = clip_open.AudioRequest(1, 1, path, "stereo", SpectrogramParams(n_fft=256, hop=64))
    first = clip_open.load_clip_audio(request, threading.Event())
    wait_for_cache_writes()
    assert len(counted_hashes) == 1 and first.error is None
    assert not isinstance(first.pyramid.levels[0], np.memmap)  # computed
    _new_session(monkeypatch)
    again = clip_open.load_clip_audio(request, threading.Event())
    assert len(counted_hashes) == 1  # the index knew the digest
    assert isinstance(again.pyramid.levels[0], np.memmap)  # read from the cache
    np.testing.assert_array_equal(np.asarray(again.pyramid.levels[0]), first.pyramid.levels[0])


def test_tune_process_sets_the_switch_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from ui.app import GIL_SWITCH_INTERVAL_S, tune_process

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        tune_process()
        assert sys.getswitchinterval() == pytest.approx(GIL_SWITCH_INTERVAL_S)
    finally:
        sys.setswitchinterval(before)


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="transparent huge pages are Linux's")
def test_tune_process_turns_transparent_huge_pages_off_for_the_gui_process() -> None:
    """Checked in a process of its own, the flag first cleared (children inherit it, and this test
    process may have set it): PR_SET_THP_DISABLE is 41, PR_GET_THP_DISABLE 42."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.prctl(41, 0, 0, 0, 0)\n"
        "before = libc.prctl(42, 0, 0, 0, 0)\n"
        "from ui.app import tune_process\n"
        "tune_process()\n"
        "print(before, libc.prctl(42, 0, 0, 0, 0))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "1"]
