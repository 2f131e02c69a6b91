"""Trace format 2: an episode's per-step trace as one line of a part file.

A run's traces are ``traces/part-NNNN.jsonl`` files, each appended by one writer (a
process: :class:`TraceAppender`), one strict-JSON line per episode; the episode's record
says where its line is (``file``, ``offset``, ``length``). A line holds the episode's
steps column by column (entry ``t`` of each is step ``t``; 0: the state after ``reset``)::

    {"format": 2, "key": "<the episode's key as a file name>",
     "action": [null, {"action": "go", "option": 1}, ...],
     "valid": [null, true, ...],
     "goal_visible": [false, false, ...],
     "more": {"7": {"invalid_action": "..."}},
     "float_fields": ["reward", "x", "y", "heading", "distance_to_goal_m"],
     "floats": "<base64: float64, little-endian, 5 per step, step after step>"}

``action`` is what the core env received (null at step 0), ``valid`` whether it was
carried out, ``goal_visible`` whether the goal object was in view (null when not
tracked); ``more`` holds, by step number, a step's other entries (``invalid_action``; the
language model's ``reply`` with the parser's ``stage``, ``tokens``, ``timing``; a scheme's
``calls`` and notes; ``pose`` when the env's pose was not the three numbers). The step's
reward, pose (``x``, ``y`` in metres, ``heading`` in degrees) and distance to the goal
(metres) are its five ``floats``, exact (the float64 the env gave); NaN and the
infinities read as null (the reward of step 0, the distance of a task without a goal
position). :func:`trace_steps` turns a line back into the step objects of
:mod:`urban_gym.eval.trace`.

Why numbers in binary: writing a float as text (its shortest repr) costs about 0.2 µs, a
step of a symbolic graph env about 50 µs, so five decimal numbers per step alone
were 2% of the episode -- measured with ``benchmarks/bench_harness.py``, whose goal is a
harness within 5% of a bare episode loop. ``RunDir.read_trace`` (or :func:`trace_steps`)
gives them back as numbers.

A trace given as a list of step objects instead (a test, a tool of its own) is written as
``{"format": 2, "key": ..., "steps": [...]}``, its numbers as text.
"""

from __future__ import annotations

import base64
import binascii
import math
import os
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from urban_gym.errors import TraceFormatError
from urban_gym.eval.jsonlines import encode, strict_line, strict_text

#: The trace format this package writes (1: a file per episode, one step object per line).
TRACE_FORMAT = 2
#: The columns of a trace line with one entry per step.
COLUMNS: tuple[str, ...] = ("action", "valid", "goal_visible")
#: The numbers of a step, in order (``floats``).
FLOAT_FIELDS: tuple[str, ...] = ("reward", "x", "y", "heading", "distance_to_goal_m")
#: A writer starts a new part file once its part holds this many bytes.
PART_BYTES = 64 << 20

_N = len(FLOAT_FIELDS)
_INF = math.inf


# --------------------------------------------------------------------------- numbers
def _as_float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def pack_floats(values: Sequence[Any]) -> str:
    """``values`` as base64 of little-endian float64s; a value that is not a number is
    NaN (read back as null).
    """
    try:
        raw = struct.pack(f"<{len(values)}d", *values)
    except (struct.error, TypeError, OverflowError):
        raw = struct.pack(f"<{len(values)}d", *[_as_float(v) for v in values])
    return binascii.b2a_base64(raw, newline=False).decode("ascii")


def unpack_floats(text: Any) -> list[float | None]:
    """The numbers of :func:`pack_floats`, NaN and the infinities as None."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, AttributeError) as exc:
        raise TraceFormatError(f"floats are not base64 ({exc})") from None
    if len(raw) % 8:
        raise TraceFormatError(f"floats hold {len(raw)} bytes, not a multiple of 8")
    return [v if -_INF < v < _INF else None for (v,) in struct.iter_unpack("<d", raw)]


def finite(v: Any) -> float | None:
    """``v`` as it reads back from a trace's floats: a finite float, else None."""
    if type(v) is not float:
        v = _as_float(v)
    return v if -_INF < v < _INF else None


