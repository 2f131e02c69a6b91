"""Procedural cities: small, fast, deterministic worlds for tests and RL curricula.

A city is a grid of ``W x H`` blocks separated by streets. Street centrelines form the
walkable network (kind ``road`` with ``sidewalk=both``; intersections and street midpoints
are nodes). Each
block is one of

* a *perimeter block*: rows of buildings along its four sides around a courtyard;
* a *passage block*: the same with a covered north-south passage (kind ``footway``,
  ``covered=True``) through its middle;
* a *park*: a green area crossed by a diagonal footway, sometimes with a pond (water).

Street-facing buildings get named shops and amenities (:data:`SHOP_TYPES`, unique names
with Finnish letters such as ä and ö, and an English alias in ``name:en``). Streets carry
trees, street lamps, benches, waste baskets, bus stops, crossings at every intersection and
a few vending machines, post boxes, bicycle stands and ATMs. Everything is drawn from
``numpy.random.default_rng(seed)``: the same parameters give the same city.

Sizes: with the default 90 m blocks and 16 m streets, ``blocks=2x2`` is about 200 m
across and ``blocks=40x40`` about 4.2 km.
"""

from __future__ import annotations

import math
import re
from typing import Any

import networkx as nx
import numpy as np
from shapely.geometry import LineString, Point, Polygon, box

from urban_gym.errors import CityLoadError
from urban_gym.world.assemble import assemble_city
from urban_gym.world.city import POI, STOREY_HEIGHT_M, Area, Building, City, StreetObject
from urban_gym.world.geo import GeoFrame

#: ``(category, kind, name template, English alias template)``; ``{n}`` is a surname.
SHOP_TYPES: tuple[tuple[str, str, str, str], ...] = (
    ("amenity", "cafe", "Kahvila {n}", "{n} Café"),
    ("amenity", "pharmacy", "Apteekki {n}", "{n} Pharmacy"),
    ("amenity", "restaurant", "Ravintola {n}", "{n} Restaurant"),
    ("amenity", "bank", "{n} Pankki", "{n} Bank"),
    ("shop", "optician", "Optikko {n}", "{n} Opticians"),
    ("shop", "supermarket", "{n} Market", "{n} Supermarket"),
    ("shop", "bakery", "Leipomo {n}", "{n} Bakery"),
    ("shop", "books", "Kirjakauppa {n}", "{n} Books"),
    ("shop", "clothes", "{n} Muoti", "{n} Fashion"),
    ("shop", "florist", "Kukkakauppa {n}", "{n} Flowers"),
    ("shop", "hairdresser", "Parturi {n}", "{n} Barber"),
    ("amenity", "dentist", "Hammaslääkäri {n}", "{n} Dental"),
    ("shop", "hardware", "Rautakauppa {n}", "{n} Hardware"),
    ("shop", "convenience", "Kioski {n}", "{n} Corner Shop"),
    ("tourism", "hotel", "Hotelli {n}", "Hotel {n}"),
    ("amenity", "post_office", "Posti {n}", "{n} Post Office"),
    ("shop", "shoes", "Kenkä {n}", "{n} Shoes"),
    ("office", "company", "{n} Oy", "{n} Ltd"),
)

SURNAMES: tuple[str, ...] = (
    "Aalto",
    "Mäkinen",
    "Virtanen",
    "Korhonen",
    "Nieminen",
    "Mäkelä",
    "Hämäläinen",
    "Laine",
    "Heikkinen",
    "Koskinen",
    "Järvinen",
    "Lehtonen",
    "Lehtinen",
    "Saarinen",
    "Salminen",
    "Heinonen",
    "Niemi",
    "Heikkilä",
    "Kinnunen",
    "Salonen",
    "Turunen",
    "Salo",
    "Laitinen",
    "Tuominen",
    "Rantanen",
    "Karjalainen",
    "Jokinen",
    "Mattila",
    "Savolainen",
    "Lahtinen",
    "Ahonen",
    "Kärkkäinen",
    "Östman",
    "Åberg",
    "Söderholm",
    "Väisänen",
    "Pöllänen",
    "Räsänen",
    "Björk",
    "Lindqvist",
    "Nyström",
    "Ström",
    "Kallio",
    "Lampinen",
    "Peltonen",
    "Hakala",
    "Leppänen",
    "Kivelä",
)

