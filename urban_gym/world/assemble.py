"""Final assembly shared by every city source (OSM import, procedural generator).

Keeps the largest connected component of the walkable network (so every network node is
reachable from every other), numbers items by their list position and anchors POIs to
facades and the network.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import shapely

from urban_gym.errors import CityLoadError
from urban_gym.world.anchoring import anchor_pois
from urban_gym.world.city import POI, Area, Building, City, StreetObject
from urban_gym.world.geo import GeoFrame


def largest_component(graph: nx.Graph) -> tuple[nx.Graph, dict[str, int]]:
    """Reduce ``graph`` in place to its largest connected component; returns it and what
    was dropped.
    """
    comps = list(nx.connected_components(graph))
    if not comps:
        return graph, {"components": 0, "dropped_nodes": 0, "dropped_edges": 0}
    keep = max(comps, key=lambda c: (len(c), min(c)))
    n0, e0 = graph.number_of_nodes(), graph.number_of_edges()
    graph.remove_nodes_from([n for c in comps if c is not keep for n in c])
    return graph, {
        "components": len(comps),
        "dropped_nodes": n0 - graph.number_of_nodes(),
        "dropped_edges": e0 - graph.number_of_edges(),
    }


def assemble_city(
    name: str,
    frame: GeoFrame,
    buildings: list[Building],
    pois: list[POI],
    objects: list[StreetObject],
    areas: list[Area],
    network: nx.Graph,
    meta: dict[str, Any],
    source: str,
    no_building: set[int] | frozenset[int] = frozenset(),
) -> City:
    """Validate the parts, keep the main network component, anchor POIs, build the City.

    ``source`` names the input in error messages (a file path or a procedural spec);
    ``no_building`` lists POI ids (list positions) that must not be attached to a building
    (areas such as parks, which may contain buildings of their own).
    """
    if not buildings:
        raise CityLoadError(f"{source}: no buildings found (is this a city extract?)")
    if network.number_of_edges() == 0:
        raise CityLoadError(f"{source}: no walkable ways found (footways, pedestrian or car roads)")
    network, dropped = largest_component(network)
    for i, b in enumerate(buildings):
        b.id = i
    for i, o in enumerate(objects):
        o.id = i
    for i, a in enumerate(areas):
        a.id = i
    for i, p in enumerate(pois):
        p.id = i
    city = City(name, frame, buildings, pois, objects, areas, network, meta)
    city.meta["network_components"] = dropped
    anchor_pois(pois, buildings, city._idx_buildings, city._idx_edges, no_building)
    return city


def make_valid_polygons(geoms) -> list:
    """Split each geometry into valid polygons (shapely ``make_valid``), dropping slivers
    under 1 square metre; outer rings counter-clockwise.
    """
    out = []
    for g in geoms:
        out.append(_valid_parts(g))
    return out


def _valid_parts(g) -> list:
    if g is None or g.is_empty:
        return []
    if not g.is_valid:
        g = shapely.make_valid(g)
    parts = [p for p in shapely.get_parts(g) if p.geom_type == "Polygon"]
    if not parts and g.geom_type == "GeometryCollection":
        parts = [
            q
            for p in shapely.get_parts(g)
            for q in shapely.get_parts(p)
            if q.geom_type == "Polygon"
        ]
    parts = [p for p in parts if p.area >= 1.0]
    return list(shapely.orient_polygons(parts)) if parts else []
