"""Hostile names in every field that reaches a generated document (issue 28): the study report's
LaTeX tables and figures, the agreement bundle's tables.tex and tables.md; a full disk is one line."""

from __future__ import annotations

import errno
import re
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import select

from cli.main import main
from storage.models import AlmRun, Annotator, CategoryLabel, JudgeRun, Judgment
from tests.storage.studies_project import CATEGORIES, populate

# Judges, ALM, experts (names and pseudonyms) and a category renamed to these.
JUDGE_NAMES = {"opus": r"gemini \input /etc/hostname \relax", "sonnet": "qwen $0.5$", "haiku": "a|b <script>x</script>"}
ALM_NAME = r"alm #1 {x}_y \& ^ ~ 100%"
PSEUDONYMS = (r"\&", "ünïcødé 東京", "x^2 ~y", "$\\frac{1}{0$")
CATEGORY = "<b>cat|egory</b> \\relax"
LIVE_LATEX = re.compile(r"\\(input|relax|frac)\b")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from storage import open_store

    base = tmp_path_factory.mktemp("hostile")
    db = base / "project.sqlite"
    store = open_store(db)
    populate(store)
    with store.write() as s:
        for run in s.exec(select(JudgeRun)).all():
            run.judge_name = JUDGE_NAMES[run.judge_name]
            s.add(run)
        for alm in s.exec(select(AlmRun)).all():
            alm.model = ALM_NAME
            s.add(alm)
        for annotator, pseudonym in zip(s.exec(select(Annotator).order_by(Annotator.id)).all(), PSEUDONYMS):
            annotator.pseudonym = pseudonym
            annotator.name = pseudonym + " (name)"
            s.add(annotator)
        for model in (CategoryLabel, Judgment):
            for row in s.exec(select(model).where(model.category_id == CATEGORIES[0])).all():
                row.category_id = CATEGORY
                s.add(row)
    store.dispose()
    return str(db), base


def _assert_inert_latex(text: str) -> None:
    assert not LIVE_LATEX.search(text), LIVE_LATEX.search(text)
    assert "qwen $0.5$" not in text and "\\\\&" not in text
    assert "<script>" not in text or "\\textless" in text or True  # HTML is text in LaTeX; only commands matter
    # every $ ^ ~ of a name is escaped
    assert not re.search(r"(?<!\\)\$", text.replace(r"\$", "")), "an unescaped $"
    assert "x^2" not in text and "~y" not in text


def test_study_report_with_hostile_names_has_inert_latex_and_literal_figures(hostile, capsys) -> None:  # type: ignore[no-untyped-def]
    db, base = hostile
    out = base / "report"
    rc = main(["--db", db, "study", "report", "--out", str(out), "--bootstrap", "0", "--min-items", "5"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "Traceback" not in captured.err
    tex = {p.name: p.read_text(encoding="utf-8") for p in (out / "tables").glob("*.tex")}
    assert tex
    for text in tex.values():
        _assert_inert_latex(text)
    joined = "".join(tex.values())
    assert r"gemini \textbackslash{}input /etc/hostname \textbackslash{}relax" in joined
    assert r"qwen \$0.5\$" in joined
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<script>x</script>" not in html


def test_agreement_bundle_with_hostile_names_has_inert_latex_and_markdown(hostile, capsys) -> None:  # type: ignore[no-untyped-def]
    db, base = hostile
    out = base / "bundle"
    rc = main(["--db", db, "agreement", "--out", str(out), "--bootstrap", "0"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    latex = (out / "tables.tex").read_text(encoding="utf-8")
    _assert_inert_latex(latex)
    assert r"qwen \$0.5\$" in latex
    markdown = (out / "tables.md").read_text(encoding="utf-8")
    assert "<script>" not in markdown and "<b>" not in markdown
    summary = pd.read_csv(out / "coefficients.csv")
    for line in markdown.splitlines():
        if line.startswith("|") and "a" in line and "b <" not in line:
            # a cell holding the judge "a|b ..." keeps its pipe escaped: the row has the header's width
            cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
            header = next(h for h in markdown.splitlines() if h.startswith("|"))
            assert len(cells) == len(re.split(r"(?<!\\)\|", header.strip().strip("|"))), line
    assert r"a\|b &lt;script&gt;" in markdown
    assert len(summary) > 0


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file write of the writers fails as on a full disk (ENOSPC, no file name attached)."""
    def refuse(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", refuse)
    monkeypatch.setattr(Path, "write_bytes", refuse)
    monkeypatch.setattr(pd.DataFrame, "to_csv", refuse)


@pytest.mark.parametrize("command", [["study", "report", "--bootstrap", "0", "--min-items", "5"],
                                     ["agreement", "--bootstrap", "0"]])
def test_report_and_bundle_on_a_full_disk_end_in_one_line(hostile, capsys, monkeypatch, tmp_path, command) -> None:  # type: ignore[no-untyped-def]
    db, _ = hostile
    out = tmp_path / "target"
    _full_disk(monkeypatch)
    rc = main(["--db", db, *command, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 1
    lines = err.strip().splitlines()  # progress notes come first; the error is the one last line
    assert [line for line in lines if line.startswith("aglw: error")] == lines[-1:], err
    assert "Traceback" not in err and str(out) in lines[-1] and "full" in lines[-1]
    assert not out.exists() or not any(out.iterdir())
    assert [p.name for p in tmp_path.iterdir() if p.name != "target"] == []  # no staging folder left behind
