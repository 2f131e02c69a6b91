"""Textures of the rendered city: facade styles, signboards and upright sprites.

Everything here is drawn once (per city, per time of day) with OpenCV / Pillow and then
sampled by the ray caster:

* a **facade atlas**: ``N_STYLES`` facade styles side by side, each one ``STYLE_PERIOD_M``
  metres wide (a few window bays) and ``FACADE_MAX_Z`` metres tall at ``FACADE_PPM``
  pixels per metre, repeated for ``len(SHADES)`` brightness levels (walls facing the sun
  are lighter). A ground-floor shop band (shop windows, a door, a fascia) sits under
  storeys of ``STOREY_HEIGHT_M`` from ``GROUND_FLOOR_M`` up, with one window per bay. At dusk and night windows are
  lit at random (fixed per style).
* a **sign atlas**: one board per named POI (white or dark text in DejaVu Sans Bold on a
  coloured board) at ``SIGN_PPM`` pixels per metre.
* **sprites** for street objects and pedestrians: RGBA images with their size in metres.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from functools import cache, lru_cache

import cv2
import numpy as np
from PIL import Image, ImageDraw

from urban_gym.render.fonts import font_for, load_font
from urban_gym.world.city import STOREY_HEIGHT_M

FACADE_PPM = 6.0
STYLE_PERIOD_M = 12.0
FACADE_MAX_Z = 80.0
N_STYLES = 32
#: brightness of walls by how squarely they face the sun (level 0 faces it)
SHADES = (1.0, 0.86, 0.72, 0.6)
GROUND_FLOOR_M = 4.0
#: the band above the shop windows where signboards hang (metres above the ground)
FASCIA_M = (2.35, 3.8)
SIGN_PPM = 32.0
SIGN_BOARD_M = 1.2
#: the sign font's size as a share of the board's height (one line)
SIGN_TEXT_EM = 0.62

STYLE_W = int(round(STYLE_PERIOD_M * FACADE_PPM))
STYLE_H = int(round(FACADE_MAX_Z * FACADE_PPM))
STYLE_STRIDE = STYLE_W + 2

_WALL_COLOURS = np.array(
    [
        (222, 205, 170),
        (235, 225, 205),
        (200, 196, 190),
        (176, 92, 70),
        (190, 205, 185),
        (180, 196, 214),
        (226, 170, 140),
        (240, 238, 232),
        (150, 150, 152),
        (214, 186, 120),
        (160, 120, 95),
        (205, 215, 220),
        (232, 208, 190),
        (120, 130, 140),
        (198, 168, 150),
        (245, 228, 170),
    ],
    dtype=np.float32,
)
_SIGN_COLOURS = (
    ((20, 90, 60), (255, 255, 255)),
    ((25, 60, 130), (255, 255, 255)),
    ((150, 25, 35), (255, 255, 255)),
    ((250, 250, 245), (20, 20, 20)),
    ((30, 30, 30), (255, 215, 70)),
    ((240, 200, 40), (20, 20, 20)),
    ((110, 40, 120), (255, 255, 255)),
    ((0, 120, 140), (255, 255, 255)),
    ((200, 90, 20), (255, 255, 255)),
    ((60, 60, 60), (255, 255, 255)),
)


def stable_hash(*parts: object) -> int:
    """A hash of ``parts`` that is the same in every process (unlike ``hash``)."""
    return zlib.crc32(repr(parts).encode())


def style_of_building(building_id: int) -> int:
    """Facade style index of a building, stable by id."""
    return stable_hash("style", building_id) % N_STYLES


# ---------------------------------------------------------------------- facades
def _style_params(k: int) -> dict:
    rng = np.random.default_rng(1000 + k)
    return {
        "wall": _WALL_COLOURS[k % len(_WALL_COLOURS)] * rng.uniform(0.92, 1.05),
        "bays": int(rng.choice([3, 4, 4, 5])),
        "win_w": float(rng.uniform(0.38, 0.6)),
        "win_h": float(rng.uniform(1.3, 1.8)),
        "frame": bool(rng.random() < 0.6),
        "fascia": _WALL_COLOURS[(k * 7 + 3) % len(_WALL_COLOURS)] * 0.55,
        "lit": rng.random((40, 5)),
    }


def _facade_style(k: int, time_of_day: str) -> list[np.ndarray]:
    """One facade style at every shade level: list of ``(STYLE_H, STYLE_W, 3)`` uint8."""
    p = _style_params(k)
    ppm = FACADE_PPM
    H, W = STYLE_H, STYLE_W
    rng = np.random.default_rng(k)
    wall = np.empty((H, W, 3), np.float32)
    wall[:] = p["wall"]
    wall += rng.normal(0.0, 4.0, (H, W, 1)).astype(np.float32)  # plaster noise
    lit = np.zeros((H, W), np.float32)  # emissive mask (lit windows)
    glass = np.zeros((H, W), np.float32)

    def row(z: float) -> int:
        return int(round((FACADE_MAX_Z - z) * ppm))

    bay_px = W / p["bays"]
    # storeys
    n_storeys = int((FACADE_MAX_Z - GROUND_FLOOR_M) / STOREY_HEIGHT_M)
    for s in range(n_storeys):
        z0 = GROUND_FLOOR_M + s * STOREY_HEIGHT_M
        cv2.line(wall, (0, row(z0)), (W, row(z0)), (p["wall"] * 0.85).tolist(), 1)
        for b in range(p["bays"]):
            cx = (b + 0.5) * bay_px
            hw = p["win_w"] * bay_px / 2
            x0, x1 = int(round(cx - hw)), int(round(cx + hw))
            r0, r1 = row(z0 + 0.9 + p["win_h"]), row(z0 + 0.9)
            if p["frame"]:
                cv2.rectangle(wall, (x0 - 1, r0 - 1), (x1, r1), (235, 235, 230), -1)
            glass[r0:r1, x0:x1] = 1.0
            threshold = {"day": 0.0, "dusk": 0.25, "night": 0.45}[time_of_day]
            if p["lit"][s % 40, b] < threshold:
                lit[r0:r1, x0:x1] = 1.0
    # ground floor: fascia band, shop windows and a door
    cv2.rectangle(wall, (0, row(FASCIA_M[1])), (W, row(FASCIA_M[0])), p["fascia"].tolist(), -1)
    for b in range(p["bays"]):
        cx = (b + 0.5) * bay_px
        hw = 0.36 * bay_px
        r0, r1 = row(FASCIA_M[0] - 0.1), row(0.35)
        if b == p["bays"] // 2:
            hw = 0.14 * bay_px
            r1 = row(0.0)
        x0, x1 = int(round(cx - hw)), int(round(cx + hw))
        cv2.rectangle(wall, (x0 - 1, r0 - 1), (x1, r1), (70, 70, 74), -1)
        glass[r0:r1, x0:x1] = 1.0
        if time_of_day != "day":
            lit[r0:r1, x0:x1] = 1.0
    # glass: dark blue-grey with a vertical sky reflection gradient
    gy = np.linspace(0.0, 1.0, H, dtype=np.float32)[:, None]
    glass_rgb = np.stack(
        [
            60 + 40 * np.cos(gy * 37.0) ** 2,
            75 + 45 * np.cos(gy * 37.0) ** 2,
            95 + 50 * np.cos(gy * 37.0) ** 2,
        ],
        -1,
    ).astype(np.float32) * np.ones((1, W, 1), np.float32)
    window_lit = np.array([255, 214, 140], np.float32)
    out = []
    ambient = {"day": 1.0, "dusk": 0.62, "night": 0.22}[time_of_day]
    tint = {"day": (1.0, 1.0, 1.0), "dusk": (1.08, 0.9, 0.82), "night": (0.75, 0.8, 1.05)}
    tint_a = np.array(tint[time_of_day], np.float32)
    for shade in SHADES:
        level = shade if time_of_day == "day" else 0.5 + 0.5 * shade
        img = np.where(glass[..., None] > 0, glass_rgb, wall) * (level * ambient) * tint_a
        img = np.where(lit[..., None] > 0, window_lit * (0.9 + 0.1 * shade), img)
        out.append(np.clip(img, 0, 255).astype(np.uint8))
    return out


def interior_wall(time_of_day: str) -> np.ndarray:
    """Plain interior wall texture (seen from inside a building), one shade level."""
    ambient = {"day": 0.8, "dusk": 0.7, "night": 0.55}[time_of_day]
    img = np.empty((STYLE_H, STYLE_W, 3), np.float32)
    img[:] = np.array([205, 198, 186], np.float32) * ambient
    img[:: int(STOREY_HEIGHT_M * FACADE_PPM)] *= 0.8
    return img.astype(np.uint8)


@lru_cache(maxsize=1)
def facade_atlas(time_of_day: str) -> np.ndarray:
    """The facade atlas for a time of day: ``(len(SHADES) * STYLE_H, (N_STYLES + 1) *
    STYLE_STRIDE, 3)`` uint8. Style ``k`` at shade level ``s`` occupies rows
    ``[s * STYLE_H, (s + 1) * STYLE_H)`` and columns ``k * STYLE_STRIDE + 1`` to
    ``k * STYLE_STRIDE + STYLE_W``, with one wrapped column of padding on each side so
    that bilinear sampling repeats seamlessly; the last style slot is the interior wall.
    """
    atlas = np.empty((len(SHADES) * STYLE_H, (N_STYLES + 1) * STYLE_STRIDE, 3), np.uint8)

    def put(k: int, s: int, img: np.ndarray) -> None:
        padded = np.concatenate([img[:, -1:], img, img[:, :1]], axis=1)
        atlas[s * STYLE_H : (s + 1) * STYLE_H, k * STYLE_STRIDE : (k + 1) * STYLE_STRIDE] = padded

    for k in range(N_STYLES):
        for s, img in enumerate(_facade_style(k, time_of_day)):
            put(k, s, img)
    inner = interior_wall(time_of_day)
    for s in range(len(SHADES)):
        put(N_STYLES, s, inner)
    atlas.setflags(write=False)
    return atlas


# ---------------------------------------------------------------------- signs
@dataclass(frozen=True)
class SignTexture:
    """A rendered signboard: ``image`` ``(h, w, 3)`` uint8 and its size in metres."""

    image: np.ndarray
    width_m: float
    height_m: float


def sign_colours(poi_id: int, category: str) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(board, text) colours of a POI's sign, stable by id."""
    return _SIGN_COLOURS[stable_hash("sign", poi_id, category) % len(_SIGN_COLOURS)]


