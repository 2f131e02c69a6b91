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
from gymnasium.vector.utils import batch_space, create_empty_array, iterate

from urban_gym.errors import InputError

#: Python's thread switch interval (s) while the pool draws (see ``NativeVectorEnv._draw``).
DRAW_SWITCH_INTERVAL_S = 2e-4
#: Spaces whose batch is one numpy array (any other batches as a tuple of values).
ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiBinary, spaces.MultiDiscrete)

#: ``autoreset_mode`` by name (Gymnasium's ``AutoresetMode`` values are accepted too).
AUTORESET_MODES: dict[str, AutoresetMode] = {
    **{m.name.lower(): m for m in AutoresetMode},
    **{m.value: m for m in AutoresetMode},
}


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def batch_infos(infos: Sequence[dict[str, Any] | None], n: int | None = None) -> dict[str, Any]:
    """The infos of ``n`` envs (None for an env with no info this call) as one dict of
    arrays, in the layout of Gymnasium's vector envs: ``out[key]`` an array over the envs
    (numbers of the first value's type, numpy arrays stacked, anything else an object
    array), ``out["_" + key]`` the boolean mask of the envs that gave the key, nested
    dicts batched the same way inside.
    """
    return _batch_infos(infos, len(infos) if n is None else n, {})


def _batch_infos(
    infos: Sequence[dict[str, Any] | None], n: int, masks: dict[tuple[int, ...], np.ndarray]
) -> dict[str, Any]:
    """:func:`batch_infos`, the masks of the row sets met so far in ``masks`` (the keys of
    one info share theirs: each is a copy of one array).
    """
    first_info = infos[0] if len(infos) == n else None
    if first_info:
        keys = list(first_info)  # the same keys in the same order (a list compares fast)
        if all(info is not None and list(info) == keys for info in infos):
            return _same_keys(infos, n, masks)  # type: ignore[arg-type]
    cols: dict[str, tuple[list[int], list[Any]]] = {}
    for i, info in enumerate(infos):
        if info:
            for key, value in info.items():
                col = cols.get(key)
                if col is None:
                    cols[key] = ([i], [value])
                else:
                    col[0].append(i)
                    col[1].append(value)
    out: dict[str, Any] = {}
    for key, (idx, values) in cols.items():
        first = values[0]
        if key != "final_obs" and isinstance(first, dict):
            sub: list[dict[str, Any] | None] = [None] * n
            for i, v in zip(idx, values):
                sub[i] = v if isinstance(v, dict) else None
            out[key] = _batch_infos(sub, n, masks)
        else:
            out[key] = _column(key, first, idx, values, n)
        out["_" + key] = _mask(idx, n, masks)
    return out


