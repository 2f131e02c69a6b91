"""Strict reading of JSON data from files (task suites, route files).

Python's :func:`json.loads` accepts more than plain data: ``NaN`` and ``Infinity``,
integers of any size up to 4300 digits (a 400-digit heading then overflows when it is
turned into a float), and nesting until the interpreter runs out of stack
(``RecursionError``). :func:`loads_strict` accepts only what every JSON reader agrees on
and what the package can compute with, and :func:`check_value` applies the same rules to
data built in Python:

* numbers: integers within the signed 64-bit range, finite floats;
* strings: valid Unicode (no lone surrogates, which cannot be written back as UTF-8);
* containers: lists (tuples in Python) and objects with string keys, at most
  :data:`MAX_DEPTH` levels deep.

Every violation raises :class:`JSONDataError` naming the offending value's place (e.g.
``limits.max_steps`` or ``goal.route[3]``); callers add the file and line.
"""

from __future__ import annotations

import json
import math
from typing import Any

from urban_gym.errors import JSONDataError

#: Deepest nesting of lists and objects accepted (the package's own data uses 6 levels).
MAX_DEPTH = 32
#: Largest integer magnitude accepted: the signed 64-bit range.
MAX_INT = 2**63 - 1


def show(value: Any, limit: int = 60) -> str:
    """A short ``repr`` of ``value`` for error messages, safe for any value: a huge
    integer is described by its size (``repr`` of a 5000-digit integer raises), a
    deeply nested container by its type, and long texts are cut to ``limit`` characters.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"<an integer of about {_digits(value)} digits>"
    try:
        r = repr(value)
    except (ValueError, RecursionError):
        r = f"<a deeply nested {type(value).__name__}>"
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _digits(value: int) -> int:
    return int(abs(value).bit_length() * math.log10(2)) + 1


def _reject_constant(name: str) -> Any:
    raise JSONDataError(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def loads_strict(text: str | bytes) -> Any:
    """Parse one JSON text and :func:`check_value` the result.

    Raises:
        JSONDataError: not JSON, ``NaN``/``Infinity``, an integer beyond 64 bits or with
            more than 4300 digits, a float beyond the double range, nesting deeper than
            :data:`MAX_DEPTH`, a lone surrogate in a string.
    """
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except JSONDataError:
        raise
    except RecursionError:
        raise JSONDataError(f"nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise JSONDataError(f"not valid JSON ({exc})") from None
    except ValueError as exc:  # Python's limit on the digits of an integer literal
        raise JSONDataError(f"a number is too long to be data ({_first_clause(exc)})") from None
    check_value(value)
    return value


def _first_clause(exc: Exception) -> str:
    return str(exc).split(";")[0]


def check_value(value: Any, where: str = "", depth: int = 0) -> None:
    """Raise :class:`JSONDataError` naming ``where`` (a dotted path) unless ``value`` is
    plain bounded JSON data (see the module docstring).
    """
    if _plain(value, depth):
        return  # the common case, checked without building the paths of the message
    _check(value, where, depth)


def _plain(value: Any, depth: int) -> bool:
    """Whether ``value`` is plain bounded JSON data made of the exact built-in types (a
    subclass, say an ``IntEnum``, gets False: :func:`_check` decides it). True only where
    :func:`_check` passes.
    """
    t = type(value)
    if t is str:
        return value.isascii() or _utf8(value)
    if t is float:
        return math.isfinite(value)
    if t is int:
        return -MAX_INT <= value <= MAX_INT
    if value is None or t is bool:
        return True
    if depth >= MAX_DEPTH:
        return False
    if t is dict:
        for k, v in value.items():
            if type(k) is not str or not (k.isascii() or _utf8(k)) or not _plain(v, depth + 1):
                return False
        return True
    if t is list or t is tuple:
        for v in value:
            if not _plain(v, depth + 1):
                return False
        return True
    return False


def _utf8(text: str) -> bool:
    """Whether ``text`` encodes to UTF-8 (no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check(value: Any, where: str, depth: int) -> None:
    """:func:`check_value`'s rules one by one, raising with the path of the first value
    that breaks one.
    """
    name = where or "the value"
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_INT:
            raise JSONDataError(
                f"{name}={show(value)} is out of range (integers are limited to 64 bits)"
            )
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise JSONDataError(f"{name}={value!r} is not a finite number")
        return
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise JSONDataError(
                f"{name} has a lone surrogate {value[exc.start]!r} at position {exc.start} "
                "(not valid Unicode)"
            ) from None
        return
    if depth >= MAX_DEPTH and isinstance(value, (list, tuple, dict)):
        raise JSONDataError(f"{name} is nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check(v, f"{where}[{i}]", depth + 1)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise JSONDataError(f"{name} has a key {show(k)} that is not a string")
            _check(k, f"{where}.{k}" if where else k, depth + 1)
            _check(v, f"{where}.{k}" if where else k, depth + 1)
        return
    raise JSONDataError(f"{name}={show(value)} is a {type(value).__name__}, not JSON data")
