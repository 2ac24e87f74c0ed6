"""Curator control of quality flags (issue [N]): `aglw quality overrule|restore` per annotator and
flag, versioned, in the label history, undoable, resolved like every clip vote; `select` respects
it and says, for every accepted clip it left out, why; the pool-relative ACI flag names its pool."""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from cli.main import main
from storage import open_store
from storage.models import Clip, ClipQuality, LabelHistory, QualityOverrule
from tests.cli_helpers import run_json
from tests.storage.test_curation_fixtures import add_annotator, set_clip_label, set_quality
from tests.storage.test_curation_selection_export import project
from workbench.commands import CommandStack, SetQualityOverrule
from workbench.curation import service
from workbench.curation.model import FitParameters
from workbench.labels import LabelService


@pytest.fixture
def flagged(sqlite_path):  # type: ignore[no-untyped-def]
    """12 clips; clip_02 is too quiet (low_level) and accepted by an expert, clip_03 has the pool's
    lowest ACI (low_complexity: 50 more analysed clips of the project, no ALM answered them, make the
    pool large enough for a percentile); a stored fit."""
    store = open_store(sqlite_path)
    ids = project(store)
    expert = add_annotator(store, "erin")
    set_clip_label(store, expert, ids["clip_02"], decision="accept")
    set_quality(store, ids["clip_02"], rms_dbfs=-80.0, spectral_flatness=0.1, clipping_ratio=0.0, aci=9.0)
    for key, aci in (("clip_03", 5.0), ("clip_04", 9.0), ("clip_05", 9.0)):
        set_quality(store, ids[key], rms_dbfs=-20.0, spectral_flatness=0.1, clipping_ratio=0.0, aci=aci)
    with store.write() as s:
        dataset_id = s.get(Clip, ids["clip_02"]).dataset_id
        extra = [Clip(dataset_id=dataset_id, key=f"unanswered_{i:02d}") for i in range(50)]
        s.add_all(extra)
        s.flush()
        s.add_all([ClipQuality(clip_id=c.id, rms_dbfs=-20.0, spectral_flatness=0.1, clipping_ratio=0.0, aci=9.0)
                   for c in extra])
    service.fit(store, FitParameters(n_min=1))
    store.dispose()
    return str(sqlite_path), ids


def _select(db: str, capsys) -> dict:  # type: ignore[no-untyped-def]
    return run_json(capsys, "--db", db, "--json", "select", "--size", "6")


def test_an_accepted_clip_left_out_says_why_and_an_overrule_lets_it_in(flagged, capsys) -> None:  # type: ignore[no-untyped-def]
    db, _ = flagged
    first = _select(db, capsys)
    assert "clip_02" not in first["keys"]
    [why] = first["counts"]["accepted_left_out"]
    assert why["key"] == "clip_02" and why["flags"] == ["low_level"]
    assert "rms_dbfs -80 < -50" in why["reason"] and "aglw quality overrule" in why["reason"]

    saved = run_json(capsys, "--db", db, "--annotator", "erin", "--json", "quality", "overrule", "--clip", "clip_02",
                     "--flag", "low_level", "--note", "quiet but clearly a harbour")
    assert saved["new"] == {"overruled": True, "note": "quiet but clearly a harbour"} and saved["version"] == 1
    second = _select(db, capsys)
    assert "clip_02" in second["keys"] and second["counts"]["accepted_left_out"] == []
    assert (first["counts"]["excluded"]["quality_flagged"], second["counts"]["excluded"]["quality_flagged"]) == (2, 1)

    # in the label history, under the flag's name
    history = run_json(capsys, "--db", db, "--json", "label", "history", "--clip", "clip_02")
    text = json.dumps(history)
    assert "quality_overrule" in text and "low_level" in text

    # restore: the vote says the flag stands; the clip is out again, with the reason
    run_json(capsys, "--db", db, "--annotator", "erin", "--json", "quality", "restore", "--clip", "clip_02",
             "--flag", "low_level")
    third = _select(db, capsys)
    assert "clip_02" not in third["keys"] and [e["key"] for e in third["counts"]["accepted_left_out"]] == ["clip_02"]


def test_votes_are_per_annotator_and_resolved_like_clip_votes(flagged, capsys) -> None:  # type: ignore[no-untyped-def]
    db, _ = flagged
    for who, verb in (("ann", "overrule"), ("bob", "overrule"), ("cat", "restore")):
        run_json(capsys, "--db", db, "--annotator", who, "--json", "quality", verb, "--clip", "clip_02",
                 "--flag", "low_level")
    assert "clip_02" in _select(db, capsys)["keys"]  # two overrules against one: the majority keeps it
    store = open_store(db)
    try:
        with store.session() as s:
            rows = s.exec(select(QualityOverrule)).all()
        assert sorted((r.overruled, r.version) for r in rows) == [(False, 1), (True, 1), (True, 1)]
        judge = add_annotator(store, "jude", role="adjudicator")
        LabelService(store).set_quality_overrule(judge, LabelService(store).clip_id_for_key("clip_02"), "low_level",
                                                 overruled=False)
    finally:
        store.dispose()
    assert "clip_02" not in _select(db, capsys)["keys"]  # the adjudicator's vote decides


def test_an_overrule_is_a_versioned_command_with_undo(flagged, capsys) -> None:  # type: ignore[no-untyped-def]
    db, ids = flagged
    store = open_store(db)
    try:
        labels = LabelService(store)
        erin = labels.find_annotator("erin").id
        stack = CommandStack()
        stack.push(SetQualityOverrule(labels, erin, ids["clip_02"], "low_level", base_version=0, overruled=True))
        assert "clip_02" in _select(db, capsys)["keys"]
        stack.undo()
        assert "clip_02" not in _select(db, capsys)["keys"]
        stack.redo()
        assert "clip_02" in _select(db, capsys)["keys"]
        with store.session() as s:
            actions = [h.action for h in s.exec(select(LabelHistory).where(
                LabelHistory.entity == "quality_overrule").order_by(LabelHistory.id)).all()]
        assert actions == ["do", "undo", "redo"]
    finally:
        store.dispose()
    # an edit based on an old version is refused, nothing written
    capsys.readouterr()
    assert main(["--db", db, "--annotator", "erin", "quality", "restore", "--clip", "clip_02", "--flag", "low_level",
                 "--expect-version", "1"]) == 1
    assert "changed elsewhere" in capsys.readouterr().err
    assert main(["--db", db, "--annotator", "erin", "quality", "overrule", "--clip", "clip_02", "--flag",
                 "too_quiet"]) == 2  # not a flag name: a usage error
    assert "--flag" in capsys.readouterr().err


def test_the_pool_relative_aci_flag_names_its_pool_and_cut_off(flagged, capsys) -> None:  # type: ignore[no-untyped-def]
    db, _ = flagged
    fit = run_json(capsys, "--db", db, "--json", "fit", "--n-min", "1", "--preview")
    flags = {c["key"]: c["quality_flags"] for c in fit["clips"] if c["quality_flags"]}
    aci = [f for f in flags["clip_03"] if f["flag"] == "low_complexity"]
    # 54 analysed clips have an ACI (5, then 53 of 9): the 2nd percentile of that pool (position 1.06
    # of the sorted values) is the cut-off
    cut_off = 9.0
    assert aci and aci[0]["pool"] == {"clips": 54, "percentile": 2.0, "cut_off": pytest.approx(cut_off),
                                      "minimum": 50, "what": "analysed clips of the project with a measured ACI"}
    assert aci[0]["threshold"] == pytest.approx(cut_off)
    assert fit["summary"]["quality_pool"]["raised"] is True
