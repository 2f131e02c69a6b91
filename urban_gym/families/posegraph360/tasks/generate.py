"""The PoseGraph360 task generator: tasks of every type with ground truth from the city
data (see the package docstring for the types and their difficulty thresholds).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from shapely.geometry import LineString, Point, Polygon

from urban_gym.families.posegraph360.tasks import grounded as G
from urban_gym.families.posegraph360.tasks import grounded_image as GI
from urban_gym.families.posegraph360.tasks import video as V
from urban_gym.families.posegraph360.tasks.calibration import (
    CALIBRATED,
    POOL_FACTOR,
    closest_to_paper,
    paper_targets,
)
from urban_gym.families.posegraph360.tasks.places import (
    RELATIONS,
    Place,
    count_objects,
    places,
    relation_of,
    relation_phrase,
)
from urban_gym.families.posegraph360.tasks.routes import (
    RouteInfo,
    _frame_distances,
    away_moves,
    localization_grid,
    plan_route,
    route_info,
)
from urban_gym.families.posegraph360.tasks.types import (
    AWAY_LIMIT,
    COUNT_CORRIDOR_M,
    COUNT_KINDS,
    DEFAULT_FORWARD_FRAMES,
    DEFAULT_STEP_LIMIT,
    DIFFICULTY_LEVELS,
    FAMILY,
    GOAL_RADIUS_M,
    LANDMARK_FOV,
    LANDMARK_ISOLATION_M,
    MAP_GOAL_RADIUS_M,
    MAX_COUNT,
    MAX_POI_OFFSET_M,
    ORACLE_BUDGET_SHARE,
    PAPER_TASK_TYPES,
    STALL_ATTEMPTS,
    TASK_TYPES,
    THRESHOLDS,
    VLN_RANGE_M,
    ZERO_COUNT_SHARE,
)
from urban_gym.families.posegraph360.world import DEFAULT_SPACING_M, State, load_posegraph
from urban_gym.tasks.report import GenerationReport, Misses, TypeReport
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.wording import end_sentence, typed_name
from urban_gym.world.geo import angle_diff, bearing
from urban_gym.world.grid import GridOverlay

GROUNDED = (
    "landmark_bbox",
    "landmark_visibility",
    *GI.IMAGE_TASK_TYPES,
    "composite_behaviour",
    "atomic_behaviour",
)
#: The world-state image types made from the same draws as their agent-state partners.
PARTNER_OF = {"self_position": "relative_position", "action_decision": "future_observation"}


#: Starts drawn per map-navigation attempt (in the length band), of which the one whose
#: decision points come closest to the paper's average is kept.
ROUTE_CANDIDATES = 64
#: Oracle checks per map-navigation attempt (the candidates closest to the paper first).
ORACLE_TRIES = 4
#: Ranges tried per object-count attempt for the kind whose turn it is.
COUNT_RANGE_TRIES = 400
#: The object kinds 360CityArena's Object Count prompt names as examples (appendix B.3:
#: "vending machine", "planted tree"): they take the first turns at every difficulty.
PAPER_COUNT_KINDS: tuple[str, ...] = ("vending_machine", "tree")


def _band(value: float, bands: dict[str, tuple[float, float]]) -> str | None:
    for name, (lo, hi) in bands.items():
        if lo <= value < hi:
            return name
    if value == max(hi for _, hi in bands.values()):
        return max(bands, key=lambda k: bands[k][1])
    return None


def _values(task_type: str, difficulty: str) -> str:
    """The whole numbers of a difficulty band of :data:`THRESHOLDS` as text (``"5"``,
    ``"8-11"``: the hardest band includes its upper end).
    """
    lo, hi = THRESHOLDS[task_type][difficulty]
    top = int(hi) if difficulty == DIFFICULTY_LEVELS[-1] else int(hi) - 1
    return str(int(lo)) if top == int(lo) else f"{int(lo)}-{top}"


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
        #: the most oracle steps a generated task may need (:data:`ORACLE_BUDGET_SHARE`
        #: of ``step_limit``: 30 of 50)
        self.oracle_budget = int(ORACLE_BUDGET_SHARE * self.step_limit)
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
        city cannot supply them: :attr:`rows` ``[task_type]`` says how many and why). A
        type the paper reports statistics for (:data:`~.calibration.CALIBRATED`) draws
        :data:`~.calibration.POOL_FACTOR` candidates per task and keeps those closest to
        the paper's averages (:func:`~.calibration.closest_to_paper`).
        """
        if task_type not in TASK_TYPES:
            raise TaskError(f"task type {task_type!r} is not one of {', '.join(TASK_TYPES)}")
        if n < 0:
            raise TaskError(f"number of tasks n={n!r} must be >= 0")
        rng = np.random.default_rng([self.seed, list(TASK_TYPES).index(task_type)])
        if task_type == "landmark_image":
            images = [self._as_image(t) for t in self.generate("landmark_name", n)]
            self.rows[task_type] = dataclasses.replace(self.rows["landmark_name"], type=task_type)
            return images
        if task_type in PARTNER_OF:
            return self._partners_of(task_type, n)
        row = self.rows[task_type] = TypeReport(task_type, n)
        row.reason = self.type_lacks(task_type)
        if row.reason is not None:
            return []
        fn: Callable[[np.random.Generator, str], TaskSpec | None] = getattr(
            self, f"_gen_{task_type}"
        )
        quotas = _quotas(n)
        # a calibrated type draws a pool per difficulty and keeps the tasks closest to
        # the paper's averages (urban_gym.families.posegraph360.tasks.calibration)
        pool = POOL_FACTOR if task_type in CALIBRATED else 1
        wanted = {d: q * pool for d, q in quotas.items()}
        made: dict[str, list[TaskSpec]] = {d: [] for d in DIFFICULTY_LEVELS}
        misses = {d: Misses() for d in DIFFICULTY_LEVELS}
        attempts = last = 0
        while (
            any(len(made[d]) < wanted[d] for d in DIFFICULTY_LEVELS)
            and attempts < 400 * max(1, n) * pool
        ):
            if attempts - last >= STALL_ATTEMPTS:
                break
            attempts += 1
            want = [d for d in DIFFICULTY_LEVELS if len(made[d]) < wanted[d]]
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
        if pool > 1:
            made = {
                d: closest_to_paper(ts, quotas[d], paper_targets(task_type, d))
                for d, ts in made.items()
            }
        out: list[TaskSpec] = []
        for d in DIFFICULTY_LEVELS:
            for k, t in enumerate(made[d]):
                meta = {k2: v for k2, v in t.meta.items() if k2 != "key"}
                out.append(t.replace(id=f"{task_type}-{d}-{k:03d}", meta=meta))
        row.made, row.attempts = len(out), attempts
        # kept for the partner types (:meth:`_partners_of`)
        self.__dict__.setdefault("_image_made", {})[task_type, n] = out
        short = [d for d in DIFFICULTY_LEVELS if len(made[d]) < quotas[d]]
        if short:
            row.reason = "; ".join(
                f"{d} {len(made[d])} of {quotas[d]}: {misses[d].reason()}" for d in short
            )
        return out

    def _partners_of(self, task_type: str, n: int) -> list[TaskSpec]:
        """The world-state image tasks made by the same draws as their agent-state
        partners' (:data:`PARTNER_OF`): same landmark, place, difficulty and pair key.
        """
        base = PARTNER_OF[task_type]
        partners = self.__dict__.setdefault("_partners", {})
        cache = self.__dict__.setdefault("_image_made", {})
        if (base, n) not in cache:
            cache[base, n] = self.generate(base, n)
        self.rows[task_type] = dataclasses.replace(self.rows[base], type=task_type)
        derived = []
        for t in cache[base, n]:
            p = partners[t.meta["pair"]["key"]]
            meta = {k: v for k, v in p.meta.items() if k != "key"}
            derived.append(p.replace(id=t.id.replace(base, task_type), meta=meta))
        return derived

    def suite(
        self,
        per_type: int = 25,
        types: Iterable[str] = PAPER_TASK_TYPES,
        on_type: Callable[[TypeReport], None] | None = None,
    ) -> list[TaskSpec]:
        """``per_type`` tasks of each type (default: 360CityArena's seven; fewer where the
        city lacks what a type needs; :attr:`report` says how many and why);
        ``on_type`` gets each type's report row as it is made (progress).
        """
        out: list[TaskSpec] = []
        self.report = GenerationReport(FAMILY, self.city.name)
        for tt in types:
            out += self.generate(tt, per_type)
            self.report.add(self.rows[tt])
            if on_type is not None:
                on_type(self.rows[tt])
        return out

    def make_one(
        self, task_type: str, difficulty: str, rng: np.random.Generator
    ) -> TaskSpec | None:
        """One task of ``task_type`` at ``difficulty`` drawn with ``rng``, or None when
        this draw found none (the on-the-fly source of
        :mod:`urban_gym.families.posegraph360.tasks.procedural`). Its id is ``"tmp"`` and
        ``meta["key"]`` names what makes it distinct; a navigation task has passed the
        oracle check of :meth:`generate`'s tasks (within :attr:`oracle_budget` steps,
        never :data:`AWAY_LIMIT` moves in a row away from the goal). A map-navigation
        task is one draw, not matched to the paper's averages as a suite's are.
        """
        if task_type not in PAPER_TASK_TYPES or difficulty not in DIFFICULTY_LEVELS:
            raise TaskError(
                f"make_one({task_type!r}, {difficulty!r}): the type must be one of "
                f"{', '.join(PAPER_TASK_TYPES)} and the difficulty one of "
                f"{', '.join(DIFFICULTY_LEVELS)}"
            )
        if task_type == "landmark_image":
            t = self.make_one("landmark_name", difficulty, rng)
            return None if t is None else self._as_image(t)
        if self.type_lacks(task_type) is not None:
            return None
        t = getattr(self, f"_gen_{task_type}")(rng, difficulty)
        return t if t is not None and t.difficulty == difficulty else None

    def type_lacks(self, task_type: str) -> str | None:
        """What the city lacks for ``task_type`` before any attempt (None: nothing
        obvious; the attempts may still fail). Draws no random numbers.
        """
        if task_type in ("landmark_name", "landmark_image", "vln", "relational", *GROUNDED):
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
        its generator's checks (see :class:`~urban_gym.tasks.report.Misses`).
        """
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
        """The oracle's action count when it solves the task within
        :attr:`oracle_budget` steps without :data:`AWAY_LIMIT` consecutive moves away
        from the goal, else None.
        """
        f = self.graph.distance_field(goals)
        try:
            plan = plan_route(self.graph, s, 0.0, goals, self.forward_frames, field_=f)
        except TaskError:
            return self._miss("no route from the start to the goal the oracle can plan", 3)
        if len(plan) > self.oracle_budget:
            return self._miss(
                f"no route the oracle walks within {self.oracle_budget} steps "
                f"({ORACLE_BUDGET_SHARE:.0%} of the {self.step_limit}-step limit)",
                3,
            )
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
        photo and the name pick out one sign).
        """
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
            meta=self._meta(
                key=(s.trajectory, s.frame), border_margin=round(margin, 3), oracle_steps=1
            ),
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
            f"{end_sentence(f'Find {typed_name(p)}')} The goal is not far from the start. "
            "Walk there and answer when you are standing in front of it."
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
        """A route graded by its length (the ``want`` band of :data:`THRESHOLDS`, around
        the paper's average); of up to :data:`ROUTE_CANDIDATES` starts in the band for a
        random goal, the one whose decision points are closest to the paper's average
        that the oracle walks within :attr:`oracle_budget` steps.
        """
        g = self._random_state(rng)
        gx, gy = self.graph.position(g)
        goals = self.graph.goal_states(gx, gy)
        lo_m, hi_m = THRESHOLDS["map_navigation"][want]
        f = self.graph.distance_field(goals)
        dist = _frame_distances(self.graph, f)
        cand = np.flatnonzero((dist >= lo_m) & (dist < hi_m))
        if not len(cand):
            return self._miss(f"no two frames {lo_m:.0f}-{hi_m:.0f} m apart along the pose graph")
        target = paper_targets("map_navigation", want).get("decision_points", 0.0)
        starts: list[tuple[float, int, State, RouteInfo]] = []
        for c in rng.permutation(cand)[:ROUTE_CANDIDATES]:
            s = State(int(self.graph.frame_traj[c]), int(self.graph.frame_index[c]))
            route = route_info(self.graph, s, goals)
            starts.append((abs(route.decisions - target), len(starts), s, route))
        starts.sort(key=lambda v: (v[0], v[1]))
        chosen: tuple[State, RouteInfo, int] | None = None
        for _, _, s, route in starts[:ORACLE_TRIES]:
            steps = self._feasible(s, goals)
            if steps is not None:
                chosen = (s, route, steps)
                break
        if chosen is None:
            return None
        s, route, steps = chosen
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
        found = self._start_in_band(rng, goals, *VLN_RANGE_M)
        if found is None:
            lo_m, hi_m = VLN_RANGE_M
            return self._miss(f"no start {lo_m:.0f}-{hi_m:.0f} m from a landmark along the graph")
        s, route = found
        steps_sentences = self._vln_steps(s, route, pl)
        diff = _band(len(steps_sentences), THRESHOLDS["vln"])
        if diff != want:
            return self._miss(
                f"no route to a landmark whose directions have {_values('vln', want)} steps "
                "(turns at junctions)",
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
                sentences.append(f"Turn around and walk along {street or 'the street'}")
            elif word == "straight":
                sentences.append(f"Walk straight ahead along {street or 'the street'}")
            else:
                sentences.append(f"Turn {word} and walk along {street or 'the street'}")
        else:
            sentences.append(f"Walk straight ahead along {first or 'the street'}")
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
                sentences.append(f"{where}, turn around{onto}")
            else:
                sentences.append(f"{where}, turn {word}{onto}")
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
        # a street or place name may end in a full stop of its own: no second one
        return [end_sentence(x) for x in sentences]

    def _count_range(
        self, rng: np.random.Generator, s: State
    ) -> tuple[str, str, LineString, Polygon | None] | None:
        """A counting range starting at ``s``: ``(range kind, phrase, centreline, block
        polygon or None)``.
        """
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
        """The block to the left of trajectory ``start_traj``: its ring and polygon (kept
        per trajectory), or None when the left turns do not close a plausible block.
        """
        blocks = self.__dict__.setdefault("_blocks", {})
        if start_traj not in blocks:
            blocks[start_traj] = self._trace_left_block(start_traj)
        return blocks[start_traj]

    def _trace_left_block(self, start_traj: int) -> tuple[LineString, Polygon] | None:
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

    def _count_kind(self, rng: np.random.Generator, want: str) -> str | None:
        """The object kind of the next object-count attempt at difficulty ``want``: the
        kinds the city maps take turns, a round at a time -- the paper's example kinds
        (:data:`PAPER_COUNT_KINDS`) first, the others in random order.
        """
        present = Counter(o.kind for o in self.city.objects)
        kinds = [k for k in COUNT_KINDS if present[k] > 0]
        if not kinds:
            return None
        turns = self.__dict__.setdefault("_count_turns", {}).setdefault(want, [])
        if not turns:
            first = [k for k in PAPER_COUNT_KINDS if k in kinds]
            rest = [k for k in kinds if k not in first]
            turns += first + [rest[int(i)] for i in rng.permutation(len(rest))]
        return str(turns.pop(0))

    def _gen_object_count(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        """A count of one kind of street object along a range. The kind comes first
        (:meth:`_count_kind`: every kind the city maps gets the same number of turns);
        then up to :data:`COUNT_RANGE_TRIES` random ranges are tried for a count in the
        ``want`` band. So the kinds share the tasks equally wherever the city has ranges
        holding that many of them, and a kind is missing from a difficulty only where
        the city has (almost) no such range.
        """
        okind = self._count_kind(rng, want)
        if okind is None:
            return self._miss("no mapped street objects to count")
        for _ in range(COUNT_RANGE_TRIES):
            s = self._random_state(rng)
            rg = self._count_range(rng, s)
            if rg is None or (rg[0] == "crosswalk" and okind == "crossing"):
                continue  # no range here; crosswalks are not counted up to a crosswalk
            rkind, phrase, line, poly = rg
            n = count_objects(self.city, okind, line, poly)
            if _band(n, THRESHOLDS["object_count"]) != want or n > MAX_COUNT:
                continue
            # keep empty ranges rare (only an exact 0 scores on them)
            if n > 0 or rng.random() <= ZERO_COUNT_SHARE:
                break
        else:
            return self._miss(
                f"no counting range with {_values('object_count', want)} {COUNT_KINDS[okind]} (a "
                "crosswalk ahead, "
                "the next junction or the block to the left)",
                2,
            )
        if rkind == "block_left":
            s = State(s.trajectory, 0)
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
            meta=self._meta(
                key=(s.trajectory, s.frame, okind, rkind), count=n, range=rkind, oracle_steps=1
            ),
        )

    def _gen_landmark_bbox(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        got = G.bbox_task(self, rng, want, self._id_views())
        if got is None:
            return self._miss(f"no named sign in view with a {want} box", 1)
        pl, s = got["place"], got["state"]
        name = typed_name(pl.poi)
        instr = (
            f"The sign of {name} is in your current view. Draw its bounding box: answer with "
            "ANSWER and the box as four numbers [x1, y1, x2, y2], its corners as fractions of "
            "the view's width and height (0 to 1; x to the right, y down). Do not move."
        )
        return TaskSpec(
            id="tmp",
            family=FAMILY,
            type="landmark_bbox",
            difficulty=want,
            city=self.city_spec,
            instruction=instr,
            start=self._start(s, got["yaw"]),
            answer=json.dumps({"bbox_xyxy_norm": got["box"]}),
            goal={"poi": pl.poi.name, "bbox": got["box"], "anchor": list(pl.poi.anchor)},
            meta=self._meta(key=(pl.poi.id, s.trajectory, s.frame), bbox_area=got["area"]),
        )

    def _video_walk(self, task_type: str, want: str) -> dict | None:
        """The next walk of difficulty ``want`` for ``task_type`` (the video types take
        the pool's walks in the same order, so their tasks pair by walk).
        """
        cursor = self.__dict__.setdefault("_video_cursor", {})
        i = cursor.get((task_type, want), 0)
        walk = V.walk_pool(self, want, i)
        if walk is None:
            self._miss(f"no {want} walk past a lone named sign (straight street, sign in view)", 1)
            return None
        cursor[(task_type, want)] = i + 1
        return walk

    def _video_task(
        self, task_type: str, walk: dict, instruction: str, answer: str, goal: dict, state: str
    ) -> TaskSpec:
        pl = walk["place"]
        return TaskSpec(
            id="tmp",
            family=FAMILY,
            type=task_type,
            difficulty=walk["difficulty"],
            city=self.city_spec,
            instruction=instruction,
            start=self._start(walk["start"]),
            answer=answer,
            goal={"video": V.video_goal(walk), **goal},
            meta=self._meta(
                key=walk["key"],
                fps=V.FPS,
                frames=len(walk["camera"]),
                poi_id=pl.poi.id,
                pair={"group": "video", "key": walk["key"], "state": state},
            ),
        )

    def _gen_relative_position(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        got = GI.position_pair(self, rng, want, self._frame_ids())
        if got is None:
            return self._miss(f"no named sign in view with a {want} box off every border", 1)
        rel, own = GI.position_tasks(self, got)
        self.__dict__.setdefault("_partners", {})[own.meta["pair"]["key"]] = own
        return rel

    def _gen_future_observation(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        got = GI.action_pair(self, rng, want, self._frame_ids())
        if got is None:
            return self._miss(f"no named sign with a {want} box in both 30-degree turns", 1)
        fo, ad = GI.action_tasks(self, got)
        self.__dict__.setdefault("_partners", {})[ad.meta["pair"]["key"]] = ad
        return fo

    def _frame_ids(self) -> Any:
        if "_frame_id_views" not in self.__dict__:
            self.__dict__["_frame_id_views"] = GI.FrameIds(self.city)
        return self.__dict__["_frame_id_views"]

    def _video_intro(self, walk: dict) -> str:
        n = len(walk["camera"])
        end = (n - 1) / V.FPS
        return (
            f"The {n} frames shown are a video of a walk, {V.FPS:g} frame per second: frame "
            f"k is at k/{V.FPS:g} seconds, so the video runs from 0 to {end:g} seconds. "
            "Answer right away from the frames (ANSWER; do not move)."
        )

    def _gen_landmark_visibility(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        walk = self._video_walk("landmark_visibility", want)
        if walk is None:
            return None
        pl, iv = walk["place"], walk["visible"]
        instr = (
            f"{self._video_intro(walk)} When can you see the sign of {typed_name(pl.poi)}? Answer "
            'with a JSON object like {"visible_count": 2, "visible_intervals_sec": [[0.0, '
            "2.5], [6.5, 9.0]]}: how many separate intervals the sign is visible in, and "
            "each interval's start and end in seconds."
        )
        answer = json.dumps({"visible_count": len(iv), "visible_intervals_sec": iv})
        goal = {"poi": pl.poi.name, "anchor": list(pl.poi.anchor), "intervals_sec": iv}
        return self._video_task("landmark_visibility", walk, instr, answer, goal, "world")

    def _behaviour_task(
        self, task_type: str, rng: np.random.Generator, want: str
    ) -> TaskSpec | None:
        walk = self._video_walk(task_type, want)
        if walk is None:
            return None
        composite = task_type == "composite_behaviour"
        names = list(V.COMPOSITE if composite else V.ATOMIC)
        rng.shuffle(names)
        options = V.lettered(names)
        words = {k: v[0] for k, v in V.COMPOSITE.items()} if composite else V.ATOMIC
        listed = " ".join(
            f"{k}. {end_sentence(words[n][:1].upper() + words[n][1:])}" for k, n in options.items()
        )
        kind = "composite behaviours (one movement followed directly by another)"
        instr = (
            f"{self._video_intro(walk)} Which of these "
            f"{kind if composite else 'atomic behaviours'} does the camera carry out, and "
            f"when? Options: {listed} Answer with a JSON object like "
            '{"answers": [{"option_id": "A", "intervals_sec": [[0.0, 2.0]]}, {"option_id": '
            '"C", "intervals_sec": [[4.0, 7.0]]}]}: every option that happens, with the '
            "start and end in seconds of each time it happens."
        )
        truth = walk["composite" if composite else "atomic"]
        goal = {"options": options, "behaviours": truth}
        answer = V.behaviour_answer(options, truth)
        return self._video_task(task_type, walk, instr, answer, goal, "agent")

    def _gen_composite_behaviour(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        return self._behaviour_task("composite_behaviour", rng, want)

    def _gen_atomic_behaviour(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        return self._behaviour_task("atomic_behaviour", rng, want)

    def _id_views(self, width: int = G.ID_PANO_WIDTH) -> Any:
        views = self.__dict__.setdefault("_views", {})
        if width not in views:
            views[width] = G.IdViews(self.city, width)
        return views[width]

    def _gen_relational(self, rng: np.random.Generator, want: str) -> TaskSpec | None:
        if not self.place_list:
            return None
        by_side: dict[tuple[int, str], list[Place]] = defaultdict(list)
        for p in self.place_list:
            by_side[(p.ref, p.side)].append(p)
        x = self.place_list[int(rng.integers(len(self.place_list)))]
        relation = RELATIONS[int(rng.integers(len(RELATIONS)))]
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
        phrase = relation_phrase(relation)
        if relation == "across":
            q = f"What is the name of the place {phrase} {x.poi.name}?"
        else:
            q = (
                f"What is the name of the place {phrase} {x.poi.name}, as seen when facing "
                f"{x.poi.name} from the street?"
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
                oracle_steps=1,
            ),
        )
