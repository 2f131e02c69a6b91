"""What a top-down map draws over its static layers: :class:`MapMarkers` and their drawing.

Markers, bottom to top: grid overlay, trajectory, closures, numbered destinations, start
(blue), goal (red), selected point, agent arrow; then the numbers and letters on the discs.
Positions are metres and headings bearings; a map view is
:data:`~urban_gym.render.map_style.View`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from urban_gym.errors import RenderError
from urban_gym.render.map_style import (
    ONE,
    SHIFT,
    STYLE,
    View,
    point_px,
    view_pt,
    view_px,
    world_to_pixel,
)
from urban_gym.render.text import Colour, blit_text, text_sprite
from urban_gym.world.grid import GridOverlay


def check_xy(name: str, value: Any, n: int = 2) -> tuple[float, ...]:
    """``value`` as ``n`` finite floats, else a :class:`RenderError` naming ``name``."""
    try:
        t = tuple(float(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise RenderError(f"{name}={value!r} must be {n} numbers") from exc
    if len(t) != n or not all(math.isfinite(v) for v in t):
        raise RenderError(f"{name}={value!r} must be {n} finite numbers")
    return t


def check_points(name: str, value: Any, min_len: int = 0) -> np.ndarray:
    """``value`` as an ``(n, 2)`` array of finite points (``n >= min_len``), else a
    :class:`RenderError` naming ``name``.
    """
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
        c["agent"] = None if self.agent is None else check_xy("agent", self.agent, 3)
        c["start"] = None if self.start is None else check_xy("start", self.start)
        c["goal"] = None if self.goal is None else check_xy("goal", self.goal)
        c["selected"] = None if self.selected is None else check_xy("selected", self.selected)
        c["destinations"] = check_points("destinations", self.destinations)
        c["trajectory"] = check_points("trajectory", self.trajectory)
        c["closures"] = [
            check_points(f"closures[{i}]", line, min_len=2) for i, line in enumerate(self.closures)
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


def is_num(v: Any) -> bool:
    """Whether ``v`` is a real number (not a bool)."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def arrow(c: float, r: float, bearing: float) -> np.ndarray:
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
    return np.array([(round((x + c0) * ONE), round((y + r0) * ONE)) for x, y in tri], np.int32)


def draw_grid(img: np.ndarray, mk: MapMarkers, view: View) -> None:
    """Grid cell lines and their ``"x:i y:j"`` labels (under the other markers)."""
    if mk.grid is None:
        return
    g = mk.grid
    x0, y0, x1, y1 = g.bounds
    gw, gh = g.cell_size
    lines = [((x0 + i * gw, y0), (x0 + i * gw, y1)) for i in range(g.nx + 1)]
    lines += [((x0, y0 + j * gh), (x1, y0 + j * gh)) for j in range(g.ny + 1)]
    for a, b in lines:
        q = view_px(np.array([a, b], dtype=float), view) - 0.5
        q = np.round(q * ONE).astype(np.int32)
        cv2.polylines(img, [q], False, STYLE["grid"], 1, cv2.LINE_AA, SHIFT)
    for j in range(g.ny):
        for i in range(g.nx):
            cx0, _, _, cy1 = g.cell_bounds(i, j)
            # label near the cell's north-west corner (in world terms)
            c, r = view_pt((cx0 + 0.04 * gw, cy1 - 0.04 * gh), view)
            sprite = text_sprite(g.label(i, j), 12, bold=True)
            blit_text(img, sprite, c, r, STYLE["grid"], anchor="la")


