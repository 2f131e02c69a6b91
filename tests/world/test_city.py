"""City queries against shapely answering the same question directly."""

from __future__ import annotations

import numpy as np
from shapely.geometry import Point, Polygon

from urban_gym.world.city import City
from urban_gym.world.features import Building


def _reference(city, x, y):
    hits = city._idx_buildings.query(Point(x, y), predicate="within")
    return int(hits[0]) if len(hits) else None


def _points(city, n, seed):
    rng = np.random.default_rng(seed)
    x0, y0, x1, y1 = city.bounds
    pts = [(rng.uniform(x0, x1), rng.uniform(y0, y1)) for _ in range(n)]
    for b in city.buildings[:: max(1, len(city.buildings) // 300)]:
        (ax, ay), (bx, by) = list(b.polygon.exterior.coords)[:2]
        c = b.polygon.representative_point()
        # a corner, the middle of an edge (on the boundary: not inside), a point inside
        pts += [(ax, ay), ((ax + bx) / 2, (ay + by) / 2), (c.x, c.y)]
    return pts


def test_building_at_is_the_footprint_holding_the_point(helsinki, tiny_city):
    # the grid of footprint boxes finds what the index's "within" query finds: inside
    # points, corners and edges (on the boundary: outside), open ground
    for city in (helsinki, tiny_city):
        inside = 0
        for x, y in _points(city, 3000, seed=1):
            city.__dict__.pop("_idx_building_at_last", None)
            got = city.building_at(x, y)
            assert got == _reference(city, x, y), (city.name, x, y)
            inside += got is not None
        assert inside > 300


def test_building_at_with_overlapping_footprints(tiny_city):
    # a footprint drawn over another (OSM has them): the point inside both gets the
    # index's answer, a point inside one only gets that one
    t = tiny_city
    b = t.buildings[0]
    c = b.polygon.representative_point()
    square = Polygon(
        [(c.x - 1, c.y - 1), (c.x + 1, c.y - 1), (c.x + 1, c.y + 1), (c.x - 1, c.y + 1)]
    )
    extra = Building(id=len(t.buildings), osm_id="p-extra", polygon=square, height=b.height)
    city = City(t.name, t.frame, [*t.buildings, extra], t.pois, t.objects, t.areas, t.network)
    got = city.building_at(c.x, c.y)
    assert got == _reference(city, c.x, c.y) and got in (0, extra.id)
    x0, y0, x1, y1 = b.polygon.bounds
    grid = [(x, y) for x in np.linspace(x0, x1, 15) for y in np.linspace(y0, y1, 15)]
    alone = next(
        p
        for p in grid
        if b.polygon.contains(Point(p)) and not square.buffer(0.1).contains(Point(p))
    )
    assert city.building_at(*alone) == 0
