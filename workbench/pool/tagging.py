"""Tagging on Ray: an actor pool that loads the EfficientAT model once per actor.

The driver (``workbench.tagging.service.tag_clips`` given a :class:`RayTagging`) selects the clips,
stores every result, and marks failures exactly as the local engine does; this module only
moves the two expensive steps — decoding and the forward passes — onto the cluster. The actors
run the same decode and the same :class:`~workbench.tagging.inference.AudioTagger` as the local
engine, so the stored rows are the same (up to float rounding of the CPU kernels).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.pool.engines import connect_ray


@dataclass(frozen=True)
class RemoteTagResult:
    """One clip's outcome as it comes back from an actor: arrays, or the error text."""

    key: str
    probabilities: np.ndarray | None
    duration_s: float
    n_windows: int
    timeline: np.ndarray | None
    timeline_hop_s: float
    error: str


_COLUMNS = ("key", "probabilities", "duration_s", "n_windows", "timeline", "hop_s", "error")
# Clips handed to a GPU actor at once: their windows share the passes (workbench.tagging.batched).
GPU_CLIPS_PER_CALL = 32


class _TaggerActor:
    """Holds one model (loaded once, on a GPU when the actor was given one) and tags clip batches.

    Per clip (``batched`` false) it decodes and tags each clip itself; batched, it gets clips
    decoded by the CPU stage before it and runs their windows through shared passes.
    """

    def __init__(self, arch: str, weights: Any, batch_size: int, precision: str = "full", batched: bool = False) -> None:
        import ray
        import torch

        from workbench.tagging.inference import AudioTagger
        from workbench.tagging.model import build_model

        state_dict = ray.get(weights) if isinstance(weights, ray.ObjectRef) else weights
        model = build_model(arch)
        model.load_state_dict(state_dict, strict=True)
        device = "cuda" if torch.cuda.is_available() and ray.get_gpu_ids() else "cpu"
        # One thread per actor: the pool's parallelism is its actors, as many as CPUs given.
        self.tagger = AudioTagger(model.eval(), device=device, batch_size=batch_size, threads=1, precision=precision)
        self.batched = batched

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        if self.batched:
            return self._batched(batch)
        from workbench.tagging.decode import decode_or_error

        out: dict[str, list[Any]] = {name: [] for name in _COLUMNS}
        for key, path in zip(batch["key"], batch["path"]):
            samples, error = decode_or_error(str(path))
            try:
                result = self.tagger.tag(samples) if samples is not None else error
            except ValueError as exc:
                result = str(exc)
            _append(out, str(key), result)
        return _as_columns(out)

    def _batched(self, batch: dict[str, Any]) -> dict[str, Any]:
        from workbench.tagging.batched import tag_many

        out: dict[str, list[Any]] = {name: [] for name in _COLUMNS}
        decoded = []
        for key, samples, error in zip(batch["key"], batch["samples"], batch["error"]):
            if error:
                _append(out, str(key), str(error))
            else:
                decoded.append((str(key), samples))
        for key, result in tag_many(self.tagger, decoded):
            _append(out, key, str(result) if isinstance(result, ValueError) else result)
        return _as_columns(out)


def _decode_batch(batch: dict[str, Any]) -> dict[str, Any]:
    """The CPU stage of the batched path: each clip decoded to mono 32 kHz (or its error)."""
    from workbench.tagging.decode import decode_or_error

    keys, samples, errors = [], [], []
    for key, path in zip(batch["key"], batch["path"]):
        decoded, error = decode_or_error(str(path))
        keys.append(str(key))
        samples.append(decoded if decoded is not None else np.zeros(0, dtype=np.float32))
        errors.append(error)
    return {"key": keys, "samples": np.array(samples + [None], dtype=object)[:-1], "error": errors}


def _append(out: dict[str, list[Any]], key: str, result: Any) -> None:
    """One clip's row: the result's arrays, or (a string) its error."""
    failed = isinstance(result, str)
    out["key"].append(key)
    out["probabilities"].append(np.zeros(0, dtype=np.float32) if failed else np.asarray(result.probabilities, dtype=np.float32))
    out["duration_s"].append(0.0 if failed else float(result.duration_s))
    out["n_windows"].append(0 if failed else int(result.n_windows))
    timeline = None if failed else result.timeline
    out["timeline"].append(np.zeros((0, 0), dtype=np.float32) if timeline is None else np.asarray(timeline, dtype=np.float32))
    out["hop_s"].append(0.0 if failed else float(result.timeline_hop_s))
    out["error"].append((result or "tagging failed") if failed else "")


