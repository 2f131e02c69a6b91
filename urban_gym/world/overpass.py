"""Overpass API JSON (``[out:json]``) read into OSM XML for the osmium import.

The Overpass API (and the OSM API's ``.json`` endpoints) answer with one object whose
``elements`` list holds the data (see the OSM wiki page "OSM JSON" and the Overpass API
user's manual, "Data Formats" and "Geometries")::

    {"version": 0.6, "generator": "Overpass API ...", "osm3s": {...},
     "elements": [
       {"type": "node", "id": 1, "lat": 60.17, "lon": 24.94, "tags": {"amenity": "cafe"}},
       {"type": "way", "id": 2, "nodes": [1, 3, 4], "tags": {"highway": "footway"},
        "geometry": [{"lat": ..., "lon": ...}, ...]},          # only with ``out geom``
       {"type": "relation", "id": 5, "tags": {"type": "multipolygon", "building": "yes"},
        "members": [{"type": "way", "ref": 2, "role": "outer",
                     "geometry": [{"lat": ..., "lon": ...}, ...]}]}]}

What is read:

* nodes with ``lat``/``lon`` (nodes without coordinates, from ``out ids``/``out tags``,
  are ignored) and ``tags``;
* ways with ``nodes`` and/or ``geometry`` (``out geom``). With both, a node that is not
  itself in the file gets its coordinates from the geometry; with ``geometry`` only, nodes
  are made up from the coordinates (equal coordinates share one node, so ways still join);
  a ``null`` geometry entry (outside the bbox of ``out geom(bbox)``) is a missing node, as
  at the edge of an extract;
* relations with ``members`` (``type``, ``ref``, ``role``); a way member that is not in the
  file but carries ``geometry`` (``out geom`` on relations) becomes a way of its own, and
  a node member with ``lat``/``lon`` a node;
* other element types (``area``, ``count``, ...) are skipped. A ``remark`` (Overpass
  reports time-outs and memory exhaustion there) is returned: the data may be incomplete.

The result is OSM XML, so Overpass JSON and ``.osm`` XML go through one and the same
importer (locations, multipolygon assembly, every tag rule) and give the same City.
Coordinates are passed on digit for digit (JSON numbers are read as decimals), so a
coordinate is rounded exactly as the same number in XML is. A coordinate outside
-90..90 / -180..180 is reported (see :class:`OverpassData`) and the importer skips its
node as it does in XML; a
value that is not a number, or a malformed element, raises
:class:`~urban_gym.errors.CityLoadError` naming the element (``elements[12] (way 345)``).
"""

from __future__ import annotations

import bz2
import gzip
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from urban_gym.errors import CityLoadError
from urban_gym.world.jsondata import MAX_INT, show

