"""A hand-made OpenStreetMap extract, written as XML for the tests.

Layout in metres (x east, y north) around (60.0 N, 25.0 E)::

    y=50                     | road R (residential, x=15)
                             |        +---------+  C church (amenity=place_of_worship)
                             |        |         |  x 20..40, y 10..30, no height tag
        A (4 levels)   B (height 9 m)          |
      +---------+---------+  |        +---------+
      |  S1 .   |    .S2  |  |
      +---------+---------+  |
    y=-20 ---- footway F --------------------------- steps T (covered) north from (50,-20)
          K kiosk (free-standing) at (-40,-30)

A: x -30..-10, y -15..5; B: x -10..10, y -15..5 (A and B share the wall x=-10).
S1 bakery at (-12,-5) inside A, 2 m from the shared wall: its facade must be A's south wall.
S2 pharmacy at (8,0) inside B, 2 m from B's east wall, which faces road R.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

from urban_gym.world.geo import GeoFrame

FRAME = GeoFrame(60.0, 25.0)


class OsmWriter:
    def __init__(self) -> None:
        self.nodes: list[tuple[int, float, float, dict]] = []
        self.ways: list[tuple[int, list[int], dict]] = []
        self._next = 1

    def node(self, x: float, y: float, tags: dict | None = None) -> int:
        nid = self._next
        self._next += 1
        lat, lon = FRAME.to_latlon(x, y)
        self.nodes.append((nid, lat, lon, tags or {}))
        return nid

    def way(self, nids: list[int], tags: dict) -> int:
        wid = 1000 + len(self.ways)
        self.ways.append((wid, nids, tags))
        return wid

    def rect(self, x0, y0, x1, y1, tags) -> int:
        a = self.node(x0, y0)
        b = self.node(x1, y0)
        c = self.node(x1, y1)
        d = self.node(x0, y1)
        return self.way([a, b, c, d, a], tags)

    def xml(self) -> str:
        out = ['<?xml version="1.0" encoding="UTF-8"?>', '<osm version="0.6" generator="test">']
        for nid, lat, lon, tags in self.nodes:
            attrs = f'id="{nid}" version="1" lat="{lat:.9f}" lon="{lon:.9f}"'
            if tags:
                out.append(f"  <node {attrs}>")
                out += [f"    <tag k={quoteattr(k)} v={quoteattr(v)}/>" for k, v in tags.items()]
                out.append("  </node>")
            else:
                out.append(f"  <node {attrs}/>")
        for wid, nids, tags in self.ways:
            out.append(f'  <way id="{wid}" version="1">')
            out += [f'    <nd ref="{n}"/>' for n in nids]
            out += [f"    <tag k={quoteattr(k)} v={quoteattr(v)}/>" for k, v in tags.items()]
            out.append("  </way>")
        out.append("</osm>")
        return "\n".join(out) + "\n"

    def write(self, path: Path) -> Path:
        path.write_text(self.xml(), encoding="utf-8")
        return path


def town(with_buildings: bool = True, with_ways: bool = True) -> OsmWriter:
    w = OsmWriter()
    if with_buildings:
        # A and B share the wall x=-10: build them from shared nodes
        a0, s0, b0 = w.node(-30, -15), w.node(-10, -15), w.node(10, -15)
        b1, s1, a1 = w.node(10, 5), w.node(-10, 5), w.node(-30, 5)
        w.way([a0, s0, s1, a1, a0], {"building": "apartments", "building:levels": "4"})
        w.way([s0, b0, b1, s1, s0], {"building": "yes", "height": "9 m", "name": "Talo B"})
        w.rect(
            20,
            10,
            40,
            30,
            {
                "building": "church",
                "amenity": "place_of_worship",
                "name": "Kallion kirkko",
                "name:sv": "Berghälls kyrka",
            },
        )
        w.node(
            -12,
            -5,
            {
                "shop": "bakery",
                "name": "Leipomo Ääkkönen",
                "name:en": "Aakkonen Bakery",
                "brand": "Ääkkönen",
            },
        )
        w.node(8, 0, {"amenity": "pharmacy", "name": "Apteekki Öö"})
    w.node(-40, -30, {"amenity": "cafe", "name": "Kioski Å"})
    w.node(-20, -22, {"natural": "tree"})
    w.node(-25, -18, {"amenity": "bench"})
    w.node(30, -17, {"amenity": "bench"})
    w.node(-5, -18, {"amenity": "vending_machine", "vending": "drinks"})
    if with_ways:
        f0, f1, f2 = w.node(-50, -20), w.node(15, -20), w.node(50, -20)
        w.way([f0, f1, f2], {"highway": "footway", "name": "Rantapolku"})
        r1 = w.node(15, 50)
        w.way([f1, r1], {"highway": "residential", "name": "Tie R", "lanes": "2"})
        t1 = w.node(50, 20)
        w.way([f2, t1], {"highway": "steps", "covered": "yes"})
        # a motorway is not walkable
        m0, m1 = w.node(-50, 60), w.node(50, 60)
        w.way([m0, m1], {"highway": "motorway"})
    return w
