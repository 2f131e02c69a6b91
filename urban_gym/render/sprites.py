"""The sprite pass of the column caster: upright billboards -- street objects, free-standing
signs, pedestrians -- drawn far to near over a cast frame, hidden behind nearer walls
(the blit compiled where :mod:`urban_gym.render.kernels` can, else in numpy). Used by
:func:`urban_gym.render.raycast.cast`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from urban_gym.caching import LRUCache
from urban_gym.render import kernels
from urban_gym.render.ids import OBJECT_BASE, PEDESTRIAN_BASE, SIGN_BASE
from urban_gym.render.textures import Sprite, pedestrian_sprite

#: street objects, signs and people farther than this (m) are not drawn
OBJECT_RANGE_M = 90.0

_AMBIENT = {"day": 1.0, "dusk": 0.68, "night": 0.3}


_pyramids: dict[tuple[int, float], tuple[Sprite, list[np.ndarray]]] = {}


def _pyramid(spr: Sprite, light: float) -> list[np.ndarray]:
    """The sprite's RGBA image, its colours scaled by ``light``, halved repeatedly."""
    key = (id(spr), light)
    hit = _pyramids.get(key)
    if hit is not None and hit[0] is spr:
        return hit[1]
    base = spr.rgba
    if light != 1.0:
        base = base.copy()
        base[..., :3] = np.clip(base[..., :3] * light, 0, 255).astype(np.uint8)
    levels = [base]
    while min(levels[-1].shape[:2]) > 8:
        levels.append(cv2.resize(levels[-1], None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA))
    if len(_pyramids) > 4096:
        _pyramids.clear()
    _pyramids[key] = (spr, levels)
    return levels


#: resized sprites kept (a walker's next frame mostly shows the same things at the same
#: sizes), bounded by bytes: a billboard close to a 512-pixel camera is megabytes
_resized_cache: LRUCache[tuple, tuple[Sprite, np.ndarray]] = LRUCache(
    max_bytes=4 * 2**20, size=lambda v: v[1].nbytes, lock=True, name="render.sprites.resized"
)


def _resized(spr: Sprite, bw: int, bh: int, light: float = 1.0) -> np.ndarray:
    """The sprite at ``bw`` x ``bh`` pixels, from the nearest larger pyramid level (kept
    in a small cache; read-only: blitting copies from it).
    """
    key = (id(spr), bw, bh, light)
    hit = _resized_cache.get(key)
    if hit is not None and hit[0] is spr:
        return hit[1]
    levels = _pyramid(spr, light)
    k = 0
    while k + 1 < len(levels) and levels[k + 1].shape[1] >= bw and levels[k + 1].shape[0] >= bh:
        k += 1
    img = cv2.resize(levels[k], (bw, bh), interpolation=cv2.INTER_LINEAR)
    img.setflags(write=False)
    if img.nbytes <= 2**18:
        _resized_cache.put(key, (spr, img))
    return img


def _t_box(frame: Any, a0: int, a1: int, ra: int, rb: int) -> np.ndarray:
    """Horizontal distance of pixels ``[ra:rb, a0:a1]`` (inf outside the cast band)."""
    lo, hi = max(ra, frame.r_top), min(rb, frame.r_top + frame.t_cols.shape[1])
    if lo <= ra and hi >= rb:
        return frame.t_cols[a0:a1, ra - frame.r_top : rb - frame.r_top].T
    out = np.full((rb - ra, a1 - a0), np.inf, np.float32)
    if hi > lo:
        out[lo - ra : hi - ra] = frame.t_cols[a0:a1, lo - frame.r_top : hi - frame.r_top].T
    return out


@dataclass
class SpriteItems:
    """Billboards near the viewer: offsets (m), distance (m), width (m), base and top
    heights (m), source (0 street object, 1 free-standing sign, 2 pedestrian) and index.
    """

    dx: np.ndarray
    dy: np.ndarray
    dist: np.ndarray
    wid: np.ndarray
    z0: np.ndarray
    z1: np.ndarray
    src: np.ndarray
    idx: np.ndarray


