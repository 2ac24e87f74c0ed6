"""Money is written one way (workbench.formatting.usd): four decimals, a sign and thousands, so a
small estimate is never "$0.00" beside a limit of "$0.00"."""

from __future__ import annotations

import re
from pathlib import Path

from workbench.formatting import usd


def test_usd_keeps_small_sums_readable() -> None:
    assert usd(0.0001) == "$0.0001" and usd(0.004) == "$0.0040" and usd(1234.5) == "$1,234.5000"
    assert usd(None) == "—" and usd(None, "no price configured") == "no price configured"
    assert usd(float("nan")) == "—"


def test_money_has_one_format() -> None:
    """A dollar sum formatted anywhere but workbench/formatting.py fails here (there were four copies)."""
    root = Path(__file__).resolve().parents[2]
    found = [f"{p.relative_to(root)}:{n}" for folder in ("workbench", "ui", "cli", "web")
             for p in (root / folder).rglob("*.py") if p.name != "formatting.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if re.search(r"\$\{", line)]
    assert found == []
