"""Arrays kept on disk once per machine: built once, then read back memory-mapped and equal;
a corrupt file is rebuilt; an unwritable cache folder still gives the array."""

from __future__ import annotations

import numpy as np

from urban_gym.world import diskcache


def test_built_once_then_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("URBAN_GYM_CACHE", str(tmp_path))
    calls = []

    def build():
        calls.append(1)
        return np.arange(12, dtype=np.uint8).reshape(3, 4)

    a = diskcache.cached_array("probe", build, diskcache)
    b = diskcache.cached_array("probe", build, diskcache)
    assert len(calls) == 1
    np.testing.assert_array_equal(a, b)
    assert isinstance(b, np.memmap) and not b.flags.writeable
    # a truncated file is rebuilt, not trusted
    (path,) = (tmp_path / "render").glob("probe-*.npy")
    path.write_bytes(path.read_bytes()[:20])
    c = diskcache.cached_array("probe", build, diskcache)
    assert len(calls) == 2 and c.shape == (3, 4)


def test_unwritable_cache_still_builds(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("URBAN_GYM_CACHE", str(blocker))
    a = diskcache.cached_array("probe", lambda: np.ones((2, 2), np.uint8), diskcache)
    assert a.sum() == 4


def test_objects_are_kept_checked_and_older_versions_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv("URBAN_GYM_CACHE", str(tmp_path))
    calls = []

    def build():
        calls.append(1)
        return {"a": np.arange(3), "b": ["x", 2]}

    first = diskcache.cached_object("thing", build, diskcache)
    again = diskcache.cached_object("thing", build, diskcache)
    assert len(calls) == 1 and again["b"] == ["x", 2]
    np.testing.assert_array_equal(again["a"], first["a"])
    (path,) = (tmp_path / "render").glob("thing-*.pkl")
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # a flipped byte fails the checksum: built again
    path.write_bytes(bytes(data))
    diskcache.cached_object("thing", build, diskcache)
    assert len(calls) == 2
    # a file of the same name from other code (another source digest) goes when a new one
    # is written; files of other names stay
    stale = path.with_name("thing-000000000000.pkl")
    stale.write_bytes(b"old")
    keep = path.with_name("thing-else-000000000000.pkl")
    keep.write_bytes(b"other")
    path.unlink()
    diskcache.cached_object("thing", build, diskcache)
    assert not stale.exists() and keep.exists() and path.exists()


def test_signs_from_the_cache_are_the_signs_built(tmp_path, monkeypatch):
    monkeypatch.setenv("URBAN_GYM_CACHE", str(tmp_path))
    from urban_gym.render.scene import Scene
    from urban_gym.world import load_city

    city = load_city("procedural:seed=4,blocks=2x2")
    built = Scene(city)._build_signs()
    cached = Scene(city)
    cached.ensure_signs()  # builds and writes
    again = Scene(city)
    again.ensure_signs()  # reads
    assert isinstance(again.sign_atlas, np.memmap)
    np.testing.assert_array_equal(np.asarray(again.sign_atlas), built["sign_atlas"])
    np.testing.assert_array_equal(again.sign_u0, built["sign_u0"])
    assert again.poi_sign.keys() == built["poi_sign"].keys() and len(again.signs) > 0


def test_a_value_for_a_city_is_kept_by_its_fingerprint_and_key(tmp_path, monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setenv("URBAN_GYM_CACHE", str(tmp_path))
    calls = []

    def build():
        calls.append(1)
        return {"n": len(calls)}

    loaded = SimpleNamespace(fingerprint="osm:abc")
    assert diskcache.cached_for_city("probe", loaded, build, diskcache) == {"n": 1}
    assert diskcache.cached_for_city("probe", loaded, build, diskcache) == {"n": 1}  # read
    assert diskcache.cached_for_city("probe", loaded, build, diskcache, key="x") == {"n": 2}
    other = SimpleNamespace(fingerprint="osm:def")
    assert diskcache.cached_for_city("probe", other, build, diskcache) == {"n": 3}
    in_code = SimpleNamespace(fingerprint=None)  # a city built in code: never kept
    assert diskcache.cached_for_city("probe", in_code, build, diskcache) == {"n": 4}
    assert diskcache.cached_for_city("probe", in_code, build, diskcache) == {"n": 5}


def test_a_module_and_its_dotted_name_name_the_same_sources():
    from urban_gym.world import geo

    by_module = diskcache.source_digest(diskcache, geo)
    assert diskcache.source_digest("urban_gym.world.diskcache", "urban_gym.world.geo") == by_module
    assert diskcache.source_digest(geo, diskcache) != by_module  # the order is part of it


def test_an_array_opened_once_stays_open_until_its_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("URBAN_GYM_CACHE", str(tmp_path))
    calls = []

    def build():
        calls.append(1)
        return np.full((4, 5), len(calls), np.uint8)

    a = diskcache.cached_array("kept", build, diskcache)
    b = diskcache.cached_array("kept", build, diskcache)
    assert b is a and len(calls) == 1  # the same mapping, no second read of the file
    # another process replaces the file (a new inode): the new file is read, not the old map
    (path,) = (tmp_path / "render").glob("kept-*.npy")
    np.save(tmp_path / "other.npy", np.full((4, 5), 7, np.uint8))
    (tmp_path / "other.npy").replace(path)
    c = diskcache.cached_array("kept", build, diskcache)
    assert c is not a and int(c[0, 0]) == 7 and len(calls) == 1


def test_an_opened_array_outlives_its_removed_file(tmp_path, monkeypatch):
    """Another code version's process dropping the file (or a cleared cache) does not make
    this process build the array again: its mapping is still readable."""
    monkeypatch.setenv("URBAN_GYM_CACHE", str(tmp_path))
    calls = []

    def build():
        calls.append(1)
        return np.arange(6, dtype=np.uint8)

    a = diskcache.cached_array("gone", build, diskcache)
    (path,) = (tmp_path / "render").glob("gone-*.npy")
    path.unlink()
    b = diskcache.cached_array("gone", build, diskcache)
    assert b is a and len(calls) == 1 and b.tolist() == [0, 1, 2, 3, 4, 5]


def test_stored_array_reads_what_cached_array_kept_and_builds_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("URBAN_GYM_CACHE", str(tmp_path))
    assert diskcache.stored_array("kept2", diskcache) is None
    assert not (tmp_path / "render").exists()  # nothing built, nothing written
    a = diskcache.cached_array("kept2", lambda: np.full(3, 9, np.uint8), diskcache)
    assert diskcache.stored_array("kept2", diskcache) is a
