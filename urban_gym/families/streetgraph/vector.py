"""StreetGraph's native batched vector env, what ``gymnasium.make_vec`` returns for its ids:
:class:`StreetGraphVectorEnv`.

With symbolic observations (``observation="symbolic"``, or ``"auto"`` where no images can
be drawn), no goal mode, no ``track_visibility`` and tasks of one graph from a fixed list,
it runs the N episodes as arrays (:mod:`urban_gym.families.streetgraph.batch`): one
compiled call steps all N (:func:`~urban_gym.families.streetgraph.batch_kernel.step_envs`),
the observations are written straight into the batch arrays and ``info`` is built as
arrays. An episode's end goes through its env object: the row's state is written back
into it and the env's own code gives the metrics, the final info, the final observation
and the next reset, so they are those of a single env. The observations, rewards, ends
and infos equal those of N single envs with the same seeds
(``tests/families/streetgraph/test_vector.py``).

Anything else runs the per-env path of
:class:`~urban_gym.envs.vector.NativeVectorEnv`: image observations, ``goal=`` modes,
``track_visibility=True``, on-the-fly procedural suites, tasks on several graphs, a reset
with ``options={"task": ...}`` on another graph (from then on), and a step whose actions
are not one integer array of shape ``(N,)`` (that step alone).

:attr:`StreetGraphVectorEnv.envs` is the list of the N env objects; taking one out of it
(by index, slice or iteration -- ``call``, ``get_attr``, ``set_attr`` and ``render`` take
them all) first writes its row into it, when the row changed since it was last written,
and the next batched call reads the objects taken out again, so what is done through them
holds. Reading ``venv.envs`` alone writes nothing, and a loop that looks at one env a
step writes back that one. An env object kept from before a step is not brought up to
date by the step: take it out of ``venv.envs`` again.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any, SupportsIndex

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from urban_gym.envs.vector import NativeVectorEnv, batch_infos
from urban_gym.families.streetgraph import batch_kernel as K
from urban_gym.families.streetgraph.batch import BatchEpisodes, batchable
from urban_gym.families.streetgraph.batch_info import row_infos
from urban_gym.families.streetgraph.dynamics import distance_cache
from urban_gym.families.streetgraph.env import StreetGraphEnv

#: The goal distances of every vector env's episodes in this process (they depend on the
#: graph and the goal only).
_DISTANCES = distance_cache()

#: end code -> termination reason (a stop's reason depends on where it stopped)
_ENDS = {
    K.ARRIVED: "arrived",
    K.TRANSITION_LIMIT: "transition_limit",
    K.DECISION_LIMIT: "decision_limit",
}


class StreetGraphVectorEnv(NativeVectorEnv):
    """N StreetGraph episodes stepped in one call: batched as arrays where the batch
    reproduces the env (see the module docstring), else its observations drawn on a pool
    of threads (:class:`~urban_gym.envs.vector.NativeVectorEnv`; its arguments, then those
    of :class:`StreetGraphEnv`).

    Attributes:
        batched_reason: "" when the episodes run as arrays, else why they do not.
    """

    env_class = StreetGraphEnv

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        self._batch: BatchEpisodes | None = None
        self._lazy: tuple[dict[str, Any], dict[int, dict[str, Any]]] | None = None
        super().__init__(num_envs, **kwargs)
        envs = self._env_list
        first = envs[0]
        for env in envs:  # a goal's distances, a node's options, a task's start: once for all
            env._dist_cache = _DISTANCES
            env._node_caches = first._node_caches
            # the N envs have the same tasks (equal kwargs): one list, so what is
            # remembered per task object holds for all of them
            env.tasks = first.tasks
            env._task_keys = first._task_keys
            env._starts = first._starts
        self.batched_reason = batchable(envs[0])
        if not self.batched_reason:
            self._batch = BatchEpisodes(envs)

    # ------------------------------------------------------------------ env objects
    @property
    def envs(self) -> list[Any]:
        """The N env objects (an :class:`EnvList`): each holds its episode's state when
        taken out of the list (see the module docstring).
        """
        return self._rows

    @envs.setter
    def envs(self, value: list[Any]) -> None:
        self._env_list: list[Any] = list(value)  # the objects, for the batch's own use
        self._rows = EnvList(self._env_list, self._hand_out)
        n = len(self._env_list)
        #: rows whose env objects hold their state (the others changed since written)
        self._synced: set[int] = set(range(n))
        #: env objects handed out since the batch last read them
        self._handed: set[int] = set(range(n))

    def _hand_out(self, i: int, replaced: bool = False) -> None:
        """Env object ``i`` is taken out of :attr:`envs` (or ``replaced`` by another):
        write its row into it if the row changed since (not into a replacement), and read
        it again before the next batched call.
        """
        b = self._batch
        if b is None:
            return
        if not replaced and i not in self._synced:
            b.store(i, self._env_list[i])
        self._synced.add(i)
        self._handed.add(i)

    def _fresh(self) -> BatchEpisodes | None:
        """The batch, after reading again the env objects handed out (or None, also when
        what was done through them leaves the batch's reach).
        """
        b = self._batch
        if b is None or not self._handed:
            return b
        rows = sorted(self._handed)
        envs = self._env_list
        for i in rows:
            env = envs[i]
            if batchable(env) or (hasattr(env, "trajectory") and not b.fits(env)):
                self._leave_batch(batchable(env) or "an episode on another graph")
                return None
        self._handed.clear()
        for i in rows:
            env = envs[i]
            if hasattr(env, "trajectory"):
                b.load(i, env)
            else:
                b.done[i] = True
        return b

    def _leave_batch(self, reason: str) -> None:
        """Go on with the per-env path for good (the env objects hold the state)."""
        b = self._batch
        if b is not None:
            for i in range(self.num_envs):
                if i not in self._synced:
                    b.store(i, self._env_list[i])
            self._synced = set(range(self.num_envs))
        self._batch = None
        self.batched_reason = reason

    @property
    def last_infos(self) -> list[dict[str, Any] | None]:
        """Each env's own ``info`` dict of the last call (see
        :class:`~urban_gym.envs.vector.NativeVectorEnv`); of a batched call, made when
        first read, each env's dict filled from the batch's arrays when it is first used
        (:func:`~urban_gym.families.streetgraph.batch_info.row_infos`).
        """
        if self._lazy is not None:
            batch, whole = self._lazy
            self._last = row_infos(batch, whole, self.num_envs)
            self._lazy = None
        return self._last

    @last_infos.setter
    def last_infos(self, value: list[dict[str, Any] | None]) -> None:
        self._last = value
        self._lazy = None

    # ------------------------------------------------------------------ reset / step
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs or those of ``options["reset_mask"]`` (see
        :meth:`NativeVectorEnv.reset <urban_gym.envs.vector.NativeVectorEnv.reset>`).
        """
        b = self._fresh()
        if b is not None and options and "task" in options and not _same_graph(b, options):
            self._leave_batch("a reset with a task on another graph")
            b = None
        if b is None:
            return super().reset(seed=seed, options=options)
        seeds, opts, chosen = self._reset_plan(seed, options)
        envs = self._env_list
        for i in chosen:
            envs[i]._reset_core(seeds[i], opts or None)
            b.load(i, envs[i])
        rows = np.zeros(self.num_envs, np.bool_)
        rows[chosen] = True
        self._synced.update(chosen)  # the env objects hold the new episodes
        self._autoreset[rows] = False
        b.observe(self._obs)
        info = b.info(rows)
        self._lazy = (info, {})
        return self._observations(), info

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One step of every env: batched (see the module docstring) or per env."""
        b = self._fresh()
        acts = np.asarray(actions) if b is not None else None
        if (
            b is None
            or acts is None
            or acts.shape != (self.num_envs,)
            or acts.dtype.kind not in "iu"
        ):
            return super().step(actions)
        n = self.num_envs
        envs = self._env_list
        next_step = self.autoreset_mode == AutoresetMode.NEXT_STEP
        restart = self._autoreset if next_step else np.zeros(n, np.bool_)
        active = ~restart
        if (b.done & active).any():
            raise gym.error.ResetNeeded(
                f"{self.env_class.__name__}.step() called before reset() or after the episode "
                "ended; call reset()"
            )
        b.step(acts, active)
        reward = b.reward.copy()
        end = b.end
        ended = end != K.RUNNING
        terminated = (end == K.ARRIVED) | (end == K.STOPPED)
        truncated = ended & ~terminated
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        final: list[dict[str, Any] | None] = [None] * n
        closing: list[dict[str, Any] | None] = [None] * n
        whole: dict[int, dict[str, Any]] = {}
        ends = np.flatnonzero(ended).tolist()
        for i in ends:
            env = envs[i]
            b.store(i, env)
            code = int(end[i])
            if code == K.STOPPED:
                reason = "arrived" if env._instruction_success() else "terminated_by_agent"
            else:
                reason = _ENDS[code]
            info = env._info(env.last_action_error) if same_step else {}
            reward[i] += env._end_episode(info, reason, bool(b.valid[i]))
            b.done[i] = True
            if same_step:
                final[i] = {"final_obs": env._observation(), "final_info": info}
                whole[i] = info
            else:
                closing[i] = info
        restarted = ends if same_step else np.flatnonzero(restart).tolist()
        for i in restarted:
            envs[i]._reset_core(None, None)
            b.load(i, envs[i])
        # the rows stepped and not ended (an ended one was written back) are ahead of
        # their env objects
        self._synced = {*ends, *restarted}
        b.observe(self._obs)
        batch = b.info()
        if not same_step and ended.any():
            batch.update(batch_infos(closing, n))
        if same_step and ended.any():
            batch.update(batch_infos(final, n))
        self._autoreset = ended
        self._lazy = (batch, whole)
        return self._observations(), reward, terminated, truncated, batch

    # ------------------------------------------------------------------ masks
    def action_masks(self) -> np.ndarray:
        """The valid entries of every env's action table now: ``(N, n)`` booleans."""
        b = self._fresh()
        if b is None:
            return super().action_masks()
        return b.masks()


