"""The column ray caster shared by the panorama and first-person renderers.

A :class:`ColumnCamera` describes an image whose columns are vertical planes through the
eye: an equirectangular panorama (or a window of one) or a perspective view with zero
pitch. Column ``c`` looks along compass bearing ``ang[c]``; pixel ``[r, c]`` looks at
``tan(elevation) = a[r] * b[c]`` (``a`` decreases down the image). For a panorama
``a = tan(elevation)`` and ``b = 1``; for a perspective view ``a`` is the pixel's height
above the image centre and ``b = 1 / sqrt(x_c^2 + f^2)``.

For each column the caster intersects the ray with the walls near the viewer (only
those facing the viewer, or, from inside a building, that building's walls seen from
inside), sorts the hits by distance and keeps, in order, up to ``K`` hits each taller
(in elevation) than all nearer ones: hit ``i`` is then visible between the top of the
nearer hits and its own top, so taller buildings show above nearer, lower ones. The
nearest hit also ends the ground. Walls are textured from the facade atlas, the ground
from a top-down raster, both with one ``cv2.remap``; signs, sprites (street objects,
free-standing signs, pedestrians) and the weather are drawn on top.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import cv2
import numpy as np

from urban_gym.caching import LRUCache
from urban_gym.render import kernels, textures
from urban_gym.render.after_walls import draw_after_walls
from urban_gym.render.blades import draw_blades
from urban_gym.render.boards import draw_boards
from urban_gym.render.conditions import TIMES_OF_DAY, WEATHERS, Conditions
from urban_gym.render.fill import Runs, fill, ground_maps, ragged_arange, scratch
from urban_gym.render.ground import DETAIL_M, FAR_COLOUR, light
from urban_gym.render.ids import BUILDING_BASE, GROUND_ID, SIGN_BASE
from urban_gym.render.scene import Scene
from urban_gym.render.sprites import draw_sprites
from urban_gym.render.textures import (
    FACADE_MAX_Z,
    FACADE_PPM,
    N_STYLES,
    SHADES,
    STYLE_H,
    STYLE_PERIOD_M,
    STYLE_STRIDE,
    facade_atlas,
)
from urban_gym.world.diskcache import cached_array

#: most wall hits kept per column
K_HITS = 6
_SKY, _WALL, _GROUND = 0, 1, 2


@dataclass
class ColumnCamera:
    """Geometry of an image whose columns are vertical planes (see the module doc)."""

    width: int
    height: int
    ang: np.ndarray  # (W,) bearings, radians
    b: np.ndarray  # (W,)
    a: np.ndarray  # (H,) decreasing
    ang0: float  # rel angles are measured from here
    rel: np.ndarray  # (W,) increasing in [0, 2 pi)
    kind: str  # "equirect" | "perspective"
    # equirect window: bearing span and elevation range (radians)
    span: float = 2 * math.pi
    e_top: float = math.pi / 2
    e_bot: float = -math.pi / 2
    # perspective: yaw (radians), focal length (pixels), horizontal fov (degrees)
    yaw: float = 0.0
    focal: float = 1.0
    fov_deg: float = 360.0

    def __post_init__(self) -> None:
        self.dirx = np.sin(self.ang)
        self.diry = np.cos(self.ang)
        self.neg_a = -self.a
        self.relx = np.concatenate([self.rel, self.rel + 2 * math.pi])
        self.a32 = self.a.astype(np.float32)
        self.rows_col = np.arange(self.height, dtype=np.int64)[:, None]
        self.shared: dict[str, Any] = {}  # yaw-free arrays, shared by with_yaw copies

    def column_lut(self) -> tuple[np.ndarray, float]:
        """A table for finding a bearing's column fast: ``(lut, bins)`` -- ``lut[k]`` is
        ``np.searchsorted(relx, k / bins)`` for ``bins`` bins a radian (eight a column), from
        which the compiled wall pass steps to the exact answer (yaw-free, built once).
        """
        got = self.shared.get("lut")
        if got is None:
            bins = 8 * len(self.relx) / (4 * math.pi)
            edges = np.arange(8 * len(self.relx)) / bins
            got = self.shared["lut"] = (np.searchsorted(self.relx, edges, side="left"), bins)
        return got

    def secant(self) -> np.ndarray:
        """``(H, W)`` float32: ray length per metre of horizontal distance."""
        sec = self.shared.get("sec")
        if sec is None:
            sec = np.sqrt(1.0 + (self.a[:, None] * self.b[None, :]) ** 2).astype(np.float32)
            self.shared["sec"] = sec
        return sec

    @classmethod
    def equirect(
        cls,
        width: int,
        height: int,
        bearing0: float = -180.0,
        span: float = 360.0,
        e_top: float = 90.0,
        e_bot: float = -90.0,
    ) -> ColumnCamera:
        """A panorama (window): columns from bearing ``bearing0`` over ``span`` degrees,
        rows from elevation ``e_top`` down to ``e_bot`` degrees, uniformly.
        """
        b0, sp = math.radians(bearing0), math.radians(span)
        et, eb = math.radians(e_top), math.radians(e_bot)
        rel = (np.arange(width) + 0.5) / width * sp
        e = et - (np.arange(height) + 0.5) / height * (et - eb)
        return cls(
            width,
            height,
            b0 + rel,
            np.ones(width),
            np.tan(e),
            b0,
            rel,
            "equirect",
            span=sp,
            e_top=et,
            e_bot=eb,
        )

    @classmethod
    def perspective(cls, width: int, height: int, fov: float, yaw: float) -> ColumnCamera:
        """A perspective view with zero pitch, ``fov`` horizontal degrees, at ``yaw``."""
        f = (width / 2.0) / math.tan(math.radians(fov) / 2.0)
        x = np.arange(width) + 0.5 - width / 2.0
        off = np.arctan2(x, f)
        y0 = math.radians(yaw)
        a = height / 2.0 - (np.arange(height) + 0.5)
        ang0 = y0 - math.radians(fov) / 2.0 - 1e-9
        return cls(
            width,
            height,
            y0 + off,
            1.0 / np.hypot(x, f),
            a,
            ang0,
            off - (ang0 - y0),
            "perspective",
            yaw=y0,
            focal=f,
            fov_deg=fov,
        )

    def _clone(self) -> ColumnCamera:
        """A shallow copy (as ``copy.copy``, without its generic machinery: one a frame)."""
        cam = object.__new__(ColumnCamera)
        cam.__dict__.update(self.__dict__)
        cam.__dict__.pop("_frame_args", None)  # this camera's own: made again if asked
        cam.__dict__.pop("_post_args", None)
        return cam

    def post_args(self) -> tuple[tuple[float, ...], tuple[np.ndarray, ...], bool]:
        """What the compiled ``post_frame`` takes of this camera (made once a camera):
        ``((persp, yaw, fov, focal, ang0, span, e_top, e_bot), (dirx, diry, b, a, rel),
        full circle)``.
        """
        got = self.__dict__.get("_post_args")
        if got is None:
            got = (
                (
                    1.0 if self.kind == "perspective" else 0.0,
                    float(self.yaw),
                    float(self.fov_deg),
                    float(self.focal),
                    float(self.ang0),
                    float(self.span),
                    float(self.e_top),
                    float(self.e_bot),
                ),
                (self.dirx, self.diry, self.b, self.a, self.rel),
                self.kind == "equirect" and self.span >= 2 * math.pi - 1e-9,
            )
            self.__dict__["_post_args"] = got  # one tuple: safe to read from threads
        return got

    def frame_args(self) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """What the compiled ``frame_maps`` takes of this camera (made once a camera):
        ``(view, (dirx, diry, b, a, relx, column table))`` -- ``view`` holds whether the
        view culls walls outside it, its six direction numbers (:func:`_view_direction`),
        ``ang0`` and the column table's bins a radian.
        """
        got = self.__dict__.get("_frame_args")
        if got is None:
            fwd = _view_direction(self)
            lut, bins = self.column_lut()
            view = np.array([fwd is not None, *(fwd or (0.0,) * 6), self.ang0, bins], np.float64)
            got = (view, (self.dirx, self.diry, self.b, self.a, self.relx, lut))
            self.__dict__["_frame_args"] = got  # one tuple: safe to read from threads
        return got

    def with_bearing0(self, bearing0: float) -> ColumnCamera:
        """This panorama window starting at bearing ``bearing0`` degrees instead: the same
        camera as ``equirect(width, height, bearing0, span, ...)`` to the bit (its bearings
        are ``radians(bearing0) + rel`` there too), sharing the yaw-free arrays.
        """
        cam = self._clone()
        b0 = math.radians(bearing0)
        cam.ang0 = b0
        cam.ang = b0 + self.rel
        cam.dirx = np.sin(cam.ang)
        cam.diry = np.cos(cam.ang)
        return cam

    def with_yaw(self, yaw: float) -> ColumnCamera:
        """This perspective camera turned to ``yaw`` degrees (shares the row geometry)."""
        cam = self._clone()
        y0 = math.radians(yaw)
        shift = y0 - self.yaw
        cam.yaw = y0
        cam.ang = self.ang + shift
        cam.ang0 = self.ang0 + shift
        cam.dirx = np.sin(cam.ang)
        cam.diry = np.cos(cam.ang)
        return cam

    def col_of(self, bearing: np.ndarray) -> np.ndarray:
        """Continuous column of bearings (radians); NaN where a perspective view cannot
        show them.
        """
        if self.kind == "equirect":
            return ((bearing - self.ang0) % (2 * math.pi)) / self.span * self.width
        d = (bearing - self.yaw + math.pi) % (2 * math.pi) - math.pi
        with np.errstate(invalid="ignore"):
            out = self.width / 2.0 + self.focal * np.tan(d)
        return np.where(np.abs(d) < math.radians(89.0), out, np.nan)

    def row_of(self, a: np.ndarray) -> np.ndarray:
        """Continuous row of values of ``a`` (see the module docstring)."""
        if self.kind == "equirect":
            return (self.e_top - np.arctan(a)) / (self.e_top - self.e_bot) * self.height
        return self.height / 2.0 - a

    def count_above(self, v: np.ndarray) -> np.ndarray:
        """Number of rows with ``a[r] > v``."""
        return np.searchsorted(self.neg_a, -v, side="left")

    def count_at_or_above(self, v: np.ndarray) -> np.ndarray:
        """Number of rows with ``a[r] >= v``."""
        return np.searchsorted(self.neg_a, -v, side="right")


@dataclass
class Frame:
    """Per-pixel results of one rendering, image layout ``(H, W)``."""

    rgb: np.ndarray  # (H, W, 4) RGBA while drawing, (H, W, 3) RGB at the end
    t_cols: np.ndarray  # (W, Hb): horizontal distance (m) of rows r_top.. ; inf sky, ground
    r_top: int
    depth: np.ndarray | None
    ids: np.ndarray | None


@dataclass
class Hits:
    """The kept wall hits: column, rank (0 nearest), global wall index, horizontal
    distance ``t`` (m), position ``u`` along the wall (m) and whether seen from inside.
    """

    col: np.ndarray
    rank: np.ndarray
    seg: np.ndarray
    t: np.ndarray
    u: np.ndarray
    inner: np.ndarray
    bounds: np.ndarray  # (W, K + 3) run boundaries: [0, n_{K-1}, ..., n_0, g, H]


@dataclass
class Candidates:
    """The walls that may show in a camera from a viewpoint: global wall indices,
    endpoints relative to the viewer (m), whether each is seen from inside, and the first
    column (index into ``cam.relx``) and number of columns each spans.
    """

    segs: np.ndarray
    ax: np.ndarray
    ay: np.ndarray
    bx: np.ndarray
    by: np.ndarray
    inner: np.ndarray | None
    i0: np.ndarray
    cnt: np.ndarray


def wall_candidates(
    scene: Scene, cam: ColumnCamera, x: float, y: float, room: int | None
) -> Candidates:
    """The walls near ``(x, y)`` facing the viewer (or, from inside ``room``, its walls)
    that lie in the camera's columns (compiled when available).
    """
    k = kernels.compiled()
    fwd = _view_direction(cam) if k is not None else None
    lut, bins = cam.column_lut()
    room_i = -1 if room is None else int(room)
    key = (float(x), float(y), room_i)
    memo = scene.positions.get(key) if k is not None else None
    if memo is None and k is not None:
        got = kernels.call(
            "position_walls", scene.wall_rows, scene.candidates(x, y), scene.bid, *key
        )
        if got is not None:
            memo = (*got, True)
            scene.remember_position(key, memo)
    out = None
    if memo is not None:
        out = kernels.call(
            "wall_candidates",
            scene.wall_rows,
            memo[0],
            memo[1],
            float(x),
            float(y),
            fwd is not None,
            *(fwd or (0.0,) * 6),
            room_i,
            float(cam.ang0),
            cam.relx,
            lut,
            bins,
        )
    if out is not None:
        c_segs, ax, ay, bx, by, inner, i0, cnt = out
        return Candidates(c_segs, ax, ay, bx, by, inner if room is not None else None, i0, cnt)
    return wall_candidates_numpy(scene, cam, *scene.candidate_data(x, y), x, y, room)


def _view_direction(cam: ColumnCamera) -> tuple[float, ...] | None:
    """For a view at most 120 degrees wide -- a perspective view or a panorama window --
    the unit vectors (east, north) of its middle and of its left and right edges (half a
    degree outside them), six numbers; else None.

    A wall with both ends behind the line across the middle through the eye cannot be hit
    by a ray of such a view (every ray is within 90 degrees of the middle), nor one with
    both ends beyond the same edge: neither needs to be a candidate.
    """
    if cam.kind == "perspective" and cam.fov_deg <= 120.0:
        mid, half = cam.yaw, math.radians(cam.fov_deg) / 2
    elif cam.kind == "equirect" and cam.span <= 2 * math.pi / 3:
        mid, half = cam.ang0 + cam.span / 2, cam.span / 2
    else:
        return None
    left, right = mid - half - math.radians(0.5), mid + half + math.radians(0.5)
    return (
        math.sin(mid),
        math.cos(mid),
        math.sin(left),
        math.cos(left),
        math.sin(right),
        math.cos(right),
    )


def wall_candidates_numpy(scene, cam, segs, data, x: float, y: float, room) -> Candidates:
    """:func:`wall_candidates` in numpy (the reference of the compiled kernel)."""
    ax, ay, bx, by, nx_, ny_ = data
    rx, ry = x - ax, y - ay
    front = nx_ * rx + ny_ * ry > 1e-9
    fwd = _view_direction(cam)
    if fwd is not None and room is None:
        # walls entirely behind the viewer, or beyond one edge of the view, are not in it
        fx, fy, lx, ly, rx, ry = fwd
        pax, pay, pbx, pby = ax - x, ay - y, bx - x, by - y
        ahead = (pax * fx + pay * fy > 0) | (pbx * fx + pby * fy > 0)
        beyond_left = (lx * pay - ly * pax > 0) & (lx * pby - ly * pbx > 0)
        beyond_right = (rx * pay - ry * pax < 0) & (rx * pby - ry * pbx < 0)
        front &= ahead & ~beyond_left & ~beyond_right
    if room is not None:
        sel = front | (scene.bid[segs] == room)
        inner_seg = ~front[sel]
    else:
        sel = front
    segs = segs[sel]
    ax, ay, bx, by = ax[sel] - x, ay[sel] - y, bx[sel] - x, by[sel] - y
    ba = np.arctan2(ax, ay)
    bb = np.arctan2(bx, by)
    if room is not None:
        start = np.where(inner_seg, bb, ba)
        span = np.where(inner_seg, ba - bb, bb - ba) % (2 * math.pi)
    else:
        start = ba
        span = (bb - ba) % (2 * math.pi)
    rs = (start - cam.ang0) % (2 * math.pi)
    i0 = np.searchsorted(cam.relx, rs, side="left")
    i1 = np.searchsorted(cam.relx, rs + span, side="right")
    cnt = np.maximum(i1 - i0, 0)
    return Candidates(segs, ax, ay, bx, by, inner_seg if room is not None else None, i0, cnt)


def find_hits(
    scene: Scene, cam: ColumnCamera, x: float, y: float, eye: float, room: int | None
) -> Hits:
    """Intersect every column's ray with the walls near ``(x, y)`` and keep, per column,
    up to ``K_HITS`` hits each taller than all nearer ones (compiled when available).
    """
    cd = wall_candidates(scene, cam, x, y, room)
    out = kernels.call(
        "wall_hits",
        cd.ax,
        cd.ay,
        cd.bx,
        cd.by,
        scene.height[cd.segs],
        cd.i0,
        cd.cnt,
        cam.dirx,
        cam.diry,
        cam.b,
        cam.a,
        float(eye),
        K_HITS,
    )
    if out is not None:
        return _hits_of(scene, cd, *out)
    return find_hits_numpy(scene, cam, cd, eye)


def _hits_of(scene, cd: Candidates, col, rank, pseg, t, s, bounds) -> Hits:
    gseg = cd.segs[pseg]
    u = s * scene.length[gseg]
    if cd.inner is not None:
        inner = cd.inner[pseg]
        u = np.where(inner, scene.length[gseg] - u, u)
    else:
        inner = np.zeros(len(pseg), bool)
    return Hits(col, rank, gseg, t, u, inner, bounds)


def find_hits_numpy(scene: Scene, cam: ColumnCamera, cd: Candidates, eye: float) -> Hits:
    """:func:`find_hits` in numpy (the reference of the compiled kernel)."""
    W, K = cam.width, K_HITS
    segs, ax, ay, bx, by, i0, cnt = cd.segs, cd.ax, cd.ay, cd.bx, cd.by, cd.i0, cd.cnt
    pseg = np.repeat(np.arange(len(segs)), cnt)
    pcol = ragged_arange(i0, cnt) % W
    dxs, dys = (bx - ax)[pseg], (by - ay)[pseg]
    Dx, Dy = cam.dirx[pcol], cam.diry[pcol]
    wx, wy = ax[pseg], ay[pseg]
    den = Dx * dys - Dy * dxs
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (wx * dys - wy * dxs) / den
        s = (wx * Dy - wy * Dx) / den
    ok = np.isfinite(t) & (t > 0.05)
    pseg, pcol, t, s = pseg[ok], pcol[ok], t[ok], np.clip(s[ok], 0.0, 1.0)
    top = np.arctan((scene.height[segs][pseg] - eye) / t)
    order = np.argsort(pcol * 1e5 + np.minimum(t, 9.9e4), kind="stable")
    pseg, pcol, t, s, top = pseg[order], pcol[order], t[order], s[order], top[order]
    key = pcol * 4.0 + top + 2.0
    useful = np.ones(len(key), bool)
    if len(key):
        useful[1:] = key[1:] > np.maximum.accumulate(key)[:-1]
    pseg, pcol, t, s, top = pseg[useful], pcol[useful], t[useful], s[useful], top[useful]
    rank = np.arange(len(pcol)) - np.searchsorted(pcol, pcol, side="left")
    keep = rank < K
    pseg, pcol, t, s, top, rank = (v[keep] for v in (pseg, pcol, t, s, top, rank))
    # run boundaries per column
    b = cam.b
    t0 = np.full(W, np.inf)
    first = rank == 0
    t0[pcol[first]] = t[first]
    g = cam.count_at_or_above(-eye / (t0 * b))
    nb = np.full((W, K), cam.height + 1, np.int64)
    nb[pcol, rank] = cam.count_above(np.tan(top) / b[pcol])
    nb = np.minimum(np.minimum.accumulate(nb, axis=1), g[:, None])
    bounds = np.empty((W, K + 3), np.int64)
    bounds[:, 0] = 0
    bounds[:, 1 : K + 1] = nb[:, ::-1]
    bounds[:, K + 1] = g
    bounds[:, K + 2] = cam.height
    return _hits_of(scene, cd, pcol, rank, pseg, t, s, bounds)


def cast(
    scene: Scene,
    cam: ColumnCamera,
    x: float,
    y: float,
    eye: float,
    cond: Conditions,
    want_depth: bool,
    want_ids: bool,
    room: int | None = None,
    pedestrians=None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Render ``cam`` from ``(x, y)`` at ``eye`` metres: ``(rgb, depth, ids)``.

    ``room`` is the id of the building the viewer stands in (its walls are drawn from
    inside and a ceiling replaces the sky), else None. Walls, sky, ground and boards are
    drawn by one compiled call where :mod:`urban_gym.render.kernels` can
    (:func:`_cast_compiled`), else in numpy (:func:`_cast_numpy`, the reference); the
    sprites and the weather follow.
    """
    need_depth = want_depth or cond.weather != "clear"
    scene.ensure_signs()
    drawn = _cast_compiled(scene, cam, x, y, eye, cond, need_depth, want_ids, room)
    if drawn is None:
        drawn = _cast_numpy(scene, cam, x, y, eye, cond, need_depth, want_ids, room)
    frame, sky_end, t0, n0 = drawn
    if room is not None and frame.depth is not None:
        ceil_h = float(scene.city.buildings[room].height) - eye
        with np.errstate(divide="ignore"):
            cd = (ceil_h / (cam.a[:, None] * cam.b[None, :])).astype(np.float32) * cam.secant()
        sky_m = (cam.rows_col < sky_end[None, :]).view(np.uint8)
        cv2.copyTo(cd, sky_m, frame.depth)
    night_sky = cond.time_of_day == "night" and cond.weather == "clear" and room is None
    stars = _star_field(cond.seed, cam.height, cam.width) if night_sky else None
    if not draw_after_walls(scene, cam, frame, x, y, eye, cond, pedestrians, stars, drawn[1:]):
        if night_sky:
            _stars(frame.rgb, sky_end, cond.seed)
        draw_blades(scene, cam, frame, x, y, eye)
        draw_sprites(scene, cam, frame, x, y, eye, cond, pedestrians, t0, n0)
    _weather(frame, cam, cond)
    return frame.rgb, (frame.depth if want_depth else None), frame.ids


