"""The local provider asks one clip per ``generate`` call by default, as AGL1K's reference did
(issue 40, "The reference's way by default"); ``--gpu-batch N`` batches on purpose, and says so in
the run's settings and in each answer's fingerprint.

The model is a fake of the family interface (``answer`` / ``answer_batch``) that counts its generate
calls and their sizes; it claims a GPU and the 8 clips per call the family used to take there.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from cli.main import main
from storage.models import AlmAnswer, AlmJob
from tests.storage.alm_project import make_project, write_alm_config

CHECKPOINT = "fake/omni-checkpoint"
ANSWER = json.dumps({"reason": "bells and French speech", "city": "Lyon", "country": "France",
                     "continent": "Europe", "longitude": 4.84, "latitude": 45.76})


class CountingOmni:
    """A loaded local model that records the size of each generate call.

    The first call waits until ``hold`` other questions are waiting (at most 10 s), so that a
    provider that batches has something to batch, whatever the threads' timing.
    """

    device = "cuda"
    max_batch = 8  # what Qwen2.5-Omni took per call on a GPU before one clip per call became the default

    def __init__(self, provider: Any, hold: int) -> None:
        self.provider, self.hold = provider, hold
        self.calls: list[int] = []

    def load_audio(self, data: bytes) -> bytes:
        return data

    def _generate(self, n: int) -> None:
        if not self.calls:
            deadline = time.monotonic() + 10
            while len(self.provider._waiting) < self.hold and time.monotonic() < deadline:
                time.sleep(0.005)
        self.calls.append(n)

    def answer(self, request: Any, audio: Any, max_new_tokens: int) -> tuple[str, int, int]:
        self._generate(1)
        return ANSWER, 100, 20

    def answer_batch(self, requests: list[Any], audios: list[Any], max_new_tokens: int) -> list[tuple[str, int, int]]:
        self._generate(len(requests))
        return [(ANSWER, 100, 20) for _ in requests]


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> list[CountingOmni]:
    """Every TransformersProvider loads a CountingOmni (listed here) instead of a checkpoint."""
    from workbench.alm.local import TransformersProvider

    loaded: list[CountingOmni] = []

    def load(self: TransformersProvider) -> CountingOmni:
        model = CountingOmni(self, hold=3)
        loaded.append(model)
        return model

    monkeypatch.setattr(TransformersProvider, "_load", load)
    return loaded


@pytest.fixture
def project(tmp_path: Path):  # type: ignore[no-untyped-def]
    write_alm_config()
    p = make_project(tmp_path, n=4)
    yield p
    p.store.dispose()


def _config(tmp_path: Path) -> Any:
    from workbench.alm.config import AlmConfig, ModelEntry, ProviderSettings

    return AlmConfig(path=tmp_path / "alm.toml",
                     providers={"transformers": ProviderSettings(device="cuda", max_retries=0)},
                     models={CHECKPOINT: ModelEntry(provider="transformers", max_output_tokens=64)})


def _fingerprints(project: Any, model: str) -> dict[str, str]:
    from storage.models import AlmRun

    with project.store.session() as s:
        rows = s.execute(select(AlmAnswer.clip_key, AlmAnswer.fingerprint).join(AlmRun, AlmAnswer.alm_run_id == AlmRun.id)
                         .where(AlmRun.model == model)).all()
    return dict(rows)  # type: ignore[arg-type]


def _job_options(project: Any) -> list[dict[str, Any]]:
    with project.store.session() as s:
        return [dict(o or {}) for o in s.execute(select(AlmJob.options).order_by(AlmJob.id)).scalars()]


def test_the_default_is_one_generate_call_per_clip_even_on_a_gpu(project, fake_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from workbench.alm.runner import AlmRunOptions, run_alm

    options = AlmRunOptions(model="omni", provider="transformers", api_model=CHECKPOINT, concurrency=4)
    report = run_alm(project.store, options, config=_config(tmp_path))
    assert report.answered == 4 and not report.failed
    assert fake_model[0].calls == [1, 1, 1, 1]  # four clips, four generate calls, one clip each
    assert report.gpu_batch == 1
    assert _job_options(project)[-1]["gpu_batch"] == 1


def test_gpu_batch_4_shares_generate_calls(project, fake_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from workbench.alm.runner import AlmRunOptions, run_alm

    options = AlmRunOptions(model="omni-b4", provider="transformers", api_model=CHECKPOINT, concurrency=4, gpu_batch=4)
    report = run_alm(project.store, options, config=_config(tmp_path))
    assert report.answered == 4 and not report.failed
    # The first clip finds the model idle and runs alone; the three that waited share one call.
    assert fake_model[0].calls == [1, 3]
    assert report.gpu_batch == 4
    assert _job_options(project)[-1]["gpu_batch"] == 4


def test_gpu_batch_asks_enough_questions_at_once_to_fill_a_call(project, fake_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--gpu-batch above --concurrency: the run asks gpu_batch questions at once, else no call could fill."""
    from workbench.alm.runner import AlmRunOptions, run_alm

    options = AlmRunOptions(model="omni-b4c1", provider="transformers", api_model=CHECKPOINT, concurrency=1, gpu_batch=4)
    assert run_alm(project.store, options, config=_config(tmp_path)).answered == 4
    assert fake_model[0].calls == [1, 3]


