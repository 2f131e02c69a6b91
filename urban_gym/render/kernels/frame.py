"""A cast frame in two compiled calls (numba) around OpenCV's vectorised ``cv2.remap``:
what :func:`urban_gym.render.raycast.cast` does before its sprite and weather passes,
without a round trip to Python between the passes.

* :func:`frame_maps` -- the candidate walls, the wall hits per column and the texture
  parameters of every run (the kernels of :mod:`urban_gym.render.kernels.columns`, called
  from here), then per pixel: the atlas coordinates of walls and sky, the ground window's
  coordinates, the sky rows of a panorama, the horizontal distance, depth and instance
  ids, and the pixels of the facade boards with their board-atlas coordinates;
* the caller samples the wall atlas and the ground window with ``cv2.remap`` at those
  coordinates (SIMD: several times faster than a scalar loop);
* :func:`finish_frame` -- the sampled wall columns transposed into the image, the ground
  under the walls, lit, and the boards, sampled here with
  OpenCV's own bilinear arithmetic (since OpenCV 4.11: the fraction in float32,
  ``v = p0 + a * (p1 - p0)`` as a multiply-add, fused where the machine has FMA, rounded
  half to even), so the pixels equal the numpy reference's (``tests/render/test_kernels.py``
  pins both paths, and the sampler alone against ``cv2.remap`` on random maps).

Import this module only through :func:`urban_gym.render.kernels.compiled`.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir as llvmir
from numba.core import types
from numba.extending import intrinsic

from urban_gym.render.kernels.columns import (
    position_walls,
    run_params,
    sign_points,
    wall_candidates,
    wall_hits,
)

_JIT: dict[str, Any] = {"cache": True, "nogil": True}  # numba.njit keyword arguments
#: passes of a few microseconds keep the GIL (see ``kernels.blades._HOLD``)
_HOLD: dict[str, Any] = {"cache": True, "nogil": False}
#: 1.5 * 2**23: ``(v + M) - M`` is ``v`` rounded half to even, in float32, for |v| < 2**22
_ROUND = np.float32(12582912.0)


@intrinsic
def _muladd(typingctx, a, b, c):
    """``a * b + c`` in float32, fused into one rounding where the machine has FMA
    (LLVM's ``fmuladd``), as OpenCV's ``v_fma`` is on the same machine.
    """
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        f32 = llvmir.FloatType()
        fnty = llvmir.FunctionType(f32, [f32, f32, f32])
        fn = builder.module.declare_intrinsic("llvm.fmuladd", [f32], fnty)
        return builder.call(fn, args)

    return sig, codegen


@numba.njit(inline="always")
def _blend(p00, p01, p10, p11, ax, ay):
    """OpenCV's bilinear value of one channel from four uint8 levels and the fractions
    ``ax``, ``ay`` (float32): along x, then along y, rounded half to even.
    """
    f00 = np.float32(p00)
    f10 = np.float32(p10)
    v0 = _muladd(ax, np.float32(p01) - f00, f00)
    v1 = _muladd(ax, np.float32(p11) - f10, f10)
    v = _muladd(ay, v1 - v0, v0)
    return np.uint8(np.int32((v + _ROUND) - _ROUND))


@numba.njit(inline="always")
def _split(v, n):
    """The taps ``i``, ``i + 1`` of continuous position ``v`` (float32) clamped to
    ``[0, n)`` and the fraction (float32).
    """
    i = int(np.floor(v))
    frac = np.float32(v - np.float32(i))
    return min(max(i, 0), n - 1), min(max(i + 1, 0), n - 1), frac


@numba.njit(inline="always")
def sample(src, sx, sy, out, r, c):
    """``out[r, c, :3]``: the bilinear sample of image ``src`` (``(h, w, n)`` uint8, ``n``
    >= 3) at the continuous pixel position ``(sx, sy)`` (float32; pixel ``[i, j]`` centred
    at ``(j, i)``), as ``cv2.remap(..., INTER_LINEAR, borderMode=BORDER_REPLICATE)``.
    """
    x0, x1, ax = _split(sx, src.shape[1])
    y0, y1, ay = _split(sy, src.shape[0])
    for ch in range(3):
        out[r, c, ch] = _blend(
            src[y0, x0, ch], src[y0, x1, ch], src[y1, x0, ch], src[y1, x1, ch], ax, ay
        )


@numba.njit(**_JIT)
def frame_maps(
    scene,
    signs,
    walls,
    segs,
    memo,
    cam,
    a32,
    view,
    x,
    y,
    eye,
    room,
    k_hits,
    band,
    sky,
    run_consts,
    gwin,
    sign_base,
    rgb,
    maps,
    t_flat,
    depth,
    sec,
    ids,
    bounds_out,
    t0_out,
):  # the arguments: see raycast._cast_compiled, which gathers them
    """Everything of a frame but its sampled pixels: returns ``(r_top, r_bot, g_min,
    boards)`` -- the cast band (rows ``r_top .. r_bot``), the first row with ground and
    the board pixels as one ``(4, n)`` float64 array of rows, columns and board-atlas x, y
    (``columns.sign_points``); writes the run boundaries of every column into
    ``bounds_out`` (``(W, k_hits + 3)``) and its nearest wall's distance (inf where none)
    into ``t0_out``. (One array returned: numba hands each returned array to Python
    through a call of its own, dearer than passing a buffer in.) The position's walls
    ``(codes, bearings, known)`` (``columns.position_walls``) are ``memo``'s where known
    (``memo[2]``), else made from the walls ``segs`` near ``(x, y)``.

    Writes: ``maps[0]``, ``maps[1]`` -- the atlas coordinates of the band, laid out
    ``(W, r_bot - r_top)``; ``maps[2]``, ``maps[3]`` -- the ground window's coordinates of
    rows ``g_min ..``, laid out ``(H - g_min, W)`` (far outside the window where no ground
    shows or the ground lies beyond the detail distance: the border colour); the sky rows
    above the band into ``rgb``; ``t_flat``, the horizontal distance of the band laid out
    ``(W, r_bot - r_top)``; ``depth`` and ``ids`` (``(H, W)``, empty when not wanted) --
    as the numpy reference's ``find_hits``, ``_runs``, ``fill`` and ``boards.draw_boards``.

    ``scene``: the walls' ``(bid, style)`` and ``(height, length, uoff, shade)``, each
    the rows of one array (``Scene.frame_packed``); ``signs``: the scene's board table
    ``(seg_start, (u0, u1, z0, z1, ax, ay, w, h), poi)`` (``Scene.sign_packed``); ``cam``: the
    camera's ``(dirx, diry, b, a, relx, column table)``; ``view``: ``(cull, fx, fy, lx, ly,
    rx, ry, ang0, column-table bins a radian)``; ``band``: cast only the rows between the
    highest wall top and the lowest wall base (a panorama outside buildings); ``gwin``: the ground window's ``(x0, y1,
    1 / metres per pixel, detail distance)`` (``fill.ground_maps``, same arithmetic).
    """
    walls_i, walls_f = scene
    bid, style = walls_i[0], walls_i[1]
    hgt, length, uoff, shade = walls_f[0], walls_f[1], walls_f[2], walls_f[3]
    seg_start, sf, spoi = signs
    dirx, diry, b, a, relx, lut = cam
    n_w, n_h = len(b), len(a)
    codes, bearings, known = memo
    if not known:
        codes, bearings = position_walls(walls, segs, bid, x, y, room)
    col, rank, gseg, t, u, h_inner, bounds = _hits(
        walls,
        codes,
        bearings,
        hgt,
        length,
        x,
        y,
        view,
        room,
        (relx, lut),
        dirx,
        diry,
        b,
        a,
        eye,
        k_hits,
    )
    want_ids = ids.shape[0] > 0
    p_run, d_run, s_run, t_run, id_run = run_params(
        col,
        rank,
        gseg,
        t,
        u,
        h_inner,
        style,
        uoff,
        shade,
        bid,
        b,
        n_w,
        k_hits,
        eye,
        room,
        want_ids,
        run_consts,
    )
    t0 = t0_out
    t0[:] = np.inf
    for h in range(len(col)):
        if rank[h] == 0:
            t0[col[h]] = t[h]
    r_top, r_bot, g_min = 0, n_h, n_h
    for c in range(n_w):
        g_min = min(g_min, bounds[c, k_hits + 1])
    if band and n_w:
        r_top, r_bot = n_h, 0
        for c in range(n_w):
            r_top = min(r_top, bounds[c, 1])
            r_bot = max(r_bot, bounds[c, k_hits + 1])
    _band(bounds, p_run, d_run, s_run, t_run, a32, r_top, r_bot, maps, t_flat)
    for r in range(r_top):
        for c in range(n_w):
            for ch in range(4):
                rgb[r, c, ch] = sky[r, ch]
    if g_min < n_h:
        _ground_maps(bounds, k_hits, dirx, diry, b, a, eye, gwin, x, y, g_min, maps)
    if depth.shape[0] > 0:
        _depth(bounds, k_hits, b, a, eye, r_top, r_bot, g_min, t_flat, sec, depth)
    if want_ids:
        _ids(bounds, id_run, ids)
    rr, cc, bx, by, poi = sign_points(
        gseg,
        h_inner,
        u,
        t,
        col,
        rank,
        bounds,
        seg_start,
        sf[0],
        sf[1],
        sf[2],
        sf[3],
        sf[4],
        sf[5],
        sf[6],
        sf[7],
        spoi,
        b,
        a,
        eye,
        k_hits,
    )
    if want_ids:
        for i in range(len(rr)):
            ids[rr[i], cc[i]] = sign_base + poi[i]
    bounds_out[:, :] = bounds
    return r_top, r_bot, g_min, _pack(rr, cc, bx, by)


@numba.njit(**_JIT)
def _pack(rr, cc, bx, by):
    """The board pixels ``(rows, columns, x, y)`` as the rows of one ``(4, n)`` float64
    array (exact: rows and columns are small integers; see :func:`frame_maps`).
    """
    out = np.empty((4, len(rr)), np.float64)
    for i in range(len(rr)):
        out[0, i], out[1, i], out[2, i], out[3, i] = rr[i], cc[i], bx[i], by[i]
    return out


@numba.njit(**_JIT)
def _hits(
    walls, codes, bearings, hgt, length, x, y, view, room, cols, dirx, diry, b, a, eye, k_hits
):
    """The kept wall hits of the frame (``raycast.find_hits``): ``(col, rank, wall, t, u,
    inner, bounds)`` -- ``u`` metres along the wall as the texture runs (from its far end
    for a wall seen from inside). ``codes``, ``bearings``: the position's walls
    (``columns.position_walls``); ``cols``: the camera's ``relx`` and its column table.
    """
    c_segs, ax, ay, bx, by, inner, i0, cnt = wall_candidates(
        walls,
        codes,
        bearings,
        x,
        y,
        view[0] != 0.0,
        view[1],
        view[2],
        view[3],
        view[4],
        view[5],
        view[6],
        room,
        view[7],
        cols[0],
        cols[1],
        view[8],
    )
    col, rank, pseg, t, s, bounds = wall_hits(
        ax, ay, bx, by, hgt[c_segs], i0, cnt, dirx, diry, b, a, eye, k_hits
    )
    gseg = c_segs[pseg]
    u = s * length[gseg]
    h_inner = inner[pseg]
    for h in range(len(u)):
        if h_inner[h]:
            u[h] = length[gseg[h]] - u[h]
    return col, rank, gseg, t, u, h_inner, bounds


@numba.njit(**_JIT)
def _ids(bounds, id_run, ids):
    """The instance id of every pixel from its run's (``(H, W)`` int32), row by row."""
    n_w, n_r = bounds.shape[0], bounds.shape[1] - 1
    run = np.zeros(n_w, np.int64)  # each column's run at the current row
    for r in range(ids.shape[0]):
        for c in range(n_w):
            j = run[c]
            while bounds[c, j + 1] <= r:
                j += 1
            run[c] = j
            ids[r, c] = id_run[c * n_r + j]


