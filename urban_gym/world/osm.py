"""OpenStreetMap import (OSM XML, PBF, OPL, Overpass JSON; plain, gzip or bz2) with pyosmium.

The format is told by the file's first bytes, not its name (:func:`detect_format`): an
Overpass or JOSM download saved as ``export``, ``city.xml`` or ``map`` loads like an
``.osm`` file. Overpass JSON (``[out:json]``, also ``.json.gz``) is converted to OSM XML
in memory (:mod:`urban_gym.world.overpass`) and then read by the same pipeline, so it
gives the same City as the same data in XML.

One streaming pass with node locations and area assembly collects

* buildings (closed ways and multipolygon relations tagged ``building=*``; building parts
  are ignored), split into their polygon parts;
* the walkable network (see :data:`~urban_gym.world.osm_tags.WALKABLE_HIGHWAYS` and
  :func:`~urban_gym.world.osm_tags.walk_kind`), split at shared nodes; a way whose nodes
  fall outside the extract is cut into its complete runs;
* POIs: every named feature with a ``shop``, ``amenity``, ``tourism``, ``leisure`` or
  ``office`` key, node or area;
* street objects from node tags (:data:`urban_gym.world.city.OBJECT_KINDS`);
* water and green areas for the map (:data:`~urban_gym.world.osm_tags.AREA_KINDS`).

What the tags mean (walkability, widths, heights, categories) is
:mod:`urban_gym.world.osm_tags`.

The sea is mapped in OSM as coastline ways, not polygons, and is not imported.
Coordinates are projected into a :class:`~urban_gym.world.geo.GeoFrame` centred on the
bounding box of the imported data (or the requested ``bbox``).

Bad coordinates. A coordinate osmium cannot parse (``lat="abc"``, ``lon=""``) stops the
import with a :class:`~urban_gym.errors.CityLoadError` naming the file, the line and the
node: the file is malformed and osmium cannot read past it. A well-formed coordinate out
of range (``lat="95"``) is skipped with a warning instead: the node is treated as
missing (a way is cut there, as at the edge of an extract; a building or area drawn with
it, or a POI at it, is left out), the import goes on, and a
:class:`~urban_gym.errors.CityLoadWarning` names the file, the nodes, their values and
what was lost (``meta["stats"]["nodes_bad_location"]`` counts them). Such a node that no
imported feature uses is not looked at, and an untagged member way of a multipolygon
relation is not checked (osmium drops that area without a word). Turn the warning into
an error with ``warnings.simplefilter("error", CityLoadWarning)``.
"""

from __future__ import annotations

import bz2
import gzip
import re
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import osmium
import shapely
from shapely.geometry import LineString

from urban_gym.errors import CityLoadError, CityLoadWarning, CityNotFoundError
from urban_gym.world.assemble import assemble_city, make_valid_polygons
from urban_gym.world.city import City
from urban_gym.world.features import POI, Area, Building, StreetObject
from urban_gym.world.geo import GeoFrame
from urban_gym.world.jsondata import show
from urban_gym.world.osm_tags import (
    AREA_FILTER_KEYS,
    OBJECT_TAG_KEYS,
    aliases_of,
    area_kind,
    building_height,
    is_covered,
    object_kind,
    poi_category,
    walk_kind,
    walk_width,
    way_elevation,
)
from urban_gym.world.overpass import OverpassData, read_overpass_json

#: Bump when the importer's output changes, so cached worlds are rebuilt.
#: 3: ``meta["format"]``, out-of-range coordinates counted in ``meta["stats"]``.
#: 4: edges carry ``sidewalk``, ``layer``, ``level``, ``bridge`` and ``tunnel``.
IMPORTER_VERSION = 4

#: Format (as :func:`detect_format` names it) by file-name suffix, for files whose first
#: bytes say nothing (the longest matching suffix wins).
_FORMAT_BY_SUFFIX = {
    ".osm": "osm",
    ".osm.xml": "osm",
    ".xml": "osm",
    ".osm.gz": "osm.gz",
    ".osm.bz2": "osm.bz2",
    ".osm.pbf": "pbf",
    ".pbf": "pbf",
    ".opl": "opl",
    ".json": "json",
    ".osm.json": "json",
    ".json.gz": "json.gz",
    ".json.bz2": "json.bz2",
}
#: File-name suffixes known to hold OSM data; other names are read by their content.
SUPPORTED_SUFFIXES = tuple(_FORMAT_BY_SUFFIX)
_UNDEFINED = osmium.osm.Location().x  # the coordinate of a node not in the file


