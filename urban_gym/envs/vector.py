"""The native batched vector env: :class:`NativeVectorEnv`, N episodes of one family in
one process, stepped by one call.

A family's subclass names its env class (:attr:`NativeVectorEnv.env_class`) and is
registered as the ``vector_entry_point`` of the family's ids, so
``gymnasium.make_vec(id, num_envs=N, **kwargs)`` returns it (``vectorization_mode="sync"``
or ``"async"`` still build Gymnasium's own vector envs). One ``step``

1. carries out the N actions in order, each env's state half of a step
   (:meth:`UrbanEnv._step_core <urban_gym.envs.base.UrbanEnv._step_core>`) or, for an env
   whose episode ended on the step before, its reset (Gymnasium's ``next_step`` autoreset,
   the default of Gymnasium 1.4's ``SyncVectorEnv``; ``autoreset_mode="same_step"`` resets
   in the step that ended the episode, as stable-baselines3 expects);
2. draws the N observations on a pool of threads, the calling thread among them, each
   taking the next env when it is free (the frames' costs differ: a fixed split would leave
   a thread idle at the end): the renderers' compiled kernels release the GIL (numba
   ``nogil=True``, OpenCV), so frames of different envs are drawn on different cores at
   once, each env writing its observation into its row of the preallocated batch arrays
   (how many threads: by default the faster of 1 and the cores, measured on the first
   batches -- :class:`ThreadChoice`);
3. builds the batch's ``info`` once, as arrays (:func:`batch_infos`: every key an array
   over the envs and ``_key`` the mask of the envs that have it -- Gymnasium's layout).

The observations, rewards, ends and infos equal those of N single envs with the same seeds
stepped one by one (``tests/envs/test_vector.py``). ``action_masks()`` returns the N masks
as one ``(N, n)`` boolean array (sb3-contrib's ``MaskablePPO``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, iterate

from urban_gym.envs.batching import (
    ARRAY_SPACES,
    AUTORESET_MODES,
    _batch,
    _buffer,
    _is_int,
    _write,
    batch_infos,
    reset_plan,
)
from urban_gym.envs.batching import autoreset_mode as autoreset_mode_of
from urban_gym.errors import InputError

#: Python's thread switch interval (s) while the pool draws (see ``NativeVectorEnv._draw``).
DRAW_SWITCH_INTERVAL_S = 2e-4


class ThreadChoice:
    """How many threads draw a batch: the one count given, or the faster of several,
    measured on the vector env's own batches.

    While choosing, after ``warmup`` batches, ``trials`` batches per candidate (of at least
    ``min_envs`` envs) are drawn alternately with each count, each timed from the start of
    its drawing to the start of the next batch's (:meth:`lap`); then the count with the
    lower median seconds per env is kept (:attr:`chosen`). Threads share the GIL: where a frame is
    mostly Python, two threads can draw slower than one, and where it is mostly compiled
    or OpenCV work, faster; which holds depends on the family, the view size and the
    machine, so it is measured rather than assumed.
    """

    def __init__(
        self, candidates: Sequence[int], trials: int = 8, min_envs: int = 2, warmup: int = 4
    ) -> None:
        self.candidates = tuple(dict.fromkeys(int(c) for c in candidates))
        self.trials = int(trials)
        self.warmup = int(warmup)  # first full batches not timed (first tasks' set-up)
        self.min_envs = int(min_envs)
        self.times: dict[int, list[float]] = {c: [] for c in self.candidates}
        #: the kept count (None while measuring)
        self.chosen: int | None = self.candidates[0] if len(self.candidates) == 1 else None
        self._turn = 0
        self._open: tuple[int, int, float] | None = None  # the batch being timed

    def now(self) -> int:
        """The thread count of the next batch."""
        if self.chosen is not None:
            return self.chosen
        return self.candidates[self._turn % len(self.candidates)]

    def lap(self, count: int, envs: int, now: float) -> None:
        """A whole batch of ``envs`` envs starts drawing on ``count`` threads at time
        ``now`` (seconds): the cycle of the batch before -- its drawing and everything
        until this one, the env steps and the caller's own work included -- is recorded
        for the count that drew it (a second thread can slow the Python around the
        drawing, so the drawing alone does not tell).
        """
        if self._open is not None:
            self.record(*self._open[:2], now - self._open[2])
        self._open = None if self.chosen is not None else (count, envs, now)

    def record(self, count: int, envs: int, seconds: float) -> None:
        """A batch of ``envs`` envs took ``seconds`` on ``count`` threads."""
        if self.chosen is not None or envs < self.min_envs:
            return
        if count not in self.times:  # fewer envs than threads: not a trial of that count
            return
        if self.warmup > 0:
            self.warmup -= 1
            return
        self.times[count].append(seconds / envs)
        self._turn += 1
        if all(len(t) >= self.trials for t in self.times.values()):
            self.chosen = min(self.candidates, key=lambda c: float(np.median(self.times[c])))

    def __repr__(self) -> str:
        state = self.chosen if self.chosen is not None else "measuring"
        return f"ThreadChoice(candidates={self.candidates}, chosen={state})"


class NativeVectorEnv(VectorEnv):
    """N episodes of one family stepped in one call, their observations drawn on a pool of
    threads (see the module docstring).

    Args:
        num_envs: N, the number of episodes run side by side (>= 1).
        threads: threads that draw the observations (1 draws them on the calling thread);
            default None: chosen by measurement (:class:`ThreadChoice`) between 1 and
            ``min(N, os.cpu_count())`` -- the drawing threads share the GIL, so more
            threads can be slower where a frame is mostly Python. The observations do not
            depend on it.
        autoreset_mode: ``"next_step"`` (default, as Gymnasium 1.4's ``SyncVectorEnv``: the
            step after an episode's end resets that env and returns its first observation,
            reward 0, not terminated/truncated), ``"same_step"`` (the step that ends an
            episode resets the env; the final observation and info are in
            ``info["final_obs"]`` / ``info["final_info"]``) or ``"disabled"`` (ended envs
            are reset with ``reset(options={"reset_mask": ...})``).
        copy: return copies of the batch arrays (default) rather than the arrays that the
            next call overwrites.
        workers: worker processes that step the envs (default 1: all in this process).
            ``workers=P`` > 1 returns a :class:`~urban_gym.envs.workers.ShardedVectorEnv`
            instead: the N envs split into P shards, each a vector env of this class in a
            process of its own (``threads`` then each worker's drawing threads, default 1;
            ``start_method`` the ``multiprocessing`` start method, default
            ``"forkserver"``), with the same interface and results.
        **env_kwargs: the arguments of each env (:attr:`env_class`), the same for all N.
    """

    #: The family's environment class (a subclass of ``UrbanEnv``); set by a subclass.
    env_class: ClassVar[type]

    def __new__(cls, num_envs: int = 1, *args: Any, workers: int = 1, **kwargs: Any) -> Any:
        """A new vector env of this class, or with ``workers=P`` > 1 a
        :class:`~urban_gym.envs.workers.ShardedVectorEnv` of P processes, each running a
        vector env of this class over its shard of the N envs.
        """
        if not _is_int(workers) or int(workers) < 1:
            raise InputError(f"workers={workers!r} must be an integer >= 1")
        if int(workers) > 1:
            from urban_gym.envs.workers import ShardedVectorEnv

            return ShardedVectorEnv(cls, num_envs, *args, workers=int(workers), **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        num_envs: int = 1,
        *,
        threads: int | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        workers: int = 1,
        **env_kwargs: Any,
    ) -> None:
        if not _is_int(num_envs) or int(num_envs) < 1:
            raise InputError(f"num_envs={num_envs!r} must be an integer >= 1")
        if threads is not None and (not _is_int(threads) or int(threads) < 1):
            raise InputError(f"threads={threads!r} must be an integer >= 1 or None")
        mode = autoreset_mode_of(autoreset_mode)
        self.num_envs = int(num_envs)
        self.autoreset_mode = mode
        self.copy = bool(copy)
        most = min(self.num_envs, os.cpu_count() or 1)
        #: how the thread count is chosen: measured (None given) or fixed
        self.thread_choice = ThreadChoice((1, most) if threads is None else (int(threads),))
        self.threads = max(self.thread_choice.candidates)  # the pool's size
        self.envs = [self.env_class(**env_kwargs) for _ in range(self.num_envs)]
        first = self.envs[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**first.metadata, "autoreset_mode": mode}
        self.render_mode = first.render_mode
        self.spec = None
        self._flat: list[tuple[str, Any]] | None = None
        self._adopt_buffers(_buffer(self.single_observation_space, self.num_envs))
        self._autoreset = np.zeros(self.num_envs, dtype=np.bool_)
        self._pool: ThreadPoolExecutor | None = None
        #: each env's own ``info`` dict of the last call (None for an env it left
        #: alone); in ``same_step`` mode an ended episode's final info.
        self.last_infos: list[dict[str, Any] | None] = [None] * self.num_envs

    def _adopt_buffers(self, buffers: Any) -> None:
        """Write the batch's observations into ``buffers`` from now on (a tree like
        :func:`_buffer`'s: e.g. views of a memory map a worker shares with its parent).
        """
        self._obs = buffers
        # the top-level entries of a Dict space, written without walking the space
        space = self.single_observation_space
        self._flat = None
        if isinstance(space, spaces.Dict) and not any(
            isinstance(s, (spaces.Dict, spaces.Tuple)) for s in space.spaces.values()
        ):
            self._flat = [(k, self._obs[k]) for k in space.spaces]

    # ------------------------------------------------------------------ drawing
    def _draw(self, indices: Sequence[int]) -> list[Any]:
        """The observations of the envs ``indices``, drawn on the pool and written into
        their rows of the batch buffers; returned in the order of ``indices``.
        """
        out: list[Any] = [None] * len(indices)
        space = self.single_observation_space
        flat = self._flat

        def draw(order: Iterator[int]) -> None:
            for j in order:  # shared by the threads: each takes the next env when free
                i = indices[j]
                obs = self.envs[i]._observation()
                if flat is None:
                    _write(space, self._obs, i, obs)
                else:
                    for k, buf in flat:
                        buf[i] = obs[k]
                out[j] = obs

        choice = self.thread_choice
        k = min(choice.now(), len(indices))
        if len(indices) == self.num_envs:  # a whole batch: time the cycle it starts
            choice.lap(k, len(indices), time.perf_counter())
        order = iter(range(len(indices)))
        if k <= 1:
            draw(order)
            return out
        from urban_gym.render.threads import call_with_opencv_threads

        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="urban_gym_draw")
        pool = self._pool

        def run() -> None:
            # envs handed out one at a time (their costs differ: a fixed split leaves a
            # thread idle at the end); the calling thread draws too
            futures = [pool.submit(draw, order) for _ in range(k - 1)]
            try:
                draw(order)
            except BaseException:
                wait(futures)  # the others stop when the envs run out; this error wins
                raise
            for f in futures:
                f.result()

        # OpenCV on one thread while the pool draws: its own threads would fight the pool.
        # A frame alternates short compiled passes (GIL released) with Python between them;
        # at Python's default 5 ms switch interval a thread coming back from a pass may wait
        # that long for the other to hand the GIL over (the convoy effect), so the interval
        # is short while the pool draws.
        before = sys.getswitchinterval()
        sys.setswitchinterval(min(before, DRAW_SWITCH_INTERVAL_S))
        try:
            call_with_opencv_threads(1, run)
        finally:
            sys.setswitchinterval(before)
        return out

    def _observations(self) -> Any:
        flat = self._flat
        if flat is not None:  # a flat Dict: its entries without walking the space
            copy = self.copy
            return {
                k: tuple(buf) if isinstance(buf, list) else buf.copy() if copy else buf
                for k, buf in flat
            }
        return _batch(self.single_observation_space, self._obs, self.copy)

    # ------------------------------------------------------------------ reset / step
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs (or those of ``options["reset_mask"]``, a boolean array of
        shape ``(N,)``); ``seed`` an int gives env ``i`` the seed ``seed + i``, a list one
        seed each; the other ``options`` go to every env's ``reset``.
        """
        seeds, options, chosen = self._reset_plan(seed, options)
        for i in chosen:
            self.envs[i]._reset_core(seeds[i], options or None)
        self._draw(chosen)
        infos: list[dict[str, Any] | None] = [None] * self.num_envs
        for i in chosen:
            infos[i] = self.envs[i]._info("")
        self._autoreset[chosen] = False
        self.last_infos = infos
        return self._observations(), batch_infos(infos, self.num_envs)

    def _reset_plan(
        self, seed: int | Sequence[int | None] | None, options: dict[str, Any] | None
    ) -> tuple[list[int | None], dict[str, Any], list[int]]:
        """:meth:`reset`'s arguments checked (:func:`~urban_gym.envs.batching.reset_plan`)."""
        return reset_plan(self.num_envs, seed, options)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One step of every env (see the module docstring for the order of its parts)."""
        n = self.num_envs
        acts = list(iterate(self.action_space, actions))
        rewards = np.zeros(n, dtype=np.float64)
        terminated = np.zeros(n, dtype=np.bool_)
        truncated = np.zeros(n, dtype=np.bool_)
        infos: list[dict[str, Any] | None] = [None] * n
        restarted: list[int] = []
        next_step = self.autoreset_mode == AutoresetMode.NEXT_STEP
        for i, env in enumerate(self.envs):
            if next_step and self._autoreset[i]:
                env._reset_core(None, None)
                restarted.append(i)
            else:
                rewards[i], terminated[i], truncated[i], infos[i] = env._step_core(acts[i])
        drawn = self._draw(range(n))
        ended = np.logical_or(terminated, truncated)
        final: list[dict[str, Any] | None] = [None] * n
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            restarted = [int(i) for i in np.flatnonzero(ended)]
            for i in restarted:
                final[i] = {"final_obs": drawn[i], "final_info": infos[i]}
                self.envs[i]._reset_core(None, None)
            self._draw(restarted)
        for i in restarted:
            infos[i] = self.envs[i]._info("")
        self.last_infos = [f["final_info"] if f else info for f, info in zip(final, infos)]
        batch = batch_infos(infos, n)
        if any(final):
            batch.update(batch_infos(final, n))
        self._autoreset = ended
        return self._observations(), rewards, terminated, truncated, batch

    # ------------------------------------------------------------------ masks and calls
    def action_masks(self) -> np.ndarray:
        """The valid entries of every env's action table now: ``(N, n)`` booleans."""
        return np.stack([env._mask() for env in self.envs]).astype(bool)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``getattr(env, name)(*args, **kwargs)`` on every env (an attribute that is not
        callable is returned as it is).
        """
        out = []
        for env in self.envs:
            value = getattr(env, name)
            out.append(value(*args, **kwargs) if callable(value) else value)
        return tuple(out)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name`` of every env."""
        return tuple(getattr(env, name) for env in self.envs)

    def set_attr(self, name: str, values: Any) -> None:
        """Set the attribute ``name`` of every env: one value for all, or a list or tuple of
        N values.
        """
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise InputError(
                f"set_attr({name!r}): {len(values)} values for num_envs={self.num_envs} envs"
            )
        for env, value in zip(self.envs, values):
            setattr(env, name, value)

    def render(self) -> tuple[Any, ...] | None:
        """Every env's ``render()`` (the frames of ``render_mode="rgb_array"``)."""
        return tuple(env.render() for env in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the drawing threads and close the envs."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        for env in self.envs:
            env.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env_class.__name__}, num_envs={self.num_envs})"


__all__ = ["ARRAY_SPACES", "AUTORESET_MODES", "NativeVectorEnv", "ThreadChoice", "batch_infos"]
