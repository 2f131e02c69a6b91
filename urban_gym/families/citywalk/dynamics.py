"""CityWalk dynamics: a walker in the metric plane of a :class:`~urban_gym.world.City`.

Units: metres, seconds, degrees. Headings are compass bearings (0 north, 90 east,
clockwise); pitch is positive up.

* **Walker** -- a disc of radius :data:`~urban_gym.world.walkable.WALKER_RADIUS` (0.3 m).
  It walks at :data:`WALK_SPEED` (1.4 m/s) or sprints at :data:`SPRINT_SPEED` (3.0 m/s)
  in one of four directions relative to its heading, while an optional yaw rate turns the
  heading (the walker then follows a circular arc).
* **Collisions and network** -- the city's walls, carved passages, walkable corridors and
  covered ways are :class:`~urban_gym.world.walkable.WalkGeometry` (see
  :mod:`urban_gym.world.walkable`); a move is swept against its walls and slides along them.
* **Closures** -- waypoint chains that must not be crossed; a crossing is detected from
  each move's path segments (:func:`count_crossings`). They are rules, not walls.
* **Pedestrians** -- :class:`Crowd`: people walking random routes along the network at
  1.2-1.5 m/s. A *contact* is a walker-pedestrian centre distance below
  :data:`CONTACT_DISTANCE` (0.6 m); it is counted once per contact (when it begins).
  Pedestrians do not block the walker.
* **Jumps and low obstacles** -- benches and picnic tables are low obstacles
  (:func:`low_obstacles`): a walker on the ground stops at them, one in the air (the
  :data:`JUMP_AIR_S` seconds after a jump takes off) passes over them.
* **Clock** -- the simulation clock advances only by action durations.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from urban_gym.caching import LRUCache
from urban_gym.world.city import City
from urban_gym.world.diskcache import cached_for_city
from urban_gym.world.walkable import WalkGeometry

WALK_SPEED = 1.4  # m/s
SPRINT_SPEED = 3.0  # m/s
CONTACT_DISTANCE = 0.6  # m, walker centre to pedestrian centre
PEDESTRIAN_SPEED_RANGE = (1.2, 1.5)  # m/s
CONTACT_SAMPLE_DT = 0.05  # s, time resolution of pedestrian contact detection
ARC_STEP_DEG = 10.0  # largest heading change per straight sub-move of an arc

#: Unit vectors (in the walker's frame) of the four move directions, as bearing offsets.
DIRECTION_OFFSETS: dict[str, float] = {
    "forward": 0.0,
    "right": 90.0,
    "backward": 180.0,
    "left": 270.0,
}


# ---------------------------------------------------------------- moves
@dataclass
class WalkerState:
    """Pose of the walker: position (m), heading (deg, compass), pitch (deg, up +)."""

    x: float
    y: float
    heading: float
    pitch: float = 0.0


@dataclass
class MoveResult:
    """Outcome of one move: the end pose, the path polyline (start, contact points and
    sub-move ends), its time stamps (s from the move's start), whether a wall was hit and
    the distance covered (m).
    """

    state: WalkerState
    path: list[tuple[float, float]]
    times: list[float]
    hit_wall: bool
    distance: float


def simulate_move(
    geom: WalkGeometry,
    state: WalkerState,
    direction: str,
    speed: float,
    duration: float,
    yaw_rate: float = 0.0,
    pitch_rate: float = 0.0,
    jump_at: float | None = None,
    air: WalkGeometry | None = None,
) -> MoveResult:
    """Simulate a move of ``duration`` seconds at ``speed`` m/s in ``direction``
    (``forward``/``backward``/``left``/``right`` relative to the heading) while the heading
    turns at ``yaw_rate`` deg/s and the pitch at ``pitch_rate`` deg/s (clamped to
    [-90, 90]). A turning move follows a circular arc, split into straight chords of at
    most :data:`ARC_STEP_DEG` degrees that lie exactly on the arc. With ``jump_at`` (s into
    the move) the walker is in the air for :data:`JUMP_AIR_S` seconds from then and is
    swept against ``air`` (the geometry without low obstacles) instead of ``geom``. Pure:
    ``state`` is not changed.
    """
    off = DIRECTION_OFFSETS[direction]
    x, y = state.x, state.y
    n = 1 if yaw_rate == 0.0 else max(1, math.ceil(abs(yaw_rate) * duration / ARC_STEP_DEG))
    dt = duration / n
    path = [(x, y)]
    times = [0.0]
    hit = False
    for ta, tb, tm, flying in _move_intervals(n, dt, duration, jump_at, air is not None):
        half = math.radians(yaw_rate * (tb - ta)) / 2.0
        chord = speed * (tb - ta) * (math.sin(half) / half if half != 0.0 else 1.0)
        b = math.radians(state.heading + off + yaw_rate * tm)
        before = len(path)
        g = air if flying else geom
        assert g is not None  # flying only where air is given
        x, y, h = g.sweep(x, y, chord * math.sin(b), chord * math.cos(b), path)
        hit = hit or h
        # contact points appended by sweep get times spread over the sub-move
        added = len(path) - before
        for j in range(added):
            times.append(ta + (tb - ta) * (j + 1) / (added + 1))
        path.append((x, y))
        times.append(tb)
    dist = 0.0
    for (x0, y0), (x1, y1) in zip(path[:-1], path[1:]):
        dist += math.hypot(x1 - x0, y1 - y0)
    end = WalkerState(
        x,
        y,
        (state.heading + yaw_rate * duration) % 360.0,
        max(-90.0, min(90.0, state.pitch + pitch_rate * duration)),
    )
    return MoveResult(end, path, times, hit, dist)


def _move_intervals(n: int, dt: float, duration: float, jump_at: float | None, has_air: bool):
    """``(start, end, mid, in_the_air)`` times (s) of a move's straight sub-moves: ``n``
    equal chords, cut further where a jump takes off and lands.
    """
    if jump_at is None or not has_air:
        return [(k * dt, (k + 1) * dt, (k + 0.5) * dt, False) for k in range(n)]
    t0, t1 = jump_at, min(duration, jump_at + JUMP_AIR_S)
    cuts = sorted({k * dt for k in range(n + 1)} | {t0, t1} | {duration})
    out = []
    for ta, tb in zip(cuts[:-1], cuts[1:]):
        if tb - ta > 1e-12:
            out.append((ta, tb, (ta + tb) / 2.0, t0 <= ta and tb <= t1 + 1e-12))
    return out


#: Seconds a jump keeps the walker in the air (``JUMP_DURATION`` of the action set).
JUMP_AIR_S = 0.6
#: Half side (m) of the square a low obstacle (a bench, a picnic table) occupies.
LOW_OBSTACLE_HALF = 0.4
#: Street-object kinds that are low obstacles (a jump clears them).
LOW_OBSTACLE_KINDS = frozenset({"bench"})


def low_obstacles(city: City, geometry: WalkGeometry) -> WalkGeometry:
    """``geometry`` with the city's low obstacles added as walls: a square of half side
    :data:`LOW_OBSTACLE_HALF` m around each bench or picnic table (memoised per city).
    A walker on the ground stops at them; one in the air (a jump) passes over.
    """
    hit = _LOW_CACHE.get(city)
    if hit is not None and hit[0] is geometry:
        return hit[1]
    import dataclasses

    from urban_gym.world import walkable as walkable_module
    from urban_gym.world.walkable import WALKER_RADIUS, SegmentGrid

    w = geometry.walls
    old = np.column_stack([w.ax, w.ay, w.bx, w.by])
    r = LOW_OBSTACLE_HALF
    squares: list[tuple[float, float, float, float]] = []
    for o in city.objects:
        if o.kind in LOW_OBSTACLE_KINDS and city.contains(*o.position):
            x, y = o.position
            c = [(x - r, y - r), (x + r, y - r), (x + r, y + r), (x - r, y + r)]
            squares.extend((*c[i], *c[(i + 1) % 4]) for i in range(4))
    if not squares:
        out = geometry
    else:

        def walls() -> SegmentGrid:
            segs = np.vstack([old, np.array(squares, dtype=float)])
            return SegmentGrid(segs, WALKER_RADIUS, cell=4.0)

        if geometry is not WalkGeometry.memoised(city):
            grid = walls()
        else:  # the city's own geometry: its walls with the obstacles, once per machine
            grid = cached_for_city("walk-low", city, walls, walkable_module, sys.modules[__name__])
        out = dataclasses.replace(geometry, walls=grid)
    _LOW_CACHE[city] = (geometry, out)
    return out


_LOW_CACHE: weakref.WeakKeyDictionary[City, tuple[WalkGeometry, WalkGeometry]] = (
    weakref.WeakKeyDictionary()
)


# ---------------------------------------------------------------- closures
@dataclass(frozen=True)
class Closure:
    """A closed way as a chain of waypoints ``points`` (m); crossing it breaks the rule.

    ``trigger`` (dynamic closures): ``(x, y, radius)`` -- the closure appears when the
    walker first comes within ``radius`` metres of ``(x, y)``; None = present from the start.
    """

    id: str
    points: tuple[tuple[float, float], ...]
    label: str = ""
    trigger: tuple[float, float, float] | None = None

    def __post_init__(self) -> None:
        pts = tuple((float(p[0]), float(p[1])) for p in self.points)
        if len(pts) < 2 or not all(math.isfinite(c) for p in pts for c in p):
            raise ValueError(f"closure {self.id!r}: points={self.points!r} need >= 2 finite (x, y)")
        if all(p == pts[0] for p in pts):
            raise ValueError(f"closure {self.id!r}: points={self.points!r} are all the same")
        object.__setattr__(self, "points", pts)


def _orient(ax: float, ay: float, bx: float, by: float, px: float, py: float) -> float:
    return (bx - ax) * (py - ay) - (by - ay) * (px - ax)


def segment_crosses(
    p0: tuple[float, float],
    p1: tuple[float, float],
    a: tuple[float, float],
    b: tuple[float, float],
) -> bool:
    """Whether the move ``p0 -> p1`` crosses the closure segment ``a - b``.

    Sides are half-open (a point exactly on the line counts as the negative side), so a
    path that goes across is counted once however it is cut into moves, and a move that
    stops short of the line (or only reaches it from the negative side) is not a crossing.
    """
    s0 = _orient(a[0], a[1], b[0], b[1], p0[0], p0[1]) > 0.0
    s1 = _orient(a[0], a[1], b[0], b[1], p1[0], p1[1]) > 0.0
    if s0 == s1:
        return False
    o1 = _orient(p0[0], p0[1], p1[0], p1[1], a[0], a[1])
    o2 = _orient(p0[0], p0[1], p1[0], p1[1], b[0], b[1])
    return (o1 <= 0.0 <= o2) or (o2 <= 0.0 <= o1)


def count_crossings(path: Sequence[tuple[float, float]], closure: Closure) -> int:
    """How many times the polyline ``path`` crosses ``closure``."""
    n = 0
    pts = closure.points
    for p0, p1 in zip(path[:-1], path[1:]):
        if p0 == p1:
            continue
        for a, b in zip(pts[:-1], pts[1:]):
            if segment_crosses(p0, p1, a, b):
                n += 1
    return n


# ---------------------------------------------------------------- pedestrians
@dataclass
class Pedestrian:
    """One pedestrian: a route polyline (``xs``, ``ys`` with cumulative length ``cum``),
    where it is along it at clock 0 (``s0``, m) and its ``speed`` (m/s).
    """

    xs: np.ndarray
    ys: np.ndarray
    cum: np.ndarray
    s0: float
    speed: float

    def position(self, t: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """Where the pedestrian is at clock ``t`` (s): its ``(x, y)`` in metres (arrays for an
        array ``t``).
        """
        s = self.s0 + self.speed * np.asarray(t, dtype=float)
        return np.interp(s, self.cum, self.xs), np.interp(s, self.cum, self.ys)


class Crowd:
    """Pedestrians walking random routes on the network (see the module docstring).

    Built from a seed so the same task always shows the same people. Each person starts at a
    random point of an edge near ``around`` (node ids), walks at a speed drawn from
    :data:`PEDESTRIAN_SPEED_RANGE`, keeps a lateral offset of up to 0.5 m from the centre
    line and turns at nodes at random (never straight back unless at a dead end). Routes are
    long enough for ``duration`` seconds of walking. Contacts are tracked per person.
    """

    def __init__(
        self,
        city: City,
        count: int,
        seed: int,
        around: Sequence[int] | None = None,
        duration: float = 400.0,
        speed_range: tuple[float, float] = PEDESTRIAN_SPEED_RANGE,
        avoid: tuple[float, float] | None = None,
        clearance: float = 3.0,
    ) -> None:
        key = (
            int(count),
            int(seed),
            tuple(around) if around else None,
            float(duration),
            tuple(map(float, speed_range)),
            None if avoid is None else (float(avoid[0]), float(avoid[1])),
            float(clearance),
        )

        def build() -> tuple[Pedestrian, ...]:
            return _walk_people(city, count, seed, around, duration, speed_range, avoid, clearance)

        people = _route_table(city).crowds.get_or_create(key, lambda: _stored(city, key, build))
        # the routes are read-only and shared; the contact state is this crowd's own
        self.people: list[Pedestrian] = list(people)
        self.in_contact = np.zeros(len(self.people), dtype=bool)
        self.contacts = 0

    def __len__(self) -> int:
        return len(self.people)

    def _packed(self) -> tuple[np.ndarray, ...]:
        """All routes in one monotonic arc-length axis, so one ``np.interp`` places
        everybody: person ``i``'s arc length ``s`` maps to ``base[i] + clip(s, 0, L[i])``.
        """
        if getattr(self, "_pack_n", -1) != len(self.people):
            lengths = np.array([p.cum[-1] for p in self.people], dtype=float)
            base = np.concatenate([[0.0], np.cumsum(lengths + 1.0)[:-1]])
            self._pack = (
                np.concatenate([p.cum + b for p, b in zip(self.people, base)]),
                np.concatenate([p.xs for p in self.people]),
                np.concatenate([p.ys for p in self.people]),
                base,
                lengths,
                np.array([p.s0 for p in self.people], dtype=float),
                np.array([p.speed for p in self.people], dtype=float),
            )
            self._pack_n = len(self.people)
        return self._pack

    def positions_at(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(N, K)`` x and y (m) of everybody at the times ``ts`` (s, shape ``(K,)``)."""
        gcum, gx, gy, base, lengths, s0, v = self._packed()
        s = s0[:, None] + v[:, None] * np.asarray(ts, dtype=float)[None, :]
        g = base[:, None] + np.clip(s, 0.0, lengths[:, None])
        return np.interp(g, gcum, gx), np.interp(g, gcum, gy)

    def positions(self, clock: float) -> np.ndarray:
        """``(N, 2)`` positions (m) at ``clock`` seconds since the episode start."""
        if not self.people:
            return np.zeros((0, 2))
        px, py = self.positions_at(np.array([clock]))
        return np.column_stack([px[:, 0], py[:, 0]])

    def advance(self, t0: float, duration: float, walker_xy: np.ndarray) -> int:
        """Account for the walker moving over ``[t0, t0 + duration]``: ``walker_xy`` is its
        ``(K, 2)`` positions at :func:`sample_times`. Returns the new contacts.
        """
        if not self.people or duration <= 0.0:
            return 0
        ts = sample_times(t0, duration)
        px, py = self.positions_at(ts)
        close = np.empty((len(self.people), len(ts) + 1), dtype=bool)
        close[:, 0] = self.in_contact
        lim = CONTACT_DISTANCE * CONTACT_DISTANCE
        close[:, 1:] = (px - walker_xy[None, :, 0]) ** 2 + (py - walker_xy[None, :, 1]) ** 2 < lim
        new = int(np.count_nonzero(close[:, 1:] & ~close[:, :-1]))
        self.in_contact = close[:, -1].copy()
        self.contacts += new
        return new


def sample_times(t0: float, duration: float) -> np.ndarray:
    """Times (s) at which contacts are checked during ``[t0, t0 + duration]``: every
    :data:`CONTACT_SAMPLE_DT` seconds and at the end (the start was checked before).
    """
    k = max(1, math.ceil(duration / CONTACT_SAMPLE_DT))
    return t0 + duration * np.arange(1, k + 1) / k


def walker_samples(result: MoveResult, duration: float, t0: float = 0.0) -> np.ndarray:
    """The walker's ``(K, 2)`` positions at :func:`sample_times` of a move (linear in time
    between the path's time-stamped points).
    """
    ts = sample_times(0.0, duration)
    if duration <= 0.0 or len(result.path) < 2:
        x, y = result.path[-1]
        return np.tile([x, y], (len(ts), 1))
    tt = np.asarray(result.times)
    pp = np.asarray(result.path)
    return np.column_stack([np.interp(ts, tt, pp[:, 0]), np.interp(ts, tt, pp[:, 1])])


def _walk_people(
    city: City,
    count: int,
    seed: int,
    around: Sequence[int] | None,
    duration: float,
    speed_range: tuple[float, float],
    avoid: tuple[float, float] | None,
    clearance: float,
) -> tuple[Pedestrian, ...]:
    """The pedestrians of a :class:`Crowd` (its arguments; see its docstring)."""
    rng = np.random.default_rng(seed)
    table = _route_table(city)
    edges = table.edges_around(around)
    people: list[Pedestrian] = []
    for _ in range(int(count)):
        for _attempt in range(20):
            u, v = edges[int(rng.integers(len(edges)))]
            if rng.random() < 0.5:
                u, v = v, u
            speed = float(rng.uniform(*speed_range))
            lateral = float(rng.uniform(-0.5, 0.5))
            pts = _random_route(city, u, v, speed * duration + 50.0, rng)
            xs, ys, cum = _offset_polyline(pts, lateral)
            for arr in (xs, ys, cum):  # shared by every crowd of this task: read-only
                arr.setflags(write=False)
            s0 = float(rng.uniform(0.0, min(cum[-1], table.length(u, v))))
            person = Pedestrian(xs, ys, cum, s0, speed)
            if avoid is None:
                break
            px, py = person.position(0.0)
            if math.hypot(float(px) - avoid[0], float(py) - avoid[1]) >= clearance:
                break
        people.append(person)
    return tuple(people)


def _stored(city: City, key: tuple, build) -> tuple[Pedestrian, ...]:
    """The pedestrians of crowd ``key``, kept in the world cache for a loaded city (a
    task's crowd takes tens of milliseconds to walk out and is the same in every process;
    read back, well under one), built in memory for another.
    """
    people = cached_for_city("crowd", city, build, sys.modules[__name__], key=repr(key))
    for p in people:
        for arr in (p.xs, p.ys, p.cum):  # shared by every crowd of this task: read-only
            arr.setflags(write=False)
    return people


def _crowd_nbytes(people: tuple[Pedestrian, ...]) -> int:
    return sum(p.xs.nbytes + p.ys.nbytes + p.cum.nbytes + 64 for p in people)


#: Bytes of pedestrian routes kept per city (a Helsinki crowd of 12 is about 0.1 MB)
CROWD_CACHE_BYTES = 32 * 2**20


class _RouteTable:
    """A city's network as plain Python data for random walks: for each step ``prev ->
    cur`` the neighbours to choose from (sorted, never straight back unless at a dead end),
    and for each oriented edge its coordinates after the first and its length (built lazily,
    once per city).
    """

    def __init__(self, city: City) -> None:
        self.graph = city.network
        self.city = city
        self._choices: dict[tuple[int, int], list[int]] = {}
        self._edges: dict[tuple[int, int], tuple[list[tuple[float, float]], float]] = {}
        self._all_edges: list[tuple[int, int]] | None = None
        #: the pedestrians of the last crowds built on this city (tasks repeat in
        #: training): their routes are read-only, so crowds of the same task share them
        self.crowds: LRUCache[tuple, tuple[Pedestrian, ...]] = LRUCache(
            max_bytes=CROWD_CACHE_BYTES, size=_crowd_nbytes, lock=True
        )

    def choices(self, prev: int, cur: int) -> list[int]:
        """Where a walker at ``cur`` coming from ``prev`` may turn."""
        hit = self._choices.get((prev, cur))
        if hit is None:
            nbrs = sorted(self.graph.neighbors(cur))
            hit = self._choices[(prev, cur)] = [n for n in nbrs if n != prev] or nbrs
        return hit

    def edge(self, u: int, v: int) -> tuple[list[tuple[float, float]], float]:
        """``(coordinates of u -> v after its first point, length m)``."""
        hit = self._edges.get((u, v))
        if hit is None:
            coords = list(self.city.edge_geometry(u, v).coords)
            hit = self._edges[(u, v)] = (coords[1:], self.graph.edges[u, v]["length"])
            self._edges.setdefault((u, v, "head"), coords[:1])  # type: ignore[arg-type]
        return hit

    def coords(self, u: int, v: int) -> list[tuple[float, float]]:
        """Every coordinate of edge ``u -> v``."""
        tail, _ = self.edge(u, v)
        return self._edges[(u, v, "head")] + tail  # type: ignore[index, operator]

    def length(self, u: int, v: int) -> float:
        """Length (m) of edge ``u -> v``."""
        return self.edge(u, v)[1]

    def edges_around(self, around: Sequence[int] | None) -> list[tuple[int, int]]:
        """The edges (each once, ``(low id, high id)``, sorted) at the nodes ``around``
        (all edges when None or empty).
        """
        g = self.graph
        if not around:
            if self._all_edges is None:
                self._all_edges = sorted({tuple(sorted(e)) for n in g.nodes() for e in g.edges(n)})
            return self._all_edges
        return sorted({tuple(sorted(e)) for n in around for e in g.edges(n)})


_ROUTE_TABLES: weakref.WeakKeyDictionary[City, _RouteTable] = weakref.WeakKeyDictionary()


def _route_table(city: City) -> _RouteTable:
    table = _ROUTE_TABLES.get(city)
    if table is None:
        table = _ROUTE_TABLES[city] = _RouteTable(city)
    return table


def _random_route(city: City, u: int, v: int, length: float, rng: np.random.Generator):
    """Polyline (list of (x, y)) of a random walk starting on edge ``u -> v``."""
    table = _route_table(city)
    pts: list[tuple[float, float]] = table.coords(u, v)
    total = table.length(u, v)
    prev, cur = u, v
    choices, edge = table.choices, table.edge
    integers = rng.integers
    while total < length:
        ch = choices(prev, cur)
        nxt = ch[int(integers(len(ch)))]
        tail, d = edge(cur, nxt)
        pts.extend(tail)
        total += d
        prev, cur = cur, nxt
    return pts


def _offset_polyline(pts, lateral: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.asarray(pts, dtype=float)
    keep = np.ones(len(a), dtype=bool)
    keep[1:] = np.hypot(*np.diff(a, axis=0).T) > 1e-6
    a = a[keep]
    if len(a) < 2:
        a = np.vstack([a, a + 1e-3])
    seg = np.diff(a, axis=0)
    seg /= np.hypot(seg[:, 0], seg[:, 1])[:, None]
    # vertex tangents: average of adjacent segments; right-hand normal (x east, y north)
    tan = np.vstack([seg[:1], seg[:-1] + seg[1:], seg[-1:]])
    tl = np.hypot(tan[:, 0], tan[:, 1])
    tl[tl < 1e-9] = 1.0
    tan /= tl[:, None]
    normal = np.column_stack([tan[:, 1], -tan[:, 0]])
    off = a + lateral * normal
    cum = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(off, axis=0).T))])
    # strictly increasing for np.interp
    cum = np.maximum.accumulate(cum + np.arange(len(cum)) * 1e-9)
    return off[:, 0].copy(), off[:, 1].copy(), cum