def _cast_numpy(scene, cam, x, y, eye, cond, need_depth: bool, want_ids: bool, room) -> tuple:
    """Walls, sky, ground and boards in numpy with ``cv2.remap`` (the reference of
    :func:`_cast_compiled`): ``(frame, sky_end, t0, n0)`` -- the :class:`Frame`, the first
    row below the sky of every column, its nearest wall's distance (m, inf where none)
    and the top row of that wall.
    """
    W, H = cam.width, cam.height
    K = K_HITS
    tod = cond.time_of_day
    hits = find_hits(scene, cam, x, y, eye, room)
    runs = _runs(scene, cam, hits, eye, room, want_ids)
    g = hits.bounds[:, K + 1]
    sky_end = hits.bounds[:, 1]  # rows above the highest wall
    # Panoramas: rows above every wall are sky in every column and rows below every wall
    # base are ground: only the band between is ray-cast (as (W, Hb) column runs).
    if cam.kind == "equirect" and room is None and W:
        band = (int(sky_end.min()), int(g.max()))
    else:
        band = (0, H)
    ground = None
    if W and int(g.min()) < H:
        ground = ground_maps(cam, scene.ground_window(x, y), x, y, eye, tod)
    atlas = combined_atlas(tod, cond.weather)
    sky = _sky_rows(cam, tod, cond.weather) if band[0] > 0 else None
    rgb, t_cols, depth, ids = fill(cam, hits, runs, band, atlas, sky, ground, need_depth)
    frame = Frame(rgb, t_cols, band[0], depth, ids)
    draw_boards(scene, cam, frame, eye, hits)
    t0 = np.full(W, np.inf)
    first = hits.rank == 0
    t0[hits.col[first]] = hits.t[first]
    n0 = np.ascontiguousarray(hits.bounds[:, K])  # the nearest wall's top row
    return frame, sky_end, t0, n0