def check_bbox(bbox) -> tuple[float, float, float, float]:
    """Validate ``(west, south, east, north)`` in degrees."""
    try:
        w, s, e, n = (float(v) for v in bbox)
    except (TypeError, ValueError) as exc:
        raise CityLoadError(
            f"bbox={bbox!r} must be four numbers (west, south, east, north) in degrees"
        ) from exc
    if not (-180 <= w <= 180 and -180 <= e <= 180 and -90 <= s <= 90 and -90 <= n <= 90):
        raise CityLoadError(f"bbox={bbox!r} lies outside longitude/latitude ranges")
    if not (w < e and s < n):
        raise CityLoadError(
            f"bbox={bbox!r} is empty: it needs west < east and south < north (degrees)"
        )
    return w, s, e, n


class _Collector:
    """Raw features in longitude/latitude, gathered in one pass."""

    def __init__(self, bbox):
        self.bbox = bbox
        self.buildings: list[tuple[str, bytes, dict[str, str]]] = []
        self.areas: list[tuple[str, str, bytes, dict[str, str]]] = []
        self.area_pois: list[tuple[str, bytes, dict[str, str], bool]] = []
        self.node_pois: list[tuple[str, float, float, dict[str, str]]] = []
        self.objects: list[tuple[str, str, float, float, dict[str, str]]] = []
        self.ways: list[tuple[int, list[int], list[float], list[float], dict[str, str]]] = []
        self.stats: Counter[str] = Counter()
        #: node id -> (lat, lon, what used it) for coordinates out of range
        self.bad_nodes: dict[int, tuple[Any, Any, str]] = {}
        self._wkb = osmium.geom.WKBFactory()

    def bad_location(self, ref: int, loc, user: str) -> bool:
        """Record ``loc`` if it is a coordinate out of range (not merely a node missing
        from the file); True if it was.
        """
        if loc.x == _UNDEFINED or loc.y == _UNDEFINED:
            return False
        if ref not in self.bad_nodes:
            self.bad_nodes[ref] = (loc.lat_without_check(), loc.lon_without_check(), user)
            self.stats["nodes_bad_location"] += 1
        return True

    def inside(self, lon: float, lat: float) -> bool:
        if self.bbox is None:
            return True
        w, s, e, n = self.bbox
        return w <= lon <= e and s <= lat <= n

    def node(self, n) -> None:
        t = n.tags
        if "name" not in t and not any(t.get(k) in vals for k, vals in OBJECT_TAG_KEYS.items()):
            return
        tags = dict(t)
        loc = n.location
        if not loc.valid():
            if self.bad_location(n.id, loc, f"POI or street object {tags.get('name', '')}".strip()):
                self.stats["nodes_dropped_bad_location"] += 1
            return
        lon, lat = loc.lon, loc.lat
        if not self.inside(lon, lat):
            return
        osm_id = f"n{n.id}"
        kind = object_kind(tags)
        if kind is not None:
            self.objects.append((osm_id, kind, lon, lat, tags))
        if poi_category(tags) is not None:
            self.node_pois.append((osm_id, lon, lat, tags))

    def way(self, w) -> None:
        tags = w.tags
        if "highway" not in tags:
            if any(k in tags for k in AREA_FILTER_KEYS):
                self._check_area_way(w)
            return
        tags = dict(tags)
        if walk_kind(tags) is None:
            return
        ids: list[int] = []
        lons: list[float] = []
        lats: list[float] = []
        for nd in w.nodes:
            loc = nd.location
            if loc.valid() and self.inside(loc.lon, loc.lat):
                ids.append(nd.ref)
                lons.append(loc.lon)
                lats.append(loc.lat)
            else:
                ids.append(0)  # 0 marks a missing node: the way is cut there
                lons.append(np.nan)
                lats.append(np.nan)
                if not loc.valid() and self.bad_location(nd.ref, loc, f"way {w.id}"):
                    self.stats["ways_cut_bad_location"] += 1
                else:
                    self.stats["way_nodes_missing"] += 1
        self.ways.append((w.id, ids, lons, lats, tags))

    def _check_area_way(self, w) -> None:
        """Note out-of-range nodes of a way that may outline a building or area (osmium
        then cannot assemble the area and drops it without a word).
        """
        bad = False
        for nd in w.nodes:
            loc = nd.location
            if not loc.valid() and self.bad_location(nd.ref, loc, f"way {w.id}"):
                bad = True
        if bad:
            self.stats["areas_dropped_bad_location"] += 1

    def area(self, a) -> None:
        tags = dict(a.tags)
        osm_id = ("w" if a.from_way() else "r") + str(a.orig_id())
        try:
            wkb = self._wkb.create_multipolygon(a)
        except (RuntimeError, osmium.InvalidLocationError):
            self.stats["areas_broken"] += 1
            return
        is_building = tags.get("building", "no") != "no"
        if is_building:
            self.buildings.append((osm_id, wkb, tags))
        else:
            kind = area_kind(tags)
            if kind is not None:
                self.areas.append((osm_id, kind, wkb, tags))
        if poi_category(tags) is not None:
            self.area_pois.append((osm_id, wkb, tags, is_building))


