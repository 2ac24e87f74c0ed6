"""Global options (--json, --db, --annotator, -v) work before or after the subcommand (cli.md)."""

from __future__ import annotations

import json

import pytest

from cli.main import hoist_global_options, main


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["metrics", "--model", "m", "--json"], ["--json", "metrics", "--model", "m"]),
        (["--json", "metrics", "--model", "m"], ["--json", "metrics", "--model", "m"]),
        (["label", "set", "--clip", "k", "--db", "x.sqlite"], ["--db", "x.sqlite", "label", "set", "--clip", "k"]),
        (["label", "set", "--db=x.sqlite", "-v"], ["--db=x.sqlite", "-v", "label", "set"]),
        (["label", "history", "--annotator", "ana"], ["--annotator", "ana", "label", "history"]),
        # an option value that looks like a global flag stays where it is
        (["label", "clip", "--clip", "k", "--note", "--json"], ["label", "clip", "--clip", "k", "--note", "--json"]),
        # nothing after "--" is touched
        (["analyze", "--", "--json"], ["analyze", "--", "--json"]),
    ],
)
def test_hoist_global_options(argv: list[str], expected: list[str]) -> None:
    assert hoist_global_options(argv) == expected


def test_json_after_the_subcommand_is_one_json_value(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    ratings = tmp_path / "r.csv"
    ratings.write_text("unit,rater,value\n1,a,x\n1,b,x\n2,a,y\n2,b,y\n3,a,x\n3,b,y\n", encoding="utf-8")
    before = main(["--json", "agreement", "--ratings", str(ratings)])
    out_before = json.loads(capsys.readouterr().out)
    after = main(["agreement", "--ratings", str(ratings), "--json"])
    out_after = json.loads(capsys.readouterr().out)
    assert before == after == 0
    assert out_before == out_after