def _cast_compiled(scene, cam, x, y, eye, cond, need_depth: bool, want_ids: bool, room):
    """:func:`_cast_numpy` by the compiled ``frame_maps`` and ``finish_frame``
    (:mod:`urban_gym.render.kernels.frame`) around two ``cv2.remap`` calls (the wall atlas
    and the ground window): three passes that release the GIL, with little Python between
    them. None where the numpy path must draw.
    """
    if kernels.compiled() is None:
        return None
    W, H = cam.width, cam.height
    tod = cond.time_of_day
    view, cam_arrays = cam.frame_args()
    win = scene.ground_window(x, y)
    gwin = _window_args(scene, win)
    band = cam.kind == "equirect" and room is None
    rgb = scratch("rgb", (H, W, 4), np.uint8)
    maps = scratch("maps", (4, H * W))
    t_flat = scratch("t", (W * H,))
    depth = np.empty((H, W), np.float32) if need_depth else _NO_DEPTH
    ids = np.empty((H, W), np.int32) if want_ids else _NO_IDS
    room_i = -1 if room is None else int(room)
    key = (float(x), float(y), room_i)
    memo = scene.positions.get(key)  # a turn in place: the walls found for the last frame
    if memo is None:
        got = kernels.call(
            "position_walls", scene.wall_rows, scene.candidates(x, y), scene.bid, *key
        )
        if got is None:
            return None
        memo = (*got, True)
        scene.remember_position(key, memo)
    bounds = scratch("bounds", (W, K_HITS + 3), np.int64)
    t0 = scratch("t0", (W,), np.float64)
    out = kernels.call(
        "frame_maps",
        scene.frame_packed,
        scene.sign_packed,
        scene.wall_rows,
        _NO_SEGS,
        memo,
        cam_arrays,
        cam.a32,
        view,
        key[0],
        key[1],
        float(eye),
        room_i,
        K_HITS,
        band,
        _sky_rows(cam, tod, cond.weather) if band else _NO_SKY,
        _RUN_CONSTS,
        gwin,
        SIGN_BASE,
        rgb,
        maps,
        t_flat,
        depth,
        cam.secant() if need_depth else _NO_DEPTH,
        ids,
        bounds,
        t0,
    )
    if out is None:
        return None
    r_top, r_bot, g_min, boards = out
    hb, hg = r_bot - r_top, H - g_min
    cols: np.ndarray = _NO_RGBA
    if hb > 0:  # sampled column by column (the atlas stays in cache), transposed below
        mx, my = (maps[i, : hb * W].reshape(W, hb) for i in (0, 1))
        cols = cv2.remap(
            combined_atlas(tod, cond.weather),
            mx,
            my,
            cv2.INTER_LINEAR,
            dst=scratch("columns", (W, hb, 4), np.uint8),
            borderMode=cv2.BORDER_REPLICATE,
        )
    ground_px: np.ndarray = _NO_RGBA
    if hg > 0:
        gx, gy = (maps[i, : hg * W].reshape(hg, W) for i in (2, 3))
        ground_px = cv2.remap(
            win.image,
            gx,
            gy,
            cv2.INTER_LINEAR,
            dst=scratch("ground", (hg, W, 4), np.uint8),
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=_FAR_RGBA,
        )
    if hb > 0 or hg > 0 or len(boards[0]):
        kernels.call(
            "finish_packed",
            rgb,
            cols,
            r_top,
            ground_px,
            bounds,
            K_HITS,
            g_min,
            _ground_light(tod),
            tod != "day",
            scene.sign_atlas_array,
            boards,
        )
    t_cols = t_flat[: W * hb].reshape(W, hb)
    frame = Frame(rgb, t_cols, r_top, depth if need_depth else None, ids if want_ids else None)
    return frame, bounds[:, 1], t0, np.ascontiguousarray(bounds[:, K_HITS])


