"""One runner for every family and every agent: episodes -> records and traces.

:func:`run` is what ``urban-gym eval`` calls: it builds the env, selects the tasks, works
out the episode keys (task id, seed, repeat), writes or checks the manifest, skips the keys
already recorded (resume), and hands the rest to a backend (:mod:`urban_gym.eval.backends`:
in this process, local worker processes, or Ray). Each backend runs episodes with an
:class:`EpisodeWorker` -- one env and one agent per process, built once -- and returns the
records; this process appends them to ``episodes.jsonl`` (one writer) and shows progress.

**Seeds.** ``seeds`` is the number of repeats per task. With ``seeding="repeat"`` (the
default) repeat ``r`` of every task resets the env with seed ``base + r``; with
``seeding="task"`` task number ``i`` of the env's list uses ``base + i + r * n_tasks`` (so
every episode of a run has its own seed -- the scheme of the families' ``*-eval`` commands). The
agent's own seed (the random agent's generator) is ``seed * 100003 + i`` under ``repeat``
and ``seed`` under ``task``. Both are in the record.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

from urban_gym.eval.backends import run_parallel
from urban_gym.eval.judging import public_options
from urban_gym.eval.records import (
    QUARANTINE,
    RunDir,
    comparable,
    record_key,
    sha256_file,
    sha256_json,
)
from urban_gym.eval.runlock import RunLock
from urban_gym.eval.worker import EpisodeKey, EpisodeWorker, RunSpec, freeze_heap, make_env
from urban_gym.redact import redact_argv

SEEDINGS: tuple[str, ...] = ("repeat", "task")


def episode_keys(
    tasks: Sequence[Any],
    task_ids: Sequence[str] | None = None,
    seeds: int = 1,
    seed: int = 0,
    seeding: str = "repeat",
) -> list[EpisodeKey]:
    """The episodes of a run, repeat by repeat, tasks in the env's order (see the module
    docstring for the seeds).
    """
    from urban_gym.errors import InputError

    if seeding not in SEEDINGS:
        raise InputError(f"seeding={seeding!r} is not one of {', '.join(SEEDINGS)}")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise InputError(f"seeds={seeds!r} must be a positive integer (repeats per task)")
    index = {t.id: i for i, t in enumerate(tasks)}
    if task_ids is None:
        chosen = [t.id for t in tasks]
    else:
        unknown = [t for t in task_ids if t not in index]
        if unknown:
            raise InputError(
                f"task ids {unknown[:5]}{' ...' if len(unknown) > 5 else ''} are not among the "
                f"env's {len(tasks)} tasks"
            )
        chosen = list(dict.fromkeys(task_ids))
        chosen.sort(key=index.__getitem__)
    n = len(tasks)
    out = []
    for r in range(seeds):
        for tid in chosen:
            i = index[tid]
            if seeding == "repeat":
                s = seed + r
                agent_seed = s * 100003 + i
            else:
                s = seed + i + r * n
                agent_seed = s
            out.append(EpisodeKey(tid, s, r, i, agent_seed))
    return out


# --------------------------------------------------------------------------- manifest
def suite_file(env: gym.Env, suite: Any) -> Path | None:
    """The suite file an env's tasks came from (None: tasks given inline or generated)."""
    u: Any = env.unwrapped  # an UrbanEnv
    fam = u.task_family
    if isinstance(suite, (str, os.PathLike)) and Path(suite).is_file():
        return Path(suite)
    if isinstance(suite, str) and suite in fam.DEFAULT_SUITES:
        return Path(fam.DEFAULT_SUITES[suite])
    if suite in (None, "default"):
        # the committed suite of the tasks' one city (``city=``), else of the env's world
        cities = {str(t.city) for t in getattr(u, "tasks", None) or ()}
        city = cities.pop() if len(cities) == 1 else None
        city = city or getattr(u, "city_spec", None) or getattr(u, "_city_spec", None)
        for name in (city, *fam.DEFAULT_SUITES):
            if name in fam.DEFAULT_SUITES and Path(fam.DEFAULT_SUITES[name]).is_file():
                return Path(fam.DEFAULT_SUITES[name])
    return None


