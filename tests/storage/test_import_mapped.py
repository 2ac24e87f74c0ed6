"""Datasets beyond AGL1K: a table in its own layout through a TOML mapping (CSV, TSV, JSON Lines,
Parquet), with transforms, constants, extra metadata, derived places and one-line errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from cli.main import main
from storage.models import Clip, Dataset, MediaRoot
from workbench.errors import InputError
from workbench.importing import import_dataset
from workbench.importing.mapping import dms_degrees

MAPPING = """
[columns]
key = "id"
latitude = "lat"
longitude = "lon"
title = "name"
country = "nation"
audio = "file"
recordist = "by"
[constants]
licence = "CC BY-NC 4.0"
[transforms]
latitude = "dms"
longitude = "dms"
country = "iso2"
"""

ROWS = [
    {"id": "xc-1", "lat": "41°24'12.2\"N", "lon": "2°10'26.5\"E", "name": "Barcelona, dawn", "nation": "ES",
     "file": "a.wav", "by": "Ana", "habitat": "urban"},
    {"id": "xc-2", "lat": "35°41'22\"N", "lon": "139°41'30\"E", "name": "Tokyo | rain <b>", "nation": "",
     "file": "b.wav", "by": "Ken", "habitat": ""},
    {"id": "xc-3", "lat": "-33.8688", "lon": "151.2093", "name": "Sydney", "nation": "AU",
     "file": "", "by": "", "habitat": "harbour"},
]


def write_mapping(path: Path, text: str = MAPPING) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def write_table(path: Path, rows: list[dict], *, delimiter: str = ",", encoding: str = "utf-8") -> Path:
    with path.open("w", encoding=encoding, newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter=delimiter, lineterminator="\r\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def clips(store) -> dict[str, Clip]:
    with store.session() as s:
        return {c.key: c for c in s.execute(select(Clip)).scalars().all()}


def count(store, table) -> int:
    with store.session() as s:
        return s.execute(select(func.count()).select_from(table)).scalar_one()


def test_csv_through_a_mapping_with_transforms_constants_extra_and_derived_places(any_store, tmp_path):
    (tmp_path / "a.wav").write_bytes(b"RIFF")
    table = write_table(tmp_path / "listing.csv", ROWS)
    report = import_dataset(any_store, table, format="table", mapping=write_mapping(tmp_path / "m.toml"))
    assert report.stored and report.counts["clips_stored"] == 3
    # Tokyo has no country: derived from the coordinates; every continent is derived
    assert report.counts["derived_country"] == 1 and report.counts["derived_continent"] == 3
    got = clips(any_store)
    barcelona, tokyo, sydney = got["xc-1"], got["xc-2"], got["xc-3"]
    assert barcelona.latitude == pytest.approx(41 + 24 / 60 + 12.2 / 3600)
    assert barcelona.longitude == pytest.approx(2 + 10 / 60 + 26.5 / 3600)
    assert (barcelona.country, barcelona.continent, barcelona.derived) == ("Spain", "Europe", ["continent"])
    assert (tokyo.country, tokyo.continent, tokyo.derived) == ("Japan", "Asia", ["country", "continent"])
    assert (sydney.country, sydney.derived) == ("Australia", ["continent"])
    assert tokyo.title == "Tokyo | rain <b>" and barcelona.licence == sydney.licence == "CC BY-NC 4.0"
    assert (barcelona.recordist, sydney.recordist) == ("Ana", None)
    assert barcelona.extra == {"habitat": "urban"} and tokyo.extra == {"habitat": ""}
    # the audio column is relative to the table's folder, which becomes the media root
    assert (barcelona.mp3name, barcelona.audio_path, tokyo.audio_path) == ("a.wav", "a.wav", None)
    with any_store.session() as s:
        dataset = s.execute(select(Dataset)).scalar_one()
        roots = s.execute(select(MediaRoot.path)).scalars().all()
    assert dataset.name == "listing" and dataset.format == "table" and dataset.mapping["transforms"]["country"] == "iso2"
    assert roots == [str(tmp_path.resolve())]


@pytest.mark.parametrize("kind", ["tsv", "jsonl", "parquet"])
def test_tsv_json_lines_and_parquet_give_the_same_clips_as_csv(store, tmp_path, kind):
    mapping = write_mapping(tmp_path / "m.toml")
    import_dataset(store, write_table(tmp_path / "t.csv", ROWS), format="table", mapping=mapping, name="csv")
    path = tmp_path / f"t.{kind}"
    if kind == "tsv":
        write_table(path, ROWS, delimiter="\t")
    elif kind == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    else:
        pyarrow = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        pq.write_table(pyarrow.Table.from_pylist(ROWS), path)
    import_dataset(store, path, format="table", mapping=mapping, name=kind)
    with store.session() as s:
        by_dataset = {
            name: {c.key: (c.latitude, c.longitude, c.title, c.country, c.continent, c.extra, c.derived, c.licence)
                   for c in s.execute(select(Clip).join(Dataset).where(Dataset.name == name)).scalars()}
            for name in ("csv", kind)
        }
    assert by_dataset["csv"] == by_dataset[kind] and len(by_dataset["csv"]) == 3


def test_json_lines_keep_typed_values_and_nested_extra(store, tmp_path):
    rows = [{"id": 17, "lat": 48.1, "lon": 11.5, "meta": {"mic": "MS", "tags": ["bells"]}, "rating": 4.5}]
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    mapping = write_mapping(tmp_path / "m.toml", '[columns]\nkey = "id"\nlatitude = "lat"\nlongitude = "lon"\n')
    import_dataset(store, path, format="table", mapping=mapping)
    clip = clips(store)["17"]
    assert clip.extra == {"meta": {"mic": "MS", "tags": ["bells"]}, "rating": 4.5}
    assert (clip.country, clip.continent) == ("Germany", "Europe")


def test_latin1_table_is_read_with_a_warning(store, tmp_path):
    rows = [{"id": "a", "lat": "39.9", "lon": "32.8", "name": "Ankara, Türkiye"}]
    path = write_table(tmp_path / "t.csv", rows, encoding="latin-1")
    mapping = write_mapping(tmp_path / "m.toml", '[columns]\nkey="id"\nlatitude="lat"\nlongitude="lon"\ntitle="name"\n')
    report = import_dataset(store, path, format="table", mapping=mapping)
    assert report.details["encoding"] == "latin-1" and any("Latin-1" in w for w in report.warnings)
    assert clips(store)["a"].title == "Ankara, Türkiye"


def test_dry_run_stores_nothing(store, tmp_path):
    report = import_dataset(store, write_table(tmp_path / "t.csv", ROWS), format="table",
                            mapping=write_mapping(tmp_path / "m.toml"), dry_run=True)
    assert report.dry_run and not report.stored and report.counts["rows"] == 3
    assert count(store, Clip) == 0 and count(store, Dataset) == 0


def _error(store, tmp_path, mapping_text: str, rows: list[dict] | None = None) -> str:
    table = write_table(tmp_path / "t.csv", rows or ROWS)
    with pytest.raises(InputError) as caught:
        import_dataset(store, table, format="table", mapping=write_mapping(tmp_path / "m.toml", mapping_text))
    assert count(store, Clip) == 0 and count(store, Dataset) == 0  # all or nothing
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_mapping_naming_an_unknown_column_is_one_line(store, tmp_path):
    message = _error(store, tmp_path, MAPPING.replace('title = "name"', 'title = "headline"'))
    assert "m.toml" in message and "[columns] title" in message and "'headline'" in message and "t.csv" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MAPPING.replace('recordist = "by"', 'author = "by"'), "[columns] author: unknown field"),
        (MAPPING.replace('country = "iso2"', 'country = "iso9"'), "[transforms] country: unknown transform 'iso9'"),
        (MAPPING.replace('country = "iso2"', 'title = "dms"'), "the transform 'dms' applies to latitude, longitude"),
        (MAPPING.replace('key = "id"', "key = 3"), "[columns] key: expected a column name (text), got 3"),
        (MAPPING.replace('licence = "CC BY-NC 4.0"', 'duration_s = "long"'), "[constants] duration_s: 'long': not a number"),
        (MAPPING.replace('licence = "CC BY-NC 4.0"', 'city = true'), "[constants] city: True: expected text"),
        (MAPPING.replace('longitude = "lon"\n', ""), "[columns]: longitude is required"),
        (MAPPING + "[extras]\nx = 1\n", "[extras]: unknown section"),
        (MAPPING.replace("[columns]", "[columns"), "not valid TOML"),
    ],
)
def test_bad_mappings_are_one_line_errors_naming_the_file_and_field(store, tmp_path, text, expected):
    message = _error(store, tmp_path, text)
    assert "m.toml" in message and expected in message


def test_a_transform_failing_on_a_row_names_file_line_and_field(store, tmp_path):
    rows = [dict(ROWS[0]), dict(ROWS[1], lat="91°00'00\"N"), dict(ROWS[2], nation="XX")]
    message = _error(store, tmp_path, MAPPING, rows)
    # line 3 (header on line 1): minutes/seconds fine but 91° is outside the range
    assert "t.csv, line 3, field latitude: 91 is outside [-90, 90]" in message
    rows[1]["lat"] = "41°24'N 3"
    message = _error(store, tmp_path, MAPPING, rows)
    assert "t.csv, line 3, field latitude (column 'lat') (transform dms)" in message
    rows[1]["lat"] = "41°24'12\"E"
    assert "the hemisphere 'E' does not fit a latitude" in _error(store, tmp_path, MAPPING, rows)
    rows[1]["lat"] = "35.7"
    message = _error(store, tmp_path, MAPPING, rows)
    assert "t.csv, line 4, field country (column 'nation') (transform iso2): 'XX': not an ISO 3166-1 alpha-2" in message


def test_a_value_of_the_wrong_type_names_the_row_and_field(store, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "a", "lat": 1.0, "lon": 2.0}) + "\n"
                    + json.dumps({"id": "b", "lat": [1.0], "lon": 2.0}) + "\n", encoding="utf-8")
    mapping = write_mapping(tmp_path / "m.toml", '[columns]\nkey="id"\nlatitude="lat"\nlongitude="lon"\n')
    with pytest.raises(InputError, match=r"t\.jsonl, line 2, field latitude \(column 'lat'\): \[1\.0\]: expected a number, got a list"):
        import_dataset(store, path, format="table", mapping=mapping)
    rows = [dict(ROWS[0], lat="north")]
    message = _error(store, tmp_path, MAPPING.replace('latitude = "dms"\n', ""), rows)
    assert "t.csv, line 2, field latitude (column 'lat'): 'north': not a number" in message


def test_duplicate_keys_empty_keys_and_width_mismatch(store, tmp_path):
    message = _error(store, tmp_path, MAPPING, [ROWS[0], dict(ROWS[1], id="xc-1")])
    assert "t.csv, line 3, field key: 'xc-1' repeats the key of " in message and "line 2" in message
    assert "line 2, field key (column 'id'): empty" in _error(store, tmp_path, MAPPING, [dict(ROWS[0], id=" ")])
    path = tmp_path / "t.csv"
    path.write_text("id,lat,lon\na,1,2\nb,1,2,3\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t\.csv, line 3: header/row width mismatch"):
        import_dataset(store, path, format="table",
                       mapping=write_mapping(tmp_path / "m.toml", '[columns]\nkey="id"\nlatitude="lat"\nlongitude="lon"\n'))


def test_parquet_rows_are_named_by_row_number(store, tmp_path):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pyarrow.Table.from_pylist([{"id": "a", "lat": 1.0, "lon": 2.0}, {"id": "b", "lat": 1.0, "lon": 200.0}]), path)
    mapping = write_mapping(tmp_path / "m.toml", '[columns]\nkey="id"\nlatitude="lat"\nlongitude="lon"\n')
    with pytest.raises(InputError, match=r"t\.parquet, row 2, field longitude: 200 is outside \[-180, 180\]"):
        import_dataset(store, path, format="table", mapping=mapping)


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("41°24'12.2\"N", "latitude", 41.40338888888889),
        ("41 24 12.2 S", "latitude", -41.40338888888889),
        ("W 2° 10.5'", "longitude", -2.175),
        ("-2:10:30", "longitude", -2.175),
        ("12.5", "latitude", 12.5),
    ],
)
def test_dms_forms(text, field, value):
    assert dms_degrees(text, field) == pytest.approx(value)


@pytest.mark.parametrize("text", ["41°61'N", "41°24'12\"N 5", "N 41 -3", "", "1 2 3 4"])
def test_dms_refuses(text):
    with pytest.raises(ValueError):
        dms_degrees(text, "latitude")


def test_cli_table_import_and_one_line_error(tmp_path, capsys):
    db = str(tmp_path / "p.sqlite")
    table = write_table(tmp_path / "t.csv", ROWS)
    mapping = write_mapping(tmp_path / "m.toml")
    assert main(["--db", db, "--json", "import", "dataset", "--format", "table", str(table), "--mapping", str(mapping)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["counts"]["clips_stored"] == 3 and payload["details"]["column_mapping"] == "mapping:m.toml"
    assert main(["--db", db, "import", "dataset", "--format", "table", str(table), "--name", "x"]) == 1
    err = capsys.readouterr().err
    assert "needs --mapping" in err and len(err.strip().splitlines()) == 1
    bad = write_mapping(tmp_path / "bad.toml", MAPPING.replace('"name"', '"headline"'))
    assert main(["--db", db, "import", "dataset", "--format", "table", str(table), "--mapping", str(bad), "--name", "y"]) == 1
    err = capsys.readouterr().err
    assert "bad.toml, [columns] title" in err and len(err.strip().splitlines()) == 1


def test_clips_show_lists_extra_metadata_and_derived_fields(tmp_path, capsys):
    db = str(tmp_path / "p.sqlite")
    table = write_table(tmp_path / "t.csv", ROWS)
    assert main(["--db", db, "import", "dataset", "--format", "table", str(table), "--mapping",
                 str(write_mapping(tmp_path / "m.toml"))]) == 0
    capsys.readouterr()
    assert main(["--db", db, "--json", "clips", "show", "xc-2"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["extra"] == {"habitat": ""} and record["derived"] == ["country", "continent"]
    assert (record["licence"], record["recordist"]) == ("CC BY-NC 4.0", "Ken")
    assert main(["--db", db, "clips", "show", "xc-1"]) == 0
    out = capsys.readouterr().out
    assert "[continent derived from the coordinates]" in out and "licence CC BY-NC 4.0; recordist Ana" in out
    assert 'extra: {"habitat": "urban"}' in out
