"""OpenStreetMap import on the hand-made fixture in osm_fixture.py."""

import bz2
import math

import osmium
import pytest

from urban_gym.errors import CityLoadError
from urban_gym.world import import_osm, load_city
from urban_gym.world.osm_tags import building_height, parse_length, walk_kind

from .osm_fixture import FRAME, town


def local(city, x, y):
    """Where fixture point (x, y) lands in the imported city's frame."""
    return city.frame.to_xy(*FRAME.to_latlon(x, y))


@pytest.fixture(scope="module")
def town_city(tmp_path_factory):
    path = town().write(tmp_path_factory.mktemp("osm") / "town.osm")
    return import_osm(path)


def close(a, b, tol=0.05):
    return math.dist(a, b) <= tol


def test_buildings_and_heights(town_city):
    c = town_city
    assert len(c.buildings) == 3
    by_name = {b.name: b for b in c.buildings}
    assert by_name["Talo B"].height == pytest.approx(9.0)
    assert by_name["Talo B"].height_source == "height"
    a = next(b for b in c.buildings if b.kind == "apartments")
    assert a.levels == 4 and a.height == pytest.approx(4 * 3.2) and a.height_source == "levels"
    church = by_name["Kallion kirkko"]
    assert church.height == pytest.approx(22.0) and church.height_source == "default"
    assert a.polygon.area == pytest.approx(400.0, rel=1e-3)  # 20 m x 20 m


def test_network_topology_kinds_and_flags(town_city):
    g = town_city.network
    # footway split at the road junction (2 edges) + road + steps; the motorway is dropped
    assert g.number_of_edges() == 4 and g.number_of_nodes() == 5
    kinds = sorted(d["kind"] for _, _, d in g.edges(data=True))
    assert kinds == ["footway", "footway", "road", "steps"]
    road = next(d for _, _, d in g.edges(data=True) if d["kind"] == "road")
    assert road["length"] == pytest.approx(70.0, abs=0.05)
    assert road["width"] == pytest.approx(2 * 3.25 + 4.0)  # lanes=2
    steps = next(d for _, _, d in g.edges(data=True) if d["kind"] == "steps")
    assert steps["covered"] is True and road["covered"] is False
    for u, v in g.edges():
        geom = town_city.edge_geometry(u, v)
        assert close(geom.coords[0], town_city.node_xy[u])
        assert close(geom.coords[-1], town_city.node_xy[v])


def test_poi_anchoring_avoids_the_shared_wall(town_city):
    c = town_city
    s1 = c.poi_by_name("Leipomo Ääkkönen")
    assert s1.category == "shop" and s1.kind == "bakery"
    assert c.buildings[s1.building_id].kind == "apartments"
    # the shared wall x=-10 is nearer (2 m) but backs onto building B: use the south wall
    assert s1.facing == pytest.approx(180.0, abs=0.1)
    assert close(s1.anchor, local(c, -12, -15))
    assert close(s1.front, local(c, -12, -20))
    assert set(s1.aliases) == {"Aakkonen Bakery", "Ääkkönen"}


def test_poi_anchoring_prefers_the_wall_facing_a_street(town_city):
    c = town_city
    s2 = c.poi_by_name("apteekki öö")  # names match case-insensitively
    assert c.buildings[s2.building_id].name == "Talo B"
    assert s2.facing == pytest.approx(90.0, abs=0.1)
    assert close(s2.anchor, local(c, 10, 0))
    assert close(s2.front, local(c, 15, 0))


def test_building_poi_and_free_standing_poi(town_city):
    c = town_city
    church = c.poi_by_name("Berghälls kyrka")  # found by its name:sv alias
    assert church.name == "Kallion kirkko" and church.osm_id.startswith("w")
    assert c.buildings[church.building_id].name == "Kallion kirkko"
    assert church.facing == pytest.approx(270.0, abs=0.1)  # west wall faces road R
    assert close(church.front, (local(c, 15, 0)[0], church.anchor[1]))
    kiosk = c.poi_by_name("Kioski Å")
    assert kiosk.building_id is None and kiosk.facade is None
    assert close(kiosk.front, local(c, -40, -20))
    assert kiosk.facing == pytest.approx(0.0, abs=0.1)  # from the kiosk towards the footway


def test_street_objects_and_queries(town_city):
    c = town_city
    kinds = sorted(o.kind for o in c.objects)
    assert kinds == ["bench", "bench", "tree", "vending_machine"]
    wp = c.nearest_walkable_point(*local(c, -20, -25))
    assert wp.distance == pytest.approx(5.0, abs=0.05)
    assert close(wp.point, local(c, -20, -20))
    near = c.pois_within(*local(c, 10, 0), radius=3.0)
    assert [p.name for p in near] == ["Apteekki Öö"]
    # walking east along the footway from x=-50: the tree is on the right, benches left
    west = c.nearest_node(*local(c, -50, -20))
    junction = c.nearest_node(*local(c, 15, -20))
    right = c.objects_along(west, junction, "right")
    left = c.objects_along(west, junction, "left")
    assert [o.kind for o in right] == ["tree"]
    assert [o.kind for o in left] == ["bench", "vending_machine"]  # ordered along the way
    assert [o.kind for o in c.objects_along(junction, west, "left")] == ["tree"]
    with pytest.raises(ValueError, match="side='up'"):
        c.objects_along(west, junction, "up")


