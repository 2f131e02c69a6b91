"""Per-city data of the 2.5D ray caster, computed once per city and shared by the
panorama and first-person renderers.

* **walls**: every edge of every building footprint (holes included) as a segment
  ``A -> B`` with the building's height, its outward normal (rings are oriented so the
  outside lies to the right of ``A -> B``; a viewer outside sees ``A`` on the left), the
  building's facade style and the segment's offset along its ring (so window bays run on
  round corners);
* a **uniform grid** over the walls (``CELL_M`` metres) from which the walls near a
  viewer are gathered, cached per viewer cell;
* **signs**: one board per named POI. POIs on a facade get a board on that wall at
  their anchor, just above the shop windows; boards that would overlap move sideways
  along the wall or stack upwards, and boards wider than the wall are set on two lines
  or squeezed. POIs without a facade get a free-standing board on two posts. Board
  textures are packed into one atlas. Each facade board also gets a projecting (blade)
  sign perpendicular to the wall where there is room (:mod:`urban_gym.render.blades`);
* **objects**: street object positions and sprites (crossings are painted on the ground).
"""

from __future__ import annotations

import hashlib
import math
import sys
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
from shapely.geometry.polygon import orient

from urban_gym.render import blades as blades_module
from urban_gym.render import fonts as fonts_module
from urban_gym.render import kernels
from urban_gym.render import textures as textures_module
from urban_gym.render.ground import GroundPainter, GroundWindow, city_raster
from urban_gym.render.ids import OBJECT_BASE, SIGN_BASE
from urban_gym.render.textures import (
    FASCIA_M,
    SHADES,
    SIGN_PPM,
    Sprite,
    object_sprite,
    pack_atlas,
    render_sign,
    sign_colours,
    sign_width_m,
    style_of_building,
    tree_variants,
)
from urban_gym.world import names as names_module
from urban_gym.world.city import City
from urban_gym.world.diskcache import cached_array, cached_for_city, cached_object
from urban_gym.world.loader import city_fingerprint
from urban_gym.world.names import sign_language

CELL_M = 32.0
#: grid cells whose candidate walls a scene keeps (their indices: about 16 KB a cell in
#: the centre of Helsinki; gathering them anew costs ~100 us, a reset's first frame)
CELL_CACHE = 512
#: positions whose walls (facing the eye, with the bearings views needed) a scene keeps:
#: a turn in place finds them here (about 30 KB a position in the centre of Helsinki)
POSITION_CACHE = 256
#: bearing of the sun (degrees) used to shade walls
SUN_BEARING = 200.0
#: lowest board bottom (m) and the gap between stacked boards
SIGN_Z0 = FASCIA_M[0] + 0.1
SIGN_GAP = 0.2
#: the scene attributes kept as memory-mapped arrays in the render cache
_ATLASES = ("sign_atlas", "blade_atlas")


@dataclass
class SignPlacement:
    """Where a POI's board sits: on wall ``seg`` from ``u0`` to ``u1`` metres along it and
    from ``z0`` to ``z1`` metres up, with its texture at ``atlas[ay:ay+h, ax:ax+w]``.
    """

    poi: int
    seg: int
    u0: float
    u1: float
    z0: float
    z1: float
    ax: int
    ay: int
    w: int
    h: int