def detect_format(path: str | Path) -> str | None:
    """The OSM format of a file told from its first bytes: ``"osm"`` (XML), ``"pbf"``,
    ``"opl"`` or ``"json"`` (Overpass JSON), with ``".gz"`` or ``".bz2"`` appended when
    the file is gzip or bzip2 compressed; None when the content is none of these.

    Signs looked for: the PBF ``OSMHeader`` blob, an XML document whose first element is
    ``<osm`` (after the declaration and comments), a JSON object, an OPL line
    (``n123 v1 ...``); the gzip (``1f 8b``) and bzip2 (``BZh``) magic numbers.
    """
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError:
        return None
    for magic, suffix, opener in ((b"\x1f\x8b", "gz", gzip.open), (b"BZh", "bz2", bz2.open)):
        if head.startswith(magic):
            try:
                with opener(path, "rb") as f:
                    inner = f.read(_SNIFF_BYTES)
            except (OSError, EOFError, ValueError):
                return None
            kind = _sniff(inner)
            return f"{kind}.{suffix}" if kind in ("osm", "json", "opl") else None
    return _sniff(head)


_SNIFF_BYTES = 4096
_XML_PROLOG = re.compile(
    rb"\s*(<\?xml[^>]*\?>\s*|<!--.*?-->\s*|<!DOCTYPE[^>]*>\s*)*<osm[\s>]", re.S
)
_OPL_LINE = re.compile(rb"[nwrc]-?[0-9]+( |$)")


def _sniff(head: bytes) -> str | None:
    if head[4:6] == b"\x0a\x09" and head[6:15] == b"OSMHeader":
        return "pbf"
    text = head.removeprefix(b"\xef\xbb\xbf")
    if _XML_PROLOG.match(text):
        return "osm"
    stripped = text.lstrip()
    if stripped.startswith(b"{"):
        return "json"
    if _OPL_LINE.match(stripped):
        return "opl"
    return None


def _format_of(path: Path) -> str:
    """The format to read ``path`` as: by content, else by suffix, else an error."""
    fmt = detect_format(path)
    if fmt is not None:
        return fmt
    lname = path.name.lower()
    for suffix in sorted(_FORMAT_BY_SUFFIX, key=len, reverse=True):
        if lname.endswith(suffix):
            return _FORMAT_BY_SUFFIX[suffix]  # osmium will say what is wrong with it
    try:
        with open(path, "rb") as f:
            start = f.read(16)
    except OSError as exc:
        raise CityLoadError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    raise CityLoadError(
        f"{path}: unsupported file type: the content is not OpenStreetMap XML, PBF, OPL or "
        f"Overpass JSON (plain, gzip or bz2), and the name ends in none of "
        f"{', '.join(SUPPORTED_SUFFIXES)}; the file starts with {start!r}"
    )


