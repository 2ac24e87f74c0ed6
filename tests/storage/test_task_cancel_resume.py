"""Every long job, cancelled midway through the task protocol, keeps what it finished and resumes.

Each test cancels a job from a listener after k items (or, for the Gemini batch submission, k
uploads), checks that exactly what was finished is stored, runs the job again, and compares the
final state with an uninterrupted run. The jobs that store nothing are in test_task_cancel_readonly.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from storage import Store, open_store
from storage.models import (
    AlmRun,
    Clip,
    CurationRun,
    Dataset,
    JudgeErrorMode,
    JudgeRun,
    Judgment,
    MediaRoot,
    Prediction,
    Tag,
    TaggerRun,
    TagStatus,
)
from tests.storage.test_attribution_service import COT, KEY, NAMES
from tests.storage.test_audio_fetch import _Server, _wav_bytes, server  # noqa: F401 - fixture
from tests.storage.test_curation_fixtures import WORKED_EXAMPLE, build_project
from tests.storage.test_import_dataset import clip_row, write_csv
from tests.storage.test_import_predictions import HAND_RECORDS, write_jsonl
from tests.storage.test_tagging_service import checkpoint_file  # noqa: F401 - fixture
from tests.storage.test_tagging_service import project as tagging_project  # noqa: F401 - fixture
from tests.core.test_tagging_ontology import write_small_ontology
from tests.support.fake_anthropic import FakeAnthropicAPI
from workbench.attribution.batch import collect_batches
from workbench.attribution.config import load_judges
from workbench.attribution.runner import run_judges
from workbench.audio.fetch import fetch_dataset_audio
from workbench.curation import service as curation
from workbench.curation.model import FitParameters
from workbench.importing import import_dataset, import_predictions
from workbench.media import link_media
from workbench.studies.error_judges import judge_error_modes
from workbench.tagging.assets import load_checkpoint
from workbench.tagging.ontology import load_ontology
from workbench.tagging.service import tag_clips
from workbench.tasks import TaskCancelled, TaskContext, TaskEvent


def cancel_after(k: int) -> TaskContext:
    """A task that is cancelled once ``k`` items are done (k = 0: as soon as the job starts)."""
    task = TaskContext()
    items = 0

    def listen(event: TaskEvent) -> None:
        nonlocal items
        items += event.kind == "item"
        if items >= k:
            task.cancel()

    task.subscribe(listen)
    return task


def _stores(tmp_path: Path) -> tuple[Store, Store]:
    return open_store(tmp_path / "interrupted.sqlite"), open_store(tmp_path / "whole.sqlite")


# --------------------------------------------------------------------------- judging


def _judging_project(store: Store) -> None:
    """Three clips with tags and a chain-of-thought (the project of test_attribution_service)."""
    with store.write() as s:
        dataset = Dataset(name="tiny")
        alm = AlmRun(model="alm-x")
        tagger = TaggerRun(model_name="mn10_as", status="done")
        s.add_all([dataset, alm, tagger])
        s.flush()
        for i in range(3):
            clip = Clip(dataset_id=dataset.id, key=f"clip{i}", latitude=59.33, longitude=18.06, city="Stockholm")
            s.add(clip)
            s.flush()
            s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id=clip.key, predicted_city="Oslo",
                             predicted_latitude="59.91", predicted_longitude="10.75", reasoning=COT))
            s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=0, audioset_id="/m/09x0r", probability=0.8))
            s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=1, audioset_id="/m/07jdr", probability=0.3))


def _judgments(store: Store) -> list[tuple]:
    with store.session() as s:
        rows = s.exec(select(Judgment, JudgeRun).join(JudgeRun, Judgment.judge_run_id == JudgeRun.id)).all()
    return sorted((j.clip_id, r.judge_name, j.category_id, j.status, j.contribution, j.effect) for j, r in rows)


def _judged_pairs(store: Store) -> set[tuple[int, str]]:
    return {(clip, judge) for clip, judge, *_ in _judgments(store)}


@pytest.fixture
def judge_api(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeAnthropicAPI(expected_key=KEY) as api:
        yield api


def test_judging_sync(tmp_path: Path, judge_api: FakeAnthropicAPI) -> None:
    interrupted, whole = _stores(tmp_path)
    for store in (interrupted, whole):
        _judging_project(store)
    config = load_judges()

    def judge(store: Store, task: TaskContext | None = None):  # type: ignore[no-untyped-def]
        return run_judges(store, config, judge_names=["sonnet", "haiku"], base_url=judge_api.base_url, names=NAMES,
                          concurrency=1, task=task)

    with pytest.raises(TaskCancelled):
        judge(interrupted, cancel_after(2))
    assert _judged_pairs(interrupted) == {(1, "sonnet"), (2, "sonnet")}
    with interrupted.session() as s:
        assert s.exec(select(JudgeRun.status)).all() == ["cancelled"]
    sent_before = len(judge_api.message_requests())
    resumed = judge(interrupted)
    assert sum(j.answered_before for j in resumed.judges) == 2
    assert len(judge_api.message_requests()) - sent_before == 4  # only the rest is sent
    judge(whole)
    assert _judgments(interrupted) == _judgments(whole) and len(_judged_pairs(whole)) == 6


def test_judging_batch_collect(tmp_path: Path, judge_api: FakeAnthropicAPI) -> None:
    interrupted, whole = _stores(tmp_path)
    config = load_judges()
    for store in (interrupted, whole):
        _judging_project(store)
        run_judges(store, config, judge_names=["opus"], mode="batch", base_url=judge_api.base_url, names=NAMES)

    with pytest.raises(TaskCancelled):
        collect_batches(interrupted, config, base_url=judge_api.base_url, names=NAMES, task=cancel_after(1))
    assert len(_judged_pairs(interrupted)) == 1
    with interrupted.session() as s:
        assert s.exec(select(JudgeRun.status)).all() == ["submitted"]  # collected again later
    resumed = collect_batches(interrupted, config, base_url=judge_api.base_url, names=NAMES)
    assert resumed.judges[0].ok == 2  # the one stored before is not stored twice
    collect_batches(whole, config, base_url=judge_api.base_url, names=NAMES)
    assert _judgments(interrupted) == _judgments(whole) and len(_judged_pairs(whole)) == 3
    with interrupted.session() as s:
        assert s.exec(select(JudgeRun.status)).all() == ["done"]


def test_judging_batch_submit(tmp_path: Path, judge_api: FakeAnthropicAPI) -> None:
    """Each judge's batch is one item: a cancel after the first judge's submission keeps it; a re-run
    submits only the other judge's batch, and both are collected as after an uninterrupted submit."""
    interrupted, whole = _stores(tmp_path)
    config = load_judges()
    for store in (interrupted, whole):
        _judging_project(store)

    def submit(store: Store, task: TaskContext | None = None):  # type: ignore[no-untyped-def]
        return run_judges(store, config, judge_names=["opus", "sonnet"], mode="batch", base_url=judge_api.base_url,
                          names=NAMES, task=task)

    with pytest.raises(TaskCancelled):
        submit(interrupted, cancel_after(1))
    assert judge_api.count("POST", "/v1/messages/batches") == 1
    with interrupted.session() as s:
        assert s.exec(select(JudgeRun.judge_name, JudgeRun.status)).all() == [("opus", "submitted")]
    resumed = submit(interrupted)
    assert [(j.judge, j.pending_in_batch, j.status) for j in resumed.judges] == [
        ("opus", 3, "nothing to send"), ("sonnet", 0, "submitted")]
    assert judge_api.count("POST", "/v1/messages/batches") == 2  # the submitted batch is not sent again
    submit(whole)
    for store in (interrupted, whole):
        collect_batches(store, config, base_url=judge_api.base_url, names=NAMES)
    assert _judgments(interrupted) == _judgments(whole) and len(_judged_pairs(whole)) == 6


