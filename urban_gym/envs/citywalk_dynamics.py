"""CityWalk dynamics: a walker in the metric plane of a :class:`~urban_gym.world.City`.

Units: metres, seconds, degrees. Headings are compass bearings (0 north, 90 east,
clockwise); pitch is positive up.

* **Walker** -- a disc of radius :data:`WALKER_RADIUS` (0.3 m). It walks at
  :data:`WALK_SPEED` (1.4 m/s) or sprints at :data:`SPRINT_SPEED` (3.0 m/s) in one of four
  directions relative to its heading, while an optional yaw rate turns the heading (the
  walker then follows a circular arc).
* **Collisions** -- building footprints are solid, and the walker's centre cannot leave
  the city's bounds (walls one radius outside them). A move is swept against the footprint
  walls (exact time of impact of a moving disc against segments, from a uniform grid of
  wall segments); on contact the remaining displacement slides along the wall. Where the
  mapped walkable network runs *through* a footprint (arcades, building passages, malls)
  a corridor of :data:`PASSAGE_HALF_WIDTH` metres around it is carved out, so every point of
  the network can be walked. Canopies (``building=roof``/``carport``) and elevated or
  underground parts (``min_height`` > 2 m, ``building:min_level`` >= 1,
  ``location=underground``) do not block.
* **Network** -- a position is *on the network* when it lies within the walkable corridor
  of an edge: half the edge's ``width``, at least :data:`MIN_WALKABLE_HALF_WIDTH`.
  It is *covered* (for rain exposure) when it is inside a covered edge's corridor
  (``covered=yes``) or under a footprint (a carved passage or a canopy).
* **Closures** -- waypoint chains that must not be crossed; a crossing is detected from
  each move's path segments (:func:`count_crossings`). They are rules, not walls.
* **Pedestrians** -- :class:`Crowd`: people walking random routes along the network at
  1.2-1.5 m/s. A *contact* is a walker-pedestrian centre distance below
  :data:`CONTACT_DISTANCE` (0.6 m); it is counted once per contact (when it begins).
  Pedestrians do not block the walker.
* **Clock** -- the simulation clock advances only by action durations.
"""

from __future__ import annotations

import math
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import shapely
from shapely.geometry import Polygon
from shapely.prepared import prep

from urban_gym.world.city import City

WALKER_RADIUS = 0.3  # m
WALK_SPEED = 1.4  # m/s
SPRINT_SPEED = 3.0  # m/s
CONTACT_DISTANCE = 0.6  # m, walker centre to pedestrian centre
PASSAGE_HALF_WIDTH = 1.2  # m, corridor carved out of footprints along the network
MIN_WALKABLE_HALF_WIDTH = 1.0  # m
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

_NON_BLOCKING_KINDS = frozenset({"roof", "carport"})
_EPS = 1e-9
_SKIN = 1e-6  # m kept between the disc and a wall after a contact


