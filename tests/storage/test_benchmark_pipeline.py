"""Building a benchmark beyond AGL1K, end to end, through the `aglw` commands: a synthetic pool in
its own column layout (JSON Lines, no continents, a few short WAVs) -> import with a mapping ->
analyze-pool -> tag (a tiny calibrated model, offline) -> judge and alm run planned (dry runs) -> ALM
answers imported -> metrics (the iso profile, since the dataset has no AGL1K continent labels) ->
expert accepts -> fit -> select ->
export selection --format hf -> load it with `datasets` -> import it back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from cli.main import main
from tests.core.test_tagging_model import calibrated_model
from tests.core.test_tagging_ontology import write_small_ontology
from workbench.audio import synth

datasets = pytest.importorskip("datasets", reason="the [share] extra (datasets) is not installed")

# It loads the gazetteer, a tagger and the datasets library once each: seconds, not milliseconds.
pytestmark = pytest.mark.slow


def load(folder: Path):  # type: ignore[no-untyped-def]
    """``datasets.load_dataset(folder)`` as a user calls it; only its cache goes beside the folder,
    not into the home directory."""
    return datasets.load_dataset(str(folder), cache_dir=str(folder.parent / f".{folder.name}-hf-cache"))

# name, latitude, longitude, ISO-3 code; no continents anywhere
PLACES = [
    ("reykjavik", 64.1466, -21.9426, "ISL"), ("lima", -12.0464, -77.0428, "PER"),
    ("hanoi", 21.0278, 105.8342, "VNM"), ("dakar", 14.7167, -17.4677, "SEN"),
    ("perth", -31.9523, 115.8613, "AUS"), ("quebec", 46.8139, -71.2080, "CAN"),
]


def aglw(capsys, *argv: str, expect: int = 0) -> object:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == expect, f"aglw {' '.join(argv)} -> {code}\n{captured.err}"
    return json.loads(captured.out) if "--json" in argv and captured.out.strip() else captured.out


@pytest.fixture
def pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    rng = np.random.default_rng(11)
    audio = tmp_path / "pool" / "audio"
    audio.mkdir(parents=True)
    records = []
    for index, (name, lat, lon, iso3) in enumerate(PLACES):
        rate = 16_000
        t = np.arange(int(1.5 * rate)) / rate
        tone = 0.2 * np.sin(2 * np.pi * (220 + 110 * index) * t)
        signal = tone + synth.white_noise(t.size, rng, rms=0.05)
        sf.write(audio / f"{name}.wav", signal.astype(np.float32), rate)
        records.append({"uid": f"fs-{index:03d}", "geo": {"lat": lat}, "lat": lat, "lng": lon, "cc": iso3,
                        "sound": f"audio/{name}.wav", "username": f"user{index}", "license": "CC0 1.0",
                        "tags": ["field-recording", name]})
    table = tmp_path / "pool" / "freesound.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    mapping = tmp_path / "freesound.toml"
    mapping.write_text('[columns]\nkey = "uid"\nlatitude = "lat"\nlongitude = "lng"\ncountry = "cc"\naudio = "sound"\n'
                       'recordist = "username"\nlicence = "license"\n[transforms]\ncountry = "iso3"\n', encoding="utf-8")
    models = tmp_path / "models"
    models.mkdir()
    torch.save(calibrated_model("mn01", seed=5).state_dict(), models / "mn01_as.pt")
    ontology, _ = write_small_ontology(tmp_path / "onto")
    monkeypatch.setenv("AGLW_EFFICIENTAT_DIR", str(models))
    monkeypatch.setenv("AGLW_ONTOLOGY", str(ontology))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-dry-run-only")  # judge --dry-run plans; nothing is sent
    answers = tmp_path / "alm.jsonl"
    with answers.open("w", encoding="utf-8") as handle:
        for index, (record, (name, lat, lon, _)) in enumerate(zip(records, PLACES, strict=True)):
            near = index % 2 == 0  # every other answer lands within a few km
            handle.write(json.dumps({
                "question_id": record["uid"], "true_latitude": lat, "true_longitude": lon,
                "predicted_latitude": lat + (0.01 if near else 20.0), "predicted_longitude": lon,
                "predicted_city": name.title(), "predicted_country": "Unknown", "predicted_continent": "",
                "reasoning": "I hear a tone and wind.", "model_output": "{}", "seed": 42,
            }) + "\n")
    return {"db": str(tmp_path / "bench.sqlite"), "table": table, "mapping": mapping, "answers": answers,
            "tmp": tmp_path, "records": records, "audio": audio}


def test_a_non_agl1k_pool_from_import_to_a_loadable_benchmark(pool, capsys):
    db = ["--db", pool["db"]]
    report = aglw(capsys, *db, "--json", "import", "dataset", "--format", "table", str(pool["table"]),
                  "--mapping", str(pool["mapping"]), "--name", "freesound-pool")
    assert report["counts"]["clips_stored"] == 6 and report["counts"]["audio_found"] == 6
    assert report["counts"]["derived_continent"] == 6 and report["counts"]["derived_country"] == 0

    analysed = aglw(capsys, *db, "--json", "analyze-pool", "--workers", "1")
    assert analysed["measured"] == 6 and not analysed["failed"] and not analysed["no_audio"]
    tagged = aglw(capsys, *db, "--json", "tag", "--model", "mn01_as", "--workers", "1")
    assert tagged["tagged"] == 6 and not tagged["failed"]
    imported = aglw(capsys, *db, "--json", "import", "predictions", "--model", "toy-alm", str(pool["answers"]))
    assert imported["counts"]["linked"] == 6

    # no AGL1K continent labels in the dataset: the metrics default to the iso profile
    metrics = aglw(capsys, *db, "--json", "metrics", "--model", "toy-alm")
    assert metrics["profile"] == "iso" and metrics["n"] == 6 and metrics["within_100km"] == pytest.approx(0.5)
    assert aglw(capsys, *db, "--json", "metrics", "--model", "toy-alm", "--profile", "agl1k")["profile"] == "agl1k"

    # the LLM steps plan on this dataset too (dry runs: nothing is asked, nothing is paid)
    planned = aglw(capsys, *db, "--json", "judge", "--dry-run", "--alm", "toy-alm")
    assert planned["alm_model"] == "toy-alm" and {c["clip"] for c in planned["clips"]} == {r["uid"] for r in pool["records"]}
    asked = aglw(capsys, *db, "--json", "alm", "run", "--model", "toy-alm-2", "--provider", "openai-compatible",
                 "--base-url", "http://127.0.0.1:9/v1", "--api-model", "toy", "--dry-run")
    assert asked["clips"] == 6 and asked["requests"] == 6

    keys = [r["uid"] for r in pool["records"]]
    # an expert's contributions: without judges or labels no category can be fitted, and `fit`
    # refuses to store a run that fitted none (issue 40)
    from sqlalchemy import select as sql_select

    from storage import open_store
    from storage import tables as T

    store = open_store(db[1])
    with store.read() as connection:
        category = connection.execute(sql_select(T.tag.c.audioset_id).order_by(T.tag.c.probability.desc())).scalars().first()
    store.dispose()
    for key in keys[:4]:
        aglw(capsys, *db, "--annotator", "ana", "label", "clip", "--clip", key, "--decision", "accept")
        aglw(capsys, *db, "--annotator", "ana", "label", "set", "--clip", key, "--category", str(category),
             "--contribution", "3", "--effect", "helped")
    fitted = aglw(capsys, *db, "--json", "fit", "--n-min", "1")
    assert {c["key"] for c in fitted["clips"]} == set(keys)
    selected = aglw(capsys, *db, "--json", "select", "--size", "3")
    chosen = selected["keys"]

    out = pool["tmp"] / "benchmark"
    exported = aglw(capsys, *db, "--json", "export", "selection", "--format", "hf", str(out))
    assert exported["n_rows"] == 3 and not exported["without_audio"]
    rows = load(out)["test"].cast_column("audio", datasets.Audio(decode=False))
    assert len(rows) == 3 and rows["key"] == chosen
    by_key = {r["uid"]: r for r in pool["records"]}
    for row in rows:
        source = by_key[row["key"]]
        assert row["audio"]["bytes"] == (pool["table"].parent / source["sound"]).read_bytes()
        assert (row["latitude"], row["longitude"], row["recordist"]) == (source["lat"], source["lng"], source["username"])
        assert row["continent"] is not None and "continent" in row["derived"]
        assert json.loads(row["extra"]) == {"geo": source["geo"], "tags": source["tags"]}
        assert row["localizability"] is not None and len(row["tags"]) == 5 and row["speech"] is not None
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f"Selection {exported['selection_id']} of size 3" in card and "## Counts (n = 3)" in card

    back = aglw(capsys, "--db", str(pool["tmp"] / "back.sqlite"), "--json", "import", "dataset", "--format", "hf",
                str(out), "--media-root", str(pool["tmp"] / "media"))
    assert back["counts"]["clips_stored"] == 3 and back["counts"]["audio_written"] == 3
