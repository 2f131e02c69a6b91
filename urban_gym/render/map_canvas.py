"""The static layers of a top-down map, drawn into canvases and cut into views.

A canvas (:class:`Canvas`) holds the areas, streets and buildings of a square or whole-city
window at one scale, centred on a point of a grid of :data:`SNAP_PX` pixels; a view is a
crop of it (north-up) or a bilinear warp (rotated), :func:`warp`. Every canvas of a city
at a scale is on the same pixel grid, so a view is the same whichever canvas it is cut from.
Which canvas a view takes, and how many are kept, is :class:`~urban_gym.render.map.MapRenderer`'s
policy; a whole city's canvas is kept on disk once per machine (:func:`stored_city_canvas`).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from shapely.geometry import box

from urban_gym.render import map_geometry, map_style
from urban_gym.render.ground import drawn_bounds
from urban_gym.render.map_style import ONE, SHIFT, STYLE
from urban_gym.world.city import City
from urban_gym.world.diskcache import cached_array, stored_array
from urban_gym.world.loader import city_fingerprint

#: canvas centres snap to a grid of this many pixels
SNAP_PX = 64


@dataclass
class Canvas:
    """A static map of ``image`` (RGB, read-only) centred on ``(cx, cy)`` (m) at ``mpp``
    metres per pixel.
    """

    image: np.ndarray
    cx: float
    cy: float
    mpp: float

    @property
    def nbytes(self) -> int:
        """The bytes of the canvas image (what the canvas cache counts)."""
        return self.image.nbytes


def draw_static(
    geo: dict[str, Any], sx: float, sy: float, mpp: float, w: int, h: int
) -> np.ndarray:
    """Areas, streets and buildings of a ``w`` x ``h`` pixel canvas centred on
    ``(sx, sy)`` (m) at ``mpp``, from a city's prepared geometry ``geo``
    (:func:`~urban_gym.render.map_geometry.prepared_geometry`).
    """
    img = np.empty((h, w, 3), np.uint8)
    img[:] = STYLE["land"]
    hw, hh = w / 2.0 * mpp, h / 2.0 * mpp
    win = box(sx - hw, sy - hh, sx + hw, sy + hh)

    def to_px(xy: np.ndarray) -> np.ndarray:
        col = (xy[:, 0] - sx) / mpp + w / 2.0 - 0.5
        row = (sy - xy[:, 1]) / mpp + h / 2.0 - 0.5
        out = np.empty((len(xy), 2), np.int32)
        np.rint(col * ONE, out=out[:, 0], casting="unsafe")
        np.rint(row * ONE, out=out[:, 1], casting="unsafe")
        return out

    aa = cv2.LINE_AA
    a_kind, e_road, e_width = geo["a_kind"], geo["e_road"], geo["e_width"]
    aidx = np.sort(geo["a_tree"].query(win))
    for kind in ("green", "water"):
        sel = [i for i in aidx if a_kind[i] == kind]
        if sel:
            cv2.fillPoly(img, geo["a"].rings(sel, to_px), STYLE[kind], aa, SHIFT)
    eidx = np.sort(geo["e_tree"].query(win))
    paths = eidx[~e_road[eidx]]
    roads = eidx[e_road[eidx]]
    if len(paths):
        t = np.maximum(1, np.rint(np.minimum(e_width[paths], 2.5) / mpp * 0.5))
        for tv in np.unique(t):
            sel = paths[t == tv]
            cv2.polylines(img, geo["e"].rings(sel, to_px), False, STYLE["path"], int(tv), aa, SHIFT)
    if len(roads):
        t = np.maximum(2, np.rint(e_width[roads] / mpp)).astype(int)
        lines = geo["e"].rings(roads, to_px)
        for colour, extra in (("road_edge", 2), ("road", 0)):
            for tv in np.unique(t):
                sel = [ln for ln, tt in zip(lines, t) if tt == tv]
                cv2.polylines(img, sel, False, STYLE[colour], int(tv) + extra, aa, SHIFT)
    bidx = np.sort(geo["b_tree"].query(win))
    if len(bidx):
        rings = geo["b"].rings(bidx, to_px)
        cv2.fillPoly(img, rings, STYLE["building"], aa, SHIFT)
        cv2.polylines(img, rings, True, STYLE["building_edge"], 1, aa, SHIFT)
    return img


def warp(canvas: Canvas, cx: float, cy: float, w: int, h: int, rot: float) -> np.ndarray:
    """The ``w`` x ``h`` view of ``canvas`` centred on ``(cx, cy)`` (m) with the bearing
    ``rot`` (degrees) at the top: a crop when ``rot`` is 0 (plain land beyond the canvas),
    else a bilinear warp.
    """
    ch, cw = canvas.image.shape[:2]
    th = math.radians(rot)
    c, s = math.cos(th), math.sin(th)
    a = (cx - canvas.cx) / canvas.mpp + cw / 2.0 - 0.5
    b = (canvas.cy - cy) / canvas.mpp + ch / 2.0 - 0.5
    u, v = 0.5 - w / 2.0, 0.5 - h / 2.0
    if rot == 0.0:
        c0, r0 = int(round(a + c * u - s * v)), int(round(b + s * u + c * v))
        if 0 <= r0 and r0 + h <= ch and 0 <= c0 and c0 + w <= cw:
            return canvas.image[r0 : r0 + h, c0 : c0 + w].copy()
        out = np.empty((h, w, 3), np.uint8)  # beyond the canvas: plain land
        out[:] = STYLE["land"]
        ra, rb, ca, cb = max(r0, 0), min(r0 + h, ch), max(c0, 0), min(c0 + w, cw)
        if ra < rb and ca < cb:
            out[ra - r0 : rb - r0, ca - c0 : cb - c0] = canvas.image[ra:rb, ca:cb]
        return out
    m = np.array([[c, -s, a + c * u - s * v], [s, c, b + s * u + c * v]], dtype=np.float64)
    return cv2.warpAffine(
        canvas.image,
        m,
        (w, h),
        flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
        borderMode=cv2.BORDER_CONSTANT,
        borderValue=STYLE["land"],
    )


def city_canvas_frame(city: City, mpp: float) -> tuple[float, float, int, int]:
    """``(sx, sy, w, h)``: the centre (m, on the snapping grid) and size (px) of the canvas
    of the whole ``city`` at ``mpp``: whole snapping cells on each side, with a margin of
    four cells, so its pixels are the windows' pixels.
    """
    step = SNAP_PX * mpp
    x0, y0, x1, y1 = drawn_bounds(city)
    margin = 4 * SNAP_PX * mpp
    sx = round((x0 + x1) / 2 / step) * step
    sy = round((y0 + y1) / 2 / step) * step
    half_w = math.ceil((max(x1 - sx, sx - x0) + margin) / step) * SNAP_PX
    half_h = math.ceil((max(y1 - sy, sy - y0) + margin) / step) * SNAP_PX
    return sx, sy, 2 * half_w, 2 * half_h


def stored_city_canvas(
    city: City, geo: dict[str, Any], sx: float, sy: float, mpp: float, w: int, h: int, build: bool
) -> np.ndarray | None:
    """:func:`draw_static` of the whole city (read-only), from the world cache for a city
    with a fingerprint (named by it, the canvas and OpenCV's version: its anti-aliasing
    draws the pixels; kept for the sources of the modules that draw it); drawn when
    ``build``, else None when not stored.
    """
    fp = city_fingerprint(city)
    if fp is None:
        if not build:
            return None
        img = draw_static(geo, sx, sy, mpp, w, h)
        img.setflags(write=False)
        return img
    what = f"{fp}|{sx!r}|{sy!r}|{mpp!r}|{w}x{h}|cv2 {cv2.__version__}"
    name = "map-city-" + hashlib.sha256(what.encode()).hexdigest()[:20]
    sources = (__name__, map_style, map_geometry)
    if not build:
        return stored_array(name, *sources)
    return cached_array(name, lambda: draw_static(geo, sx, sy, mpp, w, h), *sources)