def _read(path: Path, bbox, fmt: str) -> _Collector:
    col = _Collector(bbox)
    overpass: OverpassData | None = None
    if fmt.startswith("json"):
        compression = fmt.partition(".")[2] or None
        overpass = read_overpass_json(path, compression)
        if overpass.remark:
            warnings.warn(
                f"{path}: Overpass remarks {overpass.remark!r}: the data may be incomplete",
                CityLoadWarning,
                stacklevel=3,
            )
        for oid, lat, lon, where in overpass.bad_coordinates:
            col.bad_nodes[oid] = (lat, lon, where)
            col.stats["nodes_bad_location"] += 1
        source: osmium.io.File | osmium.io.FileBuffer = osmium.io.FileBuffer(overpass.xml, "osm")
    else:
        source = osmium.io.File(str(path), fmt)
    try:
        fp = (
            osmium.FileProcessor(source)
            .with_locations()
            .with_areas(osmium.filter.KeyFilter(*AREA_FILTER_KEYS))
            .with_filter(osmium.filter.EmptyTagFilter())
        )
        # osmium types the objects as Node | Way | Relation | Area | Changeset; an extract
        # holds no changesets (which have no is_node())
        for obj in fp:
            if obj.is_node():  # type: ignore[union-attr]
                col.node(obj)
            elif obj.is_way():  # type: ignore[union-attr]
                col.way(obj)
            elif obj.is_area():  # type: ignore[union-attr]
                col.area(obj)
    except osmium.InvalidLocationError as exc:
        where = _find_bad_coordinate(path, fmt, str(exc)) if overpass is None else ""
        raise CityLoadError(
            f"{path}{where}: a node's coordinate cannot be read ({exc}); "
            'coordinates must be decimal degrees such as lat="60.1699"'
        ) from None
    except (RuntimeError, ValueError) as exc:
        raise CityLoadError(f"{path}: cannot read as OpenStreetMap data ({exc})") from exc
    if col.bad_nodes:
        _warn_bad_nodes(path, col)
    return col


_COORD_ATTR = re.compile(r"""\b(lat|lon)\s*=\s*(["'])(.*?)\2""")
_NODE_ID = re.compile(r"""<node\b[^>]*?\bid\s*=\s*["'](-?[0-9]+)["']""")
_COORD_OK = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE]-[0-9]+)?")


def _find_bad_coordinate(path: Path, fmt: str, message: str) -> str:
    """``", line N (node ID: lat='abc')"`` for the first coordinate attribute of an XML
    file that osmium cannot parse; ``""`` when none is found (or for other formats).
    """
    if not fmt.startswith("osm"):
        return ""
    fragment = message.split(":", 1)[1].strip().strip("'") if ":" in message else ""
    openers: dict[str, Callable[..., Any]] = {"osm": open, "osm.gz": gzip.open, "osm.bz2": bz2.open}
    opener = openers[fmt]
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for no, line in enumerate(f, start=1):
                for m in _COORD_ATTR.finditer(line):
                    attr, value = m.group(1), m.group(3)
                    if _COORD_OK.fullmatch(value) and not (fragment and value.endswith(fragment)):
                        continue
                    node = _NODE_ID.search(line)
                    who = f"node {node.group(1)}: " if node else ""
                    return f", line {no} ({who}{attr}={value!r})"
    except (OSError, EOFError, ValueError):
        pass
    return ""


def _degrees(value: Any) -> str:
    """A coordinate for a message: up to 10 significant digits; a huge integer (from
    JSON) by its size.
    """
    if isinstance(value, int) and abs(value).bit_length() > 64:
        return show(value)
    return f"{float(value):.10g}"


def _warn_bad_nodes(path: Path, col: _Collector) -> None:
    bad = col.bad_nodes
    shown = "; ".join(
        f"node {ref} lat={_degrees(lat)} lon={_degrees(lon)} ({user})"
        for ref, (lat, lon, user) in list(bad.items())[:5]
    )
    more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
    lost = [
        f"{col.stats[k]} {what}"
        for k, what in (
            ("ways_cut_bad_location", "place(s) where a walkable way was cut"),
            ("areas_dropped_bad_location", "building or area outline(s) left out"),
            ("nodes_dropped_bad_location", "POI or street object node(s) left out"),
        )
        if col.stats[k]
    ]
    warnings.warn(
        f"{path}: {len(bad)} node(s) with coordinates outside -90..90 / -180..180 degrees "
        f"were skipped: {shown}{more}" + (f"; {', '.join(lost)}" if lost else ""),
        CityLoadWarning,
        stacklevel=4,
    )


