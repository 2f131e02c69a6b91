"""Routes on the pose graph for PoseGraph360 tasks: a task's start and goal states, the
shortest route with its decision points, and the oracle's action plan (metres, degrees).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from urban_gym.families.posegraph360.tasks.types import (
    DEFAULT_FORWARD_FRAMES,
    NAVIGATION_TYPES,
    ROTATIONS,
)
from urban_gym.families.posegraph360.world import (
    DEFAULT_SPACING_M,
    PoseGraph,
    State,
    load_posegraph,
    route_points,
)
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.world.geo import angle_diff
from urban_gym.world.grid import GridOverlay


def graph_params(task: TaskSpec) -> dict[str, Any]:
    """The pose-graph parameters a task was generated on (``meta["posegraph"]``)."""
    p = dict(task.meta.get("posegraph") or {})
    p.setdefault("spacing", DEFAULT_SPACING_M)
    return p


def tasks_spacing(tasks: Sequence[TaskSpec], spacing: float | None = None) -> float:
    """The frame spacing (m) of the pose graph ``tasks`` were made on (their
    :func:`graph_params`), which an explicit ``spacing`` must match; ``TaskError`` when
    they disagree.
    """
    found = sorted({float(graph_params(t)["spacing"]) for t in tasks})
    if spacing is not None:
        if any(v != float(spacing) for v in found):
            raise TaskError(
                f"spacing={spacing!r} m, but the tasks were made on a pose graph with "
                f"spacing {found} m (meta.posegraph)"
            )
        return float(spacing)
    if len(found) > 1:
        raise TaskError(f"the tasks were made on pose graphs of spacings {found} m; pick one")
    return found[0] if found else DEFAULT_SPACING_M


def graph_for(task: TaskSpec) -> PoseGraph:
    """The (memoised) pose graph of a task's city and parameters."""
    return load_posegraph(task.city, **graph_params(task))


def start_state(graph: PoseGraph, task: TaskSpec) -> State:
    """The task's start state on ``graph``: its ``trajectory``/``frame`` when they exist
    and lie within 1 m of ``x``/``y``, else the frame nearest to ``x``/``y`` (with the
    closest heading) -- so tasks also run on an imported graph of the same place.
    """
    st = task.start
    try:
        x, y = float(st["x"]), float(st["y"])
    except (KeyError, TypeError, ValueError) as exc:
        raise TaskError(f"task {task.id!r}: start needs numeric x and y, got {st!r}") from exc
    t, f = st.get("trajectory"), st.get("frame")
    if isinstance(t, int) and isinstance(f, int) and 0 <= t < len(graph.trajectories):
        tr = graph.trajectories[t]
        if 0 <= f < tr.n_frames and math.dist(tr.xy[f], (x, y)) <= 1.0:
            return State(t, f)
    return graph.nearest_state(x, y, st.get("heading"))


@dataclass(frozen=True)
class EpisodeStart:
    """What an episode of a task starts from on a pose graph.

    Attributes:
        state: the start frame.
        field: the distance field to the goal frames (None but for navigation tasks).
        distance: metres along the graph from the start to the goal (nan without a goal,
            inf when it is unreachable).
        geodesic: straight-line metres from the start to the nearest goal frame (nan
            without a goal).
        route: the reference route's points, ``(x, y)`` metres (empty without a goal or
            when it is unreachable).
    """

    state: State
    field: Any = None
    distance: float = math.nan
    geodesic: float = math.nan
    route: tuple[tuple[float, float], ...] = ()


def task_start(graph: PoseGraph, task: TaskSpec) -> EpisodeStart:
    """What an episode of ``task`` on ``graph`` starts from (:class:`EpisodeStart`)."""
    state = start_state(graph, task)
    if task.type not in NAVIGATION_TYPES:
        return EpisodeStart(state)
    field_ = graph.distance_field(goal_states(graph, task))
    dist = field_.distance(state)
    ref = tuple(route_points(graph, field_.route(state))) if math.isfinite(dist) else ()
    return EpisodeStart(state, field_, dist, field_.geodesic(state), ref)


