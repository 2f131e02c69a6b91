"""The ground seen by the ray caster: a top-down raster of a window of the city.

Classes, bottom to top: paved ground (sidewalks, squares), green areas, water, car roads
(asphalt, the network edges of kind ``road`` drawn at their carriageway width: the mapped
walkable width minus two 2 m sidewalks, at least 3 m, with a dashed centre line on wide
roads), footways and paths, and zebra crossings (network edges of kind ``crossing`` and
``crossing`` street objects, striped across the road they cross).

Windows are ``WINDOW_M`` metres square at ``GROUND_MPP`` metres per pixel, centred on a
grid of ``SNAP_M`` metres, and cached per (centre, time of day), so a viewer always has
at least ``WINDOW_M / 2 - SNAP_M`` metres of detailed ground around them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np
import shapely
from shapely.geometry import box

from urban_gym.world.city import City

GROUND_MPP = 0.2
WINDOW_M = 192.0
SNAP_M = 32.0
_SHIFT = 3
_ONE = 1 << _SHIFT

COLOURS = {
    "paved": (168, 165, 158),
    "green": (92, 140, 70),
    "water": (60, 100, 135),
    "road": (78, 80, 84),
    "kerb": (190, 188, 182),
    "path": (178, 160, 130),
    "marking": (235, 235, 230),
}
#: ground brightness and tint by time of day
AMBIENT = {"day": (1.0, 1.0, 1.0), "dusk": (0.66, 0.58, 0.55), "night": (0.2, 0.21, 0.26)}
#: the colour of the ground beyond a window (far away), before lighting
FAR_COLOUR = (128, 126, 122)


@dataclass
class GroundWindow:
    """A raster of the ground (RGBA): ``image[row, col]`` covers world point
    ``(x0 + (col + 0.5) * mpp, y1 - (row + 0.5) * mpp)``.
    """

    image: np.ndarray
    x0: float
    y1: float
    mpp: float


class GroundPainter:
    """Draws ground windows of one city."""

    def __init__(self, city: City) -> None:
        self.city = city
        edges = list(city.network.edges(data=True))
        geoms = [d["geometry"] for _, _, d in edges]
        kind = [d["kind"] for _, _, d in edges]
        width = np.array([float(d.get("width") or 3.0) for _, _, d in edges])
        self._carriage = np.maximum(3.0, width - 4.0)
        green = [a.polygon for a in city.areas if a.kind == "green"]
        green_u = shapely.union_all(green) if green else None
        # every drawable item, in world coordinates: (layer, index of item, coords)
        self._areas = _Items(
            [
                [
                    np.asarray(r.coords)
                    for g in getattr(a.polygon, "geoms", [a.polygon])
                    for r in (g.exterior, *g.interiors)
                ]
                for a in city.areas
            ]
        )
        self._area_kind = np.array([a.kind for a in city.areas], dtype=object)
        self._area_tree = shapely.STRtree([a.polygon for a in city.areas])
        road_idx = [i for i, k in enumerate(kind) if k == "road"]
        self._roads = _Items([[np.asarray(geoms[i].coords)] for i in road_idx])
        self._road_w = self._carriage[road_idx]
        self._road_tree = shapely.STRtree([geoms[i] for i in road_idx])
        paths = [
            i
            for i, k in enumerate(kind)
            if k in ("path", "footway")
            and green_u is not None
            and green_u.covers(geoms[i].interpolate(0.5, normalized=True))
        ]
        self._paths = _Items([[np.asarray(geoms[i].coords)] for i in paths])
        self._path_w = np.minimum(width[paths], 3.0)
        self._path_tree = shapely.STRtree([geoms[i] for i in paths])
        marks: list[list[np.ndarray]] = []  # dashes and zebra stripes, as quads
        for i in road_idx:
            if self._carriage[i] >= 7.0:
                marks.append(_dashes(geoms[i]))
        for i, k in enumerate(kind):
            if k == "crossing":
                c = np.asarray(geoms[i].coords)
                marks.append(_zebra(c[0], c[-1], min(4.0, max(2.5, float(width[i])))))
        if road_idx:
            for o in city.objects:
                if o.kind == "crossing":
                    marks.append(self._zebra_object(o.position, geoms, road_idx))
        marks = [m for m in marks if m]
        self._marks = _Items(marks)
        centres = [np.concatenate(m).mean(0) for m in marks]
        self._mark_tree = shapely.STRtree(shapely.points(np.array(centres).reshape(-1, 2)))

    def _zebra_object(self, p, geoms, road_idx) -> list[np.ndarray]:
        """A zebra across the nearest road through a ``crossing`` object at ``p``."""
        pt = shapely.Point(p)
        k = int(self._road_tree.nearest(pt))
        i = road_idx[k]
        g = geoms[i]
        if g.distance(pt) > self._carriage[i] / 2 + 3.0:
            return []
        s = g.project(pt)
        q0, q1 = g.interpolate(max(s - 0.5, 0.0)), g.interpolate(min(s + 0.5, g.length))
        along = np.array([q1.x - q0.x, q1.y - q0.y])
        nrm = float(np.hypot(*along))
        if nrm < 1e-9:
            return []
        along /= nrm
        across = np.array([-along[1], along[0]])
        half = self._carriage[i] / 2
        f = g.interpolate(s)
        foot = np.array([f.x, f.y])
        centre = foot + along * float(np.dot(np.asarray(p) - foot, along))
        return _zebra(centre - across * half, centre + across * half, width=3.0)

    @staticmethod
    def snapped_centre(x: float, y: float) -> tuple[float, float]:
        """The window centre used for a viewer at ``(x, y)``."""
        return (round(x / SNAP_M) * SNAP_M, round(y / SNAP_M) * SNAP_M)

    def paint(self, cx: float, cy: float, time_of_day: str) -> GroundWindow:
        """The window centred on ``(cx, cy)``, lit for ``time_of_day``."""
        mpp = GROUND_MPP
        n = int(round(WINDOW_M / mpp))
        x0, y1 = cx - WINDOW_M / 2, cy + WINDOW_M / 2
        img = _blank(n).copy()  # RGBA, paved; drawn on directly (RGBA remaps faster)
        win = box(x0, y1 - WINDOW_M, x0 + WINDOW_M, y1).buffer(20.0)

        def px(xy: np.ndarray) -> np.ndarray:
            out = np.empty(xy.shape, np.int32)
            np.rint(((xy[:, 0] - x0) / mpp - 0.5) * _ONE, out=out[:, 0], casting="unsafe")
            np.rint(((y1 - xy[:, 1]) / mpp - 0.5) * _ONE, out=out[:, 1], casting="unsafe")
            return out

        aa = cv2.LINE_AA
        idx = np.sort(self._area_tree.query(win))
        for kind in ("green", "water"):
            sel = idx[self._area_kind[idx] == kind] if len(idx) else idx
            if len(sel):
                cv2.fillPoly(img, self._areas.get(sel, px), COLOURS[kind], aa, _SHIFT)
        idx = np.sort(self._road_tree.query(win))
        if len(idx):
            lines = self._roads.get(idx, px)
            t = np.maximum(1, np.rint(self._road_w[idx] / mpp)).astype(int)
            for colour, extra in (("kerb", int(round(0.5 / mpp))), ("road", 0)):
                for tv in np.unique(t):
                    sel = [ln for ln, tt in zip(lines, t) if tt == tv]
                    cv2.polylines(img, sel, False, COLOURS[colour], int(tv) + extra, aa, _SHIFT)
        idx = np.sort(self._path_tree.query(win))
        if len(idx):
            lines = self._paths.get(idx, px)
            t = np.maximum(1, np.rint(self._path_w[idx] / mpp)).astype(int)
            for tv in np.unique(t):
                sel = [ln for ln, tt in zip(lines, t) if tt == tv]
                cv2.polylines(img, sel, False, COLOURS["path"], int(tv), aa, _SHIFT)
        idx = np.sort(self._mark_tree.query(win))
        if len(idx):
            cv2.fillPoly(img, self._marks.get(idx, px), COLOURS["marking"], aa, _SHIFT)
        cv2.add(img, _noise(n), dst=img)
        if time_of_day != "day":
            cv2.multiply(img, (*AMBIENT[time_of_day], 1.0), dst=img)
        img.setflags(write=False)
        return GroundWindow(img, x0, y1, mpp)


class _Items:
    """Lists of coordinate arrays (rings, polylines, quads) per item, stored in one array
    so that a window's items are transformed to pixels with one numpy call.
    """

    def __init__(self, items: list[list[np.ndarray]]) -> None:
        flat = [np.asarray(r, dtype=np.float64).reshape(-1, 2) for rings in items for r in rings]
        self.xy = np.concatenate(flat) if flat else np.zeros((0, 2))
        lens = np.array([len(r) for r in flat], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(lens)])
        self.first = np.concatenate([[0], np.cumsum([len(r) for r in items])]).astype(np.int64)

    def get(self, idx: np.ndarray, px) -> list[np.ndarray]:
        """Pixel coordinates of every part of items ``idx``."""
        parts = np.concatenate([np.arange(self.first[i], self.first[i + 1]) for i in idx])
        if not len(parts):
            return []
        sel = np.concatenate([np.arange(self.starts[k], self.starts[k + 1]) for k in parts])
        p = px(self.xy[sel])
        cuts = np.cumsum(self.starts[parts + 1] - self.starts[parts])[:-1]
        return np.split(p, cuts)


def _dashes(geom) -> list[np.ndarray]:
    """Centre-line dashes (3 m long, 0.15 m wide, every 6 m) of a road, as quads."""
    out = []
    L = geom.length
    for s in np.arange(1.5, L - 1.5, 6.0):
        a = geom.interpolate(s)
        b = geom.interpolate(min(s + 3.0, L))
        d = np.array([b.x - a.x, b.y - a.y])
        n = float(np.hypot(*d))
        if n < 1e-6:
            continue
        nv = np.array([-d[1], d[0]]) / n * 0.075
        pa, pb = np.array([a.x, a.y]), np.array([b.x, b.y])
        out.append(np.array([pa - nv, pb - nv, pb + nv, pa + nv]))
    return out


def _zebra(a, b, width: float) -> list[np.ndarray]:
    """Stripes along the walking line ``a -> b``: 0.5 m bars every metre, each bar
    ``width`` metres long across the walking direction (i.e. along the road).
    """
    d = np.subtract(b, a)
    L = float(np.hypot(*d))
    if L < 0.5:
        return []
    t = d / L
    n = np.array([-t[1], t[0]]) * width / 2
    quads = []
    for s in np.arange(0.25, L - 0.2, 1.0):
        p0 = np.asarray(a, dtype=float) + t * s
        p1 = p0 + t * 0.5
        quads.append(np.array([p0 - n, p1 - n, p1 + n, p0 + n]))
    return quads


@lru_cache(maxsize=2)
def _noise(n: int) -> np.ndarray:
    """Fixed fine-grained brightness noise (0..6) for an ``n x n`` RGBA window."""
    rng = np.random.default_rng(12345)
    tile = rng.integers(0, 7, (256, 256), dtype=np.uint8)
    reps = -(-n // 256)
    full = np.tile(tile, (reps, reps))[:n, :n]
    return cv2.merge([full, full, full, np.zeros_like(full)])


@lru_cache(maxsize=2)
def _blank(n: int) -> np.ndarray:
    img = np.empty((n, n, 4), np.uint8)
    cv2.rectangle(img, (0, 0), (n, n), (*COLOURS["paved"], 255), -1)
    img.setflags(write=False)
    return img


def far_colour(time_of_day: str) -> tuple[float, float, float]:
    """Colour of the ground beyond the detailed window."""
    amb = AMBIENT[time_of_day]
    return tuple(float(c * a) for c, a in zip(FAR_COLOUR, amb))  # type: ignore[return-value]


def window_covers(win: GroundWindow, x: float, y: float, margin: float) -> bool:
    """Whether ``(x, y)`` lies at least ``margin`` metres inside the window."""
    n = win.image.shape[0] * win.mpp
    return (
        win.x0 + margin <= x <= win.x0 + n - margin and win.y1 - n + margin <= y <= win.y1 - margin
    )