# ---------------------------------------------------------------- spatial grid
class SegmentGrid:
    """A uniform grid (cell size ``cell`` metres) over line segments, each registered in
    every cell its bounding box grown by its own ``reach`` touches.

    Segments are kept in plain Python lists (``ax, ay, bx, by``) because per-move work is a
    handful of segments, where scalar Python beats numpy's call overhead.
    """

    def __init__(
        self,
        segments: np.ndarray,
        reach: np.ndarray | float,
        cell: float = 4.0,
    ) -> None:
        seg = np.asarray(segments, dtype=float).reshape(-1, 4)
        self.cell = float(cell)
        self.ax = seg[:, 0].tolist()
        self.ay = seg[:, 1].tolist()
        self.bx = seg[:, 2].tolist()
        self.by = seg[:, 3].tolist()
        reach_arr = np.broadcast_to(np.asarray(reach, dtype=float), (len(seg),))
        self.reach = reach_arr.tolist()
        self.cells: dict[tuple[int, int], list[int]] = {}
        c = self.cell
        for i in range(len(seg)):
            r = reach_arr[i]
            x0, x1 = sorted((seg[i, 0], seg[i, 2]))
            y0, y1 = sorted((seg[i, 1], seg[i, 3]))
            for cx in range(math.floor((x0 - r) / c), math.floor((x1 + r) / c) + 1):
                for cy in range(math.floor((y0 - r) / c), math.floor((y1 + r) / c) + 1):
                    # skip cells the (grown) segment cannot touch: distance test on the centre
                    if _cell_far(seg[i], cx, cy, c, r):
                        continue
                    self.cells.setdefault((cx, cy), []).append(i)

    def __len__(self) -> int:
        return len(self.ax)

    def at(self, x: float, y: float) -> list[int]:
        """Segments registered in the cell holding ``(x, y)``."""
        c = self.cell
        return self.cells.get((math.floor(x / c), math.floor(y / c)), _EMPTY)

    def in_box(self, x0: float, y0: float, x1: float, y1: float) -> list[int]:
        """Segments registered in any cell overlapping the box (no duplicates)."""
        c = self.cell
        i0, i1 = math.floor(x0 / c), math.floor(x1 / c)
        j0, j1 = math.floor(y0 / c), math.floor(y1 / c)
        cells = self.cells
        if i0 == i1 and j0 == j1:
            return cells.get((i0, j0), _EMPTY)
        out: set[int] = set()
        for i in range(i0, i1 + 1):
            for j in range(j0, j1 + 1):
                hit = cells.get((i, j))
                if hit:
                    out.update(hit)
        return sorted(out)


_EMPTY: list[int] = []


def _cell_far(s: np.ndarray, cx: int, cy: int, c: float, r: float) -> bool:
    px, py = (cx + 0.5) * c, (cy + 0.5) * c
    d = _point_segment_distance(px, py, s[0], s[1], s[2], s[3])
    return d > r + c * 0.7072  # half the cell diagonal


def _point_segment_distance(
    px: float, py: float, ax: float, ay: float, bx: float, by: float
) -> float:
    ex, ey = bx - ax, by - ay
    L2 = ex * ex + ey * ey
    if L2 <= 0.0:
        return math.hypot(px - ax, py - ay)
    u = ((px - ax) * ex + (py - ay) * ey) / L2
    u = 0.0 if u < 0.0 else (1.0 if u > 1.0 else u)
    return math.hypot(px - ax - u * ex, py - ay - u * ey)


