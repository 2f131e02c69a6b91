"""What OpenStreetMap tags mean for a walker: walkable ways, corridor widths, building
heights, POI categories, street objects and map areas.

Pure functions of a feature's tags (a ``dict[str, str]``), used by the importer
(:mod:`urban_gym.world.osm`). Units: metres.
"""

from __future__ import annotations

import re

from urban_gym.world.city import (
    DEFAULT_BUILDING_HEIGHT_M,
    DEFAULT_HEIGHT_BY_TYPE_M,
    OBJECT_KINDS,
    POI_KEYS,
    STOREY_HEIGHT_M,
)

#: ``highway=*`` values whose ways are walked on.
WALKABLE_HIGHWAYS = frozenset(
    {
        "footway",
        "pedestrian",
        "steps",
        "path",
        "trail",
        "track",
        "bridleway",
        "corridor",
        "platform",
        "living_street",
        "residential",
        "service",
        "unclassified",
        "tertiary",
        "secondary",
        "primary",
        "tertiary_link",
        "secondary_link",
        "primary_link",
        "road",
        "cycleway",
    }
)
_CAR_ROADS = frozenset(
    {
        "living_street",
        "residential",
        "service",
        "unclassified",
        "tertiary",
        "secondary",
        "primary",
        "tertiary_link",
        "secondary_link",
        "primary_link",
        "road",
    }
)

#: Walkable corridor width in metres by kind when no ``width`` tag is mapped. Car roads
#: use ``lanes * 3.25 + 4`` (two 2 m sidewalks) when ``lanes`` is mapped, else the
#: per-``highway`` value in :data:`ROAD_WIDTH_M`.
DEFAULT_WIDTH_M = {
    "footway": 2.5,
    "sidewalk": 2.5,
    "crossing": 3.0,
    "pedestrian": 8.0,
    "steps": 2.5,
    "footbridge": 3.0,
    "path": 1.5,
    "cycleway": 3.0,
    "corridor": 3.0,
    "platform": 3.0,
}
ROAD_WIDTH_M = {
    "primary": 20.0,
    "secondary": 16.0,
    "tertiary": 13.0,
    "unclassified": 10.0,
    "residential": 11.0,
    "living_street": 7.0,
    "service": 6.0,
    "road": 10.0,
    "primary_link": 10.0,
    "secondary_link": 10.0,
    "tertiary_link": 9.0,
}

#: Map areas: ``(key, value) -> "water" | "green"``.
AREA_KINDS: dict[tuple[str, str], str] = {
    ("natural", "water"): "water",
    ("waterway", "riverbank"): "water",
    ("landuse", "reservoir"): "water",
    ("landuse", "basin"): "water",
    ("leisure", "park"): "green",
    ("leisure", "garden"): "green",
    ("leisure", "playground"): "green",
    ("leisure", "common"): "green",
    ("landuse", "grass"): "green",
    ("landuse", "forest"): "green",
    ("landuse", "meadow"): "green",
    ("landuse", "village_green"): "green",
    ("landuse", "recreation_ground"): "green",
    ("landuse", "cemetery"): "green",
    ("landuse", "allotments"): "green",
    ("natural", "wood"): "green",
    ("natural", "scrub"): "green",
    ("natural", "grassland"): "green",
    ("natural", "heath"): "green",
}

#: ``key -> values`` of the tags that make a node a street object.
OBJECT_TAG_KEYS: dict[str, set[str]] = {}
for _k, _v in OBJECT_KINDS:
    OBJECT_TAG_KEYS.setdefault(_k, set()).add(_v)
#: Keys whose areas osmium assembles (buildings, map areas, POI areas).
AREA_FILTER_KEYS = ("building", "natural", "landuse", "leisure", "waterway", *POI_KEYS)
_ALIAS_KEYS = ("alt_name", "short_name", "official_name", "brand", "operator", "old_name")
_NUM = re.compile(r"^\s*([0-9]+(?:[.,][0-9]+)?)\s*(m|meters|metres|ft|')?\s*$", re.I)


def parse_length(value: str | None) -> float | None:
    """Parse an OSM length such as ``"12"``, ``"12.5 m"``, ``"40'"`` into metres."""
    if not value:
        return None
    m = _NUM.match(value)
    if not m:
        return None
    v = float(m.group(1).replace(",", "."))
    unit = (m.group(2) or "m").lower()
    if unit in ("ft", "'"):
        v *= 0.3048
    return v


