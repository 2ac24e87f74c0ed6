"""Country aliases (issue 30): a dataset's labelling convention (Taiwan filed under China) is
accepted once in a documented table; `check locations` counts those clips as matches under the
alias and prints how many clips each alias affects; nothing applies without a table."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cli.main import main
from storage.models import Clip, Dataset
from workbench.country_aliases import CountryAlias, alias_for, load_country_aliases, template_path
from workbench.curation.geocheck import check_locations
from workbench.errors import InputError

TAIPEI = (25.033, 121.5654)
BEIJING = (39.9042, 116.4074)


def _frame(rows):  # type: ignore[no-untyped-def]
    return pd.DataFrame(rows, columns=["key", "latitude", "longitude", "country", "city"])


def test_the_template_documents_the_taiwan_convention_and_loads() -> None:
    aliases, source = load_country_aliases(template_path())
    assert source == template_path()
    assert CountryAlias("CN", "TW", "AGL1K files recordings made in Taiwan under China") in aliases
    assert "[[alias]]" in template_path().read_text(encoding="utf-8")


def test_alias_for_is_directional_and_exact() -> None:
    table = (CountryAlias("CN", "TW"),)
    assert alias_for("CN", "TW", table) == table[0]
    assert alias_for("TW", "CN", table) is None  # Taiwan does not cover China
    assert alias_for("CN", "CN", table) is None and alias_for(None, "TW", table) is None


def test_no_table_no_alias_and_a_bad_table_is_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert load_country_aliases() == ((), None)  # the (isolated) configuration folder has none
    bad = tmp_path / "aliases.toml"
    bad.write_text('[[alias]]\nstated = "China"\ncovers = "TW"\n', encoding="utf-8")
    with pytest.raises(InputError, match="alias 1: 'stated' and 'covers' must be ISO"):
        load_country_aliases(bad)


def test_check_locations_reports_clips_under_an_alias_apart() -> None:
    frame = _frame([("taipei", *TAIPEI, "China", "Taipei"), ("beijing", *BEIJING, "China", "Beijing"),
                    ("taipei_as_japan", *TAIPEI, "Japan", "Taipei")])
    fake = lambda points: [{"cc": "TW" if lat < 30 else "CN", "lat": lat, "lon": lon, "name": "x"}  # noqa: E731
                           for lat, lon in points]
    plain = {c.key: c.status for c in check_locations(frame, geocode=fake)}
    assert plain == {"taipei": "mismatch", "beijing": "match", "taipei_as_japan": "mismatch"}
    checks = {c.key: c for c in check_locations(frame, geocode=fake, aliases=(CountryAlias("CN", "TW", "convention"),))}
    assert {k: c.status for k, c in checks.items()} == {"taipei": "alias", "beijing": "match", "taipei_as_japan": "mismatch"}
    assert checks["taipei"].alias == "CN covers TW (convention)" and checks["beijing"].alias is None


def test_cli_prints_how_many_clips_each_alias_affects(sqlite_path, capsys, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from storage import open_store

    store = open_store(sqlite_path)
    with store.write() as s:
        dataset = Dataset(name="geo")
        s.add(dataset)
        s.flush()
        for key, (lat, lon), country in (("t1", TAIPEI, "China"), ("t2", (25.0, 121.5), "China"),
                                         ("b1", BEIJING, "China")):
            s.add(Clip(dataset_id=dataset.id, key=key, latitude=lat, longitude=lon, country=country, city=""))
    store.dispose()
    db = str(sqlite_path)
    capsys.readouterr()
    assert main(["--db", db, "--json", "check", "locations"]) == 0
    before = json.loads(capsys.readouterr().out)
    assert before["counts"]["mismatch"] == 2 and before["aliases_file"] is None
    assert main(["--db", db, "check", "locations", "--aliases", str(template_path())]) == 0
    out = capsys.readouterr().out
    assert "1 match, 2 match under an alias, 0 mismatch" in out
    assert "CN covers TW (AGL1K files recordings made in Taiwan under China): 2 clip(s) affected" in out
    # the configuration folder's table applies without the option
    from workbench.config import config_dir

    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "country_aliases.toml").write_text(template_path().read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["--db", db, "--json", "check", "locations"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["counts"]["alias"] == 2 and sorted(c["key"] for c in after["aliased"]) == ["t1", "t2"]
