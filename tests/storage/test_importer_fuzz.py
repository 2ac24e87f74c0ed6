"""Fuzzed input through every importer (issue 28): 0 tracebacks, 0 hangs, 0 half-written.

Each importer is one :class:`Target`: a valid file as physical lines, the numeric fields a
mutation may spoil, and the command that reads it. A case takes the valid file, spoils one
numeric field with a hostile number (which MUST be refused, with one line naming the file and
the physical line) and/or applies structural damage (blank lines, quoted newlines, truncation,
byte flips, ragged rows: either outcome is fine, a crash is not). After each refused case the
project is byte-for-byte what it was. A new importer adds its Target at the end of ``_build_targets`` (the seeded cases of the others stay).
"""

from __future__ import annotations

import faulthandler
import hashlib
import json
import random
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cli.main import main

SEED = 28
CASES_PER_TARGET = 15
HANG_GUARD_S = 60  # a case past this dumps every thread's stack and ends the run: a hang, not a slow case

# Each is refused wherever a number is expected (none is ASCII decimal in range, or finite).
HOSTILE_NUMBERS = (
    "²", "--1", "1" * 400, "1" * 5001, "100000000000000000000", "٣", "５", "१", "𝟝", "1_0", "nan", "inf",
    "-Infinity", "1e400", "0x10", "+-1", "1e", ".", "١.٥", "1 2", "", "１e3", "9" * 30,
)


@dataclass
class Case:
    lines: list[str]
    hostile_line: int | None = None  # physical line (1-based) of the spoiled numeric field
    only_fault: bool = False  # no other damage: the error must name exactly that line


@dataclass
class Target:
    """One importer under the fuzzer."""

    name: str
    suffix: str
    valid: Callable[[], list[str]]  # physical lines of a valid file
    numeric_fields: Callable[[str], list[int]]  # indices of the numeric fields of one line ([] for none)
    spoil: Callable[[str, int, str], str]  # a line with field i replaced by the hostile text
    run: Callable[[Path, str], int]  # import the file into the project; exit status
    names_line: Callable[[Path, int, str], bool]  # whether the error names the file and that line
    line_of_field: Callable[[str, int], bool] = field(default=lambda line, i: True)


def _csv_spoil(line: str, index: int, text: str) -> str:
    fields = line.split(",")
    fields[index] = text
    return ",".join(fields)


# ---------------------------------------------------------------------------------------- targets


def _events_valid() -> list[str]:
    return [f"{f},{f % 3},{f % 2},{(f * 7) % 360 - 180},{(f * 3) % 90}" for f in range(12)]


def _events_run(db: str) -> Callable[[Path, str], int]:
    return lambda file, _: main(["--db", db, "--annotator", "fuzz", "events", "import", "--clip", "c1", "--replace",
                                 str(file)])


def _predictions_valid() -> list[str]:
    return [json.dumps({"question_id": f"c{i}", "true_latitude": 1.0 + i, "true_longitude": 2.0 + i,
                        "predicted_latitude": f"{i}.5", "predicted_longitude": "2", "seed": 42,
                        "reasoning": f"birds {i}"}) for i in range(1, 4)]


_PREDICTION_NUMBERS = ("true_latitude", "true_longitude", "seed")


def _predictions_spoil(line: str, index: int, text: str) -> str:
    record = json.loads(line)
    name = _PREDICTION_NUMBERS[index]
    if name == "seed":  # a raw JSON token where one parses, else the text
        body = json.dumps({k: v for k, v in record.items() if k != "seed"})
        token = text if text.isascii() and text.lstrip("-").isdigit() else json.dumps(text)
        if token == json.dumps(text):
            return line  # a string seed is no number and is ignored by design: not a hostile case
        return body[:-1] + f', "seed": {token}}}'
    record[name] = text
    return json.dumps(record, ensure_ascii=False)


def _ratings_valid() -> list[str]:
    rows = ["unit,rater,value"]
    for unit in range(1, 5):
        for rater in ("llm", "a", "b", "c"):
            rows.append(f"u{unit},{rater},{(unit + len(rater)) % 4}")
    return rows


