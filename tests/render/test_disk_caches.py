"""What a loaded city's renderer prepares (ground painter, scene walls) is kept in the world cache
and read back, equal to what it builds."""

from __future__ import annotations

import numpy as np

from urban_gym.render.ground import GroundPainter
from urban_gym.world import load_city


def test_the_painter_of_a_loaded_city_comes_from_the_disk_cache(monkeypatch):
    city = load_city("procedural:seed=5,blocks=3x3")
    assert city.fingerprint is not None
    first = GroundPainter.for_city(city)  # built and written
    built = GroundPainter(city)

    def no_build(self, city):
        raise AssertionError("prepared again instead of read from the disk cache")

    monkeypatch.setattr(GroundPainter, "__init__", no_build)
    again = GroundPainter.for_city(city)
    assert again is not first and again.city is city
    for cx, cy in [(0.0, 0.0), (-60.0, 40.0), (90.0, -90.0)]:
        a, b = again.paint(cx, cy), built.paint(cx, cy)
        assert (a.x0, a.y1, a.mpp) == (b.x0, b.y1, b.mpp)
        assert np.array_equal(a.image, b.image)


def test_a_city_without_fingerprint_gets_a_painter_built_for_it(tiny_city, monkeypatch):
    import copy

    city = copy.copy(tiny_city)
    city.fingerprint = None
    calls = []
    real = GroundPainter.__init__

    def counted(self, c):
        calls.append(c)
        real(self, c)

    monkeypatch.setattr(GroundPainter, "__init__", counted)
    GroundPainter.for_city(city)
    GroundPainter.for_city(city)
    assert len(calls) == 2 and calls[0] is city


def test_scene_walls_of_a_loaded_city_come_from_the_disk_cache(monkeypatch):
    import copy

    from urban_gym.render.scene import Scene

    city = load_city("procedural:seed=6,blocks=3x3")
    Scene(city)  # built and written
    plain = copy.copy(city)
    plain.fingerprint = None
    built = Scene(plain)  # no fingerprint: built in memory

    def no_build(self):
        raise AssertionError("walls built again instead of read from the disk cache")

    probe = Scene.__new__(Scene)
    probe.city = plain
    walls = probe._walls_and_grid()  # what the build sets, by name
    monkeypatch.setattr(Scene, "_build_walls", no_build)
    again = Scene(city)
    assert "seg_xy" in walls and "grid_start" in walls
    for k in walls:
        a, b = getattr(again, k), getattr(built, k)
        if isinstance(a, list):
            assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b)), k
        else:
            assert np.array_equal(a, b), k
    assert again.n_segs > 0


def test_every_conditions_atlas_stays_loaded_for_a_batch_under_mixed_conditions():
    # a batch of envs under all nine (time of day, weather) pairs draws with every atlas in
    # turn: a second round must find each loaded, not read its file again
    from urban_gym.render.conditions import TIMES_OF_DAY, WEATHERS
    from urban_gym.render.raycast import combined_atlas

    pairs = [(t, w) for t in TIMES_OF_DAY for w in WEATHERS]
    assert len(pairs) == 9
    first = [combined_atlas(t, w) for t, w in pairs]
    misses = combined_atlas.cache_info().misses
    again = [combined_atlas(t, w) for t, w in pairs]
    assert combined_atlas.cache_info().misses == misses
    assert all(a is b for a, b in zip(first, again))
