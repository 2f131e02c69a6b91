"""How a batch of N envs' values is laid out, shared by the native vector env
(:mod:`urban_gym.envs.vector`) and its worker processes (:mod:`urban_gym.envs.workers`):
the batch buffers of an observation space, Gymnasium's batched ``info`` layout
(:func:`batch_infos`), the autoreset modes by name and a reset's seeds and mask
(:func:`reset_plan`), and the batch's arrays laid out in one block of memory that worker
processes share (:func:`_layout`, :func:`_views`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import create_empty_array

from urban_gym.errors import InputError

#: Spaces whose batch is one numpy array (any other batches as a tuple of values).
ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiBinary, spaces.MultiDiscrete)

#: ``autoreset_mode`` by name (Gymnasium's ``AutoresetMode`` values are accepted too).
AUTORESET_MODES: dict[str, AutoresetMode] = {
    **{m.name.lower(): m for m in AutoresetMode},
    **{m.value: m for m in AutoresetMode},
}


def _is_int(value: Any) -> bool:
    """An int (Python's or numpy's), not a bool."""
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


#: bytes each shared array starts on a multiple of
_ALIGN = 64


@dataclass(frozen=True)
class _Array:
    """Where one array entry of the batch lies in the shared map."""

    offset: int
    dtype: str
    shape: tuple[int, ...]


def _layout(space: spaces.Space, n: int, offset: int = 0) -> tuple[Any, int]:
    """Where each array entry of a batch of ``n`` observations of ``space`` lies in the
    shared map: a tree like the batch (dicts, tuples) whose array leaves are
    :class:`_Array` and text leaves None; and the bytes used.
    """
    if isinstance(space, spaces.Dict):
        out = {}
        for k, s in space.spaces.items():
            out[k], offset = _layout(s, n, offset)
        return out, offset
    if isinstance(space, spaces.Tuple):
        items = []
        for s in space.spaces:
            leaf, offset = _layout(s, n, offset)
            items.append(leaf)
        return tuple(items), offset
    if isinstance(space, ARRAY_SPACES):
        dtype = np.dtype(space.dtype)
        shape = (n, *(space.shape or ()))
        offset = -(-offset // _ALIGN) * _ALIGN
        return _Array(offset, dtype.str, shape), offset + int(np.prod(shape)) * dtype.itemsize
    return None, offset


def _views(layout: Any, buf: Any, rows: slice | None = None) -> Any:
    """The batch buffer tree of ``layout`` over the memory ``buf``: numpy views for the
    array leaves (only ``rows`` of them where given), a fresh list for the text leaves.
    """
    if isinstance(layout, dict):
        return {k: _views(v, buf, rows) for k, v in layout.items()}
    if isinstance(layout, tuple):
        return tuple(_views(v, buf, rows) for v in layout)
    if layout is None:
        n = 0 if rows is None else rows.stop - rows.start
        return [None] * n
    arr = np.ndarray(layout.shape, dtype=np.dtype(layout.dtype), buffer=buf, offset=layout.offset)
    return arr if rows is None else arr[rows]


def _texts(layout: Any, obs: Any) -> Any:
    """The text entries of a batch observation ``obs`` (its array entries left out: they
    are in the shared map), as a tree like ``layout``.
    """
    if isinstance(layout, dict):
        return {k: _texts(v, obs[k]) for k, v in layout.items()}
    if isinstance(layout, tuple):
        return tuple(_texts(v, o) for v, o in zip(layout, obs))
    return list(obs) if layout is None else None


def _put_texts(layout: Any, buf: Any, texts: Any, start: int) -> None:
    """Write a shard's text entries (:func:`_texts`) into rows ``start ..`` of ``buf``."""
    if isinstance(layout, dict):
        for k, v in layout.items():
            _put_texts(v, buf[k], texts[k], start)
    elif isinstance(layout, tuple):
        for v, b, t in zip(layout, buf, texts):
            _put_texts(v, b, t, start)
    elif layout is None:
        buf[start : start + len(texts)] = texts


def _has_texts(layout: Any) -> bool:
    if isinstance(layout, dict):
        return any(_has_texts(v) for v in layout.values())
    if isinstance(layout, tuple):
        return any(_has_texts(v) for v in layout)
    return layout is None


def autoreset_mode(value: str | AutoresetMode) -> AutoresetMode:
    """``value`` as an :class:`AutoresetMode` (its name or value, or the mode itself)."""
    if isinstance(value, AutoresetMode):
        return value
    mode = AUTORESET_MODES.get(value) if isinstance(value, str) else None
    if mode is None:
        valid = ", ".join(map(repr, AUTORESET_MODES))
        raise InputError(f"autoreset_mode={value!r} must be one of {valid}")
    return mode


def reset_plan(
    n: int, seed: int | Sequence[int | None] | None, options: dict[str, Any] | None
) -> tuple[list[int | None], dict[str, Any], list[int]]:
    """A vector reset's arguments checked for ``n`` envs: each env's seed (``seed + i``
    for an int), the options for every env's ``reset`` (without ``reset_mask``) and the
    envs to reset (those of ``options["reset_mask"]``, a bool array of shape ``(n,)``; all
    by default).
    """
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


__all__ = ["ARRAY_SPACES", "AUTORESET_MODES", "autoreset_mode", "batch_infos", "reset_plan"]
