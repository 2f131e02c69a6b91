"""The drawing conventions every layer of a top-down map shares.

The colours of the layers and markers (:data:`STYLE`), OpenCV's fixed-point pixel
coordinates (:data:`SHIFT` sub-pixel bits) and the world-to-pixel arithmetic of a map view:
a world point ``(x, y)`` (metres) lands at the continuous pixel ``(col, row)`` of a map of
``w`` x ``h`` pixels centred on ``(cx, cy)`` at ``mpp`` metres per pixel, turned so that the
bearing ``rotation`` (degrees) points to the image top (see :mod:`urban_gym.render.map`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from urban_gym.render.camera import image_size
from urban_gym.render.text import Colour

#: Colours (RGB) of the map layers and markers.
STYLE: dict[str, Colour] = {
    "land": (242, 239, 233),
    "green": (200, 228, 186),
    "water": (166, 205, 238),
    "building": (217, 208, 199),
    "sky": (205, 222, 240),
    "building_edge": (178, 166, 154),
    "road": (255, 255, 255),
    "road_edge": (196, 190, 182),
    "path": (150, 144, 138),
    "label": (60, 52, 46),
    "start": (30, 90, 220),
    "goal": (220, 30, 30),
    "destination": (120, 40, 160),
    "closure": (230, 0, 0),
    "trajectory": (255, 140, 0),
    "grid": (40, 40, 40),
    "selected": (230, 0, 200),
    "agent": (20, 20, 20),
    "agent_fill": (255, 200, 0),
}

#: sub-pixel bits of the fixed-point coordinates the map hands OpenCV
SHIFT = 4
#: one pixel in those coordinates
ONE = 1 << SHIFT
#: the colour of POI dots and labels as the compiled dot pass takes it
LABEL_RGB = np.array(STYLE["label"], np.uint8)

#: a map view: ``(cx, cy, mpp, w, h, rotation)`` -- centre (m), metres per pixel, size (px),
#: the bearing (degrees) at the image top
View = tuple[float, float, float, int, int, float]


def fixed(points: Any) -> np.ndarray:
    """Continuous pixel points as OpenCV's fixed-point ``int32`` (:data:`SHIFT` bits)."""
    return np.rint(np.asarray(points, dtype=float) * ONE).astype(np.int32)


def point_px(
    x: float, y: float, center: Any, mpp: float, w: int, h: int, th: float
) -> tuple[float, float]:
    """``MapRenderer.world_to_pixel`` of one point (``th``: the rotation in radians) in
    plain floats: the same IEEE arithmetic as its numpy path, without numpy's per-call
    cost.
    """
    dx = (x - center[0]) / mpp
    dy = (y - center[1]) / mpp
    c, s = math.cos(th), math.sin(th)
    return w / 2.0 + dx * c - dy * s, h / 2.0 - (dy * c + dx * s)


def array_px(
    x: Any, y: Any, center: Any, mpp: float, w: int, h: int, th: float
) -> tuple[np.ndarray, np.ndarray]:
    """Continuous ``(cols, rows)`` of world points ``(x, y)`` (metres, arrays) in a map of
    ``w`` x ``h`` pixels centred on ``center`` at ``mpp``, turned by ``th`` radians.
    """
    dx = (np.asarray(x, dtype=float) - center[0]) / mpp
    dy = (np.asarray(y, dtype=float) - center[1]) / mpp
    col = w / 2.0 + dx * math.cos(th) - dy * math.sin(th)
    row = h / 2.0 - (dy * math.cos(th) + dx * math.sin(th))
    return col, row


def world_to_pixel(
    x: Any, y: Any, center: Any, mpp: float, size: int | tuple[int, int], rotation: float = 0.0
) -> Any:
    """Continuous ``(col, row)`` of world point ``(x, y)`` (metres; plain floats for
    numbers, arrays for arrays) in a map of ``size`` pixels centred on ``center`` at
    ``mpp`` with the bearing ``rotation`` (degrees) at the top.
    """
    w, h = image_size(size)
    th = math.radians(rotation)
    if isinstance(x, (float, int)) and isinstance(y, (float, int)):
        return point_px(float(x), float(y), center, mpp, w, h, th)
    col, row = array_px(x, y, center, mpp, w, h, th)
    if np.ndim(col) == 0:
        return float(col), float(row)
    return col, row


def view_px(xy: np.ndarray, view: View) -> np.ndarray:
    """``(n, 2)`` continuous ``(col, row)`` pixels of the ``(n, 2)`` world points ``xy``
    (metres) in the map ``view``.
    """
    cx, cy, mpp, w, h, rot = view
    col, row = array_px(xy[:, 0], xy[:, 1], (cx, cy), mpp, w, h, math.radians(rot))
    out = np.empty((len(col), 2))
    out[:, 0], out[:, 1] = col, row
    return out


def view_pt(xy: Any, view: View) -> tuple[float, float]:
    """:func:`view_px` of one point, in plain floats (the same arithmetic)."""
    cx, cy, mpp, w, h, rot = view
    return point_px(float(xy[0]), float(xy[1]), (cx, cy), mpp, w, h, math.radians(rot))
