"""The passes of a cast frame after its walls, ground and boards, in one compiled call
(numba): what :func:`urban_gym.render.raycast.cast` did with a Python step and a compiled
call each -- the night sky's stars, the projecting blade signs (the band of wall
distances widened over their rows first), the sprite plan and its blit, and, in clear
weather, the RGBA to RGB copy -- with the same arithmetic as those passes (they are
called from here), so the images are the same to the bit.

Import this module only through :func:`urban_gym.render.kernels.compiled`.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from urban_gym.render.kernels.blades import blade_rows, blit_blades
from urban_gym.render.kernels.sprites import blit_planned, sprite_plan

_JIT: dict[str, Any] = {"cache": True, "nogil": True}  # numba.njit keyword arguments


@numba.njit(**_JIT)
def _stars(rgb, sky_end, rows, cols, levels):
    """The stars ``(rows, cols, levels)`` on ``rgb`` where their column shows sky above
    them (``rows < sky_end - 1``), in order (a later star on the same pixel wins, as
    numpy's fancy assignment of ``raycast._stars``).
    """
    for k in range(len(rows)):
        r, c = rows[k], cols[k]
        if r < sky_end[c] - 1:
            for ch in range(3):
                rgb[r, c, ch] = levels[k]


@numba.njit(**_JIT)
def _widen(t_cols, r_top, r0, r1, room):
    """``t_cols`` (``(W, hb)`` from row ``r_top``) grown to cover rows ``r0 .. r1`` (the
    new rows infinitely far), and its first row: ``blades._widen_band``'s arithmetic; the
    grown band is laid out in ``room`` (a flat buffer of ``W * H`` at least).
    """
    hb = t_cols.shape[1]
    lo, hi = min(r0, r_top), max(r1, r_top + hb)
    if lo == r_top and hi == r_top + hb:
        return t_cols, r_top
    grown = room[: t_cols.shape[0] * (hi - lo)].reshape((t_cols.shape[0], hi - lo))
    grown[:, :] = np.inf
    grown[:, r_top - lo : r_top - lo + hb] = t_cols
    return grown, lo


@numba.njit(**_JIT)
def post_frame(
    rgb,
    ids,
    depth,
    sec,
    t_cols,
    r_top,
    sky_end,
    stars,
    blades,
    blade_cand,
    view,
    cam_arrays,
    sprite_arrays,
    obj_cand,
    peds,
    t0,
    n0,
    bank,
    slots,
    iids,
    wrap,
    glow,
    out_rgb,
    t_room,
):  # the arguments: see raycast._post_compiled, which gathers them
    """Stars, blades, sprites and (where ``out_rgb`` is not empty) the RGB copy of one
    frame into ``out_rgb``: ``(painted, r_top, hb)`` -- the sprite blit's result (-1: a
    planned sprite has no slot in the bank yet; then neither the blit nor the copy was
    done, and the caller plans again), and the first row and height of the band of
    distances: ``t_cols`` itself where not widened over the blades' rows, else the first
    ``W * hb`` of the flat buffer ``t_room`` (as ``(W, hb)``). No array returned: numba
    hands each returned array to Python through a call of its own, dearer than passing a
    buffer in.

    ``stars``: ``(rows, cols, levels)`` (empty but at night in clear weather outside);
    ``blades``: the scene's ``(xy, z, rect, poi, atlas)`` and ``blade_cand`` the blades to
    try (empty: none drawn); ``view``: ``(x, y, eye, blade range, sprite range, persp, yaw,
    fov, focal, ang0, span, e_top, e_bot, sign base)``; ``cam_arrays``: ``(dirx, diry, b,
    a, rel)``; ``sprite_arrays``: ``sprites.plan_packed``; ``peds``: the pedestrians'
    ``(x, y)``; ``t0``, ``n0``: each column's nearest wall distance and top row; ``bank``,
    ``slots``, ``iids``, ``wrap``, ``glow``: as ``blit_planned`` takes them.
    """
    x, y, eye, blade_range, sprite_range, persp, yaw, fov, focal, ang0, span, e_top, e_bot, base = (
        view
    )
    dirx, diry, b, a, rel = cam_arrays
    _stars(rgb, sky_end, stars[0], stars[1], stars[2])
    if len(blade_cand):
        xy, zz, rect, poi, atlas = blades
        near, r0, r1 = blade_rows(xy, zz, blade_cand, x, y, eye, blade_range, b, a)
        if near:
            t_cols, r_top = _widen(t_cols, r_top, r0, r1, t_room)
        blit_blades(
            xy,
            zz,
            rect,
            poi,
            atlas,
            blade_cand,
            x,
            y,
            eye,
            blade_range,
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
            int(base),
        )
    objs, frees = sprite_arrays
    ox, oy, ow, oz0, oh = objs[0], objs[1], objs[2], objs[3], objs[4]
    fx, fy, fw, fh = frees[0], frees[1], frees[2], frees[3]
    plan = sprite_plan(
        ox,
        oy,
        ow,
        oz0,
        oh,
        obj_cand,
        fx,
        fy,
        fw,
        fh,
        peds[0],
        peds[1],
        x,
        y,
        eye,
        sprite_range,
        persp > 0.5,
        yaw,
        fov,
        focal,
        ang0,
        span,
        e_top,
        e_bot,
        rgb.shape[1],
        rgb.shape[0],
        b,
        t0,
        n0,
    )
    painted = 0
    if len(plan[0]):
        painted = blit_planned(
            rgb, ids, depth, sec, t_cols, r_top, bank, slots, iids, plan, wrap, glow
        )
    if out_rgb.shape[0] > 0 and painted >= 0:
        _copy_rgb(rgb, out_rgb)
    return painted, r_top, t_cols.shape[1]


@numba.njit(**_JIT)
def _copy_rgb(rgba, out):
    """The colour channels of ``rgba`` into ``out`` (``frame.rgba_to_rgb``'s copy)."""
    for r in range(rgba.shape[0]):
        for c in range(rgba.shape[1]):
            for ch in range(3):
                out[r, c, ch] = rgba[r, c, ch]
