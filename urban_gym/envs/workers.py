"""A native vector env spread over worker processes: :class:`ShardedVectorEnv`.

The threads of a :class:`~urban_gym.envs.vector.NativeVectorEnv` share one interpreter
lock: where much of a step is Python (the env's own bookkeeping, the glue between a
frame's compiled passes) a second thread adds little. ``workers=P`` splits the N envs into
P contiguous shards, each a native vector env of its own (the family's class, with its
batched paths) in a worker process of its own, so P cores step at once:

* the observations' arrays live in one shared memory map: each worker's vector env writes
  its rows of the batch there directly (no copy, no pickling); text entries come back with
  the reply;
* one ``step`` sends each worker its slice of the actions, then gathers the replies:
  rewards, ends and the shard's ``info`` in Gymnasium's batched layout, which are joined
  row block by row block (:func:`merge_infos`);
* everything else -- ``action_masks()``, ``call``, ``get_attr``, ``set_attr``,
  ``render``, ``last_infos`` -- asks the workers and joins their answers in env order.

Env ``i`` of the batch is env ``i - offset`` of its shard and gets the seed ``seed + i``
of :meth:`ShardedVectorEnv.reset`, so the batch equals the one-process vector env's (and N
single envs') with the same seeds (``tests/envs/test_workers.py``). Workers start with
``multiprocessing``'s ``forkserver`` method by default (a fork of a process whose OpenCV or
numba pools run is not safe), each importing urban_gym and loading the world from the
world cache.

The shards step in lockstep: a batch takes as long as its slowest shard, then the parent's
join, while the other workers wait. Where an env's step costs vary a lot (a first-person
frame newly drawn against a turn in place) this eats most of what the second process brings
(``benchmarks/bench_vector.py``: 32 first-person envs at 84x84 ran 1.0-1.1x
faster on 2 workers than on one thread, on 2 cores); few envs per worker make it slower than
one process.
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import multiprocessing as mp
import os
import pickle
import tempfile
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from urban_gym.envs.batching import (
    _batch,
    _has_texts,
    _is_int,
    _layout,
    _put_texts,
    _texts,
    _views,
    reset_plan,
)
from urban_gym.envs.batching import autoreset_mode as autoreset_mode_of
from urban_gym.envs.wire import InfoDecoder, InfoEncoder
from urban_gym.errors import InputError, WorkerError

#: ``multiprocessing`` start methods a ShardedVectorEnv accepts
START_METHODS = ("forkserver", "spawn", "fork")


def shard_sizes(n: int, workers: int) -> list[int]:
    """``n`` envs over ``workers`` shards, as equal as can be, the larger first
    (``shard_sizes(10, 3) == [4, 3, 3]``).
    """
    return [n // workers + (1 if k < n % workers else 0) for k in range(workers)]


# ---------------------------------------------------------------------- infos
def _filler(value: np.ndarray, n: int) -> np.ndarray:
    """``n`` rows of an info column like ``value`` for envs that did not give the key."""
    if value.dtype == object:
        return np.full((n, *value.shape[1:]), None, dtype=object)
    return np.zeros((n, *value.shape[1:]), dtype=value.dtype)


def _join(values: list[Any]) -> Any:
    """One key's blocks joined (a copy where one block)."""
    return np.concatenate(values) if len(values) > 1 else values[0].copy()


