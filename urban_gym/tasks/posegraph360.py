"""The seven PoseGraph360 task types: generators with ground truth from the city data,
difficulty thresholds, per-difficulty statistics, and the evaluator.

Task types (after the 360CityArena benchmark):

==================  ==========================================================================
``localization``    answer the 5x5 grid cell (``x:i y:j``) of the start; reference: grid map
``landmark_name``   go to a named place "not far from the start" and answer there
``landmark_image``  the same targets and starts, the place shown as a photo of its facade
``map_navigation``  go to the red marker of a reference map (blue marker: the start)
``vln``             follow numbered directions built from the route, ending
                    "Stop in front of <POI>"
``object_count``    count mapped objects of one kind in a range ("along the road up to the
                    next crosswalk", "up to the next junction", "around the block to your
                    left")
``relational``      name the store to the left / right of X, or across the street from X
==================  ==========================================================================

Difficulty thresholds (``[low, high)``; route lengths are metres along the pose graph):

* ``localization``: the start's distance to the nearest cell border as a fraction of
  the half cell size -- easy >= 0.5, medium [0.2, 0.5), hard < 0.2.
* ``landmark_name``/``landmark_image``: route length easy [15, 80), medium [80, 150),
  hard [150, 250].
* ``map_navigation``: route length easy [60, 180), medium [180, 300), hard [300, 450]
  (the benchmark's Map Navigation reached 124/247/347 m and 3.3/6.4/9.0 decision points).
* ``vln``: instruction steps (numbered sentences) easy <= 3, medium 4-5, hard 6-8;
  route length [40, 450].
* ``object_count``: the true count easy 0-3, medium 4-8, hard 9-24.
* ``relational``: route length from the start to the reference store X easy < 15
  (standing at X), medium [15, 80), hard [80, 200].

Places: landmark, VLN and relational targets are POIs on a building facade with a
unique name whose sign is within 20 m of a frame; landmark and VLN targets also have no
other sign within 6 m (so the name and the photo pick out one sign).

Every navigation task is feasible for the oracle: its planned action count (answer
included) is at most the step limit (50) and it never makes 5 consecutive moves away from
the goal (checked at generation; ``meta["oracle_steps"]``).

Task fields used by this family (see :class:`~urban_gym.tasks.spec.TaskSpec`):

* ``start``: ``trajectory``, ``frame`` (pose-graph state), ``x``, ``y`` (m), ``heading``
  (travel bearing, degrees), ``yaw`` (camera offset from the travel direction, degrees),
  ``pitch`` (degrees).
* ``goal`` (navigation): ``x``, ``y`` (m) of the goal frame, ``radius`` (m: 10, 20 for map
  navigation), ``trajectory``/``frame`` of the goal frame, ``route_length`` (m) and, for
  places, ``poi`` (name) and ``anchor`` (sign position); ``landmark_image`` adds ``view``
  (``trajectory``, ``frame``, ``bearing``, ``pitch``, ``fov``: where its photo is taken);
  ``map_navigation`` adds ``map`` (``center`` (m), ``extent`` (m)).
  ``localization``: ``grid`` (bounds, m) and ``nx``/``ny``.
* ``answer`` / ``options``: the truth and the multiple-choice candidates (grid labels,
  counts ``"0"``..``"24"``, five store names); navigation tasks have no answer.
* ``meta``: ``posegraph`` (the graph parameters), ``route_length``, ``decision_points``,
  ``instruction_steps``, ``count``, ``range``/``relation`` and the generator seed.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from shapely.geometry import LineString, Point, Polygon

from urban_gym.tasks import metrics
from urban_gym.tasks.report import GeneratedSuite, GenerationReport, Misses, TypeReport
from urban_gym.tasks.spec import TaskError, TaskSpec, save_suite
from urban_gym.world.geo import angle_diff, bearing
from urban_gym.world.grid import GridOverlay
from urban_gym.world.posegraph import (
    DEFAULT_SPACING_M,
    PoseGraph,
    State,
    load_posegraph,
)

FAMILY = "posegraph360"
TASK_TYPES: tuple[str, ...] = (
    "localization",
    "landmark_name",
    "landmark_image",
    "map_navigation",
    "vln",
    "object_count",
    "relational",
)
NAVIGATION_TYPES = frozenset({"landmark_name", "landmark_image", "map_navigation", "vln"})
QUESTION_TYPES = frozenset({"localization", "object_count", "relational"})
DIFFICULTY_LEVELS = ("easy", "medium", "hard")

#: Difficulty bands ``[low, high)`` by task type (see the module docstring).
THRESHOLDS: dict[str, dict[str, tuple[float, float]]] = {
    "localization": {"easy": (0.5, 1.01), "medium": (0.2, 0.5), "hard": (0.0, 0.2)},
    "landmark": {"easy": (15.0, 80.0), "medium": (80.0, 150.0), "hard": (150.0, 250.0)},
    "map_navigation": {"easy": (60.0, 180.0), "medium": (180.0, 300.0), "hard": (300.0, 450.0)},
    "vln": {"easy": (2, 4), "medium": (4, 6), "hard": (6, 9)},
    "object_count": {"easy": (0, 4), "medium": (4, 9), "hard": (9, 25)},
    "relational": {"easy": (0.0, 15.0), "medium": (15.0, 80.0), "hard": (80.0, 200.0)},
}

#: A landmark's sign has no other POI sign within this distance (metres).
LANDMARK_ISOLATION_M = 6.0
#: Horizontal field of view (degrees) of a landmark's reference photo.
LANDMARK_FOV = 45.0
#: Goal radius in metres (coordinate match).
GOAL_RADIUS_M = 10.0
MAP_GOAL_RADIUS_M = 20.0
#: Objects count when within this many metres of the range's centreline.
COUNT_CORRIDOR_M = 15.0
#: Share of candidate ranges with a zero count that are kept (they are common).
ZERO_COUNT_SHARE = 0.15
#: Count answers are chosen among "0".."MAX_COUNT".
MAX_COUNT = 24
#: A place's sign must be within this distance (m) of its goal frame.
MAX_POI_OFFSET_M = 20.0
#: The default step limit of the environment (the generator checks feasibility with it).
DEFAULT_STEP_LIMIT = 50
#: The default number of consecutive moves away from the goal that end an episode.
AWAY_LIMIT = 5
#: A task type gives up after this many failed attempts in a row (the city lacks what it needs).
STALL_ATTEMPTS = 2000
#: Frames moved by W SMALL / MEDIUM / LARGE.
DEFAULT_FORWARD_FRAMES: tuple[int, int, int] = (1, 3, 5)
#: Camera rotation of A/D by size (degrees); ``None`` is the default rotation.
ROTATIONS: dict[str | None, float] = {None: 24.0, "SMALL": 30.0, "MEDIUM": 60.0, "LARGE": 90.0}

COUNT_KINDS: dict[str, str] = {
    "tree": "trees",
    "street_lamp": "street lamps",
    "bench": "benches",
    "bus_stop": "bus stops",
    "waste_basket": "waste baskets",
    "bicycle_parking": "bicycle stands",
    "vending_machine": "vending machines",
    "traffic_signals": "traffic lights",
    "crossing": "crosswalks",
}


# ---------------------------------------------------------------------------- helpers
def graph_params(task: TaskSpec) -> dict[str, Any]:
    """The pose-graph parameters a task was generated on (``meta["posegraph"]``)."""
    p = dict(task.meta.get("posegraph") or {})
    p.setdefault("spacing", DEFAULT_SPACING_M)
    return p


def graph_for(task: TaskSpec) -> PoseGraph:
    """The (memoised) pose graph of a task's city and parameters."""
    return load_posegraph(task.city, **graph_params(task))