class Scene:
    """Everything the ray caster needs to know about ``city`` (see the module docstring)."""

    # the boards, set by ensure_signs() (the names _build_signs returns)
    signs: list[SignPlacement]
    poi_sign: dict[int, SignPlacement]
    free_signs: list[tuple[int, Sprite]]
    free_sign_xy: np.ndarray
    free_sign_w: np.ndarray
    free_sign_h: np.ndarray
    sign_atlas: np.ndarray
    sign_seg_start: np.ndarray
    sign_poi: np.ndarray
    sign_u0: np.ndarray
    sign_u1: np.ndarray
    sign_z0: np.ndarray
    sign_z1: np.ndarray
    sign_ax: np.ndarray
    sign_ay: np.ndarray
    sign_w: np.ndarray
    sign_h: np.ndarray
    # the projecting signs (urban_gym.render.blades.build_blades)
    blade_poi: np.ndarray
    blade_xy: np.ndarray
    blade_z: np.ndarray
    blade_rect: np.ndarray
    blade_atlas: np.ndarray

    def __init__(self, city: City, max_distance: float = 400.0) -> None:
        self.city = city
        self.max_distance = float(max_distance)
        self._lock = threading.Lock()
        # the walls and wall grid: for a loaded city once per machine, from the world cache
        self.__dict__.update(
            cached_for_city(
                "scene-walls", city, self._walls_and_grid, textures_module, _this_module()
            )
        )
        self._cand: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._cand_data: OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._obj_cand: OrderedDict[tuple, np.ndarray] = OrderedDict()
        #: ``(x, y, room)`` -> ``kernels.columns.position_walls``'s ``(codes, bearings,
        #: True)``: read and written without the lock (one dict operation), trimmed under it
        self.positions: dict[tuple, tuple[np.ndarray, np.ndarray, bool]] = {}
        self.position_cache = POSITION_CACHE
        self._signs_ready = False
        self._painter: GroundPainter | None = None
        self._ground: OrderedDict[tuple, GroundWindow] = OrderedDict()
        self._city_ground: GroundWindow | Literal[False] | None = None  # False: painted in windows
        self._build_objects()

    # ------------------------------------------------------------------ walls
    def _walls_and_grid(self) -> dict:
        """What :meth:`_build_walls` and :meth:`_build_grid` set, by attribute name."""
        before = set(self.__dict__)
        self._build_walls()
        self._build_grid()
        return {k: v for k, v in self.__dict__.items() if k not in before}

    def _build_walls(self) -> None:
        ax, ay, bx, by, bid, uoff = [], [], [], [], [], []
        self.building_segs: list[np.ndarray] = []
        n = 0
        for b in self.city.buildings:
            poly = orient(b.polygon, 1.0)  # exterior CCW, holes CW: outside on the right
            first = n
            for ring in [poly.exterior, *poly.interiors]:
                c = np.asarray(ring.coords)
                d = np.diff(c, axis=0)
                length = np.hypot(d[:, 0], d[:, 1])
                keep = length > 1e-6
                cum = np.concatenate([[0.0], np.cumsum(length)])[:-1]
                ax.append(c[:-1][keep, 0])
                ay.append(c[:-1][keep, 1])
                bx.append(c[1:][keep, 0])
                by.append(c[1:][keep, 1])
                uoff.append(cum[keep])
                bid.append(np.full(int(keep.sum()), b.id))
                n += int(keep.sum())
            self.building_segs.append(np.arange(first, n))
        cat = np.concatenate
        self.ax, self.ay = cat(ax), cat(ay)
        self.bx, self.by = cat(bx), cat(by)
        self.dx, self.dy = self.bx - self.ax, self.by - self.ay
        self.length = np.hypot(self.dx, self.dy)
        self.nx, self.ny = self.dy / self.length, -self.dx / self.length  # outward normal
        self.bid = cat(bid).astype(np.int32)
        self.uoff = cat(uoff)
        heights = np.array([b.height for b in self.city.buildings], dtype=np.float64)
        self.height = heights[self.bid]
        styles = np.array([style_of_building(b.id) for b in self.city.buildings], np.int32)
        self.style = styles[self.bid]
        self.n_segs = len(self.ax)
        # packed for one gather per frame: (6, n) rows ax, ay, bx, by, nx, ny
        self.seg_xy = np.stack([self.ax, self.ay, self.bx, self.by, self.nx, self.ny])
        # shade level by how squarely the wall faces the sun (0 = lit)
        nbear = np.degrees(np.arctan2(self.nx, self.ny))
        n = len(SHADES) - 1
        lit = (1.0 - np.cos(np.radians(nbear - SUN_BEARING))) / 2.0
        self.seg_shade = np.clip(np.round(lit * n), 0, n)

    def _build_grid(self) -> None:
        x0 = np.minimum(self.ax, self.bx)
        x1 = np.maximum(self.ax, self.bx)
        y0 = np.minimum(self.ay, self.by)
        y1 = np.maximum(self.ay, self.by)
        bx0, by0, bx1, by1 = self.city.bounds
        self.gx0, self.gy0 = bx0 - CELL_M, by0 - CELL_M
        self.gnx = int(math.ceil((bx1 - self.gx0) / CELL_M)) + 2
        self.gny = int(math.ceil((by1 - self.gy0) / CELL_M)) + 2
        i0 = np.clip(((x0 - self.gx0) // CELL_M).astype(int), 0, self.gnx - 1)
        i1 = np.clip(((x1 - self.gx0) // CELL_M).astype(int), 0, self.gnx - 1)
        j0 = np.clip(((y0 - self.gy0) // CELL_M).astype(int), 0, self.gny - 1)
        j1 = np.clip(((y1 - self.gy0) // CELL_M).astype(int), 0, self.gny - 1)
        # every (wall, cell) pair of each wall's bounding box of cells, row by row
        n_i = i1 - i0 + 1
        cnt = n_i * (j1 - j0 + 1)
        segs_a = np.repeat(np.arange(self.n_segs), cnt)
        k = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        cells_a = (j0[segs_a] + k // n_i[segs_a]) * self.gnx + i0[segs_a] + k % n_i[segs_a]
        order = np.argsort(cells_a, kind="stable")
        self.grid_segs = segs_a[order].astype(np.int32)
        self.grid_start = np.searchsorted(cells_a[order], np.arange(self.gnx * self.gny + 1))

    def candidates(self, x: float, y: float) -> np.ndarray:
        """Indices of walls within about ``max_distance`` of ``(x, y)``, in index order
        (cached for the last :data:`CELL_CACHE` grid cells).
        """
        ci, cj = int((x - self.gx0) // CELL_M), int((y - self.gy0) // CELL_M)
        key = (ci, cj)
        with self._lock:
            hit = self._cand.get(key)
            if hit is not None:
                self._cand.move_to_end(key)
                return hit
        segs = self._cell_walls(ci, cj)
        with self._lock:
            self._cand[key] = segs
            while len(self._cand) > CELL_CACHE:
                self._cand.popitem(last=False)
        return segs

    def remember_position(self, key: tuple, walls: tuple[np.ndarray, np.ndarray, bool]) -> None:
        """Keep the walls of position ``key`` (``(x, y, room)``, room -1 outside) as the
        compiled candidate pass made them (``(codes, bearings, True)``), for the next frame
        drawn there: one dict store (atomic under the GIL); past :attr:`position_cache`
        positions, :meth:`trim_positions` drops the oldest quarter.
        """
        positions = self.positions
        positions[key] = walls
        if len(positions) > self.position_cache:
            self.trim_positions()

    def trim_positions(self) -> None:
        """Drop the oldest positions down to three quarters of :attr:`position_cache`
        (a trim every quarter of it, not every new position), under the lock; the snapshot
        of the keys, ``list(dict)``, is taken in one step under the GIL.
        """
        with self._lock:
            keys = list(self.positions)
            keep = self.position_cache - self.position_cache // 4
            for key in keys[: max(len(keys) - keep, 0)]:
                self.positions.pop(key, None)

    def candidate_data(self, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`candidates` and their rows of ``seg_xy`` (``(6, n)``), for the numpy
        path (the compiled one reads :attr:`wall_rows` itself), cached for the last 64 cells.
        """
        segs = self.candidates(x, y)
        key = (int((x - self.gx0) // CELL_M), int((y - self.gy0) // CELL_M))
        with self._lock:
            hit = self._cand_data.get(key)
            if hit is not None and hit[0] is segs:
                self._cand_data.move_to_end(key)
                return hit
        entry = (segs, np.ascontiguousarray(self.seg_xy[:, segs]))
        with self._lock:
            self._cand_data[key] = entry
            while len(self._cand_data) > 64:
                self._cand_data.popitem(last=False)
        return entry

    def _cell_walls(self, ci: int, cj: int) -> np.ndarray:
        """The walls of :meth:`candidate_data` for grid cell ``(ci, cj)``: those listed in
        the cells within ``max_distance`` whose nearest point lies within ``max_distance``
        plus a cell of the cell's centre (int64, in index order); compiled where
        :mod:`urban_gym.render.kernels` can, else :meth:`_cell_walls_numpy`.
        """
        r = int(math.ceil(self.max_distance / CELL_M)) + 1
        i_lo, i_hi = max(ci - r, 0), min(ci + r, self.gnx - 1)
        j_lo, j_hi = max(cj - r, 0), min(cj + r, self.gny - 1)
        cx, cy = self.gx0 + (ci + 0.5) * CELL_M, self.gy0 + (cj + 0.5) * CELL_M
        if i_lo <= i_hi and j_lo <= j_hi:
            got = kernels.call(
                "cell_candidates",
                self.grid_start,
                self.grid_segs,
                i_lo,
                i_hi,
                j_lo,
                j_hi,
                self.gnx,
                self.ax,
                self.ay,
                self.bx,
                self.by,
                cx,
                cy,
                self.max_distance + CELL_M,
            )
            if got is not None:
                return got
        return self._cell_walls_numpy(ci, cj)

    def _cell_walls_numpy(self, ci: int, cj: int) -> np.ndarray:
        """:meth:`_cell_walls` in numpy (the reference of the compiled kernel)."""
        r = int(math.ceil(self.max_distance / CELL_M)) + 1
        ii = np.arange(max(ci - r, 0), min(ci + r, self.gnx - 1) + 1)
        jj = np.arange(max(cj - r, 0), min(cj + r, self.gny - 1) + 1)
        cells = (jj[:, None] * self.gnx + ii[None, :]).ravel()
        if len(cells):
            starts, ends = self.grid_start[cells], self.grid_start[cells + 1]
            counts = ends - starts
            tot = int(counts.sum())
            idx = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(tot)
            seen = np.zeros(self.n_segs, bool)  # the distinct walls, in order (as np.unique)
            seen[self.grid_segs[idx]] = True
            segs = np.flatnonzero(seen).astype(np.int32)
        else:
            segs = np.zeros(0, np.int32)
        cx, cy = self.gx0 + (ci + 0.5) * CELL_M, self.gy0 + (cj + 0.5) * CELL_M
        # keep walls whose nearest point lies within max_distance of the cell
        d = _point_segment_distance(
            cx, cy, self.ax[segs], self.ay[segs], self.bx[segs], self.by[segs]
        )
        segs = segs[d <= self.max_distance + CELL_M].astype(np.int64)
        return segs

    # ------------------------------------------------------------------ signs
    @property
    def ground(self) -> GroundPainter:
        """The city's :class:`~urban_gym.render.ground.GroundPainter` (built on first use:
        a city whose ground raster is on disk never needs one).
        """
        if self._painter is None:
            self._painter = GroundPainter.for_city(self.city)
        return self._painter

    def ensure_signs(self) -> None:
        """Place and render every POI's board (done once, on first use; for a city loaded
        by :func:`~urban_gym.world.loader.load_city` the boards come from the render cache
        on disk after the first time on a machine, keyed by the city, the drawing code and
        the fonts installed).
        """
        with self._lock:
            if self._signs_ready:
                return
            fp = city_fingerprint(self.city)
            if fp is None:
                data = self._build_signs()
            else:
                # the boards' pixels depend on the fonts installed (Noto Sans CJK or not)
                key = (fp + fonts_module.fonts_key()).encode()
                data = self._cached_signs("signs-" + hashlib.sha256(key).hexdigest()[:20])
            self.__dict__.update(data)
            self._signs_ready = True

    def _cached_signs(self, name: str) -> dict:
        """The boards of :meth:`_build_signs` from the render cache: the atlas as a
        memory-mapped array (shared by the processes of a machine), the rest pickled.
        """
        built: list[dict] = []

        def build() -> dict:
            if not built:
                built.append(self._build_signs())
            return built[0]

        # the sign's language (its face) comes from the names module
        mods = (textures_module, _this_module(), blades_module, fonts_module, names_module)
        atlas = cached_array(name + "-atlas", lambda: build()["sign_atlas"], *mods)
        blade_atlas = cached_array(name + "-blades", lambda: build()["blade_atlas"], *mods)
        rest = cached_object(
            name,
            lambda: {k: v for k, v in build().items() if k not in _ATLASES},
            *mods,
        )
        return {**rest, "sign_atlas": atlas, "blade_atlas": blade_atlas}

    def _build_signs(self) -> dict:
        """Every POI's board: placements, the packed atlas and the free-standing boards, as
        the attributes they become (``sign_*``, ``free_sign*``, ``signs``, ``poi_sign``).
        """
        city = self.city
        textures = []
        placements: list[tuple[int, int, float, float, float, float]] = []
        placed: dict[int, list[tuple[float, float, float, float]]] = {}
        free_signs: list[tuple[int, Sprite]] = []
        for p in city.pois:
            if not p.name:
                continue
            board, text = sign_colours(p.id, p.category)
            lang = sign_language(p.tags, city)  # kanji alone: the Japanese face in Japan
            if p.building_id is None or p.facade is None:
                tex = render_sign(p.name, board, text, 1, width_m=4.0, lang=lang)
                free_signs.append((p.id, _post_sign(tex)))
                continue
            seg = self._facade_segment(p.building_id, p.anchor, p.facing)
            L = float(self.length[seg])
            avail = max(L - 0.4, 0.6)
            lines = 1
            w = sign_width_m(p.name, 1, lang)
            if w > avail and " " in p.name:
                w2 = sign_width_m(p.name, 2, lang)
                if w2 < w:
                    lines, w = 2, w2
            w = min(w, avail)
            tex = render_sign(p.name, board, text, lines, width_m=w, lang=lang)
            u_anchor = float(
                np.clip(
                    (p.anchor[0] - self.ax[seg]) * self.dx[seg] / L
                    + (p.anchor[1] - self.ay[seg]) * self.dy[seg] / L,
                    0.0,
                    L,
                )
            )
            u0, z0 = self._place(
                placed.setdefault(seg, []),
                u_anchor,
                tex.width_m,
                tex.height_m,
                L,
                float(self.height[seg]),
            )
            placed[seg].append((u0, u0 + tex.width_m, z0, z0 + tex.height_m))
            placements.append((p.id, seg, u0, u0 + tex.width_m, z0, z0 + tex.height_m))
            textures.append(tex.image)
        out: dict = {"free_signs": free_signs}
        out["free_sign_xy"] = np.array(
            [city.pois[pid].anchor for pid, _ in free_signs], dtype=np.float64
        ).reshape(-1, 2)
        out["free_sign_w"] = np.array([s.width_m for _, s in free_signs], dtype=np.float64)
        out["free_sign_h"] = np.array([s.height_m for _, s in free_signs], dtype=np.float64)
        atlas, rects = pack_atlas(textures)
        out["sign_atlas"] = atlas
        signs = [SignPlacement(*pl, *rc) for pl, rc in zip(placements, rects)]
        signs.sort(key=lambda s: (s.seg, s.u0))
        out["signs"] = signs
        segs = np.array([s.seg for s in signs], dtype=np.int64)
        out["sign_seg_start"] = np.searchsorted(segs, np.arange(self.n_segs + 1))
        f = np.array
        out["sign_poi"] = f([s.poi for s in signs], np.int64)
        for key in ("u0", "u1", "z0", "z1", "ax", "ay", "w", "h"):
            out["sign_" + key] = f([getattr(s, key) for s in signs], np.float64)
        out["poi_sign"] = {s.poi: s for s in signs}
        names = {p.id: p.name for p in city.pois if p.name}
        colours = {p.id: sign_colours(p.id, p.category) for p in city.pois if p.name}
        langs = {p.id: sign_language(p.tags, city) for p in city.pois if p.name}
        out.update(blades_module.build_blades(self, signs, names, colours, langs))
        return out

    # the scene's arrays as the compiled frame kernel (kernels.frame.frame_maps) takes them
    @cached_property
    def frame_arrays(self) -> tuple[np.ndarray, ...]:
        """The walls' ``(bid, height, length, style, uoff, seg_shade)``."""
        walls = (self.bid, self.height, self.length, self.style, self.uoff, self.seg_shade)
        return tuple(np.ascontiguousarray(v) for v in walls)

    @cached_property
    def frame_packed(self) -> tuple[np.ndarray, np.ndarray]:
        """:attr:`frame_arrays` stacked by type, as ``frame_maps`` takes them: ``(bid,
        style)`` and ``(height, length, uoff, seg_shade)`` as the rows of two arrays (two
        arguments where six were: numba unpacks every array argument of every call).
        """
        bid, height, length, style, uoff, shade = self.frame_arrays
        return np.stack([bid, style]), np.stack([height, length, uoff, shade])

    @cached_property
    def wall_rows(self) -> np.ndarray:
        """``seg_xy`` transposed, ``(n, 6)``: one wall's ``ax, ay, bx, by, nx, ny`` in one
        cache line, as the compiled wall pass reads them.
        """
        return np.ascontiguousarray(self.seg_xy.T)

    @cached_property
    def sign_arrays(self) -> tuple[np.ndarray, ...]:
        """The boards' table ``(seg_start, u0, u1, z0, z1, ax, ay, w, h, poi)`` (the boards
        placed: :meth:`ensure_signs` first).
        """
        names = ("seg_start", "u0", "u1", "z0", "z1", "ax", "ay", "w", "h", "poi")
        return tuple(np.ascontiguousarray(getattr(self, "sign_" + n)) for n in names)

    @cached_property
    def sign_packed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:attr:`sign_arrays` as ``frame_maps`` takes them: ``seg_start``, the rows
        ``(u0, u1, z0, z1, ax, ay, w, h)`` of one array, and ``poi``.
        """
        a = self.sign_arrays
        return a[0], np.stack(a[1:9]), a[9]

    @cached_property
    def sprite_ids(self) -> tuple[np.ndarray, np.ndarray]:
        """The instance ids of the street objects and the free-standing boards, as the
        compiled sprite blit takes them (:meth:`ensure_signs` first).
        """
        free = np.array([pid for pid, _ in self.free_signs], np.int64)
        return OBJECT_BASE + self.obj_ids.astype(np.int64), SIGN_BASE + free

    @cached_property
    def sign_atlas_array(self) -> np.ndarray:
        """The boards' atlas as a read-only plain array (a memory map stays one underneath):
        one type of argument, however the atlas was made (:meth:`ensure_signs` first).
        """
        out = np.asarray(self.sign_atlas).view(np.ndarray)
        out.flags.writeable = False
        return out

    def poi_sign_placement(self, poi: int) -> tuple[float, float] | None:
        """``(z0, z1)``: the heights (metres) of the bottom and top of the facade board
        of POI ``poi``; None for a POI without one (no name, or a free-standing board).
        """
        self.ensure_signs()
        s = self.poi_sign.get(int(poi))
        return None if s is None else (float(s.z0), float(s.z1))

    def _facade_segment(self, b: int, anchor, facing: float) -> int:
        segs = self.building_segs[b]
        px, py = anchor
        d = _point_segment_distance(
            px, py, self.ax[segs], self.ay[segs], self.bx[segs], self.by[segs]
        )
        nb = np.degrees(np.arctan2(self.nx[segs], self.ny[segs]))
        da = np.abs((nb - facing + 180.0) % 360.0 - 180.0)
        k = np.lexsort((da, np.round(d, 2)))[0]
        return int(segs[k])

    @staticmethod
    def _place(taken, u_anchor, w, h, L, height) -> tuple[float, float]:
        """``(u0, z0)`` of a ``w`` x ``h`` m board on a wall of length ``L`` and building
        ``height``: at the anchor if free, else moved sideways by at most
        ``max(2, w / 2)`` m, else stacked on a higher row, else wherever it moves least.
        """

        def clamp_u(u0: float) -> float:
            return float(min(max(u0, 0.2), max(L - 0.2 - w, 0.2)))

        ideal = clamp_u(u_anchor - w / 2)
        levels = sorted({SIGN_Z0} | {t[3] + SIGN_GAP for t in taken})
        if height < SIGN_Z0 + h + 0.1:
            levels = [max(0.3, height - h - 0.1)] + levels
        top = max(height - 0.1, levels[0] + h)
        best: tuple[float, float, float] | None = None
        for z0 in levels:
            if z0 + h > top:
                break
            row = [t for t in taken if t[2] < z0 + h and z0 < t[3]]
            cands = {ideal}
            for t in row:
                cands |= {clamp_u(t[1] + SIGN_GAP), clamp_u(t[0] - SIGN_GAP - w)}
            free = [u for u in cands if all(not (u < t[1] and t[0] < u + w) for t in row)]
            if not free:
                continue
            u = min(free, key=lambda v: (abs(v - ideal), v))
            if abs(u - ideal) <= max(2.0, w / 2):
                return u, z0
            if best is None or abs(u - ideal) < best[0]:
                best = (abs(u - ideal), u, z0)
        if best is not None:
            return best[1], best[2]
        return ideal, levels[0]

    # ------------------------------------------------------------------ objects
    def _build_objects(self) -> None:
        objs = [o for o in self.city.objects if object_sprite(o.kind) is not None]
        self.obj_ids = np.array([o.id for o in objs], dtype=np.int64)
        self.obj_xy = np.array([o.position for o in objs], dtype=np.float64).reshape(-1, 2)
        nt = tree_variants()
        self.obj_sprite: list[Sprite] = [
            object_sprite(o.kind, o.id % nt if o.kind == "tree" else 0)  # type: ignore[misc]
            for o in objs
        ]
        self.obj_w = np.array([s.width_m for s in self.obj_sprite], dtype=np.float64)
        self.obj_z0 = np.array([s.base_m for s in self.obj_sprite], dtype=np.float64)
        self.obj_h = np.array([s.height_m for s in self.obj_sprite], dtype=np.float64)

    def object_candidates(self, x: float, y: float, radius: float) -> np.ndarray:
        """Indices into ``obj_ids`` of objects within about ``radius`` m (cached per cell)."""
        ci, cj = int((x - self.gx0) // CELL_M), int((y - self.gy0) // CELL_M)
        key = (ci, cj, radius)
        with self._lock:
            hit = self._obj_cand.get(key)
            if hit is not None:
                self._obj_cand.move_to_end(key)
                return hit
        cx, cy = self.gx0 + (ci + 0.5) * CELL_M, self.gy0 + (cj + 0.5) * CELL_M
        d = np.hypot(self.obj_xy[:, 0] - cx, self.obj_xy[:, 1] - cy)
        sel = np.flatnonzero(d <= radius + CELL_M)
        with self._lock:
            self._obj_cand[key] = sel
            while len(self._obj_cand) > 256:
                self._obj_cand.popitem(last=False)
        return sel

    # ------------------------------------------------------------------ ground
    def ground_window(self, x: float, y: float) -> GroundWindow:
        """The ground raster around ``(x, y)`` in daylight colours: the whole city's
        (:func:`~urban_gym.render.ground.city_raster`) where it fits, else a cached window.
        """
        if self._city_ground is None:
            with self._lock:
                if self._city_ground is None:
                    self._city_ground = city_raster(self.city, lambda: self.ground) or False
        if self._city_ground is not False:
            return self._city_ground
        key = GroundPainter.snapped_centre(x, y)
        with self._lock:
            win = self._ground.get(key)
            if win is not None:
                self._ground.move_to_end(key)
                return win
        win = self.ground.paint(*key)
        with self._lock:
            self._ground[key] = win
            while len(self._ground) > 6:
                self._ground.popitem(last=False)
        return win


def _this_module():
    return sys.modules[__name__]


def _post_sign(tex) -> Sprite:
    """A free-standing board on two posts: the board from 1.5 m up."""
    import cv2

    ppm = SIGN_PPM
    bw, bh = tex.image.shape[1], tex.image.shape[0]
    post_h = int(round(1.5 * ppm))
    rgba = np.zeros((bh + post_h, bw, 4), np.uint8)
    rgba[:bh, :, :3] = tex.image
    rgba[:bh, :, 3] = 255
    pw = max(2, int(0.08 * ppm))
    for xc in (int(bw * 0.2), int(bw * 0.8)):
        cv2.rectangle(
            rgba, (xc - pw // 2, bh), (xc + pw // 2, bh + post_h - 1), (70, 70, 70, 255), -1
        )
    return Sprite(rgba, tex.width_m, tex.height_m + 1.5)


def _point_segment_distance(px, py, ax, ay, bx, by) -> np.ndarray:
    dx, dy = bx - ax, by - ay
    ll = dx * dx + dy * dy
    t = np.clip(((px - ax) * dx + (py - ay) * dy) / np.where(ll > 0, ll, 1.0), 0.0, 1.0)
    return np.hypot(ax + t * dx - px, ay + t * dy - py)


_scenes: weakref.WeakKeyDictionary[City, dict[float, Scene]] = weakref.WeakKeyDictionary()
_scenes_lock = threading.Lock()


def scene_for(city: City, max_distance: float = 400.0) -> Scene:
    """The shared :class:`Scene` of ``city`` (built on first use, kept while the city
    lives).
    """
    with _scenes_lock:
        per = _scenes.setdefault(city, {})
        sc = per.get(max_distance)
        if sc is None:
            sc = per[max_distance] = Scene(city, max_distance)
        return sc


__all__ = ["CELL_M", "Scene", "SignPlacement", "scene_for"]