@numba.njit(**_JIT)
def _band(bounds, p_run, d_run, s_run, t_run, a32, r_top, r_bot, maps, t_flat):
    """The atlas coordinates ``x = P - D * a[r]``, ``y = S`` of the rows ``r_top ..
    r_bot`` of every column's runs into ``maps[0]``, ``maps[1]`` and their horizontal
    distance into ``t_flat``, each laid out ``(W, r_bot - r_top)``: column by column, as a
    column reads the atlas along its rows (sampled so, the atlas stays in cache).
    """
    n_w, n_r = bounds.shape[0], bounds.shape[1] - 1
    hb = r_bot - r_top
    mx, my = maps[0], maps[1]
    for c in range(n_w):
        for j in range(n_r):
            run = c * n_r + j
            p, d, sy, tr = p_run[run], d_run[run], s_run[run], t_run[run]
            for r in range(max(bounds[c, j], r_top), min(bounds[c, j + 1], r_bot)):
                i = c * hb + r - r_top
                mx[i] = p - d * a32[r]
                my[i] = sy
                t_flat[i] = tr


#: a ground-window coordinate outside any window: the border colour
_OUTSIDE = np.float32(-1e6)


@numba.njit(**_JIT)
def _ground_maps(bounds, k_hits, dirx, diry, b, a, eye, gwin, x, y, g_min, maps):
    """The ground window's coordinates of the rows ``g_min ..`` into ``maps[2]``,
    ``maps[3]`` (``(H - g_min, W)``): where the ray meets the ground, or outside the
    window where the ground lies beyond the detail distance (m, times the largest ``b``)
    or a wall covers it.
    """
    n_w, n_h = len(b), len(a)
    gx, gy = maps[2], maps[3]
    inv = gwin[2]
    far = np.float32(gwin[3] * b.max())
    cx = np.float32((x - gwin[0]) * inv - 0.5)
    cy = np.float32((gwin[1] - y) * inv - 0.5)
    kx = np.empty(n_w, np.float32)
    ky = np.empty(n_w, np.float32)
    for c in range(n_w):
        kx[c] = np.float32(dirx[c] / b[c] * inv)
        ky[c] = np.float32(-diry[c] / b[c] * inv)
    for r in range(g_min, n_h):  # row by row: the maps are laid out so
        gr = np.float32(eye / -a[r])
        i = (r - g_min) * n_w
        for c in range(n_w):
            if r < bounds[c, k_hits + 1] or gr > far:
                gx[i + c] = _OUTSIDE
                gy[i + c] = _OUTSIDE
            else:
                gx[i + c] = gr * kx[c] + cx
                gy[i + c] = gr * ky[c] + cy