def goal_states(graph: PoseGraph, task: TaskSpec) -> list[State]:
    """The frames that count as the goal frame of a navigation task."""
    try:
        return graph.goal_states(float(task.goal["x"]), float(task.goal["y"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise TaskError(f"task {task.id!r}: goal needs numeric x and y, got {task.goal!r}") from exc


@dataclass
class RouteInfo:
    """A shortest route: its states, length (m), junction decisions and the turns at
    them (``(junction, turn degrees, next street)``).
    """

    states: list[State]
    length: float
    decisions: int
    turns: list[tuple[int, float, str | None]]


def route_info(graph: PoseGraph, start: State, goals: Sequence[State]) -> RouteInfo:
    """The shortest route from ``start`` to ``goals`` with its decision points: every
    switch onto another trajectory at a junction (going straight on needs one too).
    """
    field_ = graph.distance_field(goals)
    states = field_.route(start)
    turns: list[tuple[int, float, str | None]] = []
    for a, b in zip(states[:-1], states[1:]):
        if b.trajectory != a.trajectory:
            ta, tb = graph.trajectories[a.trajectory], graph.trajectories[b.trajectory]
            arrive = ta.arrival if a.frame == ta.last else float(ta.heading[a.frame])
            turns.append((tb.start, float(angle_diff(tb.departure, arrive)), tb.street))
    return RouteInfo(states, field_.distance(start), len(turns), turns)


def plan_route(
    graph: PoseGraph,
    state: State,
    yaw: float,
    goals: Sequence[State],
    forward_frames: Sequence[int] = DEFAULT_FORWARD_FRAMES,
    field_: Any = None,
    max_actions: int = 500,
) -> list[tuple[dict[str, Any], State]]:
    """The oracle's structured actions, each with the state it leads to, from ``state`` (camera offset ``yaw`` degrees from
    the travel direction) to the nearest goal frame, ending with ``ANSWER``.

    At a junction it picks the branch of a shortest route, turning the camera (A/D, the
    size that brings the branch closest to straight ahead) until a branch action selects
    it; along a trajectory it moves with the largest W that does not pass the goal frame.
    """
    f = field_ or graph.distance_field(goals)
    if not math.isfinite(f.distance(state)):
        raise TaskError(f"no route from {state} to the goal")
    sizes = sorted(
        ((n, s) for n, s in zip(forward_frames, ("SMALL", "MEDIUM", "LARGE"))), reverse=True
    )
    actions: list[tuple[dict[str, Any], State]] = []
    s, yaw = state, float(yaw)
    while len(actions) < max_actions:
        if f.is_goal(s):
            actions.append(({"action": "ANSWER", "text": "arrived"}, s))
            return actions
        t = graph.trajectories[s.trajectory]
        j = graph.junction_at(s)
        if j is not None:
            stay = math.inf if s.frame == t.last else f.distance_along(s)
            if f.junction[j] + 1e-9 < stay:
                k = f.best_branch(j)
                assert k is not None  # the junction is no goal and reaches one (finite)
                cam = float(t.heading[s.frame]) + yaw
                choices = graph.branch_choices(j, cam)
                hit = [name for name, v in choices.items() if v == k]
                if hit:
                    s, yaw = State(k, 0), 0.0
                    actions.append(({"action": hit[0]}, s))
                    continue
                rel = float(angle_diff(graph.trajectories[k].departure, cam))
                size = min(ROTATIONS, key=lambda z: (abs(abs(rel) - ROTATIONS[z]), str(z)))
                actions.append(({"action": "D" if rel > 0 else "A", "size": size}, s))
                yaw += ROTATIONS[size] if rel > 0 else -ROTATIONS[size]
                yaw = float(angle_diff(yaw, 0.0))
                continue
        # move forward: to the goal frame on this trajectory, else to its end
        target = t.last
        for g in f.goal_on.get(t.id, ()):
            if g >= s.frame:
                target = g
                break
        remaining = target - s.frame
        for n, name in sizes:
            if n <= remaining or (target == t.last and target not in f.goal_on.get(t.id, ())):
                step = min(n, remaining)
                s = State(s.trajectory, s.frame + step)
                actions.append(({"action": "W", "size": name}, s))
                break
        else:
            raise TaskError("no forward size fits")
    raise TaskError(f"the oracle plan from {state} exceeds {max_actions} actions")


def plan_actions(
    graph: PoseGraph,
    state: State,
    yaw: float,
    goals: Sequence[State],
    forward_frames: Sequence[int] = DEFAULT_FORWARD_FRAMES,
    field_: Any = None,
    max_actions: int = 500,
) -> list[dict[str, Any]]:
    """The oracle's structured actions from ``state`` to the goal (see :func:`plan_route`)."""
    return [a for a, _ in plan_route(graph, state, yaw, goals, forward_frames, field_, max_actions)]


def away_moves(graph: PoseGraph, field_: Any, start: State, states: Sequence[State]) -> int:
    """The longest run of consecutive moves (state changes) in ``states`` that increase
    the geodesic distance to the goal (:meth:`GoalDistances.geodesic`).
    """
    run = best = 0
    prev, d = start, field_.geodesic(start)
    for s in states:
        if graph.position(s) == graph.position(prev):
            prev = s
            continue
        nd = field_.geodesic(s)
        run = run + 1 if nd > d + 1e-6 else 0
        best = max(best, run)
        prev, d = s, nd
    return best


def _frame_distances(graph: PoseGraph, field_: Any) -> np.ndarray:
    """Travel distance to the goal from every frame (graph frame order)."""
    out = np.empty(graph.n_frames)
    base = 0
    for t in graph.trajectories:
        d = t.offsets[-1] - t.offsets + field_.junction[t.end]
        goals = field_.goal_on.get(t.id, [])
        for g in sorted(goals, reverse=True):
            idx = np.arange(g + 1)
            d[idx] = np.minimum(d[idx], t.offsets[g] - t.offsets[idx])
        d[0] = min(d[0], field_.junction[t.start])
        out[base : base + t.n_frames] = d
        base += t.n_frames
    return out


def localization_grid(graph: PoseGraph, margin: float = 5.0) -> GridOverlay:
    """The localization grid: 5x5 cells over the bounding box of the graph's frames grown
    by ``margin`` metres (cells follow the area's shape: 200 x 335 m in Helsinki).
    """
    x0, y0, x1, y1 = graph.bounds
    return GridOverlay((x0 - margin, y0 - margin, x1 + margin, y1 + margin), 5, 5)