def _text_lines(name: str, lines: int) -> list[str]:
    if lines == 1 or " " not in name:
        return [name]
    words = name.split(" ")
    best = None
    for i in range(1, len(words)):
        a, b = " ".join(words[:i]), " ".join(words[i:])
        score = max(len(a), len(b))
        if best is None or score < best[0]:
            best = (score, [a, b])
    return best[1]  # type: ignore[index]


def sign_width_m(name: str, lines: int = 1, lang: str | None = None) -> float:
    """Natural width in metres of a sign with ``name`` on ``lines`` (1 or 2) lines, in
    the font of the language hint ``lang`` (see :func:`render_sign`).
    """
    px = int(SIGN_PPM * SIGN_BOARD_M * SIGN_TEXT_EM)
    w = max(font_for(t, px, True, lang).getlength(t) for t in _text_lines(name, lines))
    return w / SIGN_PPM + 0.5


def sign_cap_height_m() -> float:
    """Height in metres of a capital letter on a signboard (about 0.53 m on a 1.2 m
    board). A view of horizontal field of view ``fov`` and width ``W`` pixels shows it
    ``(W / 2) / tan(fov / 2) * sign_cap_height_m() / d`` pixels tall from ``d`` metres
    straight on: 32 px at 8 m in a 960-px 90-degree view (see the README).
    """
    font = load_font(int(SIGN_PPM * SIGN_BOARD_M * SIGN_TEXT_EM), bold=True)
    top, bottom = font.getbbox("H")[1::2]
    return (bottom - top) / SIGN_PPM


