"""Four small hand-made OpenStreetMap extracts of cities unlike Helsinki, written as XML.

They stand in for the public extracts a user brings (there is no network here), each
with what such a city typically lacks. Run ``python -m tests.world.city_fixtures DIR`` to
write them into ``DIR``; the tests call :func:`write_fixtures`. Coordinates are metres
(x east, y north) around :data:`tests.world.osm_fixture.FRAME`.

``suburb``
    A sparse suburb: three 900 m east-west roads 300 m apart joined by two north-south
    roads; detached 10 x 12 m houses every 90 m, set back 12 m from the road; four named
    POIs of four kinds (a school 30 m back from its road and a supermarket 14 m back, both
    in buildings; a café kiosk and a fuel station without); one footway; a few trees and
    street lamps.
``nonlatin``
    A dense 4 x 4-block centre (streets 90 m apart) whose street and POI names are
    Cyrillic, CJK and Arabic (and three chains with Latin names); ``name:en`` is present
    on some and missing on others.
    Every block has four buildings with one or two shops on their street facades.
``roads``
    Roads only: a named 4 x 4 street grid with traffic signals, no buildings, no POIs.
``tiny``
    A single 60 x 60 m block: four streets around one building with one café.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path

from tests.world.osm_fixture import OsmWriter

#: Street names of the non-Latin city: (name, name:en or None), one per grid line.
NONLATIN_STREETS: tuple[tuple[str, str | None], ...] = (
    ("улица Ленина", "Lenin Street"),
    ("中山路", None),
    ("شارع الملك فيصل", "King Faisal Street"),
    ("Невский проспект", None),
    ("銀座通り", "Ginza Avenue"),
    ("شارع النيل", None),
    ("Садовая улица", "Sadovaya Street"),
    ("南京东路", None),
    ("شارع الجامعة", None),
    ("проспект Мира", "Mira Avenue"),
)

#: Shops of the non-Latin city: (kind key, kind value, name, name:en or None). Kinds repeat
#: so that a place-type search has several candidates.
NONLATIN_SHOPS: tuple[tuple[str, str, str, str | None], ...] = (
    ("amenity", "cafe", "Кофейня Пушкин", "Pushkin Coffee"),
    ("amenity", "pharmacy", "薬局さくら", None),
    ("shop", "bakery", "مخبز الأمل", "Al-Amal Bakery"),
    ("amenity", "bank", "Сбербанк", None),
    ("shop", "books", "書店 風", "Kaze Books"),
    ("amenity", "restaurant", "مطعم الشام", None),
    ("shop", "supermarket", "Магнит", "Magnit"),
    ("amenity", "cafe", "咖啡馆 月", None),
    ("amenity", "pharmacy", "صيدلية النور", "Al-Noor Pharmacy"),
    ("shop", "hairdresser", "Парикмахерская Локон", None),
    ("amenity", "bank", "中国银行", "Bank of China"),
    ("shop", "bakery", "Пекарня Хлеб", None),
    ("amenity", "restaurant", "ラーメン一番", "Ramen Ichiban"),
    ("shop", "supermarket", "كارفور", None),
    ("amenity", "cafe", "مقهى القمر", "Moon Cafe"),
    ("amenity", "pharmacy", "Аптека Здоровье", None),
    ("shop", "books", "Книжный дом", "House of Books"),
    ("amenity", "restaurant", "Пельменная", None),
    ("shop", "hairdresser", "美容室 ひかり", None),
    ("amenity", "bank", "بنك مصر", "Banque Misr"),
    ("shop", "bakery", "面包坊 金", None),
    ("amenity", "cafe", "Чайхана Восток", None),
    ("shop", "supermarket", "超市 好又多", "Haoyouduo Market"),
    ("amenity", "pharmacy", "薬局 みどり", None),
    ("shop", "books", "مكتبة جرير", "Jarir Bookstore"),
    ("amenity", "restaurant", "Столовая №1", None),
    ("shop", "hairdresser", "صالون ليلى", None),
    ("amenity", "bank", "Альфа-Банк", "Alfa-Bank"),
    ("shop", "optician", "Оптика Взгляд", None),
    ("amenity", "dentist", "歯科 山田", None),
    ("shop", "florist", "زهور الربيع", "Spring Flowers"),
    ("amenity", "post_office", "Почта России", "Russian Post"),
    ("shop", "convenience", "ローソン", "Lawson"),
    ("amenity", "fast_food", "برجر الشرق", None),
    ("shop", "shoes", "Обувь Ступня", None),
    ("amenity", "library", "图书馆", "Library"),
    # a few international chains with Latin names, as in any real city
    ("amenity", "fast_food", "McDonald's", None),
    ("amenity", "cafe", "Starbucks", None),
    ("shop", "clothes", "Zara", None),
)


def _grid_streets(
    w: OsmWriter,
    n: int,
    spacing: float,
    names: Callable[[str, int], dict[str, str]],
    signals: bool = False,
) -> None:
    """An ``n`` x ``n`` grid of streets ``spacing`` metres apart (0 .. (n-1)*spacing),
    sharing their intersection nodes; ``names(axis, i)`` gives each street's tags."""
    ends = (n - 1) * spacing
    nodes = {}
    for i, j in itertools.product(range(n), range(n)):
        tags = {"highway": "traffic_signals"} if signals and 0 < i < n - 1 and 0 < j < n - 1 else {}
        nodes[i, j] = w.node(i * spacing, j * spacing, tags or None)
    assert ends > 0
    for j in range(n):  # east-west streets
        w.way([nodes[i, j] for i in range(n)], names("ew", j))
    for i in range(n):  # north-south streets
        w.way([nodes[i, j] for j in range(n)], names("ns", i))


