"""Shrink an OpenStreetMap extract to what urban_gym's importer reads.

Keeps walkable highways, buildings, map areas (water, green), named POIs and street
objects, with the nodes and multipolygon members they need; drops every other feature and
the editing metadata (users, changesets, versions, timestamps). Optionally clips to a
bounding box first (features are kept when one of their nodes lies inside).

    python scripts/shrink_osm.py IN.osm.pbf OUT.osm.pbf [--bbox W S E N]

Uses pyosmium (a dependency of urban_gym); the selection rules are the importer's own
(:mod:`urban_gym.world.osm_tags`), so a shrunk file imports to the same world.
"""

from __future__ import annotations

import argparse
import os
import sys

import osmium

from urban_gym.world.osm_tags import (
    AREA_FILTER_KEYS,
    area_kind,
    object_kind,
    poi_category,
    walk_kind,
)


def _wanted_area(tags: dict[str, str]) -> bool:
    return (
        tags.get("building", "no") != "no"
        or area_kind(tags) is not None
        or poi_category(tags) is not None
    )


def _wanted_way(tags: dict[str, str]) -> bool:
    # a closed highway may be an area POI too (e.g. highway=services + amenity=fuel)
    if "highway" in tags and walk_kind(tags) is not None:
        return True
    return any(k in tags for k in AREA_FILTER_KEYS) and _wanted_area(tags)


def _wanted_node(tags: dict[str, str]) -> bool:
    return object_kind(tags) is not None or poi_category(tags) is not None


def _nodes_inside(src: str, bbox: tuple[float, float, float, float]) -> set[int]:
    w, s, e, n = bbox
    inside: set[int] = set()
    for o in osmium.FileProcessor(src, osmium.osm.NODE):
        loc = o.location
        if loc.valid() and w <= loc.lon <= e and s <= loc.lat <= n:
            inside.add(o.id)
    return inside


def _select(src: str, inside: set[int] | None) -> tuple[set[int], set[int], set[int]]:
    """The relations, ways and way nodes to keep (``inside``: the nodes in the bbox)."""
    rels: dict[int, list[int]] = {}
    for r in osmium.FileProcessor(src, osmium.osm.RELATION):
        tags = dict(r.tags)
        if tags.get("type") == "multipolygon" and _wanted_area(tags):
            rels[r.id] = [m.ref for m in r.members if m.type == "w"]
    member_ways = {w for ws in rels.values() for w in ws}
    ways: set[int] = set()
    nodes: set[int] = set()
    for wy in osmium.FileProcessor(src, osmium.osm.WAY):
        refs = [nd.ref for nd in wy.nodes]
        if inside is not None and not any(ref in inside for ref in refs):
            continue
        if wy.id in member_ways or _wanted_way(dict(wy.tags)):
            ways.add(wy.id)
            nodes.update(refs)
    kept = {r for r, ws in rels.items() if any(w in ways for w in ws)}
    return kept, ways, nodes


def shrink(src: str, dst: str, bbox: tuple[float, float, float, float] | None) -> dict:
    """Write ``dst`` holding only what the importer reads from ``src``; returns counts."""
    inside = None if bbox is None else _nodes_inside(src, bbox)
    rels, ways, nodes = _select(src, inside)
    counts = {"nodes": 0, "ways": 0, "relations": 0}
    if os.path.exists(dst):
        os.remove(dst)
    writer = osmium.SimpleWriter(dst)
    try:
        for o in osmium.FileProcessor(src):
            if o.is_node():
                if o.id in nodes or (
                    _wanted_node(dict(o.tags)) and (inside is None or o.id in inside)
                ):
                    loc, tags = o.location, dict(o.tags)
                    writer.add_node(osmium.osm.mutable.Node(id=o.id, location=loc, tags=tags))
                    counts["nodes"] += 1
            elif o.is_way():
                if o.id in ways:
                    refs = [nd.ref for nd in o.nodes]
                    writer.add_way(osmium.osm.mutable.Way(id=o.id, nodes=refs, tags=dict(o.tags)))
                    counts["ways"] += 1
            elif o.is_relation() and o.id in rels:
                members = [(m.type, m.ref, m.role) for m in o.members]
                writer.add_relation(
                    osmium.osm.mutable.Relation(id=o.id, members=members, tags=dict(o.tags))
                )
                counts["relations"] += 1
    finally:
        writer.close()
    return counts


def main(argv: list[str] | None = None) -> int:
    """Command line: shrink IN to OUT, print the counts and sizes."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--bbox", type=float, nargs=4, metavar=("W", "S", "E", "N"))
    a = ap.parse_args(argv)
    counts = shrink(a.src, a.dst, tuple(a.bbox) if a.bbox else None)
    print(
        f"{a.src} ({os.path.getsize(a.src)} bytes) -> {a.dst} "
        f"({os.path.getsize(a.dst)} bytes): {counts}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