def import_osm(
    path: str | Path, bbox: Sequence[float] | None = None, name: str | None = None
) -> City:
    """Import an OpenStreetMap file into a :class:`City`.

    Args:
        path: an OpenStreetMap file: OSM XML, PBF, OPL or Overpass JSON, plain or gzip/bz2
            compressed, whatever its name (see :func:`detect_format`).
        bbox: optional ``(west, south, east, north)`` in degrees; only features inside are
            kept (ways are cut at the box).
        name: the city's name (default: the file name without suffixes).

    Raises:
        CityLoadError: missing file, unreadable or non-OSM file, a coordinate that cannot
            be parsed (named with its line and node), empty bbox, no buildings or no
            walkable ways.

    Warns:
        CityLoadWarning: nodes with coordinates out of range were skipped (see the module
            docstring), or an Overpass response remarks that it is incomplete.
    """
    path = Path(path)
    if not path.exists():
        raise CityNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise CityLoadError(f"{path}: not a file")
    fmt = _format_of(path)
    if bbox is not None:
        bbox = check_bbox(bbox)
    col = _read(path, bbox, fmt)
    source = str(path) if bbox is None else f"{path} within bbox {bbox}"
    if not col.buildings:
        raise CityLoadError(f"{source}: no buildings found (is this a city extract?)")
    if not col.ways:
        raise CityLoadError(f"{source}: no walkable ways found (footways, pedestrian or car roads)")

    # geometry in lon/lat -> local metres
    b_geoms = shapely.from_wkb([w for _, w, _ in col.buildings])
    a_geoms = shapely.from_wkb([w for _, _, w, _ in col.areas]) if col.areas else np.array([])
    p_geoms = (
        shapely.from_wkb([w for _, w, _, _ in col.area_pois]) if col.area_pois else np.array([])
    )
    frame = _local_frame(col, b_geoms, bbox)

    def project(coords: np.ndarray) -> np.ndarray:
        x, y = frame.to_xy(coords[:, 1], coords[:, 0])
        return np.stack([x, y], axis=1)

    b_geoms = shapely.transform(b_geoms, project)
    if len(a_geoms):
        a_geoms = shapely.transform(a_geoms, project)
    if len(p_geoms):
        p_geoms = shapely.transform(p_geoms, project)

    buildings, building_index = _buildings(col, b_geoms, frame, bbox)
    areas = _areas(col, a_geoms)
    objects = _street_objects(col, frame)
    pois = _node_pois(col, frame)
    _add_area_pois(pois, col, p_geoms, frame, bbox, buildings, building_index)
    # Area POIs that are not buildings (parks, squares) must not be moved onto a
    # building that happens to stand inside them.
    no_building = {p.id for p in pois if p.osm_id[0] in "wr" and p.building_id is None}

    network = _build_network(col.ways, frame, col.stats)
    meta: dict[str, Any] = {
        "source": str(path),
        "format": fmt,
        "bbox": list(bbox) if bbox is not None else None,
        "importer_version": IMPORTER_VERSION,
        "stats": dict(col.stats),
        "attribution": "© OpenStreetMap contributors, ODbL 1.0",
    }
    city = assemble_city(
        name or _stem(path),
        frame,
        buildings,
        pois,
        objects,
        areas,
        network,
        meta,
        source,
        no_building=no_building,
    )
    return city


def _local_frame(col: _Collector, b_geoms: np.ndarray, bbox) -> GeoFrame:
    """The frame centred on ``bbox`` (degrees), or on the bounding box of the buildings
    and walkable ways when there is none.
    """
    if bbox is not None:
        w, s, e, n = bbox
        lon0, lat0 = (w + e) / 2.0, (s + n) / 2.0
    else:
        lo = [shapely.bounds(b_geoms)]
        way_lon = np.concatenate([np.asarray(x[2]) for x in col.ways])
        way_lat = np.concatenate([np.asarray(x[3]) for x in col.ways])
        b = np.concatenate(lo, axis=0)
        west = min(np.nanmin(b[:, 0]), np.nanmin(way_lon))
        east = max(np.nanmax(b[:, 2]), np.nanmax(way_lon))
        south = min(np.nanmin(b[:, 1]), np.nanmin(way_lat))
        north = max(np.nanmax(b[:, 3]), np.nanmax(way_lat))
        lon0, lat0 = (west + east) / 2.0, (south + north) / 2.0
    return GeoFrame(round(float(lat0), 7), round(float(lon0), 7))


