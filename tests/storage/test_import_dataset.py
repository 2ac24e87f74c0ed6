"""Dataset CSV import: the AGL1K width quirk, every bad-table case, all-or-nothing storage."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from storage.models import Clip, Dataset, MediaRoot
from cli.main import main
from workbench.errors import InputError
from workbench.importing import import_dataset
from workbench.importing.agl1k import (
    AGL1K_PUBLISHED_HEADER,
    CATEGORY_COLUMNS,
    CLIP_COLUMNS,
    read_agl1k_text,
)


def clip_row(i: int, **overrides: object) -> list[str]:
    values = {
        "key": f"aporee_{i}_{1000 + i}", "short_key": str(1000 + i), "longitude": "-2.5",
        "latitude": "53.75", "altitude": "22.0", "description": "Station, platform<br />rain",
        "title": "Preston, UK - station", "mp3name": f"clip{i}.mp3", "mp3seconds": "99.5",
        "city": "Preston", "country": "United Kingdom", "continent": "Europe",
        **{c: "0.5" for c in CATEGORY_COLUMNS},
    }
    values.update({k: str(v) for k, v in overrides.items()})
    return [values[c] for c in CLIP_COLUMNS]


def write_csv(path: Path, rows: list[list[str]], header=AGL1K_PUBLISHED_HEADER, encoding="utf-8") -> Path:
    buffer = io.StringIO(newline="")
    # CRLF terminator: the csv module then quotes any field holding a bare \r or \n, which
    # a reader must otherwise take as a line break (with "\n" alone, "0\r0" goes out unquoted)
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding=encoding, newline="")
    return path


def count(store, table) -> int:
    with store.session() as s:
        return s.execute(select(func.count()).select_from(table)).scalar_one()


def assert_nothing_stored(store) -> None:
    assert count(store, Dataset) == 0
    assert count(store, Clip) == 0


def test_published_layout_maps_eight_categories(any_store, tmp_path):
    path = write_csv(tmp_path / "d.csv", [clip_row(1, channel="0.1", environment_and_background="0.2",
                                                   sounds_of_things="0.3", source_ambiguous_sounds="0.4"),
                                          clip_row(2)])
    report = import_dataset(any_store, path, name="toy")
    assert report.stored and report.counts["clips_stored"] == 2
    assert report.details["column_mapping"] == "agl1k-20"
    with any_store.session() as s:
        clip = s.execute(select(Clip).where(Clip.key == "aporee_1_1001")).scalar_one()
    assert (clip.channel, clip.environment_and_background, clip.sounds_of_things,
            clip.source_ambiguous_sounds) == (0.1, 0.2, 0.3, 0.4)
    assert (clip.longitude, clip.latitude, clip.short_key) == (-2.5, 53.75, "1001")
    assert clip.description == "Station, platform<br />rain"


def test_correct_20_column_header_is_accepted_in_any_order(store, tmp_path):
    header = list(reversed(CLIP_COLUMNS))
    rows = [list(reversed(clip_row(1, music="0.7")))]
    report = import_dataset(store, write_csv(tmp_path / "d.csv", rows, header=header), name="x")
    assert report.details["column_mapping"] == "header"
    with store.session() as s:
        assert s.execute(select(Clip.music)).scalar_one() == 0.7


def test_unknown_width_mismatch_is_refused_naming_line_and_counts(any_store, tmp_path):
    rows = [clip_row(1), clip_row(2), clip_row(3)[:-1]]  # third data row has 19 values
    with pytest.raises(InputError, match=r"line 4: header/row width mismatch: .*19 names, this row has 19 values"):
        import_dataset(any_store, write_csv(tmp_path / "d.csv", rows), name="x")
    assert_nothing_stored(any_store)


def test_consistent_19_column_file_is_not_guessed(store, tmp_path):
    """A self-consistent 19-column table can't be split into the 8 categories: refused, not shifted."""
    rows = [clip_row(1)[:-1]]
    with pytest.raises(InputError, match=r"line 2: .*has 19 names, this row has 19 values"):
        import_dataset(store, write_csv(tmp_path / "d.csv", rows), name="x")
    assert_nothing_stored(store)


def test_naive_shift_would_put_short_key_in_longitude_and_is_refused(store, tmp_path):
    """Rows written with one extra leading value (a shifted export) fail validation, nothing stored."""
    header = list(CLIP_COLUMNS)
    rows = [["extra", *clip_row(1)[:-1]]]
    with pytest.raises(InputError, match=r"line 2, field longitude: 1001 is outside"):
        import_dataset(store, write_csv(tmp_path / "d.csv", rows, header=header), name="x")
    assert_nothing_stored(store)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"latitude": "95"}, r"line 3, field latitude: 95 is outside \[-90, 90\]"),
        ({"longitude": "200"}, r"line 3, field longitude: 200 is outside \[-180, 180\]"),
        ({"longitude": "abc"}, r"line 3, field longitude: 'abc' is not a number"),
        ({"latitude": ""}, r"line 3, field latitude: '' is not a number"),
        ({"mp3seconds": "long"}, r"line 3, field mp3seconds"),
        ({"music": "1.5"}, r"line 3, field music: 1.5 is outside \[0, 1\]"),
        ({"animal": "nan"}, r"line 3, field animal"),
        ({"key": " "}, r"line 3, field key: the key is empty"),
        ({"key": "aporee_1_1001"}, r"line 3, field key: 'aporee_1_1001' repeats the key of line 2"),
    ],
)
def test_bad_values_are_refused_and_nothing_stored(store, tmp_path, overrides, message):
    rows = [clip_row(1), clip_row(2, **overrides)]
    with pytest.raises(InputError, match=message):
        import_dataset(store, write_csv(tmp_path / "bad.csv", rows), name="x")
    assert_nothing_stored(store)