# --------------------------------------------------------------------------- tagging


def test_tagging(tagging_project: Store, checkpoint_file: Path, tmp_path: Path) -> None:  # noqa: F811
    store = tagging_project
    checkpoint = load_checkpoint(checkpoint_file, "mn01", name="mn01_as")
    classes = load_ontology(*write_small_ontology(tmp_path / "onto")).classes
    with pytest.raises(TaskCancelled):
        tag_clips(store, checkpoint, classes, workers=1, task=cancel_after(1))
    with store.session() as s:
        assert [(t.clip_id, t.status) for t in s.exec(select(TagStatus))] == [(1, "done")]
        assert s.exec(select(TaggerRun.status)).all() == ["cancelled"]
    resumed = tag_clips(store, checkpoint, classes, workers=1)
    assert resumed.resumed and resumed.n_skipped == 1 and resumed.n_tagged == 1
    # An uninterrupted run over the same clips, in a new run, gives the same tags.
    whole = tag_clips(store, checkpoint, classes, workers=1, fresh_run=True)
    with store.session() as s:
        def tags(run_id: int) -> list[tuple]:
            rows = s.exec(select(Tag).where(Tag.tagger_run_id == run_id)).all()
            return sorted((t.clip_id, t.audioset_id, round(t.probability, 5)) for t in rows)

        def statuses(run_id: int) -> list[tuple]:
            return sorted((t.clip_id, t.status) for t in s.exec(select(TagStatus).where(TagStatus.tagger_run_id == run_id)))

        assert tags(resumed.run_id) == tags(whole.run_id) and tags(whole.run_id)
        assert statuses(resumed.run_id) == statuses(whole.run_id)


