"""Oblique maps: the top-down map seen by a camera leaning towards the horizon.

The ground (with its labels and markers) is a top-down map warped into perspective
(:func:`perspective_ground`); the buildings in view are then drawn as prisms of their
heights (:func:`draw_prisms`). See :meth:`~urban_gym.render.map.MapRenderer.render_oblique`.
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np
from shapely.geometry import box
from shapely.geometry.polygon import orient

from urban_gym.render.map_style import SHIFT, STYLE, fixed
from urban_gym.world.city import City

#: Side of the top-down ground warped into an oblique view, in image widths.
OBLIQUE_GROUND = 4
#: Distance of the oblique camera from the map centre, in image widths (at the scale).
OBLIQUE_DISTANCE_PX = 1.5


class ObliqueCamera:
    """A pinhole camera orbiting ``center`` (see :meth:`MapRenderer.render_oblique`).

    World points become ``(a, f, z)``: metres to the image's right and top (``rotation``
    is the bearing of the top) from the centre, and metres up. The camera stands
    ``D = OBLIQUE_DISTANCE_PX * w * mpp`` metres from the centre, ``tilt`` degrees from the
    vertical, behind the centre; its focal length ``D / mpp`` keeps the centre's scale.
    """

    def __init__(self, center, mpp: float, w: int, h: int, rotation: float, tilt: float):
        self.center = center
        self.w, self.h = w, h
        th = math.radians(rotation)
        self.right = (math.cos(th), -math.sin(th))
        self.fwd = (math.sin(th), math.cos(th))
        t = math.radians(tilt)
        self.st, self.ct = math.sin(t), math.cos(t)
        self.dist = OBLIQUE_DISTANCE_PX * max(w, h) * mpp
        self.focal = self.dist / mpp

    def ground(self, x, y):
        """``(a, f)``: metres right of and ahead of the centre, as the image shows them."""
        dx = np.asarray(x, dtype=float) - self.center[0]
        dy = np.asarray(y, dtype=float) - self.center[1]
        return dx * self.right[0] + dy * self.right[1], dx * self.fwd[0] + dy * self.fwd[1]

    def depth(self, a, f, z):
        """Metres along the line of sight."""
        return self.dist + np.asarray(f) * self.st - np.asarray(z) * self.ct

    def unproject(self, col: float, row: float) -> tuple[float, float] | None:
        """The ground point ``(x, y)`` (metres) seen at pixel ``(col, row)``, or None above
        the horizon.
        """
        v = (self.h / 2.0 - row) / self.focal
        den = self.ct - v * self.st
        if den <= 1e-9:
            return None
        f = v * self.dist / den
        a = (col - self.w / 2.0) / self.focal * (self.dist + f * self.st)
        x = self.center[0] + a * self.right[0] + f * self.fwd[0]
        y = self.center[1] + a * self.right[1] + f * self.fwd[1]
        return float(x), float(y)

    def project(self, a, f, z) -> np.ndarray:
        """``(n, 2)`` continuous ``(col, row)`` pixels of points ``(a, f, z)``."""
        d = self.depth(a, f, z)
        up = np.asarray(f) * self.ct + np.asarray(z) * self.st
        col = self.w / 2.0 + self.focal * np.asarray(a) / d
        row = self.h / 2.0 - self.focal * up / d
        return np.column_stack([col, row])


def perspective_ground(
    flat: np.ndarray, cam: ObliqueCamera, mpp: float, w: int, h: int
) -> np.ndarray:
    """The square top-down map ``flat`` (centred on the camera's centre, at ``mpp``) as
    ``cam`` sees it, ``w`` x ``h`` pixels; the sky beyond it.
    """
    side = flat.shape[0]
    # ground: the flat map's corners (metres right/forward of the centre) -> the image
    half = side / 2.0
    src = np.array([[0, 0], [side, 0], [side, side], [0, side]], np.float32)
    ab = (src - half) * mpp * np.array([1, -1], np.float32)
    dst = np.array(cam.project(ab[:, 0], ab[:, 1], np.zeros(4)), np.float32)
    hom = cv2.getPerspectiveTransform(src, dst)
    return cv2.warpPerspective(flat, hom, (w, h), flags=cv2.INTER_LINEAR, borderValue=STYLE["sky"])


def draw_prisms(img: np.ndarray, cam: ObliqueCamera, reach: float, city: City, tree: Any) -> None:
    """The buildings of ``city`` within ``reach`` metres of the camera's centre as extruded
    prisms, the farthest first (``tree``: the STRtree of their polygons).
    """
    cx, cy = cam.center
    idx = tree.query(box(cx - reach, cy - reach, cx + reach, cy + reach))
    if not len(idx):
        return
    blds = [city.buildings[int(i)] for i in idx]
    order = []
    for b in blds:
        c = b.polygon.centroid
        a, f = cam.ground(c.x, c.y)
        order.append((cam.depth(a, f, 0.0), b))
    order.sort(key=lambda t: -t[0])
    aa = cv2.LINE_AA
    wall = tuple(int(v * 0.78) for v in STYLE["building"])
    for _, b in order:
        ring = np.asarray(orient(b.polygon, 1.0).exterior.coords)[:-1]
        a, f = cam.ground(ring[:, 0], ring[:, 1])
        z0, z1 = np.zeros(len(ring)), np.full(len(ring), float(b.height))
        if (cam.depth(a, f, z1) <= 1.0).any():
            continue  # behind or at the camera
        base = cam.project(a, f, z0)
        roof = cam.project(a, f, z1)
        quads = [
            fixed([base[i], base[(i + 1) % len(ring)], roof[(i + 1) % len(ring)], roof[i]])
            for i in range(len(ring))
        ]
        cv2.fillPoly(img, quads, wall, aa, SHIFT)
        cv2.fillPoly(img, [fixed(roof)], STYLE["building"], aa, SHIFT)
        cv2.polylines(img, [fixed(roof)], True, STYLE["building_edge"], 1, aa, SHIFT)
