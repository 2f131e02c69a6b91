"""Named places on the pose graph (POIs on a facade, placed along a street side), their
relations (left / right / k doors along / across) and object counts along a range (metres, degrees).
"""

from __future__ import annotations

import math
import weakref
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon

from urban_gym.families.posegraph360.tasks.types import COUNT_CORRIDOR_M, MAX_POI_OFFSET_M
from urban_gym.families.posegraph360.world import PoseGraph, State
from urban_gym.world.city import POI
from urban_gym.world.geo import angle_diff, bearing


@dataclass
class Place:
    """A named POI with a facade, placed on the pose graph: ``state`` is the frame nearest
    to its sign; ``segment``/``side``/``offset`` place the sign along a street side
    (``side`` as seen along trajectory ``ref``: ``"left"``/``"right"``).
    """

    poi: POI
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


#: Relations of the relational task: a neighbour along the facade (``left``/``right``),
#: the k-th one (``right_3`` = "three doors to the right of"), or ``across`` the street.
RELATIONS: tuple[str, ...] = ("left", "right", "across", "left_2", "right_2", "left_3", "right_3")
_ORDINAL_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}


def relation_phrase(relation: str) -> str:
    """The English phrase of a relation: ``"three doors to the right of"``,
    ``"to the left of"``, ``"across the street from"``.
    """
    if relation == "across":
        return "across the street from"
    side, _, k = relation.partition("_")
    if side not in ("left", "right") or (k and int(k) not in _ORDINAL_WORDS):
        raise ValueError(f"relation={relation!r} is not one of {', '.join(RELATIONS)}")
    if not k or int(k) == 1:
        return f"to the {side} of"
    return f"{_ORDINAL_WORDS[int(k)]} doors to the {side} of"


def relation_of(
    x: Place, relation: str, by_side: dict[tuple[int, str], list[Place]], graph: PoseGraph
) -> Place | None:
    """The place in ``relation`` (:data:`RELATIONS`) to ``x`` from the facade order along
    its street, or None when there is none or it is ambiguous.

    Facing ``x`` from the street, *left*/*right* are its neighbours along the same side
    (3-40 m away along the street, no other place within 2 m of either); ``right_k`` is the
    k-th place along that side, each step a clear neighbour of the one before; *across*
    is the place on the other side closest along the street (within 12 m, 4 m clearer
    than the runner-up).
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
    side, _, k = relation.partition("_")
    cur = x
    for _ in range(int(k or 1)):
        nxt = _next_door(cur, side, same)
        if nxt is None:
            return None
        cur = nxt
    return cur


def _next_door(x: Place, side: str, same: list[Place]) -> Place | None:
    """The clear neighbour of ``x`` on its ``side`` (left/right) along the facade."""
    # walking along ref and turning to face a right-side place, your left hand points
    # forwards along ref; facing a left-side place, it points backwards
    forward = (side == "left") == (x.side == "right")
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
    block's side of its streets).
    """
    xy, geoms = _objects_of(city, kind)
    if not len(xy):
        return 0
    near = shapely.dwithin(geoms, line, COUNT_CORRIDOR_M)
    if polygon is not None:
        inside = shapely.contains_xy(polygon, xy[:, 0], xy[:, 1])
        return int(np.count_nonzero(near & inside))
    s = shapely.line_locate_point(line, geoms[near])
    return int(np.count_nonzero((s > 0.0) & (s < line.length)))


_OBJECTS: weakref.WeakKeyDictionary[Any, dict[str, tuple[np.ndarray, np.ndarray]]] = (
    weakref.WeakKeyDictionary()
)


def _objects_of(city: Any, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The positions ``(n, 2)`` and shapely points of ``city``'s objects of ``kind``
    (kept per city while it lives).
    """
    by_kind = _OBJECTS.setdefault(city, {})
    if kind not in by_kind:
        xy = np.array([o.position for o in city.objects if o.kind == kind], float).reshape(-1, 2)
        by_kind[kind] = (xy, shapely.points(xy))
    return by_kind[kind]
