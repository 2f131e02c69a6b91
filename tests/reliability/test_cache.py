"""The world cache never lands in the current directory, and a failed write costs only
speed.

``URBAN_GYM_CACHE=""`` counts as unset. A cache that cannot be written -- its directory is
a file, the entry's name is taken by a directory, the disk is full (a file-size limit set
with ``setrlimit`` in a child process: writes past it fail with EFBIG, as on a full disk,
even for root), a read-only directory -- loads the city anyway, warns once with the
reason, and leaves no ``.tmp-*.pkl`` behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import pytest

from tests.world.osm_fixture import town
from urban_gym.errors import CityLoadWarning
from urban_gym.world import clear_memory_cache, load_city
from urban_gym.world.loader import _cache_file, cache_dir, file_sha256


@pytest.fixture
def osm_file(tmp_path):
    """The fixture town as .osm, made unique (a comment) so that no other test's import
    of it is already in this process's memory."""
    src = tmp_path / "src"
    src.mkdir()
    path = src / "t.osm"
    path.write_text(town().xml() + f"<!-- {tmp_path} -->\n", encoding="utf-8")
    return path


def _leftovers(*folders) -> list[str]:
    return sorted(p.name for f in folders if f.is_dir() for p in f.rglob(".tmp-*"))


@pytest.mark.parametrize("value", ["", "   "])
def test_empty_cache_variable_means_the_default_not_the_cwd(tmp_path, monkeypatch, osm_file, value):
    cwd, home = tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("URBAN_GYM_CACHE", value)
    assert cache_dir() == home / ".cache" / "urban_gym"
    assert load_city(osm_file).meta["loaded_from"] == "import"
    assert list(cwd.iterdir()) == []
    assert len(list((home / ".cache" / "urban_gym").glob("city-*.pkl"))) == 1
    clear_memory_cache()
    assert load_city(osm_file).meta["loaded_from"] == "cache"


def test_cache_variable_expands_the_home_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("URBAN_GYM_CACHE", "~/worlds")
    assert cache_dir() == tmp_path / "worlds"


def test_cache_directory_that_is_a_file(tmp_path, monkeypatch, osm_file):
    blocker = tmp_path / "cachefile"
    blocker.write_text("not a directory")
    monkeypatch.setenv("URBAN_GYM_CACHE", str(blocker))
    with pytest.warns(CityLoadWarning, match=r"city not cached: cannot write .*cachefile"):
        city = load_city(osm_file)
    assert len(city.buildings) == 3 and city.meta["loaded_from"] == "import"
    assert blocker.read_text() == "not a directory"
    assert _leftovers(tmp_path) == []


def test_cache_entry_taken_by_a_directory_leaves_no_temporary_file(tmp_path, monkeypatch, osm_file):
    cache = tmp_path / "cache"
    monkeypatch.setenv("URBAN_GYM_CACHE", str(cache))
    entry = _cache_file(file_sha256(osm_file), None, None)
    entry.mkdir(parents=True)  # the rename onto the entry fails: IsADirectoryError
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        city = load_city(osm_file)
    assert len(city.buildings) == 3
    assert _leftovers(cache) == [] and sorted(p.name for p in cache.iterdir()) == [entry.name]
    (w,) = [w for w in rec if w.category is CityLoadWarning]
    assert "city not cached" in str(w.message) and "IsADirectoryError" in str(w.message)


def test_full_disk_leaves_no_temporary_file(tmp_path, osm_file):
    """A child process may write files of at most 1000 bytes (the cached town is about
    3.5 kB): the cache write fails half way, as on a full disk."""
    cache = tmp_path / "cache"
    cache.mkdir()
    code = textwrap.dedent(
        f"""
        import resource, signal, warnings
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
        from urban_gym.world import load_city
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            city = load_city({str(osm_file)!r})
        print(len(city.buildings), city.meta["loaded_from"])
        print([str(x.message) for x in w])
        """
    )
    env = {**os.environ, "URBAN_GYM_CACHE": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    first, warned = out.stdout.splitlines()[:2]
    assert first == "3 import"
    assert sorted(p.name for p in cache.iterdir()) == []
    assert "city not cached" in warned and "File too large" in warned, warned


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_cache_directory(tmp_path, monkeypatch, osm_file):
    cache = tmp_path / "ro"
    cache.mkdir()
    cache.chmod(0o555)
    monkeypatch.setenv("URBAN_GYM_CACHE", str(cache))
    try:
        with pytest.warns(CityLoadWarning, match="city not cached"):
            city = load_city(osm_file)
        assert len(city.buildings) == 3 and list(cache.iterdir()) == []
    finally:
        cache.chmod(0o755)
