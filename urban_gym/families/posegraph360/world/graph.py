"""PoseGraph: a city as 360° trajectories of frames joined at junctions.

This is the world of the ``PoseGraph360`` family (after the 360CityArena benchmark: 360°
video segments, one per street and direction, joined at a pose graph's junction nodes).

A :class:`PoseGraph` holds the junctions and trajectories
(:mod:`~urban_gym.families.posegraph360.world.elements`) and an optional *frame source* that supplies
the equirectangular panorama of a frame (:mod:`~urban_gym.families.posegraph360.world.frames`,
:mod:`~urban_gym.families.posegraph360.world.capture`). It answers the geometric queries (nearest
frame, branches at a junction) and the distance queries (:class:`GoalDistances`: shortest
travel distances to a set of goal frames, routes).

* :meth:`PoseGraph.from_city` builds the graph from a :class:`~urban_gym.world.City`'s
  walkable network (:mod:`~urban_gym.families.posegraph360.world.from_city`);
* :meth:`PoseGraph.from_capture` imports real captures and finds the junctions from
  proximity and heading (:func:`detect_junctions`,
  :mod:`~urban_gym.families.posegraph360.world.junctions`).

Units: metres, degrees clockwise from north (x east, y north).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.caching import LRUCache
from urban_gym.families.posegraph360.world.capture import open_capture
from urban_gym.families.posegraph360.world.elements import (
    BRANCH_SECTORS,
    DEFAULT_MERGE_RADIUS_M,
    DEFAULT_MIN_STUB_M,
    DEFAULT_SPACING_M,
    EXCLUDED_HIGHWAYS,
    STREET_KINDS,
    Branch,
    Junction,
    PoseGraphError,
    State,
    Trajectory,
)
from urban_gym.families.posegraph360.world.frames import FrameSource
from urban_gym.families.posegraph360.world.from_city import street_trajectories
from urban_gym.families.posegraph360.world.junctions import CapturedTrajectory, join_captures
from urban_gym.world.geo import GeoFrame, angle_diff


class PoseGraph:
    """Junctions joined by directed trajectories of frames (see the module docstring).

    Build with :meth:`from_city` or :meth:`from_capture`. ``source`` supplies pixels
    (:meth:`panorama`); a graph without a source still answers every geometric query.
    """

    def __init__(
        self,
        junctions: Sequence[Junction],
        trajectories: Sequence[Trajectory],
        spacing: float,
        source: FrameSource | None = None,
        name: str = "",
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.junctions: list[Junction] = list(junctions)
        self.trajectories: list[Trajectory] = list(trajectories)
        self.spacing = float(spacing)
        self.source = source
        self.name = name
        self.meta: dict[str, Any] = dict(meta or {})
        if not self.trajectories:
            raise PoseGraphError(f"pose graph {name!r} has no trajectories")
        out: dict[int, list[int]] = defaultdict(list)
        inc: dict[int, list[int]] = defaultdict(list)
        for t in self.trajectories:
            out[t.start].append(t.id)
            inc[t.end].append(t.id)
        self.out_of: dict[int, list[int]] = {
            j.id: sorted(out.get(j.id, []), key=lambda k: (self.trajectories[k].departure, k))
            for j in self.junctions
        }
        self.into: dict[int, list[int]] = {j.id: sorted(inc.get(j.id, [])) for j in self.junctions}
        self._frame_base = np.cumsum([0] + [t.n_frames for t in self.trajectories])
        self.frame_xy = np.concatenate([t.xy for t in self.trajectories])
        self.frame_traj = np.concatenate(
            [np.full(t.n_frames, t.id, dtype=np.int64) for t in self.trajectories]
        )
        self.frame_index = np.concatenate(
            [np.arange(t.n_frames, dtype=np.int64) for t in self.trajectories]
        )
        #: metres of each trajectory (``trajectories[k].length``, read in every search)
        self.traj_length: list[float] = [t.length for t in self.trajectories]
        self._fields = _field_cache()

    # ------------------------------------------------------------------ basics
    def __repr__(self) -> str:
        s = self.statistics()
        return (
            f"PoseGraph({self.name!r}, junctions={s['junctions']}, segments={s['segments']}, "
            f"trajectories={s['trajectories']}, frames={s['frames']})"
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_fields", None)  # a cache: rebuilt empty on the other side
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "traj_length" not in state:
            self.traj_length = [t.length for t in self.trajectories]
        self._fields = _field_cache()

    @property
    def n_frames(self) -> int:
        """The number of frames over all trajectories."""
        return int(self._frame_base[-1])

    def with_source(self, source: FrameSource | None) -> PoseGraph:
        """The same graph drawing its pixels from ``source`` (shares the geometry)."""
        g = object.__new__(PoseGraph)
        g.__dict__.update(self.__dict__)
        g.source = source
        return g

    def position(self, state: State) -> tuple[float, float]:
        """``(x, y)`` metres of a state's frame."""
        p = self.trajectories[state.trajectory].xy[state.frame]
        return float(p[0]), float(p[1])

    def heading(self, state: State) -> float:
        """Travel heading (degrees) at a state's frame."""
        return float(self.trajectories[state.trajectory].heading[state.frame])

    def check_state(self, state: State) -> State:
        """``state`` if it names an existing frame, else :class:`PoseGraphError`."""
        if not (0 <= state.trajectory < len(self.trajectories)):
            raise PoseGraphError(
                f"trajectory {state.trajectory} does not exist "
                f"(the graph has {len(self.trajectories)})"
            )
        n = self.trajectories[state.trajectory].n_frames
        if not (0 <= state.frame < n):
            raise PoseGraphError(
                f"frame {state.frame} does not exist on trajectory {state.trajectory} ({n} frames)"
            )
        return state

    def junction_at(self, state: State) -> int | None:
        """The junction a state stands on (frame 0 or the last frame), else None."""
        t = self.trajectories[state.trajectory]
        if state.frame == t.last:
            return t.end
        if state.frame == 0:
            return t.start
        return None

    def panorama(self, state: State) -> tuple[np.ndarray, float]:
        """``(equirect rgb, pano_heading)`` of a state's frame from the frame source."""
        if self.source is None:
            raise PoseGraphError(f"pose graph {self.name!r} has no frame source")
        t = self.trajectories[state.trajectory]
        x, y = t.xy[state.frame]
        return self.source.panorama(t.keys[state.frame], float(x), float(y))

    def view_panorama(
        self, state: State, yaw: float, pitch: float, fov: float, size: tuple[int, int]
    ) -> tuple[np.ndarray, float]:
        """``(equirect rgb, pano_heading)`` of a state's frame good for the perspective view
        at compass ``yaw`` and ``pitch`` (degrees) with ``fov`` and ``size = (w, h)``: a
        rendered frame draws only the pixels that view reads (and keeps them for the next
        view of the frame); the rest may be black.
        """
        if self.source is None:
            raise PoseGraphError(f"pose graph {self.name!r} has no frame source")
        t = self.trajectories[state.trajectory]
        x, y = t.xy[state.frame]
        return self.source.view_panorama(
            t.keys[state.frame], float(x), float(y), (yaw, pitch, fov, size)
        )

    def keep_frame(self, state: State) -> None:
        """Tell the frame source that a state's frame will be wanted again and again (an
        episode's start: :meth:`FrameSource.keep`).
        """
        if self.source is not None:
            t = self.trajectories[state.trajectory]
            x, y = t.xy[state.frame]
            self.source.keep(t.keys[state.frame], float(x), float(y))

    def nearest_state(self, x: float, y: float, heading: float | None = None) -> State:
        """The frame nearest to ``(x, y)``; among frames within 1 m of the nearest, the one
        whose travel heading is closest to ``heading`` (when given).
        """
        d = np.hypot(self.frame_xy[:, 0] - x, self.frame_xy[:, 1] - y)
        best = float(d.min())
        cand = np.flatnonzero(d <= best + 1.0)
        if heading is not None and len(cand) > 1:
            hd = np.array(
                [
                    abs(
                        angle_diff(
                            self.trajectories[self.frame_traj[c]].heading[self.frame_index[c]],
                            heading,
                        )
                    )
                    for c in cand
                ]
            )
            cand = cand[np.lexsort((d[cand], np.round(hd, 3)))]
        else:
            cand = cand[np.argsort(d[cand], kind="stable")]
        c = int(cand[0])
        return State(int(self.frame_traj[c]), int(self.frame_index[c]))

    def states_near(self, x: float, y: float, radius: float) -> list[State]:
        """Every frame within ``radius`` metres of ``(x, y)``."""
        d = np.hypot(self.frame_xy[:, 0] - x, self.frame_xy[:, 1] - y)
        return [
            State(int(self.frame_traj[c]), int(self.frame_index[c]))
            for c in np.flatnonzero(d <= radius)
        ]

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """``(xmin, ymin, xmax, ymax)`` over all frames, metres."""
        a = self.frame_xy
        return (
            float(a[:, 0].min()),
            float(a[:, 1].min()),
            float(a[:, 0].max()),
            float(a[:, 1].max()),
        )

    # ------------------------------------------------------------------ branches
    def branches(self, junction: int, camera_bearing: float) -> list[Branch]:
        """Outgoing trajectories at ``junction`` with their bearing relative to a camera
        looking along ``camera_bearing`` (degrees).
        """
        out = []
        for k in self.out_of.get(junction, []):
            b = self.trajectories[k].departure
            out.append(Branch(k, b, float(angle_diff(b, camera_bearing))))
        return out

    def branch_choices(self, junction: int, camera_bearing: float) -> dict[str, int]:
        """Which trajectory each branch action selects at ``junction`` for a camera
        looking along ``camera_bearing``.

        ``LEFT``/``UP``/``RIGHT`` aim at -90/0/+90 degrees relative to the camera; a branch
        belongs to the sector whose centre is within 45 degrees of it (``LEFT`` takes
        [-135, -45), ``UP`` [-45, 45], ``RIGHT`` (45, 135]). When two branches share a
        sector the one closest to the sector centre is chosen (ties: lower id); a branch
        behind the camera (beyond 135 degrees) is not selectable until the camera turns.
        """
        best: dict[str, tuple[float, int]] = {}
        for br in self.branches(junction, camera_bearing):
            r = br.relative
            if -135.0 <= r < -45.0:
                name = "LEFT"
            elif -45.0 <= r <= 45.0:
                name = "UP"
            elif 45.0 < r <= 135.0:
                name = "RIGHT"
            else:
                continue
            key = (abs(r - BRANCH_SECTORS[name]), br.trajectory)
            if name not in best or key < best[name]:
                best[name] = key
        return {k: v[1] for k, v in sorted(best.items())}

    # ------------------------------------------------------------------ routes
    def goal_states(self, x: float, y: float, tolerance: float = 1.0) -> list[State]:
        """Frames that count as being at the goal point ``(x, y)``: every frame within
        ``tolerance`` metres of the frame nearest to it.
        """
        s = self.nearest_state(x, y)
        gx, gy = self.position(s)
        return self.states_near(gx, gy, tolerance)

    def distance_field(self, goals: Iterable[State]) -> GoalDistances:
        """Shortest travel distances (metres along trajectories) to the nearest of
        ``goals`` from every state (see :class:`GoalDistances`); the fields of the last
        :data:`FIELD_CACHE_SIZE` goal sets are kept (tasks repeat in training).
        """
        goals = list(goals)
        return self._fields.get_or_create(tuple(goals), lambda: GoalDistances(self, goals))

    def shortest_route(self, start: State, goals: Iterable[State]) -> list[State]:
        """The states visited on a shortest route from ``start`` to the nearest goal frame:
        every frame along the way, with a branch switch recorded as the new
        trajectory's frame 0 (same position as the junction).
        """
        return self.distance_field(goals).route(start)

    # ------------------------------------------------------------------ statistics
    def statistics(self) -> dict[str, Any]:
        """The figures the 360CityArena paper gives for its graph, and a few more.

        ``segments`` are undirected street segments (pose-graph edges), ``trajectories``
        the directed ones (video segments), ``mean_branching`` the mean junction degree
        ``2 * segments / junctions``, ``streets`` the distinct street names.
        """
        segs = {t.segment for t in self.trajectories}
        deg: Counter[int] = Counter()
        seen: set[int] = set()
        for t in self.trajectories:
            if t.segment in seen:
                continue
            seen.add(t.segment)
            deg[t.start] += 1
            deg[t.end] += 1
        n = len(self.junctions)
        x0, y0, x1, y1 = self.bounds
        seg_len = {t.segment: t.length for t in self.trajectories}
        named = {t.street for t in self.trajectories if t.street}
        return {
            "name": self.name,
            "junctions": n,
            "segments": len(segs),
            "trajectories": len(self.trajectories),
            "mean_branching": round(2.0 * len(segs) / n, 2) if n else 0.0,
            "dead_ends": sum(1 for j in self.junctions if deg[j.id] == 1),
            "degree_histogram": dict(sorted(Counter(deg[j.id] for j in self.junctions).items())),
            "streets": len(named),
            "frames": self.n_frames,
            "spacing_m": self.spacing,
            "length_km": round(sum(seg_len.values()) / 1000.0, 3),
            "mean_segment_m": round(sum(seg_len.values()) / max(1, len(segs)), 1),
            "extent_m": (round(x1 - x0, 1), round(y1 - y0, 1)),
        }

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_city(
        cls,
        city: Any,
        spacing: float = DEFAULT_SPACING_M,
        kinds: Sequence[str] = STREET_KINDS,
        exclude_highways: Sequence[str] = EXCLUDED_HIGHWAYS,
        merge_radius: float = DEFAULT_MERGE_RADIUS_M,
        min_stub: float = DEFAULT_MIN_STUB_M,
        source: FrameSource | None = None,
    ) -> PoseGraph:
        """Build the pose graph of a City's streets.

        Streets are the network edges whose ``kind`` is in ``kinds`` and whose
        ``highway`` is not in ``exclude_highways``; the largest connected part is kept.
        Chains of degree-2 nodes become segments; junctions joined by a segment shorter
        than ``merge_radius`` metres merge into one (at their mean position); dead-end
        stubs shorter than ``min_stub`` metres are pruned. Each segment becomes two
        trajectories (one per direction) with a frame every ``spacing`` metres (evenly
        spread: ``round(length / spacing)`` intervals, at least one).
        """
        junctions, trajs = street_trajectories(
            city, spacing, kinds, exclude_highways, merge_radius, min_stub
        )
        return cls(
            junctions,
            trajs,
            spacing,
            source,
            name=f"{city.name}",
            meta={
                "source": "city",
                "city": city.name,
                "spacing": spacing,
                "kinds": list(kinds),
                "exclude_highways": list(exclude_highways),
                "merge_radius": merge_radius,
                "min_stub": min_stub,
            },
        )

    @classmethod
    def from_capture(
        cls,
        capture: str | Path,
        poses: str | Path | None = None,
        geo: GeoFrame | None = None,
        radius: float = 6.0,
        merge: float = 10.0,
        min_crossing_angle: float = 30.0,
        cache_mb: float = 256.0,
        name: str | None = None,
    ) -> PoseGraph:
        """Import a real capture: a folder of equirectangular images (pose CSV default
        ``<folder>/poses.csv``) or a 360° video (pose CSV default ``<video>.csv``).

        Junctions are found by :func:`detect_junctions` (``radius``, ``merge`` metres;
        ``min_crossing_angle`` degrees). ``geo`` converts ``lat``/``lon`` columns (pass the
        City's ``frame`` to line the capture up with a city).
        """
        p = Path(capture)
        src, captured = open_capture(p, poses, geo, cache_mb)
        g = detect_junctions(
            captured,
            radius=radius,
            merge=merge,
            min_crossing_angle=min_crossing_angle,
            source=src,
            name=name or p.stem,
        )
        g.meta.update({"source": "capture", "capture": str(p)})
        return g


