"""Reading the agent's privileged state from ``info`` and the task's markers from its spec.

The environments keep the true pose, the distance to the goal and the simulation clock in
``info`` (never in the observation). The wrappers that need them -- the map, the episode
record, the AgentNav memory -- read them here, in one place, so that each family's key
names are known to one module.

Pose: ``info["pose"]`` as a mapping with ``x``, ``y`` and ``heading`` (CityWalk), or
``info["position"] = (x, y)`` with ``info["yaw"]`` / ``info["heading"]`` (PoseGraph360,
StreetGraph), in metres and degrees clockwise from north. Distance to the goal:
``info["distance_to_goal"]`` (PoseGraph360, CityWalk) or ``info["remaining_m"]``
(StreetGraph), metres. Clock: ``info["clock"]`` (seconds). Graph node: ``info["node"]``.
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
        return {"x": round(self.x, 3), "y": round(self.y, 3), "heading": round(self.heading, 2)}


_HEADING_KEYS = ("heading", "yaw", "bearing", "theta")
_CLOCK_KEYS = ("clock", "time", "sim_time", "elapsed", "t")
_DISTANCE_KEYS = ("distance_to_goal", "remaining_m", "goal_distance", "remaining_distance")
_NODE_KEYS = ("node", "intersection", "node_id", "pano_id", "panoid")


def read_pose(info: Mapping[str, Any]) -> Pose | None:
    """The agent's pose from ``info`` (see the module docstring), or None if absent.

    A position without a heading (``info["position"] = (x, y)``) takes the heading from
    ``info["yaw"]`` (where the camera looks) or ``info["heading"]``, else 0.
    """
    for key in ("pose", "agent_pose", "position", "agent", None):
        found = _pose_from(info if key is None else info.get(key))
        if found is not None:
            x, y, heading = found
            if heading is None:
                heading = _first_number(info, _HEADING_KEYS[1::-1] + _HEADING_KEYS[2:])
            return Pose(x, y, heading or 0.0)
    return None


def _pose_from(p: Any) -> tuple[float, float, float | None] | None:
    if isinstance(p, Mapping):
        x, y = _num(p.get("x")), _num(p.get("y"))
        if x is None or y is None:
            return None
        return x, y, _first_number(p, _HEADING_KEYS)
    if hasattr(p, "shape") and getattr(p, "shape", None) in ((2,), (3,)):
        p = [float(v) for v in p]
    if isinstance(p, Sequence) and not isinstance(p, str) and len(p) in (2, 3):
        vals = [_num(v) for v in p]
        if any(v is None for v in vals):
            return None
        return vals[0], vals[1], vals[2] if len(vals) == 3 else None  # type: ignore[return-value]
    return None


def read_clock(info: Mapping[str, Any]) -> float | None:
    """The simulation clock in seconds, if the env reports one."""
    return _first_number(info, _CLOCK_KEYS)


def read_distance(info: Mapping[str, Any]) -> float | None:
    """The distance to the goal in metres, if the env reports one."""
    return _first_number(info, _DISTANCE_KEYS)


def read_node(info: Mapping[str, Any]) -> Any:
    """The graph node (intersection, panorama) the agent is at, if the env reports one."""
    for k in _NODE_KEYS:
        if k in info and info[k] is not None:
            v = info[k]
            return v.item() if hasattr(v, "item") else v
    return None


def _first_number(info: Mapping[str, Any], keys: Sequence[str]) -> float | None:
    for k in keys:
        v = _num(info.get(k))
        if v is not None:
            return v
    return None


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
    else:  # PoseGraph360 localization: goal = {"grid": [x0, y0, x1, y1], "nx", "ny"}
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