def git_state() -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the git checkout urban_gym is imported from, or None."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(dirty)}


def build_manifest(
    spec: RunSpec,
    env: gym.Env,
    agent: Any,
    keys: Sequence[EpisodeKey],
    seeds: int,
    seed: int,
    seeding: str,
    task_filter: Mapping[str, Any],
) -> dict[str, Any]:
    """The manifest of a run (see :mod:`urban_gym.eval.records`)."""
    from urban_gym import __version__
    from urban_gym.baselines.agents import agent_kind
    from urban_gym.eval.judging import judge_setting

    core: Any = env.unwrapped  # an UrbanEnv
    tasks = core.tasks
    chosen = sorted({k.task_id for k in keys})
    config = stable_config(agent.config())
    describe_face = getattr(agent, "describe_face", None)
    if callable(describe_face):  # an agent with a model face: what its model sees
        config["face"] = describe_face(env)
    effective = dict(getattr(getattr(env, "spec", None), "kwargs", None) or {})
    suite = spec.env_kwargs.get("suite", effective.get("suite"))
    path = suite_file(env, suite)
    return {
        "format": 1,
        "urban_gym_version": __version__,
        "git": git_state(),
        "created": _now(),
        "env_id": spec.env_id,
        "env_kwargs": spec.env_kwargs,
        "family": core.family,
        "suite": {
            "spec": suite if not isinstance(suite, os.PathLike) else str(suite),
            "path": str(path) if path is not None else None,
            "sha256": sha256_file(path) if path is not None else None,
        },
        "tasks": {
            "count": len(chosen),
            "sha256": sha256_json([t.to_dict() for t in tasks if t.id in set(chosen)]),
            "filter": dict(task_filter),
        },
        "agent": {
            "spec": spec.agent,
            "kind": agent_kind(spec.agent),
            "options": public_options(spec.agent_options),
            "config": config,
        },
        "judge": judge_setting(spec.judge),
        "seeds": seeds,
        "seed": seed,
        "seeding": seeding,
        "episodes": len(keys),
    }


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def stable_config(config: Any) -> Any:
    """An agent's ``config()`` as the manifest keeps it: strict JSON, with an object that
    JSON does not hold written as its ``repr`` less its memory address (``<Foo object>``),
    so that the same agent gives the same manifest in every process (and resumes).
    """
    from urban_gym.strict_json import json_safe

    def clean(v: Any) -> Any:
        if isinstance(v, str):
            return _ADDRESS.sub("", v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return clean(json_safe(config))


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- run
@dataclass
class RunResult:
    """What :func:`run` did: the run folder, episodes recorded now and before, successes,
    tokens, and the seconds the episodes took (``wall_s``; ``cpu_s``: this process's CPU
    time, without the set-up); ``parallel``: what a parallel backend measured
    (:class:`~urban_gym.eval.backends.ParallelStats`: ``ray.init`` time, each worker's
    set-up and CPU time), None in one process.
    """

    run_dir: Path
    total: int
    done_before: int
    ran: int
    successes: int
    tokens: int
    wall_s: float
    errors: int
    cpu_s: float
    records: list[dict[str, Any]]
    parallel: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready values (without the records)."""
        d = asdict(self)
        d["run_dir"] = str(self.run_dir)
        d.pop("records")
        return d


def run(
    env_id: str,
    out: str | os.PathLike,
    agent: str = "oracle",
    agent_options: Mapping[str, Any] | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    task_ids: Sequence[str] | None = None,
    seeds: int = 1,
    seed: int = 0,
    seeding: str = "repeat",
    workers: int = 1,
    backend: str = "local",
    address: str | None = None,
    force: bool = False,
    track_visibility: bool = True,
    judge: Mapping[str, Any] | None = None,
    progress: bool | Callable[[dict[str, Any]], None] = True,
    command: Sequence[str] | None = None,
    max_episodes: int | None = None,
    episode_deadline_s: float | None = None,
) -> RunResult:
    """Run (or resume) an evaluation; see the module docstring.

    Args:
        env_id: a registered id.
        out: the run folder.
        agent: agent spec (``oracle``, ``random``, ``lmm``, ``sb3:PATH``, ``module:Class``).
        agent_options: keyword arguments of the agent (e.g. the lmm client settings).
        env_kwargs: ``gym.make`` keyword arguments (``suite``, ``task_types``,
            ``difficulties`` select the tasks). For the ``lmm`` agent the family's
            language-model views fill in what they leave unset
            (:func:`urban_gym.wrappers.lmm_env_kwargs`).
        task_ids: only these tasks (default: all the env's tasks).
        seeds: repeats per task.
        seed: the base seed.
        seeding: ``repeat`` or ``task`` (see the module docstring).
        workers: episodes in parallel.
        backend: ``local`` (processes) or ``ray``.
        address: Ray: an existing cluster (default: a local ``ray.init()``).
        force: a folder holding a different run is moved aside instead of refused.
        track_visibility: record ``goal_visible`` per step (``info``; default True).
        judge: settings of a language-model answer judge (None: deterministic).
        progress: show a progress bar (True), or call ``progress(status)`` per episode.
        command: the command line, for the manifest.
        max_episodes: stop after this many new episodes (the rest stays for a resume).
        episode_deadline_s: each episode's wall-clock deadline in seconds (None: none): an
            agent still acting then ends its episode as ``episode_deadline``.
    """
    from urban_gym.baselines.agents import agent_kind, load_agent
    from urban_gym.errors import InputError

    if backend not in ("local", "ray"):
        raise InputError(f"backend={backend!r} must be 'local' or 'ray'")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"workers={workers!r} must be a positive integer")
    kwargs = dict(env_kwargs or {})
    if agent_kind(agent) == "lmm":  # the language-model face: views sized for a model
        from urban_gym.wrappers.stacks import lmm_env_kwargs

        kwargs = lmm_env_kwargs(env_id, kwargs)
    if track_visibility:
        kwargs["track_visibility"] = True
    run_dir = RunDir(out)
    created = not run_dir.path.exists()
    try:
        # the lock first: a second run on this folder is refused before it builds anything
        with RunLock(run_dir.path) as lock:  # one writer per run folder
            if lock.taken_over:
                print(
                    f"{run_dir.path}: took over the lock of process {lock.taken_over.get('pid')}, "
                    "which is gone",
                    file=sys.stderr,
                )
            spec = RunSpec(
                env_id=env_id,
                env_kwargs=kwargs,
                agent=agent,
                agent_options=dict(agent_options or {}),
                run_dir=str(run_dir.path),
                judge=dict(judge) if judge else None,
                episode_deadline_s=episode_deadline_s,
            )
            env = make_env(spec)
            the_agent = load_agent(spec.agent, spec.agent_options)
            core: Any = env.unwrapped  # an UrbanEnv
            keys = episode_keys(core.tasks, task_ids, seeds, seed, seeding)
            task_filter = {
                "task_types": kwargs.get("task_types"),
                "difficulties": kwargs.get("difficulties"),
                "task_ids": list(task_ids) if task_ids is not None else None,
            }
            manifest = build_manifest(spec, env, the_agent, keys, seeds, seed, seeding, task_filter)
            invocation = {
                "started": _now(),
                "command": redact_argv(command),  # credentials replaced
                "backend": backend,
                "workers": workers,
                "address": address,
                "urban_gym_version": manifest["urban_gym_version"],
                "git": manifest["git"],
                "python": platform.python_version(),
                "host": platform.node(),
            }
            run_dir.start(manifest, invocation, force=force)
            done = {record_key(r) for r in run_dir.read_episodes(repair=True)}
            _say_quarantined(run_dir)
            todo = [k for k in keys if k.key not in done]
            if max_episodes is not None:
                todo = todo[: max(0, int(max_episodes))]
            status = _Status(len(keys), len(keys) - len([k for k in keys if k.key not in done]))
            bar = _progress_bar(status, len(todo)) if progress is True else None
            records: list[dict[str, Any]] = []

            def sink(record: dict[str, Any]) -> None:
                run_dir.append(record)
                records.append(record)
                status.add(record)
                if bar is not None:
                    bar.update(status)
                elif callable(progress):
                    progress(status.to_dict())

            t0, c0 = time.perf_counter(), time.process_time()
            try:
                parallel = _run_episodes(
                    spec, env, the_agent, todo, workers, backend, address, sink
                )
            finally:
                run_dir.close()
                if bar is not None:
                    bar.close()
            return RunResult(
                run_dir=run_dir.path,
                total=len(keys),
                done_before=len(keys) - len([k for k in keys if k.key not in done]),
                ran=len(records),
                successes=status.new_successes,
                tokens=status.tokens,
                wall_s=round(time.perf_counter() - t0, 3),
                errors=status.errors,
                cpu_s=round(time.process_time() - c0, 3),
                records=records,
                parallel=parallel,
            )
    except BaseException:
        if created:  # a run that failed before writing anything leaves no empty folder
            with contextlib.suppress(OSError):
                run_dir.path.rmdir()
        raise


def _run_episodes(
    spec: RunSpec,
    env: Any,
    agent: Any,
    todo: list[Any],
    workers: int,
    backend: str,
    address: str | None,
    sink: Callable[[dict[str, Any]], None],
) -> dict[str, Any] | None:
    """Run the episodes ``todo``, each record to ``sink``: in this process with ``env``
    and ``agent`` (one local worker), else on a pool (``env`` and ``agent`` closed first);
    returns the pool's account (None in this process).
    """
    if not todo:
        return None
    if workers == 1 and backend == "local":
        worker = EpisodeWorker(spec, env=env, agent=agent)
        froze = freeze_heap()  # the set-up's objects: kept to the end, not walked again
        try:
            for k in todo:
                sink(worker.run(k))
        finally:
            if froze:
                gc.unfreeze()
            worker.close()
        return None
    agent.close()
    env.close()
    return run_parallel(spec, todo, workers, backend, address, sink).to_dict()


def _say_quarantined(run_dir: RunDir) -> None:
    """One line on stderr when the resume moved lines of the records to the quarantine."""
    q = run_dir.quarantined
    if q:
        more = f"; and {len(q) - 5} more" if len(q) > 5 else ""
        print(
            f"{run_dir.episodes_path}: moved {len(q)} unusable lines to "
            f"{run_dir.path / QUARANTINE} (their episodes run again): {'; '.join(q[:5])}{more}",
            file=sys.stderr,
        )


class _Status:
    def __init__(self, total: int, done: int) -> None:
        self.total, self.done = total, done
        self.new = self.new_successes = self.tokens = self.errors = 0

    def add(self, record: Mapping[str, Any]) -> None:
        self.done += 1
        self.new += 1
        self.new_successes += int(bool(record.get("is_success")))
        self.tokens += int((record.get("tokens") or {}).get("total_tokens", 0) or 0)
        self.errors += int(record.get("error") is not None)

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


class _progress_bar:  # noqa: N801 - used like a function
    """tqdm on stderr: episodes with ETA, successes and tokens so far."""

    def __init__(self, status: _Status, todo: int) -> None:
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm is in the eval extra
            self.bar = None
            return
        self.bar = tqdm(total=todo, desc="episodes", unit="ep", file=sys.stderr, smoothing=0.1)
        self._last = 0.0

    def update(self, status: _Status) -> None:
        if self.bar is None:
            return
        self.bar.update(1)
        now = time.monotonic()
        if now - self._last > 0.5 or status.new == self.bar.total:
            self._last = now
            rate = status.new_successes / status.new if status.new else 0.0
            self.bar.set_postfix(
                success=f"{status.new_successes}/{status.new} ({100 * rate:.0f}%)",
                tokens=status.tokens,
                errors=status.errors,
                refresh=False,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


__all__ = [
    "SEEDINGS",
    "EpisodeKey",
    "EpisodeWorker",
    "RunResult",
    "RunSpec",
    "build_manifest",
    "comparable",
    "episode_keys",
    "git_state",
    "make_env",
    "run",
    "suite_file",
]