@numba.njit(**_JIT)
def _depth(bounds, k_hits, b, a, eye, r_top, r_bot, g_min, t_flat, sec, depth):
    """Metres along the ray per pixel: the band's horizontal distance times the secant,
    the ground's from row ``g_min`` (the highest ground row) down where it shows, inf
    elsewhere (sky).
    """
    n_w, n_h = len(b), len(a)
    hb = r_bot - r_top
    b32 = np.empty(n_w, np.float32)
    for c in range(n_w):
        b32[c] = np.float32(b[c])
    for r in range(n_h):  # row by row, as the image is laid out
        # rows from the highest ground row down look below the horizon (a < 0)
        gd = np.float32(eye / -a[r]) if r >= g_min else np.float32(np.inf)
        for c in range(n_w):
            if r >= bounds[c, k_hits + 1]:
                depth[r, c] = gd / b32[c] * sec[r, c]
            elif r_top <= r < r_bot:
                depth[r, c] = t_flat[c * hb + r - r_top] * sec[r, c]
            else:
                depth[r, c] = np.inf


@numba.njit(**_JIT)
def finish_frame(rgb, cols, r_top, ground_px, bounds, k_hits, g_min, lut, lit, sign_atlas, boards):
    """The frame's pixels from the sampled maps: the band's sampled columns ``cols``
    (``(W, hb, 4)``, column by column as ``frame_maps`` lays them out) transposed into rows
    ``r_top ..`` of ``rgb`` (``cv2.transpose``'s copy); the ground under the walls of every
    column from ``ground_px`` (the sampled ground window of rows ``g_min ..``, ``(H - g_min,
    W, 4)``), lit by ``lut`` (``(3, 256)``) where ``lit``; then the board pixels ``boards``
    (``(rows, columns, x, y)``) sampled from ``sign_atlas`` as ``boards.sample_points``
    samples them. One pass for what took a ``cv2.transpose`` and this: one release of the
    GIL fewer.
    """
    _columns_and_ground(rgb, cols, r_top, ground_px, bounds, k_hits, g_min, lut, lit)
    rr, cc, bx, by = boards
    for i in range(len(rr)):  # the positions as boards.sample_points maps them: float32
        sample(sign_atlas, np.float32(bx[i]), np.float32(by[i]), rgb, rr[i], cc[i])