# --------------------------------------------------------------------------- fetching audio


def _fetch_project(store: Store) -> None:
    with store.write() as s:
        dataset = Dataset(name="d")
        s.add(dataset)
        s.flush()
        for i in range(4):
            s.add(Clip(dataset_id=dataset.id, key=f"k{i}", mp3name=f"f{i}.wav"))


def _audio(store: Store) -> tuple[list[tuple], list[str]]:
    with store.session() as s:
        clips = sorted((c.key, c.audio_path, c.content_hash) for c in s.exec(select(Clip)))
        roots = [Path(r.path).name for r in s.exec(select(MediaRoot))]
    return clips, roots


def test_fetching_audio(tmp_path: Path, server: _Server) -> None:  # noqa: F811
    for i in range(4):
        server.files[f"f{i}.wav"] = _wav_bytes(seed=i)
    url = server.url + "/range/{mp3name}"
    interrupted, whole = _stores(tmp_path)
    for store in (interrupted, whole):
        _fetch_project(store)
    with pytest.raises(TaskCancelled):
        fetch_dataset_audio(interrupted, None, tmp_path / "media", workers=1, url_template=url, task=cancel_after(2))
    clips, _ = _audio(interrupted)
    assert [key for key, path, _ in clips if path] == ["k0", "k1"]  # recorded although cancelled
    downloads = len(server.requests)
    assert downloads == 2
    resumed = fetch_dataset_audio(interrupted, None, tmp_path / "media", workers=1, url_template=url)
    assert resumed.present == ["k0", "k1"] and resumed.downloaded == ["k2", "k3"]
    assert len(server.requests) == downloads + 2
    fetch_dataset_audio(whole, None, tmp_path / "media", workers=1, url_template=url)
    assert _audio(interrupted) == _audio(whole)
    assert all(path for _, path, _ in _audio(whole)[0])


# --------------------------------------------------------------------------- linking media


def _media_project(tmp_path: Path, name: str) -> Store:
    store = open_store(tmp_path / f"{name}.sqlite")
    rows = [clip_row(i) for i in range(4)]
    import_dataset(store, write_csv(tmp_path / f"{name}.csv", rows), name="d", media_root=tmp_path / "empty")
    return store


def _links(store: Store) -> tuple[list[tuple], list[str]]:
    with store.session() as s:
        return (sorted((c.key, c.audio_path) for c in s.exec(select(Clip))),
                sorted(r.path for r in s.exec(select(MediaRoot))))


def test_linking_media(tmp_path: Path) -> None:
    import soundfile as sf

    (tmp_path / "empty").mkdir()
    found = tmp_path / "found"
    for i in range(4):
        (found / f"sub{i}").mkdir(parents=True)
        sf.write(found / f"sub{i}" / f"clip{i}.mp3", [[0.0]] * 800, 8000, format="WAV")
    interrupted, whole = _media_project(tmp_path, "a"), _media_project(tmp_path, "b")
    with pytest.raises(TaskCancelled):
        link_media(interrupted, root=found, task=cancel_after(1))
    assert [key for key, path in _links(interrupted)[0] if path] == ["aporee_0_1000"]
    resumed = link_media(interrupted, root=found)
    assert resumed.already == 1 and len(resumed.linked) == 3
    report = link_media(whole, root=found)
    assert len(report.linked) == 4
    assert _links(interrupted) == _links(whole)


# --------------------------------------------------------------------------- imports and the fit


