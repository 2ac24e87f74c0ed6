"""Subprocess used by the crash-safety and team tests: writes labels in a tight loop.

Prints ``ACK <command_id> <clip_id> <value>`` after each committed edit (the
acknowledgement contract), and ``READY`` once set up. Usage:
``python label_writer.py DB ANNOTATOR N_EDITS SEED``.
"""

from __future__ import annotations

import random
import sys

from sqlmodel import select

from storage import open_store
from storage.models import Clip
from workbench.labels import LabelService

CATEGORIES = ["/m/09x0r", "/m/015p6", "/m/0jbk", "/m/07yv9"]


def main() -> None:
    db, annotator, n_edits, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    store = open_store(db)
    service = LabelService(store)
    me = service.ensure_annotator(annotator)
    with store.session() as s:
        clip_ids = list(s.exec(select(Clip.id).order_by(Clip.id)))
    # Every edit changes the value, so every acknowledged edit must leave a history row.
    current = {(lab.clip_id, lab.category_id): lab.contribution for lab in service.category_labels(annotator_id=me.id)}
    print("READY", flush=True)
    for i in range(n_edits):
        clip_id = rng.choice(clip_ids)
        category = rng.choice(CATEGORIES)
        value = rng.choice([v for v in range(4) if v != current.get((clip_id, category))])
        current[(clip_id, category)] = value
        change = service.set_category_label(me.id, clip_id, category, contribution=value, effect="helped")
        print(f"ACK {change.command_id} {clip_id} {category} {value} {i}", flush=True)
    store.dispose()


if __name__ == "__main__":
    main()