def _sprite_items(scene, cam, x: float, y: float, pedestrians) -> SpriteItems | None:
    """The street objects, free-standing signs and pedestrians in range (and, for a
    perspective view, not behind the camera), or None.
    """
    persp = cam.kind == "perspective"
    fwd = (math.sin(cam.yaw), math.cos(cam.yaw))
    parts = []  # (dx, dy, dist, width, base, height, kind code, index)

    def add(xy, wid, base, height, code, index, min_d):
        dx, dy = xy[:, 0] - x, xy[:, 1] - y
        d = np.hypot(dx, dy)
        keep = (d < OBJECT_RANGE_M) & (d > min_d)
        if persp:  # drop what lies behind the camera (at least a metre behind)
            keep &= dx * fwd[0] + dy * fwd[1] > -1.0 - wid / 2
        if keep.any():
            cols = (dx, dy, d, wid, base, height)
            parts.append(tuple(v[keep] for v in cols) + (code, index[keep]))

    cand = scene.object_candidates(x, y, OBJECT_RANGE_M)
    if len(cand):
        o = (scene.obj_xy, scene.obj_w, scene.obj_z0, scene.obj_h)
        add(*(v[cand] for v in o), 0, cand, 0.4)
    nf = len(scene.free_signs)
    if nf:
        zero = np.zeros(nf)
        add(scene.free_sign_xy, scene.free_sign_w, zero, scene.free_sign_h, 1, np.arange(nf), 0.4)
    if pedestrians is not None and len(pedestrians):
        n = len(pedestrians)
        add(pedestrians, np.full(n, 0.6), np.zeros(n), np.full(n, 1.75), 2, np.arange(n), 0.3)
    if not parts:
        return None
    if len(parts) == 1:
        dx, dy, dist, wid, z0, z1, code, idx = parts[0]
        src = np.full(len(idx), code)
    else:
        dx, dy, dist, wid, z0, z1 = (np.concatenate([p[i] for p in parts]) for i in range(6))
        src = np.concatenate([np.full(len(p[7]), p[6]) for p in parts])
        idx = np.concatenate([p[7] for p in parts])
    return SpriteItems(dx, dy, dist, wid, z0, z0 + z1, src, idx)


def _sprite_boxes(cam, it: SpriteItems, eye: float) -> tuple[np.ndarray, ...]:
    """Screen boxes ``(c0, c1, r0, r1)`` (int arrays, end exclusive) of the items and
    whether each may show.
    """
    W, H = cam.width, cam.height
    bear = np.arctan2(it.dx, it.dy)
    half = np.arctan2(it.wid / 2, it.dist)
    if cam.kind == "perspective":
        rel = (bear - cam.yaw + math.pi) % (2 * math.pi) - math.pi
        lim = math.radians(min(cam.fov_deg / 2.0 + 5.0, 80.0))
        vis = (np.abs(rel) - half < lim) & (np.abs(rel) + half < math.radians(88.0))
        rel = np.where(vis, rel, 0.0)
        cl = W / 2.0 + cam.focal * np.tan(rel - half)
        cr = W / 2.0 + cam.focal * np.tan(rel + half)
        cm = W / 2.0 + cam.focal * np.tan(rel)
        ok = vis
    else:
        cl, cr, cm = cam.col_of(bear - half), cam.col_of(bear + half), cam.col_of(bear)
        cr = np.where(cr < cl, cr + W * (2 * math.pi / cam.span), cr)
        ok = np.ones(len(it.dist), bool)
    bcol = cam.b[np.clip(cm, 0, W - 1).astype(int)]
    rt = cam.row_of((it.z1 - eye) / it.dist / bcol)
    rb = cam.row_of((it.z0 - eye) / it.dist / bcol)
    c0s = np.floor(cl).astype(int)
    c1s = np.ceil(cr).astype(int)
    r0s, r1s = np.floor(rt).astype(int), np.ceil(rb).astype(int)
    ok &= (r1s - r0s >= 2) & (c1s > c0s) & (r1s > 0) & (r0s < H)
    if not _full_circle(cam):
        ok &= (c1s > 0) & (c0s < W)
    return c0s, c1s, r0s, r1s, ok


def _full_circle(cam) -> bool:
    return cam.kind == "equirect" and cam.span >= 2 * math.pi - 1e-9


def _sprite_of(scene, src: int, i: int) -> tuple[Sprite, int]:
    """The sprite of item ``i`` of source ``src`` (0 street object, 1 free-standing sign,
    2 pedestrian) and its instance id.
    """
    if src == 0:
        return scene.obj_sprite[i], OBJECT_BASE + int(scene.obj_ids[i])
    if src == 1:
        pid, spr = scene.free_signs[i]
        return spr, SIGN_BASE + pid
    return pedestrian_sprite(i), PEDESTRIAN_BASE + i


