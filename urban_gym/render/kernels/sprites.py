"""Compiled planning of the sprite pass (numba): which billboards of a frame to draw,
where, and in which order -- :func:`urban_gym.render.sprites.draw_sprites` without the
resizing and blitting, with the same arithmetic as its numpy reference
(``_sprite_items``, ``_sprite_boxes`` and the occlusion test).

Import this module only through :func:`urban_gym.render.kernels.compiled`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_JIT = {"cache": True, "nogil": True}


@numba.njit(**_JIT)
def _gather(ox, oy, ow, oz0, oh, cand, sx, sy, sw, sh, px, py, x, y, range_m, persp, fx, fy):
    """The items in range (and for a perspective view, not more than a metre behind the
    eye): objects ``cand`` (min distance 0.4 m), free signs (0.4 m), pedestrians (0.3 m,
    0.6 m wide, 1.75 m tall), in that order: ``(dx, dy, dist, width, z0, z1, src, idx)``.
    """
    n = len(cand) + len(sx) + len(px)
    dx = np.empty(n)
    dy = np.empty(n)
    dist = np.empty(n)
    wid = np.empty(n)
    z0 = np.empty(n)
    z1 = np.empty(n)
    src = np.empty(n, np.int64)
    idx = np.empty(n, np.int64)
    m = 0
    for part in range(3):
        cnt = len(cand) if part == 0 else len(sx) if part == 1 else len(px)
        for j in range(cnt):
            if part == 0:
                i = cand[j]
                ax, ay, w, b, h, min_d = ox[i], oy[i], ow[i], oz0[i], oh[i], 0.4
            elif part == 1:
                i = j
                ax, ay, w, b, h, min_d = sx[j], sy[j], sw[j], 0.0, sh[j], 0.4
            else:
                i = j
                ax, ay, w, b, h, min_d = px[j], py[j], 0.6, 0.0, 1.75, 0.3
            ddx, ddy = ax - x, ay - y
            d = math.hypot(ddx, ddy)
            if not (d < range_m and d > min_d):
                continue
            if persp and not (ddx * fx + ddy * fy > -1.0 - w / 2):
                continue
            dx[m], dy[m], dist[m], wid[m], z0[m], z1[m] = ddx, ddy, d, w, b, b + h
            src[m], idx[m] = part, i
            m += 1
    return dx[:m], dy[:m], dist[:m], wid[:m], z0[:m], z1[:m], src[:m], idx[:m]


@numba.njit(**_JIT)
def sprite_plan(
    ox,
    oy,
    ow,
    oz0,
    oh,
    cand,
    sx,
    sy,
    sw,
    sh,
    px,
    py,
    x,
    y,
    eye,
    range_m,
    persp,
    yaw,
    fov_deg,
    focal,
    ang0,
    span,
    e_top,
    e_bot,
    w_px,
    h_px,
    b,
    t0,
    n0,
):
    """The billboards to draw, far to near: ``(src, idx, dist, c0, c1, r0, r1)`` of
    each (source 0 object, 1 free sign, 2 pedestrian; its index; its distance; its screen
    box, end exclusive), after dropping those out of view, too small, too large or hidden
    behind the nearest wall of every column they cover (``t0``, ``n0``).
    """
    two_pi = 2 * math.pi
    fx, fy = math.sin(yaw), math.cos(yaw)
    dx, dy, dist, wid, z0, z1, src, idx = _gather(
        ox, oy, ow, oz0, oh, cand, sx, sy, sw, sh, px, py, x, y, range_m, persp, fx, fy
    )
    n = len(dist)
    full = (not persp) and span >= two_pi - 1e-9
    lim = math.radians(min(fov_deg / 2.0 + 5.0, 80.0))
    lim88 = math.radians(88.0)
    ok = np.zeros(n, np.bool_)
    c0s = np.empty(n, np.int64)
    c1s = np.empty(n, np.int64)
    r0s = np.empty(n, np.int64)
    r1s = np.empty(n, np.int64)
    for k in range(n):
        bear = math.atan2(dx[k], dy[k])
        half = math.atan2(wid[k] / 2, dist[k])
        if persp:
            rel = (bear - yaw + math.pi) % two_pi - math.pi
            vis = abs(rel) - half < lim and abs(rel) + half < lim88
            if not vis:
                rel = 0.0
            cl = w_px / 2.0 + focal * math.tan(rel - half)
            cr = w_px / 2.0 + focal * math.tan(rel + half)
            cm = w_px / 2.0 + focal * math.tan(rel)
        else:
            vis = True
            cl = ((bear - half - ang0) % two_pi) / span * w_px
            cr = ((bear + half - ang0) % two_pi) / span * w_px
            cm = ((bear - ang0) % two_pi) / span * w_px
            if cr < cl:
                cr = cr + w_px * (two_pi / span)
        bcol = b[int(min(max(cm, 0.0), w_px - 1.0))]
        at = (z1[k] - eye) / dist[k] / bcol
        ab = (z0[k] - eye) / dist[k] / bcol
        if persp:
            rt, rb = h_px / 2.0 - at, h_px / 2.0 - ab
        else:
            rt = (e_top - math.atan(at)) / (e_top - e_bot) * h_px
            rb = (e_top - math.atan(ab)) / (e_top - e_bot) * h_px
        c0, c1 = int(math.floor(cl)), int(math.ceil(cr))
        r0, r1 = int(math.floor(rt)), int(math.ceil(rb))
        good = vis and r1 - r0 >= 2 and c1 > c0 and r1 > 0 and r0 < h_px
        if not full:
            good = good and c1 > 0 and c0 < w_px
        if good and (c1 - c0 > 2 * w_px or r1 - r0 > 3 * h_px):
            good = False
        if good and (not full or (c0 >= 0 and c1 <= w_px)):
            hidden = True  # behind the nearest wall of every column it covers
            for c in range(max(c0, 0), min(c1, w_px)):
                if not (t0[c] < dist[k] and n0[c] <= max(r0, 0)):
                    hidden = False
                    break
            good = not hidden
        ok[k] = good
        c0s[k], c1s[k], r0s[k], r1s[k] = c0, c1, r0, r1
    keep = np.flatnonzero(ok)
    order = keep[np.argsort(-dist[keep], kind="mergesort")]
    return src[order], idx[order], dist[order], c0s[order], c1s[order], r0s[order], r1s[order]
