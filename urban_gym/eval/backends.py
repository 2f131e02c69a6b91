"""Where episodes run in parallel: local worker processes or Ray.

Both backends keep one :class:`~urban_gym.eval.worker.EpisodeWorker` per process (the
world, the env and the agent are built once per process, not per episode), hand them small
chunks of episode keys, and pass every finished record to ``sink`` in this process -- the
one writer of ``episodes.jsonl``. Which process ran an episode does not change its record:
an episode depends only on its key (the env is reset with the key's seed and task, the
agent with its seed).

Chunks hold the repeats of one task together (keys ordered by task, then repeat): a task's
per-goal caches (a goal's distance field, say) are then built in one process, not in
every worker. Each chunk comes back with its worker's counters (:class:`WorkerStats`:
process CPU time, set-up time), gathered in :class:`ParallelStats` -- what the benchmark
reads to tell the harness's own cost from the machine's load.

* ``local``: :class:`concurrent.futures.ProcessPoolExecutor` with ``workers`` processes
  (forked on Linux, so they start with the parent's loaded world; spawned elsewhere).
  Each ends when the process that started it dies, ``kill -9`` included
  (:func:`~urban_gym.eval.worker.die_with_parent`): no worker holding a world outlives
  its run.
* ``ray``: ``workers`` Ray actors; ``ray.init()`` starts a local Ray unless ``address``
  names an existing cluster (``"auto"`` or ``"ray://host:10001"``). The processes of a
  local Ray end with the driver, ``kill -9`` included (:mod:`urban_gym.eval.reaper`). urban_gym must be
  importable on the cluster's nodes, and the run folder reachable by them (a shared
  filesystem): the actors write the traces there.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any

from urban_gym.eval.worker import (
    EpisodeKey,
    EpisodeWorker,
    RunSpec,
    die_with_parent,
    freeze_heap,
    restore_world,
    world_snapshot,
)

Sink = Callable[[dict[str, Any]], None]


def chunk_size(n: int, workers: int) -> int:
    """Keys per task handed to a worker: small enough to balance the load and keep the
    progress bar moving (and little work lost to a kill), large enough to keep the
    per-task overhead low: ``ceil(n / (8 * workers))`` clipped to [1, 16].
    """
    return max(1, min(16, math.ceil(n / (8 * max(1, workers)))))


def chunks(keys: Sequence[EpisodeKey], size: int) -> list[list[EpisodeKey]]:
    """``keys`` cut into lists of ``size`` (the last one shorter), in task order: the
    repeats of a task stay together (see the module docstring).
    """
    ordered = sorted(keys, key=lambda k: (k.index, k.task_id, k.repeat, k.seed))
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


@dataclass
class WorkerStats:
    """Counters of one worker process (a local process or a Ray actor).

    Attributes:
        pid: its process id (with ``host``: where it ran).
        host: its host name.
        setup_wall_s: seconds to build its env and agent.
        setup_cpu_s: CPU seconds of the process when they were built (imports, world).
        ready_at: when they were built (``time.time()``).
        cpu_s: CPU seconds of the process in all, at its last chunk.
        episodes: episodes it ran.
        chunks: chunks it ran.
    """

    pid: int
    host: str
    setup_wall_s: float
    setup_cpu_s: float
    ready_at: float = 0.0
    cpu_s: float = 0.0
    episodes: int = 0
    chunks: int = 0


@dataclass
class ParallelStats:
    """What a parallel backend measured.

    Attributes:
        backend: ``local`` or ``ray``.
        init_s: seconds of ``ray.init()`` (0 when Ray was already initialised, or local).
        ready_s: seconds from the start of the backend (after ``ray.init``) until every
            worker had built its env and agent: its start-up.
        first_s: seconds from the start of the backend to its first finished chunk.
        episodes_s: seconds from ``ready_s`` to the last record: the throughput phase.
        workers: one :class:`WorkerStats` per worker process.
    """

    backend: str
    init_s: float = 0.0
    ready_s: float | None = None
    first_s: float | None = None
    episodes_s: float | None = None
    workers: list[WorkerStats] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """The stats as JSON-ready values."""
        return asdict(self)

    def add(self, stats: WorkerStats) -> None:
        """Keep the latest counters of ``stats``'s worker."""
        for i, w in enumerate(self.workers):
            if (w.host, w.pid) == (stats.host, stats.pid):
                self.workers[i] = stats
                return
        self.workers.append(stats)

    def finish(self) -> ParallelStats:
        """Work out ``ready_s`` and ``episodes_s`` at the end of the run."""
        end = time.time()
        if self.workers:
            ready = max(w.ready_at for w in self.workers)
            self.ready_s = round(max(0.0, ready - self.started_at), 4)
            self.episodes_s = round(max(0.0, end - max(ready, self.started_at)), 4)
        return self


def run_parallel(
    spec: RunSpec,
    keys: Sequence[EpisodeKey],
    workers: int,
    backend: str,
    address: str | None,
    sink: Sink,
) -> ParallelStats:
    """Run ``keys`` on ``workers`` processes of ``backend``; records go to ``sink``."""
    if backend == "ray":
        return run_ray(spec, keys, workers, address, sink)
    return run_local(spec, keys, workers, sink)