def merge_infos(parts: Sequence[tuple[dict[str, Any], int]]) -> dict[str, Any]:
    """The batched ``info`` of consecutive shards, each ``(info, n)`` (Gymnasium's layout:
    ``info[key]`` an array over the shard's ``n`` envs, ``info["_" + key]`` the mask of
    those that gave it): every key's rows block by block, in shard order; a shard without
    the key contributes rows of zeros (None for objects) and False mask rows.
    """
    infos = [info for info, n in parts if n > 0]
    sizes = [n for _, n in parts if n > 0]
    keys = list(infos[0])
    same = all(list(info) == keys for info in infos[1:])
    if not same:  # the union of the keys, in the order first met
        keys = list(dict.fromkeys(k for info in infos for k in info))
    out: dict[str, Any] = {}
    for key in keys:
        values = [info.get(key) for info in infos]
        if key.startswith("_") and key[1:] in out:
            if not same:  # a key's mask: False rows where a shard lacks the key
                values = [np.zeros(n, np.bool_) if v is None else v for v, n in zip(values, sizes)]
            out[key] = _join(values)
            continue
        first = next(v for v in values if v is not None)
        if isinstance(first, dict) and key != "final_obs":
            out[key] = merge_infos([({} if v is None else v, n) for v, n in zip(values, sizes)])
        else:
            if not same:
                values = [_filler(first, n) if v is None else v for v, n in zip(values, sizes)]
            out[key] = _join(values)
    return out


# ---------------------------------------------------------------------- the worker
def _at(venv: Any, what: str, rows: list[int], name: str, args: tuple, kw: dict) -> Any:
    """``what`` (``"get"``, ``"set"``, ``"call"``) on the shard's envs ``rows``."""
    envs = venv.envs
    if what == "get":
        return [getattr(envs[i], name) for i in rows]
    if what == "set":
        for i in rows:
            setattr(envs[i], name, args[0])
        return None
    return [getattr(envs[i], name)(*args, **kw) for i in rows]


def _set_attr(venv: Any, name: str, values: list[Any]) -> None:
    venv.set_attr(name, values)


class _Shard:
    """A worker's state: its vector env, the batch layout and the info encoder."""

    def __init__(self, venv: Any) -> None:
        self.venv = venv
        self.layout: Any = None
        self.encoder = InfoEncoder()

    def step(self, payload: tuple) -> tuple:
        """Rewards, ends, the encoded info, the text entries and (where asked) the
        masks of the next step.
        """
        actions, want_masks = payload
        obs, rew, term, trunc, info = self.venv.step(actions)
        masks = self.venv.action_masks() if want_masks else None
        wire = self.encoder.encode(info)
        return rew, term, trunc, wire, _texts(self.layout, obs), masks

    def reset(self, payload: tuple) -> tuple:
        """The encoded info, the text entries and (where asked) the masks."""
        seeds, options, want_masks = payload
        obs, info = self.venv.reset(seed=seeds, options=options)
        masks = self.venv.action_masks() if want_masks else None
        return self.encoder.encode(info), _texts(self.layout, obs), masks


#: commands after which masks sent with the last step may be out of date
_MAY_CHANGE = frozenset({"call", "set_attr"})
#: what a worker does for each command: ``(shard, payload) -> reply``
_COMMANDS: dict[str, Callable[[_Shard, Any], Any]] = {
    "step": _Shard.step,
    "reset": _Shard.reset,
    "masks": lambda s, p: s.venv.action_masks(),
    "last_infos": lambda s, p: list(s.venv.last_infos),
    "call": lambda s, p: s.venv.call(p[0], *p[1], **p[2]),
    "get_attr": lambda s, p: s.venv.get_attr(p),
    "set_attr": lambda s, p: _set_attr(s.venv, *p),
    "at": lambda s, p: _at(s.venv, *p),
    "render": lambda s, p: s.venv.render(),
}


