"""360-degree equirectangular panoramas of a city, by 2.5D ray casting.

Walls are building footprints extruded to their heights; the ground is flat. A panorama
is ``(height, width, 3)`` ``uint8`` RGB with ``width == 2 * height``: its centre column
looks north (``pano_heading`` 0), bearings grow to the right, row 0 looks straight up
(see :mod:`urban_gym.render.camera`). Optional outputs per pixel: ``depth`` in metres
along the viewing ray (``inf`` for the sky) and instance ``ids``
(:mod:`urban_gym.render.ids`).

What is drawn: facades (a base colour per building, windows per storey, a ground-floor
shop band, shading by the sun's side), a signboard for every named POI on its facade,
street objects as upright shapes (trees, street lamps, benches, vending machines, bus
stops, bicycle stands, ...), the ground (road, sidewalk, grass, water, zebra crossings),
the sky, and the :class:`~urban_gym.render.conditions.Conditions`: dusk and night (dark
sky, stars, lit windows and lamps, signs at full brightness), fog (fades with depth) and
rain (overcast, haze, streaks drawn from the seed).

Viewer position: outside the city's bounds raises :class:`RenderError`. Inside a
building footprint (covered passages, indoor corridors of the walkable network) the
renderer by default draws that building's walls from inside with a ceiling instead of
the sky (``inside="room"``); ``inside="error"`` raises :class:`RenderError` instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from urban_gym.caching import LRUCache
from urban_gym.errors import RenderError
from urban_gym.render import threads
from urban_gym.render.conditions import Conditions
from urban_gym.render.raycast import ColumnCamera, cast
from urban_gym.render.scene import Scene, scene_for
from urban_gym.world.city import City

INSIDE_MODES = ("room", "error")


@dataclass
class RenderResult:
    """A rendered image with optional per-pixel depth (metres along the viewing ray,
    ``inf`` where the sky shows) and instance ids (``int32``, see
    :mod:`urban_gym.render.ids`).
    """

    rgb: np.ndarray
    depth: np.ndarray | None = None
    ids: np.ndarray | None = None


def _check_city(city: City, who: str) -> None:
    if not isinstance(city, City):
        raise RenderError(f"{who} needs a City, got {type(city).__name__}")


def _positive_number(name: str, value, lo: float = 0.0, hi: float = math.inf) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise RenderError(f"{name}={value!r} is not a number") from exc
    if not (math.isfinite(v) and lo < v < hi):
        raise RenderError(f"{name}={value!r} must be in ({lo}, {hi})")
    return v


def check_position(
    scene: Scene, x, y, inside: str, eye_height: float = 1.6
) -> tuple[float, float, int | None]:
    """``(x, y, room)`` after checking the position: finite, inside the city's bounds;
    ``room`` is the id of the building containing it (``inside="room"``) or None.
    """
    try:
        fx, fy = float(x), float(y)
    except (TypeError, ValueError) as exc:
        raise RenderError(f"position ({x!r}, {y!r}) must be two numbers (metres)") from exc
    if not (math.isfinite(fx) and math.isfinite(fy)):
        raise RenderError(f"position ({x!r}, {y!r}) must be finite")
    city = scene.city
    if not city.contains(fx, fy):
        x0, y0, x1, y1 = city.bounds
        raise RenderError(
            f"position ({fx:.1f}, {fy:.1f}) lies outside the bounds of city {city.name!r}: "
            f"x in [{x0:.1f}, {x1:.1f}], y in [{y0:.1f}, {y1:.1f}] metres"
        )
    b = city.building_at(fx, fy)
    if b is not None and inside == "error":
        raise RenderError(
            f"position ({fx:.1f}, {fy:.1f}) lies inside building {b} "
            f"({city.buildings[b].osm_id}) of city {city.name!r}"
        )
    if b is not None and city.buildings[b].height <= eye_height:
        b = None  # a building lower than the eye: standing on it, see over it
    return fx, fy, b


class PanoramaRenderer:
    """Equirectangular panoramas of ``city`` (see the module docstring).

    Args:
        city: the world.
        width: image width in pixels; must be ``2 * height``.
        height: image height in pixels.
        eye_height: metres above the ground.
        max_distance: walls farther than about this many metres are not drawn.
        inside: ``"room"`` or ``"error"``: what a position inside a building does.
    """

    def __init__(
        self,
        city: City,
        width: int = 2048,
        height: int = 1024,
        eye_height: float = 1.6,
        max_distance: float = 400.0,
        inside: str = "room",
    ) -> None:
        _check_city(city, "PanoramaRenderer")
        for name, v in (("width", width), ("height", height)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
                raise RenderError(f"{name}={v!r} must be a positive int")
        if width != 2 * height:
            raise RenderError(
                f"width={width} and height={height}: an equirectangular panorama needs "
                "width == 2 * height"
            )
        if inside not in INSIDE_MODES:
            raise RenderError(f"inside={inside!r} must be one of {INSIDE_MODES}")
        self.city = city
        self.width, self.height = int(width), int(height)
        self.eye_height = _positive_number("eye_height", eye_height, 0.0, 100.0)
        self.max_distance = _positive_number("max_distance", max_distance, 1.0, 1e5)
        self.inside = inside
        self.scene = scene_for(city, self.max_distance)
        self.camera = ColumnCamera.equirect(self.width, self.height)
        self._windows: LRUCache[tuple[int, int, int, int], ColumnCamera] = LRUCache(
            max_items=64, lock=True
        )

    def __reduce__(self):
        # pickles as its arguments; caches (scene, textures) are rebuilt on the other side
        return (
            type(self),
            (self.city, self.width, self.height, self.eye_height, self.max_distance, self.inside),
        )

    def render(
        self,
        x: float,
        y: float,
        conditions: Conditions | None = None,
        depth: bool = False,
        ids: bool = False,
    ) -> RenderResult:
        """The panorama seen from ``(x, y)`` metres at the eye height.

        Args:
            x: position east, metres.
            y: position north, metres.
            conditions: light and weather (default: day, clear, seed 0).
            depth: also return metres along the ray per pixel (``float32``).
            ids: also return instance ids per pixel (``int32``).
        """
        return threads.for_image(
            self.width * self.height, self._render, x, y, conditions, depth, ids
        )

    def render_window(
        self,
        x: float,
        y: float,
        cols: tuple[int, int],
        rows: tuple[int, int],
        conditions: Conditions | None = None,
    ) -> np.ndarray:
        """Part of the panorama seen from ``(x, y)``: its rows ``rows[0] .. rows[1] - 1``
        of the ``cols[1]`` columns from ``cols[0]`` on (wrapping past the right edge), as
        ``(rows[1] - rows[0], cols[1], 3)`` uint8 RGB equal to that slice of
        ``render(x, y, conditions).rgb`` -- the same rays, cast only for those pixels.

        Stars (a clear night) and rain streaks are scattered over the whole image: under
        those conditions the whole panorama is rendered and sliced.
        """
        c0, n = int(cols[0]), int(cols[1])
        r0, r1 = int(rows[0]), int(rows[1])
        if not (0 <= c0 < self.width and 0 < n <= self.width):
            raise RenderError(
                f"cols={cols!r} must be (start in [0, {self.width}), count in 1..{self.width})"
            )
        if not 0 <= r0 < r1 <= self.height:
            raise RenderError(f"rows={rows!r} must satisfy 0 <= start < stop <= {self.height}")
        cond = _conditions(conditions)
        idx = np.arange(c0, c0 + n) % self.width
        if cond.weather == "rain" or (cond.time_of_day == "night" and cond.weather == "clear"):
            return self.render(x, y, cond).rgb[r0:r1][:, idx]
        cam = self._windows.get_or_create((c0, n, r0, r1), lambda: self._window(idx, r0, r1))
        return threads.for_image(n * (r1 - r0), self._cast, cam, x, y, cond)

    def _window(self, idx: np.ndarray, r0: int, r1: int) -> ColumnCamera:
        """The camera of columns ``idx`` (consecutive modulo the width) and rows ``r0 ..
        r1 - 1``: the full camera's rays to the bit (its column directions and row slopes
        are copied from it; its bearings, for finding columns, agree to rounding).
        """
        full, w_deg, h_deg = self.camera, 360.0 / self.width, 180.0 / self.height
        cam = ColumnCamera.equirect(
            len(idx),
            r1 - r0,
            -180.0 + int(idx[0]) * w_deg,
            len(idx) * w_deg,
            90.0 - r0 * h_deg,
            90.0 - r1 * h_deg,
        )
        cam.a = full.a[r0:r1].copy()
        cam.__post_init__()
        cam.dirx = full.dirx[idx]
        cam.diry = full.diry[idx]
        return cam

    def _cast(self, cam: ColumnCamera, x, y, cond: Conditions) -> np.ndarray:
        fx, fy, room = check_position(self.scene, x, y, self.inside, self.eye_height)
        rgb, _, _ = cast(self.scene, cam, fx, fy, self.eye_height, cond, False, False, room)
        return rgb

    def _render(self, x, y, conditions, depth, ids) -> RenderResult:
        cond = _conditions(conditions)
        fx, fy, room = check_position(self.scene, x, y, self.inside, self.eye_height)
        rgb, d, i = cast(
            self.scene, self.camera, fx, fy, self.eye_height, cond, bool(depth), bool(ids), room
        )
        return RenderResult(rgb, d, i)


def _conditions(conditions: Conditions | None) -> Conditions:
    if conditions is None:
        return Conditions()
    if not isinstance(conditions, Conditions):
        raise RenderError(f"conditions={conditions!r} must be a Conditions or None")
    return conditions
