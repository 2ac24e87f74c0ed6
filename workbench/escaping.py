"""Text from data (an ALM's or a rater's name, a category, a note) made inert for the document
it lands in: one function per target language, used by every writer (issue 28).

A name such as ``gemini \\input /etc/hostname \\relax`` must reach a LaTeX table as text, not as
a command; ``a|b`` must not split a Markdown table's cell; ``qwen $0.5$`` must not become
mathematics in a figure (or crash it: matplotlib parses ``$...$`` as mathtext by default).
HTML has :func:`html.escape` already and uses it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Control characters other than tab/newline: no document format wants them and some
# (a form feed, an escape) confuse the tools that read the file.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\u2028\u2029\x85]")

# All ten characters LaTeX gives a meaning to in text, each as the command that prints it.
_LATEX = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
}
# The symbols the product writes itself (κ, α, ρ in coefficients' names, ≤ in "≤ 1 km", −, θ, →)
# and every Greek letter without accents, as commands pdfLaTeX knows: its default UTF-8 input declares the Latin
# letters and the typographic punctuation (– — … ’ ° · × ±), but no Greek and no mathematics
# ("Unicode character κ (U+03BA) not set up for use with LaTeX").
_GREEK_SMALL = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi o pi rho varsigma sigma "
                "tau upsilon phi chi psi omega").split()
_GREEK_CAPITAL = {"Γ": "Gamma", "Δ": "Delta", "Θ": "Theta", "Λ": "Lambda", "Ξ": "Xi", "Π": "Pi", "Σ": "Sigma",
                  "Υ": "Upsilon", "Φ": "Phi", "Ψ": "Psi", "Ω": "Omega"}
_MATH = {
    **{chr(0x3B1 + i): (rf"\{name}" if name != "o" else "o") for i, name in enumerate(_GREEK_SMALL)},
    **{letter: rf"\{name}" for letter, name in _GREEK_CAPITAL.items()},
    # capitals written like Latin ones (no command of their own)
    **{chr(0x391 + i): rf"\mathrm{{{latin}}}" for i, latin in enumerate("ABΓΔEZHΘIKΛMNΞOΠP ΣTΥΦXΨΩ")
       if latin.isascii() and latin != " "},
    "−": "-", "≤": r"\leq", "≥": r"\geq", "≈": r"\approx", "≠": r"\neq", "→": r"\rightarrow",
    "←": r"\leftarrow", "↔": r"\leftrightarrow", "√": r"\surd", "∞": r"\infty", "∈": r"\in", "∓": r"\mp",
    "‖": r"\|", "⟨": r"\langle", "⟩": r"\rangle", "₀": "_0", "ₙ": "_n", "ᵀ": r"^\top", "µ": r"\mu",
}
_LATEX.update({char: rf"\ensuremath{{{command}}}" for char, command in _MATH.items()})
_LATEX_SPECIAL = re.compile("[" + re.escape("".join(_LATEX)) + "]")

_MARKDOWN = {
    "\\": "\\\\",
    "|": "\\|",
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
}
_MARKDOWN_SPECIAL = re.compile("[" + re.escape("".join(_MARKDOWN)) + "]")


def _one_line(text: object) -> str:
    """``text`` as one line of printable text (a line break inside a table cell breaks the table)."""
    return _CONTROL.sub("", _LINE_BREAKS.sub(" ", str(text)))


def latex(text: object) -> str:
    """``text`` as LaTeX that prints it literally: all ten special characters become commands.

    Each character is replaced in one pass, so an escape is never escaped again (``\\&`` prints
    as a backslash and an ampersand). Line breaks become spaces (a blank line would end a
    table row's paragraph).
    """
    return _LATEX_SPECIAL.sub(lambda m: _LATEX[m.group(0)], _one_line(text))


# The first lines of every LaTeX table the product writes: what it needs to compile.
LATEX_TABLE_NOTE = ("% Written by AGL Workbench: a longtable with booktabs rules; \\usepackage{longtable,booktabs}.\n"
                    "% pdflatex compiles it; a Chinese, Arabic or accented Greek name needs xelatex or lualatex.\n")


def latex_table(cells: Any, caption: str, label: str) -> str:
    """A table of text cells (a DataFrame of what the reader sees, formatted already) as a LaTeX
    longtable: every cell, header and the caption through :func:`latex`, below
    :data:`LATEX_TABLE_NOTE`. The one LaTeX table writer of the reports and bundles."""
    escaped = cells.map(latex)
    escaped.columns = [latex(c) for c in cells.columns]
    body = escaped.to_latex(index=False, escape=False, caption=latex(caption), label=label, longtable=True)
    return LATEX_TABLE_NOTE + body


def markdown(text: object) -> str:
    """``text`` as the content of a Markdown table cell that shows it literally.

    ``|`` cannot end the cell, backslashes stay backslashes, and HTML (which Markdown renderers
    pass through) is shown as text, not interpreted.
    """
    return _MARKDOWN_SPECIAL.sub(lambda m: _MARKDOWN[m.group(0)], _one_line(text))


def figure_label(text: object) -> str:
    """``text`` for a matplotlib label: one line of printable text.

    Figures are drawn inside :func:`plain_figure_text`, where nothing is parsed as mathtext, so
    ``$`` needs no escape there (an escape would be printed as a backslash).
    """
    return _one_line(text)


@contextmanager
def plain_figure_text() -> Iterator[None]:
    """Draw matplotlib figures with every text taken literally: no mathtext, no TeX.

    Everything created and saved inside sees ``text.parse_math`` off (tick labels and legends
    made only when the figure is saved included), so a name with ``$`` is printed as it is. A
    character the font lacks (a CJK name) is drawn as a box without a warning per figure.
    """
    import warnings

    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)
        yield


__all__ = ["figure_label", "latex", "markdown", "plain_figure_text"]
