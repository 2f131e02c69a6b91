"""The small compiled passes that stand in for numpy and OpenCV steps of a frame (so that
a drawing thread keeps the GIL through them, or releases it once for several) give the
same values as the steps they replace."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from urban_gym.render import kernels

pytest.importorskip("numba")


@pytest.fixture()
def jit():
    k = kernels.compiled()
    if k is None:
        pytest.skip("the compiled kernels are not available")
    return k


def test_haze_weights_equal_numpy_minimum_then_scale_in_float32(jit):
    rng = np.random.default_rng(0)
    depth = rng.uniform(0.0, 3e4, (37, 53)).astype(np.float32)
    depth[0, :5] = [np.inf, 1e4, np.nextafter(np.float32(1e4), np.float32(0)), 0.0, np.nan]
    for vis in (60.0, 350.0):
        want = np.minimum(depth, 1e4)
        want *= -3.0 / vis
        got = jit.haze_weights(depth, -3.0 / vis)
        assert got.dtype == np.float32
        assert np.array_equal(got, want, equal_nan=True)
        assert got[0, 0] == got[0, 1] == np.float32(1e4) * np.float32(-3.0 / vis)
        assert np.isnan(got[0, 4])


def test_one_minus_and_rgba_to_rgb_equal_numpy_and_opencv(jit):
    rng = np.random.default_rng(1)
    f = cv2.exp(rng.uniform(-30.0, 0.0, (29, 41)).astype(np.float32))
    assert np.array_equal(jit.one_minus(f), 1.0 - f)
    rgba = rng.integers(0, 256, (29, 41, 4), dtype=np.uint8)
    rgb = jit.rgba_to_rgb(rgba)
    assert rgb.shape == (29, 41, 3) and rgb.flags.c_contiguous
    assert np.array_equal(rgb, cv2.cvtColor(rgba, cv2.COLOR_RGBA2RGB))


def test_finish_frame_transposes_the_sampled_columns_into_their_rows(jit):
    rng = np.random.default_rng(2)
    H, W, r_top, hb = 20, 13, 4, 9
    rgb = rng.integers(0, 256, (H, W, 4), dtype=np.uint8)
    cols = rng.integers(0, 256, (W, hb, 4), dtype=np.uint8)
    want = rgb.copy()
    cv2.transpose(cols, dst=want[r_top : r_top + hb])
    k = 6
    bounds = np.zeros((W, k + 3), np.int64)
    bounds[:, k + 1 :] = H  # no ground row
    no_ground = np.zeros((0, 1, 4), np.uint8)
    lut = np.zeros((3, 256), np.uint8)
    atlas = np.zeros((2, 2, 4), np.uint8)
    none = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    jit.finish_frame(rgb, cols, r_top, no_ground, bounds, k, H, lut, False, atlas, none)
    assert np.array_equal(rgb, want)
    assert np.array_equal(rgb[r_top + 2, 7], cols[7, 2])  # row r_top + i, column c: cols[c, i]


def test_a_star_field_is_drawn_once_per_seed_and_size_and_lands_only_in_the_sky():
    from urban_gym.render.raycast import _star_field, _stars

    H, W, seed = 90, 120, 4321
    r, c, v = _star_field(seed, H, W)
    rng = np.random.default_rng(seed)  # the field as first drawn: 20 stars at least
    n = max(20, H * W // 3000)
    assert np.array_equal(r, rng.integers(0, H, n)) and np.array_equal(c, rng.integers(0, W, n))
    assert np.array_equal(v, rng.integers(150, 255, n).astype(np.uint8))
    assert _star_field(seed, H, W)[0] is r  # kept, not drawn again
    assert not r.flags.writeable
    rgb = np.zeros((H, W, 4), np.uint8)
    sky_end = np.full(W, 30)
    _stars(rgb, sky_end, seed)
    lit = np.argwhere(rgb[..., :3].any(axis=2))
    assert len(lit) and (lit[:, 0] < 29).all()  # rows above sky_end - 1 only
    assert not rgb[..., 3].any()  # the colour channels only
