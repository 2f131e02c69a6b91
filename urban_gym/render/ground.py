"""The ground seen by the ray caster: a top-down raster of a window of the city.

Classes, bottom to top: paved ground (sidewalks, squares), green areas, water, car roads
(asphalt, the network edges of kind ``road`` drawn at their carriageway width: the mapped
walkable width minus two 2 m sidewalks, at least 3 m, with a dashed centre line on wide
roads), footways and paths, and zebra crossings (network edges of kind ``crossing`` and
``crossing`` street objects, striped across the road they cross).

The raster is painted at ``GROUND_MPP`` metres per pixel in daylight colours; the ray caster
lights what it samples for the time of day (:func:`light`). Where the whole city (with a
``WINDOW_M / 2`` margin) fits in :data:`CITY_RASTER_MAX_BYTES`, one raster covers it: it is
painted once per machine, kept on disk and memory-mapped (:func:`city_raster`), so no
process paints ground again. A larger city is painted in windows ``WINDOW_M`` metres square,
centred on a grid of ``SNAP_M`` metres and cached per centre, so a viewer always has at
least ``WINDOW_M / 2 - SNAP_M`` metres of detailed ground around them. Beyond the raster the
ground has the plain :data:`FAR_COLOUR`.
"""

from __future__ import annotations

import hashlib
import math
import sys
from collections.abc import Callable
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
#: ground farther than this (m, horizontally) from the viewer has the plain far colour, as
#: beyond a window: the detail a window always gave, and a view reads only the raster near
#: the viewer (the pages of a memory-mapped city raster it touches stay few)
DETAIL_M = WINDOW_M / 2
#: the largest whole-city raster (bytes, RGBA); a larger city is painted in windows
CITY_RASTER_MAX_BYTES = 320 * 2**20


