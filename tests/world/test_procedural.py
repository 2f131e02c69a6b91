import networkx as nx
import pytest
from shapely.geometry import Point

from urban_gym.world import generate_city
from urban_gym.world.procedural import block_polygon


def fingerprint(c):
    return (
        [(b.polygon.wkb, b.height) for b in c.buildings],
        [(p.name, p.position, p.front, p.facing) for p in c.pois],
        [(o.kind, o.position) for o in c.objects],
        sorted((u, v, d["length"], d["kind"]) for u, v, d in c.network.edges(data=True)),
    )


def test_same_seed_same_city():
    assert fingerprint(generate_city(5, (3, 3))) == fingerprint(generate_city(5, (3, 3)))


def test_different_seed_different_city():
    assert fingerprint(generate_city(5, (3, 3))) != fingerprint(generate_city(6, (3, 3)))


def test_two_by_two_layout_is_as_documented():
    c = generate_city(0, (2, 2), block_size=90.0, street_width=16.0)
    # 3 x 3 intersections plus a midpoint node on each of the 12 street segments
    assert c.extent == pytest.approx((2 * 106.0, 2 * 106.0))
    road_nodes = {
        n for u, v, d in c.network.edges(data=True) if d["kind"] == "road" for n in (u, v)
    }
    assert len(road_nodes) == 9 + 12
    assert nx.is_connected(c.network)
    # no building stands on a street: all are inside their block rectangles
    blocks = [block_polygon(c, i, j) for i in range(2) for j in range(2)]
    for b in c.buildings:
        assert any(blk.buffer(1e-6).contains(b.polygon) for blk in blocks)


def test_pois_face_the_street_and_names_are_unique():
    c = generate_city(2, (4, 4))
    names = [p.name for p in c.pois]
    assert len(names) == len(set(names)) > 50
    gaps = []
    for p in c.pois:
        assert p.building_id is not None
        assert c.nearest_walkable_point(*p.front).distance < 1e-6
        gaps.append(round(Point(p.anchor).distance(Point(p.front)), 6))
    # fronts are on the street centreline (8 m = half the 16 m street in front of the
    # facade) or, for shops beside a 6 m passage, on the passage (3 m)
    assert set(gaps) <= {8.0, 3.0}
    assert gaps.count(8.0) > 0.8 * len(gaps)
    assert any(any(ch in n for ch in "äöÄÖåÅ") for n in names)


def test_objects_of_many_kinds_and_covered_passages():
    c = generate_city(1, (5, 5))
    kinds = {o.kind for o in c.objects}
    assert {"tree", "street_lamp", "crossing", "bench", "waste_basket"} <= kinds
    crossings = [o for o in c.objects if o.kind == "crossing"]
    assert len(crossings) == 2 * (6 * 5) * 2  # one per street arm at each intersection
    assert any(d["covered"] for _, _, d in c.network.edges(data=True))


def test_large_city_is_kilometres_across():
    c = generate_city(3, (20, 20))
    w, h = c.extent
    assert w > 2000 and h > 2000
    assert nx.is_connected(c.network)


def test_meta_source_regenerates_the_city():
    from urban_gym.world import load_city

    c = generate_city(4, (3, 2), block_size=60.0, shop_rate=0.3)
    assert c.meta["source"] == "procedural:seed=4,blocks=3x2,block_size=60,shop_rate=0.3"
    assert fingerprint(load_city(c.meta["source"], cache=False)) == fingerprint(c)
