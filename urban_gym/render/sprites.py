"""The sprite pass of the column caster: upright billboards -- street objects, free-standing
signs, pedestrians -- drawn far to near over a cast frame, hidden behind nearer walls
(the blit compiled where :mod:`urban_gym.render.kernels` can, else in numpy). Used by
:func:`urban_gym.render.raycast.cast`.
"""

from __future__ import annotations

import math
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from urban_gym.render import kernels
from urban_gym.render.ids import OBJECT_BASE, PEDESTRIAN_BASE, SIGN_BASE
from urban_gym.render.textures import PEDESTRIAN_LOOKS, Sprite, pedestrian_sprite

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


def _level(levels: list[np.ndarray], bw: int, bh: int) -> np.ndarray:
    """The smallest pyramid level still at least ``bw`` x ``bh`` pixels (else the
    largest).
    """
    k = 0
    while k + 1 < len(levels) and levels[k + 1].shape[1] >= bw and levels[k + 1].shape[0] >= bh:
        k += 1
    return levels[k]


def _sampled(img: np.ndarray, box: tuple[int, int, int, int], sub: tuple[int, ...]) -> np.ndarray:
    """The part ``sub = (a0, a1, ra, rb)`` (frame columns and rows, end exclusive) of the
    RGBA image ``img`` scaled to the box ``box = (c0, r0, bw, bh)``: each pixel samples
    ``img`` bilinearly at ``((j + 0.5) * w / bw - 0.5, (i + 0.5) * h / bh - 0.5)`` (``i``,
    ``j`` its row and column in the box) with ``cv2.remap`` -- what the compiled blit
    computes pixel by pixel (``kernels.sprites.blit_planned``).
    """
    c0, r0, bw, bh = box
    a0, a1, ra, rb = sub
    lh, lw = img.shape[:2]
    mx = ((np.arange(a0, a1) - c0 + 0.5) * (lw / bw) - 0.5).astype(np.float32)
    my = ((np.arange(ra, rb) - r0 + 0.5) * (lh / bh) - 0.5).astype(np.float32)
    mx, my = (
        np.broadcast_to(mx, (rb - ra, a1 - a0)),
        np.broadcast_to(my[:, None], (rb - ra, a1 - a0)),
    )
    return cv2.remap(
        img,
        np.ascontiguousarray(mx),
        np.ascontiguousarray(my),
        cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_REPLICATE,
    )