STREET_NAMES: tuple[str, ...] = (
    "Aleksanterinkatu",
    "Mannerheimintie",
    "Esplanadi",
    "Bulevardi",
    "Fredrikinkatu",
    "Annankatu",
    "Yrjönkatu",
    "Uudenmaankatu",
    "Iso Roobertinkatu",
    "Lönnrotinkatu",
    "Kalevankatu",
    "Eerikinkatu",
    "Runeberginkatu",
    "Töölönkatu",
    "Pohjoisranta",
    "Unioninkatu",
    "Snellmaninkatu",
    "Liisankatu",
    "Kruununhaankatu",
    "Mariankatu",
)

_OBJECT_TAGS = {
    "tree": {"natural": "tree"},
    "street_lamp": {"highway": "street_lamp"},
    "bench": {"amenity": "bench"},
    "waste_basket": {"amenity": "waste_basket"},
    "bus_stop": {"highway": "bus_stop"},
    "crossing": {"highway": "crossing"},
    "vending_machine": {"amenity": "vending_machine"},
    "post_box": {"amenity": "post_box"},
    "bicycle_parking": {"amenity": "bicycle_parking"},
    "atm": {"amenity": "atm"},
}

_SPEC_KEYS = {
    "seed": int,
    "blocks": str,
    "block_size": float,
    "street_width": float,
    "shop_rate": float,
    "park_rate": float,
}


def parse_spec(spec: str) -> dict[str, Any]:
    """Parse ``"procedural:seed=3,blocks=4x4[,block_size=90,street_width=16,...]"``.

    Valid keys: ``seed``, ``blocks`` (``WxH``), ``block_size`` and ``street_width``
    (metres), ``shop_rate`` and ``park_rate`` (fractions).
    """
    body = spec.split(":", 1)[1] if spec.startswith("procedural:") else spec
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in body.split(","))):
        if "=" not in part:
            raise CityLoadError(f"procedural spec {spec!r}: {part!r} is not key=value")
        k, v = (s.strip() for s in part.split("=", 1))
        if k not in _SPEC_KEYS:
            raise CityLoadError(
                f"procedural spec {spec!r}: unknown key {k!r}; valid keys: "
                + ", ".join(sorted(_SPEC_KEYS))
            )
        try:
            val = _SPEC_KEYS[k](v)
        except ValueError as exc:
            raise CityLoadError(
                f"procedural spec {spec!r}: {k}={v!r} is not a valid value"
            ) from exc
        if k == "blocks":
            m = re.fullmatch(r"(\d+)x(\d+)", v)
            if not m:
                raise CityLoadError(f"procedural spec {spec!r}: blocks={v!r} must look like 4x4")
            val = (int(m.group(1)), int(m.group(2)))
        out[k] = val
    return out


def generate_city(
    seed: int = 0,
    blocks: tuple[int, int] = (3, 3),
    block_size: float = 90.0,
    street_width: float = 16.0,
    shop_rate: float = 0.6,
    park_rate: float = 0.12,
    name: str | None = None,
) -> City:
    """Generate a procedural city (see the module docstring). Sizes are metres."""
    W, H = (int(b) for b in blocks)
    if W < 1 or H < 1 or W * H > 10_000:
        raise CityLoadError(f"blocks={blocks!r}: need 1x1 up to 100x100 blocks")
    if not (30.0 <= block_size <= 400.0):
        raise CityLoadError(f"block_size={block_size!r} must be in [30, 400] metres")
    if not (6.0 <= street_width <= 60.0):
        raise CityLoadError(f"street_width={street_width!r} must be in [6, 60] metres")
    for key, val in (("shop_rate", shop_rate), ("park_rate", park_rate)):
        if not (0.0 <= val <= 1.0):
            raise CityLoadError(f"{key}={val!r} must be in [0, 1]")
    rng = np.random.default_rng(seed)
    gen = _Generator(rng, W, H, block_size, street_width, shop_rate, park_rate)
    gen.build()
    spec = procedural_spec(seed, (W, H), block_size, street_width, shop_rate, park_rate)
    meta = {
        "source": spec,
        "params": {
            "seed": seed,
            "blocks": [W, H],
            "block_size": block_size,
            "street_width": street_width,
            "shop_rate": shop_rate,
            "park_rate": park_rate,
        },
        "attribution": "procedurally generated",
    }
    return assemble_city(
        name or f"procedural-{seed}-{W}x{H}",
        GeoFrame(0.0, 0.0),
        gen.buildings,
        gen.pois,
        gen.objects,
        gen.areas,
        gen.graph,
        meta,
        spec,
    )


