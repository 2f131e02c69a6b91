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

import cv2
import numpy as np
import shapely
from shapely.geometry import box

from urban_gym.world.city import City

GROUND_MPP = 0.2
WINDOW_M = 256.0
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
    ``(x0 + (col + 0.5) * mpp, y1 - (row + 0.5) * mpp)``."""

    image: np.ndarray
    x0: float
    y1: float
    mpp: float


class GroundPainter:
    """Draws ground windows of one city."""

    def __init__(self, city: City) -> None:
        self.city = city
        edges = list(city.network.edges(data=True))
        self._geoms = [d["geometry"] for _, _, d in edges]
        self._kind = [d["kind"] for _, _, d in edges]
        self._width = np.array([float(d.get("width") or 3.0) for _, _, d in edges])
        self._tree = shapely.STRtree(self._geoms)
        self._area_tree = shapely.STRtree([a.polygon for a in city.areas])
        self._road_idx = np.array([i for i, k in enumerate(self._kind) if k == "road"], dtype=int)
        self._road_tree = shapely.STRtree([self._geoms[i] for i in self._road_idx])
        cross = [o for o in city.objects if o.kind == "crossing"]
        self._cross_xy = np.array([o.position for o in cross], dtype=float).reshape(-1, 2)
        self._cross_tree = shapely.STRtree(shapely.points(self._cross_xy))

    @staticmethod
    def snapped_centre(x: float, y: float) -> tuple[float, float]:
        """The window centre used for a viewer at ``(x, y)``."""
        return (round(x / SNAP_M) * SNAP_M, round(y / SNAP_M) * SNAP_M)

    def carriageway(self, i: int) -> float:
        """Asphalt width (m) of road edge ``i``."""
        return max(3.0, float(self._width[i]) - 4.0)

    def paint(self, cx: float, cy: float, time_of_day: str) -> GroundWindow:
        """The window centred on ``(cx, cy)``, lit for ``time_of_day``."""
        mpp = GROUND_MPP
        n = int(round(WINDOW_M / mpp))
        x0, y1 = cx - WINDOW_M / 2, cy + WINDOW_M / 2
        img = np.empty((n, n, 3), np.uint8)
        img[:] = COLOURS["paved"]
        win = box(x0, y1 - WINDOW_M, x0 + WINDOW_M, y1)

        def px(coords) -> np.ndarray:
            a = np.asarray(coords, dtype=float)
            col = (a[:, 0] - x0) / mpp - 0.5
            row = (y1 - a[:, 1]) / mpp - 0.5
            return np.round(np.stack([col, row], 1) * _ONE).astype(np.int32)

        aa = cv2.LINE_AA
        for kind in ("green", "water"):
            rings = []
            for i in self._area_tree.query(win):
                a = self.city.areas[int(i)]
                if a.kind != kind:
                    continue
                for g in getattr(a.polygon, "geoms", [a.polygon]):
                    rings.append(px(g.exterior.coords))
                    rings += [px(r.coords) for r in g.interiors]
            if rings:
                cv2.fillPoly(img, rings, COLOURS[kind], aa, _SHIFT)
        idx = sorted(int(i) for i in self._tree.query(win.buffer(30.0)))
        roads = [i for i in idx if self._kind[i] == "road"]
        for colour, extra in (("kerb", 0.5), ("road", 0.0)):
            for i in roads:
                t = max(1, int(round((self.carriageway(i) + extra) / mpp)))
                cv2.polylines(img, [px(self._geoms[i].coords)], False, COLOURS[colour], t,
                              aa, _SHIFT)  # fmt: skip
        for i in roads:
            if self.carriageway(i) >= 7.0:
                self._dashes(img, px, self._geoms[i])
        for i in idx:
            k = self._kind[i]
            if k in ("path", "footway") and self._in_green(self._geoms[i]):
                t = max(1, int(round(min(self._width[i], 3.0) / mpp)))
                cv2.polylines(img, [px(self._geoms[i].coords)], False, COLOURS["path"], t,
                              aa, _SHIFT)  # fmt: skip
        for i in idx:
            if self._kind[i] == "crossing":
                g = self._geoms[i]
                self._zebra(img, px, np.asarray(g.coords)[0], np.asarray(g.coords)[-1],
                            width=min(4.0, max(2.5, float(self._width[i]))))  # fmt: skip
        for j in self._cross_tree.query(win.buffer(10.0)):
            self._zebra_object(img, px, self._cross_xy[int(j)])
        noise = np.random.default_rng(int(abs(cx) * 7 + abs(cy) * 13) % 2**31)
        img = cv2.add(img, noise.integers(0, 7, (n, n, 1), dtype=np.uint8).repeat(3, 2))
        amb = np.array(AMBIENT[time_of_day], np.float32)
        img = np.clip(img.astype(np.float32) * amb, 0, 255).astype(np.uint8)
        img = cv2.cvtColor(img, cv2.COLOR_RGB2RGBA)  # RGBA: faster bilinear remap
        img.setflags(write=False)
        return GroundWindow(img, x0, y1, mpp)

    def _in_green(self, geom) -> bool:
        mid = geom.interpolate(0.5, normalized=True)
        for i in self._area_tree.query(mid):
            if self.city.areas[int(i)].kind == "green" and self.city.areas[int(i)].polygon.covers(
                mid
            ):
                return True
        return False

    def _dashes(self, img, px, geom) -> None:
        L = geom.length
        for s in np.arange(1.5, L - 1.5, 6.0):
            a = geom.interpolate(s)
            b = geom.interpolate(min(s + 3.0, L))
            cv2.line(img, tuple(px([(a.x, a.y)])[0]), tuple(px([(b.x, b.y)])[0]),
                     COLOURS["marking"], max(1, int(round(0.15 / GROUND_MPP))), cv2.LINE_AA,
                     _SHIFT)  # fmt: skip

    def _zebra(self, img, px, a, b, width: float) -> None:
        """Stripes along the walking line ``a -> b``: 0.5 m bars every metre, each bar
        ``width`` metres long across the walking direction (i.e. along the road)."""
        d = np.subtract(b, a)
        L = float(np.hypot(*d))
        if L < 0.5:
            return
        t = d / L
        n = np.array([-t[1], t[0]]) * width / 2
        quads = []
        for s in np.arange(0.25, L - 0.2, 1.0):
            p0 = np.asarray(a) + t * s
            p1 = p0 + t * 0.5
            quads.append(px([p0 - n, p1 - n, p1 + n, p0 + n]))
        if quads:
            cv2.fillPoly(img, quads, COLOURS["marking"], cv2.LINE_AA, _SHIFT)

    def _zebra_object(self, img, px, p) -> None:
        if not len(self._road_idx):
            return
        k = int(self._road_tree.nearest(shapely.Point(p)))
        i = int(self._road_idx[k])
        g = self._geoms[i]
        if g.distance(shapely.Point(p)) > self.carriageway(i) / 2 + 3.0:
            return
        s = g.project(shapely.Point(p))
        q0, q1 = g.interpolate(max(s - 0.5, 0.0)), g.interpolate(min(s + 0.5, g.length))
        along = np.array([q1.x - q0.x, q1.y - q0.y])
        nrm = float(np.hypot(*along))
        if nrm < 1e-9:
            return
        along /= nrm
        across = np.array([-along[1], along[0]])
        half = self.carriageway(i) / 2
        foot = np.array([g.interpolate(s).x, g.interpolate(s).y])
        # the crossing runs across the road through the object's position
        centre = foot + along * float(np.dot(np.asarray(p) - foot, along))
        self._zebra(img, px, centre - across * half, centre + across * half, width=3.0)


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
