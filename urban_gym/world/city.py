"""The city as data: buildings, the walkable network, POIs, street objects and map areas.

All geometry is in the local metric frame of :class:`~urban_gym.world.geo.GeoFrame`
(x east, y north, metres); bearings are degrees clockwise from north.

A :class:`City` is built by an importer (:mod:`urban_gym.world.osm`), the procedural
generator (:mod:`urban_gym.world.procedural`) or read from a bundle
(:meth:`City.load`). It is immutable by convention after construction; spatial indexes
(shapely ``STRtree``) are built lazily on first query and are not pickled.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import shapely
from shapely.geometry import LineString, Point

from urban_gym.world.bundle import read_bundle, save_bundle
from urban_gym.world.features import POI, Area, Building, StreetObject
from urban_gym.world.geo import GeoFrame

__all__ = [
    "DEFAULT_BUILDING_HEIGHT_M",
    "DEFAULT_HEIGHT_BY_TYPE_M",
    "OBJECT_KINDS",
    "POI",
    "POI_KEYS",
    "STOREY_HEIGHT_M",
    "Area",
    "Building",
    "City",
    "StreetObject",
    "WalkablePoint",
]

#: Storey height in metres used when a building has ``building:levels`` but no ``height``.
STOREY_HEIGHT_M = 3.2

#: Default building height (m) by ``building=*`` value when neither ``height`` nor
#: ``building:levels`` is mapped. Values not listed use ``DEFAULT_BUILDING_HEIGHT_M``.
DEFAULT_HEIGHT_BY_TYPE_M: dict[str, float] = {
    "house": 7.0,
    "detached": 7.0,
    "semidetached_house": 7.0,
    "terrace": 9.0,
    "residential": 16.0,
    "apartments": 18.0,
    "commercial": 16.0,
    "retail": 10.0,
    "office": 20.0,
    "hotel": 20.0,
    "public": 16.0,
    "civic": 16.0,
    "government": 16.0,
    "school": 12.0,
    "university": 16.0,
    "hospital": 20.0,
    "church": 22.0,
    "cathedral": 30.0,
    "chapel": 8.0,
    "train_station": 14.0,
    "transportation": 8.0,
    "industrial": 9.0,
    "warehouse": 8.0,
    "garage": 3.0,
    "garages": 3.0,
    "shed": 3.0,
    "hut": 3.0,
    "kiosk": 3.0,
    "roof": 4.0,
    "service": 4.0,
    "toilets": 3.0,
    "bunker": 3.0,
    "construction": 10.0,
}
DEFAULT_BUILDING_HEIGHT_M = 14.0
#: side (m) of the grid cells by which :meth:`City.building_at` finds the footprints to test,
#: and how many cells' lists it keeps
BUILDING_CELL_M = 16.0
BUILDING_CELLS = 4096

#: Street object kinds recognised in OSM node tags: ``(key, value) -> kind``.
OBJECT_KINDS: dict[tuple[str, str], str] = {
    ("natural", "tree"): "tree",
    ("highway", "street_lamp"): "street_lamp",
    ("amenity", "bench"): "bench",
    ("leisure", "picnic_table"): "bench",
    ("amenity", "vending_machine"): "vending_machine",
    ("highway", "bus_stop"): "bus_stop",
    ("highway", "crossing"): "crossing",
    ("highway", "traffic_signals"): "traffic_signals",
    ("amenity", "bicycle_parking"): "bicycle_parking",
    ("amenity", "bicycle_rental"): "bicycle_rental",
    ("amenity", "waste_basket"): "waste_basket",
    ("amenity", "recycling"): "recycling",
    ("amenity", "post_box"): "post_box",
    ("amenity", "atm"): "atm",
    ("amenity", "fountain"): "fountain",
    ("amenity", "drinking_water"): "drinking_water",
    ("amenity", "telephone"): "telephone",
    ("amenity", "clock"): "clock",
    ("amenity", "toilets"): "toilets",
    ("emergency", "fire_hydrant"): "fire_hydrant",
    ("man_made", "flagpole"): "flagpole",
    ("man_made", "street_cabinet"): "street_cabinet",
    ("tourism", "artwork"): "artwork",
    ("historic", "memorial"): "memorial",
}

#: Keys that make a named feature a POI, in priority order (the first present is the category).
POI_KEYS: tuple[str, ...] = ("shop", "amenity", "tourism", "leisure", "office")


@dataclass(frozen=True)
class WalkablePoint:
    """A point on the walkable network: on edge ``(u, v)``, ``offset`` metres from ``u``
    along the edge's geometry, ``distance`` metres from the query point.
    """

    point: tuple[float, float]
    edge: tuple[int, int]
    offset: float
    distance: float


class City:
    """A city world: everything an environment needs to know about the place.

    Attributes:
        name: short name, e.g. ``"helsinki"``.
        frame: the geographic frame of the local coordinates.
        buildings, pois, objects, areas: lists indexed by each item's ``id``.
        network: undirected ``networkx.Graph`` of the walkable network. Nodes carry
            ``x``, ``y`` (metres); edges carry ``geometry`` (``LineString`` oriented from
            node ``start`` to the other end), ``start``, ``length`` (m), ``kind``
            (``footway``, ``sidewalk``, ``crossing``, ``pedestrian``, ``steps``,
            ``footbridge``, ``path``, ``cycleway``, ``corridor``, ``platform`` or
            ``road`` -- a car road whose sidewalks are walked), ``covered`` (bool),
            ``width`` (m, the walkable corridor), ``name`` and ``osm_id``.
        meta: provenance (source file, hash, bbox, importer version) and import statistics.
    """

    def __init__(
        self,
        name: str,
        frame: GeoFrame,
        buildings: list[Building],
        pois: list[POI],
        objects: list[StreetObject],
        areas: list[Area],
        network: nx.Graph,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.frame = frame
        self.buildings = buildings
        self.pois = pois
        self.objects = objects
        self.areas = areas
        self.network = network
        self.meta: dict[str, Any] = dict(meta or {})
        #: what :func:`urban_gym.world.loader.load_city` loaded this city from (a file's hash
        #: or a procedural spec), naming the caches of data derived from it; None for a city
        #: built in code or from a bundle (not saved in bundles)
        self.fingerprint: str | None = None

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for k in list(state):
            if k.startswith("_idx_") or k in _CACHED:
                del state[k]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.setdefault("fingerprint", None)
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return (
            f"City({self.name!r}, buildings={len(self.buildings)}, pois={len(self.pois)}, "
            f"objects={len(self.objects)}, network={self.network.number_of_nodes()} nodes/"
            f"{self.network.number_of_edges()} edges)"
        )

    # ------------------------------------------------------------------ extent
    @cached_property
    def bounds(self) -> tuple[float, float, float, float]:
        """``(xmin, ymin, xmax, ymax)`` in metres over buildings and the network."""
        xs: list[float] = []
        ys: list[float] = []
        if self.buildings:
            b = shapely.bounds(np.array([bd.polygon for bd in self.buildings], dtype=object))
            xs += [b[:, 0].min(), b[:, 2].max()]
            ys += [b[:, 1].min(), b[:, 3].max()]
        if self.network.number_of_nodes():
            nx_ = np.array([d["x"] for _, d in self.network.nodes(data=True)])
            ny_ = np.array([d["y"] for _, d in self.network.nodes(data=True)])
            xs += [nx_.min(), nx_.max()]
            ys += [ny_.min(), ny_.max()]
        if not xs:
            return (0.0, 0.0, 0.0, 0.0)
        return (float(min(xs)), float(min(ys)), float(max(xs)), float(max(ys)))

    @property
    def extent(self) -> tuple[float, float]:
        """Width (east-west) and height (north-south) of :attr:`bounds`, metres."""
        x0, y0, x1, y1 = self.bounds
        return (x1 - x0, y1 - y0)

    def contains(self, x: float, y: float, margin: float = 0.0) -> bool:
        """Whether ``(x, y)`` lies inside :attr:`bounds` grown by ``margin`` metres."""
        x0, y0, x1, y1 = self.bounds
        return x0 - margin <= x <= x1 + margin and y0 - margin <= y <= y1 + margin

    # ------------------------------------------------------------------ indexes
    @cached_property
    def _edge_list(self) -> list[tuple[int, int]]:
        return list(self.network.edges())

    @cached_property
    def _idx_edges(self) -> shapely.STRtree:
        return shapely.STRtree([self.network.edges[e]["geometry"] for e in self._edge_list])

    @cached_property
    def _idx_buildings(self) -> shapely.STRtree:
        return shapely.STRtree([b.polygon for b in self.buildings])

    @cached_property
    def _idx_pois(self) -> shapely.STRtree:
        return shapely.STRtree(shapely.points([p.anchor for p in self.pois]) if self.pois else [])

    @cached_property
    def _idx_objects(self) -> shapely.STRtree:
        return shapely.STRtree(
            shapely.points([o.position for o in self.objects]) if self.objects else []
        )

    @cached_property
    def node_xy(self) -> dict[int, tuple[float, float]]:
        """Network node id -> (x, y) metres."""
        return {n: (d["x"], d["y"]) for n, d in self.network.nodes(data=True)}

    # ------------------------------------------------------------------ queries
    def edge_geometry(self, u: int, v: int) -> LineString:
        """Geometry of network edge ``(u, v)`` oriented from ``u`` to ``v``."""
        data = self.network.edges[u, v]
        g = data["geometry"]
        return g if data["start"] == u else g.reverse()

    def nearest_walkable_point(self, x: float, y: float) -> WalkablePoint:
        """The closest point of the walkable network to ``(x, y)``."""
        if not self._edge_list:
            raise ValueError(f"city {self.name!r} has no walkable network")
        p = Point(x, y)
        i = int(self._idx_edges.nearest(p))
        u, v = self._edge_list[i]
        g = self.edge_geometry(u, v)
        off = float(g.project(p))
        q = g.interpolate(off)
        return WalkablePoint((q.x, q.y), (u, v), off, float(q.distance(p)))

    def nearest_walkable_points(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised nearest walkable points: ``(K, 2)`` positions -> ``(K, 2)`` snapped
        points and ``(K,)`` distances (metres).
        """
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        pts = shapely.points(xy)
        idx = self._idx_edges.nearest(pts)
        geoms = np.array([self.network.edges[self._edge_list[i]]["geometry"] for i in idx])
        snapped = shapely.get_coordinates(shapely.shortest_line(pts, geoms))[1::2]
        return snapped, np.hypot(*(snapped - xy).T)

    def building_at(self, x: float, y: float) -> int | None:
        """Id of the building whose footprint contains ``(x, y)``, else None (the last
        answer is kept: a viewer turning on the spot asks the same point again).
        """
        last = self.__dict__.get("_idx_building_at_last")
        if last is not None and last[0] == x and last[1] == y:
            return last[2]
        # the footprints whose boxes meet the point's grid cell, tested exactly; where two
        # or more hold the point (overlapping footprints), the index decides which, as
        # before
        cand = self._building_cell(x, y)
        inside = cand[shapely.contains_xy(self._building_geoms[cand], x, y)] if len(cand) else cand
        if len(inside) > 1:
            hits = self._idx_buildings.query(Point(x, y), predicate="within")
            found = int(hits[0]) if len(hits) else None
        else:
            found = int(inside[0]) if len(inside) else None
        self._idx_building_at_last = (x, y, found)  # one tuple: safe to read from threads
        return found

    def _building_cell(self, x: float, y: float) -> np.ndarray:
        """Indices of the buildings whose bounding boxes meet the :data:`BUILDING_CELL_M`
        grid cell of ``(x, y)`` (the last :data:`BUILDING_CELLS` cells kept).
        """
        key = (math.floor(x / BUILDING_CELL_M), math.floor(y / BUILDING_CELL_M))
        cells = self.__dict__.get("_building_cells")
        if cells is None:
            cells = self.__dict__["_building_cells"] = {}
        hit = cells.get(key)
        if hit is not None:
            return hit
        x0, y0 = key[0] * BUILDING_CELL_M, key[1] * BUILDING_CELL_M
        cell = shapely.box(x0, y0, x0 + BUILDING_CELL_M, y0 + BUILDING_CELL_M)
        hit = np.sort(self._idx_buildings.query(cell))  # the footprints' boxes meeting it
        if len(cells) >= BUILDING_CELLS:
            cells.clear()
        cells[key] = hit
        return hit

    @cached_property
    def _building_geoms(self) -> np.ndarray:
        """The building index's footprints, prepared for fast point tests."""
        geoms = self._idx_buildings.geometries
        shapely.prepare(geoms)
        return geoms

    def buildings_within(self, x: float, y: float, radius: float) -> list[int]:
        """Ids of buildings whose footprint comes within ``radius`` metres of ``(x, y)``."""
        hits = self._idx_buildings.query(Point(x, y), predicate="dwithin", distance=radius)
        return sorted(int(i) for i in hits)

    def pois_within(
        self, x: float, y: float, radius: float, category: str | None = None
    ) -> list[POI]:
        """POIs whose sign anchor is within ``radius`` metres of ``(x, y)``, nearest first."""
        if not self.pois:
            return []
        hits = self._idx_pois.query(Point(x, y), predicate="dwithin", distance=radius)
        found = [self.pois[int(i)] for i in hits]
        if category is not None:
            found = [p for p in found if p.category == category or p.kind == category]
        return sorted(found, key=lambda p: (math.dist(p.anchor, (x, y)), p.id))

    def objects_within(
        self, x: float, y: float, radius: float, kind: str | None = None
    ) -> list[StreetObject]:
        """Street objects within ``radius`` metres of ``(x, y)``, nearest first."""
        if not self.objects:
            return []
        hits = self._idx_objects.query(Point(x, y), predicate="dwithin", distance=radius)
        found = [self.objects[int(i)] for i in hits]
        if kind is not None:
            found = [o for o in found if o.kind == kind]
        return sorted(found, key=lambda o: (math.dist(o.position, (x, y)), o.id))

    def objects_along(
        self,
        u: int,
        v: int,
        side: str,
        kind: str | None = None,
        max_offset: float = 15.0,
    ) -> list[StreetObject]:
        """Street objects along one side of network edge ``(u, v)``.

        ``side`` is ``"left"`` or ``"right"`` as seen walking from ``u`` to ``v``.
        An object counts when its perpendicular foot lies on the edge (strictly between
        the ends) and it is at most ``max_offset`` metres from it. Sorted by the distance
        along the edge from ``u``.
        """
        if side not in ("left", "right"):
            raise ValueError(f"side={side!r} must be 'left' or 'right'")
        g = self.edge_geometry(u, v)
        hits = self._idx_objects.query(g, predicate="dwithin", distance=max_offset)
        out: list[tuple[float, StreetObject]] = []
        coords = np.asarray(g.coords)
        for i in hits:
            o = self.objects[int(i)]
            if kind is not None and o.kind != kind:
                continue
            p = Point(o.position)
            s = float(g.project(p))
            if s <= 0.0 or s >= g.length:
                continue
            # direction of the segment the foot lies on
            q = g.interpolate(s)
            seg = _segment_at(coords, s)
            d = np.subtract(o.position, (q.x, q.y))
            cross = seg[0] * d[1] - seg[1] * d[0]
            if (cross > 0) == (side == "left") and abs(cross) > 1e-9:
                out.append((s, o))
        out.sort(key=lambda t: (t[0], t[1].id))
        return [o for _, o in out]

    def shortest_path(self, a: int, b: int) -> list[int]:
        """Node ids of the shortest walking path from node ``a`` to ``b`` (by length)."""
        return nx.shortest_path(self.network, a, b, weight="length")

    def path_length(self, nodes: list[int]) -> float:
        """Length in metres of a path given as network node ids."""
        return float(sum(self.network.edges[a, b]["length"] for a, b in zip(nodes[:-1], nodes[1:])))

    def nearest_node(self, x: float, y: float) -> int:
        """The network node nearest to ``(x, y)``."""
        ids = self._node_ids
        d = np.hypot(self._node_arr[:, 0] - x, self._node_arr[:, 1] - y)
        return int(ids[int(np.argmin(d))])

    @cached_property
    def _node_ids(self) -> np.ndarray:
        return np.array(list(self.network.nodes()), dtype=np.int64)

    @cached_property
    def _node_arr(self) -> np.ndarray:
        return np.array([self.node_xy[int(n)] for n in self._node_ids], dtype=float).reshape(-1, 2)

    def poi_by_name(self, name: str) -> POI:
        """The POI with this name or alias (case-insensitive); raises KeyError naming it."""
        key = name.casefold().strip()
        for p in self.pois:
            if any(key == n.casefold() for n in p.names):
                return p
        raise KeyError(f"no POI named {name!r} in city {self.name!r}")

    # ------------------------------------------------------------------ summary
    def summary(self) -> dict[str, Any]:
        """Counts and sizes, as printed by ``urban-gym info``."""
        w, h = self.extent
        km = sum(d["length"] for _, _, d in self.network.edges(data=True)) / 1000.0
        return {
            "name": self.name,
            "origin_latlon": (self.frame.lat0, self.frame.lon0),
            "extent_m": (round(w, 1), round(h, 1)),
            "buildings": len(self.buildings),
            "pois": len(self.pois),
            "pois_by_category": dict(sorted(Counter(p.category for p in self.pois).items())),
            "network_nodes": self.network.number_of_nodes(),
            "network_edges": self.network.number_of_edges(),
            "network_km": round(km, 2),
            "network_by_kind_km": {
                k: round(v / 1000.0, 2)
                for k, v in sorted(
                    _sum_by(
                        (d["kind"], d["length"]) for _, _, d in self.network.edges(data=True)
                    ).items()
                )
            },
            "objects": len(self.objects),
            "objects_by_kind": dict(sorted(Counter(o.kind for o in self.objects).items())),
            "areas_by_kind": dict(sorted(Counter(a.kind for a in self.areas).items())),
        }

    # ------------------------------------------------------------------ bundles
    def save(self, directory: str | Path) -> Path:
        """Write this city as a bundle (GeoJSON + JSON) into ``directory``; returns it."""
        return save_bundle(self, directory)

    @classmethod
    def load(cls, directory: str | Path) -> City:
        """Read a bundle written by :meth:`save` (:class:`~urban_gym.errors.BundleError`
        naming the file when it is missing or malformed).
        """
        p = read_bundle(directory)
        return cls(p.name, p.frame, p.buildings, p.pois, p.objects, p.areas, p.network, p.meta)


_CACHED = {
    "bounds",
    "_building_geoms",
    "_building_cells",
    "_edge_list",
    "_idx_edges",
    "_idx_buildings",
    "_idx_pois",
    "_idx_objects",
    "node_xy",
    "_node_ids",
    "_node_arr",
}


def _sum_by(pairs) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in pairs:
        out[k] = out.get(k, 0.0) + v
    return out


def _segment_at(coords: np.ndarray, s: float) -> np.ndarray:
    """Direction vector of the polyline segment containing arc length ``s``."""
    seg = np.diff(coords, axis=0)
    lens = np.hypot(seg[:, 0], seg[:, 1])
    cum = np.cumsum(lens)
    i = int(np.searchsorted(cum, s, side="left"))
    i = min(i, len(seg) - 1)
    return seg[i]
