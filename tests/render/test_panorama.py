"""Panorama ray caster: depth against hand-computed distances, occlusion, signs, objects,
conditions and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.render.handmade import city_of
from urban_gym.render import Conditions, PanoramaRenderer, RenderError, decode_id
from urban_gym.render.ids import building_id, object_id, sign_id

W, H = 1024, 512


def col_of(bearing: float) -> float:
    """Continuous column of a bearing in a W-wide north-centred panorama."""
    return ((bearing / 360.0 + 0.5) % 1.0) * W


def elev_of_row(r: int) -> float:
    return 90.0 - (r + 0.5) / H * 180.0


@pytest.fixture(scope="module")
def square():
    # one 20 x 20 m building, 12 m tall, centred on the origin
    return city_of([(-10, -10, 10, 10, 12.0)])


def test_depth_to_square_building_matches_geometry(square):
    r = PanoramaRenderer(square, W, H)
    res = r.render(-30.0, 0.0, depth=True, ids=True)
    assert res.rgb.shape == (H, W, 3) and res.rgb.dtype == np.uint8
    assert res.depth.dtype == np.float32 and res.ids.dtype == np.int32
    row = H // 2 - 1  # just above the horizon
    e = math.radians(elev_of_row(row))
    checked = 0
    for c in range(W):
        bearing = ((c + 0.5) / W - 0.5) * 360.0 % 360.0
        off = math.radians((bearing - 90.0 + 180.0) % 360.0 - 180.0)  # angle from due east
        if abs(off) < math.atan(0.45):  # rays that hit the west wall x = -10 (|y| < 9)
            expected = 20.0 / math.cos(off) / math.cos(e)
            assert res.depth[row, c] == pytest.approx(expected, abs=0.1)
            assert res.ids[row, c] == building_id(0)
            checked += 1
    assert checked > 40
    # due east, above the roof (elevation atan(10.4 / 20) = 27.5 deg) there is sky
    c = int(col_of(90.0))
    sky_row = int((90.0 - 30.0) / 180.0 * H)
    wall_row = int((90.0 - 25.0) / 180.0 * H)
    assert res.ids[sky_row, c] == 0 and np.isinf(res.depth[sky_row, c])
    assert res.ids[wall_row, c] == building_id(0)
    # looking west there is nothing but ground and sky; ground 1.6 m below at 45 deg
    cw = int(col_of(270.0))
    r45 = int((90.0 + 45.0) / 180.0 * H)
    assert res.ids[r45, cw] == 1
    e45 = math.radians(-elev_of_row(r45))
    assert res.depth[r45, cw] == pytest.approx(1.6 / math.sin(e45), rel=1e-3)


def test_taller_building_shows_above_nearer_lower_one():
    # a 6 m block 20 m east of the viewer, a 30 m tower 40 m east behind it
    city = city_of([(-10, -5, -5, 5, 6.0), (10, -8, 20, 8, 30.0)])
    res = PanoramaRenderer(city, W, H).render(-30.0, 0.0, depth=True, ids=True)
    c = int(col_of(90.0))
    horizon = H // 2 - 1
    assert res.ids[horizon, c] == building_id(0)
    assert res.depth[horizon, c] == pytest.approx(20.0, abs=0.1)
    r20 = int((90.0 - 20.0) / 180.0 * H)  # 20 deg up: over the block (12.4 deg), on the tower
    assert res.ids[r20, c] == building_id(1)
    e = math.radians(elev_of_row(r20))
    assert res.depth[r20, c] == pytest.approx(40.0 / math.cos(e), abs=0.1)


def test_sign_is_seen_from_the_front_point(tiny_city):
    r = PanoramaRenderer(tiny_city, W, H)
    seen = 0
    for p in tiny_city.pois:
        res = r.render(*p.front, ids=True)
        view_bearing = (p.facing + 180.0) % 360.0
        cols = (np.arange(W) + 0.5) / W * 360.0 - 180.0
        in_view = np.abs((cols - view_bearing + 180.0) % 360.0 - 180.0) < 45.0
        rows = np.abs(90.0 - (np.arange(H) + 0.5) / H * 180.0) < 45.0
        view = res.ids[np.ix_(rows, in_view)]
        assert (view == sign_id(p.id)).sum() > 20, p.name
        seen += 1
    assert seen == len(tiny_city.pois) > 5


def test_every_named_poi_gets_a_board(helsinki):
    r = PanoramaRenderer(helsinki, 64, 32)
    r.scene.ensure_signs()
    on_walls = {s.poi for s in r.scene.signs}
    free = {pid for pid, _ in r.scene.free_signs}
    assert on_walls | free == {p.id for p in helsinki.pois if p.name}
    assert not on_walls & free


def test_street_object_near_viewer_is_drawn():
    city = city_of([(-10, -10, 10, 10, 12.0)], objects=[("tree", -30.0, 5.0)])
    res = PanoramaRenderer(city, W, H).render(-30.0, 0.0, depth=True, ids=True)
    mask = res.ids == object_id(0)
    assert mask.sum() > 100
    rows, cols = np.nonzero(mask)
    # the tree stands due north, 5 m away
    assert abs(np.median(cols) - col_of(0.0)) < 10
    assert np.median(res.depth[mask]) == pytest.approx(
        5.0 / math.cos(math.radians(elev_of_row(int(np.median(rows))))), rel=0.05
    )


def test_night_is_darker_than_day_and_seeded(tiny_city):
    r = PanoramaRenderer(tiny_city, 256, 128)
    x, y = tiny_city.pois[0].front
    day = r.render(x, y).rgb.astype(float).mean()
    night = r.render(x, y, Conditions("night")).rgb.astype(float).mean()
    dusk = r.render(x, y, Conditions("dusk")).rgb.astype(float).mean()
    assert night < 0.5 * day and night < dusk < day
    a = r.render(x, y, Conditions("day", "rain", seed=1)).rgb
    b = r.render(x, y, Conditions("day", "rain", seed=1)).rgb
    c = r.render(x, y, Conditions("day", "rain", seed=2)).rgb
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()


def test_fog_hides_distant_things(square):
    r = PanoramaRenderer(square, W, H)
    clear = r.render(-60.0, -30.0, depth=True)
    fog = r.render(-60.0, -30.0, Conditions("day", "fog"), depth=True)
    from urban_gym.render.raycast import FOG_COLOUR

    far = clear.depth > 40
    near = clear.depth < 5
    diff_far = np.abs(fog.rgb[far].astype(int) - FOG_COLOUR["day"]).mean()
    diff_near = np.abs(fog.rgb[near].astype(int) - FOG_COLOUR["day"]).mean()
    assert diff_far < 15 < diff_near


def test_position_inside_building(square):
    room = PanoramaRenderer(square, W, H).render(0.0, 0.0, depth=True, ids=True)
    kinds = {decode_id(i)[0] for i in np.unique(room.ids)}
    assert kinds == {"building", "ground"}
    # the nearest wall due north is 10 m away; the ceiling at 12 m straight up
    assert room.depth[H // 2 - 1, int(col_of(0.0))] == pytest.approx(10.0, abs=0.1)
    assert room.depth[0, 0] == pytest.approx(12.0 - 1.6, abs=0.1)
    with pytest.raises(RenderError, match=r"inside building 0"):
        PanoramaRenderer(square, W, H, inside="error").render(0.0, 0.0)


@pytest.mark.parametrize(
    ("xy", "match"),
    [
        ((500.0, 0.0), r"\(500.0, 0.0\) lies outside"),
        ((float("nan"), 0.0), "finite"),
        (("a", 0.0), "two numbers"),
    ],
)
def test_bad_positions_are_named(square, xy, match):
    with pytest.raises(RenderError, match=match):
        PanoramaRenderer(square, W, H).render(*xy)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"width": 100, "height": 100}, "width == 2 \\* height"),
        ({"width": 0, "height": 0}, "width=0"),
        ({"eye_height": -1}, "eye_height=-1"),
        ({"inside": "x"}, "inside='x'"),
    ],
)
def test_bad_renderer_arguments_are_named(square, kwargs, match):
    with pytest.raises(RenderError, match=match):
        PanoramaRenderer(square, **kwargs)


def test_bad_conditions_argument(square):
    with pytest.raises(RenderError, match="conditions="):
        PanoramaRenderer(square, 64, 32).render(-30.0, 0.0, conditions="night")


def test_boards_near_each_other_do_not_overlap():
    # two shops 2 m apart on the south wall (y = -20) of a 30 m wide building
    city = city_of(
        [(-15, -20, 15, 0, 12.0)],
        pois=[("Kahvila Aalto", -1.0, -18.0, 0), ("Kahvila Björk", 1.0, -18.0, 0)],
    )
    scene = PanoramaRenderer(city, 64, 32).scene
    scene.ensure_signs()
    a, b = scene.poi_sign[0], scene.poi_sign[1]
    assert a.seg == b.seg
    overlap_u = a.u0 < b.u1 and b.u0 < a.u1
    overlap_z = a.z0 < b.z1 and b.z0 < a.z1
    assert not (overlap_u and overlap_z)
    L = scene.length[a.seg]
    for s, p in ((a, city.pois[0]), (b, city.pois[1])):
        assert 0.0 <= s.u0 < s.u1 <= L
        # the board's centre stays within max(2 m, half its width) of the anchor
        ua = (p.anchor[0] - scene.ax[s.seg]) * scene.dx[s.seg] / L + (
            p.anchor[1] - scene.ay[s.seg]
        ) * scene.dy[s.seg] / L
        assert abs((s.u0 + s.u1) / 2 - ua) <= max(2.0, (s.u1 - s.u0) / 2) + 1e-6
        assert s.z1 <= 12.0