def draw_markers(img: np.ndarray, mk: MapMarkers, view: View) -> None:
    """The markers of ``mk`` but the grid and the text, in ``view``, onto ``img``."""
    cx, cy, mpp, w, h, rot = view
    m = mk._checked

    def p(xy) -> np.ndarray:
        a = view_px(np.asarray(xy, dtype=float).reshape(-1, 2), view) - 0.5
        return np.round(a * ONE).astype(np.int32)

    aa = cv2.LINE_AA
    if len(m["trajectory"]) >= 2:
        cv2.polylines(img, [p(m["trajectory"])], False, STYLE["trajectory"], 3, aa, SHIFT)
    for line in m["closures"]:
        q = p(line)
        cv2.polylines(img, [q], False, STYLE["closure"], 5, aa, SHIFT)
        mid = q[len(q) // 2 - 1 : len(q) // 2 + 1].mean(0) if len(q) > 2 else q.mean(0)
        arm = 6 * ONE
        for dx, dy in ((arm, arm), (arm, -arm)):
            a = np.array([mid[0] - dx, mid[1] - dy]).astype(np.int32)
            b = np.array([mid[0] + dx, mid[1] + dy]).astype(np.int32)
            cv2.line(img, tuple(a), tuple(b), STYLE["closure"], 3, aa, SHIFT)
    for q in p(m["destinations"]) if len(m["destinations"]) else []:
        cv2.circle(img, tuple(q), 10 * ONE, STYLE["destination"], -1, aa, SHIFT)
        cv2.circle(img, tuple(q), 10 * ONE, (255, 255, 255), 1, aa, SHIFT)
    for key in ("start", "goal"):
        if m[key] is not None:
            pt = tuple(p(m[key])[0])
            cv2.circle(img, pt, 10 * ONE, STYLE[key], -1, aa, SHIFT)
            cv2.circle(img, pt, 10 * ONE, (255, 255, 255), 2, aa, SHIFT)
    if m["selected"] is not None:
        sel = p(m["selected"])[0]
        cv2.circle(img, tuple(sel), 8 * ONE, STYLE["selected"], 2, aa, SHIFT)
        for dx, dy in ((12, 0), (0, 12)):
            p1 = (int(sel[0] - dx * ONE), int(sel[1] - dy * ONE))
            p2 = (int(sel[0] + dx * ONE), int(sel[1] + dy * ONE))
            cv2.line(img, p1, p2, STYLE["selected"], 1, aa, SHIFT)
    if m["agent"] is not None:
        ax, ay, heading = m["agent"]
        c, r = view_pt((ax, ay), view)
        poly = arrow(c, r, math.radians(heading - rot))
        cv2.fillPoly(img, [poly], m["agent_fill"], aa, SHIFT)
        cv2.polylines(img, [poly], True, STYLE["agent"], 2, aa, SHIFT)


def draw_marker_text(img: np.ndarray, mk: MapMarkers, view: View) -> None:
    """The numbers of the destinations and the start's and goal's letters."""
    m = mk._checked
    white = (255, 255, 255)
    for n, xy in enumerate(m["destinations"], start=1):
        c, r = view_pt(np.asarray(xy).reshape(2), view)
        blit_text(img, text_sprite(str(n), 11, True, 0), c, r, white, anchor="mm")
    for key, letter in (("start", "S"), ("goal", "G")):
        if m[key] is not None:
            c, r = view_pt(np.asarray(m[key]).reshape(2), view)
            blit_text(img, text_sprite(letter, 11, True, 0), c, r, white, anchor="mm")


def reserved_boxes(mk: MapMarkers | None, view: View) -> list[tuple[float, float, float, float]]:
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
        c, r = point_px(float(x), float(y), (cx, cy), mpp, w, h, th)
        out.append((c - 12, r - 12, c + 12, r + 12))
    if mk.grid is not None:
        g = mk.grid
        gw, gh = g.cell_size
        for j in range(g.ny):
            for i in range(g.nx):
                x0, _, _, y1 = g.cell_bounds(i, j)
                c, r = world_to_pixel(
                    x0 + 0.04 * gw, y1 - 0.04 * gh, view[:2], view[2], view[3:5], view[5]
                )
                out.append((c, r, c + 50, r + 18))
    return out
