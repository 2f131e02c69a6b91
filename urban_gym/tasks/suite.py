"""Task suites: JSONL files of :class:`~urban_gym.tasks.spec.TaskSpec`, one task per line,
and the statistics every family's suite report is made of.

Reading and writing are the same for every family (:func:`load_suite`, :func:`save_suite`);
a family's own suite statistics (route lengths, decision points, counts per type and
difficulty) are built from the generic pieces here: :func:`group_tasks`,
:func:`meta_values`, :func:`counts`, :func:`quantiles`, :func:`mean`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from urban_gym.errors import SuiteNotFoundError
from urban_gym.tasks.spec import TaskError, TaskSpec

#: the key that :func:`group_tasks` groups by
_Key = TypeVar("_Key", bound=Hashable)


def save_suite(path: str | os.PathLike, tasks: Iterable[TaskSpec]) -> Path:
    """Write tasks as JSONL (one task per line, keys sorted)."""
    p = Path(path)
    tasks = list(tasks)
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise TaskError(f"duplicate task ids {dup[:5]} in suite {p}")
    p.parent.mkdir(parents=True, exist_ok=True)
    lines = [t.to_json() for t in tasks]
    p.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    return p


def load_suite(path: str | os.PathLike) -> list[TaskSpec]:
    r"""Read a JSONL suite; a malformed line raises :class:`TaskError` with its line number.

    A UTF-8 byte-order mark is accepted. Lines are split at ``\n`` only (a task's text
    may hold U+2028 and other characters that :meth:`str.splitlines` would split at).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise SuiteNotFoundError(f"{p}: no such suite file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{p}: cannot read suite ({exc})") from exc
    tasks: list[TaskSpec] = []
    seen: set[str] = set()
    for no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            t = TaskSpec.from_json(line)
        except (TaskError, TypeError) as exc:
            raise TaskError(f"{p}, line {no}: {exc}") from None
        if t.id in seen:
            raise TaskError(f"{p}, line {no}: duplicate task id {t.id!r}")
        seen.add(t.id)
        tasks.append(t)
    return tasks


# --------------------------------------------------------------------------- statistics
def group_tasks(
    tasks: Iterable[TaskSpec], key: Callable[[TaskSpec], _Key]
) -> dict[_Key, list[TaskSpec]]:
    """Tasks grouped by ``key(task)``, groups and tasks in first-seen order."""
    out: dict[_Key, list[TaskSpec]] = {}
    for t in tasks:
        out.setdefault(key(t), []).append(t)
    return out


def meta_values(tasks: Iterable[TaskSpec], key: str) -> list[float]:
    """``task.meta[key]`` as floats, for the tasks whose meta has it (not None)."""
    return [float(t.meta[key]) for t in tasks if t.meta.get(key) is not None]


def counts(tasks: Iterable[TaskSpec], field: str) -> dict[str, int]:
    """How many tasks have each value of ``field`` (``"type"``, ``"difficulty"``, ...),
    sorted by value.
    """
    return dict(sorted(Counter(str(getattr(t, field)) for t in tasks).items()))


def mean(values: Sequence[float]) -> float | None:
    """The mean of ``values``, None when there are none."""
    return float(np.mean(values)) if len(values) else None


def quantiles(values: Sequence[float], digits: int = 1) -> dict[str, float]:
    """``min``, ``q25``, ``median``, ``q75``, ``max`` and ``mean`` of ``values``, rounded to
    ``digits`` decimals (an empty sequence raises ``ValueError``).
    """
    a = np.asarray(values, dtype=float)
    if not a.size:
        raise ValueError("quantiles of an empty sequence")
    p = np.percentile(a, [0, 25, 50, 75, 100])
    return {
        "min": round(float(p[0]), digits),
        "q25": round(float(p[1]), digits),
        "median": round(float(p[2]), digits),
        "q75": round(float(p[3]), digits),
        "max": round(float(p[4]), digits),
        "mean": round(float(a.mean()), digits),
    }


def suite_statistics(tasks: Sequence[TaskSpec], meta_keys: Iterable[str] = ()) -> dict[str, Any]:
    """Any suite: ``tasks`` (count), ``by_family``, ``by_type``, ``by_difficulty`` and, per
    meta key, the :func:`quantiles` of the tasks that have it (None when none has).
    """
    out: dict[str, Any] = {
        "tasks": len(tasks),
        "by_family": counts(tasks, "family"),
        "by_type": counts(tasks, "type"),
        "by_difficulty": counts(tasks, "difficulty"),
    }
    for key in meta_keys:
        vals = meta_values(tasks, key)
        out[key] = quantiles(vals) if vals else None
    return out


__all__ = [
    "counts",
    "group_tasks",
    "load_suite",
    "mean",
    "meta_values",
    "quantiles",
    "save_suite",
    "suite_statistics",
]