def _plan(scene, cam, x, y, eye, pedestrians, t0, n0):
    """The billboards to draw, far to near, as ``(src, idx, dist, c0, c1, r0, r1)``
    arrays: from the compiled kernel where it runs, else from the numpy reference.
    """
    if kernels.compiled() is not None:  # the kernel's arguments, only where it runs
        persp = cam.kind == "perspective"
        peds = pedestrians if pedestrians is not None and len(pedestrians) else _NO_PEDS
        peds = np.asarray(peds, np.float64).reshape(-1, 2)
        fxy = np.asarray(scene.free_sign_xy, np.float64).reshape(-1, 2)
        got = kernels.call(
            "sprite_plan",
            scene.obj_xy[:, 0],
            scene.obj_xy[:, 1],
            scene.obj_w,
            scene.obj_z0,
            scene.obj_h,
            scene.object_candidates(x, y, OBJECT_RANGE_M),
            fxy[:, 0],
            fxy[:, 1],
            scene.free_sign_w,
            scene.free_sign_h,
            np.ascontiguousarray(peds[:, 0], np.float64),
            np.ascontiguousarray(peds[:, 1], np.float64),
            float(x),
            float(y),
            float(eye),
            OBJECT_RANGE_M,
            persp,
            float(cam.yaw),
            float(cam.fov_deg),
            float(cam.focal),
            float(cam.ang0),
            float(cam.span),
            float(cam.e_top),
            float(cam.e_bot),
            cam.width,
            cam.height,
            cam.b,
            t0,
            n0,
        )
        if got is not None:
            return got
    return _plan_numpy(scene, cam, x, y, eye, pedestrians, t0, n0)


def _plan_numpy(scene, cam, x, y, eye, pedestrians, t0, n0):
    """:func:`_plan` in numpy (the reference of the compiled kernel)."""
    W, H = cam.width, cam.height
    empty = np.zeros(0, np.int64)
    it = _sprite_items(scene, cam, x, y, pedestrians)
    if it is None:
        return empty, empty, np.zeros(0), empty, empty, empty, empty
    full = _full_circle(cam)
    c0s, c1s, r0s, r1s, ok = _sprite_boxes(cam, it, eye)
    dist = it.dist
    out = []
    for k in np.flatnonzero(ok)[np.argsort(-dist[ok], kind="stable")]:
        c0, c1, r0, r1 = int(c0s[k]), int(c1s[k]), int(r0s[k]), int(r1s[k])
        if c1 - c0 > 2 * W or r1 - r0 > 3 * H:
            continue
        if not full or (c0 >= 0 and c1 <= W):
            a0, a1 = max(c0, 0), min(c1, W)
            if (t0[a0:a1] < dist[k]).all() and (n0[a0:a1] <= max(r0, 0)).all():
                continue  # behind the nearest wall of every column it covers
        out.append(k)
    k = np.array(out, np.int64)
    return (
        it.src[k].astype(np.int64),
        it.idx[k].astype(np.int64),
        dist[k],
        c0s[k],
        c1s[k],
        r0s[k],
        r1s[k],
    )


_NO_PEDS = np.zeros((0, 2))
_NO_IDS = np.zeros((0, 0), np.int32)
_NO_DEPTH = np.zeros((0, 0), np.float32)


