"""First-person perspective views rendered directly, without a panorama.

For the continuous environment, where the agent stands somewhere new at every step, a
full panorama would waste most of its pixels. :class:`FirstPersonRenderer` ray-casts only
the columns of the view: with zero pitch every image column is a vertical plane through
the eye, so the same column caster as :class:`~urban_gym.render.panorama.PanoramaRenderer`
draws the perspective image exactly (same scene, textures, signs, street objects and
conditions), plus pedestrians as upright figures.

With a non-zero pitch the columns are no longer vertical; the renderer then casts the
smallest window of an equirectangular panorama that holds the view (at the view's angular
resolution) and resamples it with ``cv2.remap`` (depth and ids with nearest-neighbour
sampling).

Conventions: ``yaw`` is a compass bearing in degrees (0 north, 90 east), ``pitch``
degrees above the horizon in [-90, 90], ``fov`` the horizontal field of view in
(0, 180); the image is ``(height, width, 3)`` ``uint8`` with row 0 at the top.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence

import cv2
import numpy as np

from urban_gym.errors import RenderError
from urban_gym.render import threads
from urban_gym.render.camera import (
    check_fov,
    check_pitch,
    finite_number,
    image_size,
    view_directions,
)
from urban_gym.render.conditions import Conditions
from urban_gym.render.panorama import (
    INSIDE_MODES,
    RenderResult,
    _check_city,
    _conditions,
    _positive_number,
    check_position,
)
from urban_gym.render.raycast import ColumnCamera, cast
from urban_gym.render.scene import scene_for
from urban_gym.world.city import City

#: cameras a renderer keeps (a few kilobytes each at the views' sizes; an episode turns
#: in fixed steps, so its headings are few -- and 64 envs of a vector env keep theirs)
_MAX_CAMS = 64


class FirstPersonRenderer:
    """Perspective views of ``city`` from any position and direction.

    Args:
        city: the world.
        width: image width in pixels.
        height: image height in pixels.
        fov: horizontal field of view in degrees, in (0, 180).
        eye_height: metres above the ground.
        max_distance: walls farther than about this many metres are not drawn.
        inside: ``"room"`` (default: inside a building, its walls are drawn from inside
            under a ceiling) or ``"error"`` (raise :class:`RenderError`).
    """

    def __init__(
        self,
        city: City,
        width: int = 128,
        height: int = 128,
        fov: float = 90.0,
        eye_height: float = 1.6,
        max_distance: float = 400.0,
        inside: str = "room",
    ) -> None:
        _check_city(city, "FirstPersonRenderer")
        self.width, self.height = image_size((width, height))
        self.fov = check_fov(fov)
        self.eye_height = _positive_number("eye_height", eye_height, 0.0, 100.0)
        self.max_distance = _positive_number("max_distance", max_distance, 1.0, 1e5)
        if inside not in INSIDE_MODES:
            raise RenderError(f"inside={inside!r} must be one of {INSIDE_MODES}")
        self.city = city
        self.inside = inside
        self.scene = scene_for(city, self.max_distance)
        self._base = ColumnCamera.perspective(self.width, self.height, self.fov, 0.0)
        self._pitched: OrderedDict[float, tuple] = OrderedDict()
        #: cameras by yaw (level) and by (pitch, yaw): the same camera as made anew
        self._cams: dict[float | tuple[float, float], ColumnCamera] = {}
        self._lock = threading.Lock()

    def __reduce__(self):
        # pickles as its arguments; caches (scene, textures) are rebuilt on the other side
        return (
            type(self),
            (
                self.city,
                self.width,
                self.height,
                self.fov,
                self.eye_height,
                self.max_distance,
                self.inside,
            ),
        )

    def render(
        self,
        x: float,
        y: float,
        yaw: float,
        pitch: float = 0.0,
        conditions: Conditions | None = None,
        pedestrians: Sequence[tuple[float, float]] | np.ndarray = (),
        depth: bool = False,
        ids: bool = False,
    ) -> RenderResult:
        """The view from ``(x, y)`` (metres) looking along ``yaw`` / ``pitch`` (degrees).

        Args:
            x: position east, metres.
            y: position north, metres.
            yaw: compass bearing of the view's centre, degrees (0 north, 90 east).
            pitch: degrees above the horizon, in [-90, 90].
            conditions: light and weather (default: day, clear, seed 0).
            pedestrians: ``(x, y)`` positions (metres) of people drawn as upright figures;
                the ``k``-th gets instance id ``pedestrian_id(k)``.
            depth: also return metres along the ray per pixel (``float32``, ``inf`` sky).
            ids: also return instance ids per pixel (``int32``).
        """
        return threads.for_image(
            self.width * self.height,
            self._render,
            x,
            y,
            yaw,
            pitch,
            conditions,
            pedestrians,
            depth,
            ids,
        )

    def _render(self, x, y, yaw, pitch, conditions, pedestrians, depth, ids) -> RenderResult:
        cond = _conditions(conditions)
        fx, fy, room = check_position(self.scene, x, y, self.inside, self.eye_height)
        yaw_f = finite_number("yaw", yaw)
        pitch_f = check_pitch(pitch)
        peds = _pedestrians(pedestrians)
        if pitch_f == 0.0:
            cam = self._turned(yaw_f)
            rgb, d, i = cast(
                self.scene, cam, fx, fy, self.eye_height, cond, bool(depth), bool(ids), room, peds
            )
            return RenderResult(rgb, d, i)
        return self._render_pitched(fx, fy, yaw_f, pitch_f, cond, peds, depth, ids, room)

    def _turned(self, yaw: float) -> ColumnCamera:
        """The level camera turned to ``yaw`` degrees (kept for the last few hundred
        yaws: an agent turns in fixed steps, so headings repeat).
        """
        cam = self._cams.get(yaw)
        if cam is None:
            if len(self._cams) >= _MAX_CAMS:
                self._cams.clear()  # one call: safe while other threads read
            cam = self._cams[yaw] = self._base.with_yaw(yaw)
        return cam

    # ------------------------------------------------------------------ pitched views
    def _window(self, pitch: float) -> tuple:
        """Equirect window and remap grids of a view with this pitch (relative to yaw)."""
        key = round(pitch, 6)
        with self._lock:
            hit = self._pitched.get(key)
            if hit is not None:
                self._pitched.move_to_end(key)
                return hit
        w, h = self.width, self.height
        bearing, elev = view_directions(w, h, self.fov, pitch, 0.0)
        rel = (bearing + 180.0) % 360.0 - 180.0
        px_per_deg = (w / 2.0) / math.degrees(math.tan(math.radians(self.fov) / 2.0))
        margin = 2.0 / px_per_deg
        e_top = min(90.0, float(elev.max()) + margin)
        e_bot = max(-90.0, float(elev.min()) - margin)
        if e_top >= 89.9 or e_bot <= -89.9:
            b0, span = -180.0, 360.0
        else:
            half = float(np.abs(rel).max()) + margin
            b0, span = -half, 2 * half
        wi = int(min(max(8, math.ceil(span * px_per_deg)), 8 * w))
        hi = int(min(max(8, math.ceil((e_top - e_bot) * px_per_deg)), 8 * h))
        mx = (((rel - b0) % 360.0) / span * wi - 0.5).astype(np.float32)
        my = ((e_top - elev) / (e_top - e_bot) * hi - 0.5).astype(np.float32)
        m1, m2 = cv2.convertMaps(mx, my, cv2.CV_16SC2)
        cam = ColumnCamera.equirect(wi, hi, b0, span, e_top, e_bot)  # turned per frame
        entry = (b0, span, cam, m1, m2, mx, my)
        with self._lock:
            self._pitched[key] = entry
            while len(self._pitched) > 64:
                self._pitched.popitem(last=False)
        return entry

    def _render_pitched(self, x, y, yaw, pitch, cond, peds, depth, ids, room) -> RenderResult:
        b0, span, base, m1, m2, mx, my = self._window(pitch)
        key = (pitch, yaw)
        cam = self._cams.get(key)
        if cam is None:  # kept as the level ones (``_turned``)
            if len(self._cams) >= _MAX_CAMS:
                self._cams.clear()
            cam = self._cams[key] = base.with_bearing0(yaw + b0)
        rgb, d, i = cast(
            self.scene, cam, x, y, self.eye_height, cond, bool(depth), bool(ids), room, peds
        )
        wrap = cv2.BORDER_WRAP if span >= 360.0 else cv2.BORDER_REPLICATE
        out = cv2.remap(rgb, m1, m2, cv2.INTER_LINEAR, borderMode=wrap)
        d_out = i_out = None
        if d is not None:
            d_out = cv2.remap(d, mx, my, cv2.INTER_NEAREST, borderMode=wrap)
        if i is not None:
            halves = i.view(np.uint16).reshape(i.shape[0], i.shape[1], 2)
            i_out = cv2.remap(halves, mx, my, cv2.INTER_NEAREST, borderMode=wrap)
            i_out = np.ascontiguousarray(i_out).view(np.int32).reshape(self.height, self.width)
        return RenderResult(out, d_out, i_out)


def _pedestrians(value) -> np.ndarray | None:
    if value is None:
        return None
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise RenderError(f"pedestrians={value!r} must be a sequence of (x, y) points") from exc
    if a.size == 0:
        return None
    if a.ndim != 2 or a.shape[1] != 2 or not np.isfinite(a).all():
        raise RenderError(f"pedestrians={value!r} must be a sequence of finite (x, y) points")
    return a