# ---------------------------------------------------------------- clock
@dataclass
class SimClock:
    """Simulation clock: ``start`` (s of day) plus ``elapsed`` seconds of actions."""

    start: float = 36000.0
    elapsed: float = 0.0

    def advance(self, seconds: float) -> None:
        """Move the clock on by ``seconds`` (>= 0; a negative value raises ValueError)."""
        if seconds < 0:
            raise ValueError(f"clock cannot go back ({seconds} s)")
        self.elapsed += seconds

    @property
    def now(self) -> float:
        """Seconds of day."""
        return self.start + self.elapsed

    def text(self) -> str:
        """``HH:MM:SS`` of :attr:`now` (wrapping at midnight)."""
        return format_clock(self.now)


def format_clock(seconds_of_day: float) -> str:
    """``HH:MM:SS`` for seconds of day (rounded down, wrapping at 24 h)."""
    s = int(math.floor(seconds_of_day)) % 86400
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


# ---------------------------------------------------------------- distance to the goal
def walking_distance(
    city: City, geometry: WalkGeometry, router: Any, field: Any, x: float, y: float
) -> float:
    """Walking distance (m) from ``(x, y)`` to the target of ``field`` (a
    :class:`~urban_gym.world.routing.DistanceField` of ``router`` over ``city``'s
    network, whose walkable geometry is ``geometry``): the best way
    onto the network from here -- across any edge corridor the point lies in -- then along
    it; from off the network, the straight way to the nearest network point first.
    """
    cands = geometry.edge_positions(x, y)
    if not cands:
        loc = router.locate(x, y)
        off = math.hypot(loc.point[0] - x, loc.point[1] - y)
        return off + router.distance(field, loc)
    dist = field.dist
    src = field.source
    edges = city.network.edges
    best = math.inf
    for (u, v), offset, d in cands:
        if d >= best:
            continue
        L = float(edges[u, v]["length"])
        r = min(dist.get(u, math.inf) + offset, dist.get(v, math.inf) + max(0.0, L - offset))
        if (src.u == u and src.v == v) or (src.u == v and src.v == u):
            so = src.offset if (src.u, src.v) == (u, v) else src.length - src.offset
            r = min(r, abs(offset - so))
        best = min(best, d + r)
    return best


#: Distance fields kept per process: a field is two arrays over the network's nodes
#: (:class:`urban_gym.world.dijkstra.NodeValues`; about 64 KB for Helsinki's 3,742 nodes),
#: so 1024 of them -- more than the goals and closure states of the default 970-task
#: suite -- stay under 70 MB.
FIELD_CACHE_SIZE = 1024
_FIELD_CACHE: LRUCache[tuple, Any] = LRUCache(
    max_items=FIELD_CACHE_SIZE, lock=True, name="envs.citywalk.distance_fields"
)


def distance_field(
    city_spec: str, router: Any, target: tuple[float, float], closed: tuple = ()
) -> Any:
    """``router``'s walking distances to ``target`` (m) in the city ``city_spec`` with the
    ``closed`` edges closed; the last :data:`FIELD_CACHE_SIZE` fields are kept in this
    process (tasks repeat in training).
    """
    return _FIELD_CACHE.get_or_create(
        (city_spec, target, closed), lambda: router.field(router.locate(*target))
    )
