"""A window of a panorama (``PanoramaRenderer.render_window``) is that slice of the whole
panorama, and ``pano_region`` names every panorama pixel a perspective view reads."""

from __future__ import annotations

import numpy as np
import pytest

from urban_gym.render import Conditions, PanoramaRenderer, RenderError, perspective
from urban_gym.render.camera import pano_region

W, H = 256, 128


@pytest.fixture(scope="module")
def renderer(tiny_city):
    return PanoramaRenderer(tiny_city, W, H)


def _spot(city):
    x0, y0, x1, y1 = city.bounds
    return (x0 + x1) / 2 + 3.0, (y0 + y1) / 2 + 1.0


@pytest.mark.parametrize(
    "cond",
    [Conditions(), Conditions(time_of_day="dusk"), Conditions(weather="fog")],
    ids=["day", "dusk", "fog"],
)
@pytest.mark.parametrize(
    "cols, rows",
    [((0, W), (0, H)), ((10, 40), (30, 90)), ((240, 50), (0, 64)), ((128, 1), (64, 65))],
    ids=["whole", "middle", "wraps-the-seam", "one-pixel"],
)
def test_window_equals_the_slice_of_the_whole_panorama(renderer, tiny_city, cond, cols, rows):
    x, y = _spot(tiny_city)
    whole = renderer.render(x, y, conditions=cond).rgb
    part = renderer.render_window(x, y, cols, rows, conditions=cond)
    idx = np.arange(cols[0], cols[0] + cols[1]) % W
    assert part.shape == (rows[1] - rows[0], cols[1], 3)
    np.testing.assert_array_equal(part, whole[rows[0] : rows[1]][:, idx])


def test_window_under_rain_and_stars_is_the_slice_too(renderer, tiny_city):
    x, y = _spot(tiny_city)
    for cond in (Conditions(weather="rain", seed=4), Conditions(time_of_day="night", seed=4)):
        whole = renderer.render(x, y, conditions=cond).rgb
        part = renderer.render_window(x, y, (200, 100), (10, 100), conditions=cond)
        idx = np.arange(200, 300) % W
        np.testing.assert_array_equal(part, whole[10:100][:, idx])


@pytest.mark.parametrize(
    "cols, rows, match",
    [((W, 10), (0, 10), "cols="), ((0, 0), (0, 10), "cols="), ((0, 10), (5, 5), "rows=")],
)
def test_bad_window_is_named(renderer, tiny_city, cols, rows, match):
    with pytest.raises(RenderError, match=match):
        renderer.render_window(*_spot(tiny_city), cols, rows)


@pytest.mark.parametrize(
    "yaw, pitch, fov, size",
    [(0.0, 0.0, 90.0, (84, 84)), (179.0, 20.0, 60.0, (64, 48)), (-100.0, -30.0, 100.0, (50, 50))],
)
def test_pano_region_holds_every_pixel_the_view_reads(yaw, pitch, fov, size):
    rng = np.random.default_rng(0)
    pano = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    c0, n, r0, nr = pano_region(size, fov, pitch, yaw, (H, W))
    assert 0 <= c0 < W and 0 < n <= W and 0 <= r0 and r0 + nr <= H
    # a view fov degrees wide at modest pitch reads far less than the whole panorama
    assert n < W * 0.75 and nr < H
    kept = np.zeros_like(pano)
    idx = np.arange(c0, c0 + n) % W
    kept[r0 : r0 + nr, idx] = pano[r0 : r0 + nr, idx]
    np.testing.assert_array_equal(
        perspective(kept, yaw, pitch, fov, size), perspective(pano, yaw, pitch, fov, size)
    )


def test_pano_region_of_a_view_of_the_zenith_is_every_column():
    c0, n, r0, _ = pano_region(64, 90.0, 90.0, 30.0, (H, W))
    assert (n, r0) == (W, 0)