def render_sign(
    name: str,
    board: tuple[int, int, int],
    text: tuple[int, int, int],
    lines: int = 1,
    width_m: float | None = None,
    lang: str | None = None,
) -> SignTexture:
    """A signboard with ``name`` (1 or 2 lines). ``width_m`` squeezes the text to fit a
    narrower board (the height stays ``SIGN_BOARD_M`` per line). Each line is drawn in
    the font :func:`~urban_gym.render.fonts.font_for` picks (Noto Sans CJK for Chinese or
    Japanese) with the language hint ``lang`` (the place's language, e.g. ``"ja"``: a
    Japanese name of kanji alone in the Japanese face).
    """
    parts = _text_lines(name, lines)
    px = int(SIGN_PPM * SIGN_BOARD_M * SIGN_TEXT_EM)
    natural = sign_width_m(name, len(parts), lang)
    h_m = SIGN_BOARD_M * (1.0 if len(parts) == 1 else 1.7)
    w_px = int(math.ceil(natural * SIGN_PPM))
    h_px = int(round(h_m * SIGN_PPM))
    im = Image.new("RGB", (w_px, h_px), board)
    d = ImageDraw.Draw(im)
    line_h = h_px / len(parts)
    for i, t in enumerate(parts):
        d.text(
            (w_px / 2, (i + 0.5) * line_h + (0.04 if len(parts) == 2 else 0.0) * SIGN_PPM),
            t,
            font=font_for(t, px, True, lang),
            fill=text,
            anchor="mm",
        )
    arr = np.asarray(im).copy()
    # a thin frame
    edge = tuple(int(c * 0.6) for c in board)
    cv2.rectangle(arr, (0, 0), (w_px - 1, h_px - 1), edge, 2)
    width = natural if width_m is None else min(natural, width_m)
    if width < natural:
        arr = cv2.resize(
            arr, (max(4, int(round(width * SIGN_PPM))), h_px), interpolation=cv2.INTER_AREA
        )
    return SignTexture(arr, width, h_m)