def _table_valid() -> list[str]:
    """A dataset in its own column layout (``import dataset --format table`` with a mapping)."""
    return ["id,lat,lon,place,minutes"] + [f"d{i},{10 + i}.5,{-20 - i}.25,Place {i},{i}.5" for i in range(1, 5)]


_TABLE_MAPPING = """[columns]
key = "id"
latitude = "lat"
longitude = "lon"
title = "place"
duration_s = "minutes"
"""


def _guess_lines() -> list[str]:
    return ["--lat", "12.5", "--lon", "-3.25", "--confidence", "0.5", "--city", "Lyon"]


def _build_targets(db: str, tmp: Path) -> list[Target]:
    def alt_test(file: Path, _: str) -> int:
        return main(["study", "alt-test", "--ratings", str(file), "--llm", "llm", "--metric", "neg_rmse",
                     "--min-items", "1"])

    def guess(file: Path, _: str) -> int:
        # the "file" of a guess is its command line, one argument per line
        args = file.read_text(encoding="utf-8", errors="surrogateescape").split("\n")
        return main(["--db", db, "--annotator", "fuzz", "study", "guess", "--clip", "c1", *args])

    mapping = tmp / "fuzz-mapping.toml"
    mapping.write_text(_TABLE_MAPPING, encoding="utf-8")

    def table(file: Path, _: str) -> int:
        return main(["--db", db, "import", "dataset", "--format", "table", str(file), "--mapping", str(mapping),
                     "--name", file.stem])

    return [
        Target("events", ".csv", _events_valid, lambda line: [0, 2, 3, 4] if "," in line else [], _csv_spoil,
               _events_run(db), lambda path, line, err: f"{path}:{line}:" in err),
        Target("predictions", ".jsonl", _predictions_valid, lambda line: [0, 1, 2] if line.startswith("{") else [],
               _predictions_spoil,
               lambda file, _: main(["--db", db, "import", "predictions", "--model", "fuzz", "--replace", str(file)]),
               lambda path, line, err: str(path) in err and f"line {line}:" in err),
        Target("alt-test ratings", ".csv", _ratings_valid,
               lambda line: [2] if not line.startswith("unit") and line.count(",") == 2 else [], _csv_spoil, alt_test,
               lambda path, line, err: f"{path}, line {line}" in err),
        Target("guesses", ".args", _guess_lines,
               lambda line: [0] if line.replace(".", "").lstrip("-").isdigit() else [],
               lambda line, i, text: text, guess, lambda path, line, err: "guess:" in err),
        Target("dataset table", ".csv", _table_valid,
               lambda line: [1, 2, 4] if not line.startswith("id,") and line.count(",") == 4 else [], _csv_spoil,
               table, lambda path, line, err: str(path.name) in err and f"line {line}" in err),
    ]


# ------------------------------------------------------------------------------------------- cases


def _structural(rng: random.Random, lines: list[str]) -> tuple[list[str], bool]:
    """Damage that may or may not leave a valid file; True when line positions stay as they were."""
    choice = rng.randrange(8)
    lines = list(lines)
    if choice == 0:
        lines.insert(rng.randrange(len(lines) + 1), "")  # a blank line
        return lines, False
    if choice == 1:
        return [line + "\r" for line in lines], True  # CRLF endings
    if choice == 2:
        i = rng.randrange(len(lines))
        lines[i] = lines[i] + ",extra"  # a ragged row
        return lines, True
    if choice == 3:
        i = rng.randrange(len(lines))
        lines[i] = '"quoted\nnewline",' + lines[i]  # a quoted newline (two physical lines)
        return lines, False
    if choice == 4:
        i = rng.randrange(len(lines))
        lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]  # a truncated line
        return lines, True
    if choice == 5:
        i = rng.randrange(len(lines))
        lines[i] = lines[i] + "\x00"
        return lines, True
    if choice == 6:
        lines.append(lines[rng.randrange(len(lines))])  # a duplicate row
        return lines, True
    i = rng.randrange(len(lines))
    lines[i] = lines[i].replace("1", "\\ud800", 1)  # a lone surrogate escape (JSON) / odd text
    return lines, True


