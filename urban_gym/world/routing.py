"""Shortest walking routes between arbitrary points of a city's walkable network.

A point is located on the network by :meth:`City.nearest_walkable_point` (edge ``(u, v)``
and offset along it). :class:`Router` runs Dijkstra from such a point (with the two
partial edge lengths as initial costs), optionally with some edges closed, and returns
distances (metres) and route polylines. Used by task generators, environments (the
remaining distance to the goal) and oracles.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from urban_gym.world import dijkstra
from urban_gym.world.city import City

if TYPE_CHECKING:
    import numpy as np

#: city -> node -> [(neighbour, length m)], built once per city.
_ADJACENCY: weakref.WeakKeyDictionary[City, dict[int, list[tuple[int, float]]]] = (
    weakref.WeakKeyDictionary()
)


def _key(u: int, v: int) -> tuple[int, int]:
    return (u, v) if u <= v else (v, u)


@dataclass(frozen=True)
class Located:
    """A point of the network: on edge ``u -> v`` (oriented as given), ``offset`` metres
    from ``u``, of total ``length``; ``point`` is the snapped position.
    """

    u: int
    v: int
    offset: float
    length: float
    point: tuple[float, float]


@dataclass
class DistanceField:
    """Shortest distances (m) from a source point to every reachable node, with the
    predecessor of each node on its shortest path (None for the source edge's ends; node
    ids may be any integer, negative ones included).
    """

    source: Located
    dist: Mapping[int, float]
    pred: Mapping[int, int | None]


class Router:
    """Shortest routes on ``city.network`` (edge weight ``length``) avoiding ``closed``
    edges (pairs of node ids, either order).
    """

    def __init__(self, city: City, closed: Iterable[Sequence[int]] = ()) -> None:
        self.city = city
        self.closed = frozenset(_key(int(a), int(b)) for a, b in closed)
        adj = _ADJACENCY.get(city)
        if adj is None:
            adj = {}
            for u, v, d in city.network.edges(data=True):
                adj.setdefault(u, []).append((v, float(d["length"])))
                adj.setdefault(v, []).append((u, float(d["length"])))
            _ADJACENCY[city] = adj
        self._adj = adj
        self._closed_mask: np.ndarray | None = None

    def with_closed(self, closed: Iterable[Sequence[int]]) -> Router:
        """A router with these edges closed in addition."""
        return Router(self.city, [*self.closed, *closed])

    def locate(self, x: float, y: float) -> Located:
        """The nearest network point to ``(x, y)``, avoiding closed edges when possible."""
        wp = self.city.nearest_walkable_point(x, y)
        u, v = wp.edge
        if _key(u, v) in self.closed:
            return self._locate_open(x, y)
        return Located(u, v, wp.offset, float(self.city.network.edges[u, v]["length"]), wp.point)

    def _locate_open(self, x: float, y: float) -> Located:
        import shapely
        from shapely.geometry import Point

        if not hasattr(self, "_open_tree"):
            self._open_edges = [
                (u, v) for u, v in self.city.network.edges() if _key(u, v) not in self.closed
            ]
            self._open_tree = shapely.STRtree(
                [self.city.network.edges[e]["geometry"] for e in self._open_edges]
            )
        if not self._open_edges:
            raise ValueError("every network edge is closed")
        p = Point(x, y)
        u, v = self._open_edges[int(self._open_tree.nearest(p))]
        g = self.city.edge_geometry(u, v)
        off = float(g.project(p))
        q = g.interpolate(off)
        return Located(u, v, off, float(self.city.network.edges[u, v]["length"]), (q.x, q.y))

    def field(self, src: Located) -> DistanceField:
        """Dijkstra from ``src`` over the open edges (compiled: :mod:`urban_gym.world.dijkstra`)."""
        net = dijkstra.pack(self.city, self._adj)
        if self._closed_mask is None:
            self._closed_mask = dijkstra.closed_mask(net, self.closed)
        dist, pred = dijkstra.shortest_from(
            net, self._closed_mask, src.u, src.offset, src.v, src.length - src.offset
        )
        return DistanceField(src, dist, pred)

    def distance(self, fld: DistanceField, to: Located) -> float:
        """Shortest distance (m) from the field's source to ``to`` (inf if unreachable)."""
        s = fld.source
        best = min(
            fld.dist.get(to.u, math.inf) + to.offset,
            fld.dist.get(to.v, math.inf) + to.length - to.offset,
        )
        if _key(s.u, s.v) == _key(to.u, to.v):
            off = to.offset if (to.u, to.v) == (s.u, s.v) else to.length - to.offset
            best = min(best, abs(off - s.offset))
        return best

    def route(
        self, a: Located, b: Located, fld: DistanceField | None = None
    ) -> list[tuple[float, float]]:
        """The shortest route polyline from ``a`` to ``b`` (list of points, metres); empty
        when ``b`` cannot be reached.
        """
        fld = fld or self.field(a)
        d = self.distance(fld, b)
        if not math.isfinite(d):
            return []
        city = self.city
        # the same edge, walked directly
        if _key(a.u, a.v) == _key(b.u, b.v):
            off_b = b.offset if (b.u, b.v) == (a.u, a.v) else b.length - b.offset
            if abs(off_b - a.offset) <= d + 1e-6:
                return _sub_line(city, a.u, a.v, a.offset, off_b)
        # approach b via u or v
        via_u = fld.dist.get(b.u, math.inf) + b.offset
        via_v = fld.dist.get(b.v, math.inf) + b.length - b.offset
        if via_u <= via_v:
            end_node, tail = b.u, _sub_line(city, b.u, b.v, 0.0, b.offset)
        else:
            end_node, tail = b.v, _sub_line(city, b.v, b.u, 0.0, b.length - b.offset)
        nodes = [end_node]
        while (prev := fld.pred[nodes[-1]]) is not None:
            nodes.append(prev)
        nodes.reverse()
        first = nodes[0]
        if first == a.u:
            head = _sub_line(city, a.u, a.v, a.offset, 0.0)
        else:
            head = _sub_line(city, a.u, a.v, a.offset, a.length)
        pts = list(head)
        for n0, n1 in zip(nodes[:-1], nodes[1:]):
            pts.extend(list(city.edge_geometry(n0, n1).coords)[1:])
        pts.extend(tail[1:])
        return _dedupe(pts)

    def route_nodes(self, fld: DistanceField, node: int) -> list[int]:
        """Node ids of the shortest path from the field's source edge to ``node``."""
        out = [node]
        while (prev := fld.pred.get(out[-1])) is not None:
            out.append(prev)
        return out[::-1]


def _sub_line(city: City, u: int, v: int, s0: float, s1: float) -> list[tuple[float, float]]:
    """Points of edge ``u -> v`` from arc length ``s0`` to ``s1`` (either direction)."""
    from shapely import get_coordinates
    from shapely.ops import substring

    g = city.edge_geometry(u, v)
    if abs(s1 - s0) < 1e-9:
        p = g.interpolate(s0)
        return [(p.x, p.y)]
    sub = substring(g, min(s0, s1), max(s0, s1))
    pts = [(float(x), float(y)) for x, y in get_coordinates(sub)]
    if s1 < s0:
        pts.reverse()
    return pts


def _dedupe(pts: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for p in pts:
        if not out or math.dist(p, out[-1]) > 1e-6:
            out.append((float(p[0]), float(p[1])))
    return out


def polyline_length(pts: list[tuple[float, float]]) -> float:
    """Length (m) of a polyline."""
    return sum(math.dist(a, b) for a, b in zip(pts[:-1], pts[1:]))