# ---------------------------------------------------------------------- sprites
@dataclass(frozen=True)
class Sprite:
    """An upright billboard: ``rgba`` ``(h, w, 4)`` uint8, ``width_m`` x ``height_m``
    metres, standing on the ground at ``base_m`` metres (0) up to ``base_m + height_m``.
    ``glow`` lists ``(x_frac, y_frac, radius_m)`` light sources lit at night.
    """

    rgba: np.ndarray
    width_m: float
    height_m: float
    base_m: float = 0.0
    glow: tuple[tuple[float, float, float], ...] = ()


_PPM_SPRITE = 40


def _canvas(w_m: float, h_m: float) -> np.ndarray:
    return np.zeros((int(round(h_m * _PPM_SPRITE)), int(round(w_m * _PPM_SPRITE)), 4), np.uint8)


def _px(v: float) -> int:
    return int(round(v * _PPM_SPRITE))


def _rect(img, x0, z0, x1, z1, colour) -> None:
    """Filled rectangle in metres (x from the left edge, z up from the bottom)."""
    h = img.shape[0]
    cv2.rectangle(img, (_px(x0), h - _px(z1)), (_px(x1) - 1, h - _px(z0) - 1), (*colour, 255), -1)


def _circle(img, x, z, r, colour) -> None:
    h = img.shape[0]
    cv2.circle(img, (_px(x), h - _px(z)), max(1, _px(r)), (*colour, 255), -1, cv2.LINE_AA)


def _tree(seed: int) -> Sprite:
    rng = np.random.default_rng(seed)
    w, h = 4.0, 7.0
    img = _canvas(w, h)
    _rect(img, 1.85, 0.0, 2.15, 3.2, (95, 70, 50))
    greens = [(60, 110, 50), (75, 130, 60), (50, 95, 45), (90, 140, 70)]
    for _ in range(26):
        x = rng.uniform(0.7, 3.3)
        z = rng.uniform(3.0, 6.2)
        r = rng.uniform(0.5, 0.9)
        _circle(img, x, z, r, greens[int(rng.integers(len(greens)))])
    return Sprite(img, w, h)


def _street_lamp() -> Sprite:
    w, h = 1.2, 5.5
    img = _canvas(w, h)
    _rect(img, 0.54, 0.0, 0.66, 5.0, (70, 72, 76))
    _rect(img, 0.25, 4.9, 0.95, 5.25, (50, 52, 56))
    _rect(img, 0.35, 4.75, 0.85, 4.9, (250, 240, 200))
    return Sprite(img, w, h, glow=((0.5, 4.8 / 5.5, 2.2),))


def _bench() -> Sprite:
    w, h = 1.8, 0.9
    img = _canvas(w, h)
    _rect(img, 0.15, 0.0, 0.25, 0.45, (40, 40, 40))
    _rect(img, 1.55, 0.0, 1.65, 0.45, (40, 40, 40))
    _rect(img, 0.0, 0.4, 1.8, 0.5, (130, 90, 55))
    _rect(img, 0.0, 0.6, 1.8, 0.7, (130, 90, 55))
    _rect(img, 0.0, 0.78, 1.8, 0.88, (130, 90, 55))
    return Sprite(img, w, h)


def _vending_machine() -> Sprite:
    w, h = 1.0, 1.9
    img = _canvas(w, h)
    _rect(img, 0.0, 0.0, 1.0, 1.9, (200, 30, 40))
    _rect(img, 0.1, 0.8, 0.65, 1.75, (220, 230, 240))
    for k in range(4):
        _rect(img, 0.14, 0.85 + k * 0.22, 0.6, 0.95 + k * 0.22, (60, 120, 200))
    _rect(img, 0.72, 1.1, 0.9, 1.5, (40, 40, 40))
    return Sprite(img, w, h, glow=((0.38, 0.67, 0.8),))