def draw_sprites(scene, cam, frame, x, y, eye, cond, pedestrians, t0, n0) -> None:
    """Upright billboards, far to near, hidden behind nearer walls: ``t0`` is the distance
    (m, inf where none) of each column's nearest wall and ``n0`` the row of its top
    (sprites wholly behind them are skipped).
    """
    scene.ensure_signs()
    W = cam.width
    full = _full_circle(cam)
    amb = _AMBIENT[cond.time_of_day]
    glow = cond.time_of_day != "day"
    src, idx, dist, c0s, c1s, r0s, r1s = _plan(scene, cam, x, y, eye, pedestrians, t0, n0)
    if not len(src):
        return
    # the sprites that reach the frame (a full panorama also draws a sprite over its edge
    # shifted by the width, to the other side), far to near
    reach = (c0s < W) & (c1s > 0)
    if full:
        reach |= ((c0s < 0) & (c1s > -W)) | ((c1s > W) & (c0s < 2 * W))
    keep = np.flatnonzero(reach).tolist()
    if not keep:
        return
    sprites, iids, images = [], [], []
    src_l, idx_l = src.tolist(), idx.tolist()
    c0_l, c1_l, r0_l, r1_l = c0s.tolist(), c1s.tolist(), r0s.tolist(), r1s.tolist()
    for k in keep:
        spr, iid = _sprite_of(scene, src_l[k], idx_l[k])
        sprites.append(spr)
        iids.append(iid)
        images.append(_resized(spr, c1_l[k] - c0_l[k], r1_l[k] - r0_l[k], amb))
    # the frame's arrays for the compiled blits, empty where not drawn
    targets = (
        frame.rgb,
        frame.ids if frame.ids is not None else _NO_IDS,
        frame.depth if frame.depth is not None else _NO_DEPTH,
        cam.secant() if frame.depth is not None else _NO_DEPTH,
        frame.t_cols,
        frame.r_top,
    )
    boxes = (c0s[keep], r0s[keep], dist[keep], iids)
    if not (glow and any(spr.glow for spr in sprites)) and _blit_all(targets, images, boxes, full):
        return  # every sprite in one compiled call
    for n, k in enumerate(keep):
        spr, iid, img, c0, c1, r0 = sprites[n], iids[n], images[n], c0_l[k], c1_l[k], r0_l[k]
        bh, bw = img.shape[:2]
        glows = spr.glow if glow else ()
        shifts = [0]
        if full and c0 < 0:
            shifts.append(W)
        if full and c1 > W:
            shifts.append(-W)
        for sh in shifts:
            if max(c0 + sh, 0) >= min(c1 + sh, W):
                continue
            if (
                glows
                or kernels.call("blit_sprite", *targets, img, c0 + sh, r0, dist[k], iid) is None
            ):
                _blit_sprite(cam, frame, img, (c0 + sh, r0, bw, bh), dist[k], iid, glows, spr)


def _blit_all(targets, images, boxes, full: bool) -> bool:
    """Blit the resized sprites ``images`` at ``boxes = (c0s, r0s, dists, ids)`` (see
    :func:`draw_sprites`) with one call of the compiled ``blit_sprites`` (the images one
    after another in one flat buffer); False where the numpy path must draw them.
    """
    if kernels.compiled() is None:
        return False
    shapes = np.array([img.shape[:2] for img in images], np.int64).reshape(-1, 2)
    sizes = shapes[:, 0] * shapes[:, 1] * 4
    offs = np.zeros(len(images), np.int64)
    np.cumsum(sizes[:-1], out=offs[1:])
    pixels = (
        np.concatenate([img.reshape(-1) for img in images])
        if len(images) > 1
        else images[0].reshape(-1)
    )
    c0s, r0s, dists, iids = boxes
    args = (
        pixels,
        offs,
        np.ascontiguousarray(shapes[:, 1]),
        np.ascontiguousarray(shapes[:, 0]),
        c0s,
        r0s,
        dists,
        np.array(iids, np.int64),
        full,
    )
    return kernels.call("blit_sprites", *targets, *args) is not None


def _blit_sprite(cam, frame, img, box, dist: np.float64, iid: int, glows, spr: Sprite) -> None:
    """Paint the resized sprite ``img`` at ``box = (c0, r0, w, h)`` where it is opaque and
    nothing nearer than ``dist`` metres is in front; lamps glow at night.
    """
    W, H = cam.width, cam.height
    c0, r0, bw, bh = box
    a0, a1 = max(c0, 0), min(c0 + bw, W)
    ra, rb_ = max(r0, 0), min(r0 + bh, H)
    sub = img[ra - r0 : rb_ - r0, a0 - c0 : a1 - c0]
    # opaque where the resampled alpha is over half and nothing nearer is in front
    solid = sub[..., 3] > 127
    solid &= _t_box(frame, a0, a1, ra, rb_) > dist
    if not solid.any():
        return
    dst = frame.rgb[ra:rb_, a0:a1, :3]
    np.copyto(dst, sub[..., :3], where=solid[..., None])
    if glows:
        cols = np.arange(a0, a1) - c0
        rows = np.arange(ra, rb_) - r0
        region = dst.astype(np.float32)
        for gx, gy, gr in glows:
            rad = max(1.5, gr / spr.height_m * bh)
            d2 = (cols[None, :] - gx * bw) ** 2 + (rows[:, None] - (1 - gy) * bh) ** 2
            region += np.exp(-d2 / rad**2)[..., None] * np.array([200, 170, 90], np.float32)
        dst[...] = np.clip(region, 0, 255).astype(np.uint8)
    if frame.ids is not None:
        frame.ids[ra:rb_, a0:a1][solid] = iid
    if frame.depth is not None:
        sec = cam.secant()[ra:rb_, a0:a1]
        frame.depth[ra:rb_, a0:a1][solid] = (dist * sec)[solid]
