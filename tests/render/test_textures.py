"""Fonts, signboards, ground classes and sprites: the textures the renderers sample."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from tests.render.handmade import city_of
from urban_gym.render import FirstPersonRenderer
from urban_gym.render.fonts import font_path, load_font
from urban_gym.render.ground import AMBIENT, COLOURS, GROUND_MPP, WINDOW_M, GroundPainter, light
from urban_gym.render.ids import sign_id
from urban_gym.render.textures import object_sprite, render_sign
from urban_gym.world.city import OBJECT_KINDS


def glyph(ch: str) -> np.ndarray:
    im = Image.new("L", (40, 40))
    ImageDraw.Draw(im).text((8, 4), ch, font=load_font(28), fill=255)
    return np.asarray(im)


def test_shipped_font_draws_finnish_letters():
    assert font_path().exists() and font_path(bold=True).exists()
    a, ae, oe, ao = glyph("a"), glyph("ä"), glyph("ö"), glyph("å")
    assert (a != ae).any() and (ae != oe).any() and (ae != ao).any()
    # the umlaut adds ink above the letter's x-height
    assert ae[:14].sum() > a[:14].sum()


def test_sign_text_differs_with_umlauts():
    a = render_sign("Kahvila Maki", (20, 90, 60), (255, 255, 255)).image
    ae = render_sign("Kahvila Mäki", (20, 90, 60), (255, 255, 255)).image
    assert a.shape == ae.shape and (a != ae).any()


def test_two_line_and_squeezed_boards():
    one = render_sign("Hammaslääkäri Hämäläinen", (0, 0, 0), (255, 255, 255))
    two = render_sign("Hammaslääkäri Hämäläinen", (0, 0, 0), (255, 255, 255), lines=2)
    assert two.width_m < one.width_m and two.height_m > one.height_m
    narrow = render_sign("Hammaslääkäri Hämäläinen", (0, 0, 0), (255, 255, 255), width_m=4.0)
    assert narrow.width_m == pytest.approx(4.0) and narrow.image.shape[0] == one.image.shape[0]


def test_sign_is_large_enough_to_read_from_15_m():
    # a bakery in a 30 m wide building whose south wall is at y = -20; the viewer stands
    # 15 m in front of the wall and looks north with a 512 x 512, 90-degree camera
    city = city_of([(-15, -20, 15, 0, 12.0)], pois=[("Leipomo Östman", 0.0, -18.0, 0)])
    p = city.pois[0]
    assert p.anchor[1] == pytest.approx(-20.0)
    res = FirstPersonRenderer(city, 512, 512, fov=90.0).render(0.0, -35.0, 0.0, ids=True)
    rows, cols = np.nonzero(res.ids == sign_id(0))
    # a 1.2 m board at 15 m spans 256 * 1.2 / 15 = 20.5 px; its letters about 60 % of it
    assert rows.max() - rows.min() + 1 >= 19
    assert cols.max() - cols.min() + 1 >= 80


def test_ground_classes_and_zebras(tiny_city):
    painter = GroundPainter(tiny_city)

    def colour_at(x, y):
        cx, cy = painter.snapped_centre(x, y)
        win = painter.paint(cx, cy)
        c = int((x - win.x0) / win.mpp)
        r = int((win.y1 - y) / win.mpp)
        return win.image[r - 2 : r + 3, c - 2 : c + 3, :3].reshape(-1, 3).mean(0)

    def close(a, b):
        return np.abs(np.asarray(a) - np.asarray(b) - 3).max() < 8  # noise adds 0..6

    node = next(iter(tiny_city.network.nodes))
    assert close(colour_at(*tiny_city.node_xy[node]), COLOURS["road"]) or close(
        colour_at(*tiny_city.node_xy[node]), COLOURS["marking"]
    )
    assert close(colour_at(30.0, -60.0), COLOURS["green"])
    assert close(colour_at(71.0, -71.0), COLOURS["water"])
    # sidewalk: 6.5 m from a street centreline (streets are 16 m wide, roads 12 m)
    e = next((u, v) for u, v, d in tiny_city.network.edges(data=True) if d["kind"] == "road")
    (x0, y0), (x1, y1) = tiny_city.node_xy[e[0]], tiny_city.node_xy[e[1]]
    mx, my = (x0 + x1) / 2, (y0 + y1) / 2
    nx, ny = -(y1 - y0), x1 - x0
    n = np.hypot(nx, ny)
    assert close(colour_at(mx + nx / n * 7.0, my + ny / n * 7.0), COLOURS["paved"])
    # a zebra across the road next to every crossing object: white stripes nearby
    o = next(o for o in tiny_city.objects if o.kind == "crossing")
    cx, cy = painter.snapped_centre(*o.position)
    win = painter.paint(cx, cy)
    c = int((o.position[0] - win.x0) / win.mpp)
    r = int((win.y1 - o.position[1]) / win.mpp)
    patch = win.image[r - 20 : r + 20, c - 20 : c + 20, :3].astype(int)
    white = (np.abs(patch - COLOURS["marking"]).max(-1) < 12).mean()
    assert white > 0.15
    night = light(win.image.copy(), "night")
    assert night[..., :3].mean() < 0.5 * win.image[..., :3].mean()
    assert AMBIENT["night"][0] < 0.5


def test_city_raster_holds_the_pixels_of_every_window(tiny_city):
    """The whole-city ground raster and a window painted on its own agree pixel for pixel
    (same grid, same world-anchored noise), and the raster covers the city with a margin.
    """
    painter = GroundPainter(tiny_city)
    x0, y1, w, h = painter.city_rect()
    full = painter.paint_rect(x0, y1, w, h)
    bx0, by0, bx1, by1 = tiny_city.bounds
    assert x0 <= bx0 - WINDOW_M / 2 and y1 >= by1 + WINDOW_M / 2
    assert x0 + w * GROUND_MPP >= bx1 + WINDOW_M / 2 and y1 - h * GROUND_MPP <= by0 - WINDOW_M / 2
    o = next(o for o in tiny_city.objects if o.kind == "crossing")
    win = painter.paint(*painter.snapped_centre(*o.position))
    r0 = int(round((y1 - win.y1) / GROUND_MPP))
    c0 = int(round((win.x0 - x0) / GROUND_MPP))
    n = win.image.shape[0]
    part = full.image[r0 : r0 + n, c0 : c0 + n]
    assert part.shape == win.image.shape
    # the window's own border (20 m buffer) clips what lies beyond it: compare its middle
    m = n // 4
    assert np.array_equal(part[m:-m, m:-m], win.image[m:-m, m:-m])


def test_scene_ground_is_one_memory_mapped_raster(tiny_city, tmp_path, monkeypatch):
    monkeypatch.setenv("URBAN_GYM_CACHE", str(tmp_path))
    from urban_gym.render.scene import Scene

    sc = Scene(tiny_city)
    a = sc.ground_window(0.0, 0.0)
    b = sc.ground_window(150.0, -150.0)
    assert a is b and isinstance(a.image, np.memmap)
    assert list((tmp_path / "render").glob("ground-*.npy"))
    # a second scene (another process, say) opens the same file instead of painting
    again = Scene(tiny_city).ground_window(0.0, 0.0)
    assert np.array_equal(np.asarray(again.image), np.asarray(a.image))


def test_every_object_kind_has_an_upright_sprite():
    for kind in sorted(set(OBJECT_KINDS.values())):
        spr = object_sprite(kind)
        if kind == "crossing":
            assert spr is None
            continue
        assert spr.rgba.shape[2] == 4 and spr.rgba[..., 3].any(), kind
        assert 0.2 <= spr.width_m <= 5.0 and 0.5 <= spr.height_m <= 9.0, kind


def test_sign_cap_height_is_the_height_of_a_capital_on_the_board():
    """The documented text height (README: pixels per view size and distance) comes from
    the board's own pixels: the rows of white text on a dark board of "HH"."""
    from urban_gym.render.textures import SIGN_PPM, render_sign, sign_cap_height_m

    tex = render_sign("HH", (0, 0, 0), (255, 255, 255))
    rows = np.flatnonzero((tex.image[4:-4, 4:-4].min(axis=2) > 200).any(axis=1))
    assert abs(len(rows) - sign_cap_height_m() * SIGN_PPM) <= 1
    assert 0.45 < sign_cap_height_m() < 0.6  # metres, on a 1.2 m board
    # a 960-px view with a 90-degree field of view (focal length 480 px) from 8 m: 32 px
    assert 480 * sign_cap_height_m() / 8 == pytest.approx(31.9, abs=0.1)
