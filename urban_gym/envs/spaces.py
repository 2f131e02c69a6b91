r"""Observation spaces shared by the environment families.

:class:`SharedMemoryText` is Gymnasium's ``Text`` space with its own shared-memory
handlers. Gymnasium's ``AsyncVectorEnv`` (``shared_memory=True``, the default of
``gym.make_vec(..., vectorization_mode="async")``) decodes a ``Text`` entry of its shared
buffer once, when the vector env is built, and returns that stale decoding -- a string of
the charset's first character, e.g. ``"\t\t\t..."`` -- after every ``reset`` and ``step``
(Gymnasium 1.4). Every ``Text`` observation of urban_gym uses this subclass instead: its
shared buffer holds the length and the Unicode code points of each string, and reading it
gives a live view that is decoded whenever the vector env hands out (copies) its
observations, so the text arrives intact. The handlers do not depend on the charset, so
any Unicode text that the space contains travels unchanged.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any, overload

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

from urban_gym.errors import InputError


class SharedMemoryText(spaces.Text):
    """``gymnasium.spaces.Text`` that ``AsyncVectorEnv`` carries through shared memory
    intact (see the module docstring). It behaves as ``Text`` in every other way: same
    arguments, ``contains``, ``sample``, equality, flattening.
    """


@create_shared_memory.register(SharedMemoryText)
def _create_text_memory(space: SharedMemoryText, n: int = 1, ctx: ModuleType = mp) -> Any:
    # per string: its length, then max_length code points (int32: Unicode is < 0x110000)
    return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))


@write_to_shared_memory.register(SharedMemoryText)
def _write_text_memory(space: SharedMemoryText, index: int, value: str, shared_memory: Any) -> None:
    if not isinstance(value, str) or len(value) > space.max_length:
        size = len(value) if isinstance(value, str) else type(value).__name__
        raise ValueError(
            f"a Text observation must be a str of at most {space.max_length} characters, got {size}"
        )
    row = space.max_length + 1
    dest = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)[index * row : (index + 1) * row]
    dest[0] = len(value)
    dest[1 : 1 + len(value)] = np.fromiter(map(ord, value), dtype=np.int32, count=len(value))


@read_from_shared_memory.register(SharedMemoryText)
def _read_text_memory(space: SharedMemoryText, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(space.max_length, shared_memory, n)


class SharedTexts(Sequence):
    """The ``n`` strings in a :class:`SharedMemoryText` buffer, decoded on every access.

    ``AsyncVectorEnv`` keeps this object as its batched text observation; it hands out
    ``copy.deepcopy`` of it (a plain tuple of str, decoded now) -- or, with ``copy=False``,
    the live view itself, as it does with the numpy arrays over its shared buffers.
    """

    def __init__(self, max_length: int, shared_memory: Any, n: int) -> None:
        self._rows = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape(
            n, max_length + 1
        )

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[str, ...]: ...
    def __getitem__(self, i: int | slice) -> str | tuple[str, ...]:
        if isinstance(i, slice):
            return tuple(self)[i]
        row = self._rows[i]
        codes = row[1 : 1 + int(row[0])].astype("<u4")
        return codes.tobytes().decode("utf-32-le", errors="surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (SharedTexts, tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable view

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __reduce__(self):  # pickles as the strings it holds now
        return (tuple, (tuple(self),))


def view_wh(value: Any, max_side: int) -> tuple[int, int] | None:
    """``(width, height)`` in pixels of a ``view_size`` argument: None (no view), an int
    (a square view) or a ``(width, height)`` pair, each side in ``[1, max_side]``.

    Raises:
        TaskError: naming the bad value.
    """
    from urban_gym.tasks.spec import TaskError

    if value is None:
        return None
    pair = (value, value) if isinstance(value, (int, np.integer)) else value
    ok = isinstance(pair, (tuple, list)) and len(pair) == 2
    if ok:
        ok = all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 1 <= v <= max_side
            for v in pair
        )
    if not ok or isinstance(value, bool):
        raise TaskError(
            f"view_size={value!r} must be None, an int or a (width, height) pair of ints, "
            f"each in [1, {max_side}]"
        )
    return int(pair[0]), int(pair[1])


def dict_space(env: Any, who: str) -> spaces.Dict:
    """The env's ``Dict`` observation space; :class:`UrbanGymError` naming ``who`` otherwise."""
    space = env.observation_space
    if not isinstance(space, spaces.Dict):
        raise InputError(f"{who} needs a Dict observation space, got {type(space).__name__}")
    return space