def _bus_stop() -> Sprite:
    w, h = 0.8, 2.9
    img = _canvas(w, h)
    _rect(img, 0.36, 0.0, 0.44, 2.9, (90, 90, 95))
    _rect(img, 0.0, 2.1, 0.8, 2.9, (250, 210, 0))
    _rect(img, 0.08, 2.18, 0.72, 2.82, (20, 80, 170))
    im = Image.fromarray(img)
    d = ImageDraw.Draw(im)
    d.text(
        (_px(0.4), img.shape[0] - _px(2.5)),
        "BUS",
        font=load_font(_px(0.3), True),
        fill=(255, 255, 255, 255),
        anchor="mm",
    )
    return Sprite(np.asarray(im).copy(), w, h)


def _bicycle_stand() -> Sprite:
    w, h = 2.0, 0.9
    img = _canvas(w, h)
    hh = img.shape[0]
    for k in range(3):
        x = 0.3 + k * 0.7
        cv2.ellipse(
            img,
            (_px(x), hh - _px(0.0)),
            (_px(0.25), _px(0.8)),
            0,
            180,
            360,
            (150, 155, 160, 255),
            3,
            cv2.LINE_AA,
        )
    return Sprite(img, w, h)


def _box_on_pole(colour, w=0.5, h=1.3, box_h=0.6) -> Sprite:
    img = _canvas(w, h)
    _rect(img, w / 2 - 0.04, 0.0, w / 2 + 0.04, h - box_h, (80, 80, 80))
    _rect(img, 0.0, h - box_h, w, h, colour)
    return Sprite(img, w, h)


def _bollard(colour=(110, 110, 115), w=0.4, h=1.0) -> Sprite:
    img = _canvas(w, h)
    _rect(img, 0.0, 0.0, w, h, colour)
    _rect(img, 0.0, h * 0.8, w, h * 0.9, (230, 230, 230))
    return Sprite(img, w, h)


def _traffic_signals() -> Sprite:
    w, h = 0.5, 3.4
    img = _canvas(w, h)
    _rect(img, 0.21, 0.0, 0.29, 3.4, (60, 60, 60))
    _rect(img, 0.05, 2.2, 0.45, 3.3, (30, 30, 30))
    for k, col in enumerate([(40, 200, 60), (240, 180, 0), (220, 30, 30)]):
        _circle(img, 0.25, 2.38 + k * 0.36, 0.12, col)
    return Sprite(img, w, h)


def _flagpole() -> Sprite:
    w, h = 1.6, 8.0
    img = _canvas(w, h)
    _rect(img, 0.0, 0.0, 0.1, 8.0, (220, 220, 220))
    _rect(img, 0.1, 6.6, 1.6, 7.6, (255, 255, 255))
    _rect(img, 0.1, 6.95, 1.6, 7.25, (0, 53, 128))  # a blue cross like Finland's flag
    _rect(img, 0.5, 6.6, 0.8, 7.6, (0, 53, 128))
    return Sprite(img, w, h)


def _statue() -> Sprite:
    w, h = 1.4, 3.2
    img = _canvas(w, h)
    _rect(img, 0.0, 0.0, 1.4, 1.4, (150, 145, 140))
    _rect(img, 0.45, 1.4, 0.95, 2.7, (70, 95, 85))
    _circle(img, 0.7, 2.9, 0.25, (70, 95, 85))
    return Sprite(img, w, h)


def _fountain() -> Sprite:
    w, h = 3.0, 1.6
    img = _canvas(w, h)
    _rect(img, 0.0, 0.0, 3.0, 0.6, (160, 160, 160))
    _rect(img, 1.3, 0.6, 1.7, 1.2, (150, 150, 150))
    _circle(img, 1.5, 1.3, 0.3, (170, 200, 230))
    return Sprite(img, w, h)


def _clock() -> Sprite:
    w, h = 0.9, 4.0
    img = _canvas(w, h)
    _rect(img, 0.4, 0.0, 0.5, 3.2, (40, 40, 40))
    _circle(img, 0.45, 3.55, 0.42, (30, 30, 30))
    _circle(img, 0.45, 3.55, 0.35, (245, 245, 240))
    return Sprite(img, w, h)


