"""The per-pixel fill of the column caster: walls and sky from the texture atlas, the
ground from a ground window, with the horizontal distance per pixel, depth and instance
ids -- in numpy with ``cv2.remap`` (the reference) or by the compiled kernel
(:mod:`urban_gym.render.kernels`). Used by :func:`urban_gym.render.raycast.cast`.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from urban_gym.render.ground import DETAIL_M, FAR_COLOUR, GroundWindow, light

_tls = threading.local()


def scratch(name: str, shape: tuple[int, ...], dtype=np.float32) -> np.ndarray:
    """This thread's reusable buffer ``name`` viewed as ``shape`` (contents undefined): a
    frame's large temporaries are not allocated anew -- for a panorama, fresh pages cost
    more than the arithmetic done in them. One flat buffer per name and dtype, grown to the
    largest request; only for arrays that do not leave the frame's drawing.
    """
    try:
        views = _tls.views
    except AttributeError:
        views = _tls.views = {}
        _tls.bufs = {}
    # the view made last time for this shape, while its buffer stands (a frame asks for
    # the same few views every time: a dict lookup instead of a slice and a reshape)
    view = views.get((name, shape, dtype))
    if view is not None:
        return view
    bufs = _tls.bufs
    n = math.prod(shape)
    key = (name, dtype)  # the type as given (np.float32, np.uint8, np.bool_): no dtype()
    buf = bufs.get(key)
    if buf is None or len(buf) < n:
        bufs.pop(key, None)
        buf = np.empty(n, dtype)
        if sum(b.nbytes for b in bufs.values()) + buf.nbytes > SCRATCH_BYTES:
            bufs.clear()  # another camera's frames now: its buffers go
        bufs[key] = buf
        views.clear()  # views of a buffer gone would outlive it
    elif len(views) >= _MAX_VIEWS:
        views.clear()
    view = views[(name, shape, dtype)] = buf[:n].reshape(shape)
    return view


#: views of the scratch buffers kept per thread (by name, shape and type)
_MAX_VIEWS = 256


def ragged_arange(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``starts[i], starts[i] + 1, ..., starts[i] + counts[i] - 1`` for every ``i``, one
    after another (``counts`` >= 0).
    """
    return np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))


#: the most bytes of scratch buffers a thread keeps (a 2048x1024 panorama needs about 25 MB)
SCRATCH_BYTES = 64 * 2**20


@dataclass
class Runs:
    """Per-run (``W * (K_HITS + 2)``: sky, hits ``K-1 .. 0``, ground per column) texture
    parameters -- atlas column ``P - D * a[r]`` and row ``S`` -- with the horizontal
    distance ``t`` (m, ``inf`` for sky and ground) and the instance id (or None).
    """

    P: np.ndarray
    D: np.ndarray
    S: np.ndarray
    t: np.ndarray
    ids: np.ndarray | None


@dataclass
class GroundMaps:
    """Where each pixel below the horizon meets the ground, in pixels of the ground
    window: ``x = gr[r] * kx[c] + cx``, ``y = gr[r] * ky[c] + cy`` (float32).
    """

    win: GroundWindow
    gr: np.ndarray
    kx: np.ndarray
    ky: np.ndarray
    cx: np.float32
    cy: np.float32
    border: tuple
    time_of_day: str


def ground_maps(
    cam: Any, win: GroundWindow, x: float, y: float, eye: float, tod: str
) -> GroundMaps:
    """The :class:`GroundMaps` of camera ``cam`` at ``(x, y)`` (m), ``eye`` metres up."""
    inv = 1.0 / win.mpp
    b = cam.b
    with np.errstate(divide="ignore"):
        gr = (eye / -cam.a).astype(np.float32)  # metres x b per row
    kx = (cam.dirx / b * inv).astype(np.float32)
    ky = (-cam.diry / b * inv).astype(np.float32)
    cx = np.float32((x - win.x0) * inv - 0.5)
    cy = np.float32((win.y1 - y) * inv - 0.5)
    return GroundMaps(win, gr, kx, ky, cx, cy, (*FAR_COLOUR, 255), tod)


