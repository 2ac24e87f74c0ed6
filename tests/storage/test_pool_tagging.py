"""`tag --engine ray`: an actor pool tags, the driver stores; rows equal the local engine's.

Slow-marked (a local Ray instance starts). The model is the EfficientAT conformance fixture
(mn04, ../shared) when it is there, else a calibrated random mn01 built here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from sqlmodel import select

from storage.models import Clip, Tag, TagStatus, TagTimeline
from tests.core.test_tagging_model import calibrated_model
from tests.core.test_tagging_ontology import write_small_ontology
from tests.storage.test_tagging_service import project  # noqa: F401 - the fixture
from workbench.errors import AglwError, InputError
from workbench.pool.engines import check_engine
from workbench.pool.tagging import RayTagging
from workbench.tagging.assets import load_checkpoint
from workbench.tagging.ontology import load_ontology
from workbench.tagging.service import tag_clips
from workbench.tasks import TaskContext, TaskEvent, run_task

pytestmark = pytest.mark.slow
FIXTURE = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "efficientat-mn04" / "mn04_random_state_dict.pt"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    if FIXTURE.is_file():
        return load_checkpoint(FIXTURE, "mn04", name="mn04_fixture")
    path = tmp_path_factory.mktemp("models") / "mn01_as.pt"
    torch.save(calibrated_model("mn01", seed=5).state_dict(), path)
    return load_checkpoint(path, "mn01", name="mn01_as")


def _rows(store, run_id: int) -> dict:  # type: ignore[no-untyped-def]
    with store.session() as s:
        keys = dict(s.exec(select(Clip.id, Clip.key)).all())
        tags = s.exec(select(Tag).where(Tag.tagger_run_id == run_id)).all()
        timelines = s.exec(select(TagTimeline).where(TagTimeline.tagger_run_id == run_id)).all()
        statuses = s.exec(select(TagStatus).where(TagStatus.tagger_run_id == run_id)).all()
    assert len({(t.clip_id, t.class_index) for t in tags}) == len(tags), "no tag stored twice"
    assert len({t.clip_id for t in statuses}) == len(statuses), "one status per clip"
    return {
        "tags": {(keys[t.clip_id], t.class_index): t.probability for t in tags},
        "timeline": {(keys[t.clip_id], t.class_index): t.values for t in timelines},
        "status": {keys[t.clip_id]: (t.status, t.error) for t in statuses},
    }


def _same(a: dict, b: dict) -> None:
    assert a["status"] == b["status"]
    assert a["tags"].keys() == b["tags"].keys(), "the same tag rows"
    assert a["timeline"].keys() == b["timeline"].keys()
    # The same model and decode on both engines; only the CPU kernels' float rounding may differ.
    for key, value in a["tags"].items():
        assert value == pytest.approx(b["tags"][key], abs=1e-5), key
    for key, values in a["timeline"].items():
        np.testing.assert_allclose(values, b["timeline"][key], atol=1e-5)


def test_ray_engine_stores_the_same_rows_as_the_local_engine(project, model, ray_instance, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    ontology = load_ontology(*write_small_ontology(tmp_path / "onto"))
    local = tag_clips(project, model, ontology.classes, batch_size=4)
    distributed = tag_clips(project, model, ontology.classes, batch_size=4, fresh_run=True, remote=RayTagging(workers=2), workers=2)
    assert distributed.run_id != local.run_id
    assert distributed.n_tagged == local.n_tagged == 2
    assert {f.key for f in distributed.failures} == {f.key for f in local.failures} == {"gone", "escape"}
    _same(_rows(project, local.run_id), _rows(project, distributed.run_id))


def test_ray_tagging_cancelled_midway_resumes_with_nothing_duplicated(project, model, ray_instance, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    ontology = load_ontology(*write_small_ontology(tmp_path / "onto"))

    def stop_after_first_tagged(event: TaskEvent) -> None:
        if event.kind == "item" and event.item is not None and event.item.ok:
            context.cancel()

    context = TaskContext(stop_after_first_tagged)
    result = run_task("tag", lambda task: tag_clips(project, model, ontology.classes, remote=RayTagging(), task=task), context)
    assert result.status == "cancelled"
    resumed = tag_clips(project, model, ontology.classes, remote=RayTagging())
    assert resumed.resumed and resumed.n_skipped == 1 and resumed.n_tagged == 1
    reference = tag_clips(project, model, ontology.classes, fresh_run=True)
    _same(_rows(project, resumed.run_id), _rows(project, reference.run_id))


def test_engine_mistakes_are_one_line_errors(project, model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    ontology = load_ontology(*write_small_ontology(tmp_path / "onto"))
    with pytest.raises(InputError, match="--engine 'dask'"):
        check_engine("dask", None)
    with pytest.raises(InputError, match="goes with --engine ray"):
        check_engine("local", "127.0.0.1:6379")
    with pytest.raises(AglwError, match="no Ray cluster answers"):
        tag_clips(project, model, ontology.classes, remote=RayTagging("127.0.0.1:1"))


def test_ray_batched_path_stores_the_rows_of_the_local_engine(project, model, ray_instance, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """What `tag --engine ray --device cuda` runs (a decoding stage, then actors tagging the decoded
    clips' windows in shared passes), wired on CPU: the local engine's rows."""
    ontology = load_ontology(*write_small_ontology(tmp_path / "onto"))
    local = tag_clips(project, model, ontology.classes, batch_size=4)
    batched = tag_clips(project, model, ontology.classes, batch_size=4, fresh_run=True, remote=RayTagging(workers=2),
                        workers=2, batched=True)
    assert batched.n_tagged == local.n_tagged == 2
    assert {f.key for f in batched.failures} == {f.key for f in local.failures} == {"gone", "escape"}
    _same(_rows(project, local.run_id), _rows(project, batched.run_id))
