"""Projecting (blade) signs: a board perpendicular to the facade, hung above head height,
with the place's name on both faces -- what a walker looking along a street reads, where
the flat board on the facade is seen edge-on.

Every facade board of :class:`~urban_gym.render.scene.Scene` gets one blade where there
is room: beside the flat board (past its right end, else its left end, else its middle),
:data:`BLADE_GAP_M` out from the wall on a bracket, reaching :data:`BLADE_MAX_W_M` at
most, its bottom :data:`BLADE_Z0_M` up (lower on a low building, none below 2.2 m). Two
blades of one wall never share a stretch of wall at the same height (they would lie in
one plane). The name is set on one to three lines of :data:`BLADE_LINE_M` metres, and
squeezed where still too wide. A blade carries its place's sign instance id
(:func:`~urban_gym.render.ids.sign_id`), so goal visibility counts its pixels.

Drawing: a blade is a vertical quad. Each image column's ray meets it at a horizontal
distance ``t`` and a point ``s`` along it; the column shows the board between the rows
of its bottom and top at ``t``, in front of whatever is farther in that pixel
(``Frame.t_cols``, which it then updates, so sprites behind it are hidden; the band of
rows ``t_cols`` holds is first widened over the blades' rows, which may lie above the
walls' band, as in a narrow window). The texture
is read so that the text runs left to right from either face (not mirrored), bilinearly.
Compiled (:func:`urban_gym.render.kernels.blades.blit_blades`) where
:mod:`urban_gym.render.kernels` can, else :func:`_draw_numpy` (the reference).

``URBAN_GYM_BLADE_SIGNS=0`` in the environment (read at first use) or
:func:`set_enabled` turns the blades off (the boards on the facades stay): the
benchmarks' "before".
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from urban_gym.render import kernels
from urban_gym.render.fonts import font_for
from urban_gym.render.ids import SIGN_BASE
from urban_gym.render.textures import pack_atlas

#: board height per line of text (m); the text's em is :data:`BLADE_TEXT_EM` of it
BLADE_LINE_M = 0.6
BLADE_TEXT_EM = 0.62
#: texture resolution (pixels per metre)
BLADE_PPM = 56.0
#: widest blade (m, from its bracket outwards) and the narrowest
BLADE_MAX_W_M = 1.8
BLADE_MIN_W_M = 0.8
#: bottom of a blade (m above the ground) and the bracket's gap from the wall (m)
BLADE_Z0_M = 2.6
BLADE_MIN_Z0_M = 2.2
BLADE_GAP_M = 0.15
#: blades farther than this (m) are not drawn
BLADE_RANGE_M = 60.0
#: the grid cell (m) of the per-viewer candidate cache
_CELL_M = 32.0

_state: dict[str, Any] = {"enabled": None}


def set_enabled(flag: bool | None) -> None:
    """Draw the blades (True), not (False), or as ``URBAN_GYM_BLADE_SIGNS`` says (None:
    on unless it is ``0``).
    """
    if flag is not None and not isinstance(flag, bool):
        raise ValueError(f"flag={flag!r} must be True, False or None")
    _state["enabled"] = flag


def enabled() -> bool:
    """Whether blades are drawn now (see :func:`set_enabled`)."""
    flag = _state["enabled"]
    if flag is None:
        value = os.environ.get("URBAN_GYM_BLADE_SIGNS", "1").strip()
        if value not in ("0", "1"):
            raise ValueError(f"URBAN_GYM_BLADE_SIGNS={value!r} must be 0 or 1")
        flag = _state["enabled"] = value == "1"
    return bool(flag)


# ---------------------------------------------------------------------- texture
def _split(name: str, n: int) -> list[str]:
    """``name`` on ``n`` lines, broken at spaces so the longest line is shortest."""
    words = name.split()
    if n <= 1 or len(words) < 2:
        return [name]
    n = min(n, len(words))
    best: tuple[int, list[str]] | None = None

    def rec(start: int, left: int, acc: list[str]) -> None:
        nonlocal best
        if left == 1:
            lines = [*acc, " ".join(words[start:])]
            score = max(len(t) for t in lines)
            if best is None or score < best[0]:
                best = (score, lines)
            return
        for i in range(start + 1, len(words) - left + 2):
            rec(i, left - 1, [*acc, " ".join(words[start:i])])

    rec(0, n, [])
    assert best is not None
    return best[1]


def blade_layout(name: str) -> tuple[list[str], float, float]:
    """``(lines, width_m, height_m)`` of the blade of ``name``: the fewest lines (1-3)
    whose natural width fits :data:`BLADE_MAX_W_M`, else the narrowest setting (then
    squeezed to it).
    """
    px = int(BLADE_PPM * BLADE_LINE_M * BLADE_TEXT_EM)
    best: tuple[float, list[str]] | None = None
    for n in (1, 2, 3):
        lines = _split(name, n)
        w = max(font_for(t, px, bold=True).getlength(t) for t in lines) / BLADE_PPM + 0.3
        if best is None or w < best[0] - 1e-9:
            best = (w, lines)
        if w <= BLADE_MAX_W_M:
            break
    assert best is not None
    w, lines = best
    w = min(max(w, BLADE_MIN_W_M), BLADE_MAX_W_M)
    return lines, w, BLADE_LINE_M * (1.0 + 0.78 * (len(lines) - 1))


def blade_squeeze(name: str) -> float:
    """How much the blade of ``name`` squeezes its text across (1: not at all)."""
    lines, w, _ = blade_layout(name)
    px = int(BLADE_PPM * BLADE_LINE_M * BLADE_TEXT_EM)
    natural = max(font_for(t, px, bold=True).getlength(t) for t in lines) / BLADE_PPM + 0.3
    return min(1.0, w / natural)


def render_blade(
    name: str,
    board: tuple[int, int, int],
    text: tuple[int, int, int],
    lang: str | None = None,
) -> np.ndarray:
    """The blade's face: ``(h, w, 3)`` uint8 at :data:`BLADE_PPM`, the name as
    :func:`blade_layout` sets it, dark-framed; drawn with the language hint ``lang`` (see
    :func:`~urban_gym.render.textures.render_sign`).
    """
    import cv2

    lines, w_m, h_m = blade_layout(name)
    px = int(BLADE_PPM * BLADE_LINE_M * BLADE_TEXT_EM)
    natural = max(font_for(t, px, bold=True).getlength(t) for t in lines) + 0.3 * BLADE_PPM
    w_px = int(math.ceil(max(natural, w_m * BLADE_PPM)))
    h_px = int(round(h_m * BLADE_PPM))
    im = Image.new("RGB", (w_px, h_px), board)
    d = ImageDraw.Draw(im)
    pitch = h_px / len(lines)
    for i, t in enumerate(lines):
        d.text(
            (w_px / 2, (i + 0.5) * pitch),
            t,
            font=font_for(t, px, True, lang),
            fill=text,
            anchor="mm",
        )
    arr = np.asarray(im).copy()
    edge = tuple(int(c * 0.6) for c in board)
    cv2.rectangle(arr, (0, 0), (w_px - 1, h_px - 1), edge, 2)
    target = int(round(w_m * BLADE_PPM))
    if target < w_px:
        arr = cv2.resize(arr, (max(4, target), h_px), interpolation=cv2.INTER_AREA)
    return arr


# ---------------------------------------------------------------------- placement
def build_blades(
    scene: Any,
    signs: list,
    names: dict[int, str],
    colours: dict,
    langs: dict[int, str | None] | None = None,
) -> dict:
    """The blades of the facade boards ``signs`` (``SignPlacement``): the attributes they
    become on the scene -- ``blade_poi`` (n,), ``blade_xy`` (n, 4: inner end x, y, outer
    end x, y), ``blade_z`` (n, 2), ``blade_rect`` (n, 4: atlas x, y, w, h) and
    ``blade_atlas`` -- in order of POI. ``names``/``colours``/``langs``: each POI's name,
    (board, text) colours and language (the font's hint; None when not known).
    """
    langs = langs or {}
    city = scene.city
    taken: dict[int, list[tuple[float, float, float]]] = {}
    rows: list[tuple[int, float, float, float, float, float, float]] = []
    images: list[np.ndarray] = []
    for s in sorted(signs, key=lambda s: s.poi):
        seg = s.seg
        L = float(scene.length[seg])
        dx, dy = float(scene.dx[seg]) / L, float(scene.dy[seg]) / L
        nx, ny = float(scene.nx[seg]), float(scene.ny[seg])
        ax, ay = float(scene.ax[seg]), float(scene.ay[seg])
        height = float(scene.height[seg])
        _, w, h = blade_layout(names[s.poi])
        z0 = BLADE_Z0_M
        if height < z0 + h + 0.1:
            z0 = height - h - 0.1
        if z0 < BLADE_MIN_Z0_M or L < 0.6:
            continue
        z1 = z0 + h
        placed = None
        for u in (s.u1 + 0.3, s.u0 - 0.3, 0.5 * (s.u0 + s.u1)):
            u = min(max(u, 0.2), L - 0.2)
            clash = any(
                abs(u - v) < 0.4 and za < z1 and z0 < zb for v, za, zb in taken.get(seg, [])
            )
            if clash:
                continue
            x0, y0 = ax + u * dx + BLADE_GAP_M * nx, ay + u * dy + BLADE_GAP_M * ny
            x1, y1 = x0 + w * nx, y0 + w * ny
            mx, my = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
            if any(city.building_at(px, py) is not None for px, py in ((x1, y1), (mx, my))):
                continue
            placed = (u, x0, y0, x1, y1)
            break
        if placed is None:
            continue
        u, x0, y0, x1, y1 = placed
        taken.setdefault(seg, []).append((u, z0, z1))
        rows.append((s.poi, x0, y0, x1, y1, z0, z1))
        board, ink = colours[s.poi]
        images.append(render_blade(names[s.poi], board, ink, lang=langs.get(s.poi)))
    atlas, rects = pack_atlas(images) if images else (np.zeros((1, 1, 3), np.uint8), [])
    n = len(rows)
    table = np.array([r[1:] for r in rows], np.float64).reshape(n, 6)
    return {
        "blade_poi": np.array([r[0] for r in rows], np.int64),
        "blade_xy": np.ascontiguousarray(table[:, :4]),
        "blade_z": np.ascontiguousarray(table[:, 4:]),
        "blade_rect": np.array(rects, np.int64).reshape(n, 4),
        "blade_atlas": atlas,
    }


_cand_lock = threading.Lock()


def blade_candidates(scene: Any, x: float, y: float) -> np.ndarray:
    """Indices of the blades within about :data:`BLADE_RANGE_M` of ``(x, y)`` (cached for
    the last 256 grid cells of a scene).
    """
    key = (int(x // _CELL_M), int(y // _CELL_M))
    cache: OrderedDict | None = scene.__dict__.get("_blade_cand")
    if cache is None:
        cache = scene.__dict__.setdefault("_blade_cand", OrderedDict())
    hit = cache.get(key)  # a plain read: the cache only ever holds finished entries
    if hit is not None:
        return hit
    cx, cy = (key[0] + 0.5) * _CELL_M, (key[1] + 0.5) * _CELL_M
    xy = scene.blade_xy
    mx, my = 0.5 * (xy[:, 0] + xy[:, 2]), 0.5 * (xy[:, 1] + xy[:, 3])
    sel = np.flatnonzero(np.hypot(mx - cx, my - cy) <= BLADE_RANGE_M + _CELL_M).astype(np.int64)
    with _cand_lock:
        cache[key] = sel
        while len(cache) > 256:
            cache.popitem(last=False)
    return sel


# ---------------------------------------------------------------------- drawing
#: no blades: the arrays of :func:`blade_inputs` with none in them
_NO_BLADES = (
    np.zeros((0, 4), np.float64),
    np.zeros((0, 2), np.float64),
    np.zeros((0, 4), np.int64),
    np.zeros(0, np.int64),
    np.zeros((0, 0, 3), np.uint8),
)
_NO_CAND = np.zeros(0, np.int64)


def blade_inputs(scene: Any, x: float, y: float) -> tuple[tuple, np.ndarray]:
    """What the compiled blade passes take of a scene: its ``(xy, z, rect, poi, atlas)``
    (kept on the scene) and the blades to try from ``(x, y)`` (:func:`blade_candidates`;
    empty where blades are off or there are none).
    """
    if not enabled() or not len(scene.blade_poi):
        return _NO_BLADES, _NO_CAND
    arrays = scene.__dict__.get("_blade_inputs")
    if arrays is None:
        arrays = (
            scene.blade_xy,
            scene.blade_z,
            scene.blade_rect,
            scene.blade_poi,
            _atlas(scene),
        )
        scene.__dict__["_blade_inputs"] = arrays  # one tuple: safe to read from threads
    return arrays, blade_candidates(scene, x, y)


def draw_blades(scene: Any, cam: Any, frame: Any, x: float, y: float, eye: float) -> None:
    """Draw the blades near ``(x, y)`` into ``frame`` (see the module docstring)."""
    if not enabled() or not len(scene.blade_poi):
        return
    cand = blade_candidates(scene, x, y)
    if not len(cand):
        return
    _widen_band(scene.blade_xy, scene.blade_z, cand, cam, frame, x, y, eye)
    args = (
        scene.blade_xy,
        scene.blade_z,
        scene.blade_rect,
        scene.blade_poi,
        _atlas(scene),
        cand,
        float(x),
        float(y),
        float(eye),
        BLADE_RANGE_M,
        cam.dirx,
        cam.diry,
        cam.b,
        cam.a,
        cam.rel,
        float(cam.ang0),
        frame.rgb,
        frame.t_cols,
        int(frame.r_top),
        frame.ids if frame.ids is not None else _NO_IDS,
        frame.depth if frame.depth is not None else _NO_DEPTH,
        cam.secant() if frame.depth is not None else _NO_DEPTH,
        SIGN_BASE,
    )
    if kernels.call("blit_blades", *args) is None:
        _draw_numpy(*args)


def _widen_band(xy, zz, cand, cam: Any, frame: Any, x: float, y: float, eye: float) -> None:
    """Grow ``frame``'s band of wall distances (``t_cols``, rows from ``r_top``) over every
    row a blade within range may cover, the new rows infinitely far (sky or ground: what
    a row outside the band means). The blade pass records its distance in the band, so a
    sprite behind a blade stays hidden even where the blade reaches past the walls' rows
    -- as in a narrow window, whose band may start lower than the whole panorama's.
    """
    out = kernels.call(
        "blade_rows", xy, zz, cand, float(x), float(y), float(eye), BLADE_RANGE_M, cam.b, cam.a
    )
    if out is None:
        out = _blade_rows_numpy(xy, zz, cand, cam, x, y, eye)
    n_near, r0, r1 = out
    if not n_near:
        return
    old, r_top = frame.t_cols, int(frame.r_top)
    hb = old.shape[1]
    lo, hi = min(r0, r_top), max(r1, r_top + hb)
    if lo == r_top and hi == r_top + hb:
        return
    grown = np.full((old.shape[0], hi - lo), np.inf, old.dtype)
    grown[:, r_top - lo : r_top - lo + hb] = old
    frame.t_cols, frame.r_top = grown, lo


def _blade_rows_numpy(xy, zz, cand, cam: Any, x: float, y: float, eye: float) -> tuple:
    """``(near, r0, r1)``: how many blades ``cand`` are in range of ``(x, y)``, and the
    rows above their highest top and lowest bottom (the numpy reference of the compiled
    ``blade_rows``).
    """
    mx = 0.5 * (xy[cand, 0] + xy[cand, 2]) - x
    my = 0.5 * (xy[cand, 1] + xy[cand, 3]) - y
    near = cand[np.hypot(mx, my) < BLADE_RANGE_M]
    if not len(near):
        return 0, 0, 0
    # no ray meets a blade nearer than the blade's nearest point (nor nearer than 0.3 m)
    ax, ay = xy[near, 0] - x, xy[near, 1] - y
    ex, ey = xy[near, 2] - xy[near, 0], xy[near, 3] - xy[near, 1]
    f = np.clip(-(ax * ex + ay * ey) / np.maximum(ex * ex + ey * ey, 1e-12), 0.0, 1.0)
    t = np.maximum(np.hypot(ax + f * ex, ay + f * ey), 0.3)
    tb = t * max(float(np.min(cam.b)), 1e-6)
    # the highest row top (a <= v_hi) and the lowest row bottom (a > v_lo) of any blade
    top, bot = zz[near, 1] - eye, zz[near, 0] - eye
    v_hi = float(np.max(np.where(top > 0.0, top / tb, 0.0)))
    v_lo = float(np.min(np.where(bot < 0.0, bot / tb, 0.0)))
    r0 = int(cam.count_above(np.array([v_hi]))[0])
    r1 = int(cam.count_above(np.array([v_lo]))[0])
    return len(near), r0, r1


def _atlas(scene: Any) -> np.ndarray:
    """The scene's blade atlas as a plain array (a memory map stays one underneath)."""
    got = scene.__dict__.get("_blade_atlas_plain")
    if got is None:
        got = scene.__dict__["_blade_atlas_plain"] = np.asarray(scene.blade_atlas).view(np.ndarray)
    return got


_NO_IDS = np.zeros((0, 0), np.int32)
_NO_DEPTH = np.zeros((0, 0), np.float32)


def _hits(xy, k, x, y, dirx, diry):
    """Per column: horizontal distance ``t`` to blade ``k`` and the point ``s`` (0 inner
    end, 1 outer end) where the ray meets it (``t`` inf where it does not).
    """
    px, py = xy[k, 0] - x, xy[k, 1] - y
    ex, ey = xy[k, 2] - xy[k, 0], xy[k, 3] - xy[k, 1]
    den = dirx * ey - diry * ex
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (px * ey - py * ex) / den
        s = (px * diry - py * dirx) / den
    ok = (np.abs(den) > 1e-12) & (t > 0.3) & (s >= 0.0) & (s <= 1.0)
    return np.where(ok, t, np.inf), s


def _face_flip(xy, k, x, y) -> bool:
    """Whether the viewer sees blade ``k``'s texture from its back (``s`` runs from the
    viewer's right to left there): then the texture is read mirrored back to front.
    """
    ex, ey = xy[k, 2] - xy[k, 0], xy[k, 3] - xy[k, 1]
    # the viewer's side of the blade's line: cross(e, viewer - inner end)
    side = ex * (y - xy[k, 1]) - ey * (x - xy[k, 0])
    return bool(side > 0.0)


def _draw_numpy(
    xy,
    zz,
    rect,
    poi,
    atlas,
    cand,
    x,
    y,
    eye,
    range_m,
    dirx,
    diry,
    b,
    a,
    rel,
    ang0,
    rgb,
    t_cols,
    r_top,
    ids,
    depth,
    sec,
    base,
) -> None:
    """:func:`draw_blades` in numpy, blade by blade far to near (the reference of the
    compiled ``blit_blades``).
    """
    hb = t_cols.shape[1]
    mx = 0.5 * (xy[cand, 0] + xy[cand, 2]) - x
    my = 0.5 * (xy[cand, 1] + xy[cand, 3]) - y
    dist = np.hypot(mx, my)
    near = cand[dist < range_m]
    order = near[np.argsort(-dist[dist < range_m], kind="stable")]
    for k in order.tolist():
        t, s = _hits(xy, k, x, y, dirx, diry)
        cols = np.flatnonzero(np.isfinite(t))
        if not len(cols):
            continue
        flip = _face_flip(xy, k, x, y)
        axx, ayy, tw, th = (int(v) for v in rect[k])
        z0, z1 = float(zz[k, 0]), float(zz[k, 1])
        for c in cols.tolist():
            tc = float(t[c])
            vt = (z1 - eye) / (tc * b[c])
            vb = (z0 - eye) / (tc * b[c])
            rows = np.flatnonzero((a <= vt) & (a > vb))
            if not len(rows):
                continue
            sc = float(s[c])
            u = (1.0 - sc if flip else sc) * tw - 0.5
            v = (vt - a[rows]) / (vt - vb) * th - 0.5
            inband = (rows >= r_top) & (rows < r_top + hb)
            front = np.ones(len(rows), bool)
            rb = rows[inband] - r_top
            front[inband] = t_cols[c, rb] > tc
            rows, v = rows[front], v[front]
            if not len(rows):
                continue
            px = _bilinear(atlas, axx, ayy, tw, th, u, v)
            rgb[rows, c, :3] = px
            sel = (rows >= r_top) & (rows < r_top + hb)
            t_cols[c, rows[sel] - r_top] = tc
            if ids.size:
                ids[rows, c] = base + poi[k]
            if depth.size:
                depth[rows, c] = tc * sec[rows, c].astype(np.float64)


def _bilinear(atlas, ax, ay, tw, th, u, v) -> np.ndarray:
    """Texture pixels at ``(u, v)`` (one ``u``, rows ``v``) of the rect ``(ax, ay, tw,
    th)``, bilinear and clamped to the rect, rounded to uint8.
    """
    u = min(max(u, 0.0), tw - 1.0)
    v = np.clip(v, 0.0, th - 1.0)
    u0 = min(int(u), tw - 2) if tw > 1 else 0
    v0 = np.minimum(v.astype(np.int64), max(th - 2, 0))
    fu = u - u0
    fv = (v - v0)[:, None]
    u1 = min(u0 + 1, tw - 1)
    v1 = np.minimum(v0 + 1, th - 1)
    p00 = atlas[ay + v0, ax + u0].astype(np.float64)
    p01 = atlas[ay + v0, ax + u1].astype(np.float64)
    p10 = atlas[ay + v1, ax + u0].astype(np.float64)
    p11 = atlas[ay + v1, ax + u1].astype(np.float64)
    top = p00 * (1 - fu) + p01 * fu
    bot = p10 * (1 - fu) + p11 * fu
    return np.floor(top * (1 - fv) + bot * fv + 0.5).astype(np.uint8)


__all__ = [
    "BLADE_LINE_M",
    "BLADE_RANGE_M",
    "blade_candidates",
    "blade_inputs",
    "blade_layout",
    "blade_squeeze",
    "build_blades",
    "draw_blades",
    "enabled",
    "render_blade",
    "set_enabled",
]
