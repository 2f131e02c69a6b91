"""The facade boards (shop signs) of the column caster in numpy: which pixels of a frame
show a board and where in the board atlas each samples (:func:`sign_points`, compiled
where :mod:`urban_gym.render.kernels` can: the same pixels the compiled frame kernel
paints), and their bilinear samples (:func:`sample_points`). Used by
:func:`urban_gym.render.raycast.cast`'s numpy path, whose camera (``ColumnCamera``), frame
and hits (``Frame``, ``Hits``) the functions take.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from urban_gym.render import kernels
from urban_gym.render.fill import ragged_arange
from urban_gym.render.ids import SIGN_BASE
from urban_gym.render.scene import Scene


def draw_boards(scene: Scene, cam: Any, frame: Any, eye: float, hits: Any) -> None:
    """Paint the boards hit by the kept wall hits, where those hits are visible (numpy:
    the reference of the compiled frame kernel's boards).
    """
    scene.ensure_signs()
    if not len(scene.signs) or not len(hits.seg):
        return
    rr, cc, sx, sy, poi = sign_points(scene, cam, eye, hits)
    if not len(rr):
        return
    frame.rgb[rr, cc, :3] = sample_points(scene.sign_atlas, sx, sy)
    if frame.ids is not None:
        frame.ids[rr, cc] = SIGN_BASE + poi


def sign_points(scene: Scene, cam: Any, eye: float, hits: Any) -> tuple:
    """The pixels of the facade boards on the kept hits, where those show: ``(rows,
    columns, atlas x, atlas y, POI)`` (compiled when available; ``scene.ensure_signs()``
    first).
    """
    out = kernels.call(
        "sign_points",
        hits.seg,
        hits.inner,
        hits.u,
        hits.t,
        hits.col,
        hits.rank,
        hits.bounds,
        scene.sign_seg_start,
        scene.sign_u0,
        scene.sign_u1,
        scene.sign_z0,
        scene.sign_z1,
        scene.sign_ax,
        scene.sign_ay,
        scene.sign_w,
        scene.sign_h,
        scene.sign_poi,
        cam.b,
        cam.a,
        float(eye),
        hits.bounds.shape[1] - 3,
    )
    return out if out is not None else _sign_points_numpy(scene, cam, eye, hits)


def _sign_points_numpy(scene: Scene, cam: Any, eye: float, hits: Any) -> tuple:
    """The boards' pixels ``(rows, columns, atlas x, atlas y, POI)`` in numpy (the
    reference of the compiled ``sign_points``).
    """
    K = hits.bounds.shape[1] - 3  # hits kept per column
    none = np.zeros(0, np.int64)
    empty = (none, none, np.zeros(0), np.zeros(0), none)
    st = scene.sign_seg_start
    n = (st[hits.seg + 1] - st[hits.seg]) * (~hits.inner)
    hit = np.flatnonzero(n)
    if not len(hit):
        return empty
    cnt = n[hit]
    h = np.repeat(hit, cnt)
    sg = ragged_arange(st[hits.seg[hit]], cnt)
    uh = hits.u[h]
    on = (uh >= scene.sign_u0[sg]) & (uh <= scene.sign_u1[sg])
    h, sg = h[on], sg[on]
    if not len(h):
        return empty
    col = hits.col[h]
    tb = hits.t[h] * cam.b[col]
    # rows of the board, clipped to the rows where this hit is visible
    jv = K - hits.rank[h]  # the hit's visible run is rows bounds[jv] .. bounds[jv + 1]
    r0 = np.maximum(cam.count_above((scene.sign_z1[sg] - eye) / tb), hits.bounds[col, jv])
    r1 = np.minimum(cam.count_at_or_above((scene.sign_z0[sg] - eye) / tb), hits.bounds[col, jv + 1])
    cnt = np.maximum(r1 - r0, 0)
    tot = int(cnt.sum())
    if not tot:
        return empty
    k = np.repeat(np.arange(len(h)), cnt)
    rr = ragged_arange(r0, cnt)
    cc = col[k]
    hk, sk = h[k], sg[k]
    z = eye + hits.t[hk] * cam.b[cc] * cam.a[rr]
    sx = (
        scene.sign_ax[sk]
        + (hits.u[hk] - scene.sign_u0[sk])
        / (scene.sign_u1[sk] - scene.sign_u0[sk])
        * scene.sign_w[sk]
        - 0.5
    )
    sy = (
        scene.sign_ay[sk]
        + (scene.sign_z1[sk] - z) / (scene.sign_z1[sk] - scene.sign_z0[sk]) * scene.sign_h[sk]
        - 0.5
    )
    sx = np.clip(sx, scene.sign_ax[sk], scene.sign_ax[sk] + scene.sign_w[sk] - 1)
    sy = np.clip(sy, scene.sign_ay[sk], scene.sign_ay[sk] + scene.sign_h[sk] - 1)
    return rr, cc, sx, sy, scene.sign_poi[sk]


def sample_points(img: np.ndarray, sx: np.ndarray, sy: np.ndarray) -> np.ndarray:
    """Bilinear samples of ``img`` at continuous pixel positions (``(N,)`` each, pixel
    ``[r, c]`` centred at ``(c, r)``): ``(N, channels)``.
    """
    n = len(sx)
    w = 1024
    rows = -(-n // w)
    mx = np.zeros(rows * w, np.float32)
    my = np.zeros(rows * w, np.float32)
    mx[:n], my[:n] = sx, sy
    out = cv2.remap(
        img,
        mx.reshape(rows, w),
        my.reshape(rows, w),
        cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_REPLICATE,
    )
    return out.reshape(rows * w, -1)[:n]
