"""The study report's document pieces: a value and a table as a reader reads them (HTML and
LaTeX), a figure embedded as a PNG, a statement of what is missing, and the page's style.

Column titles and metric cells come from :mod:`workbench.formatting`, escaping from
:mod:`workbench.escaping`; :mod:`workbench.studies.report` and :mod:`workbench.studies.report_crowd`
put the pieces together.
"""

from __future__ import annotations

import base64
import html
from typing import Any

import pandas as pd

from workbench import escaping
from workbench.formatting import column_cell, column_title, titled


def fmt(value: Any, digits: int = 3) -> str:
    """A value that is not a leaderboard metric (a coefficient, a share): ``digits`` decimals, "–" if missing."""
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame's cells as a reader reads them: a leaderboard metric in its kind (km, %, counts),
    anything else by :func:`fmt` (3 decimals)."""
    def column(values: pd.Series) -> pd.Series:
        return values.map(lambda v: fmt(v) if (text := column_cell(values.name, v, "–")) is None else text)

    return frame.apply(column) if len(frame.columns) else frame


def table_html(frame: pd.DataFrame, caption: str, limit: int | None = None) -> str:
    """A captioned HTML table with the reader's titles and cells; past 12 rows folded, past ``limit`` cut
    with a line saying so (the CSV holds every row)."""
    shown = frame if limit is None else frame.head(limit)
    head = "".join(f"<th>{html.escape(column_title(c))}</th>" for c in shown.columns)  # the CSV keeps the keys
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
        for row in cells(shown).itertuples(index=False)
    )
    more = "" if limit is None or len(frame) <= limit else f"<p class='more'>first {limit} of {len(frame)} rows; all in the CSV</p>"
    table = f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if len(shown) > 12:  # a long table is folded so that the figures stay in reach; the CSV has it all
        return (f"<details><summary>{html.escape(caption)} ({len(shown)} rows)</summary>{table}</details>{more}")
    return table + more


def missing_html(text: str) -> str:
    """A section's statement of what is missing, in place of an empty table."""
    return f"<p class='missing'>{html.escape(text)}</p>"


def figure_html(png: bytes, caption: str) -> str:
    """A figure embedded in the page (no file or request beside it)."""
    data = base64.b64encode(png).decode("ascii")
    return (f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def latex_table(frame: pd.DataFrame, caption: str, label: str) -> str:
    """The table of ``tables/<name>.tex``: the HTML table's titles and cells, through the one LaTeX writer."""
    return escaping.latex_table(titled(cells(frame)), caption, label)


CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{margin-top:1.8em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:1em 0;font-size:.85em}caption{text-align:left;font-weight:600;margin-bottom:.3em}
td,th{border:1px solid #ddd;padding:.25em .5em;text-align:left}th{background:#f3f3f3}
figure{margin:1em 0}.grid{display:flex;flex-wrap:wrap;gap:.5em}.grid figure{margin:0}
details{margin:1em 0}summary{cursor:pointer;font-weight:600;font-size:.9em}img{max-width:100%;height:auto;border:1px solid #eee}figcaption{font-size:.85em;color:#555}
.methods{background:#f8f8f4;padding:1em;border-left:4px solid #8a8}.more{font-size:.8em;color:#777}
"""
