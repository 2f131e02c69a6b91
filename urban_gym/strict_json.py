r"""Strict JSON for records: one sanitising serialiser and a whole-line JSONL writer.

Every JSONL file of episode records is written with :func:`append_line`, which serialises
with :func:`dumps`, which converts with :func:`json_safe`. The result always passes a
strict reader -- ``json.loads(line, parse_constant=<raise>)`` -- and encodes as UTF-8,
whatever the value held. The conversion rules (:func:`json_safe`):

* ``None``, ``bool`` (and ``numpy.bool_``) stay as they are.
* Integers (Python, ``numpy.integer``) whose magnitude is below ``2**63`` stay numbers;
  larger ones become a string: their decimal digits when they have at most
  :data:`MAX_INT_DIGITS` digits, else ``"<integer of about N digits>"`` (no digits are
  computed, so a 100,000-digit integer costs nothing).
* Finite floats (Python, ``numpy.floating``) stay numbers; ``NaN`` and the infinities
  become ``null``, as a strict reader cannot read them.
* Strings: **lone surrogates are replaced** by U+FFFD (the replacement character); a high
  and low surrogate that stand as a valid pair are joined into their character. Such
  strings come from ``json.loads`` of text with ``"\ud800"`` escapes or from
  ``surrogateescape``-decoded bytes; they cannot be encoded as UTF-8.
* ``bytes``/``bytearray``/``memoryview`` are decoded as UTF-8, invalid bytes replaced.
* Mappings become objects with string keys (``None``/``bool``/numbers are written as JSON
  writes them, ``1 -> "1"``; other keys by their bounded ``repr``); lists, tuples, sets,
  frozensets and deques become arrays; ``numpy`` arrays become nested arrays.
* Objects with ``to_dict()`` are converted through it, dataclasses through their fields;
  anything else becomes its ``repr`` (or ``"<TypeName>"`` when ``repr`` fails).
* **Bounds.** A container deeper than ``max_depth`` levels is replaced by the string
  ``"<dict nested deeper than 64 levels>"``; a container met again inside itself by
  ``"<cycle: list>"``. With ``max_items``, arrays and objects keep their first
  ``max_items`` entries and say how many were left out (a last array item, or the key
  ``"..."``, ``"<N more items>"``); with ``max_chars``, strings keep their first
  ``max_chars`` characters followed by ``"...[N more characters]"``. The conversion walks
  at most ``max_depth`` Python frames deep, so it never raises ``RecursionError``.

:func:`dumps` also writes U+2028, U+2029 and U+0085 as ``\u`` escapes: they are valid in
JSON strings, but ``str.splitlines`` breaks lines at them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

#: Integers with more digits than this are written as ``"<integer of about N digits>"``.
MAX_INT_DIGITS = 100
#: Default depth limit of :func:`json_safe` (levels of nested containers).
DEFAULT_MAX_DEPTH = 64

_INT_LIMIT = 2**63
_LOG10_2 = math.log10(2.0)
_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def json_safe(
    value: Any,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_items: int | None = None,
    max_chars: int | None = None,
) -> Any:
    """A copy of ``value`` made only of what strict JSON holds (rules in the module
    docstring): dicts with string keys, lists, strings without lone surrogates, finite
    floats, integers below ``2**63`` in magnitude, booleans and None. Never raises.

    Args:
        value: anything.
        max_depth: levels of nested containers kept; deeper ones become a marker string.
        max_items: entries kept per array or object (None: all).
        max_chars: characters kept per string (None: all).
    """
    return _Converter(max_depth, max_items, max_chars).convert(value, 0)


def clean_str(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD and valid surrogate pairs joined
    (so that it encodes as UTF-8).
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def dumps(
    value: Any,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_items: int | None = None,
    max_chars: int | None = None,
) -> str:
    """``value`` as one line of strict JSON (no newline inside, UTF-8 encodable, no
    ``NaN``/``Infinity``), after :func:`json_safe` with the given bounds.
    """
    safe = json_safe(value, max_depth=max_depth, max_items=max_items, max_chars=max_chars)
    text = json.dumps(safe, ensure_ascii=False, allow_nan=False)
    if any(c in text for c in _LINE_BREAKS):
        for c, esc in _LINE_BREAKS.items():
            text = text.replace(c, esc)
    return text


def append_line(path: str | Path, value: Any) -> str:
    """Append ``value`` to the JSONL file ``path`` as one whole line; returns the line.

    The line is serialised completely (:func:`dumps`) before the file is touched, then
    written by :func:`append_text`.
    """
    line = dumps(value)
    append_text(path, line)
    return line


def append_text(path: str | Path, line: str) -> None:
    """Append one already-serialised line (strict JSON without a newline, as
    :func:`dumps` makes it) to the JSONL file ``path`` as one whole line (a
    :class:`LineAppender` used once).
    """
    with LineAppender(path) as out:
        out.write(line)


class LineAppender:
    """Appends whole lines to a JSONL file kept open (for a writer of many lines).

    Each line is written with one ``write`` on a file opened for appending, with
    ``SIGINT`` and ``SIGTERM`` held back meanwhile (on the main thread, where the platform
    allows), so that Ctrl-C cannot leave half a line: the interrupt arrives once the line
    is written. A file whose last line was cut off (a writer killed mid-line) gets a
    newline before the first new line, so the new record starts a line of its own. The
    data is in the operating system's hands when :meth:`write` returns (no ``fsync``).
    Parent folders are created.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
        self._fd: int | None = os.open(self.path, flags, 0o644)
        self._checked = False

    def write(self, line: str) -> None:
        """Append ``line`` (one line: no newline in it) and a newline."""
        if "\n" in line:
            raise ValueError("LineAppender.write takes one line (it holds a newline)")
        if self._fd is None:
            raise ValueError(f"LineAppender of {self.path} is closed")
        data = (line + "\n").encode("utf-8")
        fd = self._fd
        with signals_held():
            if not self._checked:
                size = os.fstat(fd).st_size
                if size:  # (writes go to the end whatever the read position)
                    os.lseek(fd, size - 1, os.SEEK_SET)
                    if os.read(fd, 1) != b"\n":
                        data = b"\n" + data
                self._checked = True
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> LineAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