#: Characters XML 1.0 does not allow; replaced by U+FFFD in tag keys and values.
_XML_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass
class OverpassData:
    """Overpass JSON turned into OSM XML.

    Attributes:
        xml: the OSM XML document (UTF-8 bytes) for ``osmium.io.FileBuffer(xml, "osm")``.
        bad_coordinates: ``(node id, lat, lon, where)`` of nodes whose coordinate lies
            outside -90..90 / -180..180 degrees (the importer skips them, as in XML).
        remark: the response's ``remark`` (an Overpass error such as a time-out), or None.
        counts: elements read by type, elements skipped, nodes made up from geometry.
    """

    xml: bytes
    bad_coordinates: list[tuple[int, Any, Any, str]] = field(default_factory=list)
    remark: str | None = None
    counts: dict[str, int] = field(default_factory=dict)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_overpass_json(path: Path, compression: str | None = None) -> OverpassData:
    """Read an Overpass JSON file (optionally ``"gz"`` or ``"bz2"`` compressed).

    Raises:
        CityLoadError: unreadable file, not JSON, not an object with an ``elements`` list,
            a malformed element (named by its index, type and id).
    """
    openers: dict[str | None, Callable[..., Any]] = {None: open, "gz": gzip.open, "bz2": bz2.open}
    opener = openers[compression]
    try:
        with opener(path, "rb") as f:
            raw = f.read()
        text = raw.decode("utf-8-sig")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise CityLoadError(f"{path}: cannot read as Overpass JSON ({exc})") from exc
    try:
        doc = json.loads(text, parse_float=Decimal, parse_constant=_reject_constant)
    except RecursionError:
        raise CityLoadError(f"{path}: not Overpass JSON (nested too deeply)") from None
    except ValueError as exc:  # JSONDecodeError, NaN, an integer of over 4300 digits
        raise CityLoadError(f"{path}: not Overpass JSON ({str(exc).split(';')[0]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("elements"), list):
        raise CityLoadError(
            f"{path}: not Overpass JSON: expected an object with an 'elements' list "
            "(GeoJSON is not read; export the raw OSM data with [out:json] or as .osm)"
        )
    return _Converter(path).run(doc)


class _Converter:
    """One pass over ``elements`` into node, way and relation tables, then XML."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.nodes: dict[int, tuple[Any, Any]] = {}  # id -> (lat, lon)
        self.node_tags: dict[int, dict[str, str]] = {}
        self.ways: dict[int, list[int]] = {}
        self.way_tags: dict[int, dict[str, str]] = {}
        self.relations: dict[int, list[tuple[str, int, str]]] = {}
        self.relation_tags: dict[int, dict[str, str]] = {}
        # nodes known only from a geometry, and way members known only from theirs: added
        # after all elements are read, so that the elements themselves win
        self.geometry_nodes: list[tuple[int, tuple[Any, Any], str]] = []
        self.member_ways: list[tuple[int, list, str]] = []
        self.bad: list[tuple[int, Any, Any, str]] = []
        self.bad_ids: set[int] = set()
        self.counts: dict[str, int] = {"node": 0, "way": 0, "relation": 0, "skipped": 0}
        self.made_up: dict[tuple[int, int], int] = {}
        self.next_id = 0

    # ----------------------------------------------------------------- checks
    def fail(self, where: str, msg: str) -> CityLoadError:
        return CityLoadError(f"{self.path}: {where}: {msg}")

    def osm_id(self, value: Any, where: str, what: str = "id") -> int:
        if isinstance(value, bool) or not isinstance(value, int) or abs(value) > MAX_INT:
            raise self.fail(where, f"{what}={show(value)} must be a 64-bit integer")
        return value

    def tags(self, el: dict, where: str) -> dict[str, str]:
        tags = el.get("tags")
        if tags is None:
            return {}
        if not isinstance(tags, dict):
            raise self.fail(where, f"tags={show(tags)} must be an object")
        for k, v in tags.items():
            if not isinstance(v, str):
                raise self.fail(where, f"tags.{k}={show(v)} must be a string")
        return tags

    def coordinate(self, value: Any, name: str, where: str) -> Decimal | int:
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise self.fail(where, f"{name}={show(value)} is not a number")
        if isinstance(value, Decimal) and not value.is_finite():
            raise self.fail(where, f"{name}={value} is not a finite number")
        return value

    def point(self, obj: Any, where: str) -> tuple[Any, Any] | None:
        """``(lat, lon)`` of a ``{"lat", "lon"}`` object; None for ``null``."""
        if obj is None:
            return None
        if not isinstance(obj, dict) or "lat" not in obj or "lon" not in obj:
            raise self.fail(where, f"{show(obj)} must be an object with lat and lon")
        lat = self.coordinate(obj["lat"], "lat", where)
        return lat, self.coordinate(obj["lon"], "lon", where)

    # ----------------------------------------------------------------- elements
    def run(self, doc: dict) -> OverpassData:
        elements = doc["elements"]
        self.next_id = max(0, _highest_node_id(elements))
        for i, el in enumerate(elements):
            if not isinstance(el, dict):
                raise self.fail(f"elements[{i}]", f"{show(el)} is not an object")
            kind = el.get("type")
            if kind not in ("node", "way", "relation"):
                self.counts["skipped"] += 1
                continue
            where = f"elements[{i}] ({kind} {show(el.get('id'))})"
            oid = self.osm_id(el.get("id"), where)
            self.counts[kind] += 1
            getattr(self, kind)(oid, el, where)
        for ref, geom, where in self.member_ways:
            if not self.ways.get(ref):  # the way itself is in the file: its own nodes win
                self.ways[ref] = self.way_nodes(None, geom, where)
        for oid, pt, where in self.geometry_nodes:
            if oid not in self.nodes and oid not in self.bad_ids:
                self.add_node(oid, pt, where)
        remark = doc.get("remark")
        counts = {**self.counts, "made_up_nodes": len(self.made_up)}
        remark = remark if isinstance(remark, str) else None
        return OverpassData(self.xml(), self.bad, remark, counts)

    def node(self, oid: int, el: dict, where: str) -> None:
        tags = self.tags(el, where)
        if tags and not self.node_tags.get(oid):
            self.node_tags[oid] = tags
        if "lat" in el or "lon" in el:  # out ids / out tags give none
            pt = self.point(el, where)
            if oid not in self.nodes and oid not in self.bad_ids and pt is not None:
                self.add_node(oid, pt, where)

    def add_node(self, oid: int, pt: tuple[Any, Any], where: str) -> None:
        """Add a node; one with a coordinate out of range is reported and written with a
        stand-in that is still out of range (osmium then treats it as in an XML file).
        """
        lat, lon = pt
        if not (-90 <= lat <= 90 and -180 <= lon <= 180):
            if oid in self.bad_ids:
                return
            self.bad_ids.add(oid)
            self.bad.append((oid, lat, lon, where))
            lat, lon = _storable(lat), _storable(lon)
        self.nodes[oid] = (lat, lon)

    def way(self, oid: int, el: dict, where: str) -> None:
        tags = self.tags(el, where)
        if tags and not self.way_tags.get(oid):
            self.way_tags[oid] = tags
        refs = el.get("nodes")
        geom = el.get("geometry")
        if refs is not None:
            if not isinstance(refs, list):
                raise self.fail(where, f"nodes={show(refs)} must be a list of node ids")
            refs = [self.osm_id(r, where, f"nodes[{k}]") for k, r in enumerate(refs)]
        if geom is not None:
            if refs is not None and isinstance(geom, list) and len(refs) != len(geom):
                raise self.fail(where, f"has {len(refs)} nodes but {len(geom)} geometry points")
            refs = self.way_nodes(refs, geom, where)
        if refs and not self.ways.get(oid):
            self.ways[oid] = refs

    def way_nodes(self, refs: list[int] | None, geom: Any, where: str) -> list[int]:
        """Node ids of a way with ``geometry``: the given ids (a node that is not in the
        file gets its coordinates from the geometry) or ids made up from coordinates.
        """
        if not isinstance(geom, list):
            raise self.fail(where, f"geometry={show(geom)} must be a list of points")
        out: list[int] = []
        for k, g in enumerate(geom):
            gw = f"{where} geometry[{k}]"
            pt = self.point(g, gw)
            if refs is not None:
                if pt is not None:
                    self.geometry_nodes.append((refs[k], pt, gw))
                out.append(refs[k])
            elif pt is None:
                out.append(self.new_id())  # a missing node: the way is cut here
            else:
                key = (_fixed(pt[0]), _fixed(pt[1]))
                if key not in self.made_up:
                    self.made_up[key] = self.new_id()
                    self.add_node(self.made_up[key], pt, gw)
                out.append(self.made_up[key])
        return out

    def new_id(self) -> int:
        """An id for a made-up node: above every node id in the file (osmium keeps no
        locations for negative ids).
        """
        self.next_id += 1
        return self.next_id

    def relation(self, oid: int, el: dict, where: str) -> None:
        tags = self.tags(el, where)
        if tags and not self.relation_tags.get(oid):
            self.relation_tags[oid] = tags
        members = el.get("members")
        if members is None:
            return
        if not isinstance(members, list):
            raise self.fail(where, f"members={show(members)} must be a list")
        out: list[tuple[str, int, str]] = []
        for k, m in enumerate(members):
            mw = f"{where} members[{k}]"
            if not isinstance(m, dict) or m.get("type") not in ("node", "way", "relation"):
                raise self.fail(mw, f"{show(m)} must be an object with type node, way or relation")
            ref = self.osm_id(m.get("ref"), mw, "ref")
            role = m.get("role", "")
            if not isinstance(role, str):
                raise self.fail(mw, f"role={show(role)} must be a string")
            if m["type"] == "way" and m.get("geometry") is not None:
                self.member_ways.append((ref, m["geometry"], mw))
            elif m["type"] == "node" and ("lat" in m or "lon" in m):
                pt = self.point(m, mw)
                if pt is not None:
                    self.geometry_nodes.append((ref, pt, mw))
            out.append((m["type"], ref, role))
        if out and not self.relations.get(oid):
            self.relations[oid] = out

    # ----------------------------------------------------------------- output
    def xml(self) -> bytes:
        """The tables as an OSM XML document (nodes, ways, relations, each by id)."""
        parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<osm version="0.6">\n']
        for oid in sorted(self.nodes):
            lat, lon = self.nodes[oid]
            body = _tags_xml(self.node_tags.get(oid, {}))
            head = f'<node id="{oid}" lat="{_num(lat)}" lon="{_num(lon)}"'
            parts.append(f"{head}>{body}</node>\n" if body else f"{head}/>\n")
        for oid in sorted(self.ways):
            nds = "".join(f'<nd ref="{r}"/>' for r in self.ways[oid])
            tags = _tags_xml(self.way_tags.get(oid, {}))
            parts.append(f'<way id="{oid}">{nds}{tags}</way>\n')
        for oid in sorted(self.relations):
            ms = "".join(
                f'<member type="{t}" ref="{r}" role={_attr(role)}/>'
                for t, r, role in self.relations[oid]
            )
            tags = _tags_xml(self.relation_tags.get(oid, {}))
            parts.append(f'<relation id="{oid}">{ms}{tags}</relation>\n')
        parts.append("</osm>\n")
        return "".join(parts).encode("utf-8")


def _highest_node_id(elements: list) -> int:
    """The highest node id anywhere in ``elements`` (node elements, way node lists, node
    members), so that made-up nodes can be numbered above it; 0 if there is none.
    """
    high = 0
    for el in elements:
        if not isinstance(el, dict):
            continue
        ids: list[Any] = []
        if el.get("type") == "node":
            ids.append(el.get("id"))
        elif el.get("type") == "way" and isinstance(el.get("nodes"), list):
            ids.extend(el["nodes"])
        elif el.get("type") == "relation" and isinstance(el.get("members"), list):
            ids.extend(
                m.get("ref")
                for m in el["members"]
                if isinstance(m, dict) and m.get("type") == "node"
            )
        for i in ids:
            if isinstance(i, int) and not isinstance(i, bool) and abs(i) <= MAX_INT:
                high = max(high, i)
    return high


def _fixed(value: Decimal | int) -> int:
    """A coordinate in units of 1e-7 degrees, rounded as osmium stores it: equal keys are
    one location, so ways made up from geometry join where they meet.
    """
    return int((Decimal(value) * 10_000_000).to_integral_value(ROUND_HALF_UP))


def _storable(value: Decimal | int) -> Decimal | int:
    """``value`` if osmium can hold it (|v| < 214.7 degrees), else 200 with its sign."""
    return value if -214 < value < 214 else (200 if value > 0 else -200)


def _num(value: Decimal | int) -> str:
    """A coordinate as plain decimal digits, exactly as given in the JSON."""
    return format(value, "f") if isinstance(value, Decimal) else str(value)


def _attr(text: str) -> str:
    return quoteattr(_XML_ILLEGAL.sub("\ufffd", text))


def _tags_xml(tags: dict[str, str]) -> str:
    return "".join(f"<tag k={_attr(k)} v={_attr(v)}/>" for k, v in tags.items())
