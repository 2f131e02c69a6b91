"""How a worker's batched ``info`` travels to its parent
(:class:`urban_gym.envs.workers.ShardedVectorEnv`): cheaper than pickling the dict.

A batched info (Gymnasium's layout) is a dict of some dozens of small numpy arrays, nested
dicts and a few object arrays; pickled as it is, each array costs a reduction of its own
(about 0.4 ms for a 16-env CityWalk or PoseGraph360 batch). :class:`InfoEncoder` writes the
numeric arrays' bytes into one buffer and describes the dict once as a schema -- keys,
dtypes, shapes, nested dicts -- which it sends only when it changes (an episode's end adds
keys) or when the decoder does not hold it (each side numbers the schemas: the parent tells
the worker which one it holds with every command, so a reply it dropped -- another worker's
error -- costs nothing but a resent schema); object arrays travel as themselves.
:class:`InfoDecoder` keeps the last schema it got and rebuilds the dict, each numeric array a read-only view of the bytes received (the
parent joins the shards' arrays into new ones).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: one entry of a schema: ``(key, "a", dtype, shape)`` a numeric array, ``(key, "d",
#: subschema, ())`` a nested dict, ``(key, "o", None, ())`` anything else (sent as itself)
Schema = tuple[tuple[str, str, Any, tuple[int, ...]], ...]


def _describe(info: dict[str, Any], chunks: list[bytes], objects: list[Any]) -> Schema:
    """The schema of ``info``; its numeric arrays' bytes appended to ``chunks`` and its
    other values to ``objects``, in schema order.
    """
    out: list[tuple[str, str, Any, tuple[int, ...]]] = []
    for key, value in info.items():
        if isinstance(value, dict):
            out.append((key, "d", _describe(value, chunks, objects), ()))
        elif isinstance(value, np.ndarray) and value.dtype != object:
            out.append((key, "a", value.dtype.str, value.shape))
            chunks.append(value.tobytes())
        else:
            out.append((key, "o", None, ()))
            objects.append(value)
    return tuple(out)


#: an encoded info: ``(schema number, schema or None, numeric bytes, other values)``
Message = tuple[int, Schema | None, bytes, list[Any]]


class InfoEncoder:
    """A worker's side (see the module docstring)."""

    def __init__(self) -> None:
        self._last: Schema | None = None
        self._number = 0

    def encode(self, info: dict[str, Any], known: int) -> Message:
        """``info`` encoded for a decoder holding schema number ``known``: the schema
        left out (None) where the decoder holds it already.
        """
        chunks: list[bytes] = []
        objects: list[Any] = []
        schema = _describe(info, chunks, objects)
        data = b"".join(chunks)
        if schema != self._last:
            self._last = schema
            self._number += 1
        held = known == self._number
        return self._number, None if held else schema, data, objects


def _build(schema: Schema, data: bytes, at: list[int], objects: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, kind, spec, shape in schema:
        if kind == "d":
            out[key] = _build(spec, data, at, objects)
        elif kind == "a":
            dtype = np.dtype(spec)
            count = int(np.prod(shape)) if shape else 1
            arr = np.frombuffer(data, dtype=dtype, count=count, offset=at[0])
            at[0] += count * dtype.itemsize
            out[key] = arr.reshape(shape)
        else:
            out[key] = next(objects)
    return out


class InfoDecoder:
    """The parent's side, one per worker (see the module docstring)."""

    def __init__(self) -> None:
        self._schema: Schema | None = None
        #: the number of the schema held (0: none yet); sent to the encoder
        self.known = 0

    def decode(self, message: Message) -> dict[str, Any]:
        """The info dict an :class:`InfoEncoder` encoded as ``message``."""
        number, schema, data, objects = message
        if schema is not None:
            self._schema, self.known = schema, number
        if self._schema is None or number != self.known:
            raise ValueError(f"info schema {number} is not the one held ({self.known})")
        return _build(self._schema, data, [0], iter(objects))


__all__ = ["InfoDecoder", "InfoEncoder", "Message", "Schema"]
