"""A clip's quality flags: one answer (issue 40). `clips show`, the review window, `select`, `fit` and
the Hugging Face export all ask `workbench.audio.flags.quality_flags_now`; the pool-relative flag
(low_complexity) is not raised in a pool smaller than MIN_RELATIVE_POOL, and the output says why."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sqlalchemy import update

from cli.main import main
from storage import open_store
from storage.models import ClipQuality
from workbench.audio.flags import quality_flags_now
from workbench.audio.quality import MIN_RELATIVE_POOL, pool_flags
from workbench.demo import create_demo_project

ROOT = Path(__file__).resolve().parents[2]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return create_demo_project(tmp_path_factory.mktemp("demo"))


def test_a_percentile_of_a_small_pool_raises_no_flag_and_says_why() -> None:
    quiet = {f"c{i}": (-20.0, 0.1, 0.0, float(100 + i)) for i in range(4)}
    flags, pool = pool_flags(quiet, what="clips of a test pool")
    assert flags == {} and pool["raised"] is False and pool["cut_off"] is None and pool["clips"] == 4
    assert f"fewer than the {MIN_RELATIVE_POOL}" in pool["why_not"] and "4 clips of a test pool" in pool["why_not"]

    big = {f"c{i}": (-20.0, 0.1, 0.0, float(100 + i)) for i in range(MIN_RELATIVE_POOL)}
    flags, pool = pool_flags(big, what="clips of a test pool")
    assert pool["raised"] is True and pool["why_not"] is None and list(flags) == ["c0"]
    [flag] = flags["c0"]
    assert flag["flag"] == "low_complexity" and flag["value"] == 100.0 and flag["threshold"] == pool["cut_off"]
    assert flag["pool"]["clips"] == MIN_RELATIVE_POOL and flag["pool"]["percentile"] == 2.0


def test_the_absolute_flags_and_silence() -> None:
    rows = {"loud": (-20.0, 0.1, 0.01, 5.0), "silent": (float("-inf"), 1.0, 0.0, 0.0), "unmeasured": (None,) * 4}
    flags, _ = pool_flags(rows, what="x")
    assert [f["flag"] for f in flags["loud"]] == ["clipping"]
    assert [f["flag"] for f in flags["silent"]] == ["low_level", "flat_spectrum"]
    assert "unmeasured" not in flags


def _demo_with_a_clipping_clip(demo, tmp_path: Path) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    """A copy of the demo whose DEMO-0002 clips (an absolute flag every reader must show)."""
    import shutil

    db = tmp_path / "demo.sqlite"
    shutil.copy(demo.db_path, db)
    store = open_store(db)
    try:
        from workbench.clip_ids import clip_id_for_key

        clip = clip_id_for_key(store, "DEMO-0002")
        with store.write() as s:
            s.execute(update(ClipQuality).where(ClipQuality.clip_id == clip).values(clipping_ratio=0.01))
    finally:
        store.dispose()
    return str(db), clip


def test_clips_show_the_review_window_select_fit_and_export_give_one_answer(demo, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    db, clipping_clip = _demo_with_a_clipping_clip(demo, tmp_path)
    # clips show: the demo's quietest clip is not flagged by a percentile of 4 clips, and it says why
    text = _run(capsys, "--db", db, "clips", "show", "DEMO-0001")
    assert "no quality flags" in text and "low_complexity not raised: 4 analysed clips" in text
    record = json.loads(_run(capsys, "--db", db, "--json", "clips", "show", "DEMO-0001"))
    assert record["quality_flags"] == [] and record["quality_pool"]["raised"] is False
    shown = json.loads(_run(capsys, "--db", db, "--json", "clips", "show", "DEMO-0002"))
    assert [(f["flag"], f["value"], f["threshold"]) for f in shown["quality_flags"]] == [("clipping", 0.01, 0.001)]
    assert "flags: clipping (clipping_ratio 0.01 > 0.001)" in _run(capsys, "--db", db, "clips", "show", "DEMO-0002")

    store = open_store(db)
    try:
        now = quality_flags_now(store)
        expected = {clip: now.names(clip) for clip in now.measured}
        assert expected[clipping_clip] == ("clipping",) and sum(map(bool, expected.values())) == 1

        from workbench.review.service import ReviewService

        review = ReviewService(store, {}, {})
        assert {r.clip_id: r.quality_flags for r in review.clip_rows()} == expected  # the browser
        assert {c: review.clip_detail(c, None).quality_flags for c in expected} == expected  # the Judgment panel

        from workbench.curation import service

        fit = service.fit(store, preview=True)
        assert {c.clip_id: tuple(f["flag"] for f in c.quality_flags) for c in fit.clips} == expected

        from workbench.curation.runs import latest_run_id
        from workbench.curation.selection import selection_pool

        pool, _, _ = selection_pool(store, latest_run_id(store))
        assert {c: tuple(f["flag"] for f in flags) for c, flags in pool["unresolved_flags"].items()} == expected

        from workbench.curation.hf_export import gather

        rows = {row["key"]: row["quality_flags"] for row in gather(store, dataset=None).rows}
        assert rows["DEMO-0002"] == ["clipping"] and rows["DEMO-0001"] == []
    finally:
        store.dispose()

    # fit says how many clips it flagged and why the pool-relative flag was not raised
    fitted = _run(capsys, "--db", db, "fit", "--preview")
    assert "quality: 1 of the 4 clips flagged; low_complexity not raised: 4 analysed clips" in fitted

    # select names every clip it leaves out (--json; -v in text), not only the accepted ones
    chosen = json.loads(_run(capsys, "--db", db, "--json", "select", "--size", "1"))
    left = {entry["key"]: entry for entry in chosen["left_out"]}
    assert set(left) | set(chosen["keys"]) == {"DEMO-0001", "DEMO-0002", "DEMO-0003", "DEMO-0004"}
    assert left["DEMO-0002"]["reason"] == "quality_flagged" and left["DEMO-0002"]["flags"] == ["clipping"]
    capsys.readouterr()
    assert main(["--db", db, "-v", "select", "--size", "1"]) == 0
    out = capsys.readouterr()
    assert re.search(r"left out: DEMO-0002: .*clipping", out.out + out.err)


def test_the_store_reads_two_acis_for_the_cut_off_and_a_subset_answers_as_the_whole(demo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from storage.models import Clip

    db, _ = _demo_with_a_clipping_clip(demo, tmp_path)
    store = open_store(db)
    try:
        rng = np.random.default_rng(5)
        with store.write() as s:
            dataset_id = s.exec(__import__("sqlmodel").select(Clip.dataset_id)).first()
            extra = [Clip(dataset_id=dataset_id, key=f"x{i:03d}") for i in range(71)]
            s.add_all(extra)
            s.flush()
            s.add_all([ClipQuality(clip_id=c.id, rms_dbfs=-20.0, spectral_flatness=0.1, clipping_ratio=0.0,
                                   aci=float(a)) for c, a in zip(extra, rng.uniform(100, 900, 70))])
            s.add(ClipQuality(clip_id=extra[-1].id, aci=None))  # no ACI: not in the pool
        whole = quality_flags_now(store)
        with store.read() as connection:
            from sqlalchemy import select

            from storage import tables as T

            acis = [a for (a,) in connection.execute(select(T.clip_quality.c.aci)) if a is not None]
        assert whole.pool["clips"] == len(acis) == 74 and whole.pool["raised"] is True
        assert whole.pool["cut_off"] == pytest.approx(float(np.percentile(acis, 2.0)), rel=1e-12)
        low = [c for c in whole.measured if "low_complexity" in whole.names(c)]
        assert len(low) == 2  # 2 % of 74 clips: the two quietest
        some = sorted(whole.measured)[::7]
        part = quality_flags_now(store, clip_ids=some)
        assert part.measured == frozenset(some) and part.pool == whole.pool and len(whole.measured) == 75
        assert {c: part.of(c) for c in some} == {c: whole.of(c) for c in some}
    finally:
        store.dispose()


def test_nobody_computes_a_flag_but_the_owner() -> None:
    """The rule (`pool_flags`, the per-clip `quality_flags`, `aci_percentile`) is called only where the
    architecture says: a second computation of a clip's flags makes this fail."""
    allowed = {
        "pool_flags(": {"workbench/audio/quality.py", "workbench/curation/model.py", "workbench/pool/service.py"},
        "clip_flags(": {"workbench/audio/quality.py", "workbench/audio/flags.py"},
        "relative_pool(": {"workbench/audio/quality.py", "workbench/audio/flags.py"},
        "aci_percentile(": {"workbench/audio/quality.py"},
        "quality_flags(metrics": {"workbench/audio/quality.py", "workbench/audio/service.py"},
        "model.quality_flags(": set(),
    }
    found: dict[str, set[str]] = {name: set() for name in allowed}
    for folder in ("cli", "ui", "web", "workbench", "storage"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for name in allowed:
                if name in text:
                    found[name].add(path.relative_to(ROOT).as_posix())
    assert {name: paths - allowed[name] for name, paths in found.items()} == {name: set() for name in allowed}
