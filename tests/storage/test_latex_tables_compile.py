"""The LaTeX tables of the study report and the agreement bundle compile with pdflatex.

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
pytestmark = pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed (Debian: texlive-latex-base "
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


def test_the_reports_latex_tables_compile_with_pdflatex(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from storage import open_store

    db = tmp_path / "project.sqlite"
    store = open_store(db)
    populate(store)
    store.dispose()
    report, bundle = tmp_path / "report", tmp_path / "bundle"
    assert main(["--db", str(db), "study", "report", "--out", str(report), "--bootstrap", "0", "--min-items", "5"]) == 0
    assert main(["--db", str(db), "agreement", "--out", str(bundle), "--bootstrap", "0"]) == 0
    capsys.readouterr()
    tables = [*sorted((report / "tables").glob("*.tex")), bundle / "tables.tex"]
    assert len(tables) >= 3
    joined = "".join(t.read_text(encoding="utf-8") for t in tables)
    assert r"\ensuremath{\kappa}" in joined  # the words that stopped pdflatex are in them
    build = tmp_path / "build"
    build.mkdir()
    for tex in tables:
        assert tex.read_text(encoding="utf-8").startswith(escaping.LATEX_TABLE_NOTE)
        compile_table(tex, build)


def test_a_table_of_symbols_and_latin_names_compiles(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame({"city": ["São Paulo", "Kraków", "Zürich", "a_b & {c} ~ ^ \\relax $x$ 100%"],
                          "coefficient": ["weighted κ (quadratic)", "Krippendorff's α", "Spearman's ρ", "≤ 1 km"],
                          "value": ["−0.2 ± 0.1", "θ ≥ 0.5", "Σ → ∞", "≈ 3 · 10²"]})
    tex = tmp_path / "symbols.tex"
    tex.write_text(escaping.latex_table(frame, "Symbols – all of them; 95 % intervals", "tab:symbols"), encoding="utf-8")
    compile_table(tex, tmp_path)
