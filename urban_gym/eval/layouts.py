"""Report layouts: ``urban-gym report --layout NAME`` lays the results out as a paper's
tables.

The default report (layout :data:`STANDARD`) is the same for every family: success, score
and SPL by task type, difficulty and category, failure causes, comparisons
(:mod:`urban_gym.eval.report`). A family whose paper reports its results in tables of its
own declares a layout for them
(:meth:`~urban_gym.tasks.families.Family.report_layouts`): a :class:`ReportLayout`. With
``--layout NAME`` the report keeps every standard section and adds the layout's:

* per run, ``layout.results(run, results, resamples, seed)`` computes the layout's cells
  (JSON, kept in ``report.json`` under the run's ``results[...]["layout"]``; ``results``
  is the run's standard results, failure causes included when they were computed);
* across runs, ``layout.markdown(rows)`` lays them out, one row per run as papers print
  them (``rows``: ``[(run name, layout results), ...]``); the section opens
  ``report.md`` after the leaderboard, and ``urban-gym report`` prints it.

A cell is a mean over tasks with its 95% percentile-bootstrap interval, computed with the
report's own statistics (:func:`cell`; :mod:`urban_gym.eval.stats`: the unit resampled is
the task, a task's episodes are averaged first). Pooling the tasks of several types in one
cell weights each type by its number of tasks (an instance-count-weighted mean).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from urban_gym.errors import InputError
from urban_gym.eval import stats

#: The default report's layout name.
STANDARD = "standard"


@dataclass(frozen=True)
class ReportLayout:
    """A family's layout of ``urban-gym report`` (see the module docstring).

    Attributes:
        name: what ``--layout`` names it (lower case).
        title: the heading of its section in ``report.md``.
        results: ``(run, results, resamples, seed) -> dict``: one run's cells
            (JSON-serialisable); ``run`` is an :class:`urban_gym.eval.report.Run`,
            ``results`` its standard results.
        markdown: ``(rows) -> list of lines``: the section's Markdown, ``rows`` being
            ``[(run name, its layout results), ...]`` in the report's order.
        description: one line for ``urban-gym report --help`` and the error that lists
            the layouts.
    """

    name: str
    title: str
    results: Callable[[Any, dict[str, Any], int, int], dict[str, Any]]
    markdown: Callable[[Sequence[tuple[str, Mapping[str, Any]]]], list[str]]
    description: str = ""


def available_layouts() -> dict[str, list[str]]:
    """Every layout name -> the titles of the registered families that offer it
    (:data:`STANDARD`: every family, an empty list).
    """
    from urban_gym.tasks.families import FAMILIES

    out: dict[str, list[str]] = {STANDARD: []}
    for fam in FAMILIES.values():
        for n in fam.report_layout_entries:
            out.setdefault(n, []).append(fam.title)
    return out


def _listing() -> str:
    return ", ".join(
        n + (f" ({', '.join(t)})" if t else " (every family)")
        for n, t in available_layouts().items()
    )


def resolve_layout(name: str | None, families: Iterable[str]) -> ReportLayout | None:
    """The :class:`ReportLayout` called ``name`` for runs of ``families`` (None for the
    standard report: ``name`` None or :data:`STANDARD`). Raises :class:`InputError` naming
    ``name`` and the layouts available when no family offers it, or naming the family of a
    run that does not offer it.
    """
    if name is None or name == STANDARD:
        return None
    from urban_gym.tasks.families import FAMILIES

    offered = available_layouts()
    if name not in offered:
        raise InputError(f"--layout {name!r} is not a report layout; available: {_listing()}")
    found: ReportLayout | None = None
    for fname in dict.fromkeys(families):
        fam = FAMILIES.get(fname)
        if fam is None or name not in fam.report_layout_entries:
            raise InputError(
                f"--layout {name!r} is {', '.join(offered[name])}'s; a run of family "
                f"{fname!r} cannot be laid out with it (available: {_listing()})"
            )
        lay = fam.report_layouts()[name]
        if not isinstance(lay, ReportLayout):
            raise InputError(
                f"family {fname!r}: report layout {name!r} is {type(lay).__name__}, "
                "not a ReportLayout"
            )
        found = found or lay
    if found is None:
        raise InputError(f"--layout {name!r}: no runs to lay out")
    return found


def metric_value(record: Mapping[str, Any], name: str) -> float | None:
    """An episode record's metric ``name`` as a float (``"success"``: its ``is_success``),
    None where the record has no finite value for it.
    """
    if name == "success":
        return 1.0 if record.get("is_success") else 0.0
    v = (record.get("metrics") or {}).get(name)
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


def cell(
    records: Iterable[Mapping[str, Any]],
    value: Callable[[Mapping[str, Any]], float | None],
    stream: str,
    resamples: int = stats.RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """The mean of ``value(record)`` over the tasks of ``records`` (a task's episodes
    averaged first; records where ``value`` is None left out) with its 95% percentile-
    bootstrap interval over tasks (bootstrap stream ``stream``): ``{"mean", "low",
    "high", "tasks", "episodes"}``, the three numbers None when no record has a value.
    """
    ids: list[str] = []
    vals: list[float] = []
    for r in records:
        v = value(r)
        if v is not None and math.isfinite(v):
            ids.append(str(r.get("task_id")))
            vals.append(float(v))
    if not vals:
        return {"mean": None, "low": None, "high": None, "tasks": 0, "episodes": 0}
    tasks, means = stats.task_means(ids, np.array(vals, dtype=np.float64))
    samples = stats.bootstrap_means(means, resamples, stats.stream_seed(seed, stream))
    lo, hi = stats.percentile_ci(samples)
    return {
        "mean": round(float(np.mean(means)), 6),
        "low": round(float(lo[0]), 6),
        "high": round(float(hi[0]), 6),
        "tasks": len(tasks),
        "episodes": len(vals),
    }


__all__ = [
    "STANDARD",
    "ReportLayout",
    "available_layouts",
    "cell",
    "metric_value",
    "resolve_layout",
]
