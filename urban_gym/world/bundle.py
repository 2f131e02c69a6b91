"""City bundles: a directory of GeoJSON and JSON files that round-trips a City exactly.

Layout::

    city.json          name, geographic frame, metadata, format version
    buildings.geojson  footprints (Polygon) with height, kind, levels, name, tags
    pois.geojson       POI positions (Point) with facade anchoring and aliases
    objects.geojson    street objects (Point)
    areas.geojson      water and green areas (Polygon)
    network.geojson    walkable network: nodes (Point, property ``node``) and edges
                       (LineString from ``start``, properties ``u``, ``v``, ``length``, ...)

Coordinates are in the city's *local metric frame* (x east, y north, metres from the
origin in ``city.json``), not longitude/latitude: this keeps the round trip exact
(JSON writes Python floats losslessly). Each FeatureCollection names this in its
``urban_gym:crs`` member; :meth:`GeoFrame.to_latlon` converts to WGS84.

This module knows the features (:mod:`urban_gym.world.features`) but not the
:class:`~urban_gym.world.city.City` class: :func:`save_bundle` writes anything shaped like
a city (:class:`CityData`) and :func:`read_bundle` returns the parts that
:meth:`City.load <urban_gym.world.city.City.load>` assembles, so ``city`` -> ``bundle``
is the only direction of import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import networkx as nx
from shapely.geometry import LineString, Point, mapping, shape

from urban_gym.errors import BundleError
from urban_gym.world.features import POI, Area, Building, StreetObject
from urban_gym.world.geo import GeoFrame

BUNDLE_FORMAT = "urban_gym.city_bundle"
BUNDLE_VERSION = 1
_FILES = (
    "city.json",
    "buildings.geojson",
    "pois.geojson",
    "objects.geojson",
    "areas.geojson",
    "network.geojson",
)


class CityData(Protocol):
    """What a bundle stores of a city (a :class:`~urban_gym.world.city.City` has it all)."""

    name: str
    frame: GeoFrame
    buildings: list[Building]
    pois: list[POI]
    objects: list[StreetObject]
    areas: list[Area]
    network: nx.Graph
    meta: dict[str, Any]


@dataclass
class CityParts:
    """The contents of a bundle, in :class:`~urban_gym.world.city.City`'s constructor order."""

    name: str
    frame: GeoFrame
    buildings: list[Building]
    pois: list[POI]
    objects: list[StreetObject]
    areas: list[Area]
    network: nx.Graph
    meta: dict[str, Any] = field(default_factory=dict)


def _fc(features: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "FeatureCollection",
        "urban_gym:crs": "local metres (x east, y north) from the origin in city.json",
        "features": features,
    }


def _feature(geom, props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "Feature", "geometry": mapping(geom), "properties": props}


def _tuple2(v) -> tuple[float, float]:
    return (float(v[0]), float(v[1]))


