"""Scoring a PoseGraph360 episode and checking a task's family fields."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from urban_gym.families.posegraph360.tasks.grounded_image import IMAGE_TASK_TYPES
from urban_gym.families.posegraph360.tasks.types import (
    FAMILY,
    GOAL_RADIUS_M,
    NAVIGATION_TYPES,
    RENAMED_TYPES,
    TASK_TYPES,
)
from urban_gym.tasks import metrics
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.world.grid import GridOverlay


@dataclass
class EpisodeOutcome:
    """What an episode did, as the evaluator needs it.

    ``answer`` is the ANSWER text (None when the episode ended otherwise); ``path`` the
    visited positions (m), ``reference_path`` the shortest route's positions (m);
    ``departures`` the ``(before, after)`` remaining route distances (m) of every move
    out of a junction; ``judge`` the fuzzy-match judge of names ``(prediction,
    candidates) -> bool`` (None: normalised names plus aliases).
    """

    answer: str | None
    position: tuple[float, float]
    path: list[tuple[float, float]] = field(default_factory=list)
    reference_path: list[tuple[float, float]] = field(default_factory=list)
    shortest_length: float = 0.0
    departures: list[tuple[float, float]] = field(default_factory=list)
    steps: int = 0
    invalid_actions: int = 0
    judge: Callable[[str, Sequence[str]], bool] | None = None


def evaluate(task: TaskSpec, outcome: EpisodeOutcome) -> dict[str, float]:
    """The task's scores (:mod:`urban_gym.tasks.metrics`). An episode scores only when
    it ended with ANSWER. ``score`` is the headline number (MRA for counts, success
    otherwise); names are matched with ``outcome.judge``.
    """
    answered = outcome.answer is not None
    m: dict[str, float] = {
        "answered": float(answered),
        "steps": float(outcome.steps),
        "invalid_actions": float(outcome.invalid_actions),
        "path_length": metrics.path_length(outcome.path),
    }
    tt = task.type
    if tt in NAVIGATION_TYPES:
        goal = (float(task.goal["x"]), float(task.goal["y"]))
        radius = float(task.goal.get("radius", GOAL_RADIUS_M))
        within = metrics.coordinate_match(outcome.position, goal, radius)
        ok = metrics.success(answered and within)
        m.update(
            success=ok,
            coordinate_match=float(answered and within),
            distance_to_goal=math.dist(outcome.position, goal),
            spl=metrics.spl(ok, outcome.shortest_length, m["path_length"]),
            decision_accuracy=metrics.decision_accuracy(
                [b for b, _ in outcome.departures], [a for _, a in outcome.departures]
            ),
        )
        if tt == "vln" and outcome.reference_path and outcome.path:
            # one DTW for both: SDTW is success times nDTW (metrics.sdtw's formula)
            nd = metrics.ndtw(outcome.path, outcome.reference_path, radius)
            m["ndtw"], m["sdtw"] = nd, float(ok) * nd
        m["score"] = ok
        return m
    if tt == "localization":
        ok = float(answered and metrics.exact_match(outcome.answer, task.answer))
        # the same cell written another way ("x: 2, y: 4") is reported, not scored
        lenient = answered and metrics.exact_match(_grid_label(outcome.answer), task.answer)
        m.update(exact_match=ok, grid_match=float(lenient), success=ok, score=ok)
        return m
    if tt == "object_count":
        truth = float(task.answer)
        mra = metrics.mean_relative_accuracy(outcome.answer, truth) if answered else 0.0
        ok = float(answered and metrics.normalized_match(outcome.answer, truth))
        m.update(mra=mra, count_accuracy=ok, success=ok, score=mra)
        return m
    if tt == "relational":
        aliases = task.goal.get("aliases", [])
        ok = float(
            answered and metrics.fuzzy_match(outcome.answer, task.answer, aliases, outcome.judge)
        )
        m.update(fuzzy_match=ok, success=ok, score=ok)
        return m
    if tt == "landmark_bbox":
        from urban_gym.families.posegraph360.tasks.grounded import score_bbox

        g = score_bbox(task.goal["bbox"], outcome.answer) if answered else score_bbox([], None)
        m.update(g, success=g["bbox_acc50"], score=g["bbox_iou"])
        return m
    if tt in IMAGE_TASK_TYPES:
        from urban_gym.families.posegraph360.tasks.grounded_image import score_choice

        g = score_choice(task, outcome.answer if answered else None)
        m.update(g, success=g["semantic_ok"], score=g["option_correct"])
        return m
    if tt == "landmark_visibility":
        from urban_gym.families.posegraph360.tasks.video import score_visibility

        m.update(score_visibility(task.goal, outcome.answer if answered else None))
        return m
    if tt in ("composite_behaviour", "atomic_behaviour"):
        from urban_gym.families.posegraph360.tasks.video import score_behaviours

        m.update(score_behaviours(tt, task.goal, outcome.answer if answered else None))
        return m
    raise TaskError(f"task {task.id!r}: unknown posegraph360 task type {tt!r}")


def _grid_label(answer: str | None) -> str | None:
    if answer is None:
        return None
    parsed = GridOverlay((0.0, 0.0, 1.0, 1.0), 5, 5).parse(answer)
    return GridOverlay.label(*parsed) if parsed else answer


def check_task(task: TaskSpec) -> TaskSpec:
    """``task`` if it is a well-formed PoseGraph360 task, else :class:`TaskError`
    naming what is wrong.
    """
    if task.family != FAMILY:
        raise TaskError(f"task {task.id!r}: family={task.family!r}, expected {FAMILY!r}")
    if task.type in RENAMED_TYPES:
        raise TaskError(
            f"task {task.id!r}: type={task.type!r} was renamed {RENAMED_TYPES[task.type]!r} "
            "(answered in seconds over a walk's frames); regenerate the suite with "
            "`urban-gym generate-suite posegraph360 --track grounded`"
        )
    if task.type not in TASK_TYPES:
        raise TaskError(
            f"task {task.id!r}: type={task.type!r} is not one of {', '.join(TASK_TYPES)}"
        )
    for k in ("x", "y"):
        if not isinstance(task.start.get(k), (int, float)):
            raise TaskError(f"task {task.id!r}: start.{k} must be a number, got {task.start!r}")
    if task.type in NAVIGATION_TYPES:
        for k in ("x", "y", "radius"):
            if not isinstance(task.goal.get(k), (int, float)):
                raise TaskError(f"task {task.id!r}: goal.{k} must be a number, got {task.goal!r}")
    elif task.answer is None:
        raise TaskError(f"task {task.id!r}: a {task.type} task needs an answer")
    return task
