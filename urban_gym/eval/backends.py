"""Where episodes run in parallel: local worker processes or Ray.

Both backends keep one :class:`~urban_gym.eval.worker.EpisodeWorker` per process (the
world, the env and the agent are built once per process, not per episode), hand them small
chunks of episode keys, and pass every finished record to ``sink`` in this process -- the
one writer of ``episodes.jsonl``. Which process ran an episode does not change its record:
an episode depends only on its key (the env is reset with the key's seed and task, the
agent with its seed).

* ``local``: :class:`concurrent.futures.ProcessPoolExecutor` with ``workers`` processes
  (forked on Linux, so they start with the parent's loaded world; spawned elsewhere).
* ``ray``: ``workers`` Ray actors; ``ray.init()`` starts a local Ray unless ``address``
  names an existing cluster (``"auto"`` or ``"ray://host:10001"``). urban_gym must be
  importable on the cluster's nodes, and the run folder reachable by them (a shared
  filesystem): the actors write the traces there.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from urban_gym.eval.worker import EpisodeKey, EpisodeWorker, RunSpec

Sink = Callable[[dict[str, Any]], None]

_WORKER: EpisodeWorker | None = None


def chunk_size(n: int, workers: int) -> int:
    """Keys per task handed to a worker: small enough to balance the load and keep the
    progress bar moving (and little work lost to a kill), large enough to keep the
    per-task overhead low: ``ceil(n / (8 * workers))`` clipped to [1, 16].
    """
    return max(1, min(16, math.ceil(n / (8 * max(1, workers)))))


def chunks(keys: Sequence[EpisodeKey], size: int) -> list[list[EpisodeKey]]:
    """``keys`` cut into consecutive lists of ``size`` (the last one shorter)."""
    return [list(keys[i : i + size]) for i in range(0, len(keys), size)]


def run_parallel(
    spec: RunSpec,
    keys: Sequence[EpisodeKey],
    workers: int,
    backend: str,
    address: str | None,
    sink: Sink,
) -> None:
    """Run ``keys`` on ``workers`` processes of ``backend``; records go to ``sink``."""
    if backend == "ray":
        run_ray(spec, keys, workers, address, sink)
    else:
        run_local(spec, keys, workers, sink)


# --------------------------------------------------------------------------- local
def _init_worker(spec: RunSpec) -> None:
    global _WORKER
    _WORKER = EpisodeWorker(spec)


def _run_chunk(keys: list[EpisodeKey]) -> list[dict[str, Any]]:
    assert _WORKER is not None
    return _WORKER.run_many(keys)


def run_local(spec: RunSpec, keys: Sequence[EpisodeKey], workers: int, sink: Sink) -> None:
    """Local worker processes (see the module docstring)."""
    ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    parts = chunks(keys, chunk_size(len(keys), workers))
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_init_worker, initargs=(spec,)
    ) as pool:
        pending = {pool.submit(_run_chunk, c) for c in parts}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    for rec in f.result():
                        sink(rec)
        except BaseException:
            for f in pending:
                f.cancel()
            raise


# --------------------------------------------------------------------------- ray
def run_ray(
    spec: RunSpec,
    keys: Sequence[EpisodeKey],
    workers: int,
    address: str | None,
    sink: Sink,
) -> None:
    """Ray actors (see the module docstring)."""
    import ray

    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": "WARNING",
        }
        if address:
            kwargs["address"] = address
        else:
            kwargs["num_cpus"] = workers
        ray.init(**kwargs)
        started = True
    try:
        actor_cls = ray.remote(num_cpus=1)(_RayWorker)
        actors = [actor_cls.remote(spec) for _ in range(workers)]
        parts = chunks(keys, chunk_size(len(keys), workers))
        queue = list(reversed(parts))
        inflight: dict[Any, Any] = {}
        for a in actors:  # two chunks in flight per actor: no idle gap between chunks
            for _ in range(2):
                if queue:
                    inflight[a.run.remote(queue.pop())] = a
        while inflight:
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                a = inflight.pop(ref)
                for rec in ray.get(ref):
                    sink(rec)
                if queue:
                    inflight[a.run.remote(queue.pop())] = a
        for a in actors:
            ray.kill(a)
    finally:
        if started:
            ray.shutdown()


class _RayWorker:
    """A Ray actor holding one :class:`EpisodeWorker`."""

    def __init__(self, spec: RunSpec) -> None:
        self.worker = EpisodeWorker(spec)

    def run(self, keys: list[EpisodeKey]) -> list[dict[str, Any]]:
        return self.worker.run_many(keys)


__all__ = ["chunk_size", "chunks", "run_local", "run_parallel", "run_ray"]