# ---------------------------------------------------------------- city geometry
@dataclass
class WalkGeometry:
    """Everything the dynamics need from a city, precomputed once per city (see
    :meth:`for_city`).

    Attributes:
        walls: grid over the wall segments of the solid footprints.
        net: grid over the network's polyline segments; ``reach`` = the corridor half-width.
        net_edge: for each network segment, the edge ``(u, v)`` oriented as its geometry.
        net_offset: arc length (m) along the edge geometry at the segment's start.
        net_covered: whether the segment's edge is covered.
        obstacles: the solid footprint polygons (after carving passages).
        shelter: footprints the walker may stand under (carved passages, canopies).
    """

    walls: SegmentGrid
    net: SegmentGrid
    net_edge: list[tuple[int, int]]
    net_offset: list[float]
    net_covered: list[bool]
    obstacles: list[Polygon]
    shelter: object  # prepared geometry
    _shelter_geom: object = field(repr=False, default=None)

    @classmethod
    def for_city(cls, city: City) -> WalkGeometry:
        """The (memoised) walking geometry of ``city``."""
        g = _GEOMETRY_CACHE.get(city)
        if g is None:
            g = cls.build(city)
            _GEOMETRY_CACHE[city] = g
        return g

    @classmethod
    def build(cls, city: City) -> WalkGeometry:
        """Compute the walking geometry (about a second for Helsinki)."""
        blocking: list[Polygon] = []
        shelter: list[Polygon] = []
        for b in city.buildings:
            (shelter if not is_blocking(b.kind, b.tags) else blocking).append(b.polygon)
        # network segments
        segs: list[tuple[float, float, float, float]] = []
        reach: list[float] = []
        edge_of: list[tuple[int, int]] = []
        offset: list[float] = []
        covered: list[bool] = []
        edge_geoms = []
        for u, v, d in city.network.edges(data=True):
            geom = d["geometry"]
            a, b = (u, v) if d["start"] == u else (v, u)
            coords = np.asarray(geom.coords, dtype=float)
            hw = max(float(d.get("width") or 0.0) / 2.0, MIN_WALKABLE_HALF_WIDTH)
            s = 0.0
            for k in range(len(coords) - 1):
                (x0, y0), (x1, y1) = coords[k], coords[k + 1]
                segs.append((x0, y0, x1, y1))
                reach.append(hw)
                edge_of.append((a, b))
                offset.append(s)
                covered.append(bool(d.get("covered")))
                s += math.hypot(x1 - x0, y1 - y0)
            edge_geoms.append(geom)
        # carve passages where the network comes close to a solid footprint
        obstacles: list[Polygon] = []
        carved: list[Polygon] = []
        if blocking:
            tree = shapely.STRtree(blocking)
            geoms = np.array(edge_geoms, dtype=object)
            pairs = tree.query(geoms, predicate="dwithin", distance=PASSAGE_HALF_WIDTH)
            near: dict[int, list[int]] = {}
            for e, bidx in zip(pairs[0].tolist(), pairs[1].tolist()):
                near.setdefault(bidx, []).append(e)
            for i, poly in enumerate(blocking):
                if i in near:
                    cut = shapely.union_all(
                        shapely.buffer(geoms[near[i]], PASSAGE_HALF_WIDTH, quad_segs=4)
                    )
                    rest = poly.difference(cut)
                    carved.append(poly.intersection(cut))
                else:
                    rest = poly
                obstacles.extend(_polygons(rest))
        walls = np.vstack([_ring_segments(obstacles), _bounds_segments(city.bounds)])
        shelter_geom = shapely.union_all([*shelter, *carved]) if (shelter or carved) else None
        return cls(
            walls=SegmentGrid(walls, WALKER_RADIUS, cell=4.0),
            net=SegmentGrid(np.array(segs, dtype=float).reshape(-1, 4), np.array(reach), 8.0),
            net_edge=edge_of,
            net_offset=offset,
            net_covered=covered,
            obstacles=obstacles,
            shelter=prep(shelter_geom) if shelter_geom is not None else None,
            _shelter_geom=shelter_geom,
        )

    # -------------------------------------------------------------- queries
    def snap(self, x: float, y: float) -> tuple[int, float] | None:
        """The nearest network segment among those whose corridor may contain ``(x, y)``:
        ``(segment index, distance)``, or None when the point is off every corridor cell."""
        best, best_d = -1, math.inf
        net = self.net
        for i in net.at(x, y):
            d = _point_segment_distance(x, y, net.ax[i], net.ay[i], net.bx[i], net.by[i])
            if d < best_d:
                best, best_d = i, d
        return None if best < 0 else (best, best_d)

    def on_network(self, x: float, y: float) -> bool:
        """Whether ``(x, y)`` lies within the walkable corridor of some network edge."""
        net = self.net
        for i in net.at(x, y):
            if (
                _point_segment_distance(x, y, net.ax[i], net.ay[i], net.bx[i], net.by[i])
                <= net.reach[i]
            ):
                return True
        return False

    def covered(self, x: float, y: float) -> bool:
        """Whether ``(x, y)`` is sheltered from rain (covered way or under a footprint)."""
        net = self.net
        for i in net.at(x, y):
            if (
                self.net_covered[i]
                and _point_segment_distance(x, y, net.ax[i], net.ay[i], net.bx[i], net.by[i])
                <= net.reach[i]
            ):
                return True
        if self.shelter is not None:
            return bool(self.shelter.contains(shapely.Point(x, y)))
        return False

    def edge_position(
        self, x: float, y: float, search: float = 24.0
    ) -> tuple[tuple[int, int], float, float] | None:
        """``(edge (u, v) oriented as its geometry, offset along it (m), distance (m))`` of
        the nearest network point: among the corridors registered at ``(x, y)``, else among
        segments within ``search`` metres; None when there is none that close."""
        hit = self.snap(x, y)
        if hit is None:
            net = self.net
            best, best_d = -1, search
            for i in net.in_box(x - search, y - search, x + search, y + search):
                d = _point_segment_distance(x, y, net.ax[i], net.ay[i], net.bx[i], net.by[i])
                if d < best_d:
                    best, best_d = i, d
            if best < 0:
                return None
            hit = (best, best_d)
        i, d = hit
        net = self.net
        ax, ay, bx, by = net.ax[i], net.ay[i], net.bx[i], net.by[i]
        ex, ey = bx - ax, by - ay
        L2 = ex * ex + ey * ey
        u = 0.0 if L2 <= 0 else max(0.0, min(1.0, ((x - ax) * ex + (y - ay) * ey) / L2))
        return self.net_edge[i], self.net_offset[i] + u * math.sqrt(L2), d

    def edge_positions(
        self, x: float, y: float, search: float = 24.0
    ) -> list[tuple[tuple[int, int], float, float]]:
        """``(edge (u, v) oriented as its geometry, offset (m), distance (m))`` for every
        network segment whose corridor cell holds ``(x, y)`` -- or, off the corridors, every
        segment within ``search`` metres (empty when there is none)."""
        net = self.net
        cand = net.at(x, y)
        if not cand:
            cand = net.in_box(x - search, y - search, x + search, y + search)
        out = []
        for i in cand:
            ax, ay, bx, by = net.ax[i], net.ay[i], net.bx[i], net.by[i]
            ex, ey = bx - ax, by - ay
            L2 = ex * ex + ey * ey
            u = 0.0 if L2 <= 0 else max(0.0, min(1.0, ((x - ax) * ex + (y - ay) * ey) / L2))
            d = math.hypot(x - ax - u * ex, y - ay - u * ey)
            if d <= search:
                out.append((self.net_edge[i], self.net_offset[i] + u * math.sqrt(L2), d))
        return out

    def clearance(self, x: float, y: float, radius: float = 3.0) -> float:
        """Distance (m) from ``(x, y)`` to the nearest wall, capped at ``radius``."""
        w = self.walls
        best = radius
        for i in w.in_box(x - radius, y - radius, x + radius, y + radius):
            d = _point_segment_distance(x, y, w.ax[i], w.ay[i], w.bx[i], w.by[i])
            if d < best:
                best = d
        return best

    def inside_obstacle(self, x: float, y: float) -> bool:
        """Whether ``(x, y)`` lies inside a solid footprint (after carving)."""
        p = shapely.Point(x, y)
        for poly in self._obstacle_candidates(x, y):
            if poly.contains(p):
                return True
        return False

    def _obstacle_candidates(self, x: float, y: float) -> list[Polygon]:
        if not hasattr(self, "_obs_tree"):
            self._obs_tree = shapely.STRtree(self.obstacles)
        idx = self._obs_tree.query(shapely.Point(x, y))
        return [self.obstacles[int(i)] for i in idx]

    # -------------------------------------------------------------- sweeping
    def sweep(
        self, x: float, y: float, dx: float, dy: float, path: list[tuple[float, float]] | None
    ) -> tuple[float, float, bool]:
        """Move a disc of radius :data:`WALKER_RADIUS` from ``(x, y)`` by ``(dx, dy)``,
        stopping at walls and sliding along them (up to four contacts).

        Returns the end point and whether a wall was touched. Contact points are appended
        to ``path`` (when given) so the path stays a faithful polyline.
        """
        hit_any = False
        w = self.walls
        r = WALKER_RADIUS
        for _ in range(4):
            if dx * dx + dy * dy < 1e-16:
                break
            cand = w.in_box(
                min(x, x + dx) - r, min(y, y + dy) - r, max(x, x + dx) + r, max(y, y + dy) + r
            )
            best_t, nx_, ny_ = 1.0, 0.0, 0.0
            hit = False
            for i in cand:
                t, hx, hy = _toi(x, y, dx, dy, w.ax[i], w.ay[i], w.bx[i], w.by[i], r)
                if t < best_t or (t == best_t and t < 1.0):
                    best_t, nx_, ny_ = t, hx, hy
                    hit = True
            if not hit:
                x, y = x + dx, y + dy
                break
            hit_any = True
            # advance to the contact, keep a tiny skin
            dlen = math.hypot(dx, dy)
            t = max(0.0, best_t - _SKIN / dlen)
            x, y = x + dx * t, y + dy * t
            if path is not None:
                path.append((x, y))
            rx, ry = dx * (1.0 - t), dy * (1.0 - t)
            dn = rx * nx_ + ry * ny_
            if dn < 0.0:
                rx, ry = rx - dn * nx_, ry - dn * ny_
            dx, dy = rx, ry
        return x, y, hit_any