def building_height(tags: dict[str, str]) -> tuple[float, int | None, str]:
    """Height in metres, number of levels (or None) and where the height came from."""
    levels = None
    lv = parse_length(tags.get("building:levels"))
    if lv is not None and lv > 0:
        levels = max(1, int(round(lv)))
    h = parse_length(tags.get("height"))
    if h is not None and 1.0 <= h <= 500.0:
        return h, levels, "height"
    if levels is not None:
        roof = parse_length(tags.get("roof:levels")) or 0.0
        return (levels + 0.5 * roof) * STOREY_HEIGHT_M, levels, "levels"
    kind = tags.get("building", "yes")
    return DEFAULT_HEIGHT_BY_TYPE_M.get(kind, DEFAULT_BUILDING_HEIGHT_M), None, "default"


def walk_kind(tags: dict[str, str]) -> str | None:
    """The walkable-network kind of a way, or None if people do not walk on it."""
    hw = tags.get("highway")
    if hw not in WALKABLE_HIGHWAYS:
        return None
    foot = tags.get("foot", "")
    access = tags.get("access", "")
    if foot == "no" or (access in ("no", "private") and foot not in ("yes", "designated")):
        return None
    if hw == "cycleway" and foot not in ("yes", "designated", "permissive"):
        return None
    if hw in _CAR_ROADS:
        if tags.get("tunnel") in ("yes",) and foot not in ("yes", "designated"):
            return None
        return "road"
    if hw == "footway":
        fw = tags.get("footway")
        if fw == "crossing":
            return "crossing"
        if fw == "sidewalk":
            return "sidewalk"
        if tags.get("bridge") not in (None, "no"):
            return "footbridge"
        return "footway"
    if hw in ("path", "trail", "track", "bridleway"):
        return "footbridge" if tags.get("bridge") not in (None, "no") else "path"
    return hw  # pedestrian, steps, corridor, platform, cycleway


def is_covered(tags: dict[str, str]) -> bool:
    """Whether a walkable way is sheltered from rain (covered, arcade, indoor corridor)."""
    return (
        tags.get("covered") in ("yes", "arcade", "colonnade", "roof")
        or tags.get("tunnel") in ("building_passage", "yes")
        or tags.get("highway") == "corridor"
        or tags.get("indoor") in ("yes", "corridor")
    )


def walk_width(kind: str, tags: dict[str, str]) -> float:
    """Walkable corridor width in metres (see :data:`DEFAULT_WIDTH_M`)."""
    w = parse_length(tags.get("width"))
    if w is not None and 0.5 <= w <= 60.0:
        return w
    if kind == "road":
        lanes = parse_length(tags.get("lanes"))
        if lanes:
            return lanes * 3.25 + 4.0
        return ROAD_WIDTH_M.get(tags.get("highway", "road"), 10.0)
    return DEFAULT_WIDTH_M.get(kind, 2.5)


def aliases_of(tags: dict[str, str], name: str) -> tuple[str, ...]:
    """Other names of a feature: ``name:*`` values, then alt/short/official names, brand
    and operator; without duplicates and without ``name`` itself.
    """
    seen = {name.casefold()}
    out: list[str] = []
    keys = sorted(k for k in tags if k.startswith("name:")) + list(_ALIAS_KEYS)
    for k in keys:
        v = tags.get(k)
        if v and v.casefold() not in seen:
            seen.add(v.casefold())
            out.append(v)
    return tuple(out)


def poi_category(tags: dict[str, str]) -> tuple[str, str] | None:
    """``(category, kind)`` for a named POI, e.g. ``("shop", "optician")``, else None."""
    if not tags.get("name"):
        return None
    for k in POI_KEYS:
        v = tags.get(k)
        if v and v != "no":
            return k, v
    return None


def object_kind(tags: dict[str, str]) -> str | None:
    """The street-object kind of a node's tags, else None."""
    for (k, v), kind in OBJECT_KINDS.items():
        if tags.get(k) == v:
            return kind
    return None


def area_kind(tags: dict[str, str]) -> str | None:
    """``"water"`` or ``"green"`` for a map area, else None."""
    for (k, v), kind in AREA_KINDS.items():
        if tags.get(k) == v:
            return kind
    return None
