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
"""

from __future__ import annotations

import hashlib
import math
import sys
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import cv2
import numpy as np
import shapely
from shapely.geometry import box
from shapely.geometry.polygon import orient

from urban_gym.caching import LRUCache
from urban_gym.errors import RenderError
from urban_gym.render import kernels, threads
from urban_gym.render.camera import image_size
from urban_gym.render.ground import drawn_bounds
from urban_gym.render.map_labels import LABEL_SIZE, label_table
from urban_gym.render.text import Colour, blit_text, text_sprite, text_width
from urban_gym.world.city import City
from urban_gym.world.diskcache import cached_array, stored_array
from urban_gym.world.grid import GridOverlay
from urban_gym.world.loader import city_fingerprint
from urban_gym.world.names import sign_language

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

_SHIFT = 4  # cv2 sub-pixel bits
_ONE = 1 << _SHIFT
_SNAP_PX = 64  # canvas centres snap to a grid of this many pixels
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


def _xy(name: str, value: Any, n: int = 2) -> tuple[float, ...]:
    try:
        t = tuple(float(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise RenderError(f"{name}={value!r} must be {n} numbers") from exc
    if len(t) != n or not all(math.isfinite(v) for v in t):
        raise RenderError(f"{name}={value!r} must be {n} finite numbers")
    return t


def _points(name: str, value: Any, min_len: int = 0) -> np.ndarray:
    if hasattr(value, "coords"):  # shapely LineString / Point
        value = list(value.coords)
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise RenderError(f"{name}={value!r} must be a sequence of (x, y) points") from exc
    if a.size == 0:
        a = a.reshape(0, 2)
    if a.ndim != 2 or a.shape[1] != 2 or not np.isfinite(a).all():
        raise RenderError(f"{name}={value!r} must be a sequence of finite (x, y) points")
    if len(a) < min_len:
        raise RenderError(f"{name}={value!r} needs at least {min_len} points")
    return a


@dataclass(frozen=True)
class MapMarkers:
    """What to draw on top of a map. All positions are metres; headings are bearings.

    Attributes:
        agent: ``(x, y, heading)``: an arrow pointing along ``heading`` degrees.
        start: ``(x, y)``: a blue disc marked "S".
        goal: ``(x, y)``: a red disc marked "G".
        destinations: sequence of ``(x, y)``: purple discs numbered 1, 2, 3, ...
        closures: sequence of polylines (each a sequence of at least two ``(x, y)`` points
            or a shapely ``LineString``): drawn as thick red lines with a cross.
        trajectory: sequence of ``(x, y)``: an orange polyline.
        grid: a :class:`~urban_gym.world.grid.GridOverlay`: cell lines and ``"x:i y:j"``
            labels in each cell's top-left corner.
        selected: ``(x, y)``: a magenta ring with a cross-hair.
        agent_fill: the arrow's fill colour (RGB; default ``STYLE["agent_fill"]``, amber),
            e.g. red where a benchmark's prompt tells the model its arrow is red.
    """

    agent: tuple[float, float, float] | None = None
    start: tuple[float, float] | None = None
    goal: tuple[float, float] | None = None
    destinations: Sequence[tuple[float, float]] = ()
    closures: Sequence[Any] = ()
    trajectory: Sequence[tuple[float, float]] = ()
    grid: GridOverlay | None = None
    selected: tuple[float, float] | None = None
    agent_fill: Colour | None = None
    _checked: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        c = self._checked
        c["agent"] = None if self.agent is None else _xy("agent", self.agent, 3)
        c["start"] = None if self.start is None else _xy("start", self.start)
        c["goal"] = None if self.goal is None else _xy("goal", self.goal)
        c["selected"] = None if self.selected is None else _xy("selected", self.selected)
        c["destinations"] = _points("destinations", self.destinations)
        c["trajectory"] = _points("trajectory", self.trajectory)
        c["closures"] = [
            _points(f"closures[{i}]", line, min_len=2) for i, line in enumerate(self.closures)
        ]
        if self.grid is not None and not isinstance(self.grid, GridOverlay):
            raise RenderError(f"grid={self.grid!r} must be a GridOverlay")
        fill = STYLE["agent_fill"] if self.agent_fill is None else self.agent_fill
        try:
            rgb = tuple(int(v) for v in fill)
        except (TypeError, ValueError):
            rgb = ()
        if len(rgb) != 3 or not all(0 <= v <= 255 for v in rgb):
            raise RenderError(f"agent_fill={self.agent_fill!r} must be 3 integers in 0..255")
        c["agent_fill"] = rgb


@dataclass
class _Canvas:
    image: np.ndarray
    cx: float
    cy: float
    mpp: float

    @property
    def nbytes(self) -> int:
        """The bytes of the canvas image (what the canvas cache counts)."""
        return self.image.nbytes


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
        self._canvases: LRUCache[tuple, _Canvas] = canvases
        self._scale_uses: dict[float, int] = {}
        self._prepare()

    def __reduce__(self):
        # pickles as its city; the canvas cache is rebuilt on the other side
        return (type(self), (self.city,))

    # ------------------------------------------------------------------ geometry
    def _prepare(self) -> None:
        # the city's rings and trees are built once per city and shared, read-only, by
        # its renderers (the N envs of a batched vector env each hold one)
        with _PREPARED_LOCK:
            shared = _PREPARED.get(self.city)
            if shared is None:
                shared = _PREPARED[self.city] = _prepared_geometry(self.city)
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
        w, h = image_size(size)
        th = math.radians(rotation)
        if isinstance(x, (float, int)) and isinstance(y, (float, int)):
            return _point_px(float(x), float(y), center, metres_per_pixel, w, h, th)
        dx = (np.asarray(x, dtype=float) - center[0]) / metres_per_pixel
        dy = (np.asarray(y, dtype=float) - center[1]) / metres_per_pixel
        col = w / 2.0 + dx * math.cos(th) - dy * math.sin(th)
        row = h / 2.0 - (dy * math.cos(th) + dx * math.sin(th))
        if np.ndim(col) == 0:
            return float(col), float(row)
        return col, row

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
        cam = _ObliqueCamera(center, metres_per_pixel, w, h, rotation, tilt)
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
        cx, cy = _xy("center", center)
        mpp = float(metres_per_pixel) if _is_num(metres_per_pixel) else math.nan
        if not (math.isfinite(mpp) and mpp > 0):
            raise RenderError(f"metres_per_pixel={metres_per_pixel!r} must be a positive number")
        w, h = image_size(size)
        if not _is_num(rotation) or not math.isfinite(float(rotation)):
            raise RenderError(f"rotation={rotation!r} must be a finite number of degrees")
        rot = float(rotation) % 360.0
        if markers is not None and not isinstance(markers, MapMarkers):
            raise RenderError(f"markers={markers!r} must be a MapMarkers or None")
        half_diag = math.hypot(w, h) / 2.0 if rot else max(w, h) / 2.0
        canvas = self._canvas(cx, cy, mpp, int(math.ceil(half_diag)), rot == 0.0)
        img = self._warp(canvas, cx, cy, w, h, rot)
        view = (cx, cy, mpp, w, h, rot)
        if labels:
            self._draw_labels(img, view, self._reserved(markers, view))
        if markers is not None:
            self._draw_grid(img, markers, view)
            self._draw_markers(img, markers, view)
            self._draw_marker_text(img, markers, view)
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
        if not _is_num(tilt) or not 0.0 <= float(tilt) < 80.0:
            raise RenderError(f"tilt={tilt!r} must be a number of degrees in [0, 80)")
        cx, cy = _xy("center", center)
        w, h = image_size(size)
        mpp = float(metres_per_pixel) if _is_num(metres_per_pixel) else math.nan
        if not (math.isfinite(mpp) and mpp > 0):
            raise RenderError(f"metres_per_pixel={metres_per_pixel!r} must be a positive number")
        rot = float(rotation) % 360.0 if _is_num(rotation) else math.nan
        if not math.isfinite(rot):
            raise RenderError(f"rotation={rotation!r} must be a finite number of degrees")
        side = OBLIQUE_GROUND * max(w, h)
        flat = self.render((cx, cy), mpp, side, rot, labels, markers)
        cam = _ObliqueCamera((cx, cy), mpp, w, h, rot, float(tilt))
        # ground: the flat map's corners (metres right/forward of the centre) -> the image
        half = side / 2.0
        src = np.array([[0, 0], [side, 0], [side, side], [0, side]], np.float32)
        ab = (src - half) * mpp * np.array([1, -1], np.float32)
        dst = np.array(cam.project(ab[:, 0], ab[:, 1], np.zeros(4)), np.float32)
        hom = cv2.getPerspectiveTransform(src, dst)
        img = cv2.warpPerspective(
            flat, hom, (w, h), flags=cv2.INTER_LINEAR, borderValue=STYLE["sky"]
        )
        self._draw_prisms(img, cam, half * mpp)
        return img

    def _draw_prisms(self, img: np.ndarray, cam: _ObliqueCamera, reach: float) -> None:
        """Buildings within ``reach`` metres of the camera's centre as extruded prisms."""
        cx, cy = cam.center
        idx = self._b_tree.query(box(cx - reach, cy - reach, cx + reach, cy + reach))
        if not len(idx):
            return
        blds = [self.city.buildings[int(i)] for i in idx]
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
                _fixed([base[i], base[(i + 1) % len(ring)], roof[(i + 1) % len(ring)], roof[i]])
                for i in range(len(ring))
            ]
            cv2.fillPoly(img, quads, wall, aa, _SHIFT)
            cv2.fillPoly(img, [_fixed(roof)], STYLE["building"], aa, _SHIFT)
            cv2.polylines(img, [_fixed(roof)], True, STYLE["building_edge"], 1, aa, _SHIFT)

    def _canvas(
        self, cx: float, cy: float, mpp: float, half: int, unrotated: bool = False
    ) -> _Canvas:
        """The static map (areas, streets, buildings) around ``(cx, cy)`` at ``mpp``: the
        whole city's where it fits in :data:`CITY_CANVAS_MAX_BYTES` (drawn once per city
        and scale, shared by the renderers of the city), else a window of ``half`` pixels
        around the view, snapped to a grid of :data:`_SNAP_PX` pixels. Both are drawn on
        the same pixel grid, so an ``unrotated`` view (a crop) is the same either way: it
        takes the whole city's canvas whenever one exists (another renderer drew it). A
        rotated view is warped, and its bilinear weights round differently on canvases of
        other sizes, so it keeps this renderer's own rule: the whole city's canvas from its
        :data:`CITY_CANVAS_AFTER`-th view at the scale.
        """
        step = _SNAP_PX * mpp
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
        size = 2 * (half + _SNAP_PX)
        return self._canvases.get_or_create(
            (mpp, sx, sy, size), lambda: self._window(sx, sy, mpp, size)
        )

    def _window(self, sx: float, sy: float, mpp: float, size: int) -> _Canvas:
        """A square window canvas of ``size`` pixels centred on ``(sx, sy)`` (read-only:
        renderers in other threads read it).
        """
        img = self._draw_static(sx, sy, mpp, size, size)
        img.setflags(write=False)
        return _Canvas(img, sx, sy, mpp)

    def _city_canvas(self, mpp: float, build: bool = True) -> _Canvas | None:
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
        step = _SNAP_PX * mpp
        x0, y0, x1, y1 = drawn_bounds(self.city)
        margin = 4 * _SNAP_PX * mpp
        sx = round((x0 + x1) / 2 / step) * step
        sy = round((y0 + y1) / 2 / step) * step
        # whole snapping cells on each side, so the canvas pixels are the windows' pixels
        half_w = math.ceil((max(x1 - sx, sx - x0) + margin) / step) * _SNAP_PX
        half_h = math.ceil((max(y1 - sy, sy - y0) + margin) / step) * _SNAP_PX
        canvas = None
        if 2 * half_w * 2 * half_h * 3 <= CITY_CANVAS_MAX_BYTES:
            img = self._stored_city_canvas(sx, sy, mpp, 2 * half_w, 2 * half_h, build)
            if img is None:
                return None  # none drawn yet: not kept, so a later call draws it
            canvas = _Canvas(img, sx, sy, mpp)
        per_city.put(mpp, canvas, canvas.nbytes if canvas is not None else 0)
        return canvas

    def _stored_city_canvas(
        self, sx: float, sy: float, mpp: float, w: int, h: int, build: bool
    ) -> np.ndarray | None:
        """:meth:`_draw_static` of the whole city (read-only), from the world cache for a
        city with a fingerprint (named by it, the canvas and OpenCV's version: its
        anti-aliasing draws the pixels); drawn when ``build``, else None when not stored.
        """
        fp = city_fingerprint(self.city)
        if fp is None:
            if not build:
                return None
            img = self._draw_static(sx, sy, mpp, w, h)
            img.setflags(write=False)
            return img
        what = f"{fp}|{sx!r}|{sy!r}|{mpp!r}|{w}x{h}|cv2 {cv2.__version__}"
        name = "map-city-" + hashlib.sha256(what.encode()).hexdigest()[:20]
        here = sys.modules[__name__]
        if not build:
            return stored_array(name, here)
        return cached_array(name, lambda: self._draw_static(sx, sy, mpp, w, h), here)

    def _draw_static(self, sx: float, sy: float, mpp: float, w: int, h: int) -> np.ndarray:
        """Areas, streets and buildings of a ``w`` x ``h`` pixel canvas centred on
        ``(sx, sy)`` (m) at ``mpp``.
        """
        img = np.empty((h, w, 3), np.uint8)
        img[:] = STYLE["land"]
        hw, hh = w / 2.0 * mpp, h / 2.0 * mpp
        win = box(sx - hw, sy - hh, sx + hw, sy + hh)

        def to_px(xy: np.ndarray) -> np.ndarray:
            col = (xy[:, 0] - sx) / mpp + w / 2.0 - 0.5
            row = (sy - xy[:, 1]) / mpp + h / 2.0 - 0.5
            out = np.empty((len(xy), 2), np.int32)
            np.rint(col * _ONE, out=out[:, 0], casting="unsafe")
            np.rint(row * _ONE, out=out[:, 1], casting="unsafe")
            return out

        aa = cv2.LINE_AA
        aidx = np.sort(self._a_tree.query(win))
        for kind in ("green", "water"):
            sel = [i for i in aidx if self._a_kind[i] == kind]
            if sel:
                cv2.fillPoly(img, self._a.rings(sel, to_px), STYLE[kind], aa, _SHIFT)
        eidx = np.sort(self._e_tree.query(win))
        paths = eidx[~self._e_road[eidx]]
        roads = eidx[self._e_road[eidx]]
        if len(paths):
            t = np.maximum(1, np.rint(np.minimum(self._e_width[paths], 2.5) / mpp * 0.5))
            for tv in np.unique(t):
                sel = paths[t == tv]
                cv2.polylines(
                    img, self._e.rings(sel, to_px), False, STYLE["path"], int(tv), aa, _SHIFT
                )
        if len(roads):
            t = np.maximum(2, np.rint(self._e_width[roads] / mpp)).astype(int)
            lines = self._e.rings(roads, to_px)
            for colour, extra in (("road_edge", 2), ("road", 0)):
                for tv in np.unique(t):
                    sel = [ln for ln, tt in zip(lines, t) if tt == tv]
                    cv2.polylines(img, sel, False, STYLE[colour], int(tv) + extra, aa, _SHIFT)
        bidx = np.sort(self._b_tree.query(win))
        if len(bidx):
            rings = self._b.rings(bidx, to_px)
            cv2.fillPoly(img, rings, STYLE["building"], aa, _SHIFT)
            cv2.polylines(img, rings, True, STYLE["building_edge"], 1, aa, _SHIFT)
        return img

    def _warp(self, canvas: _Canvas, cx: float, cy: float, w: int, h: int, rot: float):
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

    # ------------------------------------------------------------------ labels
    def _to_px(self, xy: np.ndarray, view) -> np.ndarray:
        cx, cy, mpp, w, h, rot = view
        col, row = self.world_to_pixel(xy[:, 0], xy[:, 1], (cx, cy), mpp, (w, h), rot)
        out = np.empty((len(col), 2))
        out[:, 0], out[:, 1] = col, row
        return out

    @staticmethod
    def _pt(xy, view) -> tuple[float, float]:
        """:meth:`_to_px` of one point, in plain floats (the same arithmetic)."""
        cx, cy, mpp, w, h, rot = view
        return _point_px(float(xy[0]), float(xy[1]), (cx, cy), mpp, w, h, math.radians(rot))

    def _reserved(self, mk: MapMarkers | None, view) -> list[tuple[float, float, float, float]]:
        """Pixel boxes that POI labels must leave free: marker discs and grid labels."""
        if mk is None:
            return []
        m = mk._checked
        pts = [m[k][:2] for k in ("agent", "start", "goal", "selected") if m[k] is not None]
        pts += [tuple(p) for p in m["destinations"]]
        out = []
        cx, cy, mpp, w, h, rot = view
        th = math.radians(rot)
        for x, y in pts:
            c, r = _point_px(float(x), float(y), (cx, cy), mpp, w, h, th)
            out.append((c - 12, r - 12, c + 12, r + 12))
        if mk.grid is not None:
            g = mk.grid
            gw, gh = g.cell_size
            for j in range(g.ny):
                for i in range(g.nx):
                    x0, _, _, y1 = g.cell_bounds(i, j)
                    c, r = self.world_to_pixel(
                        x0 + 0.04 * gw, y1 - 0.04 * gh, view[:2], view[2], view[3:5], view[5]
                    )
                    out.append((c, r, c + 50, r + 18))
        return out

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
        if kernels.call("label_dots", img, cols, rows, placed, _LABEL_RGB) is None:
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
        px = self._to_px(self._poi_xy[idx], view)
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
    def _draw_grid(self, img: np.ndarray, mk: MapMarkers, view) -> None:
        """Grid cell lines and their ``"x:i y:j"`` labels (under the other markers)."""
        if mk.grid is None:
            return
        g = mk.grid
        x0, y0, x1, y1 = g.bounds
        gw, gh = g.cell_size
        lines = [((x0 + i * gw, y0), (x0 + i * gw, y1)) for i in range(g.nx + 1)]
        lines += [((x0, y0 + j * gh), (x1, y0 + j * gh)) for j in range(g.ny + 1)]
        for a, b in lines:
            q = self._to_px(np.array([a, b], dtype=float), view) - 0.5
            q = np.round(q * _ONE).astype(np.int32)
            cv2.polylines(img, [q], False, STYLE["grid"], 1, cv2.LINE_AA, _SHIFT)
        for j in range(g.ny):
            for i in range(g.nx):
                cx0, _, _, cy1 = g.cell_bounds(i, j)
                # label near the cell's north-west corner (in world terms)
                c, r = self._pt((cx0 + 0.04 * gw, cy1 - 0.04 * gh), view)
                sprite = text_sprite(g.label(i, j), 12, bold=True)
                blit_text(img, sprite, c, r, STYLE["grid"], anchor="la")

    def _draw_markers(self, img: np.ndarray, mk: MapMarkers, view) -> None:
        cx, cy, mpp, w, h, rot = view
        m = mk._checked

        def p(xy) -> np.ndarray:
            a = self._to_px(np.asarray(xy, dtype=float).reshape(-1, 2), view) - 0.5
            return np.round(a * _ONE).astype(np.int32)

        aa = cv2.LINE_AA
        if len(m["trajectory"]) >= 2:
            cv2.polylines(img, [p(m["trajectory"])], False, STYLE["trajectory"], 3, aa, _SHIFT)
        for line in m["closures"]:
            q = p(line)
            cv2.polylines(img, [q], False, STYLE["closure"], 5, aa, _SHIFT)
            mid = q[len(q) // 2 - 1 : len(q) // 2 + 1].mean(0) if len(q) > 2 else q.mean(0)
            arm = 6 * _ONE
            for dx, dy in ((arm, arm), (arm, -arm)):
                a = np.array([mid[0] - dx, mid[1] - dy]).astype(np.int32)
                b = np.array([mid[0] + dx, mid[1] + dy]).astype(np.int32)
                cv2.line(img, tuple(a), tuple(b), STYLE["closure"], 3, aa, _SHIFT)
        for q in p(m["destinations"]) if len(m["destinations"]) else []:
            cv2.circle(img, tuple(q), 10 * _ONE, STYLE["destination"], -1, aa, _SHIFT)
            cv2.circle(img, tuple(q), 10 * _ONE, (255, 255, 255), 1, aa, _SHIFT)
        for key in ("start", "goal"):
            if m[key] is not None:
                pt = tuple(p(m[key])[0])
                cv2.circle(img, pt, 10 * _ONE, STYLE[key], -1, aa, _SHIFT)
                cv2.circle(img, pt, 10 * _ONE, (255, 255, 255), 2, aa, _SHIFT)
        if m["selected"] is not None:
            sel = p(m["selected"])[0]
            cv2.circle(img, tuple(sel), 8 * _ONE, STYLE["selected"], 2, aa, _SHIFT)
            for dx, dy in ((12, 0), (0, 12)):
                p1 = (int(sel[0] - dx * _ONE), int(sel[1] - dy * _ONE))
                p2 = (int(sel[0] + dx * _ONE), int(sel[1] + dy * _ONE))
                cv2.line(img, p1, p2, STYLE["selected"], 1, aa, _SHIFT)
        if m["agent"] is not None:
            ax, ay, heading = m["agent"]
            c, r = self._pt((ax, ay), view)
            poly = _arrow(c, r, math.radians(heading - rot))
            cv2.fillPoly(img, [poly], m["agent_fill"], aa, _SHIFT)
            cv2.polylines(img, [poly], True, STYLE["agent"], 2, aa, _SHIFT)

    def _draw_marker_text(self, img: np.ndarray, mk: MapMarkers, view) -> None:
        m = mk._checked
        white = (255, 255, 255)
        for n, xy in enumerate(m["destinations"], start=1):
            c, r = self._pt(np.asarray(xy).reshape(2), view)
            blit_text(img, text_sprite(str(n), 11, True, 0), c, r, white, anchor="mm")
        for key, letter in (("start", "S"), ("goal", "G")):
            if m[key] is not None:
                c, r = self._pt(np.asarray(m[key]).reshape(2), view)
                blit_text(img, text_sprite(letter, 11, True, 0), c, r, white, anchor="mm")


class _Rings:
    """Many polygon rings / polylines stored in one coordinate array, so a window's worth
    is transformed to pixels with one numpy operation.
    """

    def __init__(self, items: list[list[np.ndarray]]) -> None:
        flat = [r for rings in items for r in rings]
        self.xy = np.concatenate(flat) if flat else np.zeros((0, 2))
        lens = np.array([len(r) for r in flat], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(lens)])
        per_item = np.array([len(rings) for rings in items], dtype=np.int64)
        self.first = np.concatenate([[0], np.cumsum(per_item)])
        # the same offsets as Python ints: a window's rings are cut in a Python loop
        self._starts: list[int] = self.starts.tolist()
        self._first: list[int] = self.first.tolist()

    def rings(self, idx, to_px) -> list[np.ndarray]:
        """The pixel rings of items ``idx`` (sorted), via ``to_px`` on the needed span."""
        items: list[int] = np.asarray(idx, dtype=np.int64).tolist()
        if not items:
            return []
        starts, first = self._starts, self._first
        lo, hi = starts[first[items[0]]], starts[first[items[-1] + 1]]
        px = to_px(self.xy[lo:hi])
        return [
            px[starts[k] - lo : starts[k + 1] - lo]
            for i in items
            for k in range(first[i], first[i + 1])
        ]