_GEOMETRY_CACHE: weakref.WeakKeyDictionary[City, WalkGeometry] = weakref.WeakKeyDictionary()


def is_blocking(kind: str, tags: dict[str, str]) -> bool:
    """Whether a building with ``building=kind`` and these tags stops a walker."""
    if kind in _NON_BLOCKING_KINDS or tags.get("location") == "underground":
        return False
    try:
        if float(tags.get("min_height", "0") or 0) > 2.0:
            return False
        if float(tags.get("building:min_level", "0") or 0) >= 1:
            return False
    except ValueError:
        pass
    return True


def _polygons(g) -> list[Polygon]:
    if g.is_empty:
        return []
    if isinstance(g, Polygon):
        return [g] if g.area > 1e-6 else []
    out: list[Polygon] = []
    for part in getattr(g, "geoms", []):
        out.extend(_polygons(part))
    return out


def _bounds_segments(b: tuple[float, float, float, float]) -> np.ndarray:
    """Walls one walker radius outside the city's bounds: the walker's centre cannot leave
    the mapped area (the network's outermost ways lie on the bounds and stay walkable)."""
    r = WALKER_RADIUS
    x0, y0, x1, y1 = b[0] - r, b[1] - r, b[2] + r, b[3] + r
    if not (x1 > x0 + 2 * r and y1 > y0 + 2 * r):
        return np.zeros((0, 4))
    return np.array([[x0, y0, x1, y0], [x1, y0, x1, y1], [x1, y1, x0, y1], [x0, y1, x0, y0]])


