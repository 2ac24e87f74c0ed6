"""Text from data made inert for LaTeX, Markdown and figures (workbench/escaping.py, issue 28)."""

from __future__ import annotations

import re

import pytest

from workbench import escaping

# Names a user, a dataset or an ALM's provider may give; each must reach a document as text.
HOSTILE = (
    r"gemini \input /etc/hostname \relax",
    "qwen $0.5$",
    "a|b",
    "<script>alert(1)</script>",
    r"\&",
    "x^2",
    "~home",
    "100% sure",
    "#1 {best}_model",
    "ünïcødé 東京 🎧",
    "line\nbreak\r\nagain",
    r"$\frac{1}{0$",
    "&amp; &lt;",
)

LATEX_SPECIALS = "&%$#_{}~^\\"


def _latex_text(escaped: str) -> str:
    """What a LaTeX run prints for ``escaped``, by undoing exactly the commands of the escape.

    Fails the test when ``escaped`` holds any other command or an unescaped special character.
    """
    commands = {r"\&": "&", r"\%": "%", r"\$": "$", r"\#": "#", r"\_": "_", r"\{": "{", r"\}": "}",
                r"\textasciitilde{}": "~", r"\textasciicircum{}": "^", r"\textbackslash{}": "\\"}
    pattern = re.compile("|".join(re.escape(c) for c in sorted(commands, key=len, reverse=True)))
    out, position = [], 0
    for match in pattern.finditer(escaped):
        plain = escaped[position:match.start()]
        assert not any(ch in LATEX_SPECIALS for ch in plain), (escaped, plain)
        out.append(plain + commands[match.group(0)])
        position = match.end()
    rest = escaped[position:]
    assert not any(ch in LATEX_SPECIALS for ch in rest), (escaped, rest)
    return "".join(out) + rest


@pytest.mark.parametrize("name", HOSTILE)
def test_latex_prints_every_hostile_name_literally(name: str) -> None:
    escaped = escaping.latex(name)
    assert "\n" not in escaped and "\r" not in escaped
    assert _latex_text(escaped) == " ".join(name.replace("\r\n", "\n").split("\n"))


def test_latex_escapes_all_ten_special_characters_once() -> None:
    escaped = escaping.latex(LATEX_SPECIALS)
    assert _latex_text(escaped) == LATEX_SPECIALS
    assert r"\input" not in escaping.latex(r"\input /etc/hostname")
    assert escaping.latex(r"\&") == r"\textbackslash{}\&"


def _markdown_cells(row: str) -> list[str]:
    """A Markdown table row's cells, split as GitHub-flavoured Markdown does (``\\|`` stays in the cell)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


@pytest.mark.parametrize("name", HOSTILE)
def test_markdown_cell_keeps_a_hostile_name_in_one_cell_without_html(name: str) -> None:
    escaped = escaping.markdown(name)
    row = f"| {escaped} | 0.5 |"
    assert _markdown_cells(row) == [escaped, "0.5"]
    assert "<" not in escaped and ">" not in escaped and "\n" not in escaped
    # every backslash is escaped: the renderer shows the name's own backslashes
    assert re.sub(r"\\[\\|]", "", escaped).count("\\") == 0


def test_markdown_escapes_pipe_html_and_backslash() -> None:
    assert escaping.markdown("a|b") == r"a\|b"
    assert escaping.markdown("<b>") == "&lt;b&gt;"
    assert escaping.markdown("\\") == "\\\\"
    assert escaping.markdown("&amp;") == "&amp;amp;"


@pytest.mark.parametrize("name", HOSTILE)
def test_figure_text_is_drawn_literally(name: str) -> None:
    """A label with ``$`` is neither parsed as mathtext (a crash for ``$\\frac{1}{0$``) nor rendered as math."""
    import io

    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    with escaping.plain_figure_text():
        fig = Figure()
        ax = fig.add_subplot()
        ax.bar([0, 1], [1, 2], label=escaping.figure_label(name))
        ax.set_xticks([0, 1], [escaping.figure_label(name), "b"])
        ax.set_title(escaping.figure_label(name))
        ax.legend()
        fig.savefig(io.BytesIO(), format="png")
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
    assert any(t.get_text() == escaping.figure_label(name) for t in texts)
    assert all(not t.get_parse_math() for t in texts)


def test_escaping_has_one_definition() -> None:
    """Writers ask workbench/escaping.py; a second LaTeX escape (the old ones missed \\ and ^) or a
    second LaTeX table writer (escaping.latex_table is the one) fails here."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    own = root / "workbench" / "escaping.py"
    second = re.compile(r"textasciitilde|textbackslash|parse_math|usetex|to_latex\(")
    found = [str(p.relative_to(root)) for folder in ("workbench", "ui", "cli") for p in (root / folder).rglob("*.py")
             if p != own and second.search(p.read_text(encoding="utf-8"))]
    assert found == []


# What pdfLaTeX's default UTF-8 input prints without a package: ASCII, the Latin-1 letters and
# signs, the Latin Extended-A letters and the typographic punctuation (– — ‘ ’ “ ” …).
def _pdflatex_knows(char: str) -> bool:
    return char.isascii() or 0xA0 <= ord(char) <= 0x17F or 0x2013 <= ord(char) <= 0x2026


def test_latex_writes_greek_and_mathematics_as_commands_pdflatex_knows() -> None:
    """The product's own words ("weighted κ (quadratic)", "Krippendorff's α", "≤ 1 km", "−0.2")
    stopped pdflatex with "Unicode character κ (U+03BA) not set up for use with LaTeX"."""
    import unicodedata

    text = "weighted κ (quadratic) · Krippendorff's α · Spearman's ρ · ≤ 1 km · ≥ θ · −0.2 ± 0.1 · Σ Ω ς ο → ∞ ≈ √"
    escaped = escaping.latex(text)
    assert all(_pdflatex_knows(c) for c in escaped), [c for c in escaped if not _pdflatex_knows(c)]
    assert escaping.latex("κ") == r"\ensuremath{\kappa}" and escaping.latex("≤ 1 km") == r"\ensuremath{\leq} 1 km"
    assert escaping.latex("Ω Α") == r"\ensuremath{\Omega} \ensuremath{\mathrm{A}}"
    for code in [*range(0x391, 0x3AA), *range(0x3B1, 0x3CA)]:  # every Greek letter without accents
        char = chr(code)
        if unicodedata.category(char).startswith("L"):
            assert all(_pdflatex_knows(c) for c in escaping.latex(char)), char
    # Latin letters and typographic punctuation stay as they are (pdflatex prints them)
    assert escaping.latex("São Paulo – Zürich … Kraków") == "São Paulo – Zürich … Kraków"


def test_a_latex_table_says_what_it_needs_and_escapes_every_cell() -> None:
    import pandas as pd

    frame = pd.DataFrame({"coefficient_κ": ["weighted κ", "50%"], "n": ["11", "4"]})
    tex = escaping.latex_table(frame, "Agreement; 95 % intervals", "tab:x")
    assert tex.startswith(escaping.LATEX_TABLE_NOTE) and tex.isascii()
    assert r"coefficient\_\ensuremath{\kappa}" in tex and r"50\%" in tex and r"95 \% intervals" in tex
    assert r"\begin{longtable}" in tex and r"\label{tab:x}" in tex