@numba.njit(**_JIT)
def finish_packed(rgb, cols, r_top, ground_px, bounds, k_hits, g_min, lut, lit, atlas, boards):
    """:func:`finish_frame` with the board pixels as ``frame_maps`` returns them: one
    ``(4, n)`` array of rows, columns and atlas x, y.
    """
    _columns_and_ground(rgb, cols, r_top, ground_px, bounds, k_hits, g_min, lut, lit)
    for i in range(boards.shape[1]):  # the positions as boards.sample_points maps them
        r, c = int(boards[0, i]), int(boards[1, i])
        sample(atlas, np.float32(boards[2, i]), np.float32(boards[3, i]), rgb, r, c)


@numba.njit(**_JIT)
def _columns_and_ground(rgb, cols, r_top, ground_px, bounds, k_hits, g_min, lut, lit):
    """The sampled columns and the (lit) ground of :func:`finish_frame`."""
    n_w, n_h = rgb.shape[1], rgb.shape[0]
    hb = cols.shape[1] if cols.shape[0] == n_w else 0
    for i in range(hb):  # row by row of the image
        r = r_top + i
        for c in range(n_w):
            for ch in range(4):
                rgb[r, c, ch] = cols[c, i, ch]
    for r in range(g_min, n_h):  # row by row, as the image is laid out
        for c in range(n_w):
            if r >= bounds[c, k_hits + 1]:
                for ch in range(3):
                    v = ground_px[r - g_min, c, ch]
                    rgb[r, c, ch] = lut[ch, v] if lit else v