def _window_args(scene: Scene, win) -> np.ndarray:
    """The ground window's ``(x0, y1, 1 / metres per pixel, detail distance)`` as the
    compiled ``frame_maps`` takes them (the last window's kept on the scene).
    """
    last = scene.__dict__.get("_window_args")
    if last is not None and last[0] is win:
        return last[1]
    got = np.array([win.x0, win.y1, 1.0 / win.mpp, DETAIL_M], np.float64)
    scene.__dict__["_window_args"] = (win, got)  # one tuple: safe to read from threads
    return got


_NO_RGBA = np.zeros((0, 1, 4), np.uint8)
_NO_SEGS = np.zeros(0, np.int64)
_NO_SKY = np.zeros((0, 4), np.uint8)
_NO_DEPTH = np.zeros((0, 0), np.float32)
_NO_IDS = np.zeros((0, 0), np.int32)
_FAR_RGBA = (*FAR_COLOUR, 255)


@lru_cache(maxsize=4)
def _ground_light(time_of_day: str) -> np.ndarray:
    """The ground's light as a table per channel, ``(3, 256)`` uint8: what
    :func:`urban_gym.render.ground.light` (``cv2.multiply``) makes of each level.
    """
    levels = np.repeat(np.arange(256, dtype=np.uint8)[None, :, None], 4, axis=2)
    lit = light(np.ascontiguousarray(levels), time_of_day)
    out = np.ascontiguousarray(lit[0, :, :3].T)
    out.flags.writeable = False
    return out