#: Side of the top-down ground warped into an oblique view, in image widths.
OBLIQUE_GROUND = 4
#: Distance of the oblique camera from the map centre, in image widths (at the scale).
OBLIQUE_DISTANCE_PX = 1.5


class _ObliqueCamera:
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


#: the colour of POI dots and labels as the compiled dot pass takes it
_LABEL_RGB = np.array(STYLE["label"], np.uint8)


def _point_px(x: float, y: float, center, mpp: float, w: int, h: int, th: float):
    """``MapRenderer.world_to_pixel`` of one point (``th``: the rotation in radians) in
    plain floats: the same IEEE arithmetic as its numpy path, without numpy's per-call
    cost.
    """
    dx = (x - center[0]) / mpp
    dy = (y - center[1]) / mpp
    c, s = math.cos(th), math.sin(th)
    return w / 2.0 + dx * c - dy * s, h / 2.0 - (dy * c + dx * s)


def _arrow(c: float, r: float, bearing: float) -> np.ndarray:
    """The agent arrow's four corners at continuous pixel ``(c, r)``, pointing along
    ``bearing`` (radians clockwise from the image top), in OpenCV's fixed point: tip 13 px
    ahead, wings 8 px to the sides 7 px back, notch 3 px back. Plain float arithmetic,
    rounded half to even (the values of the same sums in numpy).
    """
    f0, f1 = math.sin(bearing), -math.cos(bearing)
    s0, s1 = -f1, f0
    c0, r0 = c - 0.5, r - 0.5
    tri = (
        (f0 * 13, f1 * 13),
        (-f0 * 7 + s0 * 8, -f1 * 7 + s1 * 8),
        (-f0 * 3, -f1 * 3),
        (-f0 * 7 - s0 * 8, -f1 * 7 - s1 * 8),
    )
    return np.array([(round((x + c0) * _ONE), round((y + r0) * _ONE)) for x, y in tri], np.int32)


