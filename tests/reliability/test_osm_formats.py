"""OSM files are read by their content, and Overpass JSON imports.

The hand-written fixture town (``tests/world/osm_fixture.py``) is written as OSM XML,
then converted -- by osmium itself or by the test, element for element -- into PBF, OPL,
compressed XML and three flavours of Overpass JSON. Every form, under any file name, must
give the same City as the ``.osm`` file: the same buildings, POIs and walkable network.
"""

from __future__ import annotations

import bz2
import gzip
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import osmium
import pytest

from tests.world.osm_fixture import OsmWriter, town
from urban_gym.errors import CityLoadError, CityLoadWarning
from urban_gym.world import load_city, osm
from urban_gym.world.osm import import_osm


def city_key(city) -> tuple:
    """What must agree between two imports of the same data: buildings, POIs, network
    (edges by geometry, so that node ids made up for geometry-only JSON do not matter)."""
    buildings = [
        (b.osm_id, b.polygon.normalize().wkt, b.height, b.kind, b.levels, b.name, b.tags)
        for b in city.buildings
    ]
    pois = [
        (p.osm_id, p.name, p.category, p.kind, p.position, p.aliases, p.building_id)
        for p in city.pois
    ]
    edges = sorted(
        (d["geometry"].normalize().wkt, d["kind"], d["width"], d["name"], d["covered"], d["osm_id"])
        for _, _, d in city.network.edges(data=True)
    )
    objects = [(o.osm_id, o.kind, o.position) for o in city.objects]
    return city.frame, buildings, pois, edges, objects, city.network.number_of_nodes()


@pytest.fixture(scope="module")
def town_osm(tmp_path_factory) -> Path:
    return town().write(tmp_path_factory.mktemp("town") / "town.osm")


@pytest.fixture(scope="module")
def reference(town_osm):
    city = import_osm(town_osm)
    assert len(city.buildings) == 3 and len(city.pois) == 4
    assert city.network.number_of_edges() == 4
    return city_key(city)


# ------------------------------------------------------------------ sniffing formats
def _osmium_copy(src: Path, dst_suffix: str, tmp_path: Path) -> Path:
    out = tmp_path / f"copy{dst_suffix}"
    with osmium.SimpleWriter(str(out), overwrite=True) as w:
        for obj in osmium.FileProcessor(str(src)):
            w.add(obj)
    return out


def _renamed(path: Path, name: str) -> Path:
    return path.rename(path.with_name(name))


@pytest.mark.parametrize(
    "name,fmt",
    [
        ("city.xml", "osm"),
        ("export", "osm"),
        ("map.osm.txt", "osm"),
        ("download", "osm.gz"),
        ("data.bz2", "osm.bz2"),
        ("extract.bin", "pbf"),
        ("lines.txt", "opl"),
        ("really-xml.osm.pbf", "osm"),  # the content wins over a wrong suffix
    ],
)
def test_format_is_read_from_the_content(tmp_path, town_osm, reference, name, fmt):
    xml = town_osm.read_bytes()
    if fmt == "osm":
        path = tmp_path / name
        path.write_bytes(xml)
    elif fmt == "osm.gz":
        path = tmp_path / name
        path.write_bytes(gzip.compress(xml))
    elif fmt == "osm.bz2":
        path = tmp_path / name
        path.write_bytes(bz2.compress(xml))
    else:
        path = _renamed(
            _osmium_copy(town_osm, ".osm.pbf" if fmt == "pbf" else ".opl", tmp_path), name
        )
    assert osm.detect_format(path) == fmt
    city = import_osm(path)
    assert city.meta["format"] == fmt
    assert city_key(city) == reference
    # known suffixes are taken off the name; an unknown one (.txt, .bin) only
    assert city.name == {"map.osm.txt": "map.osm", "lines.txt": "lines"}.get(
        name, name.split(".")[0]
    )


def test_load_city_takes_a_suffixless_download(tmp_path, town_osm, reference):
    path = tmp_path / "map"  # what the "Export" button of openstreetmap.org saves
    path.write_bytes(town_osm.read_bytes())
    assert city_key(load_city(path, cache=False)) == reference


def test_unknown_content_and_name_is_refused_with_its_first_bytes(tmp_path):
    path = tmp_path / "notes"
    path.write_text("shopping list: milk\n")
    with pytest.raises(CityLoadError, match=r"notes: unsupported file type.*b'shopping list: m'"):
        import_osm(path)


