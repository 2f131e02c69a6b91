"""How a worker's batched ``info`` travels to its parent
(:class:`urban_gym.envs.workers.ShardedVectorEnv`): cheaper than pickling the dict.

A batched info (Gymnasium's layout) is a dict of some dozens of small numpy arrays, nested
dicts and a few object arrays; pickled as it is, each array costs a reduction of its own, in
series with the step. :class:`InfoEncoder` writes the numeric arrays' bytes into one buffer
and describes the dict as a schema -- keys, dtypes, shapes, nested dicts -- numbered the
first time it is met and sent that time only (a batch's infos take a limited number of
shapes: which envs ended, which task types' metrics); object arrays travel as themselves.
:class:`InfoDecoder` keeps every schema it was sent, by number, and rebuilds the dict, each
numeric array a read-only view of the bytes received (the parent joins the shards' arrays
into new ones). The parent decodes every reply, in order (also those of workers that
answered beside one that raised), so both sides know the same schemas.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from urban_gym.errors import WorkerError

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
        self._numbers: dict[Schema, int] = {}

    def encode(self, info: dict[str, Any]) -> Message:
        """``info`` encoded: its schema's number, the schema itself the first time only."""
        chunks: list[bytes] = []
        objects: list[Any] = []
        schema = _describe(info, chunks, objects)
        data = b"".join(chunks)
        number = self._numbers.get(schema)
        if number is not None:
            return number, None, data, objects
        number = self._numbers[schema] = len(self._numbers) + 1
        return number, schema, data, objects


#: a decoding plan: per key ``(key, "a", (dtype, count, offset, shape))``, ``(key, "d",
#: subplan)`` or ``(key, "o", None)``
Plan = list[tuple[str, str, Any]]


def _plan(schema: Schema, at: list[int]) -> Plan:
    """Where each numeric array of ``schema`` lies in the bytes (made once per schema)."""
    out: Plan = []
    for key, kind, spec, shape in schema:
        if kind == "d":
            out.append((key, "d", _plan(spec, at)))
        elif kind == "a":
            dtype = np.dtype(spec)
            count = math.prod(shape)
            out.append((key, "a", (dtype, count, at[0], shape)))
            at[0] += count * dtype.itemsize
        else:
            out.append((key, "o", None))
    return out


def _build(plan: Plan, data: bytes, objects: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, kind, spec in plan:
        if kind == "a":
            dtype, count, offset, shape = spec
            out[key] = np.frombuffer(data, dtype, count, offset).reshape(shape)
        elif kind == "d":
            out[key] = _build(spec, data, objects)
        else:
            out[key] = next(objects)
    return out


class InfoDecoder:
    """The parent's side, one per worker: it must decode every message its encoder made,
    in order (see the module docstring).
    """

    def __init__(self) -> None:
        self._plans: dict[int, Plan] = {}

    def decode(self, message: Message) -> dict[str, Any]:
        """The info dict an :class:`InfoEncoder` encoded as ``message``."""
        number, schema, data, objects = message
        if schema is not None:
            self._plans[number] = _plan(schema, [0])
        plan = self._plans.get(number)
        if plan is None:
            raise WorkerError(f"a worker's info names schema {number}, never received")
        return _build(plan, data, iter(objects))


__all__ = ["InfoDecoder", "InfoEncoder", "Message", "Schema"]