def _fixed(points: Any) -> np.ndarray:
    """Continuous pixel points as OpenCV's fixed-point ``int32`` (``_SHIFT`` bits)."""
    return np.rint(np.asarray(points, dtype=float) * _ONE).astype(np.int32)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


#: city -> the geometry its map renderers draw from (:func:`_prepared_geometry`)
_PREPARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PREPARED_LOCK = threading.Lock()


def _prepared_geometry(city: City) -> dict[str, Any]:
    """What :class:`MapRenderer` draws ``city`` from: the rings of its buildings, areas and
    network edges with their STRtrees, the areas' kinds, the edges' kinds and widths and
    the POI anchors.
    """
    b_rings: list[list[np.ndarray]] = []
    for b in city.buildings:
        p = orient(b.polygon, 1.0)
        rings = [np.asarray(p.exterior.coords)[:-1]]
        rings += [np.asarray(r.coords)[:-1] for r in p.interiors]
        b_rings.append(rings)
    a_rings, a_kind = [], []
    for a in city.areas:
        rings = []
        for g in getattr(a.polygon, "geoms", [a.polygon]):
            rings.append(np.asarray(g.exterior.coords)[:-1])
            rings += [np.asarray(r.coords)[:-1] for r in g.interiors]
        a_rings.append(rings)
        a_kind.append(a.kind)
    edges = list(city.network.edges(data=True))
    return {
        "b": _Rings(b_rings),
        "b_tree": shapely.STRtree([b.polygon for b in city.buildings]),
        "a": _Rings(a_rings),
        "a_kind": a_kind,
        "a_tree": shapely.STRtree([a.polygon for a in city.areas]),
        "e": _Rings([[np.asarray(d["geometry"].coords)] for _, _, d in edges]),
        "e_road": np.array([d["kind"] == "road" for _, _, d in edges], dtype=bool),
        "e_width": np.array([float(d.get("width") or 3.0) for _, _, d in edges]),
        "e_tree": shapely.STRtree([d["geometry"] for _, _, d in edges]),
        "poi_xy": np.array([p.anchor for p in city.pois], dtype=float).reshape(-1, 2),
        "poi_lang": {},  # POI index -> its sign's language, filled as labels need it
    }