def _as_columns(out: dict[str, list[Any]]) -> dict[str, Any]:
    # Ragged arrays (clips differ in length) travel as object columns; the trailing None keeps
    # numpy from stacking equally long ones into one 2-D array.
    return {name: (np.array(values + [None], dtype=object)[:-1] if name in ("probabilities", "timeline") else values)
            for name, values in out.items()}


def ray_tag(
    items: Sequence[tuple[str, str]],
    *,
    arch: str,
    state_dict: dict[str, Any],
    batch_size: int,
    address: str | None,
    workers: int,
    shard_size: int = 16,
    gpus_per_actor: float = 0.0,
    precision: str = "full",
    batched: bool = False,
) -> Iterator[list[RemoteTagResult]]:
    """Tag ``(key, audio path)`` items on Ray; yield results in shards as they arrive.

    Parameters
    ----------
    items
        Clip keys with their resolved recording paths (readable from every worker).
    arch, state_dict
        The verified model: shipped once through Ray's object store, loaded once per actor.
    workers
        Actors in the pool.
    gpus_per_actor
        GPUs each actor asks for (0 on CPU machines). With GPUs there is one actor per GPU of
        the cluster (``workers`` is then the number of decoding tasks at a time).
    precision
        ``full`` or ``fast`` (:mod:`workbench.tagging.precision`).
    batched
        Decode in a CPU stage (Ray tasks) and hand each actor :data:`GPU_CLIPS_PER_CALL` decoded
        clips whose windows share the passes — the local engine's batched path on every GPU.
    """
    ray = connect_ray(address, workers)
    if not items:
        return
    if gpus_per_actor > 0:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        actors = max(1, min(gpus or 1, len(items)))
    else:
        actors = max(1, min(workers, len(items)))  # an actor per clip at most: each one loads the model
    weights = ray.put({name: tensor.detach().cpu() for name, tensor in state_dict.items()})
    dataset = ray.data.from_items([{"key": key, "path": path} for key, path in items],
                                  override_num_blocks=max(1, min(len(items), 4 * max(actors, workers))))
    clips_per_call = 1
    if batched:
        dataset = dataset.map_batches(_decode_batch, batch_size=1, batch_format="numpy", num_cpus=1)
        clips_per_call = GPU_CLIPS_PER_CALL
    tagged = dataset.map_batches(
        _TaggerActor,
        fn_constructor_kwargs={"arch": arch, "weights": weights, "batch_size": batch_size, "precision": precision,
                               "batched": batched},
        batch_size=clips_per_call,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=1,
        num_gpus=gpus_per_actor,
    )
    for batch in tagged.iter_batches(batch_size=shard_size, batch_format="numpy"):
        shard = []
        for i, key in enumerate(batch["key"]):
            error = str(batch["error"][i])
            timeline = np.asarray(batch["timeline"][i], dtype=np.float32)
            shard.append(RemoteTagResult(
                key=str(key),
                probabilities=None if error else np.asarray(batch["probabilities"][i], dtype=np.float32),
                duration_s=float(batch["duration_s"][i]),
                n_windows=int(batch["n_windows"][i]),
                timeline=None if error or timeline.size == 0 else timeline,
                timeline_hop_s=float(batch["hop_s"][i]),
                error=error,
            ))
        yield shard


@dataclass(frozen=True)
class RayTagging:
    """:func:`workbench.tagging.service.tag_clips`' model on a Ray actor pool (``--engine ray``): the
    command line builds it and passes it down as the run's :class:`~workbench.tagging.service.RemoteTagging`."""

    address: str | None = None
    workers: int = 2
    name: str = "ray"

    def connect(self) -> None:
        connect_ray(self.address, self.workers)

    def outcomes(self, items: Sequence[tuple[str, str]], checkpoint: Any, *, device: str, batch_size: int,
                 precision: str, batched: bool) -> Iterator[tuple[str, Any, str]]:
        from workbench.tagging.inference import TagResult

        shards = ray_tag(
            items, arch=checkpoint.arch, state_dict=checkpoint.model.state_dict(), batch_size=batch_size,
            address=self.address, workers=self.workers, gpus_per_actor=1.0 if device.startswith("cuda") else 0.0,
            precision=precision, batched=batched,
        )
        for shard in shards:
            for remote in shard:
                if remote.error or remote.probabilities is None:
                    yield remote.key, None, remote.error or "tagging failed on a Ray worker"
                else:
                    yield remote.key, TagResult(remote.probabilities, remote.duration_s, remote.n_windows,
                                                remote.timeline, remote.timeline_hop_s), ""