def _cases(target: Target, rng: random.Random) -> list[Case]:
    cases = []
    for n in range(CASES_PER_TARGET):
        lines = target.valid()
        hostile_line = None
        if n % 3 != 2:  # two cases of three spoil a number
            candidates = [(i, f) for i, line in enumerate(lines) for f in target.numeric_fields(line)]
            i, f = rng.choice(candidates)
            spoiled = target.spoil(lines[i], f, rng.choice(HOSTILE_NUMBERS))
            if spoiled != lines[i]:
                lines[i] = spoiled
                hostile_line = i + 1
        if n % 3 != 0:
            damaged, same_positions = _structural(rng, lines)
            if hostile_line is not None and not same_positions:
                # the physical line of the spoiled field after the damage
                text = "\n".join(damaged)
                marker = lines[hostile_line - 1]
                position = text.find(marker)
                hostile_line = text.count("\n", 0, position) + 1 if position >= 0 else None
            lines = damaged
        cases.append(Case(lines, hostile_line, only_fault=n % 3 == 0))
    return cases


def _fingerprint(db: Path) -> str:
    with sqlite3.connect(db) as connection:
        return hashlib.sha256("\n".join(connection.iterdump()).encode("utf-8", "surrogatepass")).hexdigest()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    from storage import open_store
    from storage.models import Clip, Dataset

    db = tmp_path / "project.sqlite"
    store = open_store(db)
    with store.write() as s:
        dataset = Dataset(name="fuzz")
        s.add(dataset)
        s.flush()
        for i in range(1, 4):
            s.add(Clip(dataset_id=dataset.id, key=f"c{i}", latitude=1.0 + i, longitude=2.0 + i, duration_s=60.0))
    store.dispose()
    return db


def test_fuzzed_files_through_every_importer(project: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(SEED)
    problems: list[str] = []
    counts: dict[str, dict[str, int]] = {}
    for target in _build_targets(str(project), tmp_path):
        tally = counts.setdefault(target.name, {"accepted": 0, "refused": 0})
        for n, case in enumerate(_cases(target, rng)):
            file = tmp_path / f"{target.name.replace(' ', '_')}_{n}{target.suffix}"
            file.write_bytes("\n".join(case.lines).encode("utf-8", "surrogateescape"))
            before = _fingerprint(project)
            capsys.readouterr()
            faulthandler.dump_traceback_later(HANG_GUARD_S, exit=True, file=sys.__stderr__)
            try:
                rc = target.run(file, str(project))
            except BaseException as exc:  # noqa: BLE001 - a traceback is the finding
                problems.append(f"{target.name} case {n}: traceback {type(exc).__name__}: {exc}"[:300])
                continue
            finally:
                faulthandler.cancel_dump_traceback_later()
            err = capsys.readouterr().err
            where = f"{target.name} case {n} ({file.name})"
            if rc not in (0, 1, 2):  # 2: a usage error (a guess's damaged command line)
                problems.append(f"{where}: exit {rc}: {err[:200]}")
                continue
            if rc == 0:
                tally["accepted"] += 1
                if case.hostile_line is not None:
                    problems.append(f"{where}: a hostile number on line {case.hostile_line} was accepted")
                continue
            tally["refused"] += 1
            errors = [line for line in err.splitlines() if line.startswith("aglw: error")]
            if len(errors) != 1 or errors[0] != err.strip().splitlines()[-1]:
                problems.append(f"{where}: the error is not one line: {err[:300]!r}")
            if case.only_fault and case.hostile_line is not None and not target.names_line(
                    file, case.hostile_line, err):
                problems.append(f"{where}: the error does not name line {case.hostile_line}: {err[:300]!r}")
            if _fingerprint(project) != before:
                problems.append(f"{where}: refused, yet the project changed (half-written)")
    assert not problems, "\n".join(problems[:20])
    for name, tally in counts.items():  # the fuzzer reached both outcomes, so it can fail
        assert tally["refused"] > 0 and tally["accepted"] > 0, (name, tally)