# ------------------------------------------------------------------ Overpass JSON
def _elements(xml_path: Path) -> tuple[list[dict], list[dict], dict[int, dict]]:
    """Overpass JSON elements (``out body``) of an OSM XML file: node and way elements,
    and the nodes by id. Coordinates keep the XML's digits."""
    root = ET.parse(xml_path).getroot()
    nodes: dict[int, dict] = {}
    for n in root.iter("node"):
        el = {
            "type": "node",
            "id": int(n.get("id")),
            "lat": float(n.get("lat")),
            "lon": float(n.get("lon")),
        }
        tags = {t.get("k"): t.get("v") for t in n.iter("tag")}
        if tags:
            el["tags"] = tags
        nodes[el["id"]] = el
    ways = []
    for w in root.iter("way"):
        ways.append(
            {
                "type": "way",
                "id": int(w.get("id")),
                "nodes": [int(nd.get("ref")) for nd in w.iter("nd")],
                "tags": {t.get("k"): t.get("v") for t in w.iter("tag")},
            }
        )
    return list(nodes.values()), ways, nodes


def _geometry(way: dict, nodes: dict[int, dict]) -> list[dict]:
    return [{"lat": nodes[i]["lat"], "lon": nodes[i]["lon"]} for i in way["nodes"]]


def overpass_flavours(xml_path: Path) -> dict[str, dict]:
    """The same data as Overpass answers it to three common queries."""
    node_els, ways, nodes = _elements(xml_path)
    tagged = [n for n in node_els if "tags" in n]
    return {
        # way(...); (._;>;); out body;
        "out body": {"version": 0.6, "generator": "Overpass API", "elements": node_els + ways},
        # (node(...); way(...);); out geom;  -- untagged way nodes are not listed
        "out geom": {"elements": tagged + [{**w, "geometry": _geometry(w, nodes)} for w in ways]},
        # out tags geom; -- geometry without node ids
        "out tags geom": {
            "elements": tagged
            + [
                {"type": "way", "id": w["id"], "tags": w["tags"], "geometry": _geometry(w, nodes)}
                for w in ways
            ]
        },
    }


@pytest.mark.parametrize("flavour", ["out body", "out geom", "out tags geom"])
@pytest.mark.parametrize("name", ["city.json", "export", "city.json.gz"])
def test_overpass_json_gives_the_same_city_as_osm_xml(tmp_path, town_osm, reference, flavour, name):
    doc = overpass_flavours(town_osm)[flavour]
    data = json.dumps(doc).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    city = import_osm(path)
    assert city.meta["format"] == ("json.gz" if name.endswith(".gz") else "json")
    assert city_key(city) == reference


def test_overpass_json_with_bom_and_remark_warns(tmp_path, town_osm, reference):
    doc = overpass_flavours(town_osm)["out body"]
    doc["remark"] = 'runtime error: Query timed out in "query" at line 3 after 26 seconds.'
    path = tmp_path / "partial.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode())
    with pytest.warns(CityLoadWarning, match="partial.json: Overpass remarks .*timed out"):
        city = import_osm(path)
    assert city_key(city) == reference


def _courtyard() -> OsmWriter:
    """A 40 m x 40 m building with a 10 m x 10 m courtyard, mapped as a multipolygon
    relation with untagged outer and inner ways, beside a footway."""
    w = OsmWriter()
    outer = w.rect(0, 0, 40, 40, {})
    inner = w.rect(15, 15, 25, 25, {})
    f0, f1 = w.node(-10, -10), w.node(50, -10)
    w.way([f0, f1], {"highway": "footway"})
    w.relations = [
        (
            500,
            [("way", outer, "outer"), ("way", inner, "inner")],
            {"type": "multipolygon", "building": "yes", "name": "Pihatalo"},
        )
    ]
    return w


def _courtyard_xml(w: OsmWriter) -> str:
    rel_id, members, tags = w.relations[0]
    rel = [f'  <relation id="{rel_id}" version="1">']
    rel += [f'    <member type="{t}" ref="{r}" role="{role}"/>' for t, r, role in members]
    rel += [f'    <tag k="{k}" v="{v}"/>' for k, v in tags.items()]
    rel.append("  </relation>")
    return w.xml().replace("</osm>", "\n".join(rel) + "\n</osm>")


