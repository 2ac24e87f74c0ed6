"""The real AGL1K file and a real (partial) ALM result file, imported end to end."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from sqlalchemy import func, select

from storage.models import AlmRun, Clip, Dataset, Prediction
from cli.main import main
from workbench.errors import InputError
from workbench.importing import import_dataset, import_predictions
from workbench.importing.agl1k import CATEGORY_COLUMNS

CSV = "data/agl1k/geoLocalization_schema.csv"
GEMINI = "data/agl1k/gemini-3-pro-preview_seed_42_ABCD.partial.jsonl"

EXPECTED_CLIPS = {
    "aporee_43130_49161": dict(
        short_key="49161", longitude=-2.7061414930179, latitude=53.754815369316, altitude=22.0,
        description="Preston Railways station platform",
        title="Unnamed Road, Preston PR1, UK - Preston railway station",
        mp3name="PrestonStation.mp3", mp3seconds=99.5552, city="Preston",
        country="United Kingdom", continent="Europe",
        categories=(1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0),
    ),
    # Non-ASCII country; quotes inside a quoted description.
    "aporee_1619_2322": dict(
        short_key="2322", longitude=28.9755982160568, latitude=41.0233989461146, altitude=16.0,
        description=(
            "Entrance hall of innercity cog railway. The often repeated 3 tone melody is the "
            "signal of the automatic gate. Recorded may 2003. - project: \"hasenbrot - a private "
            "sound diary\""
        ),
        title="tunnelbahn taksim-kabatas istanbul - Istanbul, railway taksim - kabatas",
        mp3name="05eingangtunnelbahn.mp3", mp3seconds=146.10285, city="Eminoenue",
        country="Türkiye", continent="Asia",
        categories=(1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0),
    ),
    # Empty continent -> NULL; HTML kept as text.
    "aporee_9288_11166": dict(
        short_key="11166", longitude=12.4755965173, latitude=41.91085768, altitude=29.0,
        description="Piazza del Popolo, Rome.<br />Carillion",
        title="Piazza del Popolo, Rome, Carillion 1", mp3name="PiazzadelPopoloCarillionlont.mp3",
        mp3seconds=138.39816666666667, city="Vatican City",
        country="Holy See (Vatican City State)", continent=None,
        categories=(0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0),
    ),
    # HTML with several <br /> and a comma inside a quoted field.
    "aporee_1488_2558": dict(
        short_key="2558", longitude=6.93555414676666, latitude=50.9427980874368, altitude=53.0,
        description=(
            "stadtgarten biergarten, nachmittags - public viewing zur em 2008<br /><br />projekt "
            "klang raum garten - soundmap stadtgarten"
        ),
        title="cologne, stadtgarten, biergarten - koeln, stadtgarten, biergarten, public viewing",
        mp3name="StadtgartenBiergartenpublicviewingEM08.mp3", mp3seconds=128.94440625,
        city="Neustadt/Nord", country="Germany", continent="Europe",
        categories=(1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0),
    ),
}

EMPTY_CONTINENT_KEYS = {
    "aporee_9288_11166", "aporee_25339_29380", "aporee_24872_28856",
    "aporee_10038_11982", "aporee_8000_9767", "aporee_24845_28826",
}


@pytest.fixture
def imported(store, shared_dir):
    report = import_dataset(store, shared_dir / CSV, name="agl1k")
    return store, report


def test_real_csv_imports_1444_clips_field_by_field(imported):
    store, report = imported
    assert report.stored and report.counts["clips_stored"] == 1444
    assert report.details["column_mapping"] == "agl1k-20"
    assert set(report.details["empty_continent_keys"]) == EMPTY_CONTINENT_KEYS
    assert any("6 clip(s) have an empty continent" in w for w in report.warnings)
    with store.session() as s:
        assert s.execute(select(func.count()).select_from(Clip)).scalar_one() == 1444
        clips = {
            c.key: c
            for c in s.execute(select(Clip).where(Clip.key.in_(EXPECTED_CLIPS))).scalars()
        }
        n_null_continent = s.execute(
            select(func.count()).select_from(Clip).where(Clip.continent.is_(None))
        ).scalar_one()
    assert n_null_continent == 6
    for key, expected in EXPECTED_CLIPS.items():
        clip = clips[key]
        for field, value in expected.items():
            if field == "categories":
                assert tuple(getattr(clip, c) for c in CATEGORY_COLUMNS) == value, key
            elif isinstance(value, float):
                assert getattr(clip, field) == pytest.approx(value, abs=1e-12), (key, field)
            else:
                assert getattr(clip, field) == value, (key, field)


def test_naive_read_would_shift_and_importer_does_not(shared_dir, imported):
    naive = pd.read_csv(shared_dir / CSV)
    # The silent shift the importer must never reproduce: the key becomes the index, `key` holds
    # the short key and `longitude` holds the latitude.
    row = naive.loc["aporee_43130_49161"]
    assert row["key"] == 49161 and row["longitude"] == pytest.approx(53.754815369316)
    store, _ = imported
    with store.session() as s:
        clip = s.execute(select(Clip).where(Clip.key == "aporee_43130_49161")).scalar_one()
        longitudes = s.execute(select(Clip.longitude)).scalars().all()
    assert (clip.short_key, clip.longitude, clip.latitude) == ("49161", -2.7061414930179, 53.754815369316)
    assert all(-180 <= v <= 180 for v in longitudes)


def test_reimport_same_name_is_refused(imported, shared_dir):
    store, _ = imported
    with pytest.raises(InputError, match="already exists .1444 clips"):
        import_dataset(store, shared_dir / CSV, name="agl1k")
    with store.session() as s:
        assert s.execute(select(func.count()).select_from(Dataset)).scalar_one() == 1


def test_real_predictions_metrics_sanity(imported, shared_dir, capsys, sqlite_path):
    store, _ = imported
    report = import_predictions(store, "gemini-3-pro", shared_dir / GEMINI)
    assert report.counts["stored"] == 263 and report.counts["unknown_keys"] == 0
    assert report.counts["linked"] == 263
    assert report.details["container"] == "jsonl"

    rc = main(["--db", str(sqlite_path), "--json", "metrics", "--model", "gemini-3-pro"])
    assert rc == 0
    agl1k = json.loads(capsys.readouterr().out)
    assert agl1k["n"] == 263
    assert 0.72 <= agl1k["continent_acc"] <= 0.88
    assert 0.40 <= agl1k["country_acc"] <= 0.62
    assert 0.05 <= agl1k["city_acc"] <= 0.20
    assert 1500 <= agl1k["distance_error_km"] <= 3000
    assert 0 <= agl1k["reject_rate"] < 0.1

    rc = main(["--db", str(sqlite_path), "--json", "metrics", "--model", "gemini-3-pro",
               "--profile", "iso"])
    assert rc == 0
    iso = json.loads(capsys.readouterr().out)
    assert iso["n"] == 263 and iso["profile"] == "iso"
    assert iso["distance_error_km"] == agl1k["distance_error_km"]
    assert 0.72 <= iso["continent_acc"] <= 0.9


def test_real_predictions_as_json_array_import_identically(imported, shared_dir, tmp_path):
    store, _ = imported
    lines = (shared_dir / GEMINI).read_text(encoding="utf-8").splitlines()
    array = tmp_path / "seed_42_progress_fixed.json"
    array.write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")
    import_predictions(store, "jsonl", shared_dir / GEMINI)
    report = import_predictions(store, "array", array)
    assert report.details["container"] == "json-array" and report.counts["stored"] == 263
    with store.session() as s:
        def rows(model):
            return sorted(
                tuple(r)[1:]
                for r in s.execute(
                    select(Prediction.line_no, Prediction.question_id, Prediction.predicted_latitude,
                           Prediction.predicted_country, Prediction.reasoning)
                    .join(AlmRun).where(AlmRun.model == model)
                )
            )
        assert rows("jsonl") == rows("array")
