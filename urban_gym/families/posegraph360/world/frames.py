"""Frame sources: where a pose graph's panoramas come from.

A :class:`FrameSource` supplies the equirectangular panorama of a frame;
:class:`RenderedFrames` renders them on demand (the environment passes
:class:`urban_gym.render.PanoramaRenderer`) into a memory-bounded cache. Real captures
(:class:`~urban_gym.families.posegraph360.world.capture.ImageFolderFrames`,
:class:`~urban_gym.families.posegraph360.world.capture.VideoFrames`) live in
:mod:`urban_gym.families.posegraph360.world.capture`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from urban_gym.caching import LRUCache

#: a rendered panorama is filled in tiles of ``1 / TILE_COLS`` of its width by ``1 /
#: TILE_ROWS`` of its height: a view renders the tiles it reads that are not yet drawn
TILE_COLS, TILE_ROWS = 64, 16
#: one new frame in this many starts with a window even where whole frames are cheaper
PROBE_EVERY = 16
#: the most positions :meth:`RenderedFrames.keep` remembers (a suite's start frames)
KEEP_POSITIONS = 4096


class FrameSource:
    """Supplies the equirectangular panorama of a frame.

    :meth:`panorama` returns ``(rgb, pano_heading)``: an ``(H, 2H, 3)`` uint8 image and
    the bearing (degrees) its centre column looks along.
    """

    def panorama(self, key: tuple[str, int], x: float, y: float) -> tuple[np.ndarray, float]:
        """The ``(rgb, pano_heading)`` of frame ``key`` at ``(x, y)`` metres (see the class)."""
        raise NotImplementedError

    def view_panorama(
        self,
        key: tuple[str, int],
        x: float,
        y: float,
        view: tuple[float, float, float, tuple[int, int]],
    ) -> tuple[np.ndarray, float]:
        """``(rgb, pano_heading)`` of frame ``key`` good for one perspective view, ``view =
        (yaw, pitch, fov, (w, h))``: a source may leave the pixels that view does not read
        undrawn. By default the whole panorama (:meth:`panorama`).
        """
        return self.panorama(key, x, y)

    def keep(self, key: tuple[str, int], x: float, y: float) -> None:
        """Hint that frame ``key`` at ``(x, y)`` will be wanted again and again (an
        episode's start frame: every task's start recurs with each episode of that task). A
        source with a cache may keep it apart from the frames a walk passes; by default
        nothing happens.
        """

    def close(self) -> None:
        """Release file handles (a source reopens them on demand)."""


class RenderedFrames(FrameSource):
    """Panoramas rendered on demand by ``render(x, y) -> (H, 2H, 3) uint8`` (a rendered
    panorama's centre column looks north, ``pano_heading`` 0).

    Frames are cached by position (rounded to a centimetre) in an LRU holding at most
    ``cache_mb`` megabytes, so the frames that two trajectories share at a junction are
    rendered once.

    With ``window(x, y, (c0, n), (r0, r1))`` (rows ``r0 .. r1 - 1`` of the ``n`` columns
    from ``c0``, wrapping, equal to that slice of ``render(x, y)``) and the panoramas'
    ``shape`` ``(H, W)``, a frame is drawn piecemeal: the first view of a frame
    (:meth:`view_panorama`) renders only the tiles (:data:`TILE_COLS` x :data:`TILE_ROWS`
    of them) it reads; a later view that reads a tile not yet drawn, or :meth:`panorama`,
    renders the rest of the frame at once (an agent that turns on the spot turns again).

    Frames named by :meth:`keep` (episodes' start frames) are held in a second LRU of the
    same size, apart from the frames a walk passes, which would otherwise push them out:
    every episode of a task starts on its frame again, so its pixels are drawn once per
    process, not once per episode.

    Whether a new frame starts with its view's tiles or whole is chosen by what the
    source has seen (:meth:`_start_whole`): a window costs ``w`` seconds, a whole frame
    ``f``, and a fraction ``p`` of the frames started with a window were later completed;
    windows go on while ``w < (1 - p) * f`` (a walker that looks ahead once per frame),
    else frames are drawn whole (a random agent turning on the spot at a small view, where
    a window's fixed costs make it nearly as dear as the whole), trying a window on every
    :data:`PROBE_EVERY`-th new frame to follow a change of habit. Either way every pixel
    is the same.
    """

    def __init__(
        self,
        render: Callable[[float, float], np.ndarray],
        cache_mb: float = 512.0,
        window: Callable[..., np.ndarray] | None = None,
        shape: tuple[int, int] | None = None,
    ):
        self.render = render
        self.window = window if shape is not None else None
        self.shape = shape
        # a whole panorama, or a _Canvas (pixels, drawn tiles, all drawn) when piecemeal
        # locked: a vector env's threads look frames up while another stores one
        mb = int(cache_mb * 1024 * 1024)
        self.cache: LRUCache[tuple[float, float], Any] = LRUCache(mb, lock=True)
        # the frames named by keep(): their pixels, and the positions to keep
        self.kept: LRUCache[tuple[float, float], Any] = LRUCache(mb, lock=True)
        self._keep: LRUCache[tuple[float, float], bool] = LRUCache(
            max_items=KEEP_POSITIONS, lock=True
        )
        self._lock = threading.Lock()
        # [seconds, count] of windows and whole frames; frames started with a window and
        # those of them completed later; new frames
        self._cost = {"window": [0.0, 0], "whole": [0.0, 0]}
        self._started = [0, 0]
        self._new = 0
        self._regions: dict[tuple, tuple[int, int, int, int]] = {}  # view -> pano_region
        # (x, y, pixels) of the whole frame a view last read (an agent turning on the spot
        # views one frame again and again): looked up without the caches' locks
        self._last: tuple[float, float, Any] = (np.nan, np.nan, None)

    def _start_whole(self) -> bool:
        """Whether a new frame is better drawn whole than from its view's tiles (see the
        class docstring; the lock is held).
        """
        self._new += 1
        (tw, nw), (tf, nf) = self._cost["window"], self._cost["whole"]
        if nw < 4 or nf < 4 or self._new % PROBE_EVERY == 0:
            return False
        p = self._started[1] / max(1, self._started[0])
        return tw / nw >= (1.0 - p) * (tf / nf)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["cache"] = LRUCache(self.cache.max_bytes, lock=True)
        state["kept"] = LRUCache(self.cache.max_bytes, lock=True)
        state["_keep"] = LRUCache(max_items=KEEP_POSITIONS, lock=True)
        state["_lock"] = None
        state["_regions"] = {}
        state["_last"] = (np.nan, np.nan, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _cached(self, k: tuple[float, float]) -> Any:
        """The entry of position ``k`` (kept or walked past), else None."""
        got = self.kept.get(k)
        return got if got is not None else self.cache.get(k)

    def _store(self, k: tuple[float, float], entry: Any, nbytes: int) -> None:
        """Cache the new entry of position ``k``: with the kept frames if it is one."""
        (self.kept if k in self._keep else self.cache).put(k, entry, nbytes)

    def keep(self, key: tuple[str, int], x: float, y: float) -> None:
        """Keep the frame at ``(x, y)`` with the kept frames (see the class docstring):
        moved there if it is cached, stored there when it is drawn.
        """
        k = (round(float(x), 2), round(float(y), 2))
        with self._lock:
            self._keep.put(k, True, 0)
            if k not in self.kept:
                got = self.cache.pop(k)
                if got is not None:
                    self.kept.put(k, got)

    def panorama(self, key: tuple[str, int], x: float, y: float) -> tuple[np.ndarray, float]:
        """The rendered panorama at ``(x, y)`` metres (cached) and ``pano_heading`` 0."""
        if self.shape is not None:
            h, w = self.shape
            return self._region(x, y, (0, w, 0, h)), 0.0
        k = (round(float(x), 2), round(float(y), 2))
        img = self._cached(k)
        if img is None:
            img = np.ascontiguousarray(self.render(float(x), float(y)), dtype=np.uint8)
            with self._lock:
                self._store(k, img, img.nbytes)
        return img, 0.0

    def view_panorama(
        self,
        key: tuple[str, int],
        x: float,
        y: float,
        view: tuple[float, float, float, tuple[int, int]],
    ) -> tuple[np.ndarray, float]:
        """The panorama at ``(x, y)`` with at least the pixels the perspective ``view =
        (yaw, pitch, fov, (w, h))`` reads drawn (the rest may be black), ``pano_heading`` 0.
        """
        if self.shape is None:
            return self.panorama(key, x, y)
        last = self._last
        if last[0] == x and last[1] == y:
            return last[2], 0.0
        from urban_gym.render.camera import pano_region

        k = (round(float(x), 2), round(float(y), 2))
        got = self._cached(k)
        if got is not None and got.complete:  # the whole frame is drawn
            self._last = (x, y, got.pixels)
            return got.pixels, 0.0
        yaw, pitch, fov, size = view
        vkey = (yaw, pitch, fov, tuple(size) if isinstance(size, (list, tuple)) else size)
        region = self._regions.get(vkey)
        if region is None:
            region = pano_region(size, fov, pitch, yaw, self.shape)
            if len(self._regions) >= 4096:
                self._regions.clear()
            self._regions[vkey] = region
        return self._region(x, y, region), 0.0

    def _region(self, x: float, y: float, region: tuple[int, int, int, int]) -> np.ndarray:
        """The cached canvas of ``(x, y)`` after drawing the tiles of ``region = (c0,
        n_cols, r0, n_rows)`` (columns wrapping) it lacks.
        """
        assert self.shape is not None and self.window is not None
        h, w = self.shape
        k = (round(float(x), 2), round(float(y), 2))
        bw, bh = -(-w // TILE_COLS), -(-h // TILE_ROWS)
        nbc, nbr = -(-w // bw), -(-h // bh)
        c0, n, r0, nr = region
        if n >= w:
            blocks = list(range(nbc))
        else:
            j0, j1 = c0 // bw, ((c0 + n - 1) % w) // bw
            blocks = list(range(j0, j1 + 1)) if j0 <= j1 else [*range(j0, nbc), *range(j1 + 1)]
            if len(blocks) == 1 and c0 + n > w:  # wraps within one block: all of it
                blocks = list(range(nbc))
        i0, i1 = r0 // bh, (r0 + nr - 1) // bh + 1
        with self._lock:
            got = self._cached(k)
            whole = False
            if got is None:
                whole = len(blocks) == nbc and i1 - i0 == nbr
                if not whole and self._start_whole():
                    whole = True
                elif not whole:
                    self._started[0] += 1
                    got = _Canvas(np.zeros((h, w, 3), np.uint8), np.zeros((nbr, nbc), bool))
                    self._store(k, got, got.nbytes)
            if got is not None:
                if got.complete:
                    return got.pixels
                canvas, done = got.pixels, got.done
                missing = np.flatnonzero(~done[i0:i1, blocks].all(axis=0))
                if len(missing) and done.any():  # a second view of this frame: all of it
                    blocks, i0, i1 = list(range(nbc)), 0, nbr
                    missing = np.flatnonzero(~done.all(axis=0))
                    self._started[1] += 1
        if whole:  # a new frame drawn at once: the drawn image is its canvas
            return self._draw_whole(k, x, y, (nbr, nbc))
        if not len(missing):
            return canvas
        todo = blocks[missing[0] : missing[-1] + 1]
        if len(todo) == nbc and i0 == 0 and i1 == nbr:
            return self._draw_whole(k, x, y, (nbr, nbc), got)
        start = todo[0] * bw
        width = len(todo) * bw - (nbc * bw - w if nbc - 1 in todo else 0)
        ra, rb = i0 * bh, min(h, i1 * bh)
        part = self._window(x, y, (start, width), (ra, rb))
        if start + width <= w:
            canvas[ra:rb, start : start + width] = part
        else:
            canvas[ra:rb, start:] = part[:, : w - start]
            canvas[ra:rb, : start + width - w] = part[:, w - start :]
        with self._lock:
            done[i0:i1, todo] = True
            got.complete = bool(done.all())
        return canvas

    def _window(
        self, x: float, y: float, cols: tuple[int, int], rows: tuple[int, int]
    ) -> np.ndarray:
        """``window(x, y, cols, rows)``, its seconds counted as a window's or a whole
        frame's (:meth:`_start_whole`).
        """
        assert self.shape is not None and self.window is not None
        t0 = time.perf_counter()
        part = self.window(float(x), float(y), cols, rows)
        whole = cols[1] == self.shape[1] and rows[1] - rows[0] == self.shape[0]
        cost = self._cost["whole" if whole else "window"]
        cost[0] += time.perf_counter() - t0
        cost[1] += 1
        return part

    def _draw_whole(
        self, k: tuple[float, float], x: float, y: float, tiles: tuple[int, int], got: Any = None
    ) -> np.ndarray:
        """Draw the whole frame of position ``k`` at once and cache it: as a new entry, or
        into ``got``, the entry a view started. The drawn image becomes the canvas itself
        where it is an array of its own (else it is copied into one): a whole frame needs
        no black canvas to be copied into.
        """
        assert self.shape is not None
        h, w = self.shape
        part = self._window(x, y, (0, w), (0, h))
        pixels = part if _owned(part, (h, w, 3)) else np.array(part, np.uint8, order="C")
        with self._lock:
            if got is None:
                entry = _Canvas(pixels, np.ones(tiles, bool), True)
                self._store(k, entry, entry.nbytes)
            else:
                got.pixels = pixels  # before complete: who sees complete reads these
                got.done[:] = True
                got.complete = True
        return pixels


class _Canvas:
    """A frame drawn piecemeal: its pixels (black where not drawn yet), which tiles are
    drawn, and whether all are.
    """

    __slots__ = ("complete", "done", "pixels")

    def __init__(self, pixels: np.ndarray, done: np.ndarray, complete: bool = False) -> None:
        self.pixels = pixels
        self.done = done
        self.complete = complete

    @property
    def nbytes(self) -> int:
        """Bytes held: the pixels and the map of drawn tiles."""
        return int(self.pixels.nbytes + self.done.nbytes)


def _owned(a: np.ndarray, shape: tuple[int, int, int]) -> bool:
    """Whether ``a`` is a C-contiguous ``uint8`` array of ``shape`` owning its memory (so
    that a cache may keep it as it is).
    """
    return (
        isinstance(a, np.ndarray)
        and a.dtype == np.uint8
        and a.shape == shape
        and a.flags.c_contiguous
        and a.flags.owndata
        and a.flags.writeable
    )