def test_importing_a_dataset(tmp_path: Path) -> None:
    interrupted, whole = _stores(tmp_path)
    csv_file = write_csv(tmp_path / "d.csv", [clip_row(i) for i in range(3)])
    with pytest.raises(TaskCancelled):
        import_dataset(interrupted, csv_file, name="d", task=cancel_after(0))
    with interrupted.session() as s:  # the file is one item, stored whole or not at all
        assert s.exec(select(Dataset)).all() == [] and s.exec(select(Clip)).all() == []
    import_dataset(interrupted, csv_file, name="d")
    import_dataset(whole, csv_file, name="d")
    with interrupted.session() as a, whole.session() as b:
        assert sorted(c.key for c in a.exec(select(Clip))) == sorted(c.key for c in b.exec(select(Clip))) != []


def test_importing_predictions(tmp_path: Path) -> None:
    interrupted, whole = _stores(tmp_path)
    records = write_jsonl(tmp_path / "p.jsonl", HAND_RECORDS)
    with pytest.raises(TaskCancelled):
        import_predictions(interrupted, "m", records, task=cancel_after(0))
    with interrupted.session() as s:
        assert s.exec(select(AlmRun)).all() == [] and s.exec(select(Prediction)).all() == []
    import_predictions(interrupted, "m", records)
    import_predictions(whole, "m", records)
    with interrupted.session() as a, whole.session() as b:
        def rows(s):  # type: ignore[no-untyped-def]
            return sorted((p.question_id, p.predicted_city) for p in s.exec(select(Prediction)))

        assert rows(a) == rows(b) and len(rows(a)) == len(HAND_RECORDS)


def test_fitting_the_curation_model(tmp_path: Path) -> None:
    interrupted, whole = _stores(tmp_path)
    for store in (interrupted, whole):
        build_project(store, WORKED_EXAMPLE)
    params = FitParameters(n_min=1)
    with pytest.raises(TaskCancelled):
        curation.fit(interrupted, params, task=cancel_after(0))
    with interrupted.session() as s:
        assert s.exec(select(CurationRun)).all() == []
    again = curation.fit(interrupted, params)
    uninterrupted = curation.fit(whole, params)
    assert again.run_id == uninterrupted.run_id == 1
    assert [(c.key, c.localizability, c.candidate) for c in again.clips] == [
        (c.key, c.localizability, c.candidate) for c in uninterrupted.clips]


# --------------------------------------------------------------------------- study error-mode judges


def _error_modes(store: Store) -> list[tuple]:
    with store.session() as s:
        return sorted((r.judge_name, r.clip_id, r.status, r.modes, r.note, r.fingerprint)
                      for r in s.exec(select(JudgeErrorMode)))


def test_judging_error_modes(tmp_path: Path, judge_api: FakeAnthropicAPI) -> None:
    from tests.storage.studies_project import ALM, populate

    interrupted, whole = _stores(tmp_path)
    for store in (interrupted, whole):
        populate(store)
    judges = load_judges().select(["opus", "haiku"])

    def judge(store: Store, task: TaskContext | None = None):  # type: ignore[no-untyped-def]
        return judge_error_modes(store, judges, ALM, base_url=judge_api.base_url, limit=4, task=task)

    with pytest.raises(TaskCancelled):
        judge(interrupted, cancel_after(3))
    stored = _error_modes(interrupted)
    assert [(name, status) for name, _, status, *_ in stored] == [("opus", "ok")] * 3
    sent = len(judge_api.message_requests())
    assert sent == 3  # the answer after the cancel was not sent
    resumed = judge(interrupted)
    assert [(j["judge"], j["cached"], j["asked"]) for j in resumed.judges] == [("opus", 3, 1), ("haiku", 0, 4)]
    assert len(judge_api.message_requests()) - sent == 5  # nothing answered before is asked (paid) again
    assert set(stored) <= set(_error_modes(interrupted))
    judge(whole)
    assert _error_modes(interrupted) == _error_modes(whole) and len(_error_modes(whole)) == 8


# --------------------------------------------------------------------------- Gemini batches of the ALM

GEMINI_KEY = "gem-key-0123456789"


def cancel_at_progress(done: int) -> TaskContext:
    """A task cancelled once its progress reaches ``done`` units (a job that counts uploads, not stored items)."""
    task = TaskContext()

    def listen(event: TaskEvent) -> None:
        if event.kind == "progress" and event.done >= done:
            task.cancel()

    task.subscribe(listen)
    return task


