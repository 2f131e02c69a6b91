"""Checking a CityWalk task's family fields and scoring an episode."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

from urban_gym.families.citywalk.tasks.types import CLOCK_RANGES, SUCCESS_RADIUS, TASK_TYPES
from urban_gym.tasks import metrics as M
from urban_gym.tasks.spec import TaskError, TaskSpec

#: Types whose arrival may be judged from the final view (``EpisodeOutcome.arrival_rule``).
VIEW_JUDGED_TYPES = ("PTS", "III")


def check_task(task: TaskSpec) -> TaskSpec:
    """``task`` if its CityWalk fields are well formed, else :class:`TaskError` naming the
    bad value (before an episode starts).
    """
    where = f"task {task.id!r}"
    if task.family != "citywalk":
        raise TaskError(f"{where}: family={task.family!r} is not 'citywalk'")
    if task.type not in TASK_TYPES:
        raise TaskError(f"{where}: type={task.type!r} is not one of {', '.join(TASK_TYPES)}")
    for k in ("x", "y", "heading"):
        v = task.start.get(k)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise TaskError(f"{where}: start.{k}={v!r} must be a finite number")
    _check_goal(task, where)
    for i, cl in enumerate(task.constraints.get("closures", []) or []):
        _check_closure(cl, i, where)
    cond = task.constraints.get("conditions") or {}
    if cond.get("time_of_day", "day") not in CLOCK_RANGES:
        raise TaskError(f"{where}: time_of_day={cond.get('time_of_day')!r} is not day/dusk/night")
    if cond.get("weather", "clear") not in ("clear", "fog", "rain"):
        raise TaskError(f"{where}: weather={cond.get('weather')!r} is not clear/fog/rain")
    return task


def _check_goal(task: TaskSpec, where: str) -> None:
    """A question's 4 options and answer, a navigation goal's finite ``x``/``y``, or a
    multi-stop task's non-empty list of stops with numeric ``x``/``y``.
    """
    kind = TASK_TYPES[task.type].kind
    if kind == "question":
        if len(task.options) != 4 or task.answer not in task.options:
            raise TaskError(
                f"{where}: a question needs 4 options and an answer among them "
                f"(options={list(task.options)!r}, answer={task.answer!r})"
            )
    elif kind == "navigation":
        for k in ("x", "y"):
            v = task.goal.get(k)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise TaskError(f"{where}: goal.{k}={v!r} must be a finite number")
        alts = task.goal.get("alternatives") or []
        if not isinstance(alts, list) or not all(
            isinstance(a, (list, tuple)) and len(a) >= 2 and _is_xy(list(a[:2])) for a in alts
        ):
            raise TaskError(
                f"{where}: goal.alternatives={alts!r} must be a list of [x, y, ...] places"
            )
    else:
        stops = task.goal.get("stops")
        if not isinstance(stops, list) or not stops:
            raise TaskError(f"{where}: goal.stops={stops!r} must be a non-empty list")
        for i, s in enumerate(stops):
            if not all(isinstance(s.get(k), (int, float)) for k in ("x", "y")):
                raise TaskError(f"{where}: goal.stops[{i}]={s!r} needs numeric x and y")


def _is_xy(p: object) -> bool:
    """Whether ``p`` is an ``[x, y]`` pair of finite numbers (metres)."""
    return (
        isinstance(p, (list, tuple))
        and len(p) == 2
        and all(isinstance(c, (int, float)) and math.isfinite(c) for c in p)
    )


def _check_closure(cl: object, i: int, where: str) -> None:
    """Closure ``i``: at least two distinct finite points, and an optional trigger
    ``[x, y, radius > 0]`` (metres).
    """
    pts = cl.get("points") if isinstance(cl, dict) else None
    ok = (
        isinstance(pts, list)
        and len(pts) >= 2
        and all(_is_xy(p) for p in pts)
        and len({tuple(p) for p in pts}) >= 2
    )
    if not ok:
        raise TaskError(
            f"{where}: closure {i} points={pts!r} must be >= 2 distinct finite [x, y] pairs"
        )
    trig = cast(dict, cl).get("trigger")  # its points were read: a dict
    if trig is not None and not (
        isinstance(trig, (list, tuple)) and len(trig) == 3 and float(trig[2]) > 0
    ):
        raise TaskError(f"{where}: closure {i} trigger={trig!r} must be [x, y, radius > 0]")


@dataclass
class EpisodeOutcome:
    """What happened in one episode, as the environment records it.

    ``positions``/``headings``/``clocks`` have one entry per step plus the start;
    ``durations``/``on_network``/``covered`` one per step (the state after the step).
    ``arrivals``: for each stop, the elapsed seconds when it was reached (or None).
    ``start_distance``/``end_distance``: walking distance (m) to the goal (or next stop).
    ``arrival_rule``: how a PTS / III arrival is judged, ``"position"`` (within the radius)
    or ``"view"`` (also ``arrival_sign_pixels`` >= ``arrival_min_pixels``: pixels of the
    arrived place's sign in the final first-person view).
    """

    positions: list[tuple[float, float]] = field(default_factory=list)
    headings: list[float] = field(default_factory=list)
    clocks: list[float] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    on_network: list[bool] = field(default_factory=list)
    covered: list[bool] = field(default_factory=list)
    path_length: float = 0.0
    closure_crossings: int = 0
    contacts: int = 0
    wall_hits: int = 0
    invalid_actions: int = 0
    steps: int = 0
    arrivals: list[float | None] = field(default_factory=list)
    answer_index: int | None = None
    start_distance: float = math.nan
    end_distance: float = math.nan
    arrival_rule: str = "position"
    arrival_sign_pixels: int | None = None
    arrival_min_pixels: int = 16


def evaluate(task: TaskSpec, rec: EpisodeOutcome) -> dict[str, float]:
    """The task's metrics for an episode (see the package docstring and
    :mod:`urban_gym.tasks.metrics`); SPL uses the task's shortest walking distance
    ``meta["shortest_m"]`` (m).
    """
    kind = TASK_TYPES[task.type].kind
    cond = task.constraints.get("conditions") or {}
    raining = cond.get("weather") == "rain"
    m: dict[str, float] = {
        "steps": float(rec.steps),
        "elapsed_s": round(float(sum(rec.durations)), 3),
        "path_length_m": round(rec.path_length, 3),
        "invalid_actions": float(rec.invalid_actions),
        "wall_hits": float(rec.wall_hits),
        "rain_exposure_s": round(M.rain_exposure(rec.durations, rec.covered, raining), 3),
    }
    adh = M.network_adherence(rec.durations, rec.on_network)
    if not math.isnan(adh):
        m["network_adherence"] = round(adh, 4)
    closures = task.constraints.get("closures") or []
    kept = True
    if closures:
        m["closure_crossings"] = float(rec.closure_crossings)
        m["closure_compliance"] = M.closure_compliance(rec.closure_crossings)
        kept = kept and rec.closure_crossings == 0
    if task.constraints.get("pedestrians"):
        # reported beside success, never a failure (UrbanGround's PCR, Table 4)
        m["pedestrian_contacts"] = float(rec.contacts)
        m["pedestrian_collision"] = 1.0 if rec.contacts else 0.0
        m["collision_rate"] = round(M.collision_rate(rec.contacts, rec.steps), 4)
    if kind == "question":
        correct = (
            rec.answer_index is not None
            and 0 <= rec.answer_index < len(task.options)
            and task.options[rec.answer_index] == task.answer
        )
        m["answer_accuracy"] = 1.0 if correct else 0.0
        m["success"] = m["answer_accuracy"]
        return m
    final = rec.positions[-1] if rec.positions else (task.start["x"], task.start["y"])
    if kind == "navigation":
        goal = (float(task.goal["x"]), float(task.goal["y"]))
        radius = float(task.goal.get("radius", SUCCESS_RADIUS))
        spots = [goal, *((float(p[0]), float(p[1])) for p in task.goal.get("alternatives") or [])]
        reached = any(M.coordinate_match(final, g, radius) for g in spots)
        m["distance_to_goal_m"] = round(min(math.dist(final, g) for g in spots), 3)
        if task.type in VIEW_JUDGED_TYPES:
            by_view = rec.arrival_rule == "view"
            m["arrival_by_view"] = 1.0 if by_view else 0.0
            if rec.arrival_sign_pixels is not None:
                m["arrival_sign_pixels"] = float(rec.arrival_sign_pixels)
            if by_view:
                seen = (rec.arrival_sign_pixels or 0) >= rec.arrival_min_pixels
                reached = reached and seen
    else:
        stops = task.goal["stops"]
        n_reached = sum(a is not None for a in rec.arrivals)
        m["fraction_reached"] = M.fraction_reached(n_reached, len(stops))
        reached = n_reached == len(stops)
        deadlines = [s.get("deadline") for s in stops]
        if any(d is not None for d in deadlines):
            start_clock = float(task.start.get("clock", 0.0))
            arr = [None if a is None else start_clock + a for a in rec.arrivals]
            m["on_time_rate"] = M.on_time_rate(arr, [float(d) for d in deadlines])
            kept = kept and m["on_time_rate"] == 1.0
    succ = M.success(reached, kept)
    m["success"] = succ
    sp = task.meta.get("shortest_m")
    if sp is not None:
        m["spl"] = round(M.spl(succ, float(sp), rec.path_length), 4)
    if math.isfinite(rec.start_distance) and math.isfinite(rec.end_distance):
        # The distances are walking distances from the nearest point of the network, so a
        # walker who steps off it to stand at the goal can arrive "farther": arriving counts
        # as ending closer.
        closer = reached or M.ended_closer(rec.start_distance, rec.end_distance)
        m["ended_closer"] = 1.0 if closer else 0.0
    ref = task.meta.get("reference_path")
    if ref and rec.positions:
        radius = float(task.goal.get("radius", SUCCESS_RADIUS))
        m["ndtw"] = round(M.ndtw(rec.positions, [tuple(p) for p in ref], radius), 4)
        m["sdtw"] = round(succ * m["ndtw"], 4)
    return m