def test_the_fingerprint_names_the_batch_only_above_one(project, fake_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from workbench.alm import plan
    from workbench.alm.runner import AlmRunOptions, run_alm
    from workbench.llm.fingerprint import fingerprint as request_fingerprint

    opts = {"max_output_tokens": 64}
    one = plan.fingerprint("transformers", CHECKPOINT, "agl1k-v1", "0" * 64, opts, 42)
    four = plan.fingerprint("transformers", CHECKPOINT, "agl1k-v1", "0" * 64, opts, 42, gpu_batch=4)
    before = request_fingerprint({"provider": "transformers", "api_model": CHECKPOINT, "prompt_version": "agl1k-v1",
                                  "audio_sha256": "0" * 64, "seed": 42,
                                  "options": {**opts, "message_format": plan.LOCAL_MESSAGE_FORMAT}})
    assert one == before  # answers stored before --gpu-batch existed keep their key
    assert plan.fingerprint("transformers", CHECKPOINT, "agl1k-v1", "0" * 64, opts, 42, gpu_batch=1) == before
    assert four != one

    config = _config(tmp_path)
    base = dict(provider="transformers", api_model=CHECKPOINT, concurrency=4)
    run_alm(project.store, AlmRunOptions(model="omni", **base), config=config)
    stored_one = _fingerprints(project, "omni")
    # The fingerprint is the one made the old way (model options + the local message format).
    entry = config.model("transformers", CHECKPOINT)
    with project.store.session() as s:
        from storage.models import Clip

        digests = dict(s.execute(select(Clip.key, Clip.content_hash)).all())
    for key, fp in stored_one.items():
        if digests.get(key):
            assert fp == request_fingerprint({
                "provider": "transformers", "api_model": CHECKPOINT, "prompt_version": "agl1k-v1",
                "audio_sha256": digests[key], "seed": 42,
                "options": {**plan.model_options(entry), "message_format": plan.LOCAL_MESSAGE_FORMAT}})
    # The same model NAME asked again in batches: nothing is found in the cache, all four are asked.
    again = run_alm(project.store, AlmRunOptions(model="omni", gpu_batch=4, **base), config=config)
    assert again.skipped_cached == 0 and again.answered == 4
    # And one clip per call once more: all four found.
    assert run_alm(project.store, AlmRunOptions(model="omni", **base), config=config).skipped_cached == 4


def test_gpu_batch_is_refused_where_it_means_nothing(project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from workbench.alm.runner import AlmRunOptions, run_alm
    from workbench.errors import UsageError
    from workbench.pool.alm import RayAlm

    with pytest.raises(UsageError, match="--gpu-batch"):
        run_alm(project.store, AlmRunOptions(model="x", provider="gemini", api_model="gemini-fake", gpu_batch=4),
                config=_config(tmp_path))
    with pytest.raises(UsageError, match="--gpu-batch .* --engine ray"):
        run_alm(project.store, AlmRunOptions(model="x", provider="transformers", api_model=CHECKPOINT, gpu_batch=4),
                config=_config(tmp_path), remote=RayAlm())
    with pytest.raises(UsageError, match="--gpu-batch"):
        run_alm(project.store, AlmRunOptions(model="x", provider="transformers", api_model=CHECKPOINT, gpu_batch=0),
                config=_config(tmp_path))


# ---------------------------------------------------------------------------------------------- CLI
def _aglw(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_an_invalid_gpu_batch_is_a_usage_error(project, capsys, value: str) -> None:  # type: ignore[no-untyped-def]
    rc, _out, err = _aglw(capsys, "--db", str(project.db), "alm", "run", "--model", "m", "--provider", "transformers",
                          "--api-model", CHECKPOINT, "--gpu-batch", value, "--dry-run")
    assert rc == 2 and "--gpu-batch" in err


def test_gpu_batch_with_an_api_provider_is_a_usage_error(project, capsys) -> None:  # type: ignore[no-untyped-def]
    rc, _out, err = _aglw(capsys, "--db", str(project.db), "alm", "run", "--model", "m", "--provider", "openai-compatible",
                          "--base-url", "http://127.0.0.1:9/v1", "--api-model", "fake-audio-model", "--gpu-batch", "4",
                          "--dry-run")
    assert rc == 2 and "--gpu-batch" in err and "transformers" in err


def test_gpu_batch_above_one_with_ray_is_a_usage_error(project, capsys) -> None:  # type: ignore[no-untyped-def]
    rc, _out, err = _aglw(capsys, "--db", str(project.db), "alm", "run", "--model", "m", "--provider", "transformers",
                          "--api-model", CHECKPOINT, "--gpu-batch", "4", "--engine", "ray")
    assert rc == 2 and "--gpu-batch" in err


def test_the_dry_run_shows_clips_per_generate_call(project, capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["--db", str(project.db), "alm", "run", "--model", "m", "--provider", "transformers", "--api-model", CHECKPOINT,
            "--dry-run"]
    rc, out, _err = _aglw(capsys, *argv)
    assert rc == 0 and "1 clip per generate call (the reference's way)" in out
    rc, out, _err = _aglw(capsys, *argv, "--gpu-batch", "4")
    assert rc == 0 and "up to 4 clips per generate call" in out
    rc, out, _err = _aglw(capsys, "--json", *argv, "--gpu-batch", "4")
    assert rc == 0 and json.loads(out)["gpu_batch"] == 4
    rc, out, _err = _aglw(capsys, "--json", *argv)
    assert rc == 0 and json.loads(out)["gpu_batch"] == 1
    # An API provider has no generate call: the key is there, null.
    rc, out, _err = _aglw(capsys, "--json", "--db", str(project.db), "alm", "run", "--model", "m", "--provider",
                          "openai-compatible", "--base-url", "http://127.0.0.1:9/v1", "--api-model", "fake-audio-model",
                          "--dry-run")
    assert rc == 0 and json.loads(out)["gpu_batch"] is None


def test_alm_run_json_reports_the_batch_and_the_job_keeps_it(project, fake_model, capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["--db", str(project.db), "--json", "alm", "run", "--model", "omni", "--provider", "transformers",
            "--api-model", CHECKPOINT]
    rc, out, err = _aglw(capsys, *argv, "--gpu-batch", "4")
    assert rc == 0, err
    report = json.loads(out)
    assert report["gpu_batch"] == 4 and report["answered"] == 4
    assert fake_model[-1].calls == [1, 3]
    assert _job_options(project)[-1]["gpu_batch"] == 4
    rc, out, err = _aglw(capsys, *argv)  # the default: other fingerprints, asked again one clip per call
    assert rc == 0, err
    assert json.loads(out)["gpu_batch"] == 1 and json.loads(out)["answered"] == 4
    assert fake_model[-1].calls == [1, 1, 1, 1]
