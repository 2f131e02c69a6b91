"""Each env's own ``info`` dict of a batched StreetGraph step, from the batch ``info``
(Gymnasium's layout: ``batch[key]`` an array over the envs, ``batch["_" + key]`` the mask
of the envs that have the key): what
:attr:`StreetGraphVectorEnv.last_infos <urban_gym.families.streetgraph.vector.StreetGraphVectorEnv.last_infos>`
returns.

:func:`row_infos` builds the list; a row that has just the keys every env has is a
:class:`LazyInfo`, a ``dict`` filled from the batch's columns when it is first used, so a
caller that looks at a few envs -- stable-baselines3 asks each env's info only for
``"episode"`` and ``"is_success"``, keys a running env does not have -- does not pay for
turning N rows of arrays into Python values every step.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np


def info_row(batch: dict[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s info of the batch ``info`` ``batch``: its keys in the batch's order,
    the values as Python values (what ``ndarray.tolist`` gives), a nested dict with no
    keys for the env as None.
    """
    out: dict[str, Any] = {}
    for key, col in batch.items():
        if key[0] == "_" or not batch["_" + key][i]:
            continue
        if isinstance(col, dict):
            out[key] = info_row(col, i) or None
        else:
            out[key] = col[i : i + 1].tolist()[0]
    return out


class LazyInfo(dict):
    """Env ``i``'s info dict of a batch ``info`` (:func:`info_row`), filled when it is
    first used: any read of its items fills it, while ``key in info``, ``len(info)`` and
    ``info.get(key)`` of a key it does not have (``keys``: its key set) answer without
    filling. It holds one real item (``first``) before it is filled, so that code that
    reads a dict's storage directly in C (the ``json`` encoder) sees a non-empty dict
    and asks for its items, which fills it. Copies and pickles are plain dicts.
    """

    __slots__ = ("_batch", "_i", "_keys")

    def __init__(
        self, batch: dict[str, Any], i: int, keys: frozenset[str], first: tuple[str, Any]
    ) -> None:
        dict.__init__(self, (first,))
        self._batch: dict[str, Any] | None = batch
        self._i = i
        self._keys = keys

    def _fill(self) -> None:
        batch = self._batch
        if batch is not None:
            self._batch = None
            row = info_row(batch, self._i)
            dict.clear(self)
            dict.update(self, row)

    # reads that answer without filling when they can
    def __contains__(self, key: object) -> bool:
        if self._batch is not None:
            return key in self._keys
        return dict.__contains__(self, key)

    def __len__(self) -> int:
        return len(self._keys) if self._batch is not None else dict.__len__(self)

    def get(self, key: str, default: Any = None) -> Any:
        """``info[key]`` if it has the key, else ``default`` (without filling)."""
        if self._batch is not None and key not in self._keys:
            return default
        self._fill()
        return dict.get(self, key, default)

    # every other read and write fills first
    def __getitem__(self, key: str) -> Any:
        self._fill()
        return dict.__getitem__(self, key)

    def __iter__(self) -> Iterator[str]:
        self._fill()
        return dict.__iter__(self)

    def __reversed__(self) -> Iterator[str]:
        self._fill()
        return dict.__reversed__(self)

    def keys(self) -> Any:
        """The keys (filled first)."""
        self._fill()
        return dict.keys(self)

    def values(self) -> Any:
        """The values (filled first)."""
        self._fill()
        return dict.values(self)

    def items(self) -> Any:
        """The items (filled first)."""
        self._fill()
        return dict.items(self)

    def copy(self) -> dict[str, Any]:
        """A plain dict of the items."""
        self._fill()
        return dict(dict.items(self))

    def __eq__(self, other: object) -> bool:
        self._fill()
        if isinstance(other, LazyInfo):
            other._fill()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None

    def __repr__(self) -> str:
        self._fill()
        return dict.__repr__(self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        self._fill()
        return (dict, (dict(dict.items(self)),))

    def __or__(self, other: Any) -> Any:
        self._fill()
        return dict(dict.items(self)) | other

    def __ror__(self, other: Any) -> Any:
        self._fill()
        return other | dict(dict.items(self))

    def __ior__(self, other: Any) -> Any:
        self._fill()
        dict.update(self, other)
        return self

    def __setitem__(self, key: str, value: Any) -> None:
        self._fill()
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self._fill()
        dict.__delitem__(self, key)

    def setdefault(self, key: str, default: Any = None) -> Any:
        """``dict.setdefault`` (filled first)."""
        self._fill()
        return dict.setdefault(self, key, default)

    def pop(self, key: str, *default: Any) -> Any:
        """``dict.pop`` (filled first)."""
        self._fill()
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[str, Any]:
        """``dict.popitem`` (filled first)."""
        self._fill()
        return dict.popitem(self)

    def update(self, *args: Any, **kwargs: Any) -> None:
        """``dict.update`` (filled first)."""
        self._fill()
        dict.update(self, *args, **kwargs)

    def clear(self) -> None:
        """Remove every item."""
        self._batch = None
        dict.clear(self)

    @classmethod
    def fromkeys(cls, keys: Iterable[str], value: Any = None) -> dict[str, Any]:  # type: ignore[override]
        """A plain dict (``dict.fromkeys``)."""
        return dict.fromkeys(keys, value)


def row_infos(
    batch: dict[str, Any], whole: dict[int, dict[str, Any]], n: int
) -> list[dict[str, Any] | None]:
    """The ``n`` envs' own infos of the batch ``info`` ``batch`` (None for an env with no
    key), ``whole[i]`` for the envs given whole (an ended episode's final info): a
    :class:`LazyInfo` for each env that has exactly the keys every env has, the others
    (an episode's end, a partial reset) built now by :func:`info_row`.
    """
    keys = [k for k in batch if k[0] != "_"]
    full = [k for k in keys if batch["_" + k].all()]
    some = np.zeros(n, np.bool_)  # envs with keys beyond the shared ones
    for k in keys:
        if k not in full:
            some |= batch["_" + k]
    cheap = next((k for k in full if not isinstance(batch[k], dict)), None)
    out: list[dict[str, Any] | None] = [None] * n
    if cheap is not None:
        shared = frozenset(full)
        values = batch[cheap].tolist()
        for i in np.flatnonzero(~some).tolist():
            if i not in whole:
                out[i] = LazyInfo(batch, i, shared, (cheap, values[i]))
    for i in range(n) if cheap is None else np.flatnonzero(some).tolist():
        if i not in whole:
            out[i] = info_row(batch, i) or None
    for i, info in whole.items():
        out[i] = info
    return out


__all__ = ["LazyInfo", "info_row", "row_infos"]
