"""The walking geometry of a loaded city is built once per machine and read back after."""

from __future__ import annotations

import pickle

from urban_gym.families.citywalk.dynamics import _LOW_CACHE, low_obstacles
from urban_gym.world import load_city
from urban_gym.world.walkable import _GEOMETRY_CACHE, WalkGeometry


def _same(a: WalkGeometry, b: WalkGeometry) -> None:
    for grid in ("walls", "net"):
        ga, gb = getattr(a, grid), getattr(b, grid)
        assert ga.cells == gb.cells and ga.ax == gb.ax and ga.reach == gb.reach
    assert a.net_edge == b.net_edge and a.net_offset == b.net_offset
    assert a.net_covered == b.net_covered
    assert len(a.obstacles) == len(b.obstacles)
    assert all(p.equals(q) for p, q in zip(a.obstacles, b.obstacles))
    assert (a.shelter is None) == (b.shelter is None)


def test_a_pickled_geometry_answers_as_the_built_one(small_city):
    built = WalkGeometry.build(small_city)
    back = pickle.loads(pickle.dumps(built))
    _same(back, built)
    # the shelter (a prepared geometry) is prepared again on arrival
    probes = [(x, y) for x in range(-200, 201, 25) for y in range(-200, 201, 25)]
    assert [back.covered(x, y) for x, y in probes] == [built.covered(x, y) for x, y in probes]


def test_a_loaded_citys_geometry_comes_from_the_disk_cache_the_second_time(monkeypatch):
    city = load_city("procedural:seed=11,blocks=3x3")
    assert city.fingerprint is not None
    _GEOMETRY_CACHE.clear()
    _LOW_CACHE.clear()
    first = WalkGeometry.for_city(city)
    ground = low_obstacles(city, first)
    # a new process: the memo is empty, and building again would fail the test
    _GEOMETRY_CACHE.clear()
    _LOW_CACHE.clear()
    real_build = WalkGeometry.build

    def no_build(*a, **k):
        raise AssertionError("built again instead of read from the disk cache")

    monkeypatch.setattr(WalkGeometry, "build", no_build)
    again = WalkGeometry.for_city(city)
    assert again is not first
    _same(again, first)
    _same(again, real_build(city))
    ground_again = low_obstacles(city, again)
    assert ground_again.walls.cells == ground.walls.cells
    assert ground_again.net is again.net  # only the walls differ from the plain geometry


def test_obstacles_of_another_geometry_are_not_taken_from_the_cache(small_city):
    assert any(o.kind == "bench" for o in small_city.objects)  # obstacles to add
    own = WalkGeometry.for_city(small_city)
    other = WalkGeometry.build(small_city)  # same city, not its memoised geometry
    a, b = low_obstacles(small_city, own), low_obstacles(small_city, other)
    assert a.walls.cells == b.walls.cells and b.net is other.net
