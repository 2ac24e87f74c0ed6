"""Time references in reasoning text."""

from __future__ import annotations

import pytest

from workbench.timerefs import find_time_references


def _texts(text: str) -> list[tuple[str, float]]:
    return [(text[r.start_char : r.end_char], r.seconds) for r in find_time_references(text)]


def test_clock_forms_with_spans() -> None:
    text = "A call to prayer at 1:08, traffic at 0:48 and a bell at 1:02:03."
    assert _texts(text) == [("1:08", 68.0), ("0:48", 48.0), ("1:02:03", 3723.0)]


def test_several_references_in_one_phrase() -> None:
    text = "gulls around 0:13 and 0:35, then surf (0:40–0:52)"
    assert [s for _, s in _texts(text)] == [13.0, 35.0, 40.0, 52.0]


def test_fraction_and_written_seconds() -> None:
    text = "a horn at 0:48.5 and a dog barking at 12 seconds, speech around 4.5 s"
    assert _texts(text) == [("0:48.5", 48.5), ("12 seconds", 12.0), ("4.5 s", 4.5)]


@pytest.mark.parametrize(
    "text",
    [
        "an aspect ratio of 16:9 or 3:2",
        "the recording is 12 seconds long",
        "Matthew 12:34:56:78",
        "the shop opens at 10:30 am",
        "no times here",
        "",
    ],
)
def test_non_references_are_ignored(text: str) -> None:
    assert find_time_references(text) == []


def test_none_and_tuples() -> None:
    assert find_time_references(None) == []
    assert [(r.start_char, r.end_char, r.seconds) for r in find_time_references("at 0:04")] == [(3, 7, 4.0)]


def test_seconds_out_of_range_not_taken() -> None:
    assert find_time_references("score 1:75") == []