def start_state(graph: PoseGraph, task: TaskSpec) -> State:
    """The task's start state on ``graph``: its ``trajectory``/``frame`` when they exist
    and lie within 1 m of ``x``/``y``, else the frame nearest to ``x``/``y`` (with the
    closest heading) -- so tasks also run on an imported graph of the same place."""
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


def goal_states(graph: PoseGraph, task: TaskSpec) -> list[State]:
    """The frames that count as the goal frame of a navigation task."""
    try:
        return graph.goal_states(float(task.goal["x"]), float(task.goal["y"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise TaskError(f"task {task.id!r}: goal needs numeric x and y, got {task.goal!r}") from exc


@dataclass
class RouteInfo:
    """A shortest route: its states, length (m), junction decisions and the turns at
    them (``(junction, turn degrees, next street)``)."""

    states: list[State]
    length: float
    decisions: int
    turns: list[tuple[int, float, str | None]]


def route_info(graph: PoseGraph, start: State, goals: Sequence[State]) -> RouteInfo:
    """The shortest route from ``start`` to ``goals`` with its decision points: every
    switch onto another trajectory at a junction (going straight on needs one too)."""
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
    the geodesic distance to the goal (:meth:`GoalDistances.geodesic`)."""
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


def _band(value: float, bands: dict[str, tuple[float, float]]) -> str | None:
    for name, (lo, hi) in bands.items():
        if lo <= value < hi:
            return name
    if value == max(hi for _, hi in bands.values()):
        return max(bands, key=lambda k: bands[k][1])
    return None


def _quotas(n: int) -> dict[str, int]:
    base, extra = divmod(n, 3)
    return {d: base + (1 if i < extra else 0) for i, d in enumerate(DIFFICULTY_LEVELS)}


def _turn_word(deg: float) -> str:
    a = abs(deg)
    if a < 30.0:
        return "straight"
    if a > 150.0:
        return "around"
    return "right" if deg > 0 else "left"


def localization_grid(graph: PoseGraph, margin: float = 5.0) -> GridOverlay:
    """The localization grid: 5x5 cells over the bounding box of the graph's frames grown
    by ``margin`` metres (cells follow the area's shape: 200 x 335 m in Helsinki)."""
    x0, y0, x1, y1 = graph.bounds
    return GridOverlay((x0 - margin, y0 - margin, x1 + margin, y1 + margin), 5, 5)


# ---------------------------------------------------------------------------- places
@dataclass
class Place:
    """A named POI with a facade, placed on the pose graph: ``state`` is the frame nearest
    to its sign; ``segment``/``side``/``offset`` place the sign along a street side
    (``side`` as seen along trajectory ``ref``: ``"left"``/``"right"``)."""

    poi: Any
    state: State
    distance: float
    ref: int
    side: str
    offset: float


def places(graph: PoseGraph, city: Any) -> list[Place]:
    """Uniquely named, facade-anchored POIs within :data:`MAX_POI_OFFSET_M` of a frame."""
    names = Counter(p.name.casefold() for p in city.pois)
    out = []
    lines = {}
    for t in graph.trajectories:
        if t.reverse is None or t.id < t.reverse:
            lines[t.id] = LineString(t.xy)
    for p in city.pois:
        if p.building_id is None or names[p.name.casefold()] != 1:
            continue
        ax, ay = p.anchor
        s = graph.nearest_state(ax, ay)
        d = math.dist(graph.position(s), (ax, ay))
        if d > MAX_POI_OFFSET_M:
            continue
        t = graph.trajectories[s.trajectory]
        ref = t.id if t.id in lines else int(t.reverse)  # type: ignore[arg-type]
        line = lines[ref]
        off = float(line.project(Point(ax, ay)))
        q = line.interpolate(off)
        a, b = line.interpolate(max(0.0, off - 1.0)), line.interpolate(min(line.length, off + 1.0))
        rel = float(angle_diff(bearing(ax - q.x, ay - q.y), bearing(b.x - a.x, b.y - a.y)))
        out.append(Place(p, s, d, ref, "right" if rel > 0 else "left", off))
    return out


def _poi_kind(poi: Any) -> str:
    return str(poi.kind).replace("_", " ")


# ---------------------------------------------------------------------------- generator
class PoseGraphTaskGenerator:
    """Generates PoseGraph360 tasks for one city with ground truth from its data.

    ``city`` is a :func:`~urban_gym.world.load_city` spec; ``spacing`` the pose graph's
    frame spacing (m). All randomness comes from ``numpy.random.default_rng`` seeded by
    ``seed`` and the task type: the same arguments give the same tasks.
    """

    def __init__(
        self,
        city: str,
        seed: int = 0,
        spacing: float = DEFAULT_SPACING_M,
        step_limit: int = DEFAULT_STEP_LIMIT,
        forward_frames: Sequence[int] = DEFAULT_FORWARD_FRAMES,
    ) -> None:
        from urban_gym.world.loader import load_city

        self.city_spec = str(city)
        self.city = load_city(city)
        self.spacing = float(spacing)
        self.graph = load_posegraph(self.city_spec, spacing=self.spacing)
        self.seed = int(seed)
        self.step_limit = int(step_limit)
        self.forward_frames = tuple(forward_frames)
        self._places: list[Place] | None = None
        self._landmarks: list[Place] | None = None
        self.grid = self._grid()
        #: task type -> what the last :meth:`generate` of that type made, and why not more.
        self.rows: dict[str, TypeReport] = {}
        #: The per-type report of the last :meth:`suite`.
        self.report = GenerationReport(FAMILY, self.city.name)
        self._misses = Misses()

    # ------------------------------------------------------------------ public
    def generate(self, task_type: str, n: int) -> list[TaskSpec]:
        """``n`` tasks of ``task_type`` split evenly over easy/medium/hard (fewer when the
        city cannot supply them: :attr:`rows` ``[task_type]`` says how many and why)."""
        if task_type not in TASK_TYPES:
            raise TaskError(f"task type {task_type!r} is not one of {', '.join(TASK_TYPES)}")
        if n < 0:
            raise TaskError(f"number of tasks n={n!r} must be >= 0")
        rng = np.random.default_rng([self.seed, TASK_TYPES.index(task_type)])
        if task_type == "landmark_image":
            out = [self._as_image(t) for t in self.generate("landmark_name", n)]
            self.rows[task_type] = dataclasses.replace(self.rows["landmark_name"], type=task_type)
            return out
        row = self.rows[task_type] = TypeReport(task_type, n)
        row.reason = self.type_lacks(task_type)
        if row.reason is not None:
            return []
        fn: Callable[[np.random.Generator, str], TaskSpec | None] = getattr(
            self, f"_gen_{task_type}"
        )
        quotas = _quotas(n)
        made: dict[str, list[TaskSpec]] = {d: [] for d in DIFFICULTY_LEVELS}
        misses = {d: Misses() for d in DIFFICULTY_LEVELS}
        attempts = last = 0
        while any(len(made[d]) < quotas[d] for d in DIFFICULTY_LEVELS) and attempts < 400 * max(
            1, n
        ):
            if attempts - last >= STALL_ATTEMPTS:
                break
            attempts += 1
            want = [d for d in DIFFICULTY_LEVELS if len(made[d]) < quotas[d]]
            d = want[int(rng.integers(len(want)))]
            self._misses = misses[d]
            t = fn(rng, d)
            if t is None:
                continue
            if t.difficulty != d:
                self._miss(f"no {d} candidate", 4)
            elif any(t.meta["key"] == o.meta["key"] for o in made[d]):
                self._miss("the candidates repeat tasks already made", 4)
            else:
                made[d].append(t)
                last = attempts
        out: list[TaskSpec] = []
        for d in DIFFICULTY_LEVELS:
            for k, t in enumerate(made[d]):
                meta = {k2: v for k2, v in t.meta.items() if k2 != "key"}
                out.append(t.replace(id=f"{task_type}-{d}-{k:03d}", meta=meta))
        row.made, row.attempts = len(out), attempts
        short = [d for d in DIFFICULTY_LEVELS if len(made[d]) < quotas[d]]
        if short:
            row.reason = "; ".join(
                f"{d} {len(made[d])} of {quotas[d]}: {misses[d].reason()}" for d in short
            )
        return out

    def suite(self, per_type: int = 25, types: Iterable[str] = TASK_TYPES) -> list[TaskSpec]:
        """``per_type`` tasks of each type (fewer where the city lacks what a type needs;
        :attr:`report` says how many and why)."""
        out: list[TaskSpec] = []
        self.report = GenerationReport(FAMILY, self.city.name)
        for tt in types:
            out += self.generate(tt, per_type)
            self.report.add(self.rows[tt])
        return out

    def type_lacks(self, task_type: str) -> str | None:
        """What the city lacks for ``task_type`` before any attempt (None: nothing
        obvious; the attempts may still fail). Draws no random numbers."""
        if task_type in ("landmark_name", "landmark_image", "vln", "relational"):
            if not self.place_list:
                return (
                    "no uniquely named POI on a building facade with its sign within "
                    f"{MAX_POI_OFFSET_M:.0f} m of the pose graph"
                )
            if task_type == "relational" and len(self.place_list) < 2:
                return (
                    "only 1 named POI on a building facade along the pose graph; a relation needs 2"
                )
            if task_type != "relational" and not self.landmark_list:
                return (
                    "no named POI on a building facade whose sign stands alone (no other sign "
                    f"within {LANDMARK_ISOLATION_M:.0f} m)"
                )
        if task_type == "object_count" and not any(
            o.kind in COUNT_KINDS for o in self.city.objects
        ):
            return "no mapped street objects to count (" + ", ".join(COUNT_KINDS.values()) + ")"
        return None

    def _miss(self, reason: str, stage: int = 0) -> None:
        """Record why an attempt failed (what the city lacks) and at which ``stage`` of
        its generator's checks (see :class:`~urban_gym.tasks.report.Misses`)."""
        self._misses(reason, stage)

    # ------------------------------------------------------------------ shared
    def _grid(self) -> GridOverlay:
        return localization_grid(self.graph)

    def _meta(self, **kw: Any) -> dict[str, Any]:
        return {"posegraph": {"spacing": self.spacing}, "seed": self.seed, **kw}

    def _start(self, s: State, yaw: float = 0.0) -> dict[str, Any]:
        x, y = self.graph.position(s)
        return {
            "trajectory": s.trajectory,
            "frame": s.frame,
            "x": round(x, 3),
            "y": round(y, 3),
            "heading": round(self.graph.heading(s), 2),
            "yaw": float(yaw),
            "pitch": 0.0,
        }

    def _random_state(self, rng: np.random.Generator) -> State:
        c = int(rng.integers(self.graph.n_frames))
        return State(int(self.graph.frame_traj[c]), int(self.graph.frame_index[c]))

    def _start_in_band(
        self, rng: np.random.Generator, goals: list[State], lo: float, hi: float
    ) -> tuple[State, RouteInfo] | None:
        f = self.graph.distance_field(goals)
        d = _frame_distances(self.graph, f)
        cand = np.flatnonzero((d >= lo) & (d < hi))
        if not len(cand):
            return None
        c = int(rng.choice(cand))
        s = State(int(self.graph.frame_traj[c]), int(self.graph.frame_index[c]))
        return s, route_info(self.graph, s, goals)

    def _feasible(self, s: State, goals: list[State]) -> int | None:
        """The oracle's action count when it solves the task within the step limit
        without :data:`AWAY_LIMIT` consecutive moves away from the goal, else None."""
        f = self.graph.distance_field(goals)
        try:
            plan = plan_route(self.graph, s, 0.0, goals, self.forward_frames, field_=f)
        except TaskError:
            return self._miss("no route from the start to the goal the oracle can plan", 3)
        if len(plan) > self.step_limit:
            return self._miss(f"no route the oracle walks within {self.step_limit} steps", 3)
        if away_moves(self.graph, f, s, [st for _, st in plan]) >= AWAY_LIMIT:
            return self._miss(
                f"no route without {AWAY_LIMIT} moves in a row away from the goal (pose-graph "
                "detours)",
                3,
            )
        return len(plan)

    def _goal(self, s: State, radius: float, route: RouteInfo, **kw: Any) -> dict[str, Any]:
        x, y = self.graph.position(s)
        return {
            "x": round(x, 3),
            "y": round(y, 3),
            "radius": radius,
            "trajectory": s.trajectory,
            "frame": s.frame,
            "route_length": round(route.length, 1),
            **kw,
        }

    @property
    def place_list(self) -> list[Place]:
        """Every :func:`places` entry (relational tasks)."""
        if self._places is None:
            self._places = places(self.graph, self.city)
        return self._places

    @property
    def landmark_list(self) -> list[Place]:
        """Places whose sign stands alone: no other POI's sign within
        :data:`LANDMARK_ISOLATION_M` (targets of landmark search and VLN, so that the
        photo and the name pick out one sign)."""
        if self._landmarks is None:
            self._landmarks = [
                p
                for p in self.place_list
                if all(
                    q.id == p.poi.id
                    for q in self.city.pois_within(*p.poi.anchor, LANDMARK_ISOLATION_M)
                )
            ]
        return self._landmarks

    # ------------------------------------------------------------------ types
    def _gen_localization(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        s = self._random_state(rng)
        x, y = self.graph.position(s)
        i, j = self.grid.cell_of(x, y)
        cx0, cy0, cx1, cy1 = self.grid.cell_bounds(i, j)
        w, h = self.grid.cell_size
        margin = min(x - cx0, cx1 - x, y - cy0, cy1 - y) / (min(w, h) / 2.0)
        diff = _band(margin, THRESHOLDS["localization"])
        if diff != want:
            lo, hi = THRESHOLDS["localization"][want]
            return self._miss(
                f"no frame whose distance to its grid cell's border is {lo:g}-{min(hi, 1.0):g} of "
                "half a cell"
            )
        label = self.grid.label(i, j)
        instr = (
            "Where are you? The reference image is a map of the area divided into a 5x5 "
            "grid: columns x:0 to x:4 from west to east, rows y:0 to y:4 from north to "
            "south. Look around (and walk if you like), then answer with the cell you "
            "are in, e.g. 'x:2 y:3'."
        )
        return TaskSpec(
            id="tmp",
            family=FAMILY,
            type="localization",
            difficulty=diff,
            city=self.city_spec,
            instruction=instr,
            start=self._start(s, float(rng.choice([0.0, 90.0, 180.0, 270.0]))),
            goal={"grid": [round(v, 3) for v in self.grid.bounds], "nx": 5, "ny": 5},
            answer=label,
            options=tuple(self.grid.labels()),
            reference_images=("grid_map",),
            meta=self._meta(key=(s.trajectory, s.frame), border_margin=round(margin, 3)),
        )

    def _gen_landmark_name(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        if not self.landmark_list:
            return None
        pl = self.landmark_list[int(rng.integers(len(self.landmark_list)))]
        gx, gy = self.graph.position(pl.state)
        goals = self.graph.goal_states(gx, gy)
        lo, hi = THRESHOLDS["landmark"][want]
        found = self._start_in_band(rng, goals, lo, hi)
        if found is None:
            return self._miss(f"no start {lo:.0f}-{hi:.0f} m from a landmark along the pose graph")
        s, route = found
        steps = self._feasible(s, goals)
        if steps is None:
            return None
        p = pl.poi
        instr = (
            f"Find {p.name} ({_poi_kind(p)}). The goal is not far from the start. Walk "
            "there and answer when you are standing in front of it."
        )
        view_bearing = bearing(p.anchor[0] - gx, p.anchor[1] - gy)
        goal = self._goal(
            pl.state,
            GOAL_RADIUS_M,
            route,
            poi=p.name,
            anchor=[round(p.anchor[0], 3), round(p.anchor[1], 3)],
            aliases=list(p.aliases),
            view={
                "trajectory": pl.state.trajectory,
                "frame": pl.state.frame,
                "bearing": round(view_bearing, 2),
                "pitch": 10.0,
                "fov": LANDMARK_FOV,
            },
        )
        return TaskSpec(
            id="tmp",
            family=FAMILY,
            type="landmark_name",
            difficulty=want,
            city=self.city_spec,
            instruction=instr,
            start=self._start(s),
            goal=goal,
            meta=self._meta(
                key=(p.id, s.trajectory, s.frame),
                route_length=round(route.length, 1),
                decision_points=route.decisions,
                oracle_steps=steps,
            ),
        )

    def _as_image(self, t: TaskSpec) -> TaskSpec:
        instr = (
            "Find the place shown in the reference image. The goal is not far from the "
            "start. Walk there and answer when you are standing in front of it."
        )
        return t.replace(
            id=t.id.replace("landmark_name", "landmark_image"),
            type="landmark_image",
            instruction=instr,
            reference_images=("landmark",),
            meta={**t.meta, "paired_with": t.id},
        )

    def _gen_map_navigation(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        g = self._random_state(rng)
        gx, gy = self.graph.position(g)
        goals = self.graph.goal_states(gx, gy)
        lo, hi = THRESHOLDS["map_navigation"][want]
        found = self._start_in_band(rng, goals, lo, hi)
        if found is None:
            return self._miss(f"no two frames {lo:.0f}-{hi:.0f} m apart along the pose graph")
        s, route = found
        steps = self._feasible(s, goals)
        if steps is None:
            return None
        sx, sy = self.graph.position(s)
        pts = np.array([self.graph.position(q) for q in route.states])
        lo_xy, hi_xy = pts.min(axis=0), pts.max(axis=0)
        center = (lo_xy + hi_xy) / 2.0
        extent = float(max(hi_xy - lo_xy) + 2 * 60.0)
        instr = (
            "The reference map shows your start (blue) and your goal (red). Walk to the "
            "goal and answer when you are there (within 20 m)."
        )
        goal = self._goal(
            g,
            MAP_GOAL_RADIUS_M,
            route,
            map={
                "center": [round(float(center[0]), 2), round(float(center[1]), 2)],
                "extent": round(extent, 1),
            },
        )
        return TaskSpec(
            id="tmp",
            family=FAMILY,
            type="map_navigation",
            difficulty=want,
            city=self.city_spec,
            instruction=instr,
            start=self._start(s),
            goal=goal,
            reference_images=("route_map",),
            meta=self._meta(
                key=(g.trajectory, g.frame, s.trajectory, s.frame),
                route_length=round(route.length, 1),
                decision_points=route.decisions,
                oracle_steps=steps,
            ),
        )

    def _corner_landmark(self, junction: int, exclude: str) -> str | None:
        j = self.graph.junctions[junction]
        for p in self.city.pois_within(j.x, j.y, 25.0):
            if p.building_id is not None and p.name != exclude:
                return p.name
        return None

    def _gen_vln(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        if not self.landmark_list:
            return None
        pl = self.landmark_list[int(rng.integers(len(self.landmark_list)))]
        gx, gy = self.graph.position(pl.state)
        goals = self.graph.goal_states(gx, gy)
        found = self._start_in_band(rng, goals, 40.0, 450.0)
        if found is None:
            return self._miss("no start 40-450 m from a landmark along the pose graph")
        s, route = found
        steps_sentences = self._vln_steps(s, route, pl)
        diff = _band(len(steps_sentences), THRESHOLDS["vln"])
        if diff != want:
            lo, hi = THRESHOLDS["vln"][want]
            return self._miss(
                f"no route to a landmark whose directions have {lo}-{hi - 1} steps (turns at "
                "junctions)",
                1,
            )
        steps = self._feasible(s, goals)
        if steps is None:
            return None
        instr = "Follow these directions, then answer when you have arrived.\n" + "\n".join(
            f"{k}. {t}" for k, t in enumerate(steps_sentences, start=1)
        )
        goal = self._goal(
            pl.state,
            GOAL_RADIUS_M,
            route,
            poi=pl.poi.name,
            anchor=[round(pl.poi.anchor[0], 3), round(pl.poi.anchor[1], 3)],
        )
        return TaskSpec(
            id="tmp",
            family=FAMILY,
            type="vln",
            difficulty=want,
            city=self.city_spec,
            instruction=instr,
            start=self._start(s),
            goal=goal,
            meta=self._meta(
                key=(pl.poi.id, s.trajectory, s.frame),
                route_length=round(route.length, 1),
                decision_points=route.decisions,
                instruction_steps=len(steps_sentences),
                oracle_steps=steps,
            ),
        )

    def _vln_steps(self, s: State, route: RouteInfo, pl: Place) -> list[str]:
        g = self.graph
        t0 = g.trajectories[s.trajectory]
        first = t0.street
        sentences = []
        turns = list(route.turns)
        # a switch at the very start (e.g. turning around) is the first instruction
        if turns and route.states[1].trajectory != s.trajectory and g.junction_at(s) is not None:
            j, deg, street = turns.pop(0)
            word = _turn_word(
                float(
                    angle_diff(
                        g.trajectories[route.states[1].trajectory].departure,
                        float(t0.heading[s.frame]),
                    )
                )
            )
            first = street
            if word == "around":
                sentences.append(f"Turn around and walk along {street or 'the street'}.")
            elif word == "straight":
                sentences.append(f"Walk straight ahead along {street or 'the street'}.")
            else:
                sentences.append(f"Turn {word} and walk along {street or 'the street'}.")
        else:
            sentences.append(f"Walk straight ahead along {first or 'the street'}.")
        straight_run = 0
        for j, deg, street in turns:
            word = _turn_word(deg)
            if word == "straight":
                straight_run += 1
                continue
            if straight_run:
                sentences.append(
                    "Continue straight through the next junction."
                    if straight_run == 1
                    else f"Continue straight through the next {straight_run} junctions."
                )
                straight_run = 0
            lm = self._corner_landmark(j, pl.poi.name)
            where = f"At the junction by {lm}" if lm else "At the next junction"
            onto = f" onto {street}" if street else ""
            if word == "around":
                sentences.append(f"{where}, turn around{onto}.")
            else:
                sentences.append(f"{where}, turn {word}{onto}.")
        if straight_run:
            sentences.append(
                "Continue straight through the next junction."
                if straight_run == 1
                else f"Continue straight through the next {straight_run} junctions."
            )
        last = route.states[-1]
        h = g.heading(last)
        ax, ay = pl.poi.anchor
        gx, gy = g.position(last)
        side = "right" if angle_diff(bearing(ax - gx, ay - gy), h) > 0 else "left"
        sentences.append(f"Stop in front of {pl.poi.name} on your {side}.")
        return sentences

    def _count_range(
        self, rng: np.random.Generator, s: State
    ) -> tuple[str, str, LineString, Polygon | None] | None:
        """A counting range starting at ``s``: ``(range kind, phrase, centreline, block
        polygon or None)``."""
        g = self.graph
        t = g.trajectories[s.trajectory]
        kind = ("crosswalk", "junction", "block_left")[int(rng.integers(3))]
        if kind == "block_left":
            loop = self._left_block(t.id)
            if loop is None:
                return None
            line, poly = loop
            return (
                kind,
                "around the block to your left (count the ones along the block)",
                line,
                poly,
            )
        if t.last - s.frame < 3:
            return None
        ahead = LineString(t.xy[s.frame :])
        if kind == "junction":
            return kind, "along this street from here up to the next junction", ahead, None
        cross = [
            float(ahead.project(Point(o.position)))
            for o in self.city.objects
            if o.kind == "crossing" and ahead.distance(Point(o.position)) <= COUNT_CORRIDOR_M
        ]
        cross = sorted(c for c in cross if 3.0 < c < ahead.length - 1.0)
        if not cross:
            return None
        return (
            kind,
            "along the road ahead up to the next crosswalk",
            LineString(
                [
                    ahead.interpolate(v).coords[0]
                    for v in np.linspace(0.0, cross[0], max(2, int(cross[0] // 1.0) + 1))
                ]
            ),
            None,
        )

    def _left_block(self, start_traj: int) -> tuple[LineString, Polygon] | None:
        g = self.graph
        seq = [start_traj]
        total = g.trajectories[start_traj].length
        cur = g.trajectories[start_traj]
        for _ in range(12):
            opts = []
            for k in g.out_of[cur.end]:
                rel = float(angle_diff(g.trajectories[k].departure, cur.arrival))
                if abs(rel) < 165.0:
                    opts.append((rel, k))
            if not opts:
                return None
            _, k = min(opts)
            if k == start_traj:
                break
            if k in seq:
                return None
            seq.append(k)
            cur = g.trajectories[k]
            total += cur.length
            if total > 900.0:
                return None
        else:
            return None
        pts = np.concatenate([g.trajectories[k].xy[:-1] for k in seq])
        ring = LineString(np.vstack([pts, pts[:1]]))
        poly = Polygon(pts)
        if not poly.is_valid or poly.area < 100.0 or not poly.exterior.is_ccw:
            return None
        return ring, poly

    def _gen_object_count(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        s = self._random_state(rng)
        t = self.graph.trajectories[s.trajectory]
        rg = self._count_range(rng, s)
        if rg is None:
            return self._miss(
                "no counting range at the start (a crosswalk ahead, 3 frames to the next "
                "junction, or a block to the left)"
            )
        rkind, phrase, line, poly = rg
        if rkind == "block_left":
            s = State(t.id, 0)
        present = Counter(o.kind for o in self.city.objects)
        kinds = [
            k
            for k in COUNT_KINDS
            if present[k] > 0 and not (rkind == "crosswalk" and k == "crossing")
        ]
        if not kinds:
            return self._miss("only crosswalks to count, on ranges that end at a crosswalk", 1)
        okind = kinds[int(rng.integers(len(kinds)))]
        n = count_objects(self.city, okind, line, poly)
        diff = _band(n, THRESHOLDS["object_count"])
        if diff != want or n > MAX_COUNT:
            lo, hi = THRESHOLDS["object_count"][want]
            return self._miss(f"no counting range with {lo}-{hi - 1} objects of one kind", 2)
        if n == 0 and rng.random() > ZERO_COUNT_SHARE:
            # keep empty ranges rare (only an exact 0 scores on them)
            return self._miss(
                "no counting range with 1-3 objects of one kind (empty ones are rare)", 2
            )
        instr = (
            f"How many {COUNT_KINDS[okind]} are there {phrase}? Count the ones on both "
            "sides of the street unless told otherwise, then answer with a number."
        )
        if rkind == "block_left":
            instr = (
                f"How many {COUNT_KINDS[okind]} are there around the block to your left? "
                "Count the ones on the block's side of the streets around it, then answer "
                "with a number."
            )
        return TaskSpec(
            id="tmp",
            family=FAMILY,
            type="object_count",
            difficulty=want,
            city=self.city_spec,
            instruction=instr,
            start=self._start(s),
            answer=str(n),
            options=tuple(str(k) for k in range(MAX_COUNT + 1)),
            goal={
                "kind": okind,
                "range": rkind,
                "corridor": COUNT_CORRIDOR_M,
                "range_length": round(float(line.length), 1),
            },
            meta=self._meta(key=(s.trajectory, s.frame, okind, rkind), count=n, range=rkind),
        )

    def _gen_relational(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        if not self.place_list:
            return None
        by_side: dict[tuple[int, str], list[Place]] = defaultdict(list)
        for p in self.place_list:
            by_side[(p.ref, p.side)].append(p)
        x = self.place_list[int(rng.integers(len(self.place_list)))]
        relation = ("left", "right", "across")[int(rng.integers(3))]
        ans = relation_of(x, relation, by_side, self.graph)
        if ans is None:
            return self._miss(
                "no named place with a clear neighbour (3-40 m along its side of the street, or "
                "within 12 m across it)"
            )
        gx, gy = self.graph.position(x.state)
        goals = self.graph.goal_states(gx, gy)
        lo, hi = THRESHOLDS["relational"][want]
        found = self._start_in_band(rng, goals, lo, hi) if lo > 0 else None
        if lo == 0.0:
            s = x.state
        elif found is None:
            return self._miss(f"no start {lo:.0f}-{hi:.0f} m from a place with a neighbour", 1)
        else:
            s = found[0]
        near = [
            p.poi.name
            for p in self.place_list
            if p.ref == x.ref and p.poi.name not in (x.poi.name, ans.poi.name)
        ]
        rng.shuffle(near)
        distract = near[:4]
        if len(distract) < 4:
            extra = [
                p.poi.name
                for p in self.place_list
                if p.poi.name not in (x.poi.name, ans.poi.name, *distract)
            ]
            extra.sort(key=lambda n: math.dist(self.city.poi_by_name(n).anchor, x.poi.anchor))
            distract += extra[: 4 - len(distract)]
        opts = [ans.poi.name, *distract]
        rng.shuffle(opts)
        if relation == "across":
            q = f"What is the name of the place across the street from {x.poi.name}?"
        else:
            q = (
                f"What is the name of the place to the {relation} of {x.poi.name}, as seen "
                f"when facing {x.poi.name} from the street?"
            )
        instr = q + " Find it, then answer with its name."
        return TaskSpec(
            id="tmp",
            family=FAMILY,
            type="relational",
            difficulty=want,
            city=self.city_spec,
            instruction=instr,
            start=self._start(s),
            answer=ans.poi.name,
            options=tuple(opts),
            goal={
                "reference": x.poi.name,
                "relation": relation,
                "aliases": list(ans.poi.aliases),
                "x": round(gx, 3),
                "y": round(gy, 3),
            },
            meta=self._meta(
                key=(x.poi.id, relation, s.trajectory, s.frame),
                relation=relation,
                route_length=round(self.graph.distance_field(goals).distance(s), 1),
            ),
        )


def relation_of(
    x: Place, relation: str, by_side: dict[tuple[int, str], list[Place]], graph: PoseGraph
) -> Place | None:
    """The place in ``relation`` (``left``/``right``/``across``) to ``x`` from the facade
    order along its street, or None when there is none or it is ambiguous.

    Facing ``x`` from the street, *left*/*right* are its neighbours along the same side
    (3-40 m away along the street, no other place within 2 m of either); *across* is the
    place on the other side closest along the street (within 12 m, 4 m clearer than the
    runner-up).
    """
    same = by_side.get((x.ref, x.side), [])
    if any(p is not x and abs(p.offset - x.offset) < 2.0 for p in same):
        return None
    if relation == "across":
        other = by_side.get((x.ref, "left" if x.side == "right" else "right"), [])
        cand = sorted(other, key=lambda p: abs(p.offset - x.offset))
        if not cand or abs(cand[0].offset - x.offset) > 12.0:
            return None
        if len(cand) > 1 and abs(cand[1].offset - x.offset) - abs(cand[0].offset - x.offset) < 4.0:
            return None
        return cand[0]
    # walking along ref and turning to face a right-side place, your left hand points
    # forwards along ref; facing a left-side place, it points backwards
    forward = (relation == "left") == (x.side == "right")
    cand = [p for p in same if (p.offset > x.offset if forward else p.offset < x.offset)]
    cand.sort(key=lambda p: abs(p.offset - x.offset))
    if not cand:
        return None
    n = cand[0]
    gap = abs(n.offset - x.offset)
    if not (3.0 <= gap <= 40.0):
        return None
    if any(p is not n and abs(p.offset - n.offset) < 2.0 for p in same):
        return None
    return n


def count_objects(city: Any, kind: str, line: LineString, polygon: Polygon | None = None) -> int:
    """Mapped objects of ``kind`` counted along a range: within
    :data:`COUNT_CORRIDOR_M` of ``line`` with their foot strictly inside the line's ends
    (for an open range), and inside ``polygon`` when given (a block: the ones on the
    block's side of its streets)."""
    n = 0
    closed = polygon is not None
    for o in city.objects:
        if o.kind != kind:
            continue
        p = Point(o.position)
        if line.distance(p) > COUNT_CORRIDOR_M:
            continue
        if closed:
            if polygon.contains(p):
                n += 1
            continue
        s = line.project(p)
        if 0.0 < s < line.length:
            n += 1
    return n


# ---------------------------------------------------------------------------- statistics
def suite_statistics(tasks: Sequence[TaskSpec]) -> list[dict[str, Any]]:
    """Per type and difficulty: task count and the means of route length (m), decision
    points, instruction steps and counts (where they apply)."""
    groups: dict[tuple[str, str], list[TaskSpec]] = defaultdict(list)
    for t in tasks:
        groups[(t.type, t.difficulty)].append(t)
    rows = []
    order = {k: i for i, k in enumerate(TASK_TYPES)}
    for (tt, d), ts in sorted(
        groups.items(),
        key=lambda kv: (
            order.get(kv[0][0], 99),
            DIFFICULTY_LEVELS.index(kv[0][1]) if kv[0][1] in DIFFICULTY_LEVELS else 9,
        ),
    ):

        def mean(key: str, ts=ts) -> float | None:
            v = [t.meta[key] for t in ts if t.meta.get(key) is not None]
            return float(np.mean(v)) if v else None

        rows.append(
            {
                "type": tt,
                "difficulty": d,
                "n": len(ts),
                "route_length_m": mean("route_length"),
                "decision_points": mean("decision_points"),
                "instruction_steps": mean("instruction_steps"),
                "count": mean("count"),
                "oracle_steps": mean("oracle_steps"),
            }
        )
    return rows


def format_statistics(rows: Sequence[dict[str, Any]]) -> str:
    """:func:`suite_statistics` as a Markdown table."""

    def f(v: float | None, nd: int = 1) -> str:
        return "-" if v is None else f"{v:.{nd}f}"

    out = [
        "| type | difficulty | tasks | route m | decision points | instruction steps | count | oracle steps |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['type']} | {r['difficulty']} | {r['n']} | {f(r['route_length_m'], 0)} | "
            f"{f(r['decision_points'])} | {f(r['instruction_steps'])} | {f(r['count'])} | "
            f"{f(r['oracle_steps'])} |"
        )
    return "\n".join(out)


# ---------------------------------------------------------------------------- suites
SUITE_DIR = Path(__file__).resolve().parent.parent / "data" / "suites"


def suite_path(city: str) -> Path:
    """Where the committed default suite of ``city`` lives
    (``urban_gym/data/suites/posegraph360_<city>.jsonl``)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(city)).strip("_")
    return SUITE_DIR / f"posegraph360_{safe}.jsonl"


def generate_suite(
    city: str = "helsinki",
    out: str | Path | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> GeneratedSuite:
    """Generate ``per_type`` (default 25) tasks of each type for ``city`` and write them as
    JSONL to ``out`` (default :func:`suite_path`). Returns the path, the tasks, the
    per-type report and, as notes, the per-difficulty statistics table. A type the city
    cannot supply is reported, not fatal; a city that supports no type raises
    :class:`~urban_gym.tasks.report.SuiteGenerationError`.
    ``urban-gym generate-suite --family posegraph360 --city helsinki`` regenerates the
    committed default suite."""
    gen = PoseGraphTaskGenerator(city, seed=seed)
    tasks = gen.suite(per_type=25 if per_type is None else int(per_type))
    gen.report.check_any()
    path = save_suite(out or suite_path(city), tasks)
    return GeneratedSuite(path, tasks, gen.report, format_statistics(suite_statistics(tasks)))


def write_suite(
    city: str = "helsinki",
    out: str | Path | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> Path:
    """:func:`generate_suite`, printing the per-difficulty statistics; returns the path."""
    made = generate_suite(city, out, seed, per_type)
    print(made.notes)
    return made.path


# ---------------------------------------------------------------------------- evaluation
@dataclass
class EpisodeOutcome:
    """What an episode did, as the evaluator needs it.

    ``answer`` is the ANSWER text (None when the episode ended otherwise); ``path`` the
    visited positions (m), ``reference_path`` the shortest route's positions (m);
    ``departures`` the ``(before, after)`` remaining route distances (m) of every move
    out of a junction."""

    answer: str | None
    position: tuple[float, float]
    path: list[tuple[float, float]] = field(default_factory=list)
    reference_path: list[tuple[float, float]] = field(default_factory=list)
    shortest_length: float = 0.0
    departures: list[tuple[float, float]] = field(default_factory=list)
    steps: int = 0
    invalid_actions: int = 0


def evaluate(
    task: TaskSpec,
    outcome: EpisodeOutcome,
    judge: Callable[[str, Sequence[str]], bool] | None = None,
) -> dict[str, float]:
    """The task's scores (:mod:`urban_gym.tasks.metrics`). An episode scores only when
    it ended with ANSWER. ``score`` is the headline number (MRA for counts, success
    otherwise); ``judge`` is the fuzzy-match judge for names (default: normalised names
    plus aliases)."""
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
            m["ndtw"] = metrics.ndtw(outcome.path, outcome.reference_path, radius)
            m["sdtw"] = metrics.sdtw(ok, outcome.path, outcome.reference_path, radius)
        m["score"] = ok
        return m
    if tt == "localization":
        ok = float(answered and metrics.exact_match(_grid_label(outcome.answer), task.answer))
        m.update(exact_match=ok, success=ok, score=ok)
        return m
    if tt == "object_count":
        truth = float(task.answer)
        mra = metrics.mean_relative_accuracy(outcome.answer, truth) if answered else 0.0
        ok = float(answered and metrics.exact_match(outcome.answer, truth))
        m.update(mra=mra, exact_match=ok, success=ok, score=mra)
        return m
    if tt == "relational":
        aliases = task.goal.get("aliases", [])
        ok = float(answered and metrics.fuzzy_match(outcome.answer, task.answer, aliases, judge))
        m.update(fuzzy_match=ok, success=ok, score=ok)
        return m
    raise TaskError(f"task {task.id!r}: unknown posegraph360 task type {tt!r}")


def _grid_label(answer: str | None) -> str | None:
    if answer is None:
        return None
    parsed = GridOverlay((0.0, 0.0, 1.0, 1.0), 5, 5).parse(answer)
    return GridOverlay.label(*parsed) if parsed else answer


def check_task(task: TaskSpec) -> TaskSpec:
    """``task`` if it is a well-formed PoseGraph360 task, else :class:`TaskError`
    naming what is wrong."""
    if task.family != FAMILY:
        raise TaskError(f"task {task.id!r}: family={task.family!r}, expected {FAMILY!r}")
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


__all__ = [
    "COUNT_KINDS",
    "DEFAULT_FORWARD_FRAMES",
    "FAMILY",
    "NAVIGATION_TYPES",
    "QUESTION_TYPES",
    "TASK_TYPES",
    "THRESHOLDS",
    "EpisodeOutcome",
    "PoseGraphTaskGenerator",
    "RouteInfo",
    "check_task",
    "count_objects",
    "evaluate",
    "generate_suite",
    "goal_states",
    "graph_for",
    "plan_actions",
    "route_info",
    "start_state",
    "suite_path",
    "suite_statistics",
    "write_suite",
]
