"""Calibrating a PoseGraph360 suite to 360CityArena's task statistics (its section 3.3):
choosing, among candidate tasks of one type and difficulty, the ones whose averages come
closest to the paper's, and checking a suite's averages against the paper's.

A generator draws a pool of candidates per difficulty (:data:`POOL_FACTOR` times the
tasks it needs), each inside the difficulty's band of :data:`~.types.THRESHOLDS`, and
:func:`closest_to_paper` keeps the tasks one by one, each time the candidate that brings
the running averages of the paper's statistics closest to the paper's values (relative
distance beyond :data:`SLACK`, summed over the statistics; ties go to the earlier draw,
so the tasks keep the spread of the draws). Where a city has
candidates on both sides of the paper's value the kept tasks straddle it; where it has
none as high (Helsinki's streets have fewer junctions per metre than Akihabara's), the
kept tasks are the city's highest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from urban_gym.families.posegraph360.tasks.types import CALIBRATION_TOLERANCE, PAPER_STATISTICS
from urban_gym.tasks.spec import TaskSpec

#: Candidates drawn per task kept, for the types a suite calibrates (:data:`CALIBRATED`).
POOL_FACTOR = 32
#: Running averages within this share of the paper's count as on target: among such
#: candidates the earlier draw is kept, so the tasks keep the spread of the draws instead
#: of all sitting on the paper's average.
SLACK = 0.03
#: Task type -> the paper's statistic (its :data:`~.types.PAPER_STATISTICS` key) -> the
#: task's ``meta`` key holding it: what the suite selection matches.
CALIBRATED: dict[str, dict[str, str]] = {
    "map_navigation": {"route_length_m": "route_length", "decision_points": "decision_points"},
}


def paper_targets(task_type: str, difficulty: str) -> dict[str, float]:
    """The paper's averages for ``task_type`` at ``difficulty`` that a suite is matched
    to, keyed by the tasks' ``meta`` key (empty when the paper reports none).
    """
    keys = CALIBRATED.get(task_type, {})
    paper = PAPER_STATISTICS.get(task_type, {}).get(difficulty, {})
    return {meta: float(paper[k]) for k, meta in keys.items() if k in paper}


def closest_to_paper(
    pool: Sequence[TaskSpec],
    k: int,
    targets: dict[str, float],
    value: Callable[[TaskSpec, str], float] | None = None,
) -> list[TaskSpec]:
    """``k`` tasks of ``pool`` (fewer when it is smaller) chosen greedily so that the
    averages of ``targets``' statistics come closest to their values (see the module
    docstring), in pool order. ``value(task, key)`` reads a statistic (default
    ``task.meta[key]``).
    """
    read = value or (lambda t, key: float(t.meta[key]))
    vals = [{key: read(t, key) for key in targets} for t in pool]
    sums = dict.fromkeys(targets, 0.0)
    rest = list(range(len(pool)))
    chosen: list[int] = []
    for _ in range(min(k, len(pool))):
        n = len(chosen) + 1
        gaps = [
            (
                round(
                    sum(
                        max(0.0, abs((sums[q] + vals[i][q]) / n - v) / v - SLACK)
                        for q, v in targets.items()
                    ),
                    12,
                ),
                i,
            )
            for i in rest
        ]
        best = min(gaps)[1]
        rest.remove(best)
        chosen.append(best)
        for key in targets:
            sums[key] += vals[best][key]
    return [pool[i] for i in sorted(chosen)]


def deviation(ours: float | None, paper: float | None) -> float | None:
    """``ours`` relative to ``paper`` (``+0.12`` = 12% above), None when either is missing."""
    if ours is None or paper is None or paper == 0:
        return None
    return ours / paper - 1.0


def within_tolerance(ours: float | None, paper: float | None) -> bool | None:
    """Whether ``ours`` lies within :data:`~.types.CALIBRATION_TOLERANCE` of ``paper``
    (None when either is missing).
    """
    dev = deviation(ours, paper)
    return None if dev is None else abs(dev) <= CALIBRATION_TOLERANCE + 1e-9


def calibration_check(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per statistic the paper reports, from :func:`~.suites.suite_statistics`
    rows: ``type``, ``difficulty``, ``statistic`` (the paper's key), ``ours``, ``paper``,
    ``deviation`` and ``ok`` (within the tolerance).
    """
    out = []
    for r in rows:
        for key, p in r.get("paper", {}).items():
            ours = r.get(key)
            out.append(
                {
                    "type": r["type"],
                    "difficulty": r["difficulty"],
                    "statistic": key,
                    "ours": ours,
                    "paper": p,
                    "deviation": deviation(ours, p),
                    "ok": within_tolerance(ours, p),
                }
            )
    return out
