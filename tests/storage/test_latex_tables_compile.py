"""The study report's and the agreement bundle's tables: readable titles, and LaTeX that pdflatex compiles.

They held "weighted κ (quadratic)", "Krippendorff's α" and "Spearman's ρ" as Unicode, and pdflatex
stopped at the first: "Unicode character κ (U+03BA) not set up for use with LaTeX". Each table is
compiled in a minimal document with the two packages its first lines name. Skipped, with the
reason, where no pdflatex is installed (Debian: texlive-latex-base, texlive-latex-recommended).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cli.main import main
from tests.storage.studies_project import populate
from workbench import escaping

PDFLATEX = shutil.which("pdflatex")
needs_pdflatex = pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed (Debian: texlive-latex-base "
                                                         "texlive-latex-recommended)")


def compile_table(tex: Path, folder: Path) -> None:
    document = folder / f"{tex.stem}-document.tex"
    document.write_text("\\documentclass{article}\n\\usepackage{longtable,booktabs}\n\\begin{document}\n"
                        f"\\input{{{tex.resolve().as_posix()}}}\n\\end{{document}}\n", encoding="utf-8")
    done = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape",
                           "-output-directory", str(folder), str(document)], capture_output=True, text=True,
                          timeout=120, cwd=folder)
    errors = [line for line in done.stdout.splitlines() if line.startswith("!")]
    assert done.returncode == 0 and not errors, f"{tex.name}: {errors or done.stdout[-2000:]}"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The study report and the agreement bundle of the studies project."""
    from storage import open_store

    base = tmp_path_factory.mktemp("written")
    db = base / "project.sqlite"
    store = open_store(db)
    populate(store)
    store.dispose()
    report, bundle = base / "report", base / "bundle"
    assert main(["--db", str(db), "study", "report", "--out", str(report), "--bootstrap", "0", "--min-items", "5"]) == 0
    assert main(["--db", str(db), "agreement", "--out", str(bundle), "--bootstrap", "0"]) == 0
    return report, bundle


@needs_pdflatex
def test_the_reports_latex_tables_compile_with_pdflatex(written, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    report, bundle = written
    tables = [*sorted((report / "tables").glob("*.tex")), bundle / "tables.tex"]
    assert len(tables) >= 3
    joined = "".join(t.read_text(encoding="utf-8") for t in tables)
    assert r"\ensuremath{\kappa}" in joined  # the words that stopped pdflatex are in them
    for tex in tables:
        assert tex.read_text(encoding="utf-8").startswith(escaping.LATEX_TABLE_NOTE)
        compile_table(tex, tmp_path)


def test_every_table_of_the_report_and_bundle_has_titles_a_reader_knows(written) -> None:  # type: ignore[no-untyped-def]
    """A header is the reader's title (rater A, 95 % CI low, θ, clips selected, share Europe), never the
    CSV's key (rater_a, ci_low, theta, n_selected, share:Europe); the CSVs keep the keys."""
    import html
    import re

    report, bundle = written
    page = (report / "report.html").read_text(encoding="utf-8")
    headers = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", page)]
    assert len(headers) > 20
    raw = [h for h in headers if "_" in h or re.fullmatch(r"(theta|alpha|share:.*|jaccard|flipped|n \w+)", h)]
    assert raw == [], raw
    for tex in [*(report / "tables").glob("*.tex"), bundle / "tables.tex"]:
        text = tex.read_text(encoding="utf-8")
        head = text[text.index("\\toprule") + len("\\toprule"):text.index("\\midrule")]
        assert "\\_" not in head, (tex.name, head)
    markdown = (bundle / "tables.md").read_text(encoding="utf-8")
    assert not [line for line in markdown.splitlines() if line.startswith("| section") and "_" in line]
    sensitivity = (report / "tables" / "sensitivity.csv").read_text(encoding="utf-8").splitlines()[0]
    assert "theta" in sensitivity and "n_selected" in sensitivity  # the keys stay in the CSV


@needs_pdflatex
def test_a_table_of_symbols_and_latin_names_compiles(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame({"city": ["São Paulo", "Kraków", "Zürich", "a_b & {c} ~ ^ \\relax $x$ 100%"],
                          "coefficient": ["weighted κ (quadratic)", "Krippendorff's α", "Spearman's ρ", "≤ 1 km"],
                          "value": ["−0.2 ± 0.1", "θ ≥ 0.5", "Σ → ∞", "≈ 3 · 10²"]})
    tex = tmp_path / "symbols.tex"
    tex.write_text(escaping.latex_table(frame, "Symbols – all of them; 95 % intervals", "tab:symbols"), encoding="utf-8")
    compile_table(tex, tmp_path)