def nonlatin_city() -> OsmWriter:
    """The non-Latin city centre (see the module docstring): about 400 nodes."""
    w = OsmWriter()
    n, sp = 5, 90.0

    def names(axis: str, i: int) -> dict[str, str]:
        name, en = NONLATIN_STREETS[(0 if axis == "ew" else n) + i]
        tags = {"highway": "residential" if i % 2 else "tertiary", "name": name}
        if en:
            tags["name:en"] = en
        return tags

    _grid_streets(w, n, sp, names)
    shops = itertools.cycle(NONLATIN_SHOPS)
    k = 0
    for bi, bj in itertools.product(range(n - 1), range(n - 1)):
        x0, y0 = bi * sp, bj * sp
        for qi, qj in itertools.product(range(2), range(2)):
            # a 33 x 33 m building in each quarter of the block, 9 m from the street axes
            bx0, by0 = x0 + 9.0 + qi * 39.0, y0 + 9.0 + qj * 39.0
            w.rect(bx0, by0, bx0 + 33.0, by0 + 33.0, {"building": "retail", "building:levels": "3"})
            # shops just inside the facade that faces the street (west/east, south/north)
            fx = bx0 + 1.5 if qi == 0 else bx0 + 31.5
            fy = by0 + 1.5 if qj == 0 else by0 + 31.5
            spots = [(fx, by0 + 16.5)] + ([(bx0 + 16.5, fy)] if (bi + bj + qi + qj) % 2 else [])
            for x, y in spots:
                key, kind, name, en = next(shops)
                tags = {key: kind, "name": name if k < len(NONLATIN_SHOPS) else f"{name} {k}"}
                if en:
                    tags["name:en"] = en
                w.node(x, y, tags)
                k += 1
    # street furniture along the streets
    for i in range(n - 1):
        for j in range(n):
            w.node(i * sp + 45.0, j * sp + 5.0, {"natural": "tree"})
            w.node(i * sp + 30.0, j * sp - 5.0, {"highway": "street_lamp"})
    for i, j in itertools.product(range(1, n - 1), range(1, n - 1)):
        w.node(i * sp + 6.0, j * sp, {"highway": "crossing"})
    return w