def _mask(idx: list[int], n: int, masks: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
    """A new boolean array over ``n`` envs, True at ``idx`` (copied from ``masks``)."""
    key = tuple(idx)
    mask = masks.get(key)
    if mask is None:
        mask = masks[key] = np.zeros(n, dtype=np.bool_)
        mask[idx] = True
    return mask.copy()


def _same_keys(
    infos: Sequence[dict[str, Any]], n: int, masks: dict[tuple[int, ...], np.ndarray]
) -> dict[str, Any]:
    """:func:`batch_infos` of ``n`` infos that all have the same keys (every step of
    envs of one family, but for the keys an episode's end adds).
    """
    out: dict[str, Any] = {}
    every = list(range(n))
    for key in infos[0]:
        values = [info[key] for info in infos]
        first = values[0]
        if key != "final_obs" and isinstance(first, dict):
            sub = [v if isinstance(v, dict) else None for v in values]
            out[key] = _batch_infos(sub, n, masks)
        else:
            out[key] = _column(key, first, every, values, n)
        out["_" + key] = _mask(every, n, masks)
    return out


def _column(key: str, first: Any, idx: list[int], values: list[Any], n: int) -> np.ndarray:
    """One info key's array over ``n`` envs: ``values`` at the rows ``idx``."""
    if key != "final_obs":
        kind = type(first)
        if kind in (int, float, bool) or isinstance(first, np.number):
            array = np.zeros(n, dtype=kind)
            try:
                if len(idx) == n:  # idx is every row, in order
                    array[:] = values
                elif len(idx) == 1:
                    array[idx[0]] = values[0]
                else:
                    array[idx] = values
                return array
            except (TypeError, ValueError):
                pass  # a mixed column: one value at a time, as Gymnasium does
        elif isinstance(first, np.ndarray):
            array = np.zeros((n, *first.shape), dtype=first.dtype)
            for i, v in zip(idx, values):
                array[i] = v
            return array
        else:
            array = np.full(n, None, dtype=object)
    else:
        array = np.full(n, None, dtype=object)
    for i, v in zip(idx, values):
        array[i] = v
    return array


def _buffer(space: spaces.Space, n: int) -> Any:
    """Preallocated batch storage for ``n`` values of ``space``: numpy arrays for the
    array spaces, a list for any other (texts).
    """
    if isinstance(space, spaces.Dict):
        return {k: _buffer(s, n) for k, s in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_buffer(s, n) for s in space.spaces)
    if isinstance(space, ARRAY_SPACES):
        return create_empty_array(space, n)
    return [None] * n


def _write(space: spaces.Space, buf: Any, i: int, value: Any) -> None:
    """Store ``value`` (one env's observation of ``space``) in row ``i`` of ``buf``."""
    if isinstance(space, spaces.Dict):
        for k, s in space.spaces.items():
            _write(s, buf[k], i, value[k])
    elif isinstance(space, spaces.Tuple):
        for s, b, v in zip(space.spaces, buf, value):
            _write(s, b, i, v)
    else:
        buf[i] = value


def _batch(space: spaces.Space, buf: Any, copy: bool) -> Any:
    """The batch observation of ``buf``: its arrays (copied with ``copy``), a tuple for
    a list (what ``gymnasium.vector.utils.concatenate`` gives for a text space).
    """
    if isinstance(space, spaces.Dict):
        return {k: _batch(s, buf[k], copy) for k, s in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_batch(s, b, copy) for s, b in zip(space.spaces, buf))
    if isinstance(buf, list):
        return tuple(buf)
    return buf.copy() if copy else buf


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
        **env_kwargs: the arguments of each env (:attr:`env_class`), the same for all N.
    """

    #: The family's environment class (a subclass of ``UrbanEnv``); set by a subclass.
    env_class: ClassVar[type]

    def __init__(
        self,
        num_envs: int = 1,
        *,
        threads: int | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        **env_kwargs: Any,
    ) -> None:
        if not _is_int(num_envs) or int(num_envs) < 1:
            raise InputError(f"num_envs={num_envs!r} must be an integer >= 1")
        if threads is not None and (not _is_int(threads) or int(threads) < 1):
            raise InputError(f"threads={threads!r} must be an integer >= 1 or None")
        mode = AUTORESET_MODES.get(autoreset_mode) if isinstance(autoreset_mode, str) else None
        if isinstance(autoreset_mode, AutoresetMode):
            mode = autoreset_mode
        if mode is None:
            valid = ", ".join(map(repr, AUTORESET_MODES))
            raise InputError(f"autoreset_mode={autoreset_mode!r} must be one of {valid}")
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
        self._obs = _buffer(self.single_observation_space, self.num_envs)
        # the top-level entries of a Dict space, written without walking the space
        space = self.single_observation_space
        self._flat: list[tuple[str, Any]] | None = None
        if isinstance(space, spaces.Dict) and not any(
            isinstance(s, (spaces.Dict, spaces.Tuple)) for s in space.spaces.values()
        ):
            self._flat = [(k, self._obs[k]) for k in space.spaces]
        self._autoreset = np.zeros(self.num_envs, dtype=np.bool_)
        self._pool: ThreadPoolExecutor | None = None
        #: each env's own ``info`` dict of the last call (None for an env it left
        #: alone); in ``same_step`` mode an ended episode's final info.
        self.last_infos: list[dict[str, Any] | None] = [None] * self.num_envs

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
        """:meth:`reset`'s arguments checked: each env's seed, the options for every env's
        ``reset`` (without ``reset_mask``) and the envs to reset.
        """
        n = self.num_envs
        seeds: list[int | None]
        if seed is None:
            seeds = [None] * n
        elif _is_int(seed):
            seeds = [int(seed) + i for i in range(n)]  # type: ignore[arg-type]
        else:
            seeds = list(seed)  # type: ignore[arg-type]
            if len(seeds) != n:
                raise InputError(f"seed list of length {len(seeds)} must have num_envs={n} seeds")
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(n, dtype=np.bool_)
        elif not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (n,)):
            raise InputError(f"options['reset_mask']={mask!r} must be a bool array of shape ({n},)")
        return seeds, options, [int(i) for i in np.flatnonzero(mask)]

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