def test_missing_and_repeated_columns_are_refused(store, tmp_path):
    header = [c for c in CLIP_COLUMNS if c != "country"]
    rows = [[v for c, v in zip(CLIP_COLUMNS, clip_row(1)) if c != "country"]]
    with pytest.raises(InputError, match="line 1: the header lacks the column.s. country"):
        import_dataset(store, write_csv(tmp_path / "a.csv", rows, header=header), name="x")
    header = [*CLIP_COLUMNS[:-1], "city"]
    with pytest.raises(InputError, match="line 1: the header repeats the column.s. city"):
        import_dataset(store, write_csv(tmp_path / "b.csv", [clip_row(1)], header=header), name="x")
    assert_nothing_stored(store)


def test_empty_continent_is_null_and_reported(store, tmp_path):
    rows = [clip_row(1), clip_row(2, continent=""), clip_row(3, continent="  ")]
    report = import_dataset(store, write_csv(tmp_path / "d.csv", rows), name="x")
    assert report.details["empty_continent_keys"] == ["aporee_2_1002", "aporee_3_1003"]
    assert report.counts["empty_continent"] == 2
    with store.session() as s:
        assert s.execute(select(func.count()).select_from(Clip).where(Clip.continent.is_(None))).scalar_one() == 2


@pytest.mark.parametrize("encoding", ["utf-8-sig", "latin-1"])
def test_bom_and_latin1_files(store, tmp_path, encoding):
    rows = [clip_row(1, country="Réunion", city="Saint-Denis")]
    report = import_dataset(store, write_csv(tmp_path / "d.csv", rows, encoding=encoding), name="x")
    assert report.details["encoding"] == encoding
    assert any("Latin-1" in w for w in report.warnings) == (encoding == "latin-1")
    with store.session() as s:
        clip = s.execute(select(Clip)).scalar_one()
    assert clip.country == "Réunion" and clip.key == "aporee_1_1001"


def test_embedded_newlines_long_fields_and_script_stay_text(store, tmp_path):
    long_text = "x" * 300_000  # beyond the csv module's default 128 KiB field limit
    script = '<script>alert("x")</script>\n<b>bold</b>, "quoted"'
    rows = [clip_row(1, description=script), clip_row(2, title=long_text), clip_row(3)]
    path = write_csv(tmp_path / "d.csv", rows)
    import_dataset(store, path, name="x")
    with store.session() as s:
        clips = {c.key: c for c in s.execute(select(Clip)).scalars()}
    assert clips["aporee_1_1001"].description == script
    assert clips["aporee_2_1002"].title == long_text
    # Line numbers count physical lines: the row after the two-line description starts on line 4.
    table = read_agl1k_text(path.read_text(encoding="utf-8"), path)
    assert table.line_numbers == [2, 4, 5]


def test_unterminated_quote_is_refused(store, tmp_path):
    path = tmp_path / "d.csv"
    write_csv(path, [clip_row(1)])
    path.write_text(path.read_text(encoding="utf-8") + 'aporee_2,"unterminated\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 3"):
        import_dataset(store, path, name="x")
    assert_nothing_stored(store)


def test_empty_file_and_header_only(store, tmp_path):
    (tmp_path / "e.csv").write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="empty"):
        import_dataset(store, tmp_path / "e.csv")
    with pytest.raises(InputError, match="no data rows"):
        import_dataset(store, write_csv(tmp_path / "h.csv", []))
    with pytest.raises(InputError, match="cannot read"):
        import_dataset(store, tmp_path / "missing.csv")
    with pytest.raises(InputError, match="unknown dataset format"):
        import_dataset(store, tmp_path / "h.csv", format="kaggle")
    assert_nothing_stored(store)


def test_dry_run_stores_nothing_and_reimport_is_refused(any_store, tmp_path):
    path = write_csv(tmp_path / "d.csv", [clip_row(1), clip_row(2)])
    report = import_dataset(any_store, path, name="toy", dry_run=True)
    assert report.dry_run and not report.stored and report.counts["rows"] == 2
    assert_nothing_stored(any_store)
    import_dataset(any_store, path, name="toy")
    with pytest.raises(InputError, match="'toy' already exists .2 clips"):
        import_dataset(any_store, path, name="toy")
    assert count(any_store, Clip) == 2
    import_dataset(any_store, path, name="toy-v2")
    assert count(any_store, Clip) == 4


