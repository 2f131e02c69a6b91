"""Walkable geometry of a :class:`~urban_gym.world.City`: where a walker may stand and go.

Units: metres. The walker is a disc of radius :data:`WALKER_RADIUS` (0.3 m).

* **Walls** -- building footprints are solid, and the walker's centre cannot leave the
  city's bounds (walls one radius outside them). :meth:`WalkGeometry.sweep` moves the disc
  against the footprint walls (exact time of impact of a moving disc against segments,
  from a uniform :class:`SegmentGrid` of wall segments); on contact the remaining
  displacement slides along the wall. Where the mapped walkable network runs *through* a
  footprint (arcades, building passages, malls) a corridor of :data:`PASSAGE_HALF_WIDTH`
  metres around it is carved out, so every point of the network can be walked. Canopies
  (``building=roof``/``carport``) and elevated or underground parts (``min_height`` > 2 m,
  ``building:min_level`` >= 1, ``location=underground``) do not block (:func:`is_blocking`).
* **Network** -- a position is *on the network* when it lies within the walkable corridor
  of an edge: half the edge's ``width``, at least :data:`MIN_WALKABLE_HALF_WIDTH`.
  It is *covered* (for rain exposure) when it is inside a covered edge's corridor
  (``covered=yes``) or under a footprint (a carved passage or a canopy).

A continuous-walking family's dynamics build on this.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import shapely
from shapely.geometry import Polygon
from shapely.prepared import prep

from urban_gym.caching import register_cache
from urban_gym.world.city import City

WALKER_RADIUS = 0.3  # m
PASSAGE_HALF_WIDTH = 1.2  # m, corridor carved out of footprints along the network
MIN_WALKABLE_HALF_WIDTH = 1.0  # m

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
    shelter: Any  # prepared geometry
    _shelter_geom: object = field(repr=False, default=None)

    @classmethod
    def for_city(cls, city: City) -> WalkGeometry:
        """The (memoised) walking geometry of ``city``. For a city with a fingerprint (one
        :func:`~urban_gym.world.loader.load_city` loaded) it is built once per machine and
        read from the world cache after that (:func:`urban_gym.world.diskcache.cached_object`,
        named by the fingerprint and this module's source) instead of built in every
        process.
        """
        g = _GEOMETRY_CACHE.get(city)
        if g is None:
            from urban_gym.world.diskcache import cached_for_city

            g = cached_for_city("walk", city, lambda: cls.build(city), sys.modules[__name__])
            _GEOMETRY_CACHE[city] = g
        return g

    @staticmethod
    def memoised(city: City) -> WalkGeometry | None:
        """The geometry :meth:`for_city` has given for ``city`` in this process, or None."""
        return _GEOMETRY_CACHE.get(city)

    def __getstate__(self) -> dict:
        # a prepared geometry does not pickle: the plain one travels, prepared on arrival
        return {**self.__dict__, "shelter": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._shelter_geom is not None:
            self.shelter = prep(self._shelter_geom)

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
        ``(segment index, distance)``, or None when the point is off every corridor cell.
        """
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
        segments within ``search`` metres; None when there is none that close.
        """
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
        segment within ``search`` metres (empty when there is none).
        """
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


#: The walking geometry of each live city (goes with its city).
_GEOMETRY_CACHE: weakref.WeakKeyDictionary[City, WalkGeometry] = weakref.WeakKeyDictionary()
register_cache("world.walk_geometry", _GEOMETRY_CACHE.clear, _GEOMETRY_CACHE.__len__)


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
    the mapped area (the network's outermost ways lie on the bounds and stay walkable).
    """
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
    than ``r`` and moving further in touches at ``t = 0``.
    """
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
