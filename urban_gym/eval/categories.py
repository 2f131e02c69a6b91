"""The groups a report breaks results into: each task's category, and the task facts the
report's analyses need (goal radius, shortest route, decision points).

Categories follow the papers: each family says what a task's category is
(:meth:`~urban_gym.tasks.families.Family.task_category`; by default the type's ``level``
when the type table gives one, else the task type).
"""

from __future__ import annotations

import math
from typing import Any


def task_category(task: Any) -> str:
    """The category of a :class:`~urban_gym.tasks.spec.TaskSpec` (module docstring); the
    task type for a task of no registered family.
    """
    from urban_gym.tasks.families import FAMILIES

    fam = FAMILIES.get(task.family)
    return fam.task_category(task) if fam is not None else str(task.type)


def task_kind(task: Any) -> str:
    """The kind of the task's type (``navigation``, ``question``, ``multi_stop``...)."""
    return str(_type_info(task).get("kind", ""))


def _type_info(task: Any) -> dict[str, Any]:
    from urban_gym.tasks.families import FAMILIES

    fam = FAMILIES.get(task.family)
    if fam is None:
        return {}
    tt = fam.tasks().TASK_TYPES.get(task.type)
    return {"level": getattr(tt, "level", ""), "kind": getattr(tt, "kind", "")}


def task_facts(task: Any) -> dict[str, Any]:
    """What the report's analyses need of a task: ``goal_radius_m``, ``shortest_m`` (the
    shortest route's length, metres), ``straight_m`` (start to goal, metres),
    ``decision_points``, ``variant`` and ``base_task`` (the task a variant varies; None
    when the task lacks it); ``bbox``, the true box of a grounded task (normalised
    ``[x0, y0, x1, y1]``), only when it has one. A task paired for the dual metrics
    (``meta["pair"]``, :mod:`urban_gym.eval.dual`) adds ``pair``, ``truth`` (its answer
    text, which the run-level rescoring of :mod:`urban_gym.eval.grounded` reads) and,
    when its goal has them, ``candidate_bboxes`` (option id -> the target's box in that
    candidate image) and ``fps``.
    """
    g, meta = task.goal or {}, task.meta or {}
    radius = g.get("radius")
    shortest = meta.get(
        "shortest_m", meta.get("route_length_m", g.get("route_length", meta.get("route_length")))
    )
    straight = None
    try:
        gx, gy = (g["x"], g["y"]) if "x" in g else g["position"]
        straight = math.dist((float(task.start["x"]), float(task.start["y"])), (gx, gy))
    except (KeyError, TypeError, ValueError):
        pass
    facts = {
        "goal_radius_m": _num(radius),
        "shortest_m": _num(shortest),
        "straight_m": _num(straight),
        "decision_points": _num(meta.get("decision_points")),
        "variant": meta.get("variant"),
        "base_task": meta.get("base_task"),
    }
    if g.get("bbox") is not None:
        facts["bbox"] = [float(v) for v in g["bbox"]]
    if isinstance(meta.get("pair"), dict):
        facts["pair"] = dict(meta["pair"])
        facts["truth"] = task.answer
        if isinstance(g.get("candidate_bboxes"), dict):
            facts["candidate_bboxes"] = dict(g["candidate_bboxes"])
        if meta.get("fps") is not None:
            facts["fps"] = _num(meta["fps"])
    return facts


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return round(f, 3) if math.isfinite(f) else None


__all__ = ["task_category", "task_facts", "task_kind"]
