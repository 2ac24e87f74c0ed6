"""Selection from a stored run and the AGL1K export round trip through the dataset importer."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from storage import open_store
from storage.models import Clip, Selection
from tests.storage.test_curation_fixtures import SPEECH, ClipSpec, add_annotator, build_project, set_clip_label, set_quality
from workbench.curation import service
from workbench.curation.export import AGL1K_HEADER, export_selection, manifest_path_for
from workbench.curation.model import FitParameters
from workbench.curation.selection import make_selection
from workbench.errors import AglwError

PLACES = [("Europe", 48.137154123, 11.5761247893), ("Asia", 35.6894875, 139.6917064), ("Africa", -1.2920659, 36.8219462)]


def project(store, with_tags: bool = True) -> dict[str, int]:  # type: ignore[no-untyped-def]
    specs = []
    for index in range(12):
        continent, lat, lon = PLACES[index % 3]
        scores = {SPEECH: 3 if index < 8 else 0, "/m/0jbk": 0 if index == 11 else 1}
        specs.append(
            ClipSpec(
                f"clip_{index:02d}", 50.0 + index * 20, scores,
                latitude=lat, longitude=lon, continent=continent,
                human_sounds=0.0, tags={SPEECH: 0.8 if index % 2 == 0 else 0.05, "/m/0jbk": 0.5},
            )
        )
    return build_project(store, specs, with_tags=with_tags)


def test_selection_strata_decisions_and_quality(store) -> None:  # type: ignore[no-untyped-def]
    ids = project(store)
    expert = add_annotator(store, "erin")
    set_clip_label(store, expert, ids["clip_00"], decision="reject")
    set_clip_label(store, expert, ids["clip_11"], decision="accept")
    set_quality(store, ids["clip_02"], rms_dbfs=-80.0, spectral_flatness=0.1, clipping_ratio=0.0, aci=5.0)
    service.fit(store, FitParameters(n_min=1))
    result = make_selection(store, 6)
    assert len(result.keys) == 6
    assert "clip_00" not in result.keys and "clip_02" not in result.keys
    assert "clip_11" in result.keys  # accepted although it is no candidate (l = 0)
    counts = result.counts
    assert counts["speech"] == 3 and counts["no_speech"] == 3
    assert set(counts["by_continent"]) == {"Europe", "Asia", "Africa"}
    assert counts["excluded"]["rejected"] == 1 and counts["excluded"]["quality_flagged"] == 1
    with store.session() as s:
        stored = s.scalars(select(Selection)).one()
        assert stored.size == 6 and len(stored.clip_ids) == 6 and stored.counts["speech"] == 3

    set_clip_label(store, add_annotator(store, "curt", role="curator"), ids["clip_02"], quality_overruled=True)
    again = make_selection(store, 6)
    assert again.counts["excluded"]["quality_flagged"] == 0


def test_select_needs_a_run(store) -> None:  # type: ignore[no-untyped-def]
    project(store)
    with pytest.raises(AglwError, match="aglw fit"):
        make_selection(store, 3)


def test_export_round_trips_through_the_agl1k_importer(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from workbench.importing import import_dataset
    ids = project(store)
    tricky = {
        "description": 'Rain, "heavy"\non a tin roof<br />über',
        "title": "Ünïcode — title, with comma",
        "altitude": 1819.25,
        "mp3seconds": 154.2752,
        "animal": 0.3,
        "music": 0.1,
        "natural_sounds": 1.0,
        "channel": 0.0,
        "environment_and_background": 0.7,
        "sounds_of_things": 0.2,
        "source_ambiguous_sounds": 0.0,
        "city": "São Paulo",
        "country": "Korea, Republic of",
    }
    with store.write() as s:
        for clip in s.scalars(select(Clip)).all():
            for name, value in tricky.items():
                setattr(clip, name, value)
    service.fit(store, FitParameters(n_min=1))
    selection = make_selection(store, 5)
    out = tmp_path / "selection.csv"
    exported = export_selection(store, out)
    assert exported.n_rows == 5
    header = out.read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header == list(AGL1K_HEADER)
    manifest = json.loads(manifest_path_for(out).read_text(encoding="utf-8"))
    assert manifest["selection_id"] == selection.selection_id and manifest["run_id"] == selection.run_id
    assert manifest["counts"]["selected"] == 5 and manifest["keys"] == selection.keys
    assert manifest["input_fingerprint"] and manifest["tool_version"]

    fresh = open_store(tmp_path / "fresh.sqlite")
    try:
        report = import_dataset(fresh, out, format="agl1k")
        assert report.stored
        with fresh.session() as s:
            reimported = {c.key: c for c in s.scalars(select(Clip)).all()}
        with store.session() as s:
            original = {c.key: c for c in s.scalars(select(Clip).where(Clip.id.in_(ids.values()))).all()}
        assert sorted(reimported) == sorted(selection.keys)
        for key, clip in reimported.items():
            for name in AGL1K_HEADER:
                assert getattr(clip, name) == getattr(original[key], name), (key, name)
    finally:
        fresh.dispose()


def test_export_without_selection_is_a_handled_error(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(AglwError, match="aglw select"):
        export_selection(store, tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()
