"""STARSS23 / DCASE metadata files: every bad input gets one line naming file, line and field;
export → import is exact (property-based)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import InputError
from workbench.events.model import STARSS23_CLASSES, SpatialEventData
from workbench.events.starss23 import (
    events_to_rows,
    format_number,
    format_rows,
    parse_metadata_text,
    read_class_list,
    read_metadata,
    rows_to_events,
)

GOOD_2023 = "0,0,0,30,10\n1,0,0,32,10\n1,6,0,-90,0\n2,6,0,-91,0\n"


def test_a_2023_file_groups_into_events() -> None:
    parsed = parse_metadata_text(GOOD_2023, "a.csv")
    assert not parsed.has_distance and len(parsed.rows) == 4
    events = rows_to_events(parsed)
    assert [(e.class_name, e.onset_s, e.offset_s, e.track) for e in events] == [
        ("female speech", 0.0, 0.2, ((30.0, 10.0), (32.0, 10.0))),
        ("footsteps", 0.1, 0.3, ((-90.0, 0.0), (-91.0, 0.0))),
    ]


def test_a_gap_in_frames_starts_a_new_event() -> None:
    events = rows_to_events(parse_metadata_text("0,2,0,0,0\n1,2,0,0,0\n5,2,0,0,0\n", "gap.csv"))
    assert [(e.onset_s, e.offset_s) for e in events] == [(0.0, 0.2), (0.5, 0.6)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0,0,0,181,0\n", "bad.csv:1: azimuth 181 is outside [-180, 180]"),
        ("0,0,0,-180.5,0\n", "bad.csv:1: azimuth -180.5 is outside"),
        ("0,0,0,10,91\n", "bad.csv:1: elevation 91 is outside [-90, 90]"),
        ("0,0,0,10,0\n1.5,0,0,10,0\n", "bad.csv:2: frame '1.5' must be a whole number"),
        ("-1,0,0,10,0\n", "bad.csv:1: frame -1 must be >= 0"),
        ("0,0,0,10,0\n1_0,0,0,10,0\n", "bad.csv:2: frame '1_0' must be a whole number"),
        ("0,0,0,10,0\n1,0,0,nan,0\n", "bad.csv:2: azimuth 'nan' is not a finite number"),
        ("0,0,0,10\n", "bad.csv:1: column 'elevation' is missing"),
        ("0,0\n", "bad.csv:1: column 'source' is missing"),
        ("0,13,0,10,0\n", "bad.csv:1: class 13 is unknown"),
        ("0,x,0,10,0\n", "bad.csv:1: class 'x' must be a whole number"),
        ("0,0,0,ten,0\n", "bad.csv:1: azimuth 'ten' is not a number"),
        ("0,0,0,10,0,-5\n", "bad.csv:1: distance -5 cm is negative"),
        ("0,0,0,10,0\n1,0,0,10,0,100\n", "bad.csv:2: 6 columns where earlier rows have 5"),
        ("0,0,0,10,0\n0,0,0,12,0\n", "bad.csv:2: frame 0, class 0, source 0 already given on line 1"),
        ("0,0,0,10,0\n600,0,0,10,0\n", "bad.csv:2: frame 600 (60.0 s) is past the clip's end"),
    ],
)
def test_bad_rows_get_one_line_naming_file_line_and_field(text: str, expected: str) -> None:
    with pytest.raises(InputError) as info:
        parse_metadata_text(text, "bad.csv", n_frames=600)
    message = str(info.value)
    assert message.startswith(expected) and "\n" not in message


def test_a_project_class_list_sets_the_valid_indices(tmp_path) -> None:
    classes = tmp_path / "classes.txt"
    classes.write_text("dog\ncar horn\n")
    names = read_class_list(classes)
    assert names == ("dog", "car horn")
    with pytest.raises(InputError, match="class 2 is unknown"):
        parse_metadata_text("0,2,0,0,0\n", "p.csv", n_classes=len(names))
    events = rows_to_events(parse_metadata_text("0,1,0,0,0\n", "p.csv", n_classes=2), names, "project")
    assert events[0].class_name == "car horn"


def test_reading_a_file_with_a_bom_and_a_header(tmp_path) -> None:
    path = tmp_path / "h.csv"
    path.write_bytes(b"\xef\xbb\xbfframe,class,source,azimuth,elevation\n3,4,0,-10,5\n")
    parsed = read_metadata(path)
    assert [(r.frame, r.class_index, r.line) for r in parsed.rows] == [(3, 4, 2)]


def test_export_refuses_events_it_cannot_write() -> None:
    speech = SpatialEventData(0.0, 0.3, "female speech", ((0.0, 0.0),), uid="a")
    other = SpatialEventData(0.1, 0.2, "female speech", ((10.0, 0.0),), uid="b")
    with pytest.raises(InputError, match="both cover frame 1"):
        events_to_rows([speech, other])
    with pytest.raises(InputError, match="not in the export's class list"):
        events_to_rows([SpatialEventData(0.0, 0.1, "Dog", ((0.0, 0.0),))])
    with pytest.raises(InputError, match="no distance"):
        events_to_rows([speech, SpatialEventData(1.0, 1.1, "door", ((0.0, 0.0),), distance_cm=100.0)])


def test_a_static_event_with_one_direction_covers_every_frame() -> None:
    event = SpatialEventData(0.5, 0.8, "bell", ((-45.0, 20.0),), distance_cm=210.0)
    rows, has_distance = events_to_rows([event])
    assert format_rows(rows, has_distance) == "5,11,0,-45,20,210\n6,11,0,-45,20,210\n7,11,0,-45,20,210\n"


def test_lateral_events_export_the_experts_choice() -> None:
    back = SpatialEventData(0.0, 0.1, "door", ((30.0, 0.0),), direction_kind="lateral", front_back="back")
    rows, _ = events_to_rows([back])
    assert rows[0].azimuth == 150.0


_row = st.tuples(
    st.integers(0, 400),
    st.integers(0, 12),
    st.integers(0, 3),
    st.one_of(st.integers(-180, 180).map(float), st.floats(-180, 180, allow_nan=False).map(lambda v: round(v, 3))),
    st.integers(-90, 90).map(float),
    st.integers(1, 2000).map(float),
)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(_row, max_size=60, unique_by=lambda r: r[:3]), with_distance=st.booleans())
def test_export_then_import_is_exact(rows, with_distance: bool) -> None:
    rows = sorted(rows, key=lambda r: r[:3])
    text = "".join(
        ",".join([str(f), str(c), str(s), format_number(a), format_number(e)]
                 + ([format_number(d)] if with_distance else [])) + "\n"
        for f, c, s, a, e, d in rows
    )
    parsed = parse_metadata_text(text, "p.csv")
    events = rows_to_events(parsed)
    out_rows, has_distance = events_to_rows(events)
    assert format_rows(out_rows, has_distance) == text
    # and once more through the events: import(export(events)) == events
    assert rows_to_events(parse_metadata_text(format_rows(out_rows, has_distance), "q.csv")) == events


def test_rows_in_any_order_export_in_canonical_order() -> None:
    shuffled = "5,1,0,10,0\n3,0,0,0,0\n4,0,0,1,0\n"
    rows, d = events_to_rows(rows_to_events(parse_metadata_text(shuffled, "s.csv")))
    assert format_rows(rows, d) == "3,0,0,0,0\n4,0,0,1,0\n5,1,0,10,0\n"
    assert len(STARSS23_CLASSES) == 13
