"""What one process needs to run episodes: the episode key, the run spec and the
:class:`EpisodeWorker` (one env and one agent per process, built once). The runner
(:mod:`urban_gym.eval.runner`) and the parallel backends (:mod:`urban_gym.eval.backends`)
both build on it.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from urban_gym.eval.records import EpisodeKey, RunDir
from urban_gym.eval.trace import TraceRecorder, run_episode, task_summary
from urban_gym.eval.tracefile import EpisodeTrace


@dataclass
class RunSpec:
    """Everything a worker process needs to run episodes (picklable, JSON-like).

    Attributes:
        env_id: registered id.
        env_kwargs: ``gym.make`` keyword arguments (``track_visibility`` included).
        agent: agent spec (:func:`urban_gym.baselines.agents.load_agent`).
        agent_options: keyword arguments of the agent's class.
        run_dir: the run folder (traces are written there by the workers).
        judge: settings of a language-model answer judge (None or ``{"kind": "rules"}``:
            the deterministic one).
        episode_deadline_s: each episode's wall-clock deadline (None: none; see
            :func:`~urban_gym.eval.trace.run_episode`).
    """

    env_id: str
    env_kwargs: dict[str, Any]
    agent: str
    agent_options: dict[str, Any] = field(default_factory=dict)
    run_dir: str = ""
    judge: dict[str, Any] | None = None
    episode_deadline_s: float | None = None


def make_env(spec: RunSpec, render_mode: str | None = None) -> gym.Env:
    """The core env of a run (with its language-model judge, when the spec names one)."""
    import urban_gym  # noqa: F401  (registers the ids)

    kwargs = dict(spec.env_kwargs)
    if spec.judge and spec.judge.get("kind", "lmm") != "rules":
        from urban_gym.baselines.lmm.judge import make_judge

        kwargs["answer_judge"] = make_judge(spec.judge)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    try:
        return gym.make(spec.env_id, **kwargs)
    except TypeError as exc:
        from urban_gym.errors import InputError

        raise InputError(
            f"{spec.env_id} does not take the kwargs {sorted(spec.env_kwargs)} ({exc})"
        ) from exc


#: The in-process memos of loaded worlds (module, attribute) that :func:`world_snapshot`
#: hands to worker processes that do not start as a fork of this one (Ray actors): the
#: cities (procedural ones take seconds to build), then each family's own
#: (:meth:`~urban_gym.tasks.families.Family.world_memos`).
WORLD_MEMOS: tuple[tuple[str, str], ...] = (("urban_gym.world.loader", "_MEMO"),)


def world_memos() -> list[tuple[str, str]]:
    """:data:`WORLD_MEMOS` and the registered families' memos."""
    from urban_gym.tasks.families import FAMILIES

    out = list(WORLD_MEMOS)
    for fam in FAMILIES.values():
        out += [m for m in fam.world_memos() if m not in out]
    return out


def world_snapshot() -> list[tuple[str, str, list[tuple[Any, Any]]]]:
    """The cities and street graphs loaded in this process, for :func:`restore_world` in
    another one: unpickling a procedural city takes a fraction of the time generating it
    does (Ray actors start from a fresh interpreter, not a fork).
    """
    import importlib

    out = []
    for module, attr in world_memos():
        memo = getattr(importlib.import_module(module), attr)
        entries = [(k, memo.get(k)) for k in memo.keys()]
        out.append((module, attr, [(k, v) for k, v in entries if v is not None]))
    return out


def restore_world(snapshot: Sequence[tuple[str, str, Sequence[tuple[Any, Any]]]]) -> None:
    """Put the entries of a :func:`world_snapshot` into this process's memos."""
    import importlib

    for module, attr, entries in snapshot:
        memo = getattr(importlib.import_module(module), attr)
        for k, v in entries:
            if memo.get(k) is None:
                memo.put(k, v)


def freeze_heap() -> bool:
    """Move every object alive now -- the world, the env and the agent, built once and
    kept to the end of the run -- to the garbage collector's permanent generation, so that
    its full passes during the episodes walk only what the episodes made: a full pass
    over a loaded city walks a few hundred thousand objects (about 0.1 s), and the records
    a run keeps bring one on every few hundred episodes. Returns whether it froze (not
    when objects are frozen already, by someone else: that is left as it is);
    ``gc.unfreeze()`` gives them back.
    """
    if gc.get_freeze_count():
        return False
    gc.freeze()
    return True


#: ``prctl``'s option that asks for a signal when the parent dies (Linux).
PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int, poll_s: float = 1.0) -> bool:
    """Make this worker process end when its parent (process id ``parent``) dies --
    ``kill -9`` included, which gives the parent no chance to stop its workers: on Linux
    the kernel sends this process ``SIGKILL`` then (``prctl(PR_SET_PDEATHSIG)``); on every
    system a daemon thread checks every ``poll_s`` seconds that the parent is still this
    process's parent and ends the process when it is not. A parent gone already ends it
    at once. Returns whether the kernel's signal was set.
    """
    import signal

    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:  # died before the signal was asked for
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="urban-gym-parent-watch", daemon=True).start()
    return armed


class EpisodeWorker:
    """One env and one agent, built once; :meth:`run` runs one episode, writes its trace
    and returns its record.
    """

    def __init__(self, spec: RunSpec, env: gym.Env | None = None, agent: Any = None) -> None:
        from urban_gym.baselines.agents import load_agent

        self.spec = spec
        self.run_dir = RunDir(spec.run_dir)
        self.core = env if env is not None else make_env(spec)
        self.agent = agent if agent is not None else load_agent(spec.agent, spec.agent_options)
        recorder = TraceRecorder(self.core)
        self.face = self.agent.wrap(recorder)
        # an agent acting on the core env needs no recorder: its actions are the core's
        self.recorder: TraceRecorder | None = recorder
        if self.face is recorder:
            self.face, self.recorder = self.core, None
        core: Any = self.core.unwrapped  # an UrbanEnv
        self.tasks = {t.id: t for t in core.tasks}
        self._summaries: dict[str, dict[str, Any]] = {}

    def _episode(self, key: EpisodeKey) -> tuple[dict[str, Any], EpisodeTrace]:
        task = self.tasks[key.task_id]
        summary = self._summaries.get(key.task_id)
        if summary is None:
            summary = self._summaries[key.task_id] = task_summary(task)
        return run_episode(
            self.face,
            self.agent,
            key,
            task=task,
            recorder=self.recorder,
            summary=summary,
            deadline_s=self.spec.episode_deadline_s,
        )

    def run(self, key: EpisodeKey) -> dict[str, Any]:
        """Run the episode of ``key``; returns its record (its trace is on disk, in this
        worker's part file).
        """
        record, trace = self._episode(key)
        record["trace"] = self.run_dir.write_trace(record["key"], trace, small_ints=True)
        return record

    def run_many(self, keys: Sequence[EpisodeKey]) -> list[dict[str, Any]]:
        """Run the episodes of ``keys`` in order; returns their records."""
        return [self.run(k) for k in keys]

    def close(self) -> None:
        """Close the trace part file, the agent, then the env."""
        try:
            self.run_dir.close()
            self.agent.close()
        finally:
            self.core.close()


# --------------------------------------------------------------------------- keys
