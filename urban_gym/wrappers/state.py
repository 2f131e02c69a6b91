"""Reading the agent's privileged state from ``info`` and the task's markers from its spec.

The environments keep the true pose, the distance to the goal and the simulation clock in
``info`` (never in the observation), under the names of the info schema
(:mod:`urban_gym.envs.info`): ``pose`` = ``{"x", "y", "heading"}`` (metres, degrees
clockwise from north: where the agent faces) and ``distance_to_goal_m`` (metres). The
wrappers that need them -- the map, a graph memory -- read them
here, by those names and no others. Two family keys are read as well: ``clock`` (a simulation
clock, seconds) and ``node`` (the graph node an agent is at).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from urban_gym.world.grid import GridOverlay


@dataclass(frozen=True)
class Pose:
    """Position (metres, x east, y north) and heading (degrees clockwise from north)."""

    x: float
    y: float
    heading: float = 0.0

    def to_dict(self) -> dict[str, float]:
        """The pose as ``{"x", "y", "heading"}`` (metres, degrees), rounded."""
        return {"x": round(self.x, 3), "y": round(self.y, 3), "heading": round(self.heading, 2)}


def read_pose(info: Mapping[str, Any]) -> Pose | None:
    """``info["pose"]`` as a :class:`Pose`, or None when the env reports none."""
    p = info.get("pose")
    if not isinstance(p, Mapping):
        return None
    x, y, heading = _num(p.get("x")), _num(p.get("y")), _num(p.get("heading"))
    if x is None or y is None:
        return None
    return Pose(x, y, heading or 0.0)


def read_distance(info: Mapping[str, Any]) -> float | None:
    """``info["distance_to_goal_m"]`` in metres; None when the task has no goal position
    (the schema's ``inf``) or the env reports none.
    """
    return _num(info.get("distance_to_goal_m"))


def read_clock(info: Mapping[str, Any]) -> float | None:
    """The simulation clock ``info["clock"]`` in seconds, if the env has one."""
    return _num(info.get("clock"))


def read_node(info: Mapping[str, Any]) -> Any:
    """The graph node ``info["node"]`` (the intersection the agent is at), if the
    env has one.
    """
    v: Any = info.get("node")
    return v.item() if hasattr(v, "item") else v


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


# --------------------------------------------------------------------------- task markers


@dataclass
class TaskMarkers:
    """Points and lines of a task to draw on a map (metres, x east, y north)."""

    start: tuple[float, float] | None = None
    goal: tuple[float, float] | None = None
    destinations: list[tuple[float, float]] = field(default_factory=list)
    closures: list[list[tuple[float, float]]] = field(default_factory=list)
    grid: GridOverlay | None = None


def task_markers(task: Any) -> TaskMarkers:
    """The start, goal, destinations, closures and localization grid of a task spec.

    Reads ``start`` (``x``/``y``), ``goal`` (``x``/``y`` or ``position``, ``destinations``
    or ``stops`` as lists of points or of objects with ``x``/``y``, ``grid`` as
    ``[x0, y0, x1, y1]`` with ``nx``/``ny`` beside it or as ``{"bounds", "nx", "ny"}``) and
    ``constraints["closures"]`` (lists of points, or objects with ``points``). Anything
    absent is left empty.
    """
    m = TaskMarkers()
    if task is None:
        return m
    start = getattr(task, "start", {}) or {}
    goal = getattr(task, "goal", {}) or {}
    constraints = getattr(task, "constraints", {}) or {}
    m.start = _point(start)
    m.goal = _point(goal) or _point(goal.get("position"))
    for key in ("destinations", "stops", "targets", "waypoints"):
        for d in goal.get(key, []) or []:
            p = _point(d)
            if p is not None:
                m.destinations.append(p)
    for c in constraints.get("closures", []) or []:
        pts = c.get("points", c.get("line", c.get("waypoints"))) if isinstance(c, Mapping) else c
        line = [p for p in (_point(q) for q in (pts or [])) if p is not None]
        if len(line) >= 2:
            m.closures.append(line)
    grid = goal.get("grid") or getattr(task, "meta", {}).get("grid")
    if isinstance(grid, Mapping) and "bounds" in grid:  # {"bounds": [...], "nx", "ny"}
        bounds, nx, ny = grid["bounds"], grid.get("nx", 5), grid.get("ny", 5)
    else:  # a localization goal: {"grid": [x0, y0, x1, y1], "nx", "ny"}
        bounds, nx, ny = grid, goal.get("nx", 5), goal.get("ny", 5)
    if isinstance(bounds, Sequence) and not isinstance(bounds, str) and len(bounds) == 4:
        try:
            m.grid = GridOverlay(tuple(float(v) for v in bounds), int(nx), int(ny))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            m.grid = None
    return m


def _point(p: Any) -> tuple[float, float] | None:
    if isinstance(p, Mapping):
        x, y = _num(p.get("x")), _num(p.get("y"))
        return (x, y) if x is not None and y is not None else None
    if isinstance(p, Sequence) and not isinstance(p, str) and len(p) >= 2:
        x, y = _num(p[0]), _num(p[1])
        return (x, y) if x is not None and y is not None else None
    return None
