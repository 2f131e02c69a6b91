"""What a line of ``episodes.jsonl`` must be to count: strict JSON (no ``NaN`` or
``Infinity``), an object, and its fields of the types the harness writes.

A report that took ``"is_success": "false"`` (a non-empty string) for a success, or a
``NaN`` score for a number, would state figures no run produced; :func:`record_problem`
names what is wrong with a record so that a reader refuses it (naming its line) or, on a
resume, moves it to the quarantine file (:mod:`urban_gym.eval.records`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

#: Record fields and the JSON types they may hold (``None`` for null).
FIELD_TYPES: dict[str, tuple[type | None, ...]] = {
    "task_id": (str,),
    "seed": (int,),
    "repeat": (int,),
    "is_success": (bool, None),
    "metrics": (dict, None),
    "steps": (int, None),
    "invalid_actions": (int, None),
    "tokens": (dict, None),
    "termination": (str, None),
}
#: The fields a record must have (its key).
REQUIRED: tuple[str, ...] = ("task_id", "seed", "repeat")
#: Metrics the report reads as numbers (a success may be a boolean).
NUMERIC_METRICS: tuple[str, ...] = ("success", "score", "spl")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not strict JSON")


def parse_strict(chunk: bytes) -> tuple[dict[str, Any] | None, str]:
    """``(object, "")`` for a line that is one strict-JSON object, else ``(None, why)``."""
    try:
        value = json.loads(chunk.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        return None, "not UTF-8"
    except ValueError as exc:  # JSONDecodeError, NaN / Infinity
        return None, f"not strict JSON ({exc})"
    except RecursionError:
        return None, "nested too deeply"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    return value, ""


def _type_name(types: tuple[type | None, ...]) -> str:
    names = {str: "a string", int: "an integer", bool: "true or false", dict: "an object"}
    return " or ".join("null" if t is None else names.get(t, t.__name__) for t in types)


def _is(value: Any, types: tuple[type | None, ...]) -> bool:
    for t in types:
        if t is None and value is None:
            return True
        if t is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if t is not None and t is not int and isinstance(value, t):
            return True
    return False


def record_problem(record: Mapping[str, Any]) -> str | None:
    """What is wrong with an episode record (a field missing or of the wrong type, a
    metric or token count that is not a finite number), or None when nothing is.
    """
    for name in REQUIRED:
        if name not in record:
            return f"no {name}"
    for name, types in FIELD_TYPES.items():
        if name in record and not _is(record[name], types):
            return f"{name} is {json.dumps(record[name])[:60]}, not {_type_name(types)}"
    if record["seed"] < 0 or record["repeat"] < 0:
        return "a negative seed or repeat"
    metrics = record.get("metrics") or {}
    for name in NUMERIC_METRICS:
        v = metrics.get(name)
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v)):
            return f"metrics.{name} is {json.dumps(v)[:60]}, not a number"
    for name, v in (record.get("tokens") or {}).items():
        if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool)):
            return f"tokens.{name} is {json.dumps(v)[:60]}, not a number"
    return None


__all__ = ["FIELD_TYPES", "NUMERIC_METRICS", "REQUIRED", "parse_strict", "record_problem"]