def save_bundle(city: CityData, directory: str | Path) -> Path:
    """Write ``city`` into ``directory`` (created if missing); returns the directory."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    head = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "name": city.name,
        "frame": {"lat0": city.frame.lat0, "lon0": city.frame.lon0},
        "meta": city.meta,
    }
    blds = [
        _feature(
            b.polygon,
            {
                "id": b.id,
                "osm_id": b.osm_id,
                "height": b.height,
                "kind": b.kind,
                "levels": b.levels,
                "height_source": b.height_source,
                "name": b.name,
                "tags": b.tags,
            },
        )
        for b in city.buildings
    ]
    pois = [
        _feature(
            Point(p.position),
            {
                "id": p.id,
                "osm_id": p.osm_id,
                "name": p.name,
                "category": p.category,
                "kind": p.kind,
                "aliases": list(p.aliases),
                "tags": p.tags,
                "building_id": p.building_id,
                "facade": [list(p.facade[0]), list(p.facade[1])] if p.facade else None,
                "anchor": list(p.anchor),
                "facing": p.facing,
                "front": list(p.front),
            },
        )
        for p in city.pois
    ]
    objs = [
        _feature(
            Point(o.position), {"id": o.id, "osm_id": o.osm_id, "kind": o.kind, "tags": o.tags}
        )
        for o in city.objects
    ]
    areas = [
        _feature(
            a.polygon,
            {"id": a.id, "osm_id": a.osm_id, "kind": a.kind, "name": a.name, "tags": a.tags},
        )
        for a in city.areas
    ]
    net: list[dict[str, Any]] = []
    for n, data in city.network.nodes(data=True):
        net.append(_feature(Point(data["x"], data["y"]), {"node": n}))
    for u, v, data in city.network.edges(data=True):
        props = {k: val for k, val in data.items() if k != "geometry"}
        props.update({"u": u, "v": v})
        net.append(_feature(data["geometry"], props))
    graph_attrs = dict(city.network.graph)
    try:
        (d / "city.json").write_text(json.dumps(head, ensure_ascii=False, indent=1))
        for fname, feats, extra in (
            ("buildings.geojson", blds, {}),
            ("pois.geojson", pois, {}),
            ("objects.geojson", objs, {}),
            ("areas.geojson", areas, {}),
            ("network.geojson", net, {"urban_gym:graph": graph_attrs}),
        ):
            fc = _fc(feats)
            fc.update(extra)
            (d / fname).write_text(json.dumps(fc, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        raise BundleError(
            f"city {city.name!r} holds data that is not JSON-serialisable: {exc}"
        ) from exc
    return d


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise BundleError(f"{path}: missing bundle file") from exc
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: not valid JSON ({exc})") from exc


def _features(path: Path) -> list[dict[str, Any]]:
    fc = _read_json(path)
    if not isinstance(fc, dict) or fc.get("type") != "FeatureCollection":
        raise BundleError(f"{path}: not a GeoJSON FeatureCollection")
    return fc["features"]


def read_bundle(directory: str | Path) -> CityParts:
    """Read a bundle written by :func:`save_bundle` into its parts
    (:class:`~urban_gym.errors.BundleError` naming the file when one is missing or
    malformed).
    """
    d = Path(directory)
    if not d.is_dir():
        raise BundleError(f"{d}: not a bundle directory")
    head = _read_json(d / "city.json")
    if not isinstance(head, dict) or head.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{d / 'city.json'}: not an urban_gym city bundle")
    if head.get("version") != BUNDLE_VERSION:
        raise BundleError(
            f"{d / 'city.json'}: bundle version {head.get('version')!r} is not supported "
            f"(expected {BUNDLE_VERSION})"
        )
    try:
        frame = GeoFrame(float(head["frame"]["lat0"]), float(head["frame"]["lon0"]))
        buildings = []
        for f in _features(d / "buildings.geojson"):
            p = f["properties"]
            buildings.append(
                Building(
                    p["id"],
                    p["osm_id"],
                    shape(f["geometry"]),
                    p["height"],
                    p["kind"],
                    p["levels"],
                    p["height_source"],
                    p["name"],
                    p["tags"],
                )
            )
        pois = []
        for f in _features(d / "pois.geojson"):
            p = f["properties"]
            c = f["geometry"]["coordinates"]
            pois.append(
                POI(
                    p["id"],
                    p["osm_id"],
                    p["name"],
                    p["category"],
                    p["kind"],
                    _tuple2(c),
                    tuple(p["aliases"]),
                    p["tags"],
                    p["building_id"],
                    (_tuple2(p["facade"][0]), _tuple2(p["facade"][1])) if p["facade"] else None,
                    _tuple2(p["anchor"]),
                    p["facing"],
                    _tuple2(p["front"]),
                )
            )
        objects = [
            StreetObject(
                f["properties"]["id"],
                f["properties"]["osm_id"],
                f["properties"]["kind"],
                _tuple2(f["geometry"]["coordinates"]),
                f["properties"]["tags"],
            )
            for f in _features(d / "objects.geojson")
        ]
        areas = [
            Area(
                f["properties"]["id"],
                f["properties"]["osm_id"],
                f["properties"]["kind"],
                shape(f["geometry"]),
                f["properties"]["name"],
                f["properties"]["tags"],
            )
            for f in _features(d / "areas.geojson")
        ]
        net_fc = _read_json(d / "network.geojson")
        g = nx.Graph(**net_fc.get("urban_gym:graph", {}))
        for f in net_fc["features"]:
            p = dict(f["properties"])
            if f["geometry"]["type"] == "Point":
                x, y = f["geometry"]["coordinates"]
                g.add_node(p["node"], x=float(x), y=float(y))
            else:
                u, v = p.pop("u"), p.pop("v")
                g.add_edge(u, v, geometry=LineString(f["geometry"]["coordinates"]), **p)
    except BundleError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise BundleError(f"{d}: malformed bundle data ({type(exc).__name__}: {exc})") from exc
    return CityParts(head["name"], frame, buildings, pois, objects, areas, g, head.get("meta", {}))
