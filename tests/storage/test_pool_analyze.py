"""analyze-pool: decode + quality filters over the project's clips or a folder, local engine and Ray.

The Ray tests start a local Ray instance (slow-marked); they check row-by-row identity with the
local engine, a worker that dies mid-job, and a cancelled job that resumes without duplicates.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from sqlmodel import select

from storage.models import Clip, ClipQuality, Dataset, MediaRoot
from workbench.errors import AglwError, InputError
from workbench.pool.engines import RayMeasuring, check_engine
from workbench.pool.measure import measure_batch
from workbench.pool.service import analyze_pool
from workbench.tasks import TaskContext, TaskEvent, run_task


def _write(path: Path, kind: str, seed: int, seconds: float = 1.0, rate: int = 8000) -> None:
    rng = np.random.default_rng(seed)
    n = int(rate * seconds)
    t = np.arange(n) / rate
    if kind == "tone":
        signal = 0.3 * np.sin(2 * np.pi * (300 + 50 * seed) * t)
    elif kind == "noise":
        signal = 0.2 * rng.standard_normal(n)
    elif kind == "clipped":
        signal = np.clip(2.0 * np.sin(2 * np.pi * 200 * t), -1, 1)
    else:  # quiet birdsong-like chirps in noise
        signal = 0.002 * rng.standard_normal(n) + 0.001 * np.sin(2 * np.pi * (2000 + 500 * np.sin(7 * t)) * t)
    channels = 2 if seed % 2 else 1
    sf.write(path, np.repeat(signal[:, None], channels, axis=1).astype(np.float32), rate, subtype="PCM_16")


@pytest.fixture
def pool(store, tmp_path: Path):  # type: ignore[no-untyped-def]
    media = tmp_path / "media"
    media.mkdir()
    kinds = ["tone", "noise", "clipped", "quiet"]
    with store.write() as s:
        dataset = Dataset(name="pool")
        s.add(dataset)
        s.flush()
        s.add(MediaRoot(dataset_id=dataset.id, path=str(media)))
        for i in range(12):
            _write(media / f"c{i:02d}.wav", kinds[i % 4], i)
            s.add(Clip(dataset_id=dataset.id, key=f"c{i:02d}", audio_path=f"c{i:02d}.wav"))
        (media / "broken.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEnot really")
        s.add(Clip(dataset_id=dataset.id, key="broken", audio_path="broken.wav"))
        s.add(Clip(dataset_id=dataset.id, key="absent", audio_path="absent.wav"))
    return store, media


def _rows(store) -> dict[str, tuple]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        rows = s.exec(select(Clip.key, Clip.sample_rate, Clip.n_channels, Clip.duration_s, Clip.layout, Clip.content_hash,
                             ClipQuality.rms_dbfs, ClipQuality.spectral_flatness, ClipQuality.clipping_ratio, ClipQuality.aci)
                      .join(ClipQuality, ClipQuality.clip_id == Clip.id)).all()
        n_quality = len(s.exec(select(ClipQuality)).all())
    assert n_quality == len(rows), "one quality row per clip, never two"
    return {row[0]: tuple(row[1:]) for row in rows}


def test_local_engine_stores_every_clip_and_reports_failures_per_clip(pool) -> None:  # type: ignore[no-untyped-def]
    store, _ = pool
    seen: list[TaskEvent] = []
    result = run_task("analyze-pool", lambda task: analyze_pool(store, task=task, shard_size=5), TaskContext(seen.append))
    summary = result.value
    assert result.status == "done"
    assert summary.measured == 12 and summary.no_audio == ["absent"]
    assert [key for key, _ in summary.failed] == ["broken"] and summary.failed[0][1]
    assert [f.key for f in result.failures] == ["broken"]
    rows = _rows(store)
    assert sorted(rows) == [f"c{i:02d}" for i in range(12)]
    assert rows["c01"][1] == 2 and rows["c00"][1] == 1  # channels
    assert summary.flags["c02"] == ["clipping"]
    assert "flat_spectrum" in summary.flags["c01"]  # white noise
    assert "low_level" in summary.flags["c03"]
    assert summary.shards_stored == 3  # 13 decodable-or-not clips in shards of 5
    assert seen[-1].done == 13
    # A second run skips what is stored and measures only the failed clip again.
    again = analyze_pool(store)
    assert again.skipped == 12 and again.measured == 0 and [k for k, _ in again.failed] == ["broken"]


def test_cancel_stops_between_shards_and_a_rerun_resumes_to_the_same_rows(pool) -> None:  # type: ignore[no-untyped-def]
    store, _ = pool

    def cancel_after_first(event: TaskEvent) -> None:
        if event.kind == "item" and event.done == 1:
            context.cancel()

    context = TaskContext(cancel_after_first)
    result = run_task("analyze-pool", lambda task: analyze_pool(store, task=task, shard_size=4), context)
    assert result.status == "cancelled"
    # The first shard (broken, c00, c01, c02: keys in order) is stored whole, nothing of the second.
    assert sorted(_rows(store)) == ["c00", "c01", "c02"]
    resumed = analyze_pool(store, shard_size=4)
    assert resumed.skipped == 3 and resumed.measured == 9
    first = _rows(store)
    analyze_pool(store, force=True)
    assert _rows(store) == first


def test_folder_mode_measures_files_and_stores_nothing(pool) -> None:  # type: ignore[no-untyped-def]
    store, media = pool
    summary = analyze_pool(folder=media)
    assert summary.measured == 12 and [k for k, _ in summary.failed] == ["broken.wav"]
    assert {row.key for row in summary.rows if row.ok} == {f"c{i:02d}.wav" for i in range(12)}
    assert summary.flags["c02.wav"] == ["clipping"]
    assert _rows(store) == {}


def test_bad_requests_are_one_line_errors(pool, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, media = pool
    with pytest.raises(InputError, match="no clip 'nope'"):
        analyze_pool(store, clip_keys=["c00", "nope"])
    with pytest.raises(InputError, match="not a directory"):
        analyze_pool(folder=tmp_path / "missing")
    # The command line checks the engine and builds the executor it passes down (cli/pool_cmds.py).
    with pytest.raises(InputError, match="--engine 'spark'"):
        check_engine("spark", None)
    with pytest.raises(InputError, match="goes with --engine ray"):
        check_engine("local", "127.0.0.1:6379")
    with pytest.raises(AglwError, match="no Ray cluster answers"):
        analyze_pool(store, remote=RayMeasuring("127.0.0.1:1"))


# --------------------------------------------------------------------------- Ray


@pytest.mark.slow
def test_ray_engine_gives_rows_identical_to_the_local_engine(pool, ray_instance, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, _ = pool
    local = analyze_pool(store)
    local_rows = _rows(store)
    distributed = analyze_pool(store, remote=RayMeasuring(workers=2), force=True, shard_size=5)
    assert distributed.measured == local.measured == 12
    assert [k for k, _ in distributed.failed] == ["broken"]
    assert distributed.flags == local.flags
    ray_rows = _rows(store)
    assert ray_rows.keys() == local_rows.keys()
    for key in local_rows:
        for a, b in zip(ray_rows[key], local_rows[key]):
            assert a == b or (isinstance(a, float) and math.isclose(a, b, rel_tol=0, abs_tol=0)), key


def _dies_once(marker: str):  # type: ignore[no-untyped-def]
    """A batch function whose worker process dies the first time it meets clip c05."""

    def function(batch):  # type: ignore[no-untyped-def]
        if "c05" in list(batch["key"]) and not os.path.exists(marker):
            with open(marker, "w"):
                pass
            os._exit(1)  # the worker process is gone, as if its machine had failed
        return measure_batch(batch)

    return function


@pytest.mark.slow
def test_a_worker_that_dies_mid_job_is_retried_and_nothing_is_written_twice(pool, ray_instance, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, _ = pool
    marker = tmp_path / "died"
    summary = analyze_pool(store, remote=RayMeasuring(workers=2), shard_size=4, function=_dies_once(str(marker)))
    assert marker.exists(), "the worker really died"
    assert summary.measured == 12
    died_rows = _rows(store)
    analyze_pool(store, force=True)
    assert _rows(store) == died_rows


@pytest.mark.slow
def test_ray_job_cancelled_midway_resumes_without_duplicates(pool, ray_instance) -> None:  # type: ignore[no-untyped-def]
    store, _ = pool

    def cancel_early(event: TaskEvent) -> None:
        if event.kind == "item" and event.done == 1:
            context.cancel()

    context = TaskContext(cancel_early)
    result = run_task("analyze-pool", lambda task: analyze_pool(store, remote=RayMeasuring(), shard_size=4, task=task), context)
    assert result.status == "cancelled"
    stored = len(_rows(store))
    assert 0 < stored < 12
    resumed = analyze_pool(store, remote=RayMeasuring(), shard_size=4)
    assert resumed.skipped == stored and resumed.measured == 12 - stored
    ray_rows = _rows(store)
    analyze_pool(store, force=True)
    assert _rows(store) == ray_rows


@pytest.mark.slow
def test_a_shard_received_but_not_stored_is_stored_by_the_next_run(pool, ray_instance) -> None:  # type: ignore[no-untyped-def]
    """The driver died between receiving a shard and storing it: the Parquet copy is stored first."""
    from workbench.pool.measure import PoolItem, measure_item
    from workbench.pool.service import ShardSpool

    store, media = pool
    with store.session() as s:
        ids = dict(s.exec(select(Clip.key, Clip.id)).all())
    received = [measure_item(PoolItem(key, str(media / f"{key}.wav"), ids[key])) for key in ("c00", "c01")]
    spool = ShardSpool(store)
    spool.write(received)
    (spool.folder / "shard-dead.partial").write_bytes(b"half a file")
    summary = analyze_pool(store, remote=RayMeasuring())
    assert summary.skipped == 2 and summary.measured == 10, "the spooled clips were not measured again"
    assert not list(spool.folder.iterdir()), "stored shards and partial files are gone"
    rows = _rows(store)
    assert rows["c00"][5] == received[0].rms_dbfs


@pytest.mark.slow
def test_remote_workers_with_a_sqlite_project_say_where_results_go(pool, ray_instance) -> None:  # type: ignore[no-untyped-def]
    store, _ = pool
    address = ray_instance.get_runtime_context().gcs_address
    notes: list[str] = []
    context = TaskContext(lambda event: notes.append(event.message) if event.kind == "note" else None)
    analyze_pool(store, remote=RayMeasuring(address), clip_keys=["c00"], task=context)
    assert any("SQLite" in note and "comes back through this machine" in note for note in notes)


def test_without_ray_the_engine_names_the_extra_to_install(pool, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sys

    store, _ = pool
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the [scale] extra were not installed
    with pytest.raises(AglwError, match=r"pip install 'agl-workbench\[scale\]'"):
        analyze_pool(store, remote=RayMeasuring())
    assert analyze_pool(store).measured == 12  # the embedded default needs nothing


def test_the_aci_cut_off_names_the_pool_it_was_computed_on(pool) -> None:  # type: ignore[no-untyped-def]
    """low_complexity is relative to the pool: the summary says which pool and which percentile, and
    below MIN_RELATIVE_POOL clips with a measured ACI that the flag was not raised, and why (issue 40)."""
    from workbench.audio.quality import MIN_RELATIVE_POOL

    store, media = pool
    folder = analyze_pool(folder=media)
    assert {k: folder.aci_pool[k] for k in ("clips", "percentile", "cut_off", "minimum", "raised", "what")} == {
        "clips": 12, "percentile": 2.0, "cut_off": None, "minimum": MIN_RELATIVE_POOL, "raised": False,
        "what": "files of this folder run with a measured ACI"}
    assert "low_complexity not raised: 12 files" in folder.aci_pool["why_not"]
    assert not any("low_complexity" in flags for flags in folder.flags.values())
    project = analyze_pool(store)
    assert project.aci_pool["what"] == "analysed clips of the project with a measured ACI"
    assert project.aci_pool["clips"] > 0 and project.aci_pool["raised"] is False
