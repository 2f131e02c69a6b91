"""Compiled passes of the top-down map (numba): the greedy layout of POI labels.

Import this module only through :func:`urban_gym.render.kernels.compiled`.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

_JIT: dict[str, Any] = {"cache": True, "nogil": True}  # numba.njit keyword arguments
#: the label layout, a text blit and the dots (a few microseconds a call, several a frame)
#: keep the GIL: see ``kernels.blades._HOLD``
_HOLD: dict[str, Any] = {"cache": True, "nogil": False}


@numba.njit(**_HOLD)
def label_layout(cols, rows, widths, taken, w):
    """Which POIs, nearest to the centre first, get a label: ``(n,)`` int8, 1 for a
    label, 0 for a dot. A label of ``widths[k]`` pixels sits right of the POI at pixel
    ``(cols[k], rows[k])``; it is placed when it fits inside ``w`` pixels and its box
    is free in ``taken`` (4x4 pixel cells, updated), as ``MapRenderer._label_layout``.
    """
    n = len(cols)
    out = np.zeros(n, np.int8)
    for k in range(n):
        c, r, tw = cols[k], rows[k], widths[k]
        c0, c1 = int(c + 3) // 4, int(c + 5 + tw) // 4 + 1
        r0, r1 = int(r - 7) // 4, int(r + 7) // 4 + 1
        if c + 5 + tw > w or r0 < 0:
            continue
        c1 = min(c1, taken.shape[1])
        r1 = min(r1, taken.shape[0])
        free = True
        for i in range(r0, r1):
            for j in range(c0, c1):
                if taken[i, j]:
                    free = False
                    break
            if not free:
                break
        if not free:
            continue
        for i in range(r0, r1):
            for j in range(c0, c1):
                taken[i, j] = True
        out[k] = 1
    return out


@numba.njit(**_HOLD)
def blit_text(img, sprite, r0, c0, colour, halo):
    """Blend the text mask ``sprite`` (``(h, w, 2)`` uint8: glyphs, outline) into the RGB
    image ``img`` with its top-left pixel at ``(r0, c0)``, clipped: the outline in
    ``halo``, then the glyphs in ``colour`` (float32 triples), in float32 and truncated
    -- ``map.blit_text``'s numpy arithmetic, pixel by pixel. Returns the pixels blended.
    """
    n_h, n_w = img.shape[0], img.shape[1]
    th, tw = sprite.shape[0], sprite.shape[1]
    k = np.float32(255.0)
    done = 0
    for i in range(max(0, -r0), min(th, n_h - r0)):
        for j in range(max(0, -c0), min(tw, n_w - c0)):
            a_halo = np.float32(sprite[i, j, 1]) / k
            a_text = np.float32(sprite[i, j, 0]) / k
            for ch in range(3):
                v = np.float32(img[r0 + i, c0 + j, ch])
                v = v + (halo[ch] - v) * a_halo
                v = v + (colour[ch] - v) * a_text
                img[r0 + i, c0 + j, ch] = np.uint8(int(v))
            done += 1
    return done


@numba.njit(**_JIT)
def label_candidates(order, xs, poi_x, poi_y, cx, cy, mpp, w, h, cos_r, sin_r, r, limit):
    """The POIs a map of ``w`` x ``h`` pixels centred on ``(cx, cy)`` at ``mpp`` shows,
    nearest to the centre first (a stable sort), at most ``limit``: ``(idx, cols, rows)``
    -- their indices and continuous pixel positions, as ``MapRenderer._draw_labels``
    computes them in numpy. ``order`` and ``xs``: the POIs sorted by x and their x; ``r``:
    the half side (m) of the square that holds every pixel of the map; ``cos_r``, ``sin_r``:
    of the map's rotation.
    """
    lo = np.searchsorted(xs, cx - r)
    hi = np.searchsorted(xs, cx + r, side="right")
    near = np.sort(order[lo:hi])
    n = 0
    idx = np.empty(len(near), np.int64)
    cols = np.empty(len(near))
    rows = np.empty(len(near))
    for i in near:
        if not abs(poi_y[i] - cy) <= r:
            continue
        dx = (poi_x[i] - cx) / mpp
        dy = (poi_y[i] - cy) / mpp
        col = w / 2.0 + dx * cos_r - dy * sin_r
        row = h / 2.0 - (dy * cos_r + dx * sin_r)
        if col >= 0 and col < w and row >= 0 and row < h:
            idx[n], cols[n], rows[n] = i, col, row
            n += 1
    d = np.empty(n)
    for k in range(n):
        d[k] = math.hypot(cols[k] - w / 2, rows[k] - h / 2)
    keep = np.argsort(d, kind="mergesort")[:limit]
    return idx[keep], cols[keep], rows[keep]


@numba.njit(**_HOLD)
def label_dots(img, cols, rows, placed, colour):
    """A 2x2 dot in ``colour`` for every POI without a label (``placed[k] == 0``), its
    bottom-right pixel at ``(rows[k] - 0.5, cols[k] - 0.5)`` truncated, clipped at the top
    and left (as ``MapRenderer._draw_labels``). Returns the dots drawn.
    """
    n = 0
    for k in range(len(cols)):
        if placed[k] != 0:
            continue
        pc, pr = int(cols[k] - 0.5), int(rows[k] - 0.5)
        for r in (pr - 1, pr):
            for c in (pc - 1, pc):
                for ch in range(3):
                    img[max(r, 0), max(c, 0), ch] = colour[ch]
        n += 1
    return n
