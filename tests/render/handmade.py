"""Tiny hand-made cities for rendering tests (metres, x east, y north)."""

from __future__ import annotations

import networkx as nx
from shapely.geometry import LineString, box

from urban_gym.world.assemble import assemble_city
from urban_gym.world.city import POI, Building, City, StreetObject
from urban_gym.world.geo import GeoFrame


def _network(points: list[tuple[float, float]]) -> nx.Graph:
    g = nx.Graph()
    for i, (x, y) in enumerate(points):
        g.add_node(i, x=x, y=y)
    for i in range(len(points) - 1):
        line = LineString([points[i], points[i + 1]])
        g.add_edge(
            i,
            i + 1,
            geometry=line,
            start=i,
            length=line.length,
            kind="footway",
            highway="footway",
            covered=False,
            width=3.0,
            name=None,
            osm_id=f"w{i}",
        )
    return g


def city_of(
    boxes: list[tuple[float, float, float, float, float]],
    pois: list[tuple[str, float, float, int]] = (),
    objects: list[tuple[str, float, float]] = (),
) -> City:
    """A city with buildings ``(x0, y0, x1, y1, height)``, POIs ``(name, x, y, building)``
    placed on a building, street objects ``(kind, x, y)`` and a footway along y = -40
    from x = -60 to x = 60 (so the city's bounds reach that far)."""
    buildings = [
        Building(i, f"w{100 + i}", box(x0, y0, x1, y1), h, "yes", None, "height")
        for i, (x0, y0, x1, y1, h) in enumerate(boxes)
    ]
    ps = [
        POI(i, f"n{i}", name, "shop", "bakery", (x, y), building_id=b)
        for i, (name, x, y, b) in enumerate(pois)
    ]
    objs = [StreetObject(i, f"n{500 + i}", kind, (x, y)) for i, (kind, x, y) in enumerate(objects)]
    net = _network([(-60.0, -40.0), (0.0, -40.0), (60.0, -40.0)])
    return assemble_city(
        "handmade", GeoFrame(60.0, 25.0), buildings, ps, objs, [], net, {}, "handmade"
    )
