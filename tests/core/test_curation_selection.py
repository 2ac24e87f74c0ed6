"""Stratified selection rules (pure) and the AGL1K CSV rendering."""

from __future__ import annotations

import csv
import io

import pandas as pd
import pytest

from workbench.curation.export import AGL1K_HEADER, render_csv
from workbench.curation.selection import select_clips


def pool_frame(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame(
        rows, columns=["clip", "localizability", "candidate", "speech", "continent", "decision", "quality_blocked"]
    )
    return frame.set_index("clip")


def test_speech_balance_continents_accepts_rejects_and_quality() -> None:
    rows = [
        ("e1", 0.9, True, True, "Europe", None, False),
        ("e2", 0.8, True, True, "Europe", None, False),
        ("e3", 0.7, True, True, "Europe", None, False),
        ("e4", 0.6, True, False, "Europe", None, False),
        ("e5", 0.5, True, False, "Europe", None, False),
        ("a1", 0.1, True, False, "Asia", None, False),
        ("x1", 0.95, True, True, "Europe", "reject", False),
        ("q1", 0.99, True, False, "Africa", None, True),
        ("low", -0.3, False, True, "Oceania", "accept", False),
        ("skip", -0.2, False, False, "Oceania", None, False),
    ]
    plan = select_clips(pool_frame(rows), 4)
    assert plan.clips == ["e1", "e4", "a1", "low"]
    assert plan.counts["speech"] == 2 and plan.counts["no_speech"] == 2
    assert plan.counts["by_continent"] == {"Asia": 1, "Europe": 2, "Oceania": 1}
    assert plan.counts["continents_missing"] == []
    assert plan.counts["accepted_in"] == 1
    assert plan.excluded == {"rejected": 1, "quality_flagged": 1, "below_theta": 1}
    assert plan.counts["by_stratum"]["no_speech|Asia"] == 1


def test_short_stratum_leaves_its_slots_to_the_other() -> None:
    rows = [(f"s{i}", 1.0 - i / 10, True, True, "Europe", None, False) for i in range(6)]
    rows.append(("n0", 0.05, True, False, "Europe", None, False))
    plan = select_clips(pool_frame(rows), 5)
    assert plan.clips == ["s0", "s1", "s2", "s3", "n0"]
    assert (plan.counts["speech"], plan.counts["no_speech"]) == (4, 1)


def test_more_accepts_than_m_takes_the_best_accepts_and_small_pools_stay_small() -> None:
    rows = [(f"c{i}", float(i), False, i % 2 == 0, "Europe", "accept", False) for i in range(5)]
    plan = select_clips(pool_frame(rows), 3)
    assert plan.clips == ["c4", "c3", "c2"]
    everything = select_clips(pool_frame(rows), 50)
    assert everything.counts["selected"] == 5
    with pytest.raises(ValueError, match="≥ 1"):
        select_clips(pool_frame(rows), 0)


def test_csv_has_the_twenty_name_header_and_round_trips_text() -> None:
    row = {name: None for name in AGL1K_HEADER}
    row.update(key="k1", longitude=-2.7061414930179, description='a, "quoted"\nline<br />', human_sounds=1.0)
    text = render_csv([row])
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[0] == list(AGL1K_HEADER) and len(parsed[0]) == 20
    assert "channel" in parsed[0] and "environment_and_background" in parsed[0]
    values = dict(zip(parsed[0], parsed[1]))
    assert values["description"] == 'a, "quoted"\nline<br />'
    assert float(values["longitude"]) == -2.7061414930179
    assert values["altitude"] == ""
