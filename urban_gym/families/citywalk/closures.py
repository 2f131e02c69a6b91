"""Places and closures in words, for an agent that has no coordinates.

UrbanGround (Appendix F.3, F.6) gives each closed segment as a short chain of waypoints;
the closure is the line from each waypoint to the next, not an area. The agent never
sees coordinates, so a waypoint here is written as what a walker can find:

* the **street** it lies on (the name of the nearest named way of the walkable network
  within :data:`STREET_RADIUS_M`, so that a sidewalk takes its street's name; else the
  kind of way: "on a footpath with no name", "at a street crossing"), and
* the nearest **named place** within :data:`LANDMARK_RADIUS_M` with the walker's
  distance and eight-point compass direction from that place ("about 12 m north-east
  of Kahvila Sävy (café)"),

and each later waypoint also by its distance and compass direction from the one before
("14 m east of waypoint 1"). Distances are whole metres. A waypoint with neither a
street nor a place in reach is "an unnamed spot", still placed by its step from the one
before. The same wording describes a task's start (:func:`describe_point`).

Used by the language-model face (the ``urbanground-react`` scheme's task texts) and by
the env's one-time notice when a closure appears; the task generator may reuse it.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import shapely
from shapely.geometry import Point

from urban_gym.families.citywalk.tasks.types import EXCLUDED_KINDS, compass_name
from urban_gym.tasks.wording import typed_name
from urban_gym.world.city import POI, City
from urban_gym.world.geo import bearing

__all__ = [
    "LANDMARK_RADIUS_M",
    "STREET_RADIUS_M",
    "closure_points",
    "describe_closure",
    "describe_closures",
    "describe_point",
    "landmark_near",
    "street_at",
]

#: How far (m) a waypoint may be from the named way it is said to lie on.
STREET_RADIUS_M = 20.0
#: How far (m) the named place a waypoint is placed by may be.
LANDMARK_RADIUS_M = 120.0


_NAMED: weakref.WeakKeyDictionary[City, tuple[Any, list[str]]] = weakref.WeakKeyDictionary()


def _named_ways(city: City) -> tuple[Any, list[str]]:
    """A spatial index of the network's named ways and their names (cached per city)."""
    got = _NAMED.get(city)
    if got is None:
        geoms, names = [], []
        for _, _, d in city.network.edges(data=True):
            if d.get("name") and d.get("geometry") is not None:
                geoms.append(d["geometry"])
                names.append(str(d["name"]))
        got = (shapely.STRtree(geoms), names)
        _NAMED[city] = got
    return got


def street_at(city: City, xy: Sequence[float]) -> str | None:
    """The name of the street at ``xy``: the nearest named way of the walkable network
    within :data:`STREET_RADIUS_M` (a sidewalk or crossing has no name of its own: the
    street beside it names it); None when there is none.
    """
    tree, names = _named_ways(city)
    if not names:
        return None
    p = Point(float(xy[0]), float(xy[1]))
    hits = tree.query(p, predicate="dwithin", distance=STREET_RADIUS_M)
    if len(hits) == 0:
        return None
    best = min((float(tree.geometries[int(i)].distance(p)), names[int(i)]) for i in hits)
    return best[1]


_UNNAMED = {
    "crossing": "at a street crossing",
    "steps": "on a flight of steps",
    "footbridge": "on a footbridge",
    "road": "on a street with no name",
    "sidewalk": "on a sidewalk",
    "corridor": "in a passage",
    "platform": "on a platform",
    "pedestrian": "on a pedestrian street with no name",
    "footway": "on a footpath with no name",
    "path": "on a path with no name",
    "cycleway": "on a cycle path with no name",
}


def _way(city: City, xy: Sequence[float]) -> str:
    """``on <street>``; without a named way within reach, the kind of way (``on a
    footpath with no name``); ``""`` off the network.
    """
    street = street_at(city, xy)
    if street:
        return f"on {street}"
    if city.network.number_of_edges() == 0:
        return ""
    wp = city.nearest_walkable_point(float(xy[0]), float(xy[1]))
    if wp.distance > STREET_RADIUS_M:
        return ""
    kind = str(city.network.edges[wp.edge].get("kind") or "path")
    return _UNNAMED.get(kind, f"on a {kind.replace('_', ' ')} with no name")