def _worker(conn: Connection, vector_class: type, n: int, kwargs: dict[str, Any]) -> None:
    """A worker process: its shard's native vector env, run command by command."""
    from urban_gym.render.threads import one_thread_in_worker

    one_thread_in_worker()
    mapped = None
    try:
        venv = vector_class(num_envs=n, workers=1, **kwargs)
        shard = _Shard(venv)
        ready = (venv.single_observation_space, venv.single_action_space)
        conn.send(("ok", (*ready, venv.metadata, venv.render_mode)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
        _send_error(conn, exc)
        return
    while True:
        try:
            cmd, payload = conn.recv()
        except (EOFError, KeyboardInterrupt):
            break
        try:
            if cmd == "close":
                venv.close()
                conn.send(("ok", None))
                break
            if cmd == "map":
                path, size, shard.layout, start = payload
                with open(path, "r+b") as f:
                    mapped = mmap.mmap(f.fileno(), size)
                venv._adopt_buffers(_views(shard.layout, mapped, slice(start, start + n)))
                result: Any = None
            elif cmd in _COMMANDS:
                result = _COMMANDS[cmd](shard, payload)
            else:
                raise InputError(f"unknown worker command {cmd!r}")
            conn.send(("ok", result))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
            _send_error(conn, exc)
    conn.close()


def _send_error(conn: Connection, exc: BaseException) -> None:
    """Send ``exc`` to the parent: the exception itself where it pickles, its traceback."""
    text = "".join(traceback.format_exception(exc))
    try:
        blob: bytes | None = pickle.dumps(exc)
    except Exception:  # noqa: BLE001 - an exception that does not pickle: its text only
        blob = None
    with contextlib.suppress(OSError):
        conn.send(("error", (blob, f"{type(exc).__name__}: {exc}", text)))


# ---------------------------------------------------------------------- the parent side
class ShardedVectorEnv(VectorEnv):
    """N episodes of one family on ``workers`` processes, each stepping its shard of the
    envs as a native vector env (see the module docstring); the same interface and results
    as the one-process :class:`~urban_gym.envs.vector.NativeVectorEnv`.

    What ``gymnasium.make_vec(id, num_envs=N, workers=P)`` (or the family's vector env
    class with ``workers=P``) returns for P > 1.

    Args:
        vector_class: the family's native vector env class.
        num_envs: N (>= ``workers``).
        workers: P, the worker processes (>= 2); env ``i`` runs in the shard holding it
            (:func:`shard_sizes`: contiguous blocks, the larger first).
        threads: each worker's drawing threads (default 1: the workers use the cores).
        autoreset_mode: as :class:`~urban_gym.envs.vector.NativeVectorEnv`'s.
        copy: as :class:`~urban_gym.envs.vector.NativeVectorEnv`'s.
        start_method: ``multiprocessing``'s start method of the workers (``"forkserver"``
            by default; ``"spawn"`` or ``"fork"``).
        **env_kwargs: the arguments of each env, the same for all N.
    """

    def __init__(
        self,
        vector_class: type,
        num_envs: int,
        *,
        workers: int,
        threads: int | None = 1,
        autoreset_mode: Any = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        start_method: str = "forkserver",
        **env_kwargs: Any,
    ) -> None:
        if not _is_int(num_envs) or int(num_envs) < 1:
            raise InputError(f"num_envs={num_envs!r} must be an integer >= 1")
        if not _is_int(workers) or not 2 <= int(workers) <= int(num_envs):
            raise InputError(
                f"workers={workers!r} must be an integer from 2 to num_envs={num_envs} "
                "(workers=1 steps every env in this process)"
            )
        if start_method not in START_METHODS:
            raise InputError(f"start_method={start_method!r} must be one of {START_METHODS}")
        mode = autoreset_mode_of(autoreset_mode)
        self.num_envs = int(num_envs)
        self.workers = int(workers)
        self.autoreset_mode = mode
        self.copy = bool(copy)
        self.env_class: type = getattr(vector_class, "env_class")  # noqa: B009
        self.sizes = shard_sizes(self.num_envs, self.workers)
        self.starts = [sum(self.sizes[:k]) for k in range(self.workers)]
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        self._closed_workers = False
        self._decoders = [InfoDecoder() for _ in self.sizes]
        #: the masks the workers sent with the last step or reset (None: not asked for
        #: or already handed out); they are asked for while the caller reads them
        self._masks: np.ndarray | None = None
        self._masks_read = False
        ctx: Any = mp.get_context(start_method)
        kw = {**env_kwargs, "threads": threads, "autoreset_mode": mode, "copy": False}
        for k, n in enumerate(self.sizes):
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=_worker,
                args=(child, vector_class, n, kw),
                name=f"urban_gym_shard_{k}",
                daemon=True,
            )
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        try:
            ready = self._gather()
            obs_space, act_space, metadata, render_mode = ready[0]
            self.single_observation_space = obs_space
            self.single_action_space = act_space
            self.observation_space = batch_space(obs_space, self.num_envs)
            self.action_space = batch_space(act_space, self.num_envs)
            self.metadata = {**metadata, "autoreset_mode": mode}
            self.render_mode = render_mode
            self.spec = None
            self._layout, size = _layout(obs_space, self.num_envs)
            self._texts = _has_texts(self._layout)
            self._map, self._obs = self._shared_map(max(size, 1))
        except BaseException:
            self._stop()
            raise

    @property
    def worker_pids(self) -> list[int]:
        """The process ids of the workers (e.g. to read their CPU time)."""
        return [int(p.pid) for p in self._procs]

    @property
    def envs(self) -> list[Any]:
        """Not here: the env objects live in the worker processes."""
        raise InputError(
            f"a vector env with workers={self.workers} keeps its envs in worker processes: "
            "use call(), get_attr() and set_attr() (or workers=1 for the env objects)"
        )

    def _shared_map(self, size: int) -> tuple[mmap.mmap, Any]:
        """The shared map of the batch's arrays, mapped by every worker (its file removed
        once they all have it), and the batch buffers over it.
        """
        folder = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix="urban_gym_batch_", dir=folder)
        try:
            os.ftruncate(fd, size)
            mapped = mmap.mmap(fd, size)
            for k, conn in enumerate(self._conns):
                conn.send(("map", (path, size, self._layout, self.starts[k])))
            self._gather()
        finally:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
        return mapped, _views(self._layout, mapped)

    # ------------------------------------------------------------------ messages
    def _gather(
        self,
        which: Sequence[int] | None = None,
        then: Callable[[int, Any], Any] | None = None,
    ) -> list[Any]:
        """The replies of the workers ``which`` (all by default), in order, each passed
        through ``then(worker, reply)`` where given (also where another worker raised); a
        worker's error is raised here, after every reply is in (the others stay usable).
        """
        idx = range(self.workers) if which is None else which
        out: list[Any] = []
        error: BaseException | None = None
        for k in idx:
            try:
                status, value = self._conns[k].recv()
            except (EOFError, OSError):
                proc = self._procs[k]
                proc.join(timeout=1.0)
                error = error or WorkerError(
                    f"worker {k} (pid {proc.pid}) of {self!r} exited with code "
                    f"{proc.exitcode} without answering"
                )
                out.append(None)
                continue
            if status == "error":
                blob, summary, text = value
                exc: BaseException | None = None
                if blob is not None:
                    with contextlib.suppress(Exception):
                        exc = pickle.loads(blob)
                if exc is None:
                    exc = WorkerError(f"worker {k}: {summary}")
                exc.add_note(f"raised in worker {k} of {self!r}:\n{text}")
                error = error or exc
                value = None
            elif then is not None:
                value = then(k, value)
            out.append(value)
        if error is not None:
            raise error
        return out

    def _ask(
        self,
        cmd: str,
        payloads: Sequence[Any] | None = None,
        then: Callable[[int, Any], Any] | None = None,
    ) -> list[Any]:
        """Send ``cmd`` to every worker (each its payload, or None) and gather."""
        if self._closed_workers:
            raise InputError(f"{self!r} is closed")
        if cmd in _MAY_CHANGE:
            self._masks = None  # a call may change what is valid: ask again
        for k, conn in enumerate(self._conns):
            conn.send((cmd, None if payloads is None else payloads[k]))
        return self._gather(then=then)

    def _slices(self, values: Sequence[Any]) -> list[list[Any]]:
        return [list(values[s : s + n]) for s, n in zip(self.starts, self.sizes)]

    # ------------------------------------------------------------------ observations
    def _observations(self, texts: Sequence[Any]) -> Any:
        if self._texts:
            for k, t in enumerate(texts):
                if t is not None:
                    _put_texts(self._layout, self._obs, t, self.starts[k])
        return _batch(self.single_observation_space, self._obs, self.copy)

    # ------------------------------------------------------------------ reset / step
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs, or those of ``options["reset_mask"]`` (as
        :meth:`NativeVectorEnv.reset <urban_gym.envs.vector.NativeVectorEnv.reset>`: env
        ``i`` gets ``seed + i`` for an int seed).
        """
        seeds, opts, chosen = reset_plan(self.num_envs, seed, options)
        mask = np.zeros(self.num_envs, np.bool_)
        mask[chosen] = True
        asked = [
            k for k, (s, n) in enumerate(zip(self.starts, self.sizes)) if mask[s : s + n].any()
        ]
        want = self._want_masks() and len(asked) == self.workers
        for k in asked:
            s, n = self.starts[k], self.sizes[k]
            o = {**opts, "reset_mask": mask[s : s + n].copy()}
            self._conns[k].send(("reset", (seeds[s : s + n], o, want)))
        replies = dict(zip(asked, self._gather(asked, self._decoded_reset)))
        parts = [(replies[k][0] if k in replies else {}, n) for k, n in enumerate(self.sizes)]
        texts = [replies[k][1] if k in replies else None for k in range(self.workers)]
        self._keep_masks([replies[k][2] for k in asked] if want else None)
        return self._observations(texts), merge_infos(parts)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One step of every env: each worker steps its shard; the replies joined."""
        acts = actions if isinstance(actions, np.ndarray) else list(actions)
        if len(acts) != self.num_envs:
            raise InputError(
                f"step() got {len(acts)} actions for num_envs={self.num_envs} envs: {actions!r}"
            )
        want = self._want_masks()
        payloads = [(acts[s : s + n], want) for s, n in zip(self.starts, self.sizes)]
        replies = self._ask("step", payloads, self._decoded_step)
        rewards = np.concatenate([r[0] for r in replies])
        terminated = np.concatenate([r[1] for r in replies])
        truncated = np.concatenate([r[2] for r in replies])
        parts = [(r[3], n) for r, n in zip(replies, self.sizes)]
        self._keep_masks([r[5] for r in replies] if want else None)
        obs = self._observations([r[4] for r in replies])
        return obs, rewards, terminated, truncated, merge_infos(parts)

    def _decoded_step(self, k: int, reply: tuple) -> tuple:
        """A step's reply of worker ``k``, its info (the fourth item) decoded: every
        reply is, in order (the decoder learns the schemas from them).
        """
        return (*reply[:3], self._decoders[k].decode(reply[3]), *reply[4:])

    def _decoded_reset(self, k: int, reply: tuple) -> tuple:
        """A reset's reply of worker ``k``, its info (the first item) decoded."""
        return (self._decoders[k].decode(reply[0]), *reply[1:])

    def _want_masks(self) -> bool:
        """Whether the workers send their masks with this step: where the caller read
        the masks since the last step (an RL loop with masks reads them every step, and so
        needs no round trip of its own for them).
        """
        want, self._masks_read = self._masks_read, False
        self._masks = None
        return want

    def _keep_masks(self, parts: list[np.ndarray] | None) -> None:
        self._masks = None if parts is None else np.concatenate(parts)

    # ------------------------------------------------------------------ masks and calls
    @property
    def last_infos(self) -> list[dict[str, Any] | None]:
        """Each env's own ``info`` dict of the last call (asked of the workers)."""
        return [i for part in self._ask("last_infos") for i in part]

    def action_masks(self) -> np.ndarray:
        """The valid entries of every env's action table now: ``(N, n)`` booleans (sent
        with the step where the masks were read before it, else asked for).
        """
        self._masks_read = True
        masks, self._masks = self._masks, None
        if masks is None:
            masks = np.concatenate(self._ask("masks"))
        return masks

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``getattr(env, name)(*args, **kwargs)`` on every env, in the workers."""
        return tuple(
            v for part in self._ask("call", [(name, args, kwargs)] * self.workers) for v in part
        )

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name`` of every env."""
        return tuple(v for part in self._ask("get_attr", [name] * self.workers) for v in part)

    def set_attr(self, name: str, values: Any) -> None:
        """Set the attribute ``name`` of every env: one value for all, or N values."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise InputError(
                f"set_attr({name!r}): {len(values)} values for num_envs={self.num_envs} envs"
            )
        self._ask("set_attr", [(name, v) for v in self._slices(values)])

    def _at(self, what: str, indices: Sequence[int], name: str, args: tuple, kw: dict) -> list:
        """``what`` (``"get"``, ``"set"`` or ``"call"``) on the envs ``indices`` only:
        each worker asked for its rows, the answers in the order of ``indices``.
        """
        owners = []  # the worker of each index, in the order asked
        rows: dict[int, list[int]] = {}
        for i in indices:
            if not 0 <= int(i) < self.num_envs:
                raise InputError(f"env index {i!r} is outside [0, {self.num_envs - 1}]")
            k = bisect.bisect_right(self.starts, int(i)) - 1
            owners.append(k)
            rows.setdefault(k, []).append(int(i) - self.starts[k])
        asked = sorted(rows)
        if what != "get":
            self._masks = None  # a call may change what is valid: ask again
        for k in asked:
            self._conns[k].send(("at", (what, rows[k], name, args, kw)))
        answers = dict(zip(asked, self._gather(asked)))
        if what == "set":
            return []
        taken = {k: iter(v) for k, v in answers.items()}
        return [next(taken[k]) for k in owners]

    def get_attr_at(self, indices: Sequence[int], name: str) -> list[Any]:
        """The attribute ``name`` of the envs ``indices``, in that order."""
        return self._at("get", indices, name, (), {})

    def set_attr_at(self, indices: Sequence[int], name: str, value: Any) -> None:
        """Set the attribute ``name`` of the envs ``indices`` to ``value``."""
        self._at("set", indices, name, (value,), {})

    def call_at(self, indices: Sequence[int], name: str, *args: Any, **kwargs: Any) -> list[Any]:
        """``getattr(env, name)(*args, **kwargs)`` on the envs ``indices``, in that order."""
        return self._at("call", indices, name, args, kwargs)

    def render(self) -> tuple[Any, ...] | None:
        """Every env's ``render()``."""
        return tuple(v for part in self._ask("render") for v in part)

    # ------------------------------------------------------------------ closing
    def _stop(self) -> None:
        """Ask every worker to close, wait a little, end those that do not."""
        if self._closed_workers:
            return
        self._closed_workers = True
        for conn in self._conns:
            with contextlib.suppress(OSError, ValueError):
                conn.send(("close", None))
        for conn in self._conns:
            with contextlib.suppress(EOFError, OSError):
                if conn.poll(10.0):
                    conn.recv()
            conn.close()
        for proc in self._procs:
            proc.join(timeout=5.0)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5.0)

    def close_extras(self, **kwargs: Any) -> None:
        """Close the workers' envs and end the workers."""
        self._stop()

    def __repr__(self) -> str:
        return (
            f"ShardedVectorEnv({self.env_class.__name__}, num_envs={self.num_envs}, "
            f"workers={self.workers})"
        )

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._stop()


__all__ = ["START_METHODS", "ShardedVectorEnv", "merge_infos", "shard_sizes"]