def test_media_root_links_existing_audio_only_inside_the_root(store, tmp_path):
    media = tmp_path / "media"
    (media / "aporee_2_1002").mkdir(parents=True)
    (media / "clip1.mp3").write_bytes(b"x")
    (media / "aporee_2_1002" / "clip2.mp3").write_bytes(b"x")
    (tmp_path / "secret.mp3").write_bytes(b"x")
    rows = [clip_row(1), clip_row(2), clip_row(3), clip_row(4, mp3name="../secret.mp3")]
    report = import_dataset(store, write_csv(tmp_path / "d.csv", rows), name="x", media_root=media)
    assert report.counts["audio_found"] == 2 and report.counts["audio_missing"] == 2
    assert report.details["audio_outside_media_root"] == ["aporee_4_1004"]
    with store.session() as s:
        paths = dict(s.execute(select(Clip.key, Clip.audio_path)).all())
        roots = s.execute(select(MediaRoot.path)).scalars().all()
    assert paths == {"aporee_1_1001": "clip1.mp3", "aporee_2_1002": "aporee_2_1002/clip2.mp3",
                     "aporee_3_1003": None, "aporee_4_1004": None}
    assert roots == [str(media.resolve())]
    with pytest.raises(InputError, match="not a folder"):
        import_dataset(store, write_csv(tmp_path / "e.csv", rows), name="y", media_root=tmp_path / "nope")


def test_cli_import_dataset(sqlite_path, tmp_path, capsys):
    import json

    path = write_csv(tmp_path / "d.csv", [clip_row(1), clip_row(2, continent="")])
    rc = main(["--db", str(sqlite_path), "--json", "import", "dataset", "--format", "agl1k",
               str(path), "--name", "toy", "--dry-run"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dry_run"] and out["counts"]["rows"] == 2
    assert out["details"]["empty_continent_keys"] == ["aporee_2_1002"]
    rc = main(["--db", str(sqlite_path), "import", "dataset", str(path), "--name", "toy"])
    assert rc == 0
    assert "clips stored 2" in capsys.readouterr().out  # the summary is the result: stdout
    bad = write_csv(tmp_path / "bad.csv", [clip_row(1, latitude="95")])
    rc = main(["--db", str(sqlite_path), "import", "dataset", str(bad), "--name", "bad"])
    assert rc == 1
    assert "aglw: error:" in capsys.readouterr().err


# --------------------------------------------------------------------------- properties

_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)
_category = st.sampled_from([f"{v / 10:.1f}" for v in range(11)])


@st.composite
def valid_rows(draw):
    n = draw(st.integers(min_value=1, max_value=6))
    rows = []
    for i in range(n):
        rows.append(clip_row(
            i,
            longitude=repr(draw(st.floats(-180, 180, allow_nan=False))),
            latitude=repr(draw(st.floats(-90, 90, allow_nan=False))),
            description=draw(_text), title=draw(_text),
            city=draw(_text).strip(), country=draw(_text).strip(),
            continent=draw(st.sampled_from(["Europe", "Asia", ""])),
            mp3seconds=repr(draw(st.floats(34, 180))),
            **{c: draw(_category) for c in CATEGORY_COLUMNS},
        ))
    return rows


@settings(max_examples=60, deadline=None)
@given(rows=valid_rows())
def test_any_valid_table_round_trips(rows):
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(AGL1K_PUBLISHED_HEADER)
    writer.writerows(rows)
    table = read_agl1k_text(buffer.getvalue(), Path("gen.csv"))
    assert len(table.rows) == len(rows)
    for parsed, raw in zip(table.rows, rows, strict=True):
        cells = dict(zip(CLIP_COLUMNS, raw, strict=True))
        assert parsed["key"] == cells["key"]
        assert parsed["longitude"] == float(cells["longitude"])
        assert parsed["latitude"] == float(cells["latitude"])
        assert parsed["description"] == (cells["description"] or None)
        assert parsed["country"] == (cells["country"].strip() or None)
        assert parsed["continent"] == (cells["continent"] or None)
        assert [parsed[c] for c in CATEGORY_COLUMNS] == [float(cells[c]) for c in CATEGORY_COLUMNS]


_corruptions = st.sampled_from([
    ("longitude", "181"), ("longitude", "-180.5"), ("longitude", "east"), ("latitude", "-90.01"),
    ("latitude", ""), ("mp3seconds", "0"), ("mp3seconds", "x"), ("key", ""), ("human_sounds", "-0.1"),
    ("channel", "2"), ("sounds_of_things", "inf"), ("altitude", "high"),
])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=valid_rows(), data=st.data(), corruption=_corruptions)
def test_any_single_field_corruption_is_refused_and_stores_nothing(store, tmp_path, rows, data, corruption):
    index = data.draw(st.integers(0, len(rows) - 1))
    column, value = corruption
    rows[index][CLIP_COLUMNS.index(column)] = value
    path = write_csv(tmp_path / "corrupt.csv", rows)
    with pytest.raises(InputError, match=rf"line \d+, field {column}"):
        import_dataset(store, path, name="x")
    assert_nothing_stored(store)