def _runs(scene, cam: ColumnCamera, hits: Hits, eye: float, room, want_ids: bool) -> Runs:
    """The texture parameters of every run of the frame (:class:`Runs`): from the compiled
    kernel where it runs, else from :func:`_runs_numpy` (the reference).
    """
    out = kernels.call(
        "run_params",
        hits.col,
        hits.rank,
        hits.seg,
        hits.t,
        hits.u,
        hits.inner,
        scene.style,
        scene.uoff,
        scene.seg_shade,
        scene.bid,
        cam.b,
        cam.width,
        K_HITS,
        float(eye),
        -1 if room is None else int(room),
        bool(want_ids),
        _RUN_CONSTS,
    )
    if out is not None:
        P, D, S, t_run, id_run = out
        return Runs(P, D, S, t_run, id_run if want_ids else None)
    return _runs_numpy(scene, cam, hits, eye, room, want_ids)


def _runs_numpy(scene, cam: ColumnCamera, hits: Hits, eye: float, room, want_ids: bool) -> Runs:
    """:func:`_runs` in numpy (the reference of the compiled kernel)."""
    W, K = cam.width, K_HITS
    R = K + 2
    j = hits.col * R + (K - hits.rank)  # run index of every hit
    style = np.where(hits.inner, N_STYLES, scene.style[hits.seg])
    P = np.zeros(W * R, np.float32)
    D = np.zeros(W * R, np.float32)
    S = np.zeros(W * R, np.float32)
    P[j] = (FACADE_MAX_Z - eye) * FACADE_PPM - 0.5
    D[j] = hits.t * cam.b[hits.col] * FACADE_PPM
    S[j] = (
        style * STYLE_STRIDE + ((scene.uoff[hits.seg] + hits.u) % STYLE_PERIOD_M) * FACADE_PPM + 0.5
    )
    # shade levels are stacked along the z axis of the transposed atlas
    P[j] += scene.seg_shade[hits.seg] * STYLE_H
    sky_runs = np.arange(W) * R
    if room is None:
        P[sky_runs] = SKY_X0 - 0.5
        D[sky_runs] = -SKY_SCALE * cam.b
    else:
        P[sky_runs] = CEIL_X0
    t_run = np.full(W * R, np.inf, np.float32)
    t_run[j] = hits.t
    id_run = None
    if want_ids:
        id_run = np.zeros(W * R, np.int32)
        id_run[K + 1 :: R] = GROUND_ID
        id_run[j] = BUILDING_BASE + scene.bid[hits.seg]
        if room is not None:
            id_run[sky_runs] = BUILDING_BASE + room
    return Runs(P, D, S, t_run, id_run)