_DEFAULTS = {"block_size": 90.0, "street_width": 16.0, "shop_rate": 0.6, "park_rate": 0.12}


def procedural_spec(
    seed: int,
    blocks: tuple[int, int],
    block_size: float = 90.0,
    street_width: float = 16.0,
    shop_rate: float = 0.6,
    park_rate: float = 0.12,
) -> str:
    """The ``load_city`` spec that regenerates this city (non-default keys only)."""
    parts = [f"seed={seed}", f"blocks={blocks[0]}x{blocks[1]}"]
    given = {
        "block_size": block_size,
        "street_width": street_width,
        "shop_rate": shop_rate,
        "park_rate": park_rate,
    }
    parts += [f"{k}={v:g}" for k, v in given.items() if float(v) != _DEFAULTS[k]]
    return "procedural:" + ",".join(parts)


class _Generator:
    def __init__(self, rng, W, H, block_size, street_width, shop_rate, park_rate):
        self.rng = rng
        self.W, self.H = W, H
        self.bs = block_size
        self.sw = street_width
        self.pitch = block_size + street_width
        self.shop_rate = shop_rate
        self.park_rate = park_rate
        self.graph = nx.Graph()
        self.buildings: list[Building] = []
        self.pois: list[POI] = []
        self.objects: list[StreetObject] = []
        self.areas: list[Area] = []
        self._names: set[str] = set()
        self._edge_no = 0

    # grid helpers ---------------------------------------------------------------
    def gx(self, i: float) -> float:
        return (i - self.W / 2.0) * self.pitch

    def gy(self, j: float) -> float:
        return (j - self.H / 2.0) * self.pitch

    def node(self, i2: int, j2: int) -> int:
        """Node at half-grid coordinates (i2, j2) = 2 * grid index."""
        nid = j2 * (2 * self.W + 1) + i2 + 1
        if nid not in self.graph:
            self.graph.add_node(nid, x=self.gx(i2 / 2.0), y=self.gy(j2 / 2.0))
        return nid

    def edge(self, a: int, b: int, kind: str, width: float, name: str | None, covered=False):
        pa = (self.graph.nodes[a]["x"], self.graph.nodes[a]["y"])
        pb = (self.graph.nodes[b]["x"], self.graph.nodes[b]["y"])
        line = LineString([pa, pb])
        self._edge_no += 1
        self.graph.add_edge(
            a,
            b,
            geometry=line,
            start=a,
            length=float(line.length),
            kind=kind,
            highway="residential" if kind == "road" else kind,
            # a street's outer 2 m on each side are its sidewalks (the buildings stand
            # at the street's edge); footways are pedestrian ways of their own
            sidewalk="both" if kind == "road" else "",
            layer=0,
            covered=covered,
            width=width,
            name=name,
            osm_id=f"pw{self._edge_no}",
        )

    # building blocks -------------------------------------------------------------
    def build(self) -> None:
        rng = self.rng
        W, H = self.W, self.H
        vnames = [STREET_NAMES[int(k) % len(STREET_NAMES)] for k in rng.permutation(W + 1)]
        hnames = [
            STREET_NAMES[(int(k) + W + 1) % len(STREET_NAMES)] for k in rng.permutation(H + 1)
        ]
        for j in range(H + 1):  # east-west streets
            for i2 in range(2 * W):
                self.edge(
                    self.node(i2, 2 * j), self.node(i2 + 1, 2 * j), "road", self.sw, hnames[j]
                )
        for i in range(W + 1):  # north-south streets
            for j2 in range(2 * H):
                self.edge(
                    self.node(2 * i, j2), self.node(2 * i, j2 + 1), "road", self.sw, vnames[i]
                )
        kinds = rng.random((W, H))
        for j in range(H):
            for i in range(W):
                r = kinds[i, j]
                if r < self.park_rate:
                    self.park(i, j)
                elif r < self.park_rate + 0.2:
                    self.perimeter_block(i, j, passage=True)
                else:
                    self.perimeter_block(i, j, passage=False)
        self.street_furniture()

    def park(self, i: int, j: int) -> None:
        x0, y0 = self.gx(i) + self.sw / 2, self.gy(j) + self.sw / 2
        x1, y1 = x0 + self.bs, y0 + self.bs
        self.areas.append(
            Area(
                len(self.areas),
                f"pa{len(self.areas)}",
                "green",
                box(x0, y0, x1, y1),
                f"Puisto {i}-{j}",
                {"leisure": "park"},
            )
        )
        a, b = self.node(2 * i, 2 * j), self.node(2 * i + 2, 2 * j + 2)
        self.edge(a, b, "footway", 3.0, None)
        if self.rng.random() < 0.4:
            cx, cy = (x0 + x1) / 2 + self.bs * 0.2, (y0 + y1) / 2 - self.bs * 0.2
            pond = Point(cx, cy).buffer(self.bs * 0.12, quad_segs=6)
            self.areas.append(
                Area(
                    len(self.areas),
                    f"pa{len(self.areas)}",
                    "water",
                    pond,
                    None,
                    {"natural": "water"},
                )
            )
        for _ in range(int(self.rng.integers(2, 5))):
            t = float(self.rng.uniform(0.2, 0.8))
            px, py = x0 + t * self.bs, y0 + t * self.bs
            off = 2.5 if self.rng.random() < 0.5 else -2.5
            self.add_object("bench", px + off / math.sqrt(2), py - off / math.sqrt(2))
        for _ in range(int(self.rng.integers(3, 8))):
            self.add_object(
                "tree",
                float(self.rng.uniform(x0 + 5, x1 - 5)),
                float(self.rng.uniform(y0 + 5, y1 - 5)),
            )

    def perimeter_block(self, i: int, j: int, passage: bool) -> None:
        rng = self.rng
        x0, y0 = self.gx(i) + self.sw / 2, self.gy(j) + self.sw / 2
        x1, y1 = x0 + self.bs, y0 + self.bs
        d = float(min(rng.uniform(12.0, 18.0), self.bs / 2 - 4.0))
        xm = (x0 + x1) / 2
        gap = (xm - 3.0, xm + 3.0) if passage else None
        # south and north rows face south/north; west and east rows sit between them
        self.row(x0, x1, y0, y0 + d, along="x", facing="S", gap=gap)
        self.row(x0, x1, y1 - d, y1, along="x", facing="N", gap=gap)
        self.row(y0 + d, y1 - d, x0, x0 + d, along="y", facing="W", gap=None)
        self.row(y0 + d, y1 - d, x1 - d, x1, along="y", facing="E", gap=None)
        if passage:
            a, b = self.node(2 * i + 1, 2 * j), self.node(2 * i + 1, 2 * j + 2)
            self.edge(a, b, "footway", 4.0, f"Kauppakuja {i}-{j}", covered=True)

    def row(self, s0, s1, t0, t1, along: str, facing: str, gap) -> None:
        rng = self.rng
        s = s0
        spans: list[tuple[float, float]] = []
        while s1 - s > 6.0:
            w = float(rng.uniform(10.0, 22.0))
            e = s1 if s1 - (s + w) < 8.0 else s + w
            spans.append((s, e))
            s = e
        if gap is not None:
            cut: list[tuple[float, float]] = []
            for a, b in spans:
                if b <= gap[0] or a >= gap[1]:
                    cut.append((a, b))
                    continue
                if gap[0] - a >= 4.0:
                    cut.append((a, gap[0]))
                if b - gap[1] >= 4.0:
                    cut.append((gap[1], b))
            spans = cut
        for a, b in spans:
            poly = box(a, t0, b, t1) if along == "x" else box(t0, a, t1, b)
            levels = int(rng.integers(2, 9))
            bid = len(self.buildings)
            kind = "apartments" if rng.random() < 0.6 else "commercial"
            self.buildings.append(
                Building(
                    bid,
                    f"pb{bid}",
                    poly,
                    levels * STOREY_HEIGHT_M,
                    kind,
                    levels,
                    "levels",
                    None,
                    {"building": kind, "building:levels": str(levels)},
                )
            )
            if rng.random() < self.shop_rate:
                mid = (a + b) / 2
                # POI point 1 m inside the street facade
                if facing == "S":
                    pos = (mid, t0 + 1.0)
                elif facing == "N":
                    pos = (mid, t1 - 1.0)
                elif facing == "W":
                    pos = (t0 + 1.0, mid)
                else:
                    pos = (t1 - 1.0, mid)
                self.add_poi(pos, bid)

    def unique_name(self, template: str) -> str:
        for _ in range(8):
            n = SURNAMES[int(self.rng.integers(len(SURNAMES)))]
            cand = template.format(n=n)
            if cand not in self._names:
                return cand
        k = 2
        while template.format(n=f"{n} {k}") in self._names:
            k += 1
        return template.format(n=f"{n} {k}")

    def add_poi(self, pos, bid: int) -> None:
        cat, kind, tmpl, en = SHOP_TYPES[int(self.rng.integers(len(SHOP_TYPES)))]
        name = self.unique_name(tmpl)
        self._names.add(name)
        surname = _surname_of(tmpl, name)
        alias = en.format(n=surname)
        tags = {cat: kind, "name": name, "name:en": alias}
        self.pois.append(
            POI(
                len(self.pois),
                f"pp{len(self.pois)}",
                name,
                cat,
                kind,
                pos,
                (alias,),
                tags,
                building_id=bid,
            )
        )

    def add_object(self, kind: str, x: float, y: float) -> None:
        self.objects.append(
            StreetObject(
                len(self.objects),
                f"po{len(self.objects)}",
                kind,
                (float(x), float(y)),
                dict(_OBJECT_TAGS[kind]),
            )
        )

    def street_furniture(self) -> None:
        rng = self.rng
        side_off = self.sw / 2 - 1.5
        edges = sorted(
            (min(u, v), max(u, v)) for u, v, d in self.graph.edges(data=True) if d["kind"] == "road"
        )
        for u, v in edges:
            pu = np.array([self.graph.nodes[u]["x"], self.graph.nodes[u]["y"]])
            pv = np.array([self.graph.nodes[v]["x"], self.graph.nodes[v]["y"]])
            L = float(np.hypot(*(pv - pu)))
            t = (pv - pu) / L
            n = np.array([-t[1], t[0]])
            trees = rng.random() < 0.5
            s0 = self.sw / 2 + 2.0  # keep clear of intersections
            if trees:
                for s in np.arange(s0 + 3.0, L - s0, 12.0):
                    for side in (-1.0, 1.0):
                        p = pu + t * s + n * side * side_off
                        self.add_object("tree", *p)
            for k, s in enumerate(np.arange(s0 + 8.0, L - s0 + 1e-9, 25.0)):
                p = pu + t * s + n * (1 if k % 2 else -1) * (side_off + 0.5)
                self.add_object("street_lamp", *p)
            extras = (
                ("bench", 0.35),
                ("waste_basket", 0.35),
                ("bus_stop", 0.12),
                ("vending_machine", 0.08),
                ("post_box", 0.08),
                ("bicycle_parking", 0.15),
                ("atm", 0.05),
            )
            for kind, prob in extras:
                if rng.random() < prob:
                    s = float(rng.uniform(s0 + 2.0, max(s0 + 2.5, L - s0 - 2.0)))
                    side = 1.0 if rng.random() < 0.5 else -1.0
                    p = pu + t * s + n * side * (side_off - 0.5)
                    self.add_object(kind, *p)
        # one crossing on each street arm, just outside every intersection
        for i in range(self.W + 1):
            for j in range(self.H + 1):
                c = self.node(2 * i, 2 * j)
                cx, cy = self.graph.nodes[c]["x"], self.graph.nodes[c]["y"]
                for nb in sorted(self.graph.neighbors(c)):
                    if self.graph.edges[c, nb]["kind"] != "road":
                        continue
                    d = np.array([self.graph.nodes[nb]["x"] - cx, self.graph.nodes[nb]["y"] - cy])
                    d /= np.hypot(*d)
                    p = np.array([cx, cy]) + d * (self.sw / 2 + 2.0)
                    self.add_object("crossing", *p)


def _surname_of(template: str, name: str) -> str:
    pre, post = template.split("{n}")
    return name[len(pre) : len(name) - len(post) if post else None]


def block_polygon(city: City, i: int, j: int) -> Polygon:
    """The footprint rectangle of block ``(i, j)`` of a procedural city (metres)."""
    p = city.meta["params"]
    W, H = p["blocks"]
    pitch = p["block_size"] + p["street_width"]
    x0 = (i - W / 2.0) * pitch + p["street_width"] / 2
    y0 = (j - H / 2.0) * pitch + p["street_width"] / 2
    return box(x0, y0, x0 + p["block_size"], y0 + p["block_size"])