def _kiosk_box(colour, w=1.4, h=2.3) -> Sprite:
    img = _canvas(w, h)
    _rect(img, 0.0, 0.0, w, h, colour)
    _rect(img, 0.15, h * 0.45, w - 0.15, h * 0.85, (200, 210, 220))
    return Sprite(img, w, h)


#: how many pedestrian looks there are (:func:`pedestrian_sprite`)
PEDESTRIAN_LOOKS = 64


@lru_cache(maxsize=PEDESTRIAN_LOOKS)
def _pedestrian(k: int) -> Sprite:
    rng = np.random.default_rng(50_000 + k)
    w, h = 0.6, 1.75
    img = _canvas(w, h)
    coat = tuple(int(c) for c in rng.integers(30, 220, 3))
    trousers = tuple(int(c) for c in rng.integers(20, 90, 3))
    skin = [(240, 200, 170), (200, 150, 110), (150, 100, 70)][k % 3]
    _rect(img, 0.17, 0.0, 0.28, 0.85, trousers)
    _rect(img, 0.32, 0.0, 0.43, 0.85, trousers)
    _rect(img, 0.1, 0.8, 0.5, 1.48, coat)
    _rect(img, 0.02, 0.85, 0.1, 1.4, coat)
    _rect(img, 0.5, 0.85, 0.58, 1.4, coat)
    _circle(img, 0.3, 1.6, 0.13, skin)
    return Sprite(img, w, h)


_N_TREES = 6


@cache
def object_sprite(kind: str, variant: int = 0) -> Sprite | None:
    """The sprite of a street object kind (``None`` for kinds drawn on the ground, such as
    ``crossing``). ``variant`` picks one of a few looks (trees).
    """
    if kind == "crossing":
        return None
    if kind == "tree":
        return _tree(variant % _N_TREES)
    table = {
        "street_lamp": _street_lamp,
        "bench": _bench,
        "vending_machine": _vending_machine,
        "bus_stop": _bus_stop,
        "bicycle_parking": _bicycle_stand,
        "bicycle_rental": _bicycle_stand,
        "traffic_signals": _traffic_signals,
        "flagpole": _flagpole,
        "artwork": _statue,
        "memorial": _statue,
        "fountain": _fountain,
        "clock": _clock,
        "post_box": lambda: _box_on_pole((250, 170, 0)),
        "waste_basket": lambda: _box_on_pole((60, 90, 60), 0.45, 0.95, 0.55),
        "recycling": lambda: _kiosk_box((40, 110, 60), 1.6, 1.5),
        "atm": lambda: _kiosk_box((40, 60, 120), 0.9, 1.9),
        "telephone": lambda: _kiosk_box((200, 40, 40), 1.0, 2.3),
        "toilets": lambda: _kiosk_box((60, 110, 80), 2.0, 2.6),
        "street_cabinet": lambda: _bollard((120, 130, 125), 0.8, 1.3),
        "fire_hydrant": lambda: _bollard((200, 40, 30), 0.35, 0.8),
        "drinking_water": lambda: _bollard((60, 90, 150), 0.35, 1.0),
    }
    fn = table.get(kind)
    return fn() if fn is not None else _bollard()


def pedestrian_sprite(k: int) -> Sprite:
    """The sprite of the ``k``-th pedestrian (clothes vary with ``k %``
    :data:`PEDESTRIAN_LOOKS`): the same object for the same look, so the renderer's sprite
    bank holds each look once.
    """
    return _pedestrian(k % PEDESTRIAN_LOOKS)


def tree_variants() -> int:
    """How many tree looks exist."""
    return _N_TREES


def pack_atlas(images: list[np.ndarray], width: int = 4096) -> tuple[np.ndarray, list[tuple]]:
    """Shelf-pack images into one atlas; returns it and ``(x, y, w, h)`` per image."""
    rects = []
    x = y = shelf = 0
    order = sorted(range(len(images)), key=lambda i: -images[i].shape[0])
    pos: dict[int, tuple[int, int]] = {}
    for i in order:
        h, w = images[i].shape[:2]
        w = min(w, width)
        if x + w > width:
            x, y, shelf = 0, y + shelf + 1, 0
        pos[i] = (x, y)
        x += w + 1
        shelf = max(shelf, h)
    total_h = max(1, y + shelf + 1)
    atlas = np.zeros((total_h, width, 3), np.uint8)
    for i, img in enumerate(images):
        px, py = pos[i]
        h, w = img.shape[:2]
        w = min(w, width)
        atlas[py : py + h, px : px + w] = img[:, :w]
        rects.append((px, py, w, h))
    return atlas, rects
