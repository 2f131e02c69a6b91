"""The compiled sprite pass (numba): which billboards of a frame to draw, where, and in
which order (:func:`sprite_plan`, with the same arithmetic as its numpy reference
``sprites._sprite_items``, ``_sprite_boxes`` and the occlusion test), and drawing them
sampled straight from their pyramids (:func:`blit_planned`, the same pixels as the
reference's ``cv2.remap`` of each sprite's box).

Import this module only through :func:`urban_gym.render.kernels.compiled`.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from urban_gym.render.kernels.frame import _blend, _split

_JIT: dict[str, Any] = {"cache": True, "nogil": True}  # numba.njit keyword arguments
#: the plan (a few microseconds, by the billboards near the viewer) keeps the GIL: see
#: ``kernels.blades._HOLD``
_HOLD: dict[str, Any] = {"cache": True, "nogil": False}


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


@numba.njit(**_HOLD)
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
        elif full:
            vis = True
            cl = ((bear - half - ang0) % two_pi) / span * w_px
            cr = ((bear + half - ang0) % two_pi) / span * w_px
            cm = ((bear - ang0) % two_pi) / span * w_px
            if cr < cl:
                cr = cr + w_px * (two_pi / span)
        else:  # a window: bearings measured from its middle, so that a sprite across
            # either edge keeps its box (one across the left edge starts at a column < 0)
            vis = True
            rel = (bear - ang0 - span / 2 + math.pi) % two_pi - math.pi + span / 2
            cm = rel / span * w_px
            cl = cm - half / span * w_px
            cr = cm + half / span * w_px
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


@numba.njit(inline="always")
def _tap(src, y0, y1, x0, x1, ax, ay, ch):
    """Channel ``ch`` of ``src`` sampled bilinearly between rows ``y0, y1`` and columns
    ``x0, x1`` with fractions ``ax``, ``ay`` (OpenCV's arithmetic: ``frame._blend``).
    """
    return _blend(src[y0, x0, ch], src[y0, x1, ch], src[y1, x0, ch], src[y1, x1, ch], ax, ay)


@numba.njit(**_JIT)
def _blit_sampled(rgb, ids, depth, sec, t_cols, r_top, src, c0, r0, bw, bh, dist, iid):
    """Paint the RGBA image ``src`` scaled to ``bw`` x ``bh`` pixels with its top-left
    pixel at ``(r0, c0)`` into the RGBA frame ``rgb``: each frame pixel of the box samples
    ``src`` bilinearly at ``((j + 0.5) * w / bw - 0.5, (i + 0.5) * h / bh - 0.5)``
    (``i``, ``j`` its row and column in the box; ``cv2.remap``'s arithmetic, replicated
    border), and is painted where the sample's alpha is over half and the frame's
    horizontal distance (``t_cols``, ``(W, Hb)`` from row ``r_top``; infinite outside) is
    beyond ``dist``; ids and depth (``dist`` times the secant) too where given
    (non-empty). Returns the pixels painted. As ``sprites._blit_sprite`` without glows.
    """
    n_h, n_w = rgb.shape[0], rgb.shape[1]
    lh, lw = src.shape[0], src.shape[1]
    hb = t_cols.shape[1]
    has_ids = ids.shape[0] > 0
    has_depth = depth.shape[0] > 0
    fx, fy = lw / bw, lh / bh
    painted = 0
    for r in range(max(r0, 0), min(r0 + bh, n_h)):
        rr = r - r_top
        y0, y1, ay = _split(np.float32((r - r0 + 0.5) * fy - 0.5), lh)
        for c in range(max(c0, 0), min(c0 + bw, n_w)):
            if 0 <= rr < hb and not t_cols[c, rr] > dist:
                continue  # something nearer in front
            x0, x1, ax = _split(np.float32((c - c0 + 0.5) * fx - 0.5), lw)
            if _tap(src, y0, y1, x0, x1, ax, ay, 3) <= 127:
                continue
            for ch in range(3):
                rgb[r, c, ch] = _tap(src, y0, y1, x0, x1, ax, ay, ch)
            if has_ids:
                ids[r, c] = iid
            if has_depth:
                depth[r, c] = dist * sec[r, c]
            painted += 1
    return painted


#: a lamp's light added to the pixels around it at night (RGB)
_LAMP = (np.float32(200.0), np.float32(170.0), np.float32(90.0))


@numba.njit(**_JIT)
def _glow(rgb, c0, r0, bw, bh, lights, height_m):
    """Add the ``lights`` (rows ``(x frac, y frac, radius m)``) of a sprite ``height_m``
    metres tall drawn at box ``(c0, r0, bw, bh)`` to every frame pixel of the box: a
    Gaussian of the lamp colour, in float32, clipped (as ``sprites._blit_sprite``).
    """
    n_h, n_w = rgb.shape[0], rgb.shape[1]
    for r in range(max(r0, 0), min(r0 + bh, n_h)):
        for c in range(max(c0, 0), min(c0 + bw, n_w)):
            v0, v1, v2 = (
                np.float32(rgb[r, c, 0]),
                np.float32(rgb[r, c, 1]),
                np.float32(rgb[r, c, 2]),
            )
            for g in range(lights.shape[0]):
                rad = max(1.5, lights[g, 2] / height_m * bh)
                dc = (c - c0) - lights[g, 0] * bw
                dr = (r - r0) - (1 - lights[g, 1]) * bh
                e = math.exp(-(dc * dc + dr * dr) / (rad * rad))
                v0 = np.float32(v0 + e * np.float64(_LAMP[0]))
                v1 = np.float32(v1 + e * np.float64(_LAMP[1]))
                v2 = np.float32(v2 + e * np.float64(_LAMP[2]))
            rgb[r, c, 0] = np.uint8(int(min(max(v0, np.float32(0.0)), np.float32(255.0))))
            rgb[r, c, 1] = np.uint8(int(min(max(v1, np.float32(0.0)), np.float32(255.0))))
            rgb[r, c, 2] = np.uint8(int(min(max(v2, np.float32(0.0)), np.float32(255.0))))


@numba.njit(**_JIT)
def _draw_one(rgb, ids, depth, sec, t_cols, r_top, img, c0, r0, bw, bh, d, iid, lights, hm):
    """One billboard at one place: :func:`_blit_sampled`, then its lights where it showed
    (``lights`` empty by day).
    """
    got = _blit_sampled(rgb, ids, depth, sec, t_cols, r_top, img, c0, r0, bw, bh, d, iid)
    if got > 0 and lights.shape[0] > 0:
        _glow(rgb, c0, r0, bw, bh, lights, hm)
    return got


@numba.njit(**_JIT)
def blit_planned(
    rgb,
    ids,
    depth,
    sec,
    t_cols,
    r_top,
    bank,
    slots,
    iids,
    plan,
    wrap,
    glow,
):  # the arguments: see sprites.draw_sprites, which gathers them
    """Draw a frame's planned billboards, in the plan's order (far to near), each sampled
    from its sprite's pyramid level for its box (the smallest level at least as large:
    :func:`_blit_sampled`); with ``wrap`` (a full panorama) a sprite over the left or
    right edge also shifted by the image width. Returns the pixels painted, or -1 (nothing
    drawn) where a planned sprite has no slot in the bank yet. With ``glow`` (dusk, night)
    a sprite's lights brighten its box (:func:`_glow`).

    ``bank``: the sprite bank's ``(pixels, levels, first, count, light_start, lights,
    height)`` -- flat RGBA pixels, each level's ``(offset, height, width)``, each slot's
    first level and level count, its lights ``lights[light_start[s]:light_start[s + 1]]``
    (rows ``(x frac, y frac, radius m)``) and its height (m); ``slots``: the bank slot of each object, free sign and
    pedestrian look; ``iids``: their instance ids (a pedestrian's: the base plus its index);
    ``plan``: ``sprites._plan``'s ``(src, idx, dist, c0, c1, r0, r1)``.
    """
    pixels, levels, first, count, light_start, lights, height = bank
    obj_slot, free_slot, ped_slot = slots
    obj_iid, free_iid, ped_base = iids
    src, idx, dist, c0s, c1s, r0s, r1s = plan
    n = len(src)
    n_w = rgb.shape[1]
    slot = np.empty(n, np.int64)
    for k in range(n):
        if src[k] == 0:
            s = obj_slot[idx[k]]
        elif src[k] == 1:
            s = free_slot[idx[k]]
        else:
            s = ped_slot[idx[k] % len(ped_slot)]
        if s < 0 or s >= len(count):
            return -1  # not in the bank, or added after ``bank`` was read (another thread)
        slot[k] = s
    painted = 0
    for k in range(n):
        c0, c1, r0 = c0s[k], c1s[k], r0s[k]
        if not (c0 < n_w and c1 > 0):
            if not (wrap and ((c0 < 0 and c1 > -n_w) or (c1 > n_w and c0 < 2 * n_w))):
                continue  # reaches no pixel of the frame
        bw, bh = c1 - c0, r1s[k] - r0
        s = slot[k]
        lv = first[s]  # the smallest level still at least the box's size
        while lv + 1 < first[s] + count[s] and levels[lv + 1, 2] >= bw and levels[lv + 1, 1] >= bh:
            lv += 1
        off, lh, lw = levels[lv, 0], levels[lv, 1], levels[lv, 2]
        img = pixels[off : off + lh * lw * 4].reshape((lh, lw, 4))
        if src[k] == 0:
            iid = obj_iid[idx[k]]
        elif src[k] == 1:
            iid = free_iid[idx[k]]
        else:
            iid = ped_base + idx[k]
        d = dist[k]
        lit = lights[light_start[s] : light_start[s + 1] if glow else light_start[s]]
        args = (rgb, ids, depth, sec, t_cols, r_top, img)
        painted += _draw_one(*args, c0, r0, bw, bh, d, iid, lit, height[s])
        if wrap and c0 < 0:
            painted += _draw_one(*args, c0 + n_w, r0, bw, bh, d, iid, lit, height[s])
        if wrap and c1 > n_w:
            painted += _draw_one(*args, c0 - n_w, r0, bw, bh, d, iid, lit, height[s])
    return painted