# ---------------------------------------------------------------------- sky
_SKY_COLOURS = {
    # (horizon, zenith) RGB
    ("day", "clear"): ((206, 224, 242), (84, 142, 214)),
    ("dusk", "clear"): ((250, 160, 95), (60, 60, 120)),
    ("night", "clear"): ((30, 36, 62), (6, 8, 22)),
    ("day", "rain"): ((170, 174, 180), (120, 124, 132)),
    ("dusk", "rain"): ((130, 110, 100), (60, 58, 70)),
    ("night", "rain"): ((28, 30, 38), (10, 10, 16)),
}
FOG_COLOUR = {"day": (196, 198, 200), "dusk": (150, 130, 125), "night": (40, 42, 50)}
_CEILING = {"day": (190, 186, 178), "dusk": (150, 140, 130), "night": (70, 68, 66)}


_sky_cache: dict[tuple, np.ndarray] = {}


def _sky_rows(cam: ColumnCamera, tod: str, weather: str) -> np.ndarray:
    """Sky RGBA per row of a panorama camera, ``(H, 4)`` uint8 (cached): the colour the
    atlas's sky strip gives the row -- the same sample, by the same ``cv2.remap``, that a
    sky pixel inside the cast band gets -- so a sky pixel's colour does not depend on how
    tall the walls elsewhere in the image are (a window of a panorama equals its slice).
    The strip ends at ``tan(elevation) = 4`` (76 degrees): the sky above is its colour there.
    """
    key = (tod, weather, cam.a32.tobytes())
    hit = _sky_cache.get(key)
    if hit is None:
        # the band's atlas coordinates of a sky run: x = P - D * a (float32, as compiled)
        mx = np.float32(SKY_X0 - 0.5) - np.float32(-SKY_SCALE) * cam.a32
        my = np.zeros_like(mx)
        hit = cv2.remap(
            combined_atlas(tod, weather),
            mx.reshape(-1, 1),
            my.reshape(-1, 1),
            cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_REPLICATE,
        ).reshape(cam.height, 4)
        hit[:, 3] = 255
        if len(_sky_cache) > 32:
            _sky_cache.clear()
        _sky_cache[key] = hit
    return hit