def _buildings(
    col: _Collector, b_geoms: np.ndarray, frame: GeoFrame, bbox
) -> tuple[list[Building], dict[str, int]]:
    """One :class:`Building` per valid polygon part (footprints in metres), and the index
    of each OSM feature's first part; with ``bbox``, only footprints centred inside it.
    """
    buildings: list[Building] = []
    building_index: dict[str, int] = {}
    if bbox is not None:
        keep_b = _centroids_inside(b_geoms, frame, bbox)
    else:
        keep_b = np.ones(len(b_geoms), dtype=bool)
    for (osm_id, _, tags), parts, keep in zip(col.buildings, make_valid_polygons(b_geoms), keep_b):
        if not keep or not parts:
            continue
        h, levels, src = building_height(tags)
        building_index.setdefault(osm_id, len(buildings))
        for poly in parts:
            buildings.append(
                Building(
                    id=len(buildings),
                    osm_id=osm_id,
                    polygon=poly,
                    height=h,
                    kind=tags.get("building", "yes"),
                    levels=levels,
                    height_source=src,
                    name=tags.get("name"),
                    tags=tags,
                )
            )
    return buildings, building_index


def _areas(col: _Collector, a_geoms: np.ndarray) -> list[Area]:
    """One :class:`Area` per valid polygon part of the water and green areas (metres)."""
    areas: list[Area] = []
    for (osm_id, kind, _, tags), parts in zip(col.areas, make_valid_polygons(a_geoms)):
        for poly in parts:
            areas.append(Area(len(areas), osm_id, kind, poly, tags.get("name"), tags))
    return areas


def _street_objects(col: _Collector, frame: GeoFrame) -> list[StreetObject]:
    """The street objects, at their positions (metres)."""
    objects: list[StreetObject] = []
    if col.objects:
        lon = np.array([o[2] for o in col.objects])
        lat = np.array([o[3] for o in col.objects])
        ox, oy = frame.to_xy(lat, lon)
        for (osm_id, kind, _, _, tags), x, y in zip(col.objects, ox.tolist(), oy.tolist()):
            objects.append(StreetObject(len(objects), osm_id, kind, (x, y), tags))
    return objects


def _node_pois(col: _Collector, frame: GeoFrame) -> list[POI]:
    """The POIs mapped as nodes, at their positions (metres)."""
    pois: list[POI] = []
    if col.node_pois:
        lon = np.array([p[1] for p in col.node_pois])
        lat = np.array([p[2] for p in col.node_pois])
        px, py = frame.to_xy(lat, lon)
        for (osm_id, _, _, tags), x, y in zip(col.node_pois, px.tolist(), py.tolist()):
            cat, kind = poi_category(tags)  # type: ignore[misc]
            pois.append(
                POI(
                    len(pois),
                    osm_id,
                    tags["name"],
                    cat,
                    kind,
                    (x, y),
                    aliases_of(tags, tags["name"]),
                    tags,
                )
            )
    return pois


def _add_area_pois(
    pois: list[POI],
    col: _Collector,
    p_geoms: np.ndarray,
    frame: GeoFrame,
    bbox,
    buildings: list[Building],
    building_index: dict[str, int],
) -> None:
    """Append the POIs mapped as areas: a building's at a point of its (first) footprint,
    with its ``building_id``; another area's (park, square) at a point inside it, kept
    only inside ``bbox``.
    """
    for (osm_id, _, tags, is_building), geom in zip(col.area_pois, p_geoms):
        if geom is None or geom.is_empty:
            continue
        if is_building and osm_id not in building_index:
            continue  # a building outside the bbox or degenerate
        cat, kind = poi_category(tags)  # type: ignore[misc]
        rp: Any = geom.representative_point() if not is_building else None
        if is_building:
            bid = building_index[osm_id]
            rp = buildings[bid].polygon.representative_point()
        elif bbox is not None and not _inside_local(rp, frame, bbox):
            continue
        pois.append(
            POI(
                len(pois),
                osm_id,
                tags["name"],
                cat,
                kind,
                (rp.x, rp.y),
                aliases_of(tags, tags["name"]),
                tags,
                building_id=building_index[osm_id] if is_building else None,
            )
        )


