"""The sprite bank: every sprite's pyramid in one flat buffer, slots that agree with it;
sprite boxes in panorama windows."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from urban_gym.render import Conditions, PanoramaRenderer, kernels, sprites
from urban_gym.render.ids import sign_id
from urban_gym.render.raycast import ColumnCamera, cast
from urban_gym.render.textures import pedestrian_sprite


def test_bank_holds_each_sprite_once_with_its_pyramid():
    bank = sprites.SpriteBank(0.68)
    looks = [pedestrian_sprite(k) for k in range(12)]
    slots = [[] for _ in range(4)]

    def add(out):
        for spr in looks:
            out.append(bank.slot(spr))

    threads = [threading.Thread(target=add, args=(out,)) for out in slots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # every thread got the same slot for a sprite, one slot per sprite
    assert all(s == slots[0] for s in slots) and sorted(slots[0]) == list(range(len(looks)))
    pixels, levels, first, count, light_start, lights, height = bank.arrays()
    assert len(first) == len(count) == len(height) == len(light_start) - 1 == len(looks)
    for spr, s in zip(looks, slots[0]):
        pyramid = sprites._pyramid(spr, 0.68)
        assert count[s] == len(pyramid) and height[s] == spr.height_m
        for k, lv in enumerate(pyramid):
            off, h, w = levels[first[s] + k]
            np.testing.assert_array_equal(pixels[off : off + h * w * 4].reshape(h, w, 4), lv)
        assert light_start[s + 1] - light_start[s] == len(spr.glow)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_a_window_draws_the_sprites_across_its_edges(small_city, backend):
    """Eight 45-degree windows of a panorama (the cameras of pitched first-person views are
    such windows) put side by side give the whole panorama's pixels below its top quarter,
    within 3 levels: a sprite across a window's left edge is drawn in it. (Before the
    sprite boxes of a window were measured from its middle, such a sprite wrapped round to
    a box beyond the right edge and was dropped: 5 of these 20 places differed.) The top
    rows are left out: there the band a window ray-casts may start lower than the whole
    panorama's and its sky is a few levels off.
    """
    kernels.set_backend(backend)
    try:
        r = PanoramaRenderer(small_city, 256, 128)
        cams = [ColumnCamera.equirect(32, 128, -180.0 + 45.0 * t, 45.0) for t in range(8)]
        rng = np.random.default_rng(0)
        x0, y0, x1, y1 = small_city.bounds
        checked = 0
        for _ in range(30):
            x, y = rng.uniform(x0 + 20, x1 - 20), rng.uniform(y0 + 20, y1 - 20)
            if small_city.building_at(x, y) is not None:
                continue
            whole = r.render(x, y).rgb.astype(int)
            tiles = [cast(r.scene, c, x, y, 1.6, Conditions(), False, False)[0] for c in cams]
            diff = np.abs(whole - np.concatenate(tiles, axis=1).astype(int))[32:]
            assert diff.max() <= 3, f"place ({x:.1f}, {y:.1f}): windows differ by {diff.max()}"
            checked += 1
        assert checked >= 15
    finally:
        kernels.set_backend(None)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_a_window_keeps_a_blade_in_front_of_what_is_behind_it(small_city, backend):
    """Standing 1.5 m beside a blade sign (along the wall), the blade's pixels in the whole
    panorama are the blade's in the eight 45-degree windows too. The blade hangs above
    the rows a window ray-casts walls in; before the blade pass widened that band, it did
    not record its distance there and a tree farther away was drawn over it in the
    window: 40 of these 168 blades lost pixels so (by up to 250 levels).
    """
    kernels.set_backend(backend)
    try:
        r = PanoramaRenderer(small_city, 256, 128)
        sc = r.scene
        sc.ensure_signs()
        cams = [ColumnCamera.equirect(32, 128, -180.0 + 45.0 * t, 45.0) for t in range(8)]
        lost: list[int] = []
        checked = 0
        for k in range(len(sc.blade_poi)):
            (x0, y0, x1, y1), sid = sc.blade_xy[k], sign_id(int(sc.blade_poi[k]))
            ux, uy = (np.array([x1 - x0, y1 - y0]) / np.hypot(x1 - x0, y1 - y0)).tolist()
            mx, my = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
            spots = [(mx - s * uy * 1.5, my + s * ux * 1.5) for s in (1, -1)]
            spots = [p for p in spots if small_city.building_at(*p) is None]
            if not spots:
                continue
            x, y = spots[0]
            whole = r.render(x, y, ids=True).ids == sid
            tiles = [cast(sc, c, x, y, 1.6, Conditions(), False, True)[2] for c in cams]
            if not whole.any():
                continue
            checked += 1
            if (whole & (np.concatenate(tiles, axis=1) != sid)).any():
                lost.append(k)
        assert checked >= 100
        assert lost == []
    finally:
        kernels.set_backend(None)