@pytest.mark.parametrize("fmt", ["osm.bz2", "osm.pbf"])
def test_compressed_and_pbf_inputs_give_the_same_city(tmp_path, town_city, fmt):
    xml = town().xml()
    path = tmp_path / f"town.{fmt}"
    if fmt == "osm.bz2":
        path.write_bytes(bz2.compress(xml.encode()))
    else:
        src = tmp_path / "src.osm"
        src.write_text(xml)
        writer = osmium.SimpleWriter(str(path))
        for obj in osmium.FileProcessor(str(src)):
            writer.add(obj)
        writer.close()
    c = import_osm(path)
    assert c.summary()["buildings"] == town_city.summary()["buildings"]
    assert c.summary()["network_edges"] == town_city.summary()["network_edges"]
    assert [p.name for p in c.pois] == [p.name for p in town_city.pois]


def test_bbox_keeps_only_features_inside(tmp_path):
    path = town().write(tmp_path / "town.osm")
    lat_s, lon_w = FRAME.to_latlon(-60, -40)
    lat_n, lon_e = FRAME.to_latlon(55, 12)
    c = import_osm(path, bbox=(lon_w, lat_s, lon_e, lat_n))
    assert sorted(b.kind for b in c.buildings) == ["apartments", "yes"]  # church cut off
    assert "Kallion kirkko" not in [p.name for p in c.pois]


def test_parsers():
    assert parse_length("12") == 12.0
    assert parse_length("12,5 m") == 12.5
    assert parse_length("10'") == pytest.approx(3.048)
    assert parse_length("tall") is None
    assert building_height({"building": "house"}) == (7.0, None, "default")
    assert walk_kind({"highway": "footway", "footway": "crossing"}) == "crossing"
    assert walk_kind({"highway": "cycleway"}) is None
    assert walk_kind({"highway": "cycleway", "foot": "designated"}) == "cycleway"
    assert walk_kind({"highway": "primary", "foot": "no"}) is None


# ------------------------------------------------------------------ bad input
def test_missing_file(tmp_path):
    with pytest.raises(CityLoadError, match="no such file"):
        import_osm(tmp_path / "nope.osm.pbf")


@pytest.mark.parametrize(
    "name,data", [("junk.osm", b"hello world"), ("junk.osm.pbf", b"\x00\x01junk")]
)
def test_not_osm(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(CityLoadError, match="cannot read as OpenStreetMap") as e:
        import_osm(p)
    assert name in str(e.value)


def test_wrong_suffix(tmp_path):
    p = tmp_path / "city.txt"
    p.write_text("x")
    with pytest.raises(CityLoadError, match="unsupported file type"):
        import_osm(p)


def test_no_buildings(tmp_path):
    p = town(with_buildings=False).write(tmp_path / "nob.osm")
    with pytest.raises(CityLoadError, match="no buildings") as e:
        import_osm(p)
    assert "nob.osm" in str(e.value)


def test_no_walkable_ways(tmp_path):
    p = town(with_ways=False).write(tmp_path / "noways.osm")
    with pytest.raises(CityLoadError, match="no walkable ways"):
        import_osm(p)


@pytest.mark.parametrize("bbox", [(25.0, 60.0, 25.0, 60.1), (25.1, 60.0, 25.0, 60.1), (1, 2, 3)])
def test_empty_or_malformed_bbox(tmp_path, bbox):
    p = town().write(tmp_path / "t.osm")
    with pytest.raises(CityLoadError, match=r"bbox=") as e:
        import_osm(p, bbox=bbox)
    assert str(bbox) in str(e.value)


def test_bbox_with_nothing_inside(tmp_path):
    p = town().write(tmp_path / "t.osm")
    with pytest.raises(CityLoadError, match="no buildings"):
        import_osm(p, bbox=(10.0, 10.0, 10.1, 10.1))


def test_unknown_city_name():
    with pytest.raises(CityLoadError, match="unknown city 'atlantis'"):
        load_city("atlantis")


def test_front_point_is_straight_in_front_and_outside_buildings(tmp_path):
    """A passage through the building is nearer to the facade than the street in front,
    but the front point must be where the sign can be seen: on the street, outside."""
    from .osm_fixture import OsmWriter

    w = OsmWriter()
    w.rect(-30, 20, -10, 40, {"building": "retail"})
    w.node(-28, 30, {"shop": "optician", "name": "Optikko Näkö"})
    # a passage through the building, 3 m inside its west wall
    p0, p1 = w.node(-27, 10), w.node(-27, 50)
    w.way([p0, p1], {"highway": "footway", "tunnel": "building_passage"})
    # the street in front of the west facade, joined to the passage
    s0, s1 = w.node(-40, 10), w.node(-40, 50)
    w.way([s0, s1], {"highway": "footway"})
    w.way([s0, p0], {"highway": "footway"})
    c = import_osm(w.write(tmp_path / "passage.osm"))
    p = c.poi_by_name("Optikko Näkö")
    assert p.facing == pytest.approx(270.0, abs=0.1)
    assert close(p.anchor, local(c, -30, 30))
    assert close(p.front, local(c, -40, 30))
    assert c.building_at(*p.front) is None
