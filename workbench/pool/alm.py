"""Local ALMs on Ray: the transformers provider, one copy per Ray actor.

The ALM runner (``workbench.alm.runner``) stays what it is — fingerprints, never paying twice,
storing every answer in the driver, retries, cancel — and gets a provider whose ``ask`` runs on
a free actor of a pool instead of in this process. Each actor holds one
:class:`~workbench.alm.local.TransformersProvider` (the model loaded once, on its own GPU when
the cluster has them), so the runner's concurrency is the number of actors. An actor that dies is
restarted by Ray and its question asked again; a question that still fails is a failed answer
for that clip, never a lost one.
"""

from __future__ import annotations

import queue
from typing import Any

from workbench.pool.engines import connect_ray


class _LocalAlmActor:
    """Lives in a Ray worker: one model, one question at a time."""

    def __init__(self, checkpoint: str, device: str) -> None:
        from workbench.alm.local import TransformersProvider

        self.provider = TransformersProvider(checkpoint, device=device)

    def ask(self, request: Any) -> Any:
        return self.provider.ask(request)


class RayLocalProvider:
    """The ``transformers`` provider, spread over ``workers`` Ray actors."""

    name = "transformers"

    def __init__(self, checkpoint: str, *, device: str = "auto", address: str | None = None, workers: int = 2) -> None:
        from workbench.alm.local import TransformersProvider

        self.accepted_formats = TransformersProvider.accepted_formats
        self._ray = connect_ray(address, workers)
        gpus = 1.0 if device.startswith("cuda") else 0.0
        actor_class = self._ray.remote(num_cpus=1, num_gpus=gpus, max_restarts=2, max_task_retries=2)(_LocalAlmActor)
        self._actors = [actor_class.remote(checkpoint, device) for _ in range(max(1, workers))]
        self._free: queue.Queue[Any] = queue.Queue()
        for actor in self._actors:
            self._free.put(actor)

    def ask(self, request: Any) -> Any:
        """Ask on a free actor (blocks until one is free); the actor's own errors come back as they were."""
        from ray.exceptions import RayActorError, RayTaskError

        from workbench.alm.providers import RetryableError

        actor = self._free.get()
        try:
            return self._ray.get(actor.ask.remote(request))
        except RayTaskError as exc:
            # The provider's own error (a reject reason, a bad checkpoint): re-raise it unwrapped so
            # the runner treats it exactly as it would in this process.
            cause = getattr(exc, "cause", None)
            raise (cause if isinstance(cause, BaseException) else exc) from None
        except RayActorError as exc:
            raise RetryableError(f"the Ray actor running the model died ({type(exc).__name__})") from None
        finally:
            self._free.put(actor)

    def close(self) -> None:
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors = []


class RayAlm:
    """``aglw alm run --engine ray``: the command line builds it and passes it to
    :func:`workbench.alm.runner.run_alm`, which asks it for the provider once it knows the device."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int = 2) -> None:
        self.address, self.workers = address, workers

    def provider(self, api_model: str, device: str) -> RayLocalProvider:
        return RayLocalProvider(api_model, device=device, address=self.address, workers=self.workers)
