"""First-person views: agreement with panorama crops, signs, pedestrians, pitch, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from tests.render.handmade import city_of
from urban_gym.render import (
    Conditions,
    FirstPersonRenderer,
    PanoramaRenderer,
    RenderError,
    perspective,
)
from urban_gym.render.ids import building_id, pedestrian_id, sign_id


@pytest.fixture(scope="module")
def street(tiny_city):
    p = tiny_city.pois[0]
    return tiny_city, p.front, (p.facing + 180.0) % 360.0


@pytest.mark.parametrize("pitch", [0.0, 25.0, -40.0])
def test_matches_a_crop_of_the_panorama(street, pitch):
    city, (x, y), yaw = street
    pano = PanoramaRenderer(city, 2048, 1024).render(x, y).rgb
    crop = perspective(pano, yaw + 20.0, pitch=pitch, fov=90.0, size=(160, 120))
    view = FirstPersonRenderer(city, 160, 120, fov=90.0).render(x, y, yaw + 20.0, pitch).rgb
    assert view.shape == (120, 160, 3) and view.dtype == np.uint8
    diff = np.abs(view.astype(int) - crop.astype(int)).mean()
    assert diff < 10.0, diff


def test_sign_in_view_from_front_point(tiny_city):
    fp = FirstPersonRenderer(tiny_city, 128, 128, fov=90.0)
    for p in tiny_city.pois:
        res = fp.render(*p.front, (p.facing + 180.0) % 360.0, ids=True)
        assert (res.ids == sign_id(p.id)).sum() > 10, p.name


def test_depth_straight_at_a_wall():
    city = city_of([(-10, -10, 10, 10, 12.0)])
    res = FirstPersonRenderer(city, 65, 65, fov=60.0).render(-30.0, 0.0, 90.0, depth=True, ids=True)
    # the centre pixel looks due east at the wall x = -10, 20 m away
    assert res.depth[32, 32] == pytest.approx(20.0, abs=0.05)
    assert res.ids[32, 32] == building_id(0)
    # looking away from it: nothing but sky and ground
    back = FirstPersonRenderer(city, 65, 65).render(-30.0, 0.0, 270.0, ids=True)
    assert set(np.unique(back.ids)) == {0, 1}


def test_pedestrian_ahead_is_drawn_and_behind_is_not():
    city = city_of([(-10, -10, 10, 10, 12.0)])
    fp = FirstPersonRenderer(city, 96, 96)
    ahead = fp.render(-30.0, -20.0, 0.0, pedestrians=[(-30.0, -15.0)], depth=True, ids=True)
    mask = ahead.ids == pedestrian_id(0)
    assert mask.sum() > 50
    assert np.median(ahead.depth[mask]) == pytest.approx(5.0, rel=0.05)
    behind = fp.render(-30.0, -20.0, 180.0, pedestrians=[(-30.0, -15.0)], ids=True)
    assert not (behind.ids == pedestrian_id(0)).any()
    none = fp.render(-30.0, -20.0, 0.0)
    assert (none.rgb != ahead.rgb).any()


def test_pitched_ids_and_depth(street):
    city, (x, y), yaw = street
    fp = FirstPersonRenderer(city, 64, 48)
    res = fp.render(x, y, yaw, pitch=30.0, depth=True, ids=True)
    assert res.ids.shape == (48, 64) and res.ids.dtype == np.int32
    assert res.depth.shape == (48, 64) and res.depth.dtype == np.float32
    top = fp.render(x, y, yaw, pitch=89.0, ids=True)
    assert (top.ids[20:28, 28:36] == 0).all()  # straight up: sky


def test_conditions_apply(street):
    city, (x, y), yaw = street
    fp = FirstPersonRenderer(city, 64, 64)
    day = fp.render(x, y, yaw).rgb.mean()
    night = fp.render(x, y, yaw, conditions=Conditions("night")).rgb.mean()
    assert night < 0.6 * day


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fov": 0}, "fov=0"),
        ({"fov": 180.0}, "fov=180.0"),
        ({"width": 0}, "size="),
        ({"inside": "maybe"}, "inside='maybe'"),
    ],
)
def test_bad_constructor_arguments(street, kwargs, match):
    with pytest.raises(RenderError, match=match):
        FirstPersonRenderer(street[0], **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pitch": 95}, "pitch=95"),
        ({"yaw": float("nan")}, "yaw=nan"),
        ({"pedestrians": [(1.0, 2.0, 3.0)]}, "pedestrians="),
        ({"x": 1e6}, "outside"),
    ],
)
def test_bad_render_arguments(street, kwargs, match):
    city, (x, y), yaw = street
    args = {"x": x, "y": y, "yaw": yaw, **kwargs}
    with pytest.raises(RenderError, match=match):
        FirstPersonRenderer(city, 32, 32).render(**args)


def test_renderers_pickle(street):
    import pickle

    from urban_gym.render import MapRenderer

    city, (x, y), yaw = street
    fp = FirstPersonRenderer(city, 32, 32)
    a = fp.render(x, y, yaw).rgb
    fp2 = pickle.loads(pickle.dumps(fp))
    np.testing.assert_array_equal(fp2.render(x, y, yaw).rgb, a)
    pano = PanoramaRenderer(city, 64, 32)
    np.testing.assert_array_equal(
        pickle.loads(pickle.dumps(pano)).render(x, y).rgb, pano.render(x, y).rgb
    )
    m = MapRenderer(city)
    np.testing.assert_array_equal(
        pickle.loads(pickle.dumps(m)).render((x, y), 1.0, 32), m.render((x, y), 1.0, 32)
    )


def test_a_turned_panorama_window_is_the_window_built_there():
    # a pitched view's window camera is built once per pitch and turned per frame: every
    # array the caster reads equals, to the bit, the camera built at that bearing
    from urban_gym.render.raycast import ColumnCamera

    base = ColumnCamera.equirect(173, 91, -61.3, 122.6, 71.0, -12.5)
    for yaw in (0.0, 37.1, 180.0, 299.9, -45.25):
        turned = base.with_bearing0(yaw - 61.3)
        built = ColumnCamera.equirect(173, 91, yaw - 61.3, 122.6, 71.0, -12.5)
        for name in ("ang", "b", "a", "rel", "dirx", "diry", "relx", "a32", "neg_a"):
            np.testing.assert_array_equal(getattr(turned, name), getattr(built, name), name)
        for name in ("ang0", "span", "e_top", "e_bot", "width", "height", "kind"):
            assert getattr(turned, name) == getattr(built, name), name
    assert not np.array_equal(base.ang, base.with_bearing0(10.0).ang)
