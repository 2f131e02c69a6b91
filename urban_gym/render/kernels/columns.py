"""Compiled column passes of the ray caster (numba): wall hits per column, and the
per-pixel fill of walls, sky and ground with depth and instance ids.

Each kernel computes what the numpy reference in :mod:`urban_gym.render.raycast` computes,
with the same floating-point operations in the same order and types: the kept hits,
their run boundaries, the texture coordinates and ids are equal, so the images, depth
and ids that ``cv2.remap`` and :mod:`urban_gym.render.fill` make of them are equal too
(``tests/render/test_kernels.py`` pins both paths).

Import this module only through :func:`urban_gym.render.kernels.compiled`, which falls back
to the numpy path where numba is missing or cannot compile.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

_JIT: dict[str, Any] = {"cache": True, "nogil": True}  # numba.njit keyword arguments


@numba.njit(**_JIT)
def _count_above(a: np.ndarray, v: float) -> int:
    """Rows with ``a[r] > v`` (``a`` decreasing)."""
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] > v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(**_JIT)
def _count_at_or_above(a: np.ndarray, v: float) -> int:
    """Rows with ``a[r] >= v`` (``a`` decreasing)."""
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] >= v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(**_JIT)
def _pairs(ax, ay, bx, by, i0, cnt, dirx, diry):
    """Every (column, wall) intersection in front of the eye, grouped by column in wall
    order: ``(start of each column, end, t, s, sort key, wall)``.
    """
    n_w = len(dirx)
    per_col = np.zeros(n_w + 1, np.int64)
    for k in range(len(ax)):
        c = i0[k] % n_w  # the wall's columns, wrapping round a panorama
        for _ in range(cnt[k]):
            per_col[c + 1] += 1
            c = c + 1 if c + 1 < n_w else 0
    for c in range(n_w):
        per_col[c + 1] += per_col[c]
    tot = per_col[n_w]
    end = per_col[:n_w].copy()
    bt = np.empty(tot, np.float64)
    bs = np.empty(tot, np.float64)
    bk = np.empty(tot, np.float64)
    bseg = np.empty(tot, np.int64)
    for k in range(len(ax)):
        dxs = bx[k] - ax[k]
        dys = by[k] - ay[k]
        c_next = i0[k] % n_w
        for _ in range(cnt[k]):
            c = c_next
            c_next = c + 1 if c + 1 < n_w else 0
            den = dirx[c] * dys - diry[c] * dxs
            t = (ax[k] * dys - ay[k] * dxs) / den if den != 0.0 else np.nan
            if math.isfinite(t) and t > 0.05:
                p = end[c]
                bt[p] = t
                bs[p] = min(max((ax[k] * diry[c] - ay[k] * dirx[c]) / den, 0.0), 1.0)
                bk[p] = c * 1e5 + min(t, 9.9e4)
                bseg[p] = k
                end[c] = p + 1
    return per_col, end, bt, bs, bk, bseg


@numba.njit(**_JIT)
def _keep(per_col, end, bt, bk, bseg, hgt, eye, k_hits):
    """Per column, the hits by distance (a stable sort by key) each taller than all
    nearer ones, at most ``k_hits``: ``(order, kept?, rank, top elevation)``.

    A hit whose ``v = (height - eye) / t`` lies below the tallest one's by more than
    ``1e-12 * (1 + v**2)`` (the larger ``v**2`` of the two) is not kept without its
    ``atan``: the true arctangents then differ by more than 1e-12 (mean value theorem),
    far beyond libm's error (under an ulp, 2.3e-16 here), so its computed top is lower,
    and its key, a rounded sum, no higher -- the hits kept are those the ``atan`` of every
    hit keeps, bit for bit, with one ``atan`` per kept hit instead of one per hit.
    """
    tot = len(bt)
    keep = np.zeros(tot, np.bool_)
    krank = np.zeros(tot, np.int64)
    ktop = np.zeros(tot, np.float64)
    order = np.empty(tot, np.int64)
    for c in range(len(end)):
        lo = per_col[c]
        for p in range(lo, end[c]):  # insertion sort: stable, short columns
            q = p
            while q > lo and bk[order[q - 1]] > bk[p]:
                order[q] = order[q - 1]
                q -= 1
            order[q] = p
        best = -np.inf
        v_best = 0.0
        rank = 0
        for q in range(lo, end[c]):
            if rank == k_hits:
                break  # nothing farther is kept
            v = (hgt[bseg[order[q]]] - eye) / bt[order[q]]
            if rank > 0 and v < v_best - 1e-12 * (1.0 + max(v * v, v_best * v_best)):
                continue  # lower than the tallest nearer hit, provably (see above)
            top = math.atan(v)
            key = c * 4.0 + top + 2.0
            if key > best:
                best = key
                v_best = v
                keep[q] = True
                krank[q] = rank
                ktop[q] = top
                rank += 1
    return order, keep, krank, ktop


@numba.njit(**_JIT)
def wall_hits(ax, ay, bx, by, hgt, i0, cnt, dirx, diry, b, a, eye, k_hits):
    """Hits of every column's ray with the candidate walls (coordinates relative to the
    eye), sorted by distance, each taller than all nearer ones, at most ``k_hits`` per
    column: ``(col, rank, wall, t, s, bounds)`` as :func:`~urban_gym.render.raycast.find_hits`.
    """
    n_w = len(dirx)
    per_col, end, bt, bs, bk, bseg = _pairs(ax, ay, bx, by, i0, cnt, dirx, diry)
    order, keep, krank, ktop = _keep(per_col, end, bt, bk, bseg, hgt, eye, k_hits)
    n_out = int(keep.sum())
    col = np.empty(n_out, np.int64)
    rank = np.empty(n_out, np.int64)
    seg = np.empty(n_out, np.int64)
    t_o = np.empty(n_out, np.float64)
    s_o = np.empty(n_out, np.float64)
    nb = np.full((n_w, k_hits), len(a) + 1, np.int64)
    t0 = np.full(n_w, np.inf)
    i = 0
    for c in range(n_w):
        for q in range(per_col[c], end[c]):
            if keep[q]:
                p = order[q]
                col[i], rank[i], seg[i], t_o[i], s_o[i] = c, krank[q], bseg[p], bt[p], bs[p]
                if krank[q] == 0:
                    t0[c] = bt[p]
                nb[c, krank[q]] = _count_above(a, math.tan(ktop[q]) / b[c])
                i += 1
    return col, rank, seg, t_o, s_o, _bounds(nb, t0, a, b, eye)


@numba.njit(**_JIT)
def _bounds(nb, t0, a, b, eye):
    """Run boundaries per column ``[0, n_{K-1}, ..., n_0, g, H]`` from the rows above
    each kept hit's top (``nb``) and the nearest hit's distance ``t0``.
    """
    n_w, k_hits = nb.shape
    out = np.empty((n_w, k_hits + 3), np.int64)
    for c in range(n_w):
        g = _count_at_or_above(a, -eye / (t0[c] * b[c]))
        run = len(a) + 1
        out[c, 0] = 0
        for r in range(k_hits):
            run = min(run, nb[c, r])
            out[c, k_hits - r] = min(run, g)
        out[c, k_hits + 1] = g
        out[c, k_hits + 2] = len(a)
    return out


@numba.njit(**_JIT)
def run_params(
    col, rank, seg, t, u, inner, style, uoff, shade, bid, b, n_w, n_k, eye, room, want_ids, consts
):
    """The texture parameters of every run (``n_w * (n_k + 2)``: sky, hits ``K-1 .. 0``,
    ground per column) from the wall hits, as :func:`~urban_gym.render.raycast._runs_numpy`
    (same float64 arithmetic, stored as float32): ``(P, D, S, t_run, id_run)``; ``id_run``
    is empty unless ``want_ids``; ``room`` is -1 outside a building. ``consts``: facade top
    (m), facade pixels per metre, style height, style stride, style period (m), the inner
    style, sky column, sky scale, ceiling column, ground id, building id base.
    """
    max_z, ppm, style_h, stride, period, n_styles = (
        consts[0],
        consts[1],
        consts[2],
        consts[3],
        consts[4],
        consts[5],
    )
    sky_x0, sky_scale, ceil_x0 = consts[6], consts[7], consts[8]
    ground_id, building_base = np.int32(consts[9]), np.int32(consts[10])
    n_r = n_k + 2
    n = n_w * n_r
    p_run = np.zeros(n, np.float32)
    d_run = np.zeros(n, np.float32)
    s_run = np.zeros(n, np.float32)
    t_run = np.full(n, np.inf, np.float32)
    id_run = np.zeros(n if want_ids else 0, np.int32)
    p0 = np.float64(np.float32((max_z - eye) * ppm - 0.5))
    for h in range(len(col)):
        c, g = col[h], seg[h]
        j = c * n_r + (n_k - rank[h])
        st = n_styles if inner[h] else np.float64(style[g])
        p_run[j] = p0 + shade[g] * style_h
        d_run[j] = t[h] * b[c] * ppm
        s_run[j] = st * stride + ((uoff[g] + u[h]) % period) * ppm + 0.5
        t_run[j] = t[h]
        if want_ids:
            id_run[j] = building_base + bid[g]
    for c in range(n_w):
        if room < 0:
            p_run[c * n_r] = sky_x0 - 0.5
            d_run[c * n_r] = -sky_scale * b[c]
        else:
            p_run[c * n_r] = ceil_x0
        if want_ids:
            id_run[c * n_r + n_k + 1] = ground_id
            if room >= 0:
                id_run[c * n_r] = building_base + room
    return p_run, d_run, s_run, t_run, id_run


@numba.njit(**_JIT)
def cell_candidates(
    grid_start, grid_segs, i_lo, i_hi, j_lo, j_hi, gnx, ax, ay, bx, by, cx, cy, limit
):
    """The distinct walls listed in grid cells ``[i_lo, i_hi] x [j_lo, j_hi]`` (row width
    ``gnx``) whose nearest point lies within ``limit`` metres of ``(cx, cy)``, in index
    order (int64), as ``Scene.candidate_data``'s numpy path.
    """
    n_segs = len(ax)
    seen = np.zeros(n_segs, np.bool_)
    for j in range(j_lo, j_hi + 1):
        for i in range(i_lo, i_hi + 1):
            cell = j * gnx + i
            for p in range(grid_start[cell], grid_start[cell + 1]):
                seen[grid_segs[p]] = True
    out = np.empty(n_segs, np.int64)
    m = 0
    for s in range(n_segs):
        if not seen[s]:
            continue
        dx, dy = bx[s] - ax[s], by[s] - ay[s]
        ll = dx * dx + dy * dy
        t = ((cx - ax[s]) * dx + (cy - ay[s]) * dy) / (ll if ll > 0 else 1.0)
        t = min(max(t, 0.0), 1.0)
        if math.hypot(ax[s] + t * dx - cx, ay[s] + t * dy - cy) <= limit:
            out[m] = s
            m += 1
    return out[:m].copy()


_TWO_PI = 2 * math.pi


@numba.njit(inline="always")
def _mod_2pi(v):
    """``v % (2 pi)`` as Python and numpy compute it (the fast cases first)."""
    if 0.0 < v < _TWO_PI:
        return v
    if -_TWO_PI < v < 0.0:
        return v + _TWO_PI  # fmod(v, 2 pi) is v itself, then the divisor's sign
    return v % _TWO_PI


@numba.njit(inline="always")
def _search(relx, lut, inv_step, v, right):
    """``np.searchsorted(relx, v, side)`` (``"right"`` where ``right``), started from the
    camera's table of answers at the bin of ``v`` (``lut``, ``inv_step`` bins a radian:
    :meth:`~urban_gym.render.raycast.ColumnCamera.column_lut`) and moved until it holds:
    a step or two instead of a binary search's unpredictable branches.
    """
    b = min(max(int(v * inv_step), 0), len(lut) - 1)
    i = lut[b]
    n = len(relx)
    if right:
        while i > 0 and relx[i - 1] > v:
            i -= 1
        while i < n and relx[i] <= v:
            i += 1
    else:
        while i > 0 and relx[i - 1] >= v:
            i -= 1
        while i < n and relx[i] < v:
            i += 1
    return i


@numba.njit(**_JIT)
def position_walls(walls, segs, bid, x, y, room):
    """The yaw-free part of :func:`wall_candidates` at ``(x, y)``: of the walls ``segs``
    (index order), those facing the viewer, as their index ``g``, and those of building
    ``room`` (>= 0) seen from inside, as ``-g - 1``; and their bearing table (``2 * m``,
    each wall's ``atan2`` of its two ends from the eye, NaN until a view first needs it:
    :func:`wall_candidates` fills it in).
    """
    n = len(segs)
    codes = np.empty(n, np.int64)
    m = 0
    for k in range(n):
        g = segs[k]
        if walls[g, 4] * (x - walls[g, 0]) + walls[g, 5] * (y - walls[g, 1]) > 1e-9:
            codes[m] = g
            m += 1
        elif room >= 0 and bid[g] == room:
            codes[m] = -g - 1
            m += 1
    return codes[:m].copy(), np.full(2 * m, np.nan)


@numba.njit(**_JIT)
def wall_candidates(
    walls, codes, bearings, x, y, cull, fx, fy, lx, ly, rx, ry, room, ang0, relx, lut, inv_step
):
    """The walls facing the viewer at ``(x, y)`` -- when ``cull`` (a view at most 120
    degrees wide, middle ``(fx, fy)``, edges ``(lx, ly)`` and ``(rx, ry)``) ahead of it and
    not beyond an edge -- or walls of building ``room`` (>= 0) seen from inside, as
    :func:`~urban_gym.render.raycast.wall_candidates`: ``(kept segs, ax, ay, bx, by
    relative to the eye, inner?, first column, columns)``. ``codes`` and ``bearings``:
    :func:`position_walls` at ``(x, y, room)`` (its rows ``ax, ay, bx, by, nx, ny`` in
    ``walls``); the bearings a view needs are computed once and kept there, so a turn in
    place computes none (threads sharing a table may both fill one in: the same value).
    ``lut`` and ``inv_step``: the camera's column table
    (:meth:`~urban_gym.render.raycast.ColumnCamera.column_lut`).
    """
    n = len(codes)
    take = np.empty(n, np.int64)  # kept walls: their rows in codes
    m = 0
    for k in range(n):
        g = codes[k]
        if g >= 0 and cull and room < 0:
            pax, pay = walls[g, 0] - x, walls[g, 1] - y
            pbx, pby = walls[g, 2] - x, walls[g, 3] - y
            if not (pax * fx + pay * fy > 0 or pbx * fx + pby * fy > 0):
                continue  # behind the eye
            if lx * pay - ly * pax > 0 and lx * pby - ly * pbx > 0:
                continue  # beyond the left edge
            if rx * pay - ry * pax < 0 and rx * pby - ry * pbx < 0:
                continue  # beyond the right edge
        take[m] = k
        m += 1
    o_segs = np.empty(m, np.int64)
    o_ax = np.empty(m, np.float64)
    o_ay = np.empty(m, np.float64)
    o_bx = np.empty(m, np.float64)
    o_by = np.empty(m, np.float64)
    o_in = np.empty(m, np.bool_)
    i0 = np.empty(m, np.int64)
    cnt = np.empty(m, np.int64)
    for j in range(m):
        k = take[j]
        g = codes[k]
        inner = g < 0
        if inner:
            g = -g - 1
        ax, ay = walls[g, 0] - x, walls[g, 1] - y
        bx, by = walls[g, 2] - x, walls[g, 3] - y
        ba = bearings[2 * k]
        if math.isnan(ba):
            ba = bearings[2 * k] = math.atan2(ax, ay)
        bb = bearings[2 * k + 1]
        if math.isnan(bb):
            bb = bearings[2 * k + 1] = math.atan2(bx, by)
            if k + 1 < n and bx != 0.0 and by != 0.0 and math.isnan(bearings[2 * k + 2]):
                g2 = codes[k + 1] if codes[k + 1] >= 0 else -codes[k + 1] - 1
                if walls[g2, 0] - x == bx and walls[g2, 1] - y == by:
                    # the next wall starts where this one ends (a building's outline):
                    # the same (nonzero, so bit-equal) arguments, the same bearing
                    bearings[2 * k + 2] = bb
        if inner:
            start, span = bb, _mod_2pi(ba - bb)
        else:
            start, span = ba, _mod_2pi(bb - ba)
        rs = _mod_2pi(start - ang0)
        lo = _search(relx, lut, inv_step, rs, False)
        o_segs[j], o_ax[j], o_ay[j], o_bx[j], o_by[j] = g, ax, ay, bx, by
        o_in[j] = inner
        i0[j] = lo
        cnt[j] = max(_search(relx, lut, inv_step, rs + span, True) - lo, 0)
    return o_segs, o_ax, o_ay, o_bx, o_by, o_in, i0, cnt


@numba.njit(**_JIT)
def sign_points(
    seg,
    inner,
    u,
    t,
    col,
    rank,
    bounds,
    st,
    su0,
    su1,
    sz0,
    sz1,
    sax,
    say,
    sw,
    sh,
    spoi,
    b,
    a,
    eye,
    k_hits,
):  # the arguments: the kept hits, the scene's sign table, the camera's b and a
    """The pixels of the facade boards on the kept wall hits, where those hits show, in
    order (hit by hit, each wall's boards in order, rows down): ``(rows, columns, atlas x,
    atlas y, POI)`` -- what ``boards.sign_points`` computes in numpy.
    """
    n = 0
    for j in range(len(seg)):  # count first: the outputs are allocated once
        if inner[j]:
            continue
        for s in range(st[seg[j]], st[seg[j] + 1]):
            if u[j] >= su0[s] and u[j] <= su1[s]:
                c = col[j]
                tb = t[j] * b[c]
                jv = k_hits - rank[j]
                r0 = max(_count_above(a, (sz1[s] - eye) / tb), bounds[c, jv])
                r1 = min(_count_at_or_above(a, (sz0[s] - eye) / tb), bounds[c, jv + 1])
                n += max(r1 - r0, 0)
    rr = np.empty(n, np.int64)
    cc = np.empty(n, np.int64)
    sx = np.empty(n, np.float64)
    sy = np.empty(n, np.float64)
    poi = np.empty(n, np.int64)
    i = 0
    for j in range(len(seg)):
        if inner[j]:
            continue
        for s in range(st[seg[j]], st[seg[j] + 1]):
            if not (u[j] >= su0[s] and u[j] <= su1[s]):
                continue
            c = col[j]
            tb = t[j] * b[c]
            jv = k_hits - rank[j]
            r0 = max(_count_above(a, (sz1[s] - eye) / tb), bounds[c, jv])
            r1 = min(_count_at_or_above(a, (sz0[s] - eye) / tb), bounds[c, jv + 1])
            x = sax[s] + (u[j] - su0[s]) / (su1[s] - su0[s]) * sw[s] - 0.5
            x = min(max(x, sax[s]), sax[s] + sw[s] - 1)
            for r in range(r0, r1):
                z = eye + tb * a[r]
                y = say[s] + (sz1[s] - z) / (sz1[s] - sz0[s]) * sh[s] - 0.5
                rr[i], cc[i], sx[i] = r, c, x
                sy[i] = min(max(y, say[s]), say[s] + sh[s] - 1)
                poi[i] = spoi[s]
                i += 1
    return rr, cc, sx, sy, poi
