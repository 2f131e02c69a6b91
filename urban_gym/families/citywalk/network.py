"""The *pedestrian* network of a city, for pedestrian-network adherence (UrbanGround's
PNA: the share of action time whose post-action position lies on the registered pedestrian
network, Section 4.1).

The walkable network (:mod:`urban_gym.world.walkable`) holds every way people can walk,
car roads included. The pedestrian network is the part meant for people:

* footways, paths, pedestrian streets, steps, platforms, corridors, footbridges, shared
  foot-and-cycle ways (``highway=cycleway`` with ``foot=yes/designated/permissive``),
  sidewalks mapped as ways of their own (``footway=sidewalk``) and crossings
  (``footway=crossing``), over their mapped width;
* living streets (``highway=living_street``: people have priority), over their width;
* the sidewalks of a car road that carries ``sidewalk=*`` tags (``both``, ``left``,
  ``right``, ``yes``; ``sidewalk:both/left/right``): a band :data:`SIDEWALK_WIDTH_M` wide
  along the road's edge on each tagged side -- never its carriageway.

A car road without sidewalk tags is off the pedestrian network (in Helsinki every sidewalk
is mapped as a way of its own, so no road counts).
"""

from __future__ import annotations

import math
import weakref

import numpy as np
import shapely

from urban_gym.world.city import City
from urban_gym.world.walkable import MIN_WALKABLE_HALF_WIDTH, SegmentGrid

#: Width (m) of a sidewalk tagged on a road, along the road's edge.
SIDEWALK_WIDTH_M = 2.0
#: Walkable-network kinds that are pedestrian ways (see the module docstring).
PEDESTRIAN_KINDS = frozenset(
    {
        "footway",
        "sidewalk",
        "crossing",
        "pedestrian",
        "path",
        "steps",
        "platform",
        "corridor",
        "footbridge",
        "cycleway",
    }
)


class PedestrianNetwork:
    """Where the pedestrian network of ``city`` lies (see the module docstring).

    Attributes:
        edges: the network edges ``(u, v)`` (either order) on the pedestrian network, whole
            or by their tagged sidewalks.
    """

    def __init__(self, city: City) -> None:
        segs: list[tuple[float, float, float, float]] = []
        reach: list[float] = []
        self.edges: set[tuple[int, int]] = set()
        for u, v, d in city.network.edges(data=True):
            lines, half = _pedestrian_lines(d)
            if not lines:
                continue
            self.edges.add((u, v))
            for line in lines:
                c = np.asarray(line.coords, dtype=float)
                for k in range(len(c) - 1):
                    segs.append((c[k, 0], c[k, 1], c[k + 1, 0], c[k + 1, 1]))
                    reach.append(half)
        self.grid = SegmentGrid(np.array(segs, dtype=float).reshape(-1, 4), np.array(reach), 8.0)

    @classmethod
    def for_city(cls, city: City) -> PedestrianNetwork:
        """The (memoised) pedestrian network of ``city``."""
        net = _CACHE.get(city)
        if net is None:
            net = _CACHE[city] = cls(city)
        return net

    def contains(self, x: float, y: float) -> bool:
        """Whether ``(x, y)`` (m) lies on the pedestrian network (the last answer is kept:
        a walker that turned, looked or used the map asks the same point again).
        """
        last = self.__dict__.get("_last")
        if last is not None and last[0] == x and last[1] == y:
            return last[2]
        found = self._contains(x, y)
        self._last = (x, y, found)  # one tuple: safe to read from threads
        return found

    def _contains(self, x: float, y: float) -> bool:
        g = self.grid
        for i in g.at(x, y):
            ax, ay, bx, by = g.ax[i], g.ay[i], g.bx[i], g.by[i]
            dx, dy = bx - ax, by - ay
            L2 = dx * dx + dy * dy
            t = 0.0 if L2 <= 0.0 else max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / L2))
            if math.hypot(x - ax - t * dx, y - ay - t * dy) <= g.reach[i]:
                return True
        return False

    def is_pedestrian_edge(self, u: int, v: int) -> bool:
        """Whether network edge ``(u, v)`` is (partly, by its sidewalks) pedestrian."""
        return (u, v) in self.edges or (v, u) in self.edges


def _pedestrian_lines(d: dict) -> tuple[list, float]:
    """The centre lines of an edge's pedestrian part and their half width (m)."""
    half = max(float(d.get("width") or 0.0) / 2.0, MIN_WALKABLE_HALF_WIDTH)
    geom = d["geometry"]
    if d.get("kind") in PEDESTRIAN_KINDS or d.get("highway") == "living_street":
        return [geom], half
    sides = d.get("sidewalk") or ""
    if d.get("kind") != "road" or not sides:
        return [], 0.0
    # the geometry runs from d["start"]; OSM's left/right follow the way's direction, and
    # shapely's offset_curve puts positive distances on the left
    band = SIDEWALK_WIDTH_M / 2.0
    off = max(half - band, 0.0)
    out = []
    if sides in ("both", "left"):
        out.append(shapely.offset_curve(geom, off))
    if sides in ("both", "right"):
        out.append(shapely.offset_curve(geom, -off))
    return [g for g in out if not g.is_empty and g.geom_type == "LineString"], band


_CACHE: weakref.WeakKeyDictionary[City, PedestrianNetwork] = weakref.WeakKeyDictionary()