class SpriteBank:
    """The sprites drawn so far at one light level, for the compiled blit: every level of
    their pyramids (:func:`_pyramid`) one after another in one flat RGBA buffer, each
    sprite a *slot*, and per scene the slot of each street object, free-standing sign and
    pedestrian look (-1 until first drawn). Grows as new sprites show; one per light level
    per process (:func:`bank`).
    """

    def __init__(self, light: float) -> None:
        self.light = light
        self.used = 0  # bytes of the pixel buffer in use
        # (pixels, levels, first, count, light_start, lights, height): the flat RGBA
        # pixels; each level's (offset, height, width); each slot's first level and level
        # count; slot s's lights, rows light_start[s]..light_start[s + 1] of lights
        # (x frac, y frac, radius m); each slot's height (m). Replaced as one tuple when a
        # sprite is added, so a reader always gets arrays that agree with each other.
        self._arrays: tuple[np.ndarray, ...] = (
            np.zeros(1 << 16, np.uint8),
            np.zeros((0, 3), np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(1, np.int64),
            np.zeros((0, 3), np.float64),
            np.zeros(0, np.float64),
        )
        self._slot: dict[int, tuple[Sprite, int]] = {}
        self._scenes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.ped_slot = np.full(PEDESTRIAN_LOOKS, -1, np.int64)  # one per pedestrian look
        self._lock = threading.Lock()

    def arrays(self) -> tuple[np.ndarray, ...]:
        """``(pixels, levels, first, count, light_start, lights, height)`` as
        ``blit_planned`` takes them.
        """
        return self._arrays

    def slot(self, spr: Sprite) -> int:
        """The slot of ``spr``, added with its pyramid where new."""
        hit = self._slot.get(id(spr))
        if hit is not None and hit[0] is spr:
            return hit[1]
        with self._lock:
            hit = self._slot.get(id(spr))
            if hit is not None and hit[0] is spr:
                return hit[1]
            pixels, levels, first, count, light_start, lights, height = self._arrays
            pyramid = _pyramid(spr, self.light)
            need = self.used + sum(lv.size for lv in pyramid)
            if need > len(pixels):  # a new buffer: a reader keeps the old one, still valid
                grown = np.zeros(max(need, 2 * len(pixels)), np.uint8)
                grown[: self.used] = pixels[: self.used]
                pixels = grown
            rows = []
            for lv in pyramid:  # bytes past ``used``: no reader's slot points there yet
                pixels[self.used : self.used + lv.size] = lv.reshape(-1)
                rows.append((self.used, lv.shape[0], lv.shape[1]))
                self.used += lv.size
            n = len(first)
            lit = np.array(spr.glow, np.float64).reshape(-1, 3)
            lights = np.concatenate([lights, lit])
            self._arrays = (
                pixels,
                np.concatenate([levels, np.array(rows, np.int64)]),
                np.append(first, len(levels)),
                np.append(count, len(pyramid)),
                np.append(light_start, len(lights)),
                lights,
                np.append(height, float(spr.height_m)),
            )
            self._slot[id(spr)] = (spr, n)
            return n

    def scene_slots(self, scene) -> tuple[np.ndarray, np.ndarray]:
        """The slots of ``scene``'s street objects and free-standing signs (-1: not yet
        added).
        """
        got = self._scenes.get(scene)
        if got is None:
            got = (
                np.full(len(scene.obj_sprite), -1, np.int64),
                np.full(len(scene.free_signs), -1, np.int64),
            )
            self._scenes[scene] = got
        return got

    def add_planned(self, scene, src: np.ndarray, idx: np.ndarray) -> None:
        """Give every planned billboard (``src``, ``idx`` as :func:`_plan`) its slot (the
        slot tables are written after the bank holds the sprite, so a reader never sees a
        slot the bank lacks; ``blit_planned`` also checks the slot against the arrays it
        was given).
        """
        obj_slot, free_slot = self.scene_slots(scene)
        for s, i in zip(src.tolist(), idx.tolist()):
            table, j = (
                (obj_slot, i)
                if s == 0
                else (free_slot, i)
                if s == 1
                else (self.ped_slot, i % PEDESTRIAN_LOOKS)
            )
            if table[j] < 0:
                table[j] = self.slot(_sprite_of(scene, s, i)[0])


_banks: dict[float, SpriteBank] = {}


def bank(light: float) -> SpriteBank:
    """The process's :class:`SpriteBank` at light level ``light``."""
    got = _banks.get(light)
    if got is None:
        got = _banks.setdefault(light, SpriteBank(light))
    return got


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
        add(
            scene.obj_xy[cand],
            scene.obj_w[cand],
            scene.obj_z0[cand],
            scene.obj_h[cand],
            0,
            cand,
            0.4,
        )
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
    elif _full_circle(cam):
        cl, cr, cm = cam.col_of(bear - half), cam.col_of(bear + half), cam.col_of(bear)
        cr = np.where(cr < cl, cr + W * (2 * math.pi / cam.span), cr)
        ok = np.ones(len(it.dist), bool)
    else:  # a window: bearings measured from its middle, so that a sprite across either
        # edge keeps its box (one across the left edge starts at a column < 0)
        mid = cam.span / 2
        rel = (bear - cam.ang0 - mid + math.pi) % (2 * math.pi) - math.pi + mid
        cm = rel / cam.span * W
        cl = cm - half / cam.span * W
        cr = cm + half / cam.span * W
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
        arrays, cand, (px, py) = plan_inputs(scene, x, y, pedestrians)
        ox, oy, ow, oz0, oh, fx, fy, fw, fh = arrays
        got = kernels.call(
            "sprite_plan",
            ox,
            oy,
            ow,
            oz0,
            oh,
            cand,
            fx,
            fy,
            fw,
            fh,
            px,
            py,
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


_NO_PED_XY = np.zeros(0, np.float64)
_NO_PEDS = (_NO_PED_XY, _NO_PED_XY)


def plan_inputs(scene, x: float, y: float, pedestrians) -> tuple:
    """What the compiled ``sprite_plan`` takes of a scene and a viewer besides the
    camera: ``(arrays, candidates, (ped x, ped y))`` -- :func:`_plan_arrays`, the street
    objects near ``(x, y)`` and the pedestrians' coordinates (empty when none).
    """
    peds = _NO_PEDS
    if pedestrians is not None and len(pedestrians):
        xy = np.asarray(pedestrians, np.float64).reshape(-1, 2)
        peds = (np.ascontiguousarray(xy[:, 0]), np.ascontiguousarray(xy[:, 1]))
    return _plan_arrays(scene), scene.object_candidates(x, y, OBJECT_RANGE_M), peds


def plan_billboards(scene, cam, x, y, eye, pedestrians, t0, n0) -> tuple:
    """The billboards a frame draws, far to near (:func:`draw_sprites`' plan; see
    :func:`_plan`).
    """
    return _plan(scene, cam, x, y, eye, pedestrians, t0, n0)


def add_to_bank(scene, cond, plan) -> None:
    """Give the billboards of ``plan`` their slots in the bank of ``cond``'s light, and
    every street object of the scene its slot (a few dozen sprites shared by thousands of
    objects: filled at once, a frame does not find one missing again -- each miss costs
    the frame a second plan and blit).
    """
    bk = bank(_AMBIENT[cond.time_of_day])
    bk.add_planned(scene, plan[0], plan[1])
    obj_slot, _ = bk.scene_slots(scene)
    for j in np.flatnonzero(obj_slot < 0).tolist():
        obj_slot[j] = bk.slot(scene.obj_sprite[j])


def blit_inputs(scene, cond) -> tuple:
    """What the compiled ``blit_planned`` takes of a scene under ``cond`` besides the
    frame and the plan: ``(bank arrays, slots, instance ids, glow)`` (read now: a sprite
    added to the bank later is not in them, and ``blit_planned`` says so).
    """
    light = _AMBIENT[cond.time_of_day]
    bk = bank(light)
    kept = scene.__dict__.get("_blit_inputs")
    if kept is None:
        kept = scene.__dict__.setdefault("_blit_inputs", {})
    fixed = kept.get(light)  # the slot tables and ids: the same arrays (filled in place)
    if fixed is None:
        obj_slot, free_slot = bk.scene_slots(scene)
        fixed = kept[light] = (
            (obj_slot, free_slot, bk.ped_slot),
            (*scene.sprite_ids, PEDESTRIAN_BASE),
        )
    return bk.arrays(), fixed[0], fixed[1], cond.time_of_day != "day"


def _plan_arrays(scene) -> tuple[np.ndarray, ...]:
    """The scene's billboard arrays as ``sprite_plan`` takes them (kept on the scene): the
    street objects' x, y, width, base and height, the free-standing signs' x, y, width
    and height.
    """
    got = scene.__dict__.get("_sprite_plan_arrays")
    if got is None:
        fxy = np.asarray(scene.free_sign_xy, np.float64).reshape(-1, 2)
        got = (
            scene.obj_xy[:, 0],
            scene.obj_xy[:, 1],
            scene.obj_w,
            scene.obj_z0,
            scene.obj_h,
            fxy[:, 0],
            fxy[:, 1],
            scene.free_sign_w,
            scene.free_sign_h,
        )
        scene.__dict__["_sprite_plan_arrays"] = got  # one tuple: safe to read from threads
    return got


def plan_packed(scene) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_plan_arrays` stacked as rows (kept on the scene): the street objects' ``(x,
    y, width, base, height)`` and the free-standing signs' ``(x, y, width, height)``, two
    array arguments of ``post_frame`` where nine were.
    """
    got = scene.__dict__.get("_sprite_plan_packed")
    if got is None:
        a = _plan_arrays(scene)
        got = (np.stack(a[:5]), np.stack(a[5:]).reshape(4, -1))
        scene.__dict__["_sprite_plan_packed"] = got  # one tuple: safe to read from threads
    return got


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


_NO_IDS = np.zeros((0, 0), np.int32)
_NO_DEPTH = np.zeros((0, 0), np.float32)


def draw_sprites(scene, cam, frame, x, y, eye, cond, pedestrians, t0, n0) -> None:
    """Upright billboards, far to near, hidden behind nearer walls: ``t0`` is the distance
    (m, inf where none) of each column's nearest wall and ``n0`` the row of its top
    (sprites wholly behind them are skipped). Each is sampled from its pyramid level for
    its box (:func:`_sampled`); all of a frame's in one compiled call where it runs.
    """
    scene.ensure_signs()
    plan = _plan(scene, cam, x, y, eye, pedestrians, t0, n0)
    if not len(plan[0]):
        return
    blit_plan(scene, cam, frame, cond, plan)


def blit_plan(scene, cam, frame, cond, plan) -> None:
    """Draw the billboards ``plan`` (:func:`_plan`'s arrays) into ``frame``: all in one
    compiled call where it runs (the sprites new to the process's :class:`SpriteBank`
    added first), else sprite by sprite in numpy.
    """
    amb = _AMBIENT[cond.time_of_day]
    glow = cond.time_of_day != "day"
    # the frame's arrays for the compiled blit, empty where not drawn
    targets = (
        frame.rgb,
        frame.ids if frame.ids is not None else _NO_IDS,
        frame.depth if frame.depth is not None else _NO_DEPTH,
        cam.secant() if frame.depth is not None else _NO_DEPTH,
        frame.t_cols,
        frame.r_top,
    )
    if kernels.compiled() is not None:
        bk = bank(amb)
        for _ in range(2):  # a second time after adding the sprites new to the bank
            obj_slot, free_slot = bk.scene_slots(scene)
            got = kernels.call(
                "blit_planned",
                *targets,
                bk.arrays(),
                (obj_slot, free_slot, bk.ped_slot),
                (*scene.sprite_ids, PEDESTRIAN_BASE),
                plan,
                _full_circle(cam),
                glow,
            )
            if got is None:
                break  # the numpy path draws
            if got >= 0:
                return
            bk.add_planned(scene, plan[0], plan[1])
    _draw_numpy(scene, cam, frame, plan, amb, glow)


def _draw_numpy(scene, cam, frame, plan, amb: float, glow: bool) -> None:
    """:func:`draw_sprites`' blit in numpy, sprite by sprite (the reference of the
    compiled blit).
    """
    W = cam.width
    full = _full_circle(cam)
    src, idx, dist, c0s, c1s, r0s, r1s = plan
    for k in range(len(src)):
        spr, iid = _sprite_of(scene, int(src[k]), int(idx[k]))
        c0, c1, r0 = int(c0s[k]), int(c1s[k]), int(r0s[k])
        bw, bh = c1 - c0, int(r1s[k]) - r0
        img = _level(_pyramid(spr, amb), bw, bh)
        glows = spr.glow if glow else ()
        shifts = [0]
        if full and c0 < 0:
            shifts.append(W)
        if full and c1 > W:
            shifts.append(-W)
        for sh in shifts:
            if max(c0 + sh, 0) >= min(c1 + sh, W):
                continue
            _blit_sprite(cam, frame, img, (c0 + sh, r0, bw, bh), dist[k], iid, glows, spr)


def _blit_sprite(cam, frame, img, box, dist: np.float64, iid: int, glows, spr: Sprite) -> None:
    """Paint the sprite image ``img`` (a pyramid level) scaled to ``box = (c0, r0, w, h)``
    where it is opaque and nothing nearer than ``dist`` metres is in front; lamps glow at
    night.
    """
    W, H = cam.width, cam.height
    c0, r0, bw, bh = box
    a0, a1 = max(c0, 0), min(c0 + bw, W)
    ra, rb_ = max(r0, 0), min(r0 + bh, H)
    if a0 >= a1 or ra >= rb_:
        return
    sub = _sampled(img, box, (a0, a1, ra, rb_))
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