try:  # the C function: signal.pthread_sigmask wraps it and turns its ints into enums
    # ignore: typeshed has no stub of the _signal C module
    from _signal import pthread_sigmask as _sigmask  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - not CPython, or no pthread_sigmask
    _sigmask = getattr(signal, "pthread_sigmask", None)
_HELD_SIGNALS = {int(signal.SIGINT), int(signal.SIGTERM)}


class _SignalsHeld:
    """The context manager of :func:`signals_held` (a class: cheaper than a generator's)."""

    __slots__ = ("old",)

    def __enter__(self) -> _SignalsHeld:
        self.old = None
        if _sigmask is not None and threading.current_thread() is threading.main_thread():
            self.old = _sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.old is not None:
            _sigmask(signal.SIG_SETMASK, self.old)


def signals_held() -> _SignalsHeld:
    """Hold back SIGINT and SIGTERM for the duration of a ``with`` block (main thread,
    POSIX only): a signal that arrives meanwhile is delivered at its end.
    """
    return _SignalsHeld()


class _Converter:
    """The walk behind :func:`json_safe` (one Python frame per level of nesting)."""

    def __init__(self, max_depth: int, max_items: int | None, max_chars: int | None) -> None:
        self.max_depth = max(0, int(max_depth))
        self.max_items = None if max_items is None else max(0, int(max_items))
        self.max_chars = None if max_chars is None else max(0, int(max_chars))
        self.active: set[int] = set()  # ids of the containers on the current path

    def convert(self, v: Any, depth: int) -> Any:
        if v is None or v is True or v is False:
            return v
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, (int, np.integer)):
            return _int(int(v))
        if isinstance(v, (float, np.floating)):
            return _float(v)
        if isinstance(v, (bytes, bytearray, memoryview)):
            return self.text(bytes(v).decode("utf-8", "replace"))
        if isinstance(v, np.ndarray):
            v = v.tolist()  # a 0-d array gives its scalar
            if not isinstance(v, list):
                return self.convert(v, depth)
        if isinstance(v, (Mapping, list, tuple, set, frozenset, deque)):
            return self.container(v, depth)
        return self.other(v, depth)

    def container(self, v: Any, depth: int) -> Any:
        kind = type(v).__name__
        if depth >= self.max_depth:
            return f"<{kind} nested deeper than {self.max_depth} levels>"
        if id(v) in self.active:
            return f"<cycle: {kind}>"
        self.active.add(id(v))
        try:
            if isinstance(v, Mapping):
                return self.mapping(v, depth)
            return self.sequence(v, depth)
        finally:
            self.active.discard(id(v))

    def mapping(self, v: Mapping, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        n = 0
        try:
            for k, item in v.items():
                if self.max_items is not None and n >= self.max_items:
                    out["..."] = f"<{len(v) - n} more items>"
                    break
                out[self.key(k)] = self.convert(item, depth + 1)
                n += 1
        except Exception as exc:  # a Mapping whose iteration fails
            out["..."] = f"<items unreadable: {type(exc).__name__}>"
        return out

    def sequence(self, v: Any, depth: int) -> list[Any]:
        out: list[Any] = []
        try:
            for item in v:
                if self.max_items is not None and len(out) >= self.max_items:
                    out.append(f"<{len(v) - len(out)} more items>")
                    break
                out.append(self.convert(item, depth + 1))
        except Exception as exc:
            out.append(f"<items unreadable: {type(exc).__name__}>")
        return out

    def key(self, k: Any) -> str:
        if isinstance(k, str):
            return self.text(k)
        if k is None or isinstance(k, (bool, np.bool_, int, np.integer, float, np.floating)):
            safe = self.convert(k, 0)
            if safe is None and k is not None:  # NaN / infinity as a key
                return str(float(k))
            return safe if isinstance(safe, str) else json.dumps(safe)
        return self.text(_repr(k))

    def other(self, v: Any, depth: int) -> Any:
        if hasattr(v, "to_dict") and callable(v.to_dict):
            try:
                d = v.to_dict()
            except Exception:
                return self.text(_repr(v))
            # depth + 1: an object whose to_dict() returns new objects forever stays bounded
            return self.convert(d, depth + 1) if d is not v else self.text(_repr(v))
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            fields = {f.name: getattr(v, f.name, None) for f in dataclasses.fields(v)}
            return self.convert(fields, depth + 1)
        if isinstance(v, complex):
            return self.text(repr(v))
        return self.text(_repr(v))

    def text(self, s: str) -> str:
        s = str.__str__(s)  # a plain str, also for subclasses
        m = self.max_chars
        if m is not None and len(s) > m:
            s = s[:m] + f"...[{len(s) - m} more characters]"
        return clean_str(s)


def _int(i: int) -> int | str:
    if -_INT_LIMIT < i < _INT_LIMIT:
        return i
    digits = int(i.bit_length() * _LOG10_2) + 1  # within one of the true count
    if digits <= MAX_INT_DIGITS:
        return str(i)
    return f"<{'negative ' if i < 0 else ''}integer of about {digits} digits>"


def _float(v: Any) -> float | None:
    try:
        f = float(v)
    except (OverflowError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _repr(v: Any, limit: int = 1000) -> str:
    try:
        r = repr(v)
    except Exception:  # including RecursionError from a deep structure's repr
        return f"<{type(v).__name__}>"
    if not isinstance(r, str):
        return f"<{type(v).__name__}>"
    return r if len(r) <= limit else r[:limit] + "..."
