"""Top-down maps of a city window, with markers for agents, goals and tasks.

A map shows the square (or rectangular) window of ``size`` pixels centred on ``center``
(metres) at ``metres_per_pixel``. With ``rotation`` 0 it is north-up; otherwise
``rotation`` is the compass bearing (degrees) that points to the top of the image, so a
heading-up map of an agent facing east uses ``rotation=90``.

Pixel coordinates are continuous ``(col, row)``: pixel ``[row, col]`` of the image covers
``[col, col + 1) x [row, row + 1)``, so the image centre is ``(w / 2, h / 2)`` and a
point lands in pixel ``(floor(col), floor(row))`` (see :meth:`MapRenderer.world_to_pixel`
and :meth:`MapRenderer.pixel_to_world`).

Layers, bottom to top: land, green areas, water, the walkable network (car roads drawn as
wide white streets at their mapped width, footways and sidewalks as thin grey lines),
buildings, optional POI labels, then the markers of :class:`MapMarkers`: grid overlay,
trajectory, closures, numbered destinations, start (blue), goal (red), selected point,
agent arrow. Drawing uses OpenCV and Pillow (text in DejaVu Sans, so ä/ö/å render).

The static layers are drawn into a canvas around a snapped centre and cached per
(metres per pixel, snapped centre, canvas size), so a map that follows a moving agent is
redrawn from the canvas with one ``cv2.warpAffine`` until the agent leaves the cell. The
canvases of a city are kept once per process and shared by all its renderers (the N envs
of a batched vector env each hold one), up to :data:`WINDOW_CANVAS_CACHE_BYTES`.

This module is the renderer and its canvas policy (which canvas a view is cut from, how many
are kept); the pieces live beside it: the colours and pixel arithmetic in
:mod:`~urban_gym.render.map_style`, the prepared geometry in
:mod:`~urban_gym.render.map_geometry`, the canvases in :mod:`~urban_gym.render.map_canvas`,
the markers in :mod:`~urban_gym.render.map_markers`, the oblique view in
:mod:`~urban_gym.render.map_oblique` and the POI label sprites in
:mod:`~urban_gym.render.map_labels`.
"""

from __future__ import annotations

import math
import threading
import weakref
from typing import overload

import cv2
import numpy as np

from urban_gym.caching import LRUCache
from urban_gym.errors import RenderError
from urban_gym.render import kernels, threads
from urban_gym.render.camera import image_size
from urban_gym.render.map_canvas import (
    SNAP_PX,
    Canvas,
    city_canvas_frame,
    draw_static,
    stored_city_canvas,
    warp,
)
from urban_gym.render.map_geometry import shared_geometry
from urban_gym.render.map_labels import LABEL_SIZE, label_table
from urban_gym.render.map_markers import (
    MapMarkers,
    check_xy,
    draw_grid,
    draw_marker_text,
    draw_markers,
    is_num,
    reserved_boxes,
)
from urban_gym.render.map_markers import arrow as _arrow  # noqa: F401 (imported from here)
from urban_gym.render.map_oblique import (
    OBLIQUE_DISTANCE_PX,
    OBLIQUE_GROUND,
    ObliqueCamera,
    draw_prisms,
    perspective_ground,
)
from urban_gym.render.map_style import LABEL_RGB, STYLE, View, view_px, world_to_pixel
from urban_gym.render.text import blit_text, text_sprite, text_width
from urban_gym.world.city import City
from urban_gym.world.names import sign_language

__all__ = [
    "CITY_CANVAS_AFTER",
    "CITY_CANVAS_CACHE_BYTES",
    "CITY_CANVAS_MAX_BYTES",
    "OBLIQUE_DISTANCE_PX",
    "OBLIQUE_GROUND",
    "STYLE",
    "WINDOW_CANVAS_CACHE_BYTES",
    "MapMarkers",
    "MapRenderer",
]

