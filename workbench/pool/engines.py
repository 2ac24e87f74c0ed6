"""Where a pool step runs: in this process (``local``, the default) or on a Ray cluster (``ray``).

The command line checks ``--engine`` (:func:`check_engine`) and, for ``ray``, builds the step's
executor (:class:`RayMeasuring` here, :class:`~workbench.pool.tagging.RayTagging`,
:class:`~workbench.pool.alm.RayAlm`) and passes it down; the steps never branch on an engine name.

The engine only decides *where* the same function runs; it yields the results to the driver in
shards (lists of rows), and the caller stores each shard in one transaction. So both engines give
the same rows, and an interrupted job resumes from what was stored.

Ray is the optional extra ``[scale]``. It is imported only in `workbench/pool/` (here, `tagging.py`,
`alm.py`), only when an executor of it is built.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from workbench.errors import AglwError, InputError
from workbench.pool.measure import Measurement, PoolItem, measure_batch, rows_to_measurements

ENGINES = ("local", "ray")
BatchFunction = Callable[[dict[str, Any]], dict[str, list[Any]]]


def require_ray() -> Any:
    """Import Ray, or fail with one line naming the extra that provides it."""
    try:
        import ray
        import ray.data  # noqa: F401 - Ray Data is the part the pool steps use
    except ImportError as exc:
        raise AglwError(
            "--engine ray needs Ray: pip install 'agl-workbench[scale]' (or use --engine local)"
        ) from exc
    return ray


def _check_reachable(address: str, timeout_s: float = 3.0) -> None:
    """Fail fast with one line when nothing listens at ``host:port`` (Ray itself retries for a minute)."""
    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise InputError(f"--ray-address {address!r}: expected HOST:PORT (e.g. 10.0.0.5:6379), 'ray://HOST:PORT' or 'auto'")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise AglwError(
            f"--ray-address {address}: no Ray cluster answers there ({exc.strerror or exc}); "
            "start one with `ray start --head` on that machine or check the address"
        ) from exc


def _quiet(ray: Any) -> None:
    """Our task protocol draws the one progress bar; Ray Data's own bars and INFO lines would be a second."""
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False


def connect_ray(address: str | None, workers: int) -> Any:
    """Join the cluster at ``address``, or start a local Ray instance with ``workers`` CPUs.

    A session already connected (e.g. by a test or a notebook) is reused.
    """
    ray = require_ray()
    if address and address != "auto":
        _check_reachable(address)
    if ray.is_initialized():
        _quiet(ray)
        return ray
    options: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        # Ray's own INFO/WARNING lines (start-up, auth mode, executor summaries) would bury ours.
        "logging_level": logging.ERROR,
        "configure_logging": True,
    }
    if address:
        options["address"] = address
    else:
        options["num_cpus"] = workers
    try:
        ray.init(**options)
    except ConnectionError as exc:
        raise AglwError(f"--ray-address {address}: could not join the Ray cluster ({exc})") from exc
    _quiet(ray)
    return ray


def run_local(items: Sequence[PoolItem], *, workers: int, shard_size: int,
              function: BatchFunction = measure_batch) -> Iterator[list[Measurement]]:
    """Measure ``items`` in this process with ``workers`` threads; yield shards in input order.

    Decoding and the FFTs release the GIL, so threads use both cores without a process pool's
    start-up and pickling.
    """
    shards = [items[i:i + shard_size] for i in range(0, len(items), shard_size)]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for shard in shards:
            # One item per call keeps the threads busy with equal work (recordings differ in length).
            batches = pool.map(lambda item: function(_as_columns([item])), shard)
            rows: list[Measurement] = []
            for columns in batches:
                rows.extend(rows_to_measurements(columns))
            yield rows


def run_ray(items: Sequence[PoolItem], *, address: str | None, workers: int, shard_size: int,
            function: BatchFunction = measure_batch) -> Iterator[list[Measurement]]:
    """Measure ``items`` on Ray Data (``map_batches`` of the same function); yield shards as they arrive.

    Ray Data retries a task whose worker died (its default for map tasks), so a lost worker costs time, never rows: nothing is
    written by the workers, the driver stores what comes back.
    """
    ray = connect_ray(address, workers)
    if not items:
        return
    # Never more tasks than recordings (Ray Data warns about idle concurrency otherwise).
    workers = max(1, min(workers, len(items)))
    dataset = ray.data.from_items([asdict(item) for item in items], override_num_blocks=max(1, min(len(items), 4 * workers)))
    measured = dataset.map_batches(
        function,
        batch_size=1,  # one recording per call: recordings are long, batches would only unbalance workers
        batch_format="numpy",
        compute=ray.data.TaskPoolStrategy(size=max(1, workers)),
        num_cpus=1,
    )
    for batch in measured.iter_batches(batch_size=shard_size, batch_format="numpy"):
        yield rows_to_measurements(batch)


def _as_columns(items: Sequence[PoolItem]) -> dict[str, list[Any]]:
    return {
        "key": [item.key for item in items],
        "path": [item.path for item in items],
        "clip_id": [item.clip_id for item in items],
        "description": [item.description for item in items],
    }


def check_engine(engine: str, address: str | None) -> None:
    """The command line's ``--engine`` / ``--ray-address`` pair, or one line saying what is wrong."""
    if engine not in ENGINES:
        raise InputError(f"--engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if engine == "local" and address:
        raise InputError("--ray-address goes with --engine ray")


@dataclass(frozen=True)
class RayMeasuring:
    """``aglw analyze-pool --engine ray``: the command line builds it and passes it to
    :func:`workbench.pool.service.analyze_pool` as the pool's
    :class:`~workbench.pool.service.RemoteMeasuring` (``workers`` concurrent Ray tasks; a local Ray
    instance with that many CPUs when no ``address`` is given)."""

    address: str | None = None
    workers: int = 2
    name: str = "ray"

    @property
    def other_machines(self) -> bool:
        """Whether the workers may be on other machines (an existing cluster is joined)."""
        return bool(self.address)

    def connect(self) -> None:
        connect_ray(self.address, self.workers)

    def shards(self, items: Sequence[PoolItem], *, shard_size: int,
               function: BatchFunction = measure_batch) -> Iterator[list[Measurement]]:
        return run_ray(items, address=self.address, workers=self.workers, shard_size=shard_size, function=function)