# --------------------------------------------------------------------------- traces
class EpisodeTrace:
    """An episode's trace as the harness records it, column by column (entry ``t`` of
    each is step ``t``; 0: after the reset): ``actions``, ``valid``, ``visible`` (goal
    visibility), ``more`` (step number -> its other entries, only for the steps that have
    any) and ``floats`` (:data:`FLOAT_FIELDS` of every step, step after step). Columns and
    not a tuple per step: a step then leaves no new object behind (but its action), which
    keeps the garbage collector's young generation as small as the bare loop's.
    :meth:`steps` gives the step objects.
    """

    __slots__ = ("actions", "valid", "visible", "more", "floats", "distinct")

    def __init__(self) -> None:
        self.actions: list[Any] = []
        self.valid: list[bool | None] = []
        self.visible: list[bool | None] = []
        self.more: dict[int, dict[str, Any]] = {}
        self.floats: list[Any] = []
        #: the dict actions that several steps may share (one object per distinct action,
        #: by :func:`urban_gym.eval.trace.action_key`); :func:`trace_line` encodes each
        #: once
        self.distinct: dict[tuple, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.actions)

    def pose(self, t: int) -> Any:
        """The pose of step ``t`` as it reads back (``{"x", "y", "heading"}``)."""
        t %= len(self.actions)
        more = self.more.get(t)
        if more and "pose" in more:
            return more["pose"]
        i = t * _N
        f = self.floats
        return {"x": finite(f[i + 1]), "y": finite(f[i + 2]), "heading": finite(f[i + 3])}

    def distance(self, t: int) -> float | None:
        """The distance to the goal of step ``t`` (metres) as it reads back."""
        return finite(self.floats[(t % len(self.actions)) * _N + 4])

    def steps(self) -> list[dict[str, Any]]:
        """The step objects (``t``, ``action``, ``valid``, ``reward``, ``pose``, ...), each
        with an action of its own (a copy of a shared one).
        """
        floats = [finite(v) for v in self.floats]
        actions = [a.copy() if type(a) is dict else a for a in self.actions]
        return columns_steps(actions, self.valid, self.visible, self.more, floats)


def columns_steps(
    actions: Sequence[Any],
    valid: Sequence[Any],
    visible: Sequence[Any],
    more: Mapping[int, Mapping[str, Any]],
    floats: Sequence[Any],
) -> list[dict[str, Any]]:
    """The step objects of a trace's columns (None for a null number)."""
    n = len(actions)
    if len(valid) != n or len(visible) != n or len(floats) != _N * n:
        raise TraceFormatError(
            f"columns of {n}, {len(valid)} and {len(visible)} steps and {len(floats)} floats "
            f"({_N} a step)"
        )
    out = []
    for t in range(n):
        m = more.get(t)
        reward, x, y, heading, distance = floats[t * _N : t * _N + _N]
        e: dict[str, Any] = {"t": t}
        if t:
            e["action"] = actions[t]
            e["valid"] = valid[t]
            if m and "invalid_action" in m:
                e["invalid_action"] = m["invalid_action"]
            e["reward"] = reward
        if m and "pose" in m:
            e["pose"] = m["pose"]
        else:
            e["pose"] = {"x": x, "y": y, "heading": heading}
        e["distance_to_goal_m"] = distance
        e["goal_visible"] = visible[t]
        if m:
            for k, v in m.items():
                if k != "invalid_action" and k != "pose":
                    e[k] = v
        out.append(e)
    return out


