"""Top-down maps: pixel transforms, layers and markers at hand-checkable pixels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings

from tests.strategies import map_points
from urban_gym.render import RenderError
from urban_gym.render.map import STYLE, MapMarkers, MapRenderer
from urban_gym.world.grid import GridOverlay


@pytest.fixture(scope="module")
def maps(tiny_city):
    return MapRenderer(tiny_city)


def test_world_to_pixel_hand_values():
    w2p = MapRenderer.world_to_pixel
    assert w2p(10, 20, (0, 0), 1.0, 100) == (60.0, 30.0)
    assert w2p(10, 20, (0, 0), 2.0, (100, 50)) == (55.0, 15.0)
    # rotation 90: east points up, so a point 10 m east lands 10 px above the centre
    c, r = w2p(10, 0, (0, 0), 1.0, 100, rotation=90)
    assert c == pytest.approx(50.0) and r == pytest.approx(40.0)
    c, r = w2p(0, 10, (0, 0), 1.0, 100, rotation=90)  # north is to the left
    assert c == pytest.approx(40.0) and r == pytest.approx(50.0)


@settings(max_examples=50, deadline=None)
@given(**map_points)
def test_pixel_to_world_inverts_world_to_pixel(x, y, mpp, rot):
    c, r = MapRenderer.world_to_pixel(x, y, (3.0, -7.0), mpp, (64, 48), rot)
    x2, y2 = MapRenderer.pixel_to_world(c, r, (3.0, -7.0), mpp, (64, 48), rot)
    assert x2 == pytest.approx(x, abs=1e-6) and y2 == pytest.approx(y, abs=1e-6)


@settings(max_examples=50, deadline=None)
@given(**map_points)
def test_one_point_takes_the_same_arithmetic_as_an_array(x, y, mpp, rot):
    # the scalar path (plain floats) gives the numpy path's values to the bit: the map's
    # markers and labels land on the same pixels whichever way they are placed
    one = MapRenderer.world_to_pixel(x, y, (3.0, -7.0), mpp, (64, 48), rot)
    arr = MapRenderer.world_to_pixel(np.array([x]), np.array([y]), (3.0, -7.0), mpp, (64, 48), rot)
    assert isinstance(one[0], float) and one == (arr[0][0], arr[1][0])


def test_pois_near_a_point_are_those_in_the_square(maps, tiny_city):
    # the POIs the labels consider: every POI within r metres along both axes, ascending,
    # as a brute-force filter finds them
    xy = np.array([p.anchor for p in tiny_city.pois], float)
    for x, y, r in ((0.0, 0.0, 50.0), (120.0, -40.0, 30.0), (-1e4, 0.0, 10.0), (0.0, 0.0, 1e5)):
        want = np.flatnonzero((np.abs(xy[:, 0] - x) <= r) & (np.abs(xy[:, 1] - y) <= r))
        np.testing.assert_array_equal(maps._pois_near(x, y, r), want)
    assert len(maps._pois_near(0.0, 0.0, 1e5)) == len(xy)


def test_marker_lands_on_expected_pixel(maps):
    img = maps.render((0, 0), 1.0, 100, markers=MapMarkers(start=(10, 20)))
    # the start disc (radius 10 px) is centred on (col 60, row 30): blue left of its "S"
    assert tuple(img[30, 54]) == STYLE["start"]
    assert tuple(img[30, 48]) != STYLE["start"]
    assert _centroid(img, STYLE["start"]) == pytest.approx((60, 30), abs=0.5)
    goal = maps.render((0, 0), 0.5, 100, markers=MapMarkers(goal=(-10, -5)))
    assert tuple(goal[60, 24]) == STYLE["goal"]  # centre (col 30, row 60), 6 px left
    assert _centroid(goal, STYLE["goal"]) == pytest.approx((30, 60), abs=0.5)


def _centroid(img, colour):
    rows, cols = np.nonzero(np.all(img == colour, axis=-1))
    return cols.mean() + 0.5, rows.mean() + 0.5


def test_agent_arrow_points_along_heading(maps):
    fill = STYLE["agent_fill"]
    # the arrow's filled body lies ahead of the agent's position (the image centre)
    c, r = _centroid(maps.render((0, 0), 1.0, 64, markers=MapMarkers(agent=(0, 0, 90))), fill)
    assert c > 33 and abs(r - 32) < 0.5
    c, r = _centroid(maps.render((0, 0), 1.0, 64, markers=MapMarkers(agent=(0, 0, 0))), fill)
    assert r < 31 and abs(c - 32) < 0.5
    c, r = _centroid(maps.render((0, 0), 1.0, 64, markers=MapMarkers(agent=(0, 0, 225))), fill)
    assert c < 31 and r > 33
    # heading-up map: an agent facing east on a map rotated to 90 points up
    up = maps.render((0, 0), 1.0, 64, rotation=90, markers=MapMarkers(agent=(0, 0, 90)))
    c, r = _centroid(up, fill)
    assert r < 31 and abs(c - 32) < 0.5


def test_agent_arrow_takes_the_fill_colour_asked_for(maps):
    red = (220, 30, 30)
    img = maps.render((0, 0), 1.0, 64, markers=MapMarkers(agent=(0, 0, 90), agent_fill=red))
    assert (img == red).all(axis=-1).sum() > 20
    assert not (img == STYLE["agent_fill"]).all(axis=-1).any()
    for bad in ((300, 0, 0), (1, 2), "red"):
        with pytest.raises(RenderError, match="agent_fill"):
            MapMarkers(agent=(0, 0, 0), agent_fill=bad)


def test_static_layers(tiny_city, maps):
    b = tiny_city.buildings[0]
    c = b.polygon.representative_point()
    img = maps.render((c.x, c.y), 0.25, 9)
    assert tuple(img[4, 4]) == STYLE["building"]
    node = next(n for n, d in tiny_city.network.nodes(data=True))
    x, y = tiny_city.node_xy[node]
    assert tuple(maps.render((x, y), 0.25, 9)[4, 4]) == STYLE["road"]
    # the 2x2 test city has a park (x 8..98, y -98..-8) with a pond centred at (71, -71)
    assert [a.kind for a in tiny_city.areas] == ["green", "water"]
    assert tuple(maps.render((30, -60), 0.25, 9)[4, 4]) == STYLE["green"]
    assert tuple(maps.render((71, -71), 0.25, 9)[4, 4]) == STYLE["water"]


def test_every_marker_kind_draws(maps):
    grid = GridOverlay((-60, -60, 60, 60), 5, 5)
    mk = MapMarkers(
        agent=(0, 0, 45),
        start=(-40, -40),
        goal=(40, 40),
        destinations=[(30, -30), (-30, 30)],
        closures=[[(-20, 10), (20, 10)]],
        trajectory=[(-40, -40), (0, -20), (0, 0)],
        grid=grid,
        selected=(40, -45),
    )
    base = maps.render((0, 0), 0.5, 256)
    img = maps.render((0, 0), 0.5, 256, markers=mk, labels=True)
    assert img.shape == (256, 256, 3) and img.dtype == np.uint8
    for colour in ("start", "goal", "destination", "closure", "trajectory", "selected"):
        n = np.all(img == STYLE[colour], axis=-1).sum()
        assert n > 10, colour
    # the closure's red line crosses the map at y = 10 m, i.e. row 128 - 20 = 108
    assert np.all(img[108, 100:150] == STYLE["closure"], axis=-1).mean() > 0.8
    # grid lines are drawn at x = -60 + 24 k metres: column 128 + (-60 + 24) * 2 = 56
    # from row 128 - 120 = 8 to row 248 (most rows: labels and markers cover some)
    col = img[10:246, 55:57].astype(int).sum(-1).min(1)
    assert (col < base[10:246, 55:57].astype(int).sum(-1).min(1) - 60).mean() > 0.8
    assert (img[:6, 55:57] == base[:6, 55:57]).all()
    assert (img != base).any(axis=-1).mean() > 0.02


def test_canvas_is_reused_when_centre_moves_a_little(tiny_city, monkeypatch):
    from urban_gym.render import map as map_mod

    monkeypatch.setattr(map_mod, "CITY_CANVAS_MAX_BYTES", 0)  # the windowed path
    monkeypatch.setattr(map_mod, "_CITY_CANVASES", type(map_mod._CITY_CANVASES)())
    monkeypatch.setattr(map_mod, "_WINDOW_CANVASES", type(map_mod._WINDOW_CANVASES)())
    m = MapRenderer(tiny_city)
    a = m.render((0.0, 0.0), 1.0, 64)
    b = m.render((0.4, 0.0), 1.0, 64)
    assert len(m._canvases) == 1
    np.testing.assert_array_equal(a, b)  # shift under half a pixel
    c = m.render((5.0, 0.0), 1.0, 64)
    np.testing.assert_array_equal(a[:, 5:], c[:, :-5])


def test_renderers_of_one_city_share_their_window_canvases(tiny_city, monkeypatch):
    """A second renderer of the city (another env of a vector env) draws its map from the
    canvas the first one drew: no new canvas, the same pixels.
    """
    from urban_gym.render import map as map_mod

    monkeypatch.setattr(map_mod, "CITY_CANVAS_MAX_BYTES", 0)  # the windowed path
    monkeypatch.setattr(map_mod, "_CITY_CANVASES", type(map_mod._CITY_CANVASES)())
    monkeypatch.setattr(map_mod, "_WINDOW_CANVASES", type(map_mod._WINDOW_CANVASES)())
    first, second = MapRenderer(tiny_city), MapRenderer(tiny_city)
    a = first.render((3.0, -2.0), 0.5, 64, labels=True)
    (key,) = first._canvases.keys()
    b = second.render((3.0, -2.0), 0.5, 64, labels=True)
    assert second._canvases.keys() == [key] and second._canvases.hits == 1
    np.testing.assert_array_equal(a, b)
    assert not first._canvases.get(key).image.flags.writeable  # read by both: read-only


def test_an_unrotated_view_takes_the_city_canvas_another_renderer_drew(
    tiny_city, monkeypatch, tmp_path
):
    """A renderer's first views at a scale draw windows; once any renderer of the city has
    drawn the whole city at that scale, an unrotated view of a new renderer is cut from it
    (the same pixels, no window drawn), while its rotated views keep to windows until its
    own third view at the scale.
    """
    from urban_gym.render import map as map_mod

    monkeypatch.setenv("URBAN_GYM_CACHE", str(tmp_path))  # no city canvas on disk yet
    monkeypatch.setattr(map_mod, "_CITY_CANVASES", type(map_mod._CITY_CANVASES)())
    monkeypatch.setattr(map_mod, "_WINDOW_CANVASES", type(map_mod._WINDOW_CANVASES)())
    alone = MapRenderer(tiny_city)
    expected = alone.render((7.0, 3.0), 0.5, 64)  # from a window: no city canvas yet
    assert len(alone._canvases) == 1
    veteran = MapRenderer(tiny_city)
    for _ in range(map_mod.CITY_CANVAS_AFTER):
        veteran.render((0.0, 0.0), 0.5, 64)  # its third view draws the city at 0.5 m/px
    assert map_mod._CITY_CANVASES[tiny_city].get(0.5) is not None
    monkeypatch.setattr(map_mod, "_WINDOW_CANVASES", type(map_mod._WINDOW_CANVASES)())
    newcomer = MapRenderer(tiny_city)
    got = newcomer.render((7.0, 3.0), 0.5, 64)
    np.testing.assert_array_equal(got, expected)
    assert len(newcomer._canvases) == 0  # cut from the city's canvas: no window drawn
    newcomer.render((30.0, 30.0), 0.5, 64, rotation=30.0)
    assert len(newcomer._canvases) == 1  # rotated: a window of its own


def test_a_city_canvas_is_drawn_once_per_machine(tiny_city, monkeypatch, tmp_path):
    """The whole city's canvas at a scale goes to the world cache: a later process (nothing
    in memory) reads it back, memory-mapped, for its first unrotated view -- the same
    pixels, no window drawn -- and a machine without it draws windows.
    """
    from urban_gym.render import map as map_mod

    monkeypatch.setenv("URBAN_GYM_CACHE", str(tmp_path))
    monkeypatch.setattr(map_mod, "_CITY_CANVASES", type(map_mod._CITY_CANVASES)())
    monkeypatch.setattr(map_mod, "_WINDOW_CANVASES", type(map_mod._WINDOW_CANVASES)())
    first = MapRenderer(tiny_city)
    assert first._city_canvas(1.0, build=False) is None  # nothing drawn on this machine
    drawn = first._city_canvas(1.0)
    assert drawn is not None and len(list((tmp_path / "render").glob("map-city-*.npy"))) == 1
    expected = first.render((4.0, -9.0), 1.0, 64)
    # a new process: nothing in memory
    monkeypatch.setattr(map_mod, "_CITY_CANVASES", type(map_mod._CITY_CANVASES)())
    monkeypatch.setattr(map_mod, "_WINDOW_CANVASES", type(map_mod._WINDOW_CANVASES)())
    later = MapRenderer(tiny_city)
    np.testing.assert_array_equal(later.render((4.0, -9.0), 1.0, 64), expected)
    assert len(later._canvases) == 0  # cut from the stored canvas
    stored = later._city_canvas(1.0)
    assert isinstance(stored.image, np.memmap) and not stored.image.flags.writeable
    np.testing.assert_array_equal(stored.image, drawn.image)


@pytest.mark.parametrize("rotation", [0.0, 30.0])
def test_whole_city_canvas_draws_what_the_windows_draw(tiny_city, monkeypatch, rotation):
    """The static map drawn once for the whole city and the one drawn in windows around
    each view are on the same pixel grid: every view is the same, the city's edge included.
    """
    from urban_gym.render import map as map_mod

    monkeypatch.setattr(map_mod, "_WINDOW_CANVASES", type(map_mod._WINDOW_CANVASES)())
    whole = MapRenderer(tiny_city)
    rng = np.random.default_rng(3)
    x0, y0, x1, y1 = tiny_city.bounds
    centres = [(0.0, 0.0), (x1 + 30.0, y0 - 10.0)]
    centres += [tuple(p) for p in rng.uniform([x0, y0], [x1, y1], (4, 2))]
    monkeypatch.setattr(map_mod, "CITY_CANVAS_AFTER", 1)
    views = [whole.render(c, mpp, 96, rotation) for c in centres for mpp in (0.5, 1.0, 2.0)]
    assert whole._city_canvas(1.0) is not None and len(whole._canvases) == 0
    monkeypatch.setattr(map_mod, "CITY_CANVAS_MAX_BYTES", 0)
    monkeypatch.setattr(map_mod, "_CITY_CANVASES", type(map_mod._CITY_CANVASES)())
    monkeypatch.setattr(map_mod, "_WINDOW_CANVASES", type(map_mod._WINDOW_CANVASES)())
    windows = MapRenderer(tiny_city)
    again = [windows.render(c, mpp, 96, rotation) for c in centres for mpp in (0.5, 1.0, 2.0)]
    assert len(windows._canvases) > 0
    for a, b in zip(views, again):
        if rotation == 0.0:
            np.testing.assert_array_equal(a, b)  # crops of the same pixels
        else:  # warped from canvases of other sizes: the bilinear weights round apart
            diff = np.abs(a.astype(int) - b.astype(int))
            assert diff.max() <= 1 and (diff > 0).mean() < 0.02


def test_labels_show_poi_names(tiny_city, maps):
    p = tiny_city.pois[0]
    plain = maps.render(p.anchor, 0.5, 128)
    labelled = maps.render(p.anchor, 0.5, 128, labels=True)
    # text drawn to the right of the anchor, which sits at the centre
    assert (plain[58:70, 66:110] != labelled[58:70, 66:110]).any()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"metres_per_pixel": 0}, "metres_per_pixel=0"),
        ({"metres_per_pixel": -1.0}, "metres_per_pixel=-1.0"),
        ({"center": (0, "a")}, "center="),
        ({"size": 0}, "size=0"),
        ({"rotation": float("inf")}, "rotation=inf"),
        ({"markers": {"goal": (0, 0)}}, "markers="),
    ],
)
def test_bad_map_arguments_are_named(maps, kwargs, match):
    args = {"center": (0.0, 0.0), **kwargs}
    with pytest.raises(RenderError, match=match):
        maps.render(**args)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"agent": (0, 0)}, "agent="),
        ({"start": (0, float("nan"))}, "start="),
        ({"closures": [[(0, 0)]]}, r"closures\[0\]"),
        ({"trajectory": [(0, 0, 0)]}, "trajectory="),
        ({"grid": (0, 0, 1, 1)}, "grid="),
    ],
)
def test_bad_markers_are_named(kwargs, match):
    with pytest.raises(RenderError, match=match):
        MapMarkers(**kwargs)


def test_text_width_is_the_sprites_width_without_drawing_it():
    from urban_gym.render.text import text_sprite, text_width

    for text in ("Kamppi", "Mannerheimintie 5", "Ä", "", "Café Ekberg"):
        for size, bold, halo in ((11, False, 2), (12, True, 2), (14, False, 0)):
            assert (
                text_width(text, size, bold, halo) == text_sprite(text, size, bold, halo).shape[1]
            )


def test_agent_arrow_corners():
    """The arrow at pixel (10, 10) pointing up (bearing 0): tip 13 px above, wings 8 px to
    the sides 7 px below, notch 3 px below, all less the half-pixel, in 1/16 px; pointing
    right (90 degrees) the tip is 13 px to the right.
    """
    from urban_gym.render.map import _arrow

    up = _arrow(10.0, 10.0, 0.0).tolist()
    assert up == [[152, -56], [280, 264], [152, 200], [24, 264]]
    right = _arrow(10.0, 10.0, math.pi / 2).tolist()
    assert right[0] == [(9.5 + 13) * 16, 9.5 * 16]