def test_overpass_multipolygon_relation(tmp_path):
    w = _courtyard()
    xml_path = tmp_path / "court.osm"
    xml_path.write_text(_courtyard_xml(w), encoding="utf-8")
    ref = import_osm(xml_path)
    (b,) = ref.buildings
    assert b.osm_id == "r500" and b.name == "Pihatalo"
    assert b.polygon.area == pytest.approx(40 * 40 - 10 * 10, rel=1e-3)
    assert len(b.polygon.interiors) == 1

    node_els, ways, nodes = _elements(xml_path)
    rel_id, members, tags = w.relations[0]
    rel = {
        "type": "relation",
        "id": rel_id,
        "tags": tags,
        "members": [{"type": t, "ref": r, "role": role} for t, r, role in members],
    }
    # (a) relation, its ways and their nodes (`(rel(...); >;); out;`)
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"elements": node_els + ways + [rel]}))
    # (b) `out geom` on the relation only: member ways carry their geometry
    geom_rel = dict(rel)
    geom_rel["members"] = [
        {**m, "geometry": _geometry(next(x for x in ways if x["id"] == m["ref"]), nodes)}
        for m in rel["members"]
    ]
    footway = next(x for x in ways if x["tags"])
    geom = tmp_path / "geom.json"
    geom.write_text(
        json.dumps({"elements": [{**footway, "geometry": _geometry(footway, nodes)}, geom_rel]})
    )
    for path in (body, geom):
        city = import_osm(path)
        (c,) = city.buildings
        assert (c.osm_id, c.name) == ("r500", "Pihatalo"), path.name
        assert c.polygon.normalize().equals_exact(b.polygon.normalize(), 1e-6), path.name
        assert city.network.number_of_edges() == 1


# ------------------------------------------------------------------ bad Overpass JSON
def _town_json(tmp_path, town_osm, change) -> Path:
    doc = overpass_flavours(town_osm)["out body"]
    change(doc["elements"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return path


def test_overpass_coordinate_that_is_not_a_number(tmp_path, town_osm):
    def change(els):
        els[18]["lat"] = "60.1"  # node 19, where the footway meets road R

    with pytest.raises(CityLoadError, match=r"bad.json: elements\[18\] \(node 19\): lat='60.1' is"):
        import_osm(_town_json(tmp_path, town_osm, change))


@pytest.mark.parametrize(
    "lat,shown", [(95.0, "lat=95 "), (10**400, "lat=<an integer of about 401 digits>")]
)
def test_overpass_coordinate_out_of_range_is_skipped_like_in_xml(tmp_path, town_osm, lat, shown):
    def change(els):
        els[18]["lat"] = lat

    with pytest.warns(CityLoadWarning, match=r"node 19 " + re.escape(shown) + r".*elements\[18\]"):
        city = import_osm(_town_json(tmp_path, town_osm, change))
    assert sorted(d["kind"] for _, _, d in city.network.edges(data=True)) == ["steps"]
    assert city.meta["stats"] == {"nodes_bad_location": 1, "ways_cut_bad_location": 2}


@pytest.mark.parametrize(
    "text,what",
    [
        ('{"type": "FeatureCollection", "features": []}', "expected an object with an 'elements'"),
        ("[" * 100_000, "nested too deeply"),
        ('{"elements": [{"type": "node", "id": 1, "lat": 1' + "0" * 5000 + "}]}", "4300 digits"),
        ('{"elements": [{"type": "node", "id": 1, "lat": NaN, "lon": 0}]}', "NaN"),
        ('{"elements": [{"type": "way", "id": 2, "nodes": [1, "x"]}]}', r"nodes\[1\]='x'"),
        ('{"elements": [{"type": "node", "id": 1' + "0" * 400 + "}]}", "about 401 digits"),
        ('{"elements": [{"type": "node", "id": 1, "tags": {"a": 5}}]}', "tags.a=5 must be"),
        (
            '{"elements": [{"type": "way", "id": 2, "nodes": [1], "geometry": []}]}',
            "has 1 nodes but 0 geometry points",
        ),
    ],
)
def test_malformed_overpass_json_is_named(tmp_path, text, what):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(CityLoadError, match=what) as e:
        import_osm(path)
    assert "bad.json" in str(e.value)


@pytest.mark.parametrize("flavour", ["out geom", "out tags geom"])
def test_overpass_null_geometry_point_is_a_missing_node(tmp_path, town_osm, flavour):
    """``out geom(bbox)`` writes ``null`` for way nodes outside the box: the way is cut
    there, as the .osm import cuts a way at a node missing from the extract."""
    text = town_osm.read_text(encoding="utf-8")
    start = text.index('<node id="18" ')  # f0, the west end of the footway
    cut = tmp_path / "cut.osm"
    cut.write_text(text[:start] + text[text.index("\n", start) + 1 :], encoding="utf-8")
    expected = city_key(import_osm(cut))
    doc = overpass_flavours(town_osm)[flavour]
    footway = next(e for e in doc["elements"] if e.get("tags", {}).get("highway") == "footway")
    footway["geometry"][0] = None
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(doc))
    city = import_osm(path)
    assert city_key(city) == expected
    (length,) = [
        d["length"] for _, _, d in city.network.edges(data=True) if d["name"] == "Rantapolku"
    ]
    assert length == pytest.approx(35.0, abs=0.05)  # f1 (15, -20) to f2 (50, -20)