def _usable(p: POI) -> bool:
    return p.kind not in EXCLUDED_KINDS and 2 <= len(p.name) <= 40


def landmark_near(
    city: City, xy: Sequence[float], radius: float = LANDMARK_RADIUS_M
) -> tuple[POI, float, str] | None:
    """The nearest named place (by its sign's anchor) within ``radius`` metres of ``xy``
    -- not a bench, parking or the like (:data:`EXCLUDED_KINDS`): ``(poi, metres,
    compass direction of xy from it)``; None when there is none.
    """
    x, y = float(xy[0]), float(xy[1])
    for p in city.pois_within(x, y, radius):
        if _usable(p):
            d = math.dist(p.anchor, (x, y))
            return p, d, compass_name(bearing(x - p.anchor[0], y - p.anchor[1]))
    return None


def _metres(d: float) -> str:
    return f"{max(1, round(d))} m"


def _where(city: City, xy: Sequence[float]) -> str:
    """``on <street>, about N m <dir> of <place>`` (either part may be missing)."""
    parts = []
    way = _way(city, xy)
    if way:
        parts.append(way)
    mark = landmark_near(city, xy)
    if mark is not None:
        p, d, direction = mark
        if d < 3.0:
            parts.append(f"at {typed_name(p)}")
        else:
            parts.append(f"about {_metres(d)} {direction} of {typed_name(p)}")
    return ", ".join(parts)


def describe_point(city: City, xy: Sequence[float]) -> str:
    """Where ``xy`` is, in words a walker can use: ``"on Aleksanterinkatu, about 20 m
    south-west of Kahvila Sävy (café)"`` (see the module docstring); ``"an unnamed spot"``
    when there is no street or place to name.
    """
    return _where(city, xy) or "an unnamed spot"


def describe_closure(city: City, points: Sequence[Sequence[float]], number: int = 1) -> str:
    """One closed segment as a chain of waypoints: ``"Closed segment 1 (3 waypoints; the
    closure is the line from each waypoint to the next): waypoint 1 on ..., about ... of
    ...; waypoint 2 14 m east of waypoint 1, on ...; ..."``.

    Raises ValueError when ``points`` holds fewer than two points.
    """
    pts = [(float(p[0]), float(p[1])) for p in points]
    if len(pts) < 2:
        raise ValueError(f"a closure needs at least two points, got {len(pts)}")
    out = []
    for i, q in enumerate(pts):
        where = _where(city, q)
        if i == 0:
            out.append(f"waypoint 1 {where or 'at an unnamed spot'}")
            continue
        prev = pts[i - 1]
        step = (
            f"waypoint {i + 1} {_metres(math.dist(prev, q))} "
            f"{compass_name(bearing(q[0] - prev[0], q[1] - prev[1]))} of waypoint {i}"
        )
        out.append(f"{step}, {where}" if where else step)
    head = (
        f"Closed segment {number} ({len(pts)} waypoints; the closure is the line from each "
        "waypoint to the next)"
    )
    return f"{head}: " + "; ".join(out) + "."


def closure_points(closure: Any) -> list[tuple[float, float]]:
    """The waypoints of a closure given as a task's mapping (``points``) or an object with
    ``points`` (the env's :class:`~urban_gym.families.citywalk.dynamics.Closure`).
    """
    pts = closure.get("points") if isinstance(closure, Mapping) else closure.points
    return [(float(p[0]), float(p[1])) for p in pts or ()]


def describe_closures(city: City, closures: Iterable[Any]) -> str:
    """Every closed segment (task mappings or env closures), one line each, numbered from
    1; ``""`` when there are none.
    """
    lines = [
        describe_closure(city, closure_points(c), i)
        for i, c in enumerate((c for c in closures if len(closure_points(c)) >= 2), 1)
    ]
    return "\n".join(lines)
