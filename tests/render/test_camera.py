"""Equirect -> perspective camera: bearings, pitch, constant colour, cache, bad input."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urban_gym.render import (
    RenderError,
    camera,
    camera_cache_info,
    check_equirect,
    clear_camera_cache,
    perspective,
    perspective_batch,
)

# colour of the 40-degree band centred on each compass direction
BANDS = {0: (255, 0, 0), 90: (0, 255, 0), 180: (0, 0, 255), 270: (255, 255, 0)}
ZENITH = (255, 255, 255)
NADIR = (0, 0, 0)


def bearing_pano(h: int = 256, pano_heading: float = 0.0) -> np.ndarray:
    """Columns coloured by true bearing (grey outside the bands); top and bottom 8 rows
    coloured ZENITH and NADIR."""
    w = 2 * h
    pano = np.full((h, w, 3), 128, np.uint8)
    bearing = (pano_heading + ((np.arange(w) + 0.5) / w - 0.5) * 360.0) % 360.0
    for b, colour in BANDS.items():
        d = np.abs((bearing - b + 180.0) % 360.0 - 180.0)
        pano[:, d < 20.0] = colour
    pano[:8] = ZENITH
    pano[-8:] = NADIR
    return pano


@pytest.mark.parametrize("yaw", [0, 90, 180, 270])
def test_centre_shows_colour_of_bearing(yaw):
    view = perspective(bearing_pano(), yaw, fov=30, size=33)
    assert tuple(view[16, 16]) == BANDS[yaw]


@pytest.mark.parametrize("heading", [90.0, 200.0, -45.0])
@pytest.mark.parametrize("yaw", [0, 90, 180, 270])
def test_pano_heading_is_honoured(heading, yaw):
    view = perspective(
        bearing_pano(pano_heading=heading), yaw, fov=30, size=33, pano_heading=heading
    )
    assert tuple(view[16, 16]) == BANDS[yaw]


def test_right_of_centre_is_clockwise():
    # looking north with a 120-degree view, east-ish bearings (green band, 70..110) fall
    # off the right edge but the band edge at 70 degrees lies 70 deg right of centre
    view = perspective(bearing_pano(), 45, fov=120, size=(121, 21))
    assert tuple(view[10, 0]) == BANDS[0] and tuple(view[10, 120]) == BANDS[90]


def test_pitch_up_and_down_see_zenith_and_nadir():
    pano = bearing_pano()
    assert tuple(perspective(pano, 0, pitch=90, fov=10, size=9)[4, 4]) == ZENITH
    assert tuple(perspective(pano, 123, pitch=-90, fov=10, size=9)[4, 4]) == NADIR
    # a view tilted up by 30 degrees still shows the north band at its centre
    assert tuple(perspective(pano, 0, pitch=30, fov=20, size=9)[4, 4]) == BANDS[0]


def test_batch_matches_single_views():
    pano = bearing_pano()
    batch = perspective_batch(pano, [0, 90, 180, 270], fov=60, size=(40, 30))
    assert batch.shape == (4, 30, 40, 3) and batch.dtype == np.uint8
    for k, yaw in enumerate([0, 90, 180, 270]):
        np.testing.assert_array_equal(batch[k], perspective(pano, yaw, fov=60, size=(40, 30)))


def test_works_on_any_2_to_1_image_size():
    view = perspective(bearing_pano(h=101), 180, fov=30, size=(17, 9))
    assert view.shape == (9, 17, 3) and tuple(view[4, 8]) == BANDS[180]


@settings(max_examples=40, deadline=None)
@given(
    colour=st.tuples(*[st.integers(0, 255)] * 3),
    yaw=st.floats(-720, 720),
    pitch=st.floats(-90, 90),
    fov=st.floats(1, 179),
    w=st.integers(1, 40),
    h=st.integers(1, 40),
)
def test_constant_panorama_gives_constant_view(colour, yaw, pitch, fov, w, h):
    pano = np.empty((32, 64, 3), np.uint8)
    pano[:] = colour
    view = perspective(pano, yaw, pitch=pitch, fov=fov, size=(w, h))
    assert view.shape == (h, w, 3)
    assert (view == np.array(colour, np.uint8)).all()


def test_cache_reuses_and_stays_bounded(monkeypatch):
    clear_camera_cache()
    pano = bearing_pano(h=64)
    perspective(pano, 10, size=16)
    perspective(pano, 10, size=16)
    assert camera_cache_info()["entries"] == 1
    perspective(pano, 370, size=16)  # same relative yaw
    assert camera_cache_info()["entries"] == 1
    monkeypatch.setattr(camera, "CACHE_MAX_ENTRIES", 5)
    for yaw in range(20):
        perspective(pano, yaw, size=16)
    assert camera_cache_info()["entries"] == 5
    clear_camera_cache()
    assert camera_cache_info() == {"entries": 0, "bytes": 0}


@pytest.mark.parametrize(
    ("pano", "match"),
    [
        (np.zeros((10, 30, 3), np.uint8), "2:1"),
        (np.zeros((0, 0, 3), np.uint8), "empty"),
        (np.zeros((10, 20, 3), np.float32), "uint8"),
        (np.zeros((10, 20), np.uint8), r"\(H, 2H, 3\)"),
        (np.zeros((10, 20, 4), np.uint8), r"\(H, 2H, 3\)"),
        ([[0]], "numpy array"),
    ],
)
def test_bad_panoramas_are_named(pano, match):
    with pytest.raises(RenderError, match=match):
        check_equirect(pano)
    with pytest.raises(RenderError, match=match):
        perspective(pano, 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fov": 0}, "fov=0"),
        ({"fov": 180}, "fov=180"),
        ({"fov": -5.0}, "fov=-5.0"),
        ({"fov": float("nan")}, "fov=nan"),
        ({"size": 0}, "size=0"),
        ({"size": (16, -1)}, r"size=\(16, -1\)"),
        ({"size": 2.5}, "size=2.5"),
        ({"pitch": 91}, "pitch=91"),
        ({"yaw": "north"}, "yaw='north'"),
    ],
)
def test_bad_camera_arguments_are_named(kwargs, match):
    args = {"yaw": 0.0, **kwargs}
    with pytest.raises(RenderError, match=match):
        perspective(bearing_pano(h=16), **args)


@pytest.mark.parametrize("pitch", [0.0, 25.0, -60.0])
def test_a_turned_view_is_the_yaw_free_grid_shifted(pitch):
    """Turning the camera about the vertical shifts every bearing by the same angle: the
    remap grid of any yaw equals the grid built from that yaw's own directions.
    """
    from urban_gym.render import camera as cam

    w, h, pw, ph = 64, 48, 512, 256
    for yaw in (0.0, 0.3, 123.4, 359.9):
        bearing, elev = cam.view_directions(w, h, 90.0, pitch, yaw)
        mx = ((bearing / 360.0 + 0.5) * pw - 0.5) % pw
        want_x = mx.astype(np.float32)
        got = cam._build_maps(w, h, 90.0, pitch, yaw, pw, ph)
        fx, fy = cv2.convertMaps(got[0], got[1], cv2.CV_32FC1)
        # fixed-point grids hold 1/32 of a pixel; wrap-around columns may read pw - e as -e
        dx = np.abs(fx - want_x)
        dx = np.minimum(dx, pw - dx)
        assert dx.max() <= 1 / 32 + 1e-3
        want_y = np.clip((90.0 - elev) / 180.0 * ph - 0.5, 0.0, ph - 1.0)
        assert np.abs(fy - want_y).max() <= 1 / 32 + 1e-3


@pytest.mark.parametrize("pitch", [0.0, 12.5, -90.0])
@pytest.mark.parametrize("size", [(84, 84), (31, 7), (1, 1)])
def test_grids_are_opencvs_fixed_point_of_the_float_columns(pitch, size):
    """The fixed-point grids are exactly what ``cv2.convertMaps`` makes of the float32
    columns ``(yaw-free column + shift) mod W`` and rows (a level camera's are built
    without OpenCV): the same integers, so the same views, at yaws across the seam.
    """
    from urban_gym.render import camera as cam

    (w, h), pw, ph = size, 336, 168
    mx0, my = cam._yaw_free_maps(w, h, 90.0, pitch, pw, ph)
    for yaw in (0.0, 0.1, 45.0, 123.4, 180.0, 300.7, 359.9):
        shift = yaw / 360.0 * pw
        want = cv2.convertMaps(((mx0 + shift) % pw).astype(np.float32), my, cv2.CV_16SC2)
        got = cam._build_maps(w, h, 90.0, pitch, yaw, pw, ph)
        assert got[0].dtype == np.int16 and got[0].shape == (h, w, 2)
        assert got[1].dtype == np.uint16 and got[1].shape == (h, w)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fov": 180.0}, "fov=180.0"),
        ({"fov": float("nan")}, "fov=nan"),
        ({"pitch": 90.5}, "pitch=90.5"),
        ({"pitch": float("-inf")}, "pitch=-inf"),
        ({"yaw": float("inf")}, "yaw=inf"),
        ({"pano_heading": float("nan")}, "pano_heading=nan"),
        ({"size": (16, 0)}, r"size=\(16, 0\)"),
        ({"size": (16, 20000)}, "larger than 16384"),
        ({"size": -3}, "size=-3"),
    ],
)
def test_bad_float_arguments_are_named_too(kwargs, match):
    """Floats and int pairs -- what an environment passes, looked up without the checks
    one by one -- are still checked: an out-of-range or non-finite one is named.
    """
    args = {"yaw": 10.0, "pitch": 0.0, "fov": 90.0, "size": (16, 16), **kwargs}
    with pytest.raises(RenderError, match=match):
        perspective(bearing_pano(h=16), **args)


def test_plain_and_numpy_arguments_share_one_grid():
    """A view asked with Python floats and ints and the same view asked with numpy
    scalars, a list size and int angles read one cached grid (the same key either way).
    """
    clear_camera_cache()
    a = camera.remap_maps((24, 16), 75.0, 12.0, 123.4, (64, 128), 10.0)
    b = camera.remap_maps([24, 16], np.float64(75), np.float32(12), 123.4, (64, 128), 10)
    assert a is b and camera_cache_info()["entries"] == 1
    c = camera.remap_maps((24, 16), 75.0, 12.0, 123.4 + 360.0, (64, 128), 10.0)
    assert c is a  # a full turn more is the same relative yaw


def test_a_level_cameras_kept_columns_give_opencvs_grids(monkeypatch):
    """A level camera keeps the fixed-point columns of each shift (a bounded number of
    them): the grids of a shift seen before, made from the kept columns, are still
    exactly ``cv2.convertMaps``'s.
    """
    from urban_gym.render import camera as cam

    monkeypatch.setattr(cam, "LEVEL_COLUMNS_BYTES", 1)  # keeps at least 16 shifts
    w, h, pw, ph = 40, 30, 336, 168
    grid = cam._LevelGrid(*_level_rows(w, h, pw, ph))
    mx0, my = cam._yaw_free_maps(w, h, 90.0, 0.0, pw, ph)
    yaws = [0.0, 0.1, 359.9, *np.round(np.linspace(1.0, 358.0, 40), 1)]
    for yaw in yaws + yaws[::-1]:  # the second time round, some come from the kept ones
        shift = yaw / 360.0 * pw
        want = cv2.convertMaps(((mx0 + shift) % pw).astype(np.float32), my, cv2.CV_16SC2)
        got = grid.shifted(shift, pw)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert len(grid._cols) <= 16


def _level_rows(w: int, h: int, pw: int, ph: int) -> tuple[np.ndarray, np.ndarray]:
    """The columns of one row and the rows of a level 90-degree camera's yaw-free grid."""
    mx0, my = camera._yaw_free_maps(w, h, 90.0, 0.0, pw, ph)
    return mx0[0].copy(), my


def test_remembered_roundings_are_rounds_and_stay_bounded(monkeypatch):
    """The grid key's angles are ``round(v, 9)`` however often they are asked (their
    roundings are remembered, a bounded number of them): yaws a billionth apart share
    a grid, a millionth apart do not.
    """
    monkeypatch.setattr(camera, "ROUNDED_MAX", 4)
    camera._rounded.clear()
    for v in [0.1234567891234, 359.9999999999, 12.5, -7.0000000004, 1e-12] * 2:
        assert camera._round9(v) == round(v, 9)
        assert len(camera._rounded) <= 4
    clear_camera_cache()
    a = camera.remap_maps((8, 8), 90.0, 0.0, 10.0, (32, 64), 0.0)
    assert camera.remap_maps((8, 8), 90.0, 0.0, 10.0 + 1e-11, (32, 64), 0.0) is a
    assert camera.remap_maps((8, 8), 90.0, 0.0, 10.000001, (32, 64), 0.0) is not a