class _ChunkRunner:
    """One :class:`EpisodeWorker` and its counters (a worker process's state)."""

    def __init__(self, spec: RunSpec, world: Any = None) -> None:
        import platform

        t0 = time.perf_counter()
        if world:  # the driver's loaded worlds (see _shared_world)
            restore_world(world)
        self.worker = EpisodeWorker(spec)
        freeze_heap()  # this process's world, env and agent: kept to its end
        self.stats = WorkerStats(
            pid=os.getpid(),
            host=platform.node(),
            setup_wall_s=round(time.perf_counter() - t0, 4),
            setup_cpu_s=round(time.process_time(), 4),
            ready_at=time.time(),
        )

    def run(self, keys: list[EpisodeKey]) -> tuple[list[dict[str, Any]], WorkerStats]:
        """Run the episodes of ``keys``; returns their records and this worker's counters."""
        records = self.worker.run_many(keys)
        self.stats.cpu_s = round(time.process_time(), 4)
        self.stats.episodes += len(records)
        self.stats.chunks += 1
        return records, self.stats


# --------------------------------------------------------------------------- local
_RUNNER: _ChunkRunner | None = None


def _init_worker(spec: RunSpec, parent: int) -> None:
    global _RUNNER
    from urban_gym.render.threads import one_thread_in_worker

    die_with_parent(parent)  # a worker never outlives the run (kill -9 of the parent)
    one_thread_in_worker()  # the workers use the cores already
    _RUNNER = _ChunkRunner(spec)


def _run_chunk(keys: list[EpisodeKey]) -> tuple[list[dict[str, Any]], WorkerStats]:
    assert _RUNNER is not None
    return _RUNNER.run(keys)


def run_local(spec: RunSpec, keys: Sequence[EpisodeKey], workers: int, sink: Sink) -> ParallelStats:
    """Local worker processes (see the module docstring)."""
    ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    parts = chunks(keys, chunk_size(len(keys), workers))
    stats = ParallelStats("local")
    t0 = time.perf_counter()
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_init_worker, initargs=(spec, os.getpid())
    ) as pool:
        pending = {pool.submit(_run_chunk, c) for c in parts}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    records, worker = f.result()
                    if stats.first_s is None:
                        stats.first_s = round(time.perf_counter() - t0, 4)
                    stats.add(worker)
                    for rec in records:
                        sink(rec)
        except BaseException:
            for f in pending:
                f.cancel()
            raise
    return stats.finish()


# --------------------------------------------------------------------------- ray
def run_ray(
    spec: RunSpec,
    keys: Sequence[EpisodeKey],
    workers: int,
    address: str | None,
    sink: Sink,
) -> ParallelStats:
    """Ray actors (see the module docstring)."""
    import ray

    from urban_gym.eval.reaper import start_reaper, stop_reaper

    stats = ParallelStats("ray")
    started = False
    reaper = None
    t_init = time.perf_counter()
    if not ray.is_initialized():
        if not address:  # a local Ray: its processes end with this one, kill -9 included
            reaper = start_reaper()
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": "WARNING",
        }
        if address:
            kwargs["address"] = address
        else:
            kwargs["num_cpus"] = workers
        try:
            ray.init(**kwargs)
        except BaseException:
            stop_reaper(reaper)
            raise
        started = True
        stats.init_s = round(time.perf_counter() - t_init, 4)
    t0 = time.perf_counter()
    stats.started_at = time.time()
    try:
        actor_cls = ray.remote(num_cpus=1)(_RayWorker)
        world = _shared_world(ray)
        # actor handles: ray's types do not model their methods' .remote()
        actors: list[Any] = [actor_cls.remote(spec, world) for _ in range(workers)]
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
                records, worker = ray.get(ref)
                if stats.first_s is None:
                    stats.first_s = round(time.perf_counter() - t0, 4)
                stats.add(worker)
                for rec in records:
                    sink(rec)
                if queue:
                    inflight[a.run.remote(queue.pop())] = a
        stats.finish()
        for a in actors:
            ray.kill(a)
    finally:
        try:
            if started:
                ray.shutdown()
        finally:
            stop_reaper(reaper)
    return stats


def _shared_world(ray: Any) -> Any:
    """This process's loaded worlds in Ray's object store (one copy for all the actors:
    they unpickle it instead of building the world again), or None when they do not
    pickle (the actors then build their own).
    """
    try:
        return ray.put(world_snapshot())
    except Exception:  # noqa: BLE001 - an optimisation only
        return None


class _RayWorker(_ChunkRunner):
    """A Ray actor holding one :class:`EpisodeWorker` (built once, in ``__init__``, on
    the driver's worlds when it shipped them).
    """

    def __init__(self, spec: RunSpec, world: Any = None) -> None:
        from urban_gym.render.threads import one_thread_in_worker

        one_thread_in_worker()  # the actors use the cores already
        super().__init__(spec, world)


def format_parallel(p: dict[str, Any]) -> str:
    """One line on a parallel run (:meth:`ParallelStats.to_dict`): start-up apart from
    the episodes' CPU time (``urban-gym eval`` prints it).
    """
    ws = p["workers"]
    init = f"ray.init {p['init_s']:.1f} s, " if p.get("init_s") else ""
    ready = p.get("ready_s") or 0.0
    cpu = sum(w["cpu_s"] - w["setup_cpu_s"] for w in ws)
    return (
        f"{p['backend']}: {init}{len(ws)} workers ready after {ready:.1f} s (world and env "
        f"built once each), then {p.get('episodes_s') or 0.0:.1f} s of episodes; "
        f"{cpu:.1f} CPU s of episodes in the workers"
    )


__all__ = [
    "ParallelStats",
    "format_parallel",
    "WorkerStats",
    "chunk_size",
    "chunks",
    "run_local",
    "run_parallel",
    "run_ray",
]