def fill(cam, hits, runs: Runs, band, atlas, sky, ground, need_depth: bool):
    """Walls, sky and ground of every pixel with ``cv2.remap``: ``(rgb (H, W, 4), t_cols
    (W, Hb), depth or None, ids or None)`` -- ``rgb`` and ``t_cols`` are this thread's
    scratch buffers (:func:`scratch`), valid until its next frame. The numpy reference of
    the compiled ``frame_maps`` and ``finish_frame`` (:mod:`urban_gym.render.kernels.frame`).
    """
    W, H = cam.width, cam.height
    K = hits.bounds.shape[1] - 3
    r_top, r_bot = band
    g = hits.bounds[:, K + 1]
    hb = r_bot - r_top
    rgb = scratch("rgb", (H, W, 4), np.uint8)
    band_len = np.diff(np.clip(hits.bounds, r_top, r_bot), axis=1).ravel()
    mapx = np.repeat(runs.P, band_len).reshape(W, hb)
    dd = np.repeat(runs.D, band_len).reshape(W, hb)
    np.multiply(dd, cam.a32[None, r_top:r_bot], out=dd)
    np.subtract(mapx, dd, out=mapx)
    mapy = np.repeat(runs.S, band_len).reshape(W, hb)
    t_cols = np.repeat(runs.t, band_len).reshape(W, hb)  # (W, Hb), rows from r_top
    if hb > 0:
        # 4-channel images: OpenCV's bilinear remap is several times faster on RGBA than RGB
        cv2.transpose(
            cv2.remap(atlas, mapx, mapy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE),
            dst=rgb[r_top:r_bot],
        )
    if r_top > 0:
        rgb[:r_top] = sky[:r_top, None, :]
    g_min = int(g.min()) if W else H
    gmask = _draw_ground(cam, rgb, ground, g, g_min, r_bot)
    depth = None
    if need_depth:
        sec = cam.secant()
        depth = np.full((H, W), np.inf, np.float32)
        if hb > 0:
            cv2.transpose(t_cols, dst=depth[r_top:r_bot])
            depth[r_top:r_bot] *= sec[r_top:r_bot]
        if gmask is not None:
            gd = ground.gr[g_min:, None] / cam.b[None, :].astype(np.float32) * sec[g_min:]
            cv2.copyTo(gd, gmask, depth[g_min:])
    ids = None
    if runs.ids is not None:
        lengths = np.diff(hits.bounds, axis=1).ravel()
        ids = cv2.transpose(np.repeat(runs.ids, lengths).reshape(W, H))
    return rgb, t_cols, depth, ids


def _draw_ground(cam, rgb, ground, g, g_min: int, r_bot: int) -> np.ndarray | None:
    """The ground below row ``g[c]`` of each column; returns the ground mask of rows
    ``g_min ..`` (uint8) or None where no ground shows.
    """
    if ground is None:
        return None
    H = cam.height
    # rows whose nearest ground (the column with the largest b) lies beyond DETAIL_M show
    # the plain far colour, as beyond a window: a view never reads the raster far away
    gr_all = ground.gr[g_min:]
    far = int(np.count_nonzero(gr_all > DETAIL_M * float(cam.b.max()))) if len(gr_all) else 0
    W = cam.width
    img = scratch("ground", (H - g_min, W, 4), np.uint8)
    img[:far] = ground.border
    if far < H - g_min:
        # the band's texture maps are spent by now: their buffers take the ground's
        n = H - g_min - far
        gr = gr_all[far:, None]
        gx = np.multiply(gr, ground.kx[None, :], out=scratch("x", (n, W)))
        gx += ground.cx
        gy = np.multiply(gr, ground.ky[None, :], out=scratch("y", (n, W)))
        gy += ground.cy
        cv2.remap(
            ground.win.image,
            gx,
            gy,
            cv2.INTER_LINEAR,
            dst=img[far:],
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=ground.border,
        )
    light(img, ground.time_of_day)
    gmask = np.greater_equal(
        cam.rows_col[g_min:], g[None, :], out=scratch("gmask", (H - g_min, W), np.bool_)
    ).view(np.uint8)
    if r_bot < H:
        rgb[r_bot:] = img[r_bot - g_min :]
    if r_bot > g_min:
        cv2.copyTo(img[: r_bot - g_min], gmask[: r_bot - g_min], rgb[g_min:r_bot])
    return gmask