def _stem(path: Path) -> str:
    n = path.name
    for s in sorted(SUPPORTED_SUFFIXES, key=len, reverse=True):
        if n.lower().endswith(s):
            return n[: -len(s)]
    return path.stem


def _inside_local(pt, frame: GeoFrame, bbox) -> bool:
    lat, lon = frame.to_latlon(pt.x, pt.y)
    w, s, e, n = bbox
    return w <= lon <= e and s <= lat <= n


def _centroids_inside(geoms, frame: GeoFrame, bbox) -> np.ndarray:
    c = shapely.get_coordinates(shapely.centroid(geoms))
    lat, lon = frame.to_latlon(c[:, 0], c[:, 1])
    w, s, e, n = bbox
    return (lon >= w) & (lon <= e) & (lat >= s) & (lat <= n)


def _build_network(ways, frame: GeoFrame, stats: Counter) -> nx.Graph:
    """Split walkable ways at shared nodes into network edges with geometry."""
    use: Counter[int] = Counter()
    for _, ids, _, _, _ in ways:
        for i in ids:
            if i:
                use[i] += 1
    all_lon = np.concatenate([np.asarray(w[2], dtype=float) for w in ways])
    all_lat = np.concatenate([np.asarray(w[3], dtype=float) for w in ways])
    ok = ~np.isnan(all_lon)
    X = np.full(all_lon.shape, np.nan)
    Y = np.full(all_lon.shape, np.nan)
    X[ok], Y[ok] = frame.to_xy(all_lat[ok], all_lon[ok])
    g = nx.Graph()
    pos = 0
    for way_id, ids, _, _, tags in ways:
        n = len(ids)
        xs = X[pos : pos + n]
        ys = Y[pos : pos + n]
        pos += n
        kind = walk_kind(tags)
        assert kind is not None
        attrs = {
            "kind": kind,
            "highway": tags.get("highway", ""),
            "covered": is_covered(tags),
            "width": walk_width(kind, tags),
            "name": tags.get("name"),
            "osm_id": f"w{way_id}",
            **way_elevation(tags),
        }
        # runs of present nodes
        run: list[int] = []
        for k in range(n + 1):
            if k < n and ids[k]:
                run.append(k)
                continue
            if len(run) >= 2:
                _add_run(g, run, ids, xs, ys, use, attrs, stats)
            run = []
    return g


def _add_run(g, run, ids, xs, ys, use, attrs, stats) -> None:
    start = 0
    for j in range(1, len(run)):
        k = run[j]
        if j == len(run) - 1 or use[ids[k]] > 1:
            seg = run[start : j + 1]
            _add_edge(g, [ids[i] for i in seg], xs[seg], ys[seg], attrs, stats)
            start = j


def _add_edge(g, nids, xs, ys, attrs, stats) -> None:
    u, v = nids[0], nids[-1]
    if u == v or g.has_edge(u, v):
        # a loop or a second edge between the same nodes: split it at an interior node,
        # inserting a synthetic midpoint node (negative id) when it has none
        if len(nids) < 3:
            if u == v:
                stats["degenerate_loops_dropped"] += 1
                return
            stats["parallel_edges_split"] += 1
            mid = -(g.graph.setdefault("_synthetic", 0) + 1)
            g.graph["_synthetic"] = -mid
            nids = [u, mid, v]
            xs = np.array([xs[0], (xs[0] + xs[-1]) / 2.0, xs[-1]])
            ys = np.array([ys[0], (ys[0] + ys[-1]) / 2.0, ys[-1]])
        m = len(nids) // 2
        _add_edge(g, nids[: m + 1], xs[: m + 1], ys[: m + 1], attrs, stats)
        _add_edge(g, nids[m:], xs[m:], ys[m:], attrs, stats)
        return
    coords = np.stack([xs, ys], axis=1)
    line = LineString(coords)
    if line.length <= 0:
        stats["zero_length_edges_dropped"] += 1
        return
    g.add_node(u, x=float(xs[0]), y=float(ys[0]))
    g.add_node(v, x=float(xs[-1]), y=float(ys[-1]))
    g.add_edge(u, v, geometry=line, start=u, length=float(line.length), **attrs)
