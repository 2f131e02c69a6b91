"""The passes of a cast frame after its walls, ground and boards -- the night sky's
stars, the blade signs, the sprites and, in clear weather, the copy to RGB -- gathered for
one compiled call (:func:`urban_gym.render.kernels.post.post_frame`). Used by
:func:`urban_gym.render.raycast.cast`, which draws them pass by pass in numpy where the
compiled kernels do not run.
"""

from __future__ import annotations

import numpy as np

from urban_gym.render import kernels
from urban_gym.render.blades import BLADE_RANGE_M, blade_inputs
from urban_gym.render.fill import scratch
from urban_gym.render.ids import SIGN_BASE
from urban_gym.render.sprites import (
    OBJECT_RANGE_M,
    add_to_bank,
    blit_inputs,
    blit_plan,
    plan_billboards,
    plan_inputs,
    plan_packed,
)

_NO_DEPTH = np.zeros((0, 0), np.float32)
_NO_IDS = np.zeros((0, 0), np.int32)


def draw_after_walls(scene, cam, frame, x, y, eye, cond, pedestrians, stars, cols) -> bool:
    """The stars, blades, sprites and, in clear weather, the RGB copy of ``frame`` by one
    compiled call (:func:`urban_gym.render.kernels.post.post_frame`: the passes of
    :func:`~urban_gym.render.raycast.cast` after the walls, with their arithmetic); False
    (nothing drawn) where the numpy path must draw them. A sprite new to the process's
    bank is added and the blit done by :func:`urban_gym.render.sprites.blit_plan` (the
    copy then by the weather pass).
    ``stars``: the night sky's ``(rows, cols, levels)`` or None; ``cols``: per column, the
    first row below the sky, the nearest wall's distance (m) and that wall's top row.
    """
    if kernels.compiled() is None:
        return False
    sky_end, t0, n0 = cols
    H, W = cam.height, cam.width
    if stars is None:
        stars = _NO_STARS
    blades, blade_cand = blade_inputs(scene, x, y)
    _, obj_cand, peds = plan_inputs(scene, x, y, pedestrians)
    bank_arrays, slots, iids, glow = blit_inputs(scene, cond)
    has_depth = frame.depth is not None
    out = np.empty((H, W, 3), np.uint8) if cond.weather == "clear" else frame.rgb
    t_room = scratch("t_widened", (W * H,))  # the band widened over the blades' rows
    cam_view, cam_arrays, full_circle = cam.post_args()
    view = (float(x), float(y), float(eye), BLADE_RANGE_M, OBJECT_RANGE_M, *cam_view, _BASE)
    got = kernels.call(
        "post_frame",
        frame.rgb,
        frame.ids if frame.ids is not None else _NO_IDS,
        frame.depth if has_depth else _NO_DEPTH,
        cam.secant() if has_depth else _NO_DEPTH,
        frame.t_cols,
        int(frame.r_top),
        sky_end,
        stars,
        blades,
        blade_cand,
        view,
        cam_arrays,
        plan_packed(scene),
        obj_cand,
        peds,
        t0,
        n0,
        bank_arrays,
        slots,
        iids,
        full_circle,
        glow,
        out if out is not frame.rgb else _NO_RGB,
        t_room,
    )
    if got is None:
        return False
    painted, r_top, hb = got
    if r_top != frame.r_top or hb != frame.t_cols.shape[1]:  # widened over the blades
        frame.t_cols, frame.r_top = t_room[: W * hb].reshape(W, hb), r_top
    if painted < 0:  # sprites the bank lacks: planned again, added, blitted (copied later)
        plan = plan_billboards(scene, cam, x, y, eye, pedestrians, t0, n0)
        add_to_bank(scene, cond, plan)
        blit_plan(scene, cam, frame, cond, plan)
    else:
        frame.rgb = out  # copied to RGB in clear weather (else RGBA still: _weather)
    return True


_NO_STARS = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8))
_NO_RGB = np.zeros((0, 0, 3), np.uint8)
_BASE = float(SIGN_BASE)
