"""A project holding the two real AGL1K recordings of ``../shared/media`` with their real metadata rows
and the real Gemini answer, for the blinding census (their file names and ID3 tags name the place)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

CSV = "data/agl1k/geoLocalization_schema.csv"
GEMINI = "data/agl1k/gemini-3-pro-preview_seed_42_ABCD.partial.jsonl"
# key -> the recording in ../shared/media (the dataset names it by its mp3name)
RECORDINGS = {
    "aporee_26839_30948": "media/agl1k_case2_essaouira.mp3",
    "aporee_5201_6631": "media/agl1k_case4_berlin_blackbird.mp3",
}
# a few more rows without audio: a study must leave them out
OTHERS = ("aporee_43130_49161", "aporee_1619_2322")


def build(tmp_path: Path, shared: Path) -> tuple[Path, list[str], list[Path]]:
    """Write the project; returns its file, the keys with audio and the recordings as shipped."""
    from storage import open_store
    from workbench.importing import import_dataset, import_predictions
    from workbench.media import link_media

    wanted = {*RECORDINGS, *OTHERS}
    with open(shared / CSV, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        rows = [row for row in reader if row and row[0] in wanted]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    table = tmp_path / "agl1k-subset.csv"
    table.write_text(out.getvalue(), encoding="utf-8")
    media = tmp_path / "media"
    media.mkdir()
    mp3name = {row[0]: row[header.index("mp3name")] for row in rows}
    for key, relative in RECORDINGS.items():
        shutil.copyfile(shared / relative, media / mp3name[key])
    answers = tmp_path / "gemini.jsonl"
    with open(shared / GEMINI, encoding="utf-8") as handle:
        lines = [line for line in handle if json.loads(line).get("question_id") in wanted]
    answers.write_text("".join(lines), encoding="utf-8")
    db = tmp_path / "project.sqlite"
    store = open_store(db)
    try:
        import_dataset(store, table, format="agl1k", media_root=media)
        link_media(store)
        if lines:
            import_predictions(store, "gemini-3-pro-preview", answers)
    finally:
        store.dispose()
    return db, sorted(RECORDINGS), [shared / RECORDINGS[k] for k in sorted(RECORDINGS)] + [
        media / mp3name[k] for k in sorted(RECORDINGS)]