def sparse_suburb() -> OsmWriter:
    """The sparse suburb (see the module docstring): about 330 nodes."""
    w = OsmWriter()
    length, gap = 900.0, 300.0
    xs = [i * 100.0 for i in range(10)]  # nodes every 100 m along the east-west roads
    rows = {}
    for j in range(3):
        rows[j] = [w.node(x, j * gap) for x in xs]
        w.way(rows[j], {"highway": "residential", "name": f"Maple Road {j + 1}"})
    for x_idx, name in ((0, "Oak Avenue"), (9, "Elm Avenue")):
        mids = [w.node(xs[x_idx], y) for y in (100.0, 200.0, 400.0, 500.0)]
        chain = [rows[0][x_idx], mids[0], mids[1], rows[1][x_idx], mids[2], mids[3], rows[2][x_idx]]
        w.way(chain, {"highway": "unclassified", "name": name})
    # one footway through the middle, between rows 0 and 1
    f = [rows[0][5], w.node(500.0, 150.0), rows[1][5]]
    w.way(f, {"highway": "footway"})
    # detached houses every 90 m on both sides of each east-west road, 12 m back
    for j in range(3):
        for k in range(10):
            x = 20.0 + 90.0 * k
            if x + 10.0 > length:
                continue
            for side in (1.0, -1.0):
                y0 = j * gap + side * 12.0
                w.rect(
                    x,
                    min(y0, y0 + side * 12.0),
                    x + 10.0,
                    max(y0, y0 + side * 12.0),
                    {"building": "house"},
                )
    # the few named places
    # the school stands 30 m back from its road, the supermarket 14 m
    w.rect(
        300.0,
        330.0,
        360.0,
        370.0,
        {"building": "school", "amenity": "school", "name": "Maple Primary School"},
    )
    w.rect(
        600.0,
        14.0,
        650.0,
        54.0,
        {"building": "retail", "shop": "supermarket", "name": "Suburb Foods"},
    )
    w.node(155.0, 304.0, {"amenity": "cafe", "name": "Corner Kiosk"})  # 35 m from any house
    w.node(820.0, 595.0, {"amenity": "fuel", "name": "Northside Fuel"})
    for k in range(6):
        w.node(50.0 + 150.0 * k, 6.0, {"natural": "tree"})
        w.node(75.0 + 150.0 * k, 306.0, {"highway": "street_lamp"})
    w.node(450.0, 4.0, {"highway": "bus_stop", "name": "Maple Road"})
    return w


def roads_only() -> OsmWriter:
    """Roads only (see the module docstring): 16 nodes, 8 named streets."""
    w = OsmWriter()
    _grid_streets(
        w,
        4,
        120.0,
        lambda axis, i: {
            "highway": "residential",
            "name": f"{'Row' if axis == 'ew' else 'Line'} {i}",
        },
        signals=True,
    )
    return w


def single_block() -> OsmWriter:
    """One 60 x 60 m block with one building and one café (see the module docstring)."""
    w = OsmWriter()
    _grid_streets(w, 2, 60.0, lambda axis, i: {"highway": "residential", "name": f"Side {axis}{i}"})
    w.rect(12.0, 12.0, 48.0, 48.0, {"building": "yes", "building:levels": "2"})
    w.node(13.0, 30.0, {"amenity": "cafe", "name": "Only Café"})
    return w


#: Fixture name -> builder.
FIXTURES: dict[str, Callable[[], OsmWriter]] = {
    "suburb": sparse_suburb,
    "nonlatin": nonlatin_city,
    "roads": roads_only,
    "tiny": single_block,
}


def write_fixtures(folder: Path) -> dict[str, Path]:
    """Write every fixture as ``<folder>/<name>.osm``; returns name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    return {name: build().write(folder / f"{name}.osm") for name, build in FIXTURES.items()}


if __name__ == "__main__":
    for name, path in write_fixtures(Path(sys.argv[1] if len(sys.argv) > 1 else ".")).items():
        print(f"{name}: {path}")
