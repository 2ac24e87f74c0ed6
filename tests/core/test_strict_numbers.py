"""Strict numbers and physical line numbers in the importers' parsers (issue 28)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main
from workbench.errors import InputError
from workbench.strict_numbers import INT64_MAX, check_text, parse_float, parse_int

NOT_ASCII_DECIMAL = ("²", "--1", "٣", "５", "१", "𝟝", "1_0", " 1", "1 ", "0x10", "", "+", "1e", "one")


@pytest.mark.parametrize("text", NOT_ASCII_DECIMAL + ("1.5", "1e3"))
def test_parse_int_takes_only_ascii_decimal(text: str) -> None:
    with pytest.raises(InputError, match=r"^f\.csv:3: frame .* must be a whole number"):
        parse_int(text, "f.csv:3", "frame")


@pytest.mark.parametrize("text", ["1" * 400, "1" * 5001, str(INT64_MAX + 1), "100000000000000000000"])
def test_parse_int_bounds_huge_numbers_in_one_short_line(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_int(text, "f.csv:3", "source")
    message = str(caught.value)
    assert "\n" not in message and len(message) < 200 and "is outside [0, 9223372036854775807]" in message


@pytest.mark.parametrize("text", NOT_ASCII_DECIMAL + ("nan", "inf", "-Infinity", "١.٥", "1e400", "9" * 5001))
def test_parse_float_takes_only_finite_ascii_decimal(text: str) -> None:
    with pytest.raises(InputError, match=r"^f\.csv:3: azimuth "):
        parse_float(text, "f.csv:3", "azimuth", minimum=-180, maximum=180)


def test_parse_numbers_accept_plain_decimals() -> None:
    assert parse_int("-12", "", "x", minimum=None) == -12
    assert parse_int("+7", "", "x") == 7
    assert parse_float("-0.5e2", "", "x") == -50.0
    assert parse_float(".5", "", "x") == 0.5
    assert parse_float("3.", "", "x") == 3.0


def test_lone_surrogates_are_not_text() -> None:
    with pytest.raises(InputError, match="lone surrogate"):
        check_text("a\ud800b", "f.jsonl, line 2", "reasoning")
    assert check_text("🎧 東京", "", "x") == "🎧 東京"


def test_events_errors_name_the_physical_line(tmp_path: Path) -> None:
    from workbench.events.starss23 import parse_metadata_text

    # a form feed or U+2028 is no line break (str.splitlines would count one more line)
    text = "0,0,0,10,5\r\n\r\n\x0c1,0,0,10,5\u2028\n\n4,0,0,٣,5\n"
    with pytest.raises(InputError, match=r"^f\.csv:5: azimuth '٣'"):
        parse_metadata_text(text, "f.csv")


def _alt(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(["study", "alt-test", "--ratings", str(path), "--llm", "llm", "--metric", "neg_rmse", *extra])
    return rc, capsys.readouterr().err


def _ratings(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "ratings.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_alt_test_errors_name_the_physical_line_with_blank_lines_and_quoted_newlines(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    rows = ["unit,rater,value", "", "u1,llm,1", '"u\n2",a,2', "", "u3,b,x"]
    rc, err = _alt(capsys, _ratings(tmp_path, rows))
    assert rc == 1
    assert err.strip().splitlines() == [err.strip()]
    assert ", line 7, field value: 'x' is not a number" in err  # physical line 7 (2 blanks, 1 quoted newline)


def test_a_ragged_row_in_alt_test_ratings_is_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    rc, err = _alt(capsys, _ratings(tmp_path, ["unit,rater,value", "u1,llm,1", "u1,a,2,3", "u2,a,1"]))
    assert rc == 1
    assert err.strip().splitlines() == [err.strip()] and ", line 3: 4 fields where the header has 3" in err


@pytest.mark.parametrize("value", ["1e308", "-1e308", "1e400", "nan"])
def test_a_huge_rating_with_neg_rmse_is_refused_not_overflowed(tmp_path: Path, capsys, value: str) -> None:  # type: ignore[no-untyped-def]
    rows = ["unit,rater,value"] + [f"u{u},{r},{u % 3}" for u in range(1, 6) for r in ("llm", "a", "b", "c")]
    rows[3] = f"u1,b,{value}"
    rc, err = _alt(capsys, _ratings(tmp_path, rows), "--min-items", "1")
    assert rc == 1
    assert err.strip().splitlines() == [err.strip()] and ", line 4, field value:" in err


def test_predictions_refuse_lone_surrogates_and_huge_numbers_with_their_line(tmp_path: Path) -> None:
    from workbench.importing.predictions import read_prediction_file

    path = tmp_path / "r.jsonl"
    path.write_text('{"question_id": "a", "reasoning": "ok \\ud83c\\udfa7"}\n\n'
                    '{"question_id": "b", "reasoning": "\\ud800"}\n'
                    '{"question_id": "c", "seed": ' + "1" * 5001 + '}\n'
                    '{"question_id": "d", "seed": 100000000000000000000}\n'
                    '{"question_id": "e", "true_latitude": "٣٥"}\n', encoding="utf-8")
    parsed = read_prediction_file(path)
    assert [r.question_id for r in parsed.records] == ["a"]
    assert [line for line, _ in parsed.malformed] == [3, 4, 5, 6]
    assert all("\n" not in reason and len(reason) < 200 for _, reason in parsed.malformed)