#: bytes of window canvases kept per city, shared by its renderers
WINDOW_CANVAS_CACHE_BYTES = 32 * 2**20
#: the largest static map of a whole city (bytes, RGB) drawn at one scale; beyond it the
#: static map is drawn in windows around the view
CITY_CANVAS_MAX_BYTES = 24 * 2**20
#: bytes of whole-city static maps kept per city (over all scales)
CITY_CANVAS_CACHE_BYTES = 48 * 2**20
#: the views at one scale after which the static map of the whole city is drawn at it
CITY_CANVAS_AFTER = 3
_MISSING = object()
#: city -> scale (m per pixel) -> its whole-city static map (None: too large)
_CITY_CANVASES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: city -> its window canvases, keyed (m per pixel, snapped centre, canvas side)
_WINDOW_CANVASES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_WINDOW_LOCK = threading.Lock()


class MapRenderer:
    """Top-down maps of ``city`` (see the module docstring for the conventions)."""

    def __init__(self, city: City) -> None:
        if not isinstance(city, City):
            raise RenderError(f"MapRenderer needs a City, got {type(city).__name__}")
        self.city = city
        with _WINDOW_LOCK:
            canvases = _WINDOW_CANVASES.get(city)
            if canvases is None:
                canvases = _WINDOW_CANVASES[city] = LRUCache(
                    max_bytes=WINDOW_CANVAS_CACHE_BYTES, lock=True
                )
        #: the window canvases of the city (shared by its renderers)
        self._canvases: LRUCache[tuple, Canvas] = canvases
        self._scale_uses: dict[float, int] = {}
        self._prepare()

    def __reduce__(self):
        # pickles as its city; the canvas cache is rebuilt on the other side
        return (type(self), (self.city,))

    # ------------------------------------------------------------------ geometry
    def _prepare(self) -> None:
        # the city's rings and trees are built once per city and shared, read-only, by
        # its renderers (the N envs of a batched vector env each hold one)
        shared = self._geo = shared_geometry(self.city)
        self._b, self._b_tree = shared["b"], shared["b_tree"]
        self._a, self._a_kind, self._a_tree = shared["a"], shared["a_kind"], shared["a_tree"]
        self._e, self._e_tree = shared["e"], shared["e_tree"]
        self._e_road, self._e_width = shared["e_road"], shared["e_width"]
        self._poi_xy = shared["poi_xy"]
        self._poi_lang: dict[int, str | None] = shared["poi_lang"]
        self._label_w: np.ndarray | None = None
        self._poi_by_x: tuple[np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------ transforms
    @overload
    @staticmethod
    def world_to_pixel(
        x: float,
        y: float,
        center: tuple[float, float],
        metres_per_pixel: float,
        size: int | tuple[int, int],
        rotation: float = 0.0,
    ) -> tuple[float, float]: ...
    @overload
    @staticmethod
    def world_to_pixel(
        x: np.ndarray,
        y: np.ndarray,
        center: tuple[float, float],
        metres_per_pixel: float,
        size: int | tuple[int, int],
        rotation: float = 0.0,
    ) -> tuple[np.ndarray, np.ndarray]: ...
    @staticmethod
    def world_to_pixel(
        x: float | np.ndarray,
        y: float | np.ndarray,
        center: tuple[float, float],
        metres_per_pixel: float,
        size: int | tuple[int, int],
        rotation: float = 0.0,
    ) -> tuple[float, float] | tuple[np.ndarray, np.ndarray]:
        """Continuous ``(col, row)`` of world point ``(x, y)`` (metres) in a map with these
        parameters; the point lies in pixel ``[floor(row), floor(col)]``. Arrays work too.
        """
        return world_to_pixel(x, y, center, metres_per_pixel, size, rotation)

    @overload
    @staticmethod
    def pixel_to_world(
        col: float,
        row: float,
        center: tuple[float, float],
        metres_per_pixel: float,
        size: int | tuple[int, int],
        rotation: float = 0.0,
    ) -> tuple[float, float]: ...
    @overload
    @staticmethod
    def pixel_to_world(
        col: np.ndarray,
        row: np.ndarray,
        center: tuple[float, float],
        metres_per_pixel: float,
        size: int | tuple[int, int],
        rotation: float = 0.0,
    ) -> tuple[np.ndarray, np.ndarray]: ...
    @staticmethod
    def pixel_to_world(
        col: float | np.ndarray,
        row: float | np.ndarray,
        center: tuple[float, float],
        metres_per_pixel: float,
        size: int | tuple[int, int],
        rotation: float = 0.0,
    ) -> tuple[float, float] | tuple[np.ndarray, np.ndarray]:
        """World point (metres) at continuous pixel coordinates ``(col, row)``; the inverse
        of :meth:`world_to_pixel` (pixel ``[r, c]``'s centre is ``(c + 0.5, r + 0.5)``).
        """
        w, h = image_size(size)
        th = math.radians(rotation)
        dc = (np.asarray(col, dtype=float) - w / 2.0) * metres_per_pixel
        dr = (np.asarray(row, dtype=float) - h / 2.0) * metres_per_pixel
        x = center[0] + dc * math.cos(th) - dr * math.sin(th)
        y = center[1] - dc * math.sin(th) - dr * math.cos(th)
        if np.ndim(x) == 0:
            return float(x), float(y)
        return x, y

    @staticmethod
    def oblique_pixel_to_world(
        col: float,
        row: float,
        center: tuple[float, float],
        metres_per_pixel: float,
        size: int | tuple[int, int],
        rotation: float = 0.0,
        tilt: float = 0.0,
    ) -> tuple[float, float] | None:
        """The ground point (metres) at pixel ``(col, row)`` of a map drawn with ``tilt``
        (:meth:`render_oblique`; :meth:`pixel_to_world` when ``tilt`` is 0); None for a
        pixel above the horizon.
        """
        if not tilt:
            return MapRenderer.pixel_to_world(col, row, center, metres_per_pixel, size, rotation)
        w, h = image_size(size)
        cam = ObliqueCamera(center, metres_per_pixel, w, h, rotation, tilt)
        return cam.unproject(col, row)

    # ------------------------------------------------------------------ rendering
    def render(
        self,
        center: tuple[float, float],
        metres_per_pixel: float = 1.0,
        size: int | tuple[int, int] = 512,
        rotation: float = 0.0,
        labels: bool = False,
        markers: MapMarkers | None = None,
        tilt: float = 0.0,
    ) -> np.ndarray:
        """The map window as an ``(h, w, 3)`` ``uint8`` RGB image.

        Args:
            center: ``(x, y)`` metres at the image centre.
            metres_per_pixel: scale, > 0.
            size: an int (square) or ``(w, h)`` pixels.
            rotation: bearing (degrees) pointing to the image top; 0 is north-up.
            labels: draw POI names (nearest to the centre first, without overlaps).
            markers: a :class:`MapMarkers` or None.
            tilt: degrees the camera leans from straight down towards the image top, in
                [0, 80): above 0 the map is drawn in perspective, as seen by a camera
                orbiting ``center`` (the scale at the centre stays ``metres_per_pixel``),
                with the buildings extruded to their heights (:meth:`render_oblique`).
        """
        if tilt:
            return self.render_oblique(
                center, metres_per_pixel, size, rotation, labels, markers, tilt
            )
        w, h = image_size(size)
        return threads.for_image(
            w * h, self._render_top_down, center, metres_per_pixel, size, rotation, labels, markers
        )

    def _render_top_down(self, center, metres_per_pixel, size, rotation, labels, markers):
        cx, cy = check_xy("center", center)
        mpp = float(metres_per_pixel) if is_num(metres_per_pixel) else math.nan
        if not (math.isfinite(mpp) and mpp > 0):
            raise RenderError(f"metres_per_pixel={metres_per_pixel!r} must be a positive number")
        w, h = image_size(size)
        if not is_num(rotation) or not math.isfinite(float(rotation)):
            raise RenderError(f"rotation={rotation!r} must be a finite number of degrees")
        rot = float(rotation) % 360.0
        if markers is not None and not isinstance(markers, MapMarkers):
            raise RenderError(f"markers={markers!r} must be a MapMarkers or None")
        half_diag = math.hypot(w, h) / 2.0 if rot else max(w, h) / 2.0
        canvas = self._canvas(cx, cy, mpp, int(math.ceil(half_diag)), rot == 0.0)
        img = self._warp(canvas, cx, cy, w, h, rot)
        view = (cx, cy, mpp, w, h, rot)
        if labels:
            self._draw_labels(img, view, reserved_boxes(markers, view))
        if markers is not None:
            draw_grid(img, markers, view)
            self._draw_markers(img, markers, view)
            draw_marker_text(img, markers, view)
        return img

    def render_oblique(
        self,
        center: tuple[float, float],
        metres_per_pixel: float = 1.0,
        size: int | tuple[int, int] = 512,
        rotation: float = 0.0,
        labels: bool = False,
        markers: MapMarkers | None = None,
        tilt: float = 45.0,
    ) -> np.ndarray:
        """The map seen obliquely: a camera at :data:`OBLIQUE_DISTANCE_PX` image widths from
        ``center``, leaning ``tilt`` degrees from straight down towards ``rotation``. The
        ground (with its labels and markers) is the top-down map warped into perspective;
        every building in view is then drawn as a prism of its height (walls darker than
        roofs), the farthest first. Beyond the ground drawn, the image shows the sky.
        """
        if not is_num(tilt) or not 0.0 <= float(tilt) < 80.0:
            raise RenderError(f"tilt={tilt!r} must be a number of degrees in [0, 80)")
        cx, cy = check_xy("center", center)
        w, h = image_size(size)
        mpp = float(metres_per_pixel) if is_num(metres_per_pixel) else math.nan
        if not (math.isfinite(mpp) and mpp > 0):
            raise RenderError(f"metres_per_pixel={metres_per_pixel!r} must be a positive number")
        rot = float(rotation) % 360.0 if is_num(rotation) else math.nan
        if not math.isfinite(rot):
            raise RenderError(f"rotation={rotation!r} must be a finite number of degrees")
        side = OBLIQUE_GROUND * max(w, h)
        flat = self.render((cx, cy), mpp, side, rot, labels, markers)
        cam = ObliqueCamera((cx, cy), mpp, w, h, rot, float(tilt))
        img = perspective_ground(flat, cam, mpp, w, h)
        draw_prisms(img, cam, side / 2.0 * mpp, self.city, self._b_tree)
        return img

    def _canvas(
        self, cx: float, cy: float, mpp: float, half: int, unrotated: bool = False
    ) -> Canvas:
        """The static map (areas, streets, buildings) around ``(cx, cy)`` at ``mpp``: the
        whole city's where it fits in :data:`CITY_CANVAS_MAX_BYTES` (drawn once per city
        and scale, shared by the renderers of the city), else a window of ``half`` pixels
        around the view, snapped to a grid of
        :data:`~urban_gym.render.map_canvas.SNAP_PX` pixels. Both are drawn on the same
        pixel grid, so an ``unrotated`` view (a crop) is the same either way: it takes the
        whole city's canvas whenever one exists (another renderer drew it). A rotated view
        is warped, and its bilinear weights round differently on canvases of other sizes,
        so it keeps this renderer's own rule: the whole city's canvas from its
        :data:`CITY_CANVAS_AFTER`-th view at the scale.
        """
        step = SNAP_PX * mpp
        seen = self._scale_uses[mpp] = self._scale_uses.get(mpp, 0) + 1
        # a scale asked for again and again (the zoom levels of an interactive map) is
        # worth a whole-city canvas; a one-off scale (a task's reference map) is not
        if seen >= CITY_CANVAS_AFTER:
            city = self._city_canvas(mpp)
        elif unrotated:
            city = self._city_canvas(mpp, build=False)
        else:
            city = None
        if city is not None:
            return city
        sx, sy = round(cx / step) * step, round(cy / step) * step
        size = 2 * (half + SNAP_PX)
        return self._canvases.get_or_create(
            (mpp, sx, sy, size), lambda: self._window(sx, sy, mpp, size)
        )

    def _window(self, sx: float, sy: float, mpp: float, size: int) -> Canvas:
        """A square window canvas of ``size`` pixels centred on ``(sx, sy)`` (read-only:
        renderers in other threads read it).
        """
        img = self._draw_static(sx, sy, mpp, size, size)
        img.setflags(write=False)
        return Canvas(img, sx, sy, mpp)

    def _city_canvas(self, mpp: float, build: bool = True) -> Canvas | None:
        """The static map of the whole city at ``mpp`` (None where it would be larger than
        :data:`CITY_CANVAS_MAX_BYTES`), centred on the snapping grid: kept per process, and
        for a loaded city once per machine in the world cache (memory-mapped: the processes
        of a machine share its pages). With ``build`` False, only one drawn before (None
        where there is none yet).
        """
        per_city = _CITY_CANVASES.get(self.city)
        if per_city is None:
            per_city = _CITY_CANVASES.setdefault(
                self.city, LRUCache(max_bytes=CITY_CANVAS_CACHE_BYTES, lock=True)
            )
        hit = per_city.get(mpp, _MISSING)
        if hit is not _MISSING:
            return hit
        sx, sy, w, h = city_canvas_frame(self.city, mpp)
        canvas = None
        if w * h * 3 <= CITY_CANVAS_MAX_BYTES:
            img = stored_city_canvas(self.city, self._geo, sx, sy, mpp, w, h, build)
            if img is None:
                return None  # none drawn yet: not kept, so a later call draws it
            canvas = Canvas(img, sx, sy, mpp)
        per_city.put(mpp, canvas, canvas.nbytes if canvas is not None else 0)
        return canvas

    def _draw_static(self, sx: float, sy: float, mpp: float, w: int, h: int) -> np.ndarray:
        """Areas, streets and buildings of a ``w`` x ``h`` pixel canvas centred on
        ``(sx, sy)`` (m) at ``mpp`` (:func:`~urban_gym.render.map_canvas.draw_static`).
        """
        return draw_static(self._geo, sx, sy, mpp, w, h)

    def _warp(self, canvas: Canvas, cx: float, cy: float, w: int, h: int, rot: float):
        return warp(canvas, cx, cy, w, h, rot)

    # ------------------------------------------------------------------ labels

    def _draw_labels(self, img: np.ndarray, view, reserved=()) -> None:
        """POI names, nearest to the centre first, each where it fits without overlapping
        a placed one or a reserved box; the rest (and every POI) get a dot. The dots are
        drawn first, the labels over them.
        """
        if not len(self._poi_xy):
            return
        cx, cy, mpp, w, h, rot = view
        idx, cols, rows = self._label_candidates(view)
        table = label_table(self.city)
        taken = np.zeros((h // 4 + 2, w // 4 + 2), bool)  # occupancy in 4x4 pixel cells
        for c0, r0, c1, r1 in reserved:
            taken[
                max(int(r0) // 4, 0) : max(int(r1) // 4 + 1, 0),
                max(int(c0) // 4, 0) : max(int(c1) // 4 + 1, 0),
            ] = True
        widths = table.widths[idx] if table is not None else self._label_widths(idx)
        placed = self._label_layout(cols, rows, widths, taken, w)
        dot = STYLE["label"]
        dots = placed == 0
        if kernels.call("label_dots", img, cols, rows, placed, LABEL_RGB) is None:
            pc, pr = (cols[dots] - 0.5).astype(int), (rows[dots] - 0.5).astype(int)
            # a 2x2 dot whose bottom-right pixel is (pr, pc), clipped at the top and left
            rr = np.maximum(np.stack([pr - 1, pr - 1, pr, pr]), 0)
            cc = np.maximum(np.stack([pc - 1, pc, pc - 1, pc]), 0)
            img[rr, cc] = dot
        for i, c, r in zip(idx[~dots], cols[~dots], rows[~dots]):
            cv2.circle(img, (int(c - 0.5), int(r - 0.5)), 2, dot, -1, cv2.LINE_AA)
            if table is not None:
                label = table.sprites[i]
            else:
                label = text_sprite(self.city.pois[i].name, LABEL_SIZE, lang=self._language(i))
            blit_text(img, label, c + 5, r, dot, anchor="lm")

    def _language(self, i: int) -> str | None:
        """The language of POI ``i``'s sign (:func:`~urban_gym.world.names.sign_language`),
        looked up once per city.
        """
        try:
            return self._poi_lang[i]
        except KeyError:
            p = self.city.pois[i]
            lang = self._poi_lang[i] = sign_language(p.tags, self.city)
            return lang

    def _label_candidates(self, view) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The POIs the map ``view`` shows, nearest to its centre first, at most 300:
        ``(indices, columns, rows)`` (continuous pixels); compiled where the kernels run,
        this numpy path the reference.
        """
        cx, cy, mpp, w, h, rot = view
        r = (math.hypot(w, h) / 2.0 + 1.0) * mpp  # the half side of a square holding the map
        if kernels.compiled() is not None:
            order, xs = self._pois_by_x()
            th = math.radians(rot)
            args = (order, xs, self._poi_x, self._poi_y, cx, cy, mpp, w, h)
            got = kernels.call("label_candidates", *args, math.cos(th), math.sin(th), r, 300)
            if got is not None:
                return got
        idx = self._pois_near(cx, cy, r)
        px = view_px(self._poi_xy[idx], view)
        inside = (px[:, 0] >= 0) & (px[:, 0] < w) & (px[:, 1] >= 0) & (px[:, 1] < h)
        idx, px = idx[inside], px[inside]
        d = np.hypot(px[:, 0] - w / 2, px[:, 1] - h / 2)
        order = np.argsort(d, kind="stable")[:300]
        return idx[order], px[order, 0], px[order, 1]

    def _pois_by_x(self) -> tuple[np.ndarray, np.ndarray]:
        """The POIs' indices sorted by x, and their x (built once)."""
        if self._poi_by_x is None:
            order = np.argsort(self._poi_xy[:, 0], kind="stable")
            self._poi_by_x = (order, self._poi_xy[order, 0].copy())
            self._poi_x = np.ascontiguousarray(self._poi_xy[:, 0])
            self._poi_y = np.ascontiguousarray(self._poi_xy[:, 1])
        return self._poi_by_x

    def _pois_near(self, x: float, y: float, r: float) -> np.ndarray:
        """Indices (ascending) of the POIs within ``r`` metres of ``(x, y)`` along both
        axes, from the POIs sorted by x (built once).
        """
        order, xs = self._pois_by_x()
        lo, hi = np.searchsorted(xs, x - r), np.searchsorted(xs, x + r, side="right")
        idx = np.sort(order[lo:hi])
        return idx[np.abs(self._poi_xy[idx, 1] - y) <= r]

    def _label_widths(self, idx: np.ndarray) -> np.ndarray:
        """Widths (px) of the label sprites of POIs ``idx`` (measured once per POI)."""
        lw = self._label_w
        if lw is None or len(lw) != len(self._poi_xy):
            lw = self._label_w = np.full(len(self._poi_xy), -1, np.int64)
        for i in idx[lw[idx] < 0]:
            lw[i] = text_width(self.city.pois[i].name, LABEL_SIZE, lang=self._language(int(i)))
        return lw[idx]

    @staticmethod
    def _label_layout(cols, rows, widths, taken, w: int) -> np.ndarray:
        """1 where POI ``k`` (in order) gets its label, 0 where a dot; ``taken`` updated
        (compiled when available; this loop is the reference).
        """
        got = kernels.call("label_layout", cols, rows, widths, taken, w)
        if got is not None:
            return got
        out = np.zeros(len(cols), np.int8)
        for k, (c, r, tw) in enumerate(zip(cols, rows, widths)):
            c0, c1 = int(c + 3) // 4, int(c + 5 + tw) // 4 + 1
            r0, r1 = int(r - 7) // 4, int(r + 7) // 4 + 1
            if c + 5 + tw > w or r0 < 0 or taken[r0:r1, c0:c1].any():
                continue
            taken[r0:r1, c0:c1] = True
            out[k] = 1
        return out

    # ------------------------------------------------------------------ markers

    def _draw_markers(self, img: np.ndarray, mk: MapMarkers, view: View) -> None:
        draw_markers(img, mk, view)
