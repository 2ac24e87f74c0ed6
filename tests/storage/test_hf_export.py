"""A benchmark others can load: `export dataset --format hf` read by `datasets.load_dataset`, its
Croissant file validated by `mlcroissant`, and read back exactly by `import dataset --format hf`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from sqlalchemy import select

from cli.main import main
from storage import open_store
from storage.models import Clip, Dataset
from workbench.audio import synth
from workbench.errors import AglwError
from workbench.importing import import_dataset

datasets = pytest.importorskip("datasets", reason="the [share] extra (datasets) is not installed")


def load(folder: Path):  # type: ignore[no-untyped-def]
    """``datasets.load_dataset(folder)`` as a user calls it; only its cache goes beside the folder,
    not into the home directory."""
    return datasets.load_dataset(str(folder), cache_dir=str(folder.parent / f".{folder.name}-hf-cache"))

# SoundingEarth-like layout: other column names, a DMS latitude, ISO-3 country codes, extra columns.
TABLE = (
    "sample_id\tlat_dms\tlon\tplace\tiso3\twav\tlicense\tauthor\tseconds\tnotes\n"
    "se-001\t48°51'24\"N\t2.3522\tParis | métro <b>\tFRA\trec/paris.wav\tCC BY 4.0\tMarie\t0.5\tstation\n"
    "se-002\t35°41'22\"N\t139.6917\tTokyo\t\trec/tokyo.wav\tCC BY 4.0\t\t0.25\t\n"
    "se-003\t1°17'S\t36.8219\tNairobi\tKEN\tnairobi.wav\tCC BY 4.0\tOtieno\t\tmarket\n"
)
MAPPING = """
[columns]
key = "sample_id"
latitude = "lat_dms"
longitude = "lon"
title = "place"
country = "iso3"
audio = "wav"
licence = "license"
recordist = "author"
duration_s = "seconds"
[transforms]
latitude = "dms"
country = "iso3"
"""
# Every Clip column a round trip must keep (ids, dataset and measured audio properties are the project's own).
COMPARED = [c for c in Clip.__table__.columns.keys() if c not in ("id", "dataset_id")]


@pytest.fixture
def source(tmp_path: Path) -> dict:
    folder = tmp_path / "source"
    rng = np.random.default_rng(3)
    for name, seconds in (("rec/paris.wav", 0.5), ("rec/tokyo.wav", 0.25), ("nairobi.wav", 0.3)):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        sf.write(path, synth.white_noise(int(seconds * 8000), rng).astype(np.float32), 8000)
    table = folder / "listing.tsv"
    table.write_text(TABLE, encoding="utf-8")
    mapping = tmp_path / "mapping.toml"
    mapping.write_text(MAPPING, encoding="utf-8")
    store = open_store(tmp_path / "a.sqlite")
    import_dataset(store, table, format="table", mapping=mapping)
    yield {"store": store, "folder": folder, "tmp": tmp_path}
    store.dispose()


def stored(store) -> dict[str, dict]:
    with store.session() as s:
        return {c.key: {name: getattr(c, name) for name in COMPARED} for c in s.execute(select(Clip)).scalars()}


def test_export_loads_with_datasets_row_for_row_and_byte_for_byte(source):
    out = source["tmp"] / "bench"
    assert main(["--db", str(source["store"].sqlite_path), "--json", "export", "dataset", "--format", "hf", str(out)]) == 0
    loaded = load(out)
    assert list(loaded) == ["test"]
    rows = loaded["test"].cast_column("audio", datasets.Audio(decode=False))
    assert isinstance(loaded["test"].features["audio"], datasets.Audio)
    clips = stored(source["store"])
    assert [r["key"] for r in rows] == sorted(clips) and len(rows) == 3
    for row in rows:
        clip = clips[row["key"]]
        assert (row["latitude"], row["longitude"]) == (clip["latitude"], clip["longitude"])
        for column, field in (("title", "title"), ("country", "country"), ("continent", "continent"),
                              ("licence", "licence"), ("recordist", "recordist"), ("duration_s", "mp3seconds"),
                              ("audio_file", "mp3name"), ("city", "city"), ("url", "url")):
            assert row[column] == clip[field], column
        assert row["derived"] == (clip["derived"] or [])
        assert json.loads(row["extra"]) == clip["extra"]
        assert row["audio"]["path"] == clip["audio_path"]
        assert row["audio"]["bytes"] == (source["folder"] / clip["audio_path"]).read_bytes()
    tokyo = next(r for r in rows if r["key"] == "se-002")
    assert (tokyo["country"], tokyo["derived"]) == ("Japan", ["country", "continent"])
    assert tokyo["title"] == "Tokyo" and json.loads(tokyo["extra"]) == {"notes": ""}


# rdflib and pandas warn about the APIs mlcroissant calls; nothing here can change that.
@pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated")
def test_croissant_metadata_validates_and_describes_the_same_records(source):
    mlc = pytest.importorskip("mlcroissant")
    out = source["tmp"] / "bench"
    from workbench.curation.hf_export import export_hf

    export_hf(source["store"], out)
    document = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
    assert document["conformsTo"] == "http://mlcommons.org/croissant/1.0" and document["license"] == "CC BY 4.0"
    dataset = mlc.Dataset(jsonld=out / "croissant.json")  # raises on a validation error
    records = list(dataset.records("clips"))
    clips = stored(source["store"])
    assert sorted(r["clips/key"].decode() for r in records) == sorted(clips)
    for record in records:
        clip = clips[record["clips/key"].decode()]
        assert record["clips/latitude"] == clip["latitude"]
        assert record["clips/audio"] == (source["folder"] / clip["audio_path"]).read_bytes()
    # every data file is listed with its hash, and the card names the same hashes
    card = (out / "README.md").read_text(encoding="utf-8")
    for item in document["distribution"]:
        if item["@type"] == "cr:FileObject":
            import hashlib

            assert item["sha256"] == hashlib.sha256((out / item["contentUrl"]).read_bytes()).hexdigest()
            assert item["sha256"] in card


def test_round_trip_table_project_hf_project_is_exact(source):
    out = source["tmp"] / "bench"
    db_a, db_b = str(source["store"].sqlite_path), str(source["tmp"] / "b.sqlite")
    assert main(["--db", db_a, "export", "dataset", "--format", "hf", str(out)]) == 0
    media = source["tmp"] / "media-b"
    assert main(["--db", db_b, "import", "dataset", "--format", "hf", str(out), "--media-root", str(media),
                 "--name", "listing"]) == 0
    store_b = open_store(db_b)
    try:
        assert stored(store_b) == stored(source["store"])
        with store_b.session() as s:
            dataset = s.execute(select(Dataset)).scalar_one()
        assert dataset.format == "hf"
    finally:
        store_b.dispose()
    for clip in stored(source["store"]).values():
        assert (media / clip["audio_path"]).read_bytes() == (source["folder"] / clip["audio_path"]).read_bytes()


def test_paths_only_export_links_in_place_on_import(source):
    out = source["tmp"] / "paths"
    from workbench.curation.hf_export import export_hf

    export_hf(source["store"], out, embed_audio=False)
    rows = load(out)["test"].cast_column("audio", datasets.Audio(decode=False))
    assert all(r["audio"]["bytes"] is None and not Path(r["audio"]["path"]).is_absolute() for r in rows)
    store_b = open_store(source["tmp"] / "b.sqlite")
    try:
        report = import_dataset(store_b, out, format="hf", name="listing", media_root=source["folder"])
        assert report.counts["audio_found"] == 3 and report.counts["audio_written"] == 0
        assert stored(store_b) == stored(source["store"])
    finally:
        store_b.dispose()


def test_import_without_a_media_root_writes_nothing_and_says_so(source):
    out = source["tmp"] / "bench"
    from workbench.curation.hf_export import export_hf

    export_hf(source["store"], out)
    store_b = open_store(source["tmp"] / "b.sqlite")
    try:
        report = import_dataset(store_b, out, format="hf")
        assert any("3 embedded recording(s) were not written: pass --media-root" in w for w in report.warnings)
        assert all(c["audio_path"] is None for c in stored(store_b).values())
    finally:
        store_b.dispose()


def test_output_folder_rules(source):
    from workbench.curation.hf_export import export_hf

    mine = source["tmp"] / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("keep me", encoding="utf-8")
    with pytest.raises(AglwError, match="not empty"):
        export_hf(source["store"], mine, force=True)
    assert (mine / "thesis.tex").read_text(encoding="utf-8") == "keep me"
    out = source["tmp"] / "bench"
    export_hf(source["store"], out)
    with pytest.raises(AglwError, match="--force"):
        export_hf(source["store"], out)
    export_hf(source["store"], out, force=True, keys=["se-003"])
    assert load(out)["test"]["key"] == ["se-003"]
    with pytest.raises(AglwError, match="unknown clip key"):
        export_hf(source["store"], source["tmp"] / "x", keys=["nope"])


def test_text_from_data_is_escaped_in_the_card(source, tmp_path):
    yaml = pytest.importorskip("yaml")
    store = source["store"]
    with store.write() as s:
        for clip in s.execute(select(Clip)).scalars():
            clip.licence = 'CC BY 4.0"\nlicense: mit\n---\n<script>x</script> | a'
            clip.continent = "Europe | <img src=x>"
        dataset = s.execute(select(Dataset)).scalar_one()
        dataset.name = "[pool](javascript:alert(1)) `x`"
        dataset.mapping = {"columns": {"key": "id`) <b>"}}
    out = tmp_path / "card"
    from workbench.curation.hf_export import export_hf

    export_hf(store, out)
    card = (out / "README.md").read_text(encoding="utf-8")
    _, front, body = card.split("---\n", 2)
    matter = yaml.safe_load(front)
    assert matter["license"] == "other" and matter["size_categories"] == ["n<1K"]
    assert {f["name"] for f in matter["dataset_info"]["features"]} >= {"key", "audio", "latitude", "extra"}
    assert "<script>" not in body and "<img" not in body and "&lt;script&gt;" in body
    assert "| Europe \\| &lt;img src=x&gt; | 3 |" in body
    assert "**\\[pool\\]\\(javascript:alert\\(1\\)\\) \\`x\\`**" in body and "](javascript" not in body
    assert '``{"columns": {"key": "id`) <b>"}}``' in body  # a code span holding a backtick stays one span


def test_without_the_share_extra_one_line_names_it(source, monkeypatch, capsys):
    import workbench.extras

    real = workbench.extras.has
    monkeypatch.setattr(workbench.extras, "has", lambda module: module != "datasets" and real(module))
    out = source["tmp"] / "bench"
    assert main(["--db", str(source["store"].sqlite_path), "export", "dataset", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and "'share' extra" in err and "agl-workbench[share]" in err
    assert not out.exists()


def test_large_exports_are_split_into_shards_that_load_as_one_split(source, monkeypatch):
    import workbench.curation.hf_export as hf_export

    sizes = sorted(p.stat().st_size for p in source["folder"].rglob("*.wav"))
    monkeypatch.setattr(hf_export, "SHARD_BYTES", sizes[-1])  # one recording per shard
    out = source["tmp"] / "sharded"
    result = hf_export.export_hf(source["store"], out)
    assert sorted(result.files) == [f"data/test-0000{i}-of-00003.parquet" for i in range(3)]
    assert load(out)["test"]["key"] == sorted(stored(source["store"]))
    document = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
    assert {d["@id"] for d in document["distribution"]} == {*result.files, "parquet-files"}


def test_an_embedded_path_out_of_the_media_root_is_never_written(source):
    import pyarrow.parquet as pq

    from workbench.curation.hf_export import export_hf

    out = source["tmp"] / "bench"
    export_hf(source["store"], out)
    shard = next((out / "data").glob("*.parquet"))
    table = pq.read_table(shard)
    rows = table.to_pylist()
    rows[0]["audio"]["path"] = "../../escaped.wav"
    pq.write_table(table.from_pylist(rows, schema=table.schema), shard)
    media = source["tmp"] / "deep" / "media"
    store_b = open_store(source["tmp"] / "b.sqlite")
    try:
        # verification would refuse the changed file outright; unverified, the linking rule still holds
        report = import_dataset(store_b, out, format="hf", media_root=media, verify=False)
    finally:
        store_b.dispose()
    assert not (source["tmp"] / "escaped.wav").exists()
    assert any("outside the media root" in p for p in report.problems) and report.counts["audio_written"] == 2


def test_a_cancelled_export_leaves_the_target_as_it_was(source):
    from workbench.curation.hf_export import export_hf
    from workbench.tasks import TaskCancelled, TaskContext, TaskEvent

    out = source["tmp"] / "bench"
    export_hf(source["store"], out, keys=["se-001"])
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def cancel_after_the_first_clip(event: TaskEvent) -> None:
        if event.kind == "item":
            context.cancel()

    context = TaskContext(cancel_after_the_first_clip)
    with pytest.raises(TaskCancelled):
        export_hf(source["store"], out, force=True, task=context)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(".bench")) == []


@pytest.mark.postgres
def test_round_trip_into_a_postgresql_project_is_exact(source, pg_url):
    from workbench.curation.hf_export import export_hf

    out = source["tmp"] / "bench"
    export_hf(source["store"], out)
    store_b = open_store(pg_url)
    try:
        import_dataset(store_b, out, format="hf", name="listing", media_root=source["tmp"] / "media-pg")
        assert stored(store_b) == stored(source["store"])
        export_hf(store_b, source["tmp"] / "again")  # and out of PostgreSQL again, byte for byte
    finally:
        store_b.dispose()
    first, second = (load(source["tmp"] / name)["test"].cast_column("audio", datasets.Audio(decode=False))
                     for name in ("bench", "again"))
    assert first.to_list() == second.to_list()