def detect_junctions(
    captured: Sequence[CapturedTrajectory],
    radius: float = 6.0,
    merge: float = 10.0,
    min_crossing_angle: float = 30.0,
    source: FrameSource | None = None,
    name: str = "capture",
) -> PoseGraph:
    """Join captured trajectories into a pose graph (the Movie Map recipe): the junctions
    and trajectory pieces of :func:`~urban_gym.families.posegraph360.world.junctions.join_captures`
    (``radius``, ``merge`` metres; ``min_crossing_angle`` degrees), drawing pixels from
    ``source``.
    """
    joined = join_captures(captured, radius, merge, min_crossing_angle)
    return PoseGraph(
        joined.junctions, joined.trajectories, joined.spacing, source, name, joined.meta
    )


# ---------------------------------------------------------------------------- distances
#: Goal-distance fields kept per pose graph (each a few KB: one float per junction).
FIELD_CACHE_SIZE = 512


def _field_cache() -> LRUCache:
    return LRUCache(max_items=FIELD_CACHE_SIZE, lock=True)


class GoalDistances:
    """Shortest travel distances (metres) to a set of goal frames.

    Movement follows the pose graph's rules: forward along a trajectory, and at a
    junction (frame 0 or the last frame of a trajectory) onto any trajectory leaving it.
    ``junction[j]`` is the distance from junction ``j``; :meth:`distance` gives it for
    any state.
    """

    def __init__(self, graph: PoseGraph, goals: list[State]) -> None:
        self.graph = graph
        self.goals = goals
        self.goal_on: dict[int, list[int]] = defaultdict(list)
        for s in goals:
            graph.check_state(s)
            self.goal_on[s.trajectory].append(s.frame)
        for v in self.goal_on.values():
            v.sort()
        inf = math.inf
        dist = {j.id: inf for j in graph.junctions}
        heap: list[tuple[float, int]] = []
        for t_id, frames in self.goal_on.items():
            t = graph.trajectories[t_id]
            d0 = float(t.offsets[frames[0]])
            if d0 < dist[t.start]:
                dist[t.start] = d0
            if frames[-1] == t.last and 0.0 < dist[t.end]:
                dist[t.end] = 0.0
        heap = [(d, j) for j, d in dist.items() if d < inf]
        heapq.heapify(heap)
        done: set[int] = set()
        lengths = graph.traj_length
        starts = [t.start for t in graph.trajectories]
        while heap:
            d, j = heapq.heappop(heap)
            if j in done:
                continue
            done.add(j)
            for k in graph.into.get(j, []):
                start = starts[k]
                nd = d + lengths[k]
                if nd < dist[start]:
                    dist[start] = nd
                    heapq.heappush(heap, (nd, start))
        self.junction = dist

    def distance(self, state: State) -> float:
        """Travel distance in metres from ``state`` to the nearest goal frame (inf when
        unreachable).
        """
        t = self.graph.trajectories[state.trajectory]
        i = state.frame
        best = math.inf
        for g in self.goal_on.get(t.id, ()):
            if g >= i:
                best = float(t.offsets[g] - t.offsets[i])
                break
        best = min(best, float(t.offsets[-1] - t.offsets[i]) + self.junction[t.end])
        if i == 0:
            best = min(best, self.junction[t.start])
        return best

    def branch_cost(self, trajectory: int) -> float:
        """Distance to the goal when entering ``trajectory`` at its frame 0 and moving on
        it (without switching back at its start junction).
        """
        t = self.graph.trajectories[trajectory]
        goals = self.goal_on.get(trajectory)
        if goals:
            return float(t.offsets[goals[0]])
        return t.length + self.junction[t.end]

    def best_branch(self, junction: int) -> int | None:
        """The outgoing trajectory of a shortest route from ``junction`` (lowest id on
        ties), or None when the junction is a goal or nothing is reachable.
        """
        best: tuple[float, int] | None = None
        for k in self.graph.out_of.get(junction, []):
            c = self.branch_cost(k)
            if math.isfinite(c) and (best is None or (c, k) < best):
                best = (c, k)
        return None if best is None else best[1]

    def is_goal(self, state: State) -> bool:
        """Whether ``state`` is one of the goal frames."""
        return state.frame in self.goal_on.get(state.trajectory, ())

    def route(self, start: State) -> list[State]:
        """Every state of a shortest route from ``start`` to a goal (see
        :meth:`PoseGraph.shortest_route`); raises :class:`PoseGraphError` if unreachable.
        """
        if not math.isfinite(self.distance(start)):
            raise PoseGraphError(f"no route from {start} to the goal")
        s = start
        out = [s]
        for _ in range(self.graph.n_frames + len(self.graph.trajectories) + 2):
            if self.is_goal(s):
                return out
            t = self.graph.trajectories[s.trajectory]
            j = self.graph.junction_at(s)
            if j is not None:
                stay = math.inf if s.frame == t.last else self.distance_along(s)
                if self.junction[j] + 1e-9 < stay:
                    k = self.best_branch(j)
                    if k is None:
                        break
                    s = State(k, 0)
                    out.append(s)
                    continue
            s = State(s.trajectory, s.frame + 1)
            out.append(s)
        raise PoseGraphError(f"route from {start} did not reach the goal")

    def geodesic(self, state: State) -> float:
        """Distance (metres) along the streets from ``state``'s position to the nearest
        goal frame in either direction of travel: :meth:`distance`, or back along the
        current trajectory to its start junction (or to a goal frame behind). This is the
        "distance to the goal" that ``AWAY_FROM_GOAL`` watches: walking the wrong way
        along a street increases it at every step.
        """
        t = self.graph.trajectories[state.trajectory]
        i = state.frame
        best = min(self.distance(state), float(t.offsets[i]) + self.junction[t.start])
        for g in self.goal_on.get(t.id, ()):
            if g <= i:
                best = min(best, float(t.offsets[i] - t.offsets[g]))
        return best

    def distance_along(self, state: State) -> float:
        """Distance when staying on the current trajectory (no switch at its start)."""
        t = self.graph.trajectories[state.trajectory]
        for g in self.goal_on.get(t.id, ()):
            if g >= state.frame:
                return float(t.offsets[g] - t.offsets[state.frame])
        return float(t.offsets[-1] - t.offsets[state.frame]) + self.junction[t.end]


