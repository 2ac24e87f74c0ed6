"""Tagging on Ray: an actor pool that loads the EfficientAT model once per actor.

The driver (``workbench.tagging.service.tag_clips`` with ``engine="ray"``) selects the clips,
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


class _TaggerActor:
    """Holds one model (loaded once, on a GPU when the actor was given one) and tags clip batches."""

    def __init__(self, arch: str, weights: Any, batch_size: int) -> None:
        import ray
        import torch

        from workbench.tagging.inference import AudioTagger
        from workbench.tagging.model import build_model

        state_dict = ray.get(weights) if isinstance(weights, ray.ObjectRef) else weights
        model = build_model(arch)
        model.load_state_dict(state_dict, strict=True)
        device = "cuda" if torch.cuda.is_available() and ray.get_gpu_ids() else "cpu"
        # One thread per actor: the pool's parallelism is its actors, as many as CPUs given.
        self.tagger = AudioTagger(model.eval(), device=device, batch_size=batch_size, threads=1)

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        from workbench.errors import AglwError
        from workbench.tagging.service import decode_for_tagging

        out: dict[str, list[Any]] = {name: [] for name in
                                     ("key", "probabilities", "duration_s", "n_windows", "timeline", "hop_s", "error")}
        for key, path in zip(batch["key"], batch["path"]):
            try:
                result = self.tagger.tag(decode_for_tagging(str(path)))
            except (AglwError, ValueError, OSError) as exc:
                out["key"].append(str(key))
                out["probabilities"].append(np.zeros(0, dtype=np.float32))
                out["duration_s"].append(0.0)
                out["n_windows"].append(0)
                out["timeline"].append(np.zeros((0, 0), dtype=np.float32))
                out["hop_s"].append(0.0)
                out["error"].append(str(exc) or type(exc).__name__)
                continue
            out["key"].append(str(key))
            out["probabilities"].append(np.asarray(result.probabilities, dtype=np.float32))
            out["duration_s"].append(float(result.duration_s))
            out["n_windows"].append(int(result.n_windows))
            timeline = result.timeline if result.timeline is not None else np.zeros((0, 0), dtype=np.float32)
            out["timeline"].append(np.asarray(timeline, dtype=np.float32))
            out["hop_s"].append(float(result.timeline_hop_s))
            out["error"].append("")
        # Ragged timelines (clips differ in length) travel as object columns.
        return {name: (np.array(values, dtype=object) if name in ("probabilities", "timeline") else values)
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
        GPUs each actor asks for (0 on CPU machines).
    """
    ray = connect_ray(address, workers)
    if not items:
        return
    actors = max(1, min(workers, len(items)))  # an actor per clip at most: each one loads the model
    weights = ray.put({name: tensor.detach().cpu() for name, tensor in state_dict.items()})
    dataset = ray.data.from_items([{"key": key, "path": path} for key, path in items],
                                  override_num_blocks=max(1, min(len(items), 4 * actors)))
    tagged = dataset.map_batches(
        _TaggerActor,
        fn_constructor_kwargs={"arch": arch, "weights": weights, "batch_size": batch_size},
        batch_size=1,
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