def _ring_segments(polys: Sequence[Polygon]) -> np.ndarray:
    out = []
    for p in polys:
        for ring in [p.exterior, *p.interiors]:
            c = np.asarray(ring.coords, dtype=float)
            if len(c) >= 2:
                out.append(np.hstack([c[:-1], c[1:]]))
    if not out:
        return np.zeros((0, 4))
    seg = np.vstack(out)
    keep = np.hypot(seg[:, 2] - seg[:, 0], seg[:, 3] - seg[:, 1]) > 1e-9
    return seg[keep]


def _toi(
    px: float,
    py: float,
    dx: float,
    dy: float,
    ax: float,
    ay: float,
    bx: float,
    by: float,
    r: float,
) -> tuple[float, float, float]:
    """First time ``t`` in [0, 1] at which a disc of radius ``r`` centred at
    ``p + t d`` touches segment ``ab``, with the unit contact normal (pointing from the
    segment to the disc). ``(2.0, 0, 0)`` when it does not touch. A disc already closer
    than ``r`` and moving further in touches at ``t = 0``."""
    best, bnx, bny = 2.0, 0.0, 0.0
    ex, ey = bx - ax, by - ay
    L = math.hypot(ex, ey)
    nx_, ny_ = -ey / L, ex / L
    s0 = (px - ax) * nx_ + (py - ay) * ny_
    dn = dx * nx_ + dy * ny_
    if s0 < 0.0:
        nx_, ny_, s0, dn = -nx_, -ny_, -s0, -dn
    if dn < -_EPS:
        t = (s0 - r) / -dn
        if t < 0.0:
            t = 0.0  # already within r of the supporting line
        if t <= 1.0:
            cx, cy = px + t * dx, py + t * dy
            u = ((cx - ax) * ex + (cy - ay) * ey) / (L * L)
            if 0.0 <= u <= 1.0:
                best, bnx, bny = t, nx_, ny_
    # the two end caps
    dd = dx * dx + dy * dy
    for cx, cy in ((ax, ay), (bx, by)):
        mx, my = px - cx, py - cy
        b = mx * dx + my * dy
        if b >= 0.0:
            continue  # moving away from this end
        c = mx * mx + my * my - r * r
        if c <= 0.0:
            t = 0.0
        else:
            disc = b * b - dd * c
            if disc < 0.0:
                continue
            t = (-b - math.sqrt(disc)) / dd
        if t < best and t <= 1.0:
            hx, hy = mx + t * dx, my + t * dy
            hl = math.hypot(hx, hy)
            if hl > 0.0:
                best, bnx, bny = t, hx / hl, hy / hl
    return best, bnx, bny


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
    the distance covered (m)."""

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
) -> MoveResult:
    """Simulate a move of ``duration`` seconds at ``speed`` m/s in ``direction``
    (``forward``/``backward``/``left``/``right`` relative to the heading) while the heading
    turns at ``yaw_rate`` deg/s and the pitch at ``pitch_rate`` deg/s (clamped to
    [-90, 90]). A turning move follows a circular arc, split into straight chords of at
    most :data:`ARC_STEP_DEG` degrees that lie exactly on the arc. Pure: ``state`` is not
    changed.
    """
    off = DIRECTION_OFFSETS[direction]
    x, y = state.x, state.y
    n = 1 if yaw_rate == 0.0 else max(1, math.ceil(abs(yaw_rate) * duration / ARC_STEP_DEG))
    dt = duration / n
    path = [(x, y)]
    times = [0.0]
    hit = False
    half = math.radians(yaw_rate * dt) / 2.0
    chord = speed * dt * (math.sin(half) / half if half != 0.0 else 1.0)
    for k in range(n):
        b = math.radians(state.heading + off + yaw_rate * (k + 0.5) * dt)
        before = len(path)
        x, y, h = geom.sweep(x, y, chord * math.sin(b), chord * math.cos(b), path)
        hit = hit or h
        t1 = (k + 1) * dt
        # contact points appended by sweep get times spread over the sub-move
        added = len(path) - before
        for j in range(added):
            times.append(k * dt + dt * (j + 1) / (added + 1))
        path.append((x, y))
        times.append(t1)
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
    where it is along it at clock 0 (``s0``, m) and its ``speed`` (m/s)."""

    xs: np.ndarray
    ys: np.ndarray
    cum: np.ndarray
    s0: float
    speed: float

    def position(self, t: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
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
        rng = np.random.default_rng(seed)
        g = city.network
        nodes = list(around) if around else list(g.nodes())
        edges = sorted({tuple(sorted(e)) for n in nodes for e in g.edges(n)})
        self.people: list[Pedestrian] = []
        for _ in range(int(count)):
            for _attempt in range(20):
                u, v = edges[int(rng.integers(len(edges)))]
                if rng.random() < 0.5:
                    u, v = v, u
                speed = float(rng.uniform(*speed_range))
                lateral = float(rng.uniform(-0.5, 0.5))
                pts = _random_route(city, u, v, speed * duration + 50.0, rng)
                xs, ys, cum = _offset_polyline(pts, lateral)
                s0 = float(rng.uniform(0.0, min(cum[-1], city.network.edges[u, v]["length"])))
                person = Pedestrian(xs, ys, cum, s0, speed)
                if avoid is None:
                    break
                px, py = person.position(0.0)
                if math.hypot(float(px) - avoid[0], float(py) - avoid[1]) >= clearance:
                    break
            self.people.append(person)
        self.in_contact = np.zeros(len(self.people), dtype=bool)
        self.contacts = 0

    def __len__(self) -> int:
        return len(self.people)

    def _packed(self) -> tuple[np.ndarray, ...]:
        """All routes in one monotonic arc-length axis, so one ``np.interp`` places
        everybody: person ``i``'s arc length ``s`` maps to ``base[i] + clip(s, 0, L[i])``."""
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
        ``(K, 2)`` positions at :func:`sample_times`. Returns the new contacts."""
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
    :data:`CONTACT_SAMPLE_DT` seconds and at the end (the start was checked before)."""
    k = max(1, math.ceil(duration / CONTACT_SAMPLE_DT))
    return t0 + duration * np.arange(1, k + 1) / k


def walker_samples(result: MoveResult, duration: float, t0: float = 0.0) -> np.ndarray:
    """The walker's ``(K, 2)`` positions at :func:`sample_times` of a move (linear in time
    between the path's time-stamped points)."""
    ts = sample_times(0.0, duration)
    if duration <= 0.0 or len(result.path) < 2:
        x, y = result.path[-1]
        return np.tile([x, y], (len(ts), 1))
    tt = np.asarray(result.times)
    pp = np.asarray(result.path)
    return np.column_stack([np.interp(ts, tt, pp[:, 0]), np.interp(ts, tt, pp[:, 1])])


def _random_route(city: City, u: int, v: int, length: float, rng: np.random.Generator):
    """Polyline (list of (x, y)) of a random walk starting on edge ``u -> v``."""
    g = city.network
    pts: list[tuple[float, float]] = list(city.edge_geometry(u, v).coords)
    total = g.edges[u, v]["length"]
    prev, cur = u, v
    while total < length:
        nbrs = sorted(g.neighbors(cur))
        choices = [n for n in nbrs if n != prev] or nbrs
        nxt = choices[int(rng.integers(len(choices)))]
        pts.extend(list(city.edge_geometry(cur, nxt).coords)[1:])
        total += g.edges[cur, nxt]["length"]
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
    :class:`~urban_gym.tasks.citywalk_routes.DistanceField` of ``router`` over ``city``'s
    network, whose walkable geometry is ``geometry``): the best way
    onto the network from here -- across any edge corridor the point lies in -- then along
    it; from off the network, the straight way to the nearest network point first."""
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


#: Distance fields kept per process (about 0.4 MB each for Helsinki).
FIELD_CACHE_SIZE = 32
_FIELD_CACHE: OrderedDict[tuple, Any] = OrderedDict()


def distance_field(
    city_spec: str, router: Any, target: tuple[float, float], closed: tuple = ()
) -> Any:
    """``router``'s walking distances to ``target`` (m) in the city ``city_spec`` with the
    ``closed`` edges closed; the last :data:`FIELD_CACHE_SIZE` fields are kept in this
    process (tasks repeat in training)."""
    key = (city_spec, target, closed)
    fld = _FIELD_CACHE.get(key)
    if fld is None:
        fld = router.field(router.locate(*target))
        _FIELD_CACHE[key] = fld
        while len(_FIELD_CACHE) > FIELD_CACHE_SIZE:
            _FIELD_CACHE.popitem(last=False)
    else:
        _FIELD_CACHE.move_to_end(key)
    return fld