@numba.njit(**_HOLD)
def haze_weights(depth, scale):
    """``np.minimum(depth, 1e4) * scale`` in float32 (NaN stays NaN, as ``np.minimum``
    keeps it): the exponent of the weather's haze, whose ``cv2.exp`` weighs the image
    against the haze colour. Keeps the GIL (a few microseconds).
    """
    n_h, n_w = depth.shape
    out = np.empty((n_h, n_w), np.float32)
    lim = np.float32(1e4)
    k = np.float32(scale)
    for r in range(n_h):
        for c in range(n_w):
            d = depth[r, c]
            out[r, c] = (lim if d > lim else d) * k
    return out


@numba.njit(**_HOLD)
def one_minus(f):
    """``1.0 - f`` in float32 (the haze colour's weight). Keeps the GIL."""
    n_h, n_w = f.shape
    out = np.empty((n_h, n_w), np.float32)
    one = np.float32(1.0)
    for r in range(n_h):
        for c in range(n_w):
            out[r, c] = one - f[r, c]
    return out


@numba.njit(**_HOLD)
def rgba_to_rgb(rgba):
    """A new ``(H, W, 3)`` image of the colour channels of ``rgba`` (``cv2.cvtColor``'s
    ``COLOR_RGBA2RGB``: a copy). Keeps the GIL.
    """
    n_h, n_w = rgba.shape[0], rgba.shape[1]
    out = np.empty((n_h, n_w, 3), np.uint8)
    for r in range(n_h):
        for c in range(n_w):
            for ch in range(3):
                out[r, c, ch] = rgba[r, c, ch]
    return out