def _stars(rgb: np.ndarray, sky_end: np.ndarray, seed: int) -> None:
    """The night sky's stars on ``rgb`` where its columns show sky (above ``sky_end``)."""
    r, c, v = _star_field(seed, *rgb.shape[:2])
    m = r < sky_end[c] - 1
    rgb[r[m], c[m], :3] = v[m, None]


#: star fields by (seed, H, W): the same for every frame of those conditions (seeding a
#: generator costs more than drawing the stars), so drawn once and kept
_STARS: LRUCache[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = LRUCache(
    max_items=256, lock=True, name="render.raycast.stars"
)


def _star_field(seed: int, H: int, W: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stars of a ``W`` x ``H`` frame under conditions seeded ``seed``: their rows,
    columns and grey levels (read-only).
    """

    def draw() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        n = max(20, H * W // 3000)
        r = rng.integers(0, H, n)
        c = rng.integers(0, W, n)
        v = rng.integers(150, 255, n).astype(np.uint8)
        for a in (r, c, v):
            a.setflags(write=False)
        return r, c, v

    return _STARS.get_or_create((seed, H, W), draw)


SKY_SCALE = 256.0  # sky strip pixels per unit of tan(elevation)
_SKY_PAD = 16
_SKY_LEN = 1024
CEIL_X0 = float(STYLE_H * len(SHADES) + 4)
SKY_X0 = float(STYLE_H * len(SHADES) + 8 + _SKY_PAD)

#: the constants of the compiled run pass (see ``kernels.columns.run_params``)
_RUN_CONSTS = np.array(
    [
        FACADE_MAX_Z,
        FACADE_PPM,
        STYLE_H,
        STYLE_STRIDE,
        STYLE_PERIOD_M,
        N_STYLES,
        SKY_X0,
        SKY_SCALE,
        CEIL_X0,
        GROUND_ID,
        BUILDING_BASE,
    ],
    np.float64,
)


#: every (time of day, weather) pair: a batch of envs under mixed conditions draws with all
#: their atlases, so each stays loaded (a smaller cache reloads one file every few frames)
_N_CONDITIONS = len(TIMES_OF_DAY) * len(WEATHERS)


@lru_cache(maxsize=_N_CONDITIONS)
def combined_atlas(time_of_day: str, weather: str) -> np.ndarray:
    """The transposed facade atlas (axis 0 along walls, axis 1 up the walls, shade levels
    stacked on axis 1) followed on axis 1 by a ceiling band and a sky strip whose column
    ``SKY_X0 + SKY_SCALE * tan(elevation)`` holds the sky colour at that elevation.

    Built once per machine (:func:`urban_gym.world.diskcache.cached_array`) and shared,
    memory-mapped, by the processes that use it.
    """
    return cached_array(
        f"atlas-{time_of_day}-{weather}",
        lambda: _build_atlas(time_of_day, weather),
        textures,
        sys.modules[__name__],
    )


def _build_atlas(time_of_day: str, weather: str) -> np.ndarray:
    fac = facade_atlas(time_of_day).transpose(1, 0, 2)
    n_u, n_z = fac.shape[:2]
    out = np.empty((n_u, n_z + 8 + _SKY_PAD + _SKY_LEN, 4), np.uint8)
    out[..., 3] = 255
    out[:, :n_z, :3] = fac
    out[:, n_z : n_z + 8, :3] = _CEILING[time_of_day]
    tan = (np.arange(_SKY_PAD + _SKY_LEN) - _SKY_PAD + 0.5) / SKY_SCALE
    out[:, n_z + 8 :, :3] = sky_colour(np.degrees(np.arctan(tan)), time_of_day, weather)[None]
    out.setflags(write=False)
    return out


def sky_colour(elevation: np.ndarray, time_of_day: str, weather: str) -> np.ndarray:
    """Sky RGB (``uint8``, shape ``elevation.shape + (3,)``) at elevations in degrees."""
    e = np.clip(np.asarray(elevation, dtype=np.float64) / 90.0, 0.0, 1.0)
    if weather == "fog":
        col = np.asarray(FOG_COLOUR[time_of_day], np.float64)
        return np.broadcast_to(col, e.shape + (3,)).astype(np.uint8)
    hz, zn = _SKY_COLOURS[(time_of_day, weather)]
    tt = (e**0.5)[..., None]
    return (np.asarray(hz) * (1 - tt) + np.asarray(zn) * tt).astype(np.uint8)


# ---------------------------------------------------------------------- weather
def _weather(frame: Frame, cam: ColumnCamera, cond: Conditions) -> None:
    """Fog and rain haze (by depth) on the RGBA image, then conversion to RGB and rain
    streaks. The elementwise steps between OpenCV's are compiled passes that keep the GIL
    where :mod:`urban_gym.render.kernels` runs (numpy's release it for every array op: a
    hand-over to another drawing thread each), with the same float32 arithmetic.
    """
    tod = cond.time_of_day
    k = kernels.compiled()
    if cond.weather != "clear":
        depth = frame.depth
        assert depth is not None
        if cond.weather == "fog":
            vis, col = 60.0, FOG_COLOUR[tod]
        else:
            vis, col = 350.0, _SKY_COLOURS[(tod, "rain")][0]
        f = None if k is None else kernels.call("haze_weights", depth, -3.0 / vis)
        if f is None:
            f = np.minimum(depth, 1e4)
            f *= -3.0 / vis
        f = cv2.exp(f)
        g = None if k is None else kernels.call("one_minus", f)
        frame.rgb = cv2.blendLinear(
            frame.rgb, _haze_image(frame.rgb.shape, col), f, 1.0 - f if g is None else g
        )
    if frame.rgb.shape[2] == 3:  # copied to RGB by the compiled passes (clear weather)
        return
    rgb = None if k is None else kernels.call("rgba_to_rgb", frame.rgb)
    if rgb is None:
        rgb = cv2.cvtColor(frame.rgb, cv2.COLOR_RGBA2RGB)
    if cond.weather == "rain":
        rgb = cv2.convertScaleAbs(rgb, alpha=0.88)
        H, W = rgb.shape[:2]
        rgb = cv2.addWeighted(rgb, 1.0, _rain_streaks(cond.seed, H, W), 0.22, 0.0)
    frame.rgb = rgb


#: haze colour images by (shape, colour): constant, read-only, shared by the frames
_HAZE: LRUCache[tuple, np.ndarray] = LRUCache(
    max_bytes=16 * 2**20, size=lambda v: v.nbytes, lock=True, name="render.raycast.haze"
)


def _haze_image(shape: tuple[int, ...], colour: tuple[int, int, int]) -> np.ndarray:
    """An RGBA image of ``shape`` all of the haze ``colour`` (opaque; read-only, kept)."""

    def make() -> np.ndarray:
        img = np.empty(shape, np.uint8)
        img[:] = (*colour, 255)
        img.setflags(write=False)
        return img

    return _HAZE.get_or_create((shape, colour), make)


#: rain streak layers kept (by bytes: a panorama's is megabytes, a small view's kilobytes)
_RAIN: LRUCache[tuple, np.ndarray] = LRUCache(
    max_bytes=16 * 2**20, size=lambda v: v.nbytes, lock=True, name="render.raycast.rain"
)


def _rain_streaks(seed: int, H: int, W: int) -> np.ndarray:
    """The rain streaks of a ``W`` x ``H`` frame under conditions seeded ``seed``, as an
    ``(H, W, 3)`` grey layer (read-only; the same for every frame of those conditions, so
    drawn once and kept).
    """
    return _RAIN.get_or_create((seed, H, W), lambda: _draw_rain(seed, H, W))


def _draw_rain(seed: int, H: int, W: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 7919)
    layer = np.zeros((H, W), np.uint8)
    n = max(30, H * W // 900)
    x0 = rng.uniform(0, W, n)
    y0 = rng.uniform(-0.05 * H, H, n)
    ln = rng.uniform(0.03, 0.08, n) * H
    for xa, ya, lv in zip(x0, y0, ln):
        cv2.line(
            layer, (int(xa), int(ya)), (int(xa - 0.18 * lv), int(ya + lv)), 255, 1, cv2.LINE_AA
        )
    out = cv2.merge([layer, layer, layer])
    out.setflags(write=False)
    return out