def trace_steps(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The step objects of one trace line (its columns and floats, or its step objects);
    :class:`TraceFormatError` for anything else.
    """
    if obj.get("format") != TRACE_FORMAT:
        raise TraceFormatError(f"format {obj.get('format')!r}, not {TRACE_FORMAT}")
    if isinstance(obj.get("steps"), list):
        return obj["steps"]
    cols = [obj.get(c) for c in COLUMNS]
    more = obj.get("more") or {}
    if not all(isinstance(c, list) for c in cols) or not isinstance(more, dict):
        raise TraceFormatError(f"the columns {', '.join(COLUMNS)} and more expected")
    if obj.get("float_fields") != list(FLOAT_FIELDS):
        raise TraceFormatError(f"floats of the fields {list(FLOAT_FIELDS)} expected")
    try:
        more = {int(k): v for k, v in more.items()}
    except ValueError:
        raise TraceFormatError("more: keys that are not step numbers") from None
    actions, valid, visible = cast(list[list[Any]], cols)  # checked above: three lists
    return columns_steps(actions, valid, visible, more, unpack_floats(obj.get("floats")))


_FLOAT_FIELDS = list(FLOAT_FIELDS)
_FLOAT_FIELDS_JSON = encode(_FLOAT_FIELDS)


def trace_line(
    name: str, steps: EpisodeTrace | Iterable[Mapping[str, Any]], small_ints: bool = False
) -> bytes:
    """The trace line (UTF-8, with its newline) of the episode named ``name``: an
    :class:`EpisodeTrace` or step objects (see the module docstring), as strict JSON
    (:func:`urban_gym.eval.jsonlines.strict_line`; ``small_ints``: no integer beyond 64
    bits in it).
    """
    if not isinstance(steps, EpisodeTrace):
        obj = {"format": TRACE_FORMAT, "key": name, "steps": list(steps)}
        return (strict_line(obj, small_ints) + "\n").encode("utf-8")
    floats = pack_floats(steps.floats)
    cols = {"valid": steps.valid, "goal_visible": steps.visible, "more": steps.more}
    try:  # the fast path: the actions' JSON joined (each shared one encoded once); the
        # base64 of the floats needs no escaping
        text = (
            f'{{"format": {TRACE_FORMAT}, "key": {encode(name)}, "action": '
            f"{_actions_json(steps.actions, steps.distinct)}, {encode(cols)[1:-1]}, "
            f'"float_fields": {_FLOAT_FIELDS_JSON}, "floats": "{floats}"}}'
        )
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is None or not strict_text(text, small_ints):
        obj = {"format": TRACE_FORMAT, "key": name, "action": steps.actions, **cols}
        obj.update(float_fields=_FLOAT_FIELDS, floats=floats)
        text = strict_line(obj, small_ints)
    return (text + "\n").encode("utf-8")


def _actions_json(actions: list[Any], distinct: Mapping[tuple, Any]) -> str:
    """``actions`` as a JSON array, as the C encoder writes it (``, `` between items);
    the dicts of ``distinct`` (which several steps share) encoded once each.
    """
    if not distinct:
        return encode(actions)
    memo = {id(a): encode(a) for a in distinct.values()}
    memo[id(None)] = "null"
    try:  # every action one of them (or the reset's null)
        parts = list(map(memo.__getitem__, map(id, actions)))
    except KeyError:
        get = memo.get
        parts = [get(id(a)) or encode(a) for a in actions]
    return "[" + ", ".join(parts) + "]"


# --------------------------------------------------------------------------- writer
_PART = re.compile(r"part-(\d+)\.jsonl")


class TraceAppender:
    """Appends trace lines to part files of its own in ``traces_dir``: it creates
    ``part-NNNN.jsonl`` with the next free number (``O_EXCL``: a part has one writer, even
    with several processes starting at once), writes each line with one ``write`` and
    knows each line's offset. A write that fails or is interrupted closes the part (it
    may end in a torn line, which no record points at): the next write starts a new one.
    So does a part of ``part_bytes``. The ``file`` it gives is relative to the folder above
    ``traces_dir`` (the run folder).
    """

    def __init__(self, traces_dir: str | os.PathLike, part_bytes: int = PART_BYTES) -> None:
        self.dir = Path(traces_dir)
        self.part_bytes = int(part_bytes)
        self._fd: int | None = None
        self._rel = ""
        self._size = 0

    def _claim(self) -> int:
        self.close()
        self.dir.mkdir(parents=True, exist_ok=True)
        taken = [int(m.group(1)) for n in os.listdir(self.dir) if (m := _PART.fullmatch(n))]
        n = max(taken, default=0) + 1
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_BINARY", 0)
        while True:
            name = f"part-{n:04d}.jsonl"
            try:
                fd = os.open(self.dir / name, flags, 0o644)
                break
            except FileExistsError:
                n += 1
        self._fd, self._rel, self._size = fd, f"{self.dir.name}/{name}", 0
        return fd

    def write(self, data: bytes) -> dict[str, Any]:
        """Append ``data`` (one whole line, with its newline); returns its place: ``file``,
        ``offset`` and ``length`` (bytes).
        """
        fd = self._fd
        if fd is None or self._size >= self.part_bytes:
            fd = self._claim()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            self.close()
            raise
        offset = self._size
        self._size += len(data)
        return {"file": self._rel, "offset": offset, "length": len(data)}

    def close(self) -> None:
        """Close the part file (the next write starts a new part)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


__all__ = [
    "COLUMNS",
    "FLOAT_FIELDS",
    "PART_BYTES",
    "TRACE_FORMAT",
    "EpisodeTrace",
    "TraceAppender",
    "TraceFormatError",
    "finite",
    "columns_steps",
    "pack_floats",
    "trace_line",
    "trace_steps",
    "unpack_floats",
]
