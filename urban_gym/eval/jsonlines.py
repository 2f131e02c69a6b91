"""Strict JSON lines, fast: the C encoder of :mod:`json`, built once, checked against what
:func:`urban_gym.strict_json.dumps` would write, which it falls back to.

The records and traces of a run are plain values the package builds itself (dicts, lists
and tuples of strings, numbers, booleans and None): the C encoder writes them as
``strict_json.dumps`` does, several times faster, except for what :func:`strict_line`
checks for (NaN and the infinities, values that are not JSON types, integers of 64 bits or
more, lone surrogates, the line-separator characters).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from urban_gym.strict_json import dumps

_LINE_BREAKS = ("\u2028", "\u2029", "\x85")
# An integer that may exceed 64 bits (strict: a string) is a run of 19 digits or more with
# neither a point nor an exponent next to it (a float's repr has one: 0.00014285714286188522
# is no integer). Looked for in the bytes with every digit made 1, ".", "e" and "E" 2, every
# other byte 0 -- much cheaper than a regex: one translate and one find.
_INT_START = b"\x00" + b"\x01" * 19
_DIGIT_CLASSES = bytes(1 if 48 <= b <= 57 else 2 if b in b".eE" else 0 for b in range(256))


def has_long_int(text: str) -> bool:
    """Whether the JSON ``text`` may hold an integer of 19 digits or more (or a string
    with such a run of digits: a false alarm costs only the slow path).
    """
    marks = b"\x00" + text.encode("utf-8", "surrogatepass").translate(_DIGIT_CLASSES) + b"\x00"
    i = marks.find(_INT_START)
    while i != -1:
        j = i + len(_INT_START)
        while marks[j] == 1:
            j += 1
        if marks[j] != 2:  # the run ends without a point or exponent: an integer
            return True
        i = marks.find(_INT_START, j)
    return False


def _no_default(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not a JSON type")


def _make_encoder() -> Callable[[Any], str]:
    """``item -> JSON text`` as ``json.JSONEncoder(ensure_ascii=False, allow_nan=False)``
    writes it, with the C encoder built once (``JSONEncoder.encode`` builds one per call,
    which is a third of the cost of a trace line). Values that are not JSON types raise
    ``TypeError``, NaN and the infinities ``ValueError``, cycles ``RecursionError``.
    """
    try:
        from json import encoder as _json_encoder

        # ignore: typeshed does not declare CPython's C encoder
        make = _json_encoder.c_make_encoder  # type: ignore[attr-defined]
        if make is None:
            raise ImportError
        c_encode = make(
            None,
            _no_default,
            _json_encoder.encode_basestring,
            None,
            ": ",
            ", ",
            False,
            False,
            False,
        )
    except (ImportError, AttributeError, TypeError):  # pragma: no cover - no C accelerator
        return json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=_no_default).encode

    join = "".join

    def encode(item: Any) -> str:
        return join(c_encode(item, 0))

    return encode


encode = _make_encoder()


def strict_text(text: str, small_ints: bool) -> bool:
    """Whether ``text`` (output of the C encoder) is what :func:`urban_gym.strict_json.
    dumps` would write for the same value: no integer of 19 digits or more (unless
    ``small_ints``: :func:`has_long_int`), and, when not ASCII, UTF-8 encodable (no lone
    surrogate) and without line separators.
    """
    if not small_ints and has_long_int(text):
        return False
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return False
        if any(c in text for c in _LINE_BREAKS):
            return False
    return True


def strict_line(item: Any, small_ints: bool = False) -> str:
    """``item`` as one line of strict JSON, as :func:`urban_gym.strict_json.dumps` writes
    it, for the records this package builds (plain dicts of JSON values, shallow). Fast
    path: the C encoder, kept when its text is strict JSON (no NaN or infinity, only JSON
    types, no lone surrogates, no line-separator characters); anything else (and any line
    with a run of 19 digits, unless ``small_ints`` says the item holds no integer beyond 64
    bits) goes through ``strict_json.dumps``.
    """
    try:
        text = encode(item)
    except (TypeError, ValueError, RecursionError):
        return dumps(item)
    return text if strict_text(text, small_ints) else dumps(item)


__all__ = ["encode", "has_long_int", "strict_line", "strict_text"]
