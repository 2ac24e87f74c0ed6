"""Keeping Python's cycle collector off the objects a review window lives with.

A built review window holds about 250,000 Python objects (Qt wrappers, pyqtgraph items, the
ORM's mappers and compiled statements, the modules). Whenever the cycle collector runs a full
collection it walks all of them: about 150 ms of the GUI thread on the 2-core development VM.
When that collection falls on the first clip opened, the clip's spectrogram waits for it (P2,
first clip after start-up: 322 ms median with it, ~165 ms without; the collection fell there
in every fresh process because the first open allocates the objects that cross the threshold).

:func:`exclude_from_collections` moves every object alive now into the collector's permanent
generation (:func:`gc.freeze`, Python ≥ 3.7): later collections walk only what was made after
it, so a full one costs a few milliseconds. It costs nothing itself (no collection runs). The
price: a reference cycle among those objects that becomes garbage later (a window replaced by
Project ▸ Open project…) is freed only by reference counting, not by the collector; its C++
side is deleted by Qt either way.
"""

from __future__ import annotations

import gc


def exclude_from_collections() -> None:
    """Leave every object alive now out of the cycle collector's later collections (see the module)."""
    gc.freeze()
