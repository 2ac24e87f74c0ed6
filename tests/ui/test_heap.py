"""A built review window's objects are out of the cycle collector's way (ui/heap.py).

A full collection walking the ~250,000 objects of a built window took ~150 ms of the GUI
thread and fell on the first clip's open (bench P2). This checks that the window leaves its
objects in the collector's permanent generation, not how long anything takes.
"""

from __future__ import annotations

import gc


def test_a_built_window_leaves_its_objects_out_of_later_collections(make_window) -> None:  # type: ignore[no-untyped-def]
    gc.unfreeze()
    window = make_window()
    assert gc.get_freeze_count() > 0
    walked = {id(obj) for obj in gc.get_objects()}  # what a full collection walks now
    for kept in (window, window.session, window.player_view, window.cockpit.map):
        assert gc.is_tracked(kept) and id(kept) not in walked
