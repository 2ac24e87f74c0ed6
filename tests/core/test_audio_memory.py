"""Decode buffers whose pages are populated ahead of the decoder (workbench/audio/memory.py)."""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np
import pytest

from workbench.audio import memory

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MADV_POPULATE_WRITE is Linux-only")

MB = 1 << 20


def _resident_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _populated_or_skip(buffer: np.ndarray, **kwargs: object) -> None:
    if not memory.populate_pages(buffer, **kwargs):  # type: ignore[arg-type]
        pytest.skip("this kernel refuses MADV_POPULATE_WRITE (Linux < 5.14): the decoder faults its own pages")


def test_populating_makes_the_pages_resident_without_writing_them() -> None:
    control = np.empty(48 * MB, dtype=np.uint8)
    before = _resident_bytes()
    control[:1] = 0
    assert _resident_bytes() - before < 8 * MB  # np.empty alone leaves the pages unmapped
    buffer = np.empty(48 * MB, dtype=np.uint8)
    before = _resident_bytes()
    _populated_or_skip(buffer)
    assert _resident_bytes() - before > 40 * MB


def test_at_most_the_cap_is_populated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "MAX_PREFAULT_BYTES", 8 * MB)
    buffer = np.empty(48 * MB, dtype=np.uint8)
    before = _resident_bytes()
    _populated_or_skip(buffer)
    assert 6 * MB < _resident_bytes() - before < 16 * MB


def test_writes_made_while_the_helper_populates_are_kept() -> None:
    # The decoder writes into the buffer while the helper runs: the kernel only maps zeroed
    # pages where none is mapped yet, so every sample written stays as written.
    buffer, stop = memory.empty_prefaulted((16 * MB, 2))
    pattern = np.arange(buffer.shape[0], dtype=np.float32)
    for start in range(0, buffer.shape[0], 1 << 17):
        buffer[start : start + (1 << 17), 0] = pattern[start : start + (1 << 17)]
        buffer[start : start + (1 << 17), 1] = -pattern[start : start + (1 << 17)]
    for thread in threading.enumerate():
        if thread.name == "aglw-prefault":
            thread.join(10.0)
    np.testing.assert_array_equal(buffer[:, 0], pattern)
    np.testing.assert_array_equal(buffer[:, 1], -pattern)
    assert buffer.dtype == np.float32 and buffer.shape == (16 * MB, 2) and not stop.is_set()


def test_the_helper_populates_the_rest_in_the_background_and_stops_when_asked() -> None:
    before = _resident_bytes()
    buffer, _stop = memory.empty_prefaulted((12 * MB, 2), skip_bytes=MB)
    deadline = time.monotonic() + 10.0
    while _resident_bytes() - before < 80 * MB and time.monotonic() < deadline:
        time.sleep(0.01)
    if memory._unsupported:
        pytest.skip("this kernel refuses MADV_POPULATE_WRITE (Linux < 5.14)")
    assert _resident_bytes() - before >= 80 * MB  # 96 MiB buffer, all but the first MiB
    stopped = threading.Event()
    stopped.set()
    fresh = np.empty(48 * MB, dtype=np.uint8)
    before = _resident_bytes()
    assert memory.populate_pages(fresh, stop=stopped)
    assert _resident_bytes() - before < 8 * MB  # asked to stop before the first chunk
    del buffer