@pytest.fixture
def gemini(tmp_path: Path, monkeypatch):  # type: ignore[no-untyped-def]
    """Two projects of the same six clips and a fake Gemini server whose batches end at the first look."""
    from tests.storage.alm_project import make_project, write_alm_config
    from tests.support.fake_alm import FakeGeminiServer

    write_alm_config(timeout=2.0)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    projects = []
    for name in ("interrupted", "whole"):
        (tmp_path / name).mkdir()
        projects.append(make_project(tmp_path / name))
    with FakeGeminiServer(expected_key=GEMINI_KEY, batch_polls_before_end=0) as server:
        for key in projects[0].keys:
            server.register_audio(projects[0].audio(key), key)
        yield server, projects
    for project in projects:
        project.store.dispose()  # type: ignore[attr-defined]


def _gemini_options(server, keys: list[str]):  # type: ignore[no-untyped-def]
    from workbench.alm.runner import AlmRunOptions

    return AlmRunOptions(model="gemini-batch", provider="gemini", api_model="gemini-fake", base_url=server.base_url,
                         clip_keys=keys)


def _alm_state(store: Store) -> tuple[list[tuple], list[tuple]]:
    """The stored predictions and answers (one answer per clip and sample: nothing stored twice)."""
    from storage.models import AlmAnswer

    with store.session() as s:
        predictions = sorted((p.question_id, p.predicted_city, p.predicted_latitude, p.predicted_longitude)
                             for p in s.exec(select(Prediction)))
        answers = sorted((a.clip_key, a.sample, a.status, a.fingerprint, a.cost_usd) for a in s.exec(select(AlmAnswer)))
    return predictions, answers


def _job_statuses(store: Store) -> list[str]:
    from storage.models import AlmJob

    with store.session() as s:
        return list(s.exec(select(AlmJob.status).order_by(AlmJob.id)).all())


def test_alm_batch_collect(gemini) -> None:  # type: ignore[no-untyped-def]
    from workbench.alm.batch import collect_batches, submit_batch

    server, (interrupted, whole) = gemini
    keys = interrupted.keys
    for half in (keys[:3], keys[3:]):  # two batches: the unit a collect stores whole
        submit_batch(interrupted.store, _gemini_options(server, half))
    names = list(server.batches)
    submit_batch(whole.store, _gemini_options(server, keys))

    with pytest.raises(TaskCancelled):
        collect_batches(interrupted.store, "gemini-batch", task=cancel_after(1))
    predictions, answers = _alm_state(interrupted.store)
    assert [p[0] for p in predictions] == sorted(keys[:3]) and len(answers) == 3
    assert _job_statuses(interrupted.store) == ["done", "submitted"]  # the second batch is collected later
    assert [server.batches[name]["polls"] for name in names] == [1, 0]
    resumed = collect_batches(interrupted.store, "gemini-batch")
    assert resumed.answered == 3 and not resumed.failed
    assert [server.batches[name]["polls"] for name in names] == [1, 1]  # the collected batch is not fetched again
    assert _job_statuses(interrupted.store) == ["done", "done"]
    assert collect_batches(whole.store, "gemini-batch").answered == 6
    assert _alm_state(interrupted.store) == _alm_state(whole.store)
    assert len(_alm_state(whole.store)[0]) == 6


def test_alm_batch_submit(gemini) -> None:  # type: ignore[no-untyped-def]
    """Submitting is one item (the batch is created whole or not at all): a cancel during the uploads
    creates no batch, deletes what was uploaded and marks the job cancelled; a re-run submits it all."""
    from workbench.alm.batch import collect_batches, submit_batch

    server, (interrupted, whole) = gemini
    options = _gemini_options(server, interrupted.keys)
    with pytest.raises(TaskCancelled):
        submit_batch(interrupted.store, options, task=cancel_at_progress(2))
    assert server.uploads == 2 and server.deleted == 2  # no upload is left behind on the provider
    assert server.batches == {} and sum(server.requests_for(key) for key in interrupted.keys) == 0
    assert _job_statuses(interrupted.store) == ["cancelled"]
    assert _alm_state(interrupted.store) == ([], [])
    assert collect_batches(interrupted.store, "gemini-batch").stopped.startswith("no submitted batch")
    submitted = submit_batch(interrupted.store, options)
    assert "as batch batches/" in (submitted.stopped or "") and len(server.batches) == 1
    assert _job_statuses(interrupted.store) == ["cancelled", "submitted"]
    assert collect_batches(interrupted.store, "gemini-batch").answered == 6
    submit_batch(whole.store, _gemini_options(server, whole.keys))
    collect_batches(whole.store, "gemini-batch")
    assert _alm_state(interrupted.store) == _alm_state(whole.store)
