"""The embedded Helsinki world against counts computed here from the raw file."""

from collections import Counter

import osmium
import pytest

from urban_gym.world.loader import builtin_path

POI_KEYS = ("shop", "amenity", "tourism", "leisure", "office")


@pytest.fixture(scope="module")
def raw():
    """Counts straight from helsinki.osm.pbf with pyosmium, independent of the importer."""
    path = str(builtin_path("helsinki"))
    nodes = Counter()
    named_node_pois = Counter()
    closed_building_ways = 0
    way_nodes: dict[int, bool] = {}
    building_rels: list[list[int]] = []
    for o in osmium.FileProcessor(path).with_locations():
        if o.is_node():
            t = o.tags
            for k, v in (
                ("natural", "tree"),
                ("amenity", "bench"),
                ("leisure", "picnic_table"),
                ("amenity", "vending_machine"),
                ("highway", "street_lamp"),
                ("highway", "bus_stop"),
                ("amenity", "waste_basket"),
            ):
                if t.get(k) == v:
                    nodes[v] += 1
            if t.get("name"):
                first = next((k for k in POI_KEYS if t.get(k) and t.get(k) != "no"), None)
                if first:
                    named_node_pois[first] += 1
        elif o.is_way():
            complete = all(n.location.valid() for n in o.nodes)
            way_nodes[o.id] = complete
            if o.tags.get("building", "no") != "no":
                refs = [n.ref for n in o.nodes]
                if complete and len(refs) >= 4 and refs[0] == refs[-1]:
                    closed_building_ways += 1
        elif o.is_relation():
            if o.tags.get("type") == "multipolygon" and o.tags.get("building", "no") != "no":
                building_rels.append([m.ref for m in o.members if m.type == "w"])
    complete_rels = sum(all(way_nodes.get(w, False) for w in ws) for ws in building_rels)
    return {
        "nodes": nodes,
        "named_node_pois": named_node_pois,
        "closed_building_ways": closed_building_ways,
        "complete_building_relations": complete_rels,
    }


def test_street_object_counts_match_raw_nodes(helsinki, raw):
    got = Counter(o.kind for o in helsinki.objects)
    assert got["tree"] == raw["nodes"]["tree"] > 500
    assert got["bench"] == raw["nodes"]["bench"] + raw["nodes"]["picnic_table"] > 100
    assert got["vending_machine"] == raw["nodes"]["vending_machine"] > 50
    assert got["street_lamp"] == raw["nodes"]["street_lamp"] > 500
    assert got["bus_stop"] == raw["nodes"]["bus_stop"]
    assert got["waste_basket"] == raw["nodes"]["waste_basket"]


def test_named_node_pois_match_raw_nodes(helsinki, raw):
    got = Counter(p.category for p in helsinki.pois if p.osm_id.startswith("n"))
    for key in ("shop", "amenity", "tourism", "office"):
        assert got[key] == raw["named_node_pois"][key], key
    assert got["shop"] + got["amenity"] > 900


def test_building_counts_match_raw_ways_and_relations(helsinki, raw):
    from_ways = {b.osm_id for b in helsinki.buildings if b.osm_id.startswith("w")}
    from_rels = {b.osm_id for b in helsinki.buildings if b.osm_id.startswith("r")}
    assert len(from_ways) == raw["closed_building_ways"] > 300
    assert len(from_rels) == raw["complete_building_relations"] > 40


def test_extent_and_network(helsinki):
    w, h = helsinki.extent
    assert 900 < w < 1100 and 1550 < h < 1750  # the extract is ~1 km x ~1.7 km
    s = helsinki.summary()
    assert s["network_km"] > 50
    assert {"road", "sidewalk", "crossing", "footway", "steps", "pedestrian"} <= set(
        s["network_by_kind_km"]
    )
    import networkx as nx

    assert nx.is_connected(helsinki.network)


def test_every_building_poi_is_anchored_on_its_facade(helsinki):
    import shapely
    from shapely.geometry import LineString, Point

    anchored = [p for p in helsinki.pois if p.building_id is not None]
    assert len(anchored) > 800
    for p in anchored:
        poly = helsinki.buildings[p.building_id].polygon
        assert p.facade is not None
        # the anchor lies on the facade, the facade on the footprint's outline
        assert LineString(p.facade).distance(Point(p.anchor)) < 1e-6
        assert shapely.distance(poly.exterior, Point(p.anchor)) < 1e-6
    # and most front points are close to their facade (a street in front of the shop)
    dists = sorted(Point(p.anchor).distance(Point(p.front)) for p in anchored)
    assert dists[len(dists) // 2] < 15.0


def test_aliases_from_osm(helsinki):
    with_alias = [p for p in helsinki.pois if p.aliases]
    assert len(with_alias) > 100
    p = with_alias[0]
    assert helsinki.poi_by_name(p.aliases[0]).id == p.id
