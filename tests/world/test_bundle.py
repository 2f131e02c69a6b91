import json

import pytest
import shapely

from urban_gym.errors import BundleError
from urban_gym.world import City


def assert_same_city(a: City, b: City) -> None:
    assert a.name == b.name and a.frame == b.frame and a.meta == b.meta
    assert len(a.buildings) == len(b.buildings)
    for x, y in zip(a.buildings, b.buildings):
        assert shapely.equals_exact(x.polygon, y.polygon, tolerance=0.0)
        assert (x.id, x.osm_id, x.height, x.kind, x.levels, x.height_source, x.name, x.tags) == (
            y.id,
            y.osm_id,
            y.height,
            y.kind,
            y.levels,
            y.height_source,
            y.name,
            y.tags,
        )
    assert a.pois == b.pois
    assert a.objects == b.objects
    for x, y in zip(a.areas, b.areas, strict=True):
        assert shapely.equals_exact(x.polygon, y.polygon, tolerance=0.0)
        assert (x.id, x.osm_id, x.kind, x.name, x.tags) == (y.id, y.osm_id, y.kind, y.name, y.tags)
    assert list(a.network.nodes(data=True)) == list(b.network.nodes(data=True))
    ea = {(u, v): d for u, v, d in a.network.edges(data=True)}
    eb = {(u, v): d for u, v, d in b.network.edges(data=True)}
    assert ea.keys() == eb.keys()
    for k in ea:
        da, db = dict(ea[k]), dict(eb[k])
        assert shapely.equals_exact(da.pop("geometry"), db.pop("geometry"), tolerance=0.0)
        assert da == db


def test_helsinki_round_trip_is_exact(helsinki, tmp_path):
    helsinki.save(tmp_path / "hel")
    back = City.load(tmp_path / "hel")
    assert_same_city(helsinki, back)


def test_procedural_round_trip_is_exact(small_city, tmp_path):
    small_city.save(tmp_path / "p")
    assert_same_city(small_city, City.load(tmp_path / "p"))


def test_bundle_is_geojson(tiny_city, tmp_path):
    d = tiny_city.save(tmp_path / "t")
    fc = json.loads((d / "buildings.geojson").read_text())
    assert fc["type"] == "FeatureCollection"
    assert fc["features"][0]["geometry"]["type"] == "Polygon"


def test_missing_file_in_bundle(tiny_city, tmp_path):
    d = tiny_city.save(tmp_path / "t")
    (d / "pois.geojson").unlink()
    with pytest.raises(BundleError, match="pois.geojson: missing"):
        City.load(d)


def test_malformed_bundle(tiny_city, tmp_path):
    d = tiny_city.save(tmp_path / "t")
    (d / "objects.geojson").write_text('{"type": "FeatureCollection", "features": [{}]}')
    with pytest.raises(BundleError, match="malformed"):
        City.load(d)
    (d / "city.json").write_text("{not json")
    with pytest.raises(BundleError, match="city.json: not valid JSON"):
        City.load(d)


def test_not_a_bundle(tmp_path):
    with pytest.raises(BundleError, match="not a bundle directory"):
        City.load(tmp_path / "nothing")