#: The modules whose code makes a pose graph from a city: their source names the graph kept
#: in the world cache, so a change to them builds it anew.
BUILD_SOURCES: tuple[str, ...] = (
    *(
        f"urban_gym.families.posegraph360.world.{n}"
        for n in ("elements", "from_city", "graph", "junctions")
    ),
    "urban_gym.world.geo",
)
#: Pose graphs built by :func:`load_posegraph` in this process (the last 8 used).
_GRAPHS: LRUCache[tuple, PoseGraph] = LRUCache(max_items=8, lock=True, name="world.posegraphs")


def load_posegraph(city: str, spacing: float = DEFAULT_SPACING_M, **params: Any) -> PoseGraph:
    """The pose graph of ``load_city(city)`` built by :meth:`PoseGraph.from_city` with
    ``spacing`` and ``params``, memoised per process and kept in the world cache (built once
    per machine, then read back: a fresh process's first PoseGraph360 step does not walk
    the city's streets again), without a frame source (attach one with
    :meth:`PoseGraph.with_source`).
    """
    from urban_gym.world.diskcache import cached_for_city
    from urban_gym.world.loader import load_city

    key = (str(city), float(spacing), tuple(sorted((k, _freeze(v)) for k, v in params.items())))

    def build() -> PoseGraph:
        c = load_city(city)
        g = cached_for_city(
            "posegraph",
            c,
            lambda: PoseGraph.from_city(c, spacing=spacing, **params),
            *BUILD_SOURCES,
            key=repr(key[1:]),
        )
        g.meta["city_spec"] = str(city)
        return g

    return _GRAPHS.get_or_create(key, build)


def _freeze(v: Any) -> Any:
    return tuple(v) if isinstance(v, (list, tuple)) else v