@dataclass
class GroundWindow:
    """A raster of the ground (RGBA, daylight colours): ``image[row, col]`` covers world
    point ``(x0 + (col + 0.5) * mpp, y1 - (row + 0.5) * mpp)``.
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
        walk = [i for i, k in enumerate(kind) if k in ("path", "footway")]
        paths: list[int] = []
        if walk and green_u is not None:
            mids = shapely.line_interpolate_point(
                np.array([geoms[i] for i in walk], dtype=object), 0.5, normalized=True
            )
            paths = [i for i, ok in zip(walk, shapely.covers(green_u, mids)) if ok]
        self._paths = _Items([[np.asarray(geoms[i].coords)] for i in paths])
        self._path_w = np.minimum(width[paths], 3.0)
        self._path_tree = shapely.STRtree([geoms[i] for i in paths])
        marks: list[list[np.ndarray]] = []  # dashes and zebra stripes, as quads
        marks.extend(_dashes([geoms[i] for i in road_idx if self._carriage[i] >= 7.0]))
        for i, k in enumerate(kind):
            if k == "crossing":
                c = np.asarray(geoms[i].coords)
                marks.append(_zebra(c[0], c[-1], min(4.0, max(2.5, float(width[i])))))
        crossings = [o.position for o in city.objects if o.kind == "crossing"]
        if road_idx and crossings:
            marks.extend(self._zebra_objects(np.asarray(crossings, float), geoms, road_idx))
        marks = [m for m in marks if m]
        self._marks = _Items(marks)
        centres = [np.concatenate(m).mean(0) for m in marks]
        self._mark_tree = shapely.STRtree(shapely.points(np.array(centres).reshape(-1, 2)))

    def _zebra_objects(self, pts: np.ndarray, geoms, road_idx) -> list[list[np.ndarray]]:
        """A zebra across the nearest road through each ``crossing`` object at ``pts``
        (``(n, 2)`` m): none where that road is more than 3 m beyond its kerb.
        """
        pp = shapely.points(pts)
        k = np.asarray(self._road_tree.nearest(pp), dtype=np.int64)
        idx = np.asarray(road_idx, dtype=np.int64)[k]
        g = np.array([geoms[i] for i in idx], dtype=object)
        near = shapely.distance(g, pp) <= self._carriage[idx] / 2 + 3.0
        s = shapely.line_locate_point(g, pp)
        length = shapely.length(g)
        q0 = shapely.get_coordinates(shapely.line_interpolate_point(g, np.maximum(s - 0.5, 0.0)))
        q1 = shapely.get_coordinates(shapely.line_interpolate_point(g, np.minimum(s + 0.5, length)))
        foot = shapely.get_coordinates(shapely.line_interpolate_point(g, s))
        along = q1 - q0
        nrm = np.hypot(along[:, 0], along[:, 1])
        out: list[list[np.ndarray]] = []
        for j in range(len(pts)):
            if not near[j] or nrm[j] < 1e-9:
                out.append([])
                continue
            a = along[j] / nrm[j]
            across = np.array([-a[1], a[0]])
            half = self._carriage[idx[j]] / 2
            centre = foot[j] + a * float(np.dot(pts[j] - foot[j], a))
            out.append(_zebra(centre - across * half, centre + across * half, width=3.0))
        return out

    @classmethod
    def for_city(cls, city: City) -> GroundPainter:
        """A painter of ``city``: for a city with a fingerprint (one
        :func:`~urban_gym.world.loader.load_city` loaded) its prepared items come from the
        world cache after the first time on a machine
        (:func:`urban_gym.world.diskcache.cached_object`, named by the fingerprint and this
        module's source), else it is built.
        """
        from urban_gym.world.diskcache import cached_for_city

        def build() -> dict:
            state = dict(vars(cls(city)))
            del state["city"]  # the city is the caller's, not a copy from the cache
            return state

        painter = cls.__new__(cls)
        painter.__dict__.update(
            cached_for_city("ground-painter", city, build, sys.modules[__name__])
        )
        painter.city = city
        return painter

    @staticmethod
    def snapped_centre(x: float, y: float) -> tuple[float, float]:
        """The window centre used for a viewer at ``(x, y)``."""
        return (round(x / SNAP_M) * SNAP_M, round(y / SNAP_M) * SNAP_M)

    def paint(self, cx: float, cy: float) -> GroundWindow:
        """The ``WINDOW_M`` square window centred on ``(cx, cy)`` (m)."""
        n = int(round(WINDOW_M / GROUND_MPP))
        return self.paint_rect(cx - WINDOW_M / 2, cy + WINDOW_M / 2, n, n)

    def city_rect(self) -> tuple[float, float, int, int]:
        """:func:`raster_rect` of this painter's city."""
        return raster_rect(self.city)

    def paint_rect(self, x0: float, y1: float, w: int, h: int) -> GroundWindow:
        """The ground of the ``w`` x ``h`` pixel rectangle whose top-left corner is world
        point ``(x0, y1)`` (m), in daylight colours.
        """
        mpp = GROUND_MPP
        img = np.empty((h, w, 4), np.uint8)  # RGBA, paved; drawn on directly (RGBA remaps faster)
        img[:] = (*COLOURS["paved"], 255)
        win = box(x0, y1 - h * mpp, x0 + w * mpp, y1).buffer(20.0)

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
        # the noise is anchored to the world's pixel grid, so windows and the city raster agree
        c0 = int(round(x0 / mpp))
        r0 = int(round(-y1 / mpp))
        cv2.add(img, _noise_rect(r0, c0, h, w), dst=img)
        img.setflags(write=False)
        return GroundWindow(img, x0, y1, mpp)

    def digest(self) -> str:
        """A hash of everything this painter draws (names the city raster on disk)."""
        h = hashlib.sha1()
        for items in (self._areas, self._roads, self._paths, self._marks):
            h.update(np.ascontiguousarray(items.xy).tobytes())
            h.update(items.starts.tobytes())
            h.update(items.first.tobytes())
        for arr in (self._road_w, self._path_w):
            h.update(np.ascontiguousarray(arr, np.float64).tobytes())
        h.update("|".join(map(str, self._area_kind)).encode())
        h.update(repr(self.city_rect()).encode())
        return h.hexdigest()[:16]


def raster_rect(city: City) -> tuple[float, float, int, int]:
    """``(x0, y1, width px, height px)`` of the raster that covers the whole of ``city``
    (:func:`drawn_bounds`) with a ``WINDOW_M / 2`` margin, on the pixel grid of the windows.
    """
    x0, y0, x1, y1 = drawn_bounds(city)
    m = WINDOW_M / 2
    g = SNAP_M  # corners on the windows' grid: the same pixels as a window's
    gx0 = math.floor((x0 - m) / g) * g
    gy1 = math.ceil((y1 + m) / g) * g
    w = int(math.ceil((x1 + m - gx0) / GROUND_MPP))
    h = int(math.ceil((gy1 - (y0 - m)) / GROUND_MPP))
    return gx0, gy1, w, h


def city_raster(city: City, painter: Callable[[], GroundPainter]) -> GroundWindow | None:
    """The raster of the whole city (:func:`raster_rect`), painted once per machine by
    ``painter()`` and memory-mapped from the render cache
    (:func:`urban_gym.world.diskcache.cached_array`; named by the city's fingerprint when
    :func:`~urban_gym.world.loader.load_city` loaded it, so no painter is built then, else
    by a hash of what the painter draws), or None when it would be larger than
    :data:`CITY_RASTER_MAX_BYTES` (the city is then painted in windows).
    """
    from urban_gym.world.diskcache import cached_array
    from urban_gym.world.loader import city_fingerprint

    x0, y1, w, h = raster_rect(city)
    if w * h * 4 > CITY_RASTER_MAX_BYTES or w <= 0 or h <= 0:
        return None
    fp = city_fingerprint(city)
    if fp is not None:
        key = hashlib.sha1(repr((fp, x0, y1, w, h)).encode()).hexdigest()[:16]
    else:
        key = painter().digest()
    img = cached_array(
        f"ground-{key}",
        lambda: painter().paint_rect(x0, y1, w, h).image,
        sys.modules[__name__],
    )
    return GroundWindow(img, x0, y1, GROUND_MPP)


def drawn_bounds(city: City) -> tuple[float, float, float, float]:
    """``(x0, y0, x1, y1)`` (m) of everything the ground shows: the buildings' bounds
    widened by the network's and the areas' extent.
    """
    boxes = [np.asarray(city.bounds, dtype=float)]
    xy = [d for _, d in city.node_xy.items()]
    if xy:
        a = np.asarray(xy, dtype=float)
        boxes.append(np.array([*a.min(0), *a.max(0)]))
    for area in city.areas:
        boxes.append(np.asarray(area.polygon.bounds, dtype=float))
    b = np.vstack(boxes)
    return float(b[:, 0].min()), float(b[:, 1].min()), float(b[:, 2].max()), float(b[:, 3].max())


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


def _dashes(geoms: list) -> list[list[np.ndarray]]:
    """Centre-line dashes (3 m long, 0.15 m wide, every 6 m) of each road in ``geoms``, as
    one list of quads per road (all roads' points interpolated in one call).
    """
    if not geoms:
        return []
    g = np.array(geoms, dtype=object)
    lengths = shapely.length(g)
    starts = [np.arange(1.5, L - 1.5, 6.0) for L in lengths]
    counts = np.array([len(st) for st in starts])
    if not counts.sum():
        return [[] for _ in geoms]
    road = np.repeat(np.arange(len(geoms)), counts)
    s0 = np.concatenate(starts)
    a = shapely.get_coordinates(shapely.line_interpolate_point(g[road], s0))
    ends = np.minimum(s0 + 3.0, lengths[road])
    b = shapely.get_coordinates(shapely.line_interpolate_point(g[road], ends))
    d = b - a
    n = np.hypot(d[:, 0], d[:, 1])
    ok = n >= 1e-6
    nv = np.zeros_like(d)
    nv[ok] = np.column_stack([-d[ok, 1], d[ok, 0]]) / n[ok, None] * 0.075
    quads = np.stack([a - nv, b - nv, b + nv, a + nv], axis=1)  # (dashes, 4, 2)
    out: list[list[np.ndarray]] = []
    k = 0
    for c in counts:
        out.append([q for q, good in zip(quads[k : k + c], ok[k : k + c]) if good])
        k += c
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
    s = np.arange(0.25, L - 0.2, 1.0)
    p0 = np.asarray(a, dtype=float)[None, :] + t[None, :] * s[:, None]
    p1 = p0 + t * 0.5
    quads = np.stack([p0 - n, p1 - n, p1 + n, p0 + n], axis=1)  # (bars, 4, 2)
    return list(quads)


@lru_cache(maxsize=1)
def _noise_tile() -> np.ndarray:
    """Fixed fine-grained brightness noise (0..6), a 256 x 256 tile repeated over the world."""
    rng = np.random.default_rng(12345)
    return rng.integers(0, 7, (256, 256), dtype=np.uint8)


def _noise_rect(r0: int, c0: int, h: int, w: int) -> np.ndarray:
    """The noise of world pixel rows ``r0 ..`` and columns ``c0 ..`` as RGBA (no alpha)."""
    tile = _noise_tile()
    rows = (np.arange(r0, r0 + h) % 256)[:, None]
    cols = (np.arange(c0, c0 + w) % 256)[None, :]
    full = tile[rows, cols]
    return cv2.merge([full, full, full, np.zeros_like(full)])


def far_colour(time_of_day: str) -> tuple[float, float, float]:
    """Colour of the ground beyond the detailed raster, lit for ``time_of_day``."""
    amb = AMBIENT[time_of_day]
    return tuple(float(c * a) for c, a in zip(FAR_COLOUR, amb))  # type: ignore[return-value]


def light(img: np.ndarray, time_of_day: str) -> np.ndarray:
    """Ground pixels ``img`` (RGBA, daylight colours) lit for ``time_of_day``, in place."""
    if time_of_day != "day":
        cv2.multiply(img, (*AMBIENT[time_of_day], 1.0), dst=img)
    return img


def window_covers(win: GroundWindow, x: float, y: float, margin: float) -> bool:
    """Whether ``(x, y)`` lies at least ``margin`` metres inside the window."""
    h, w = win.image.shape[:2]
    return (
        win.x0 + margin <= x <= win.x0 + w * win.mpp - margin
        and win.y1 - h * win.mpp + margin <= y <= win.y1 - margin
    )