class EnvList(list):
    """The env objects of a :class:`StreetGraphVectorEnv`: a list whose items are
    brought up to date (``hand_out(i)``) as they are taken out -- by index, slice or
    iteration; setting an item replaces that env object (``hand_out(i, True)``: the
    batch reads it before its next call).
    """

    def __init__(self, envs: list[Any], hand_out: Callable[[int, bool], None]) -> None:
        super().__init__(envs)
        self._objects = envs
        self._hand_out = hand_out

    def __getitem__(self, i: SupportsIndex | slice) -> Any:
        if isinstance(i, slice):
            for k in range(len(self))[i]:
                self._hand_out(k, False)
            return super().__getitem__(i)  # a plain list
        env = super().__getitem__(i)  # IndexError first
        k = operator.index(i)
        self._hand_out(k + len(self) if k < 0 else k, False)
        return env

    def __iter__(self) -> Iterator[Any]:
        for k in range(len(self)):
            self._hand_out(k, False)
            yield super().__getitem__(k)

    def __reversed__(self) -> Iterator[Any]:
        for k in reversed(range(len(self))):
            self._hand_out(k, False)
            yield super().__getitem__(k)

    def __setitem__(self, i: Any, value: Any) -> None:
        super().__setitem__(i, value)
        self._objects[i] = value
        for k in range(len(self))[i] if isinstance(i, slice) else [operator.index(i)]:
            self._hand_out(k + len(self) if k < 0 else k, True)

    def copy(self) -> list[Any]:
        """A plain list of the env objects, each brought up to date."""
        return list(self)


def _same_graph(b: BatchEpisodes, options: dict[str, Any]) -> bool:
    """Whether the task of ``options["task"]`` is on the batch's graph (False when it is
    not a well-formed task: the per-env path reports it).
    """
    from urban_gym.families.streetgraph.tasks import graph_spec
    from urban_gym.families.streetgraph.world import graph_key
    from urban_gym.tasks.spec import TaskSpec

    try:
        t = options["task"]
        t = t if isinstance(t, TaskSpec) else TaskSpec.from_dict(t)
        return graph_key(graph_spec(t)) == b.key
    except Exception:
        return False


__all__ = ["EnvList", "StreetGraphVectorEnv"]
