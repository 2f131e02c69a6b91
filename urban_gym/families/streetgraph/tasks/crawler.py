"""The CityNav start crawler and the named destinations of a city's street graph (see the
package docstring; lengths in metres, angles in degrees).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from urban_gym.families.streetgraph.world import (
    StreetGraph,
    StreetGraphError,
)
from urban_gym.tasks.spec import TaskError
from urban_gym.tasks.wording import place_name
from urban_gym.world.geo import bearing
from urban_gym.world.places import Address, AddressBook, notability, place_kind_of

#: Difficulty thresholds on the number of decision points along the shortest route.
DIFFICULTY_DECISIONS = {"easy": 10, "medium": 25}


@dataclass(frozen=True)
class CrawlerParams:
    """Parameters of the CityNav start crawler (see the module docstring).

    Attributes:
        t_start: softmax temperature at the seed (high: nearly uniform choices).
        t_end: temperature at the target radius (low: nearly straight away from the seed).
        gamma: revisit penalty base in (0, 1]; a street whose end was visited ``n`` times
            is weighted by ``gamma ** n``.
        min_degree: the start must have at least this many neighbours.
    """

    t_start: float = 1.0
    t_end: float = 0.1
    gamma: float = 0.2
    min_degree: int = 3

    def __post_init__(self) -> None:
        if not (self.t_start > 0 and self.t_end > 0):
            raise TaskError(
                f"crawler temperatures t_start={self.t_start!r}, t_end={self.t_end!r} must be > 0"
            )
        if not (0.0 < self.gamma <= 1.0):
            raise TaskError(f"crawler gamma={self.gamma!r} must be in (0, 1]")
        if self.min_degree < 1:
            raise TaskError(f"crawler min_degree={self.min_degree!r} must be >= 1")


@dataclass(frozen=True)
class CrawlResult:
    """Where the crawler stopped: ``start`` (node index), the walked ``path`` (node indices,
    after backtracking), ``radial_distance`` (metres from the seed), ``arrival_heading``
    (degrees, the last hop's bearing), ``junction_choices`` and ``backtracks``.
    """

    start: int
    path: tuple[int, ...]
    radial_distance: float
    arrival_heading: float
    junction_choices: int
    backtracks: int


def crawl(
    graph: StreetGraph,
    seed_node: int,
    radius: float,
    rng: np.random.Generator,
    params: CrawlerParams | None = None,
) -> CrawlResult:
    """Walk away from ``seed_node`` until ``radius`` metres (straight line) and a node of
    degree >= ``params.min_degree`` (see the module docstring). Raises
    :class:`StreetGraphError` when the search exhausts the graph first.
    """
    p = params or CrawlerParams()
    if not (radius > 0 and math.isfinite(radius)):
        raise TaskError(f"crawler radius={radius!r} must be a positive number of metres")
    xy = graph.xy
    deg = graph.degree
    ox, oy = float(xy[seed_node, 0]), float(xy[seed_node, 1])
    away0 = float(rng.uniform(0.0, 360.0))
    log_gamma = math.log(p.gamma)
    visits: dict[int, int] = {seed_node: 1}
    tried: dict[int, set[int]] = {}
    stack: list[tuple[int, int | None, int]] = []  # (junction, arrived-from, path length)
    path = [seed_node]
    cur, prev = seed_node, None
    choices = backtracks = 0

    def radial(n: int) -> float:
        return math.hypot(xy[n, 0] - ox, xy[n, 1] - oy)

    def done(n: int) -> bool:
        return radial(n) >= radius and int(deg[n]) >= p.min_degree

    if done(cur):
        return CrawlResult(cur, tuple(path), radial(cur), away0, 0, 0)
    while True:
        done_set = tried.setdefault(cur, set())
        cands = [
            s for s in graph.streets_from(cur) if s.nodes[1] != prev and s.nodes[1] not in done_set
        ]
        if not cands:
            if not stack:
                far = float(np.hypot(xy[:, 0] - ox, xy[:, 1] - oy).max())
                raise StreetGraphError(
                    f"crawler from {graph.ids[seed_node]!r} exhausted the graph without reaching "
                    f"a degree->={p.min_degree} node {radius:.0f} m away (farthest node {far:.0f} m)"
                )
            cur, prev, keep = stack.pop()
            del path[keep:]
            backtracks += 1
            continue
        r = radial(cur)
        if len(cands) == 1:
            street = cands[0]
        else:
            choices += 1
            away = math.degrees(math.atan2(xy[cur, 0] - ox, xy[cur, 1] - oy)) if r >= 1.0 else away0
            t = p.t_start * (p.t_end / p.t_start) ** min(r / radius, 1.0)
            logw = np.array(
                [
                    math.cos(math.radians(s.heading - away)) / t + visits.get(s.end, 0) * log_gamma
                    for s in cands
                ]
            )
            w = np.exp(logw - logw.max())
            street = cands[int(rng.choice(len(cands), p=w / w.sum()))]
        done_set.add(street.nodes[1])
        stack.append((cur, prev, len(path)))
        for k in range(1, len(street.nodes)):
            n = street.nodes[k]
            path.append(n)
            if done(n):
                a = street.nodes[k - 1]
                hd = bearing(xy[n, 0] - xy[a, 0], xy[n, 1] - xy[a, 1])
                return CrawlResult(n, tuple(path), radial(n), hd, choices, backtracks)
        visits[street.end] = visits.get(street.end, 0) + 1
        prev, cur = street.nodes[-2], street.end


@dataclass(frozen=True)
class Destination:
    """A named destination: ``nodes`` are the graph node indices within reach of its
    ``polygon`` (shapely geometry, metres). ``called`` is how an instruction names it:
    the name, or ``"the post office Helsinki 00130"`` when the name only says where it is
    (:func:`~urban_gym.tasks.wording.place_name`); empty means the name.

    ``kind`` is what the place is in the city's data (``poi``, ``building``, ``area``, or
    ``node`` for a named panorama), ``category`` the kind of place it is (never ``yes``:
    :func:`~urban_gym.world.places.place_kind_of`), ``notable`` why OpenStreetMap marks it
    as notable (:func:`~urban_gym.world.places.notability`; ``""``: it does not) and
    ``address`` its :class:`~urban_gym.world.places.Address` as a dict (None when the
    city around it has none).
    """

    name: str
    kind: str
    category: str
    osm_id: str
    position: tuple[float, float]
    nodes: tuple[int, ...]
    called: str = ""
    notable: str = ""
    address: dict[str, Any] | None = None


def city_destinations(
    graph: StreetGraph, city: Any, reach: float = 25.0, point_radius: float = 3.0
) -> list[Destination]:
    """Named destinations of ``city`` mapped to node sets of ``graph``.

    POIs use their building footprint (or a ``point_radius`` m disc at their anchor when
    they have no building); named buildings that are not a POI already use their
    footprint; named green areas use their polygon. A destination's nodes are the graph
    nodes within ``reach`` metres of that polygon; places with no node in reach and names
    shared by several places (compared case-insensitively) are left out. Each carries
    its notability and address (:mod:`urban_gym.world.places`). Sorted by name.
    """
    book = AddressBook(city)
    cands = list(_poi_places(city, book, point_radius))
    cands += _building_places(city, book)
    for area in city.areas:
        if area.kind == "green" and area.name:
            c = area.polygon.representative_point()
            tags = area.tags or {}
            cands.append(
                _Place(
                    area.name,
                    "area",
                    place_kind_of(tags, "park"),
                    area.osm_id,
                    area.polygon,
                    (c.x, c.y),
                    area.name,
                    notability(tags),
                    book.address_of(tags, (c.x, c.y)),
                )
            )
    counts: dict[str, int] = {}
    for c in cands:
        k = c.name.casefold().strip()
        counts[k] = counts.get(k, 0) + 1
    out = []
    for c in cands:
        if not c.name.strip() or counts[c.name.casefold().strip()] != 1:
            continue
        nodes = graph.nodes_within(c.polygon, reach)
        if nodes:
            xy = (float(c.position[0]), float(c.position[1]))
            address = c.address.to_dict() if c.address is not None else None
            out.append(
                Destination(
                    c.name,
                    c.kind,
                    c.category,
                    c.osm_id,
                    xy,
                    tuple(nodes),
                    c.called,
                    c.notable,
                    address,
                )
            )
    out.sort(key=lambda d: d.name)
    return out


@dataclass(frozen=True)
class _Place:
    name: str
    kind: str
    category: str
    osm_id: str
    polygon: Any
    position: tuple[float, float]
    called: str
    notable: str
    address: Address | None


def _poi_places(city: Any, book: AddressBook, point_radius: float) -> list[_Place]:
    from shapely.geometry import Point

    out = []
    for poi in city.pois:
        if poi.building_id is not None:
            poly = city.buildings[poi.building_id].polygon
        else:
            poly = Point(poi.anchor).buffer(point_radius)
        tags = poi.tags or {}
        category = poi.kind if poi.kind not in ("yes", "no") else place_kind_of(tags)
        out.append(
            _Place(
                poi.name,
                "poi",
                category,
                poi.osm_id,
                poly,
                tuple(poi.anchor),
                place_name(poi),
                notability(tags),
                book.address_of(tags, tuple(poi.anchor), poi.building_id),
            )
        )
    return out


def _building_places(city: Any, book: AddressBook) -> list[_Place]:
    """Named buildings that are not a POI already (an area POI mapped on the building
    itself, or a POI of the same name inside it).
    """
    as_poi = {p.osm_id for p in city.pois}
    inside = {(p.building_id, p.name.casefold().strip()) for p in city.pois}
    out = []
    for b in city.buildings:
        name = (b.name or "").strip()
        if not name or b.osm_id in as_poi or (b.id, name.casefold()) in inside:
            continue
        tags = b.tags or {}
        c = b.polygon.representative_point()
        out.append(
            _Place(
                b.name,
                "building",
                place_kind_of(tags, "building"),
                b.osm_id,
                b.polygon,
                (c.x, c.y),
                b.name,
                notability(tags),
                book.address_of(tags, (c.x, c.y), b.id),
            )
        )
    return out


def difficulty_of(decision_points: int) -> str:
    """``easy`` / ``medium`` / ``hard`` by :data:`DIFFICULTY_DECISIONS`."""
    if decision_points <= DIFFICULTY_DECISIONS["easy"]:
        return "easy"
    if decision_points <= DIFFICULTY_DECISIONS["medium"]:
        return "medium"
    return "hard"


def route_decision_points(graph: StreetGraph, route: Sequence[int]) -> int:
    """Decision points (nodes with degree != 2) on ``route`` before its last node."""
    deg = graph.degree
    return int(sum(int(deg[n]) != 2 for n in route[:-1]))
