"""load_city: names, specs, the on-disk cache and its corruption handling."""

import pytest

from urban_gym.errors import CityLoadError
from urban_gym.world import City, clear_memory_cache, load_city
from urban_gym.world.loader import cache_dir

from .osm_fixture import town


def test_second_helsinki_load_comes_from_cache(helsinki):
    clear_memory_cache()
    again = load_city("helsinki")
    assert again.meta["loaded_from"] == "cache"
    assert again is not helsinki
    assert again.summary() == helsinki.summary()
    assert load_city("HELSINKI") is again  # in-process memo, names are case-insensitive


def test_corrupt_cache_entry_is_rebuilt(tmp_path):
    path = town().write(tmp_path / "t.osm")
    first = load_city(path)
    assert first.meta["loaded_from"] == "import"
    clear_memory_cache()
    files = [f for f in cache_dir().glob("city-*.pkl")]
    assert files
    for f in files:  # flip bytes in the middle of every cache entry
        data = bytearray(f.read_bytes())
        data[len(data) // 2] ^= 0xFF
        f.write_bytes(bytes(data))
    rebuilt = load_city(path)
    assert rebuilt.meta["loaded_from"] == "import"
    assert rebuilt.summary() == first.summary()
    clear_memory_cache()
    assert load_city(path).meta["loaded_from"] == "cache"


def test_truncated_cache_entry_is_rebuilt(tmp_path):
    path = town().write(tmp_path / "u.osm")
    load_city(path)
    clear_memory_cache()
    for f in cache_dir().glob("city-*.pkl"):
        f.write_bytes(f.read_bytes()[:40])
    assert load_city(path).meta["loaded_from"] == "import"


def test_cache_can_be_bypassed(tmp_path):
    path = town().write(tmp_path / "v.osm")
    assert load_city(path, cache=False).meta["loaded_from"] == "import"
    assert load_city(path, cache=False).meta["loaded_from"] == "import"


def test_procedural_spec_and_bundle_dir(tmp_path):
    c = load_city("procedural:seed=3,blocks=2x2")
    assert isinstance(c, City) and len(c.buildings) > 10
    c.save(tmp_path / "b")
    assert load_city(tmp_path / "b").summary() == c.summary()


@pytest.mark.parametrize(
    "spec,match",
    [
        ("procedural:seed=3,blocks=4", "blocks='4'"),
        ("procedural:seed=x", "seed='x'"),
        ("procedural:colour=red", "unknown key 'colour'"),
        ("procedural:blocks=0x3", "blocks="),
        ("procedural:seed=1,block_size=5", "block_size=5"),
        ("procedural:seed1", "'seed1' is not key=value"),
    ],
)
def test_bad_procedural_specs(spec, match):
    with pytest.raises(CityLoadError, match=match):
        load_city(spec)


def test_bbox_rejected_for_procedural():
    with pytest.raises(CityLoadError, match="bbox"):
        load_city("procedural:seed=1,blocks=2x2", bbox=(0, 0, 1, 1))


def test_procedural_cities_come_from_the_disk_cache_with_a_fingerprint(tmp_path):
    spec = "procedural:seed=5,blocks=2x3"
    first = load_city(spec)
    assert first.fingerprint and first.fingerprint.startswith("procedural:")
    clear_memory_cache()
    again = load_city(spec)
    assert again is not first and again.meta["loaded_from"] == "cache"
    assert again.summary() == first.summary() and again.fingerprint == first.fingerprint
    other = load_city("procedural:seed=6,blocks=2x3")
    assert other.fingerprint != first.fingerprint
    # OSM cities are named by their file's hash; a bundle (files a user may edit) has none
    town_path = town().write(tmp_path / "w.osm")
    assert load_city(town_path).fingerprint.startswith("osm:")
    first.save(tmp_path / "bundle")
    assert load_city(tmp_path / "bundle").fingerprint is None
