"""The compiled blade-sign pass (numba): :func:`blit_blades` draws the projecting signs
near the viewer with the same arithmetic as its numpy reference
:func:`urban_gym.render.blades._draw_numpy` (float64 throughout: the same pixels).

Import this module only through :func:`urban_gym.render.kernels.compiled`.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

_JIT: dict[str, Any] = {"cache": True, "nogil": True}  # numba.njit keyword arguments
#: a pass of a few microseconds keeps the GIL: releasing it hands it to another drawing thread,
#: whose Python then runs on while this one, its pass done, waits to get it back
_HOLD: dict[str, Any] = {"cache": True, "nogil": False}


@numba.njit(**_JIT)
def _first_at_or_below(a, v):
    """The first row ``r`` with ``a[r] <= v`` (``a`` decreasing; ``len(a)`` if none)."""
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] <= v:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(**_JIT)
def _span(ax, ay, bx, by, rel, ang0):
    """The columns ``[lo, hi)`` (``hi`` past ``W`` wraps) whose bearing lies within the
    arc (under half a turn) from the viewer to the segment ``a``-``b``, a degree of
    margin either side.
    """
    two_pi = 2.0 * np.pi
    ra = (np.arctan2(ax, ay) - ang0) % two_pi
    rb = (np.arctan2(bx, by) - ang0) % two_pi
    lo, hi = min(ra, rb), max(ra, rb)
    m = 0.0175
    W = len(rel)
    if hi - lo <= np.pi:  # the arc lo..hi
        return np.searchsorted(rel, lo - m), np.searchsorted(rel, hi + m)
    # the arc hi..2 pi, 0..lo: columns from hi on, then 0..lo after wrapping
    return np.searchsorted(rel, hi - m), W + np.searchsorted(rel, lo + m)


@numba.njit(**_HOLD)
def blade_rows(xy, zz, cand, x, y, eye, range_m, b, a):
    """The rows the blades ``cand`` within ``range_m`` of ``(x, y)`` may cover: ``(near,
    r0, r1)`` -- how many blades are in range, the rows above the highest blade top and
    above the lowest blade bottom (``a`` decreasing), with the arithmetic of
    :func:`urban_gym.render.blades._widen_band` (float64: the same rows).
    """
    bmin = np.inf
    for c in range(len(b)):
        bmin = min(bmin, b[c])
    bm = max(bmin, 1e-6)
    near = 0
    v_hi = 0.0
    v_lo = 0.0
    for i in range(len(cand)):
        k = cand[i]
        mx = 0.5 * (xy[k, 0] + xy[k, 2]) - x
        my = 0.5 * (xy[k, 1] + xy[k, 3]) - y
        if not np.hypot(mx, my) < range_m:
            continue
        near += 1
        ax, ay = xy[k, 0] - x, xy[k, 1] - y
        ex, ey = xy[k, 2] - xy[k, 0], xy[k, 3] - xy[k, 1]
        f = -(ax * ex + ay * ey) / max(ex * ex + ey * ey, 1e-12)
        f = min(max(f, 0.0), 1.0)
        tb = max(np.hypot(ax + f * ex, ay + f * ey), 0.3) * bm
        top, bot = zz[k, 1] - eye, zz[k, 0] - eye
        if top > 0.0:
            v_hi = max(v_hi, top / tb)
        if bot < 0.0:
            v_lo = min(v_lo, bot / tb)
    r0 = 0
    r1 = 0
    for r in range(len(a)):
        if a[r] > v_hi:
            r0 += 1
        if a[r] > v_lo:
            r1 += 1
    return near, r0, r1


@numba.njit(**_JIT)
def blit_blades(
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
):
    """Draw blades ``cand`` within ``range_m`` of ``(x, y)``, far to near, into ``rgb``
    (and ``ids``, ``depth`` where not empty), in front of what ``t_cols`` holds (which
    they update); returns how many columns were drawn. Only the columns whose bearing
    (``rel``, from ``ang0``) lies within the blade's span, with a margin, are tried.
    """
    n = len(cand)
    dist = np.empty(n)
    for i in range(n):
        k = cand[i]
        dist[i] = np.hypot(0.5 * (xy[k, 0] + xy[k, 2]) - x, 0.5 * (xy[k, 1] + xy[k, 3]) - y)
    order = np.argsort(-dist, kind="mergesort")
    W = len(dirx)
    hb = t_cols.shape[1]
    want_ids = ids.size > 0
    want_depth = depth.size > 0
    drawn = 0
    for oi in range(n):
        i = order[oi]
        if not dist[i] < range_m:
            continue
        k = cand[i]
        px, py = xy[k, 0] - x, xy[k, 1] - y
        ex, ey = xy[k, 2] - xy[k, 0], xy[k, 3] - xy[k, 1]
        flip = ex * (y - xy[k, 1]) - ey * (x - xy[k, 0]) > 0.0
        axx, ayy, tw, th = rect[k, 0], rect[k, 1], rect[k, 2], rect[k, 3]
        z0, z1 = zz[k, 0], zz[k, 1]
        iid = base + poi[k]
        c_lo, c_hi = _span(px, py, xy[k, 2] - x, xy[k, 3] - y, rel, ang0)
        for cc in range(c_lo, c_hi):
            c = cc % W
            den = dirx[c] * ey - diry[c] * ex
            if not abs(den) > 1e-12:
                continue
            t = (px * ey - py * ex) / den
            s = (px * diry[c] - py * dirx[c]) / den
            if not (t > 0.3 and s >= 0.0 and s <= 1.0):
                continue
            vt = (z1 - eye) / (t * b[c])
            vb = (z0 - eye) / (t * b[c])
            u = (1.0 - s if flip else s) * tw - 0.5
            u = min(max(u, 0.0), tw - 1.0)
            u0 = min(int(u), tw - 2) if tw > 1 else 0
            fu = u - u0
            u1 = min(u0 + 1, tw - 1)
            any_row = False
            for r in range(_first_at_or_below(a, vt), _first_at_or_below(a, vb)):
                ar = a[r]
                if not (ar <= vt and ar > vb):
                    continue
                inband = r >= r_top and r < r_top + hb
                if inband and not t_cols[c, r - r_top] > t:
                    continue
                v = (vt - ar) / (vt - vb) * th - 0.5
                v = min(max(v, 0.0), th - 1.0)
                v0 = min(int(v), max(th - 2, 0))
                fv = v - v0
                v1 = min(v0 + 1, th - 1)
                for ch in range(3):
                    p00 = np.float64(atlas[ayy + v0, axx + u0, ch])
                    p01 = np.float64(atlas[ayy + v0, axx + u1, ch])
                    p10 = np.float64(atlas[ayy + v1, axx + u0, ch])
                    p11 = np.float64(atlas[ayy + v1, axx + u1, ch])
                    top = p00 * (1 - fu) + p01 * fu
                    bot = p10 * (1 - fu) + p11 * fu
                    rgb[r, c, ch] = np.uint8(np.floor(top * (1 - fv) + bot * fv + 0.5))
                if inband:
                    t_cols[c, r - r_top] = t
                if want_ids:
                    ids[r, c] = iid
                if want_depth:
                    depth[r, c] = t * sec[r, c]
                any_row = True
            if any_row:
                drawn += 1
    return drawn
