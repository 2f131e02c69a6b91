"""Equirectangular panorama -> perspective camera view.

Conventions (the same everywhere in urban_gym):

* **yaw** is a compass bearing in degrees clockwise from north (0 north, 90 east);
  **pitch** is degrees above the horizon (positive looks up), in [-90, 90];
* **fov** is the *horizontal* field of view in degrees, in (0, 180); the vertical one
  follows from the aspect ratio (square pixels);
* an **equirectangular panorama** is an ``(H, 2H, 3)`` ``uint8`` RGB image. Its centre
  column looks along bearing ``pano_heading``, bearing grows to the right (one full turn
  over the width), row 0 looks straight up and the last row straight down. Panoramas
  rendered by :class:`~urban_gym.render.panorama.PanoramaRenderer` have
  ``pano_heading`` 0 (centre column = north); for a real photo pass the bearing its
  centre column faces.
* images are indexed ``[row, col]``; row 0 is the top, col 0 the left.

Column ``c`` of a ``W``-wide panorama (pixel centre ``c + 0.5``) looks along bearing
``pano_heading + ((c + 0.5) / W - 0.5) * 360`` and row ``r`` at elevation
``90 - (r + 0.5) / H * 180`` degrees.

:func:`perspective` samples the panorama with ``cv2.remap`` (bilinear, wrapping across the
panorama's left/right seam). The remap grids are cached per (size, fov, pitch, yaw relative
to ``pano_heading``, panorama shape) in a bounded LRU cache, so a fixed set of headings
costs one ``cv2.remap`` per view; a new yaw shifts the camera's yaw-free grid (at pitch 0
one row of it: a level view's columns are the same in every row).
"""

from __future__ import annotations

import math
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence

import cv2
import numpy as np

from urban_gym.caching import lru_cached
from urban_gym.errors import RenderError
from urban_gym.render import threads

#: Most remap grids kept in the cache, and most bytes they may take together.
CACHE_MAX_ENTRIES = 256
CACHE_MAX_BYTES = 32 * 1024 * 1024  # a miss costs a shift of the yaw-free grid
#: Most bytes of fixed-point columns a level camera keeps (one row of them per shift).
LEVEL_COLUMNS_BYTES = 4 * 1024 * 1024

_cache: OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = OrderedDict()
_cache_bytes = 0
_lock = threading.Lock()


def check_equirect(pano: np.ndarray, name: str = "panorama") -> np.ndarray:
    """Check that ``pano`` is a non-empty ``(H, 2H, 3)`` ``uint8`` array and return it
    (C-contiguous). Raises :class:`RenderError` naming what is wrong.
    """
    if not isinstance(pano, np.ndarray):
        raise RenderError(f"{name} must be a numpy array, got {type(pano).__name__}")
    if pano.dtype != np.uint8:
        raise RenderError(
            f"{name} dtype={pano.dtype} must be uint8 (convert with "
            "np.clip(x * 255, 0, 255).astype(np.uint8) or similar)"
        )
    if pano.ndim != 3 or pano.shape[2] != 3:
        raise RenderError(f"{name} shape={pano.shape} must be (H, 2H, 3) RGB")
    h, w = pano.shape[:2]
    if h == 0 or w == 0:
        raise RenderError(f"{name} shape={pano.shape} is empty")
    if w != 2 * h:
        raise RenderError(
            f"{name} shape={pano.shape} is not equirectangular: width {w} must be twice "
            f"the height {h} (2:1)"
        )
    return np.ascontiguousarray(pano)


def _plain_equirect(pano: object) -> bool:
    """Whether ``pano`` is already what :func:`check_equirect` returns: a C-contiguous
    ``(H, 2H, 3)`` uint8 array, ``H > 0`` (checked in the order cheapest first).
    """
    if type(pano) is not np.ndarray or pano.dtype.type is not np.uint8 or pano.ndim != 3:
        return False
    h, w, c = pano.shape
    return c == 3 and h > 0 and w == 2 * h and pano.flags.c_contiguous


def image_size(size: int | tuple[int, int]) -> tuple[int, int]:
    """``(w, h)`` from ``size`` (an int for a square image or a ``(w, h)`` pair); raises
    :class:`RenderError` for non-positive or non-integer sizes.
    """
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        w = h = int(size)
    elif isinstance(size, (tuple, list)) and len(size) == 2:
        if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in size):
            raise RenderError(f"size={size!r} must hold two ints (w, h)")
        w, h = int(size[0]), int(size[1])
    else:
        raise RenderError(f"size={size!r} must be an int or a (w, h) pair of ints")
    if w <= 0 or h <= 0:
        raise RenderError(f"size={size!r} must be positive")
    if w > 16384 or h > 16384:
        raise RenderError(f"size={size!r} is larger than 16384 pixels")
    return w, h


def check_fov(fov: float) -> float:
    """``fov`` as a float after checking it lies in (0, 180) degrees."""
    f = finite_number("fov", fov)
    if not 0.0 < f < 180.0:
        raise RenderError(f"fov={fov!r} must be in (0, 180) degrees")
    return f


def check_pitch(pitch: float) -> float:
    """``pitch`` as a float after checking it lies in [-90, 90] degrees."""
    p = finite_number("pitch", pitch)
    if not -90.0 <= p <= 90.0:
        raise RenderError(f"pitch={pitch!r} must be in [-90, 90] degrees")
    return p


def finite_number(name: str, value: float) -> float:
    """``value`` as a finite float, else :class:`RenderError` naming ``name``."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise RenderError(f"{name}={value!r} is not a number") from exc
    if not math.isfinite(v):
        raise RenderError(f"{name}={value!r} must be finite")
    return v


def view_directions(
    w: int, h: int, fov: float, pitch: float, yaw: float
) -> tuple[np.ndarray, np.ndarray]:
    """Bearing and elevation (degrees, ``(h, w)`` float64 each) of every pixel centre of a
    perspective camera looking along ``yaw`` / ``pitch`` with horizontal ``fov``.
    """
    f = (w / 2.0) / math.tan(math.radians(fov) / 2.0)
    xs = np.arange(w, dtype=np.float64) + 0.5 - w / 2.0
    ys = h / 2.0 - (np.arange(h, dtype=np.float64) + 0.5)
    psi, th = math.radians(yaw), math.radians(pitch)
    fwd = np.array([math.sin(psi) * math.cos(th), math.cos(psi) * math.cos(th), math.sin(th)])
    right = np.array([math.cos(psi), -math.sin(psi), 0.0])
    up = np.array([-math.sin(psi) * math.sin(th), -math.cos(psi) * math.sin(th), math.cos(th)])
    d = xs[None, :, None] * right + ys[:, None, None] * up + f * fwd
    bearing = np.degrees(np.arctan2(d[..., 0], d[..., 1]))
    elev = np.degrees(np.arctan2(d[..., 2], np.hypot(d[..., 0], d[..., 1])))
    return bearing, elev


def _build_maps(
    w: int, h: int, fov: float, pitch: float, rel_yaw: float, pw: int, ph: int
) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-point remap grids at ``rel_yaw``: the yaw-free grid of this camera shifted by
    ``rel_yaw`` (turning about the vertical shifts every bearing by the same angle, so the
    panorama columns by the same ``rel_yaw / 360 * pw`` pixels; elevations do not change):
    what ``cv2.convertMaps`` (``CV_16SC2``) makes of the float32 columns ``(mx0 + shift)
    mod pw`` and rows ``my`` of :func:`_yaw_free_maps`.

    A level camera's columns do not change down the view (:func:`_level_grid`): its grids
    are built from one row of columns without OpenCV, the same integers it gives.
    """
    shift = rel_yaw / 360.0 * pw
    level = _level_grid(w, h, fov, pitch, pw, ph)
    if level is not None:
        return level.shifted(shift, pw)
    mx0, my = _yaw_free_maps(w, h, fov, pitch, pw, ph)
    lo, hi, _, _ = _view_extent(w, h, fov, pitch, pw, ph)
    mx = np.add(mx0, shift)
    _wrap(mx, lo + shift, hi + shift, pw)
    return cv2.convertMaps(mx.astype(np.float32), my, cv2.CV_16SC2)


def _wrap(mx: np.ndarray, lo: float, hi: float, pw: int) -> None:
    """Columns ``mx`` (in ``[-0.5, 2 pw)``, none below ``lo`` nor above ``hi``) into ``[0,
    pw)`` in place, as ``np.mod`` would but six times faster; a side no column is on costs
    nothing (rounding is monotonic: ``x + s <= hi + s`` for every column ``x <= hi``).
    """
    if hi >= pw:
        np.subtract(mx, pw, out=mx, where=mx >= pw)
    if lo < 0.0:
        np.add(mx, pw, out=mx, where=mx < 0.0)


class _LevelGrid:
    """The yaw-free remap grid of a camera whose pixels' columns do not change down the
    view (pitch 0): the columns of one row (float64, not wrapped; ``lo``/``hi`` the least
    and greatest) and the fixed-point rows: ``rows32`` (the whole pixels of the rows in the
    high half of ``CV_16SC2``'s int32 word, as a little-endian machine lays it out) and
    ``m2_rows`` (their 32nds, times 32).

    The fixed-point columns of each shift are kept (:data:`LEVEL_COLUMNS_BYTES` of them at
    most): a turn that comes back -- every yaw of a rollout is a trajectory's heading plus
    a whole number of degrees -- then costs the two whole-grid operations that join them
    to the rows, not the dozen small ones that make them.
    """

    __slots__ = ("_cols", "_max_cols", "hi", "lo", "m2_rows", "nbytes", "row", "rows32")

    def __init__(self, row: np.ndarray, my: np.ndarray) -> None:
        self.row = row
        self.lo, self.hi = float(row.min()), float(row.max())
        rows = _fixed_point(my)
        self.rows32 = (rows >> 5) << 16
        self.m2_rows = ((rows & 31) * 32).astype(np.uint16)
        for a in (self.row, self.rows32, self.m2_rows):
            a.setflags(write=False)
        self.nbytes = int(row.nbytes + self.rows32.nbytes + self.m2_rows.nbytes)
        # shift -> (whole pixels of the columns as int32 words, their 32nds)
        self._cols: dict[float, tuple[np.ndarray, np.ndarray]] = {}
        self._max_cols = max(16, LEVEL_COLUMNS_BYTES // (6 * row.size + 256))

    def columns(self, shift: float, pw: int) -> tuple[np.ndarray, np.ndarray]:
        """The fixed-point columns shifted by ``shift`` pixels and wrapped into ``[0, pw)``
        (as :func:`_build_maps` wraps them): their whole pixels (the low half of an int32
        word) and their 32nds (uint16).
        """
        got = self._cols.get(shift)
        if got is not None:
            return got
        xs = np.add(self.row, shift)
        _wrap(xs, self.lo + shift, self.hi + shift, pw)
        cols = _fixed_point(xs.astype(np.float32))
        got = ((cols >> 5) & 0xFFFF, (cols & 31).astype(np.uint16))
        if len(self._cols) >= self._max_cols:
            self._cols.clear()
        self._cols[shift] = got
        return got

    def shifted(self, shift: float, pw: int) -> tuple[np.ndarray, np.ndarray]:
        """``cv2.convertMaps``' grids of the columns shifted by ``shift`` pixels, wrapped
        into ``[0, pw)`` (as :func:`_build_maps` wraps them), and the rows.
        """
        whole, frac = self.columns(shift, pw)
        # channel 0 (the column's whole pixels) in the low half of each int32 word
        m1 = np.bitwise_or(self.rows32, whole)
        m2 = np.add(self.m2_rows, frac)
        return m1.view(np.int16).reshape(*m1.shape, 2), m2


def _fixed_point(v: np.ndarray) -> np.ndarray:
    """``float32`` pixel coordinates in 32nds of a pixel (int32), rounded as
    ``cv2.convertMaps`` rounds them (``cvRound``: half to even).
    """
    return np.rint(v * np.float32(32.0)).astype(np.int32)


@lru_cached(max_items=64, max_bytes=128 * 2**20, name="render.camera.level_grid")
def _level_grid(w: int, h: int, fov: float, pitch: float, pw: int, ph: int) -> _LevelGrid | None:
    """The :class:`_LevelGrid` of a camera whose columns are the same in every row (a
    level one) on a little-endian machine, else None (:func:`_build_maps` then converts
    the whole grid with OpenCV).
    """
    if sys.byteorder != "little":
        return None
    mx0, my = _yaw_free_maps(w, h, fov, pitch, pw, ph)
    if not (mx0 == mx0[0]).all():
        return None
    return _LevelGrid(mx0[0].copy(), my)


@lru_cached(max_items=64, max_bytes=128 * 2**20, name="render.camera.yaw_free_maps")
def _yaw_free_maps(
    w: int, h: int, fov: float, pitch: float, pw: int, ph: int
) -> tuple[np.ndarray, np.ndarray]:
    """Panorama column (float64, not wrapped) and row (float32) of every pixel of a
    perspective view at relative yaw 0.
    """
    bearing, elev = view_directions(w, h, fov, pitch, 0.0)
    mx = (bearing / 360.0 + 0.5) * pw - 0.5
    my = np.clip((90.0 - elev) / 180.0 * ph - 0.5, 0.0, ph - 1.0).astype(np.float32)
    mx.setflags(write=False)
    my.setflags(write=False)
    return mx, my


@lru_cached(max_items=256, name="render.camera.view_extent")
def _view_extent(
    w: int, h: int, fov: float, pitch: float, pw: int, ph: int
) -> tuple[float, float, float, float]:
    """``(min, max)`` panorama column (not wrapped) and ``(min, max)`` row that a view at
    relative yaw 0 samples (see :func:`_yaw_free_maps`).
    """
    mx, my = _yaw_free_maps(w, h, fov, pitch, pw, ph)
    return float(mx.min()), float(mx.max()), float(my.min()), float(my.max())


def pano_region(
    size: int | tuple[int, int],
    fov: float,
    pitch: float,
    yaw: float,
    pano_shape: tuple[int, int],
    pano_heading: float = 0.0,
) -> tuple[int, int, int, int]:
    """The pixels of an ``(H, W)`` panorama that :func:`perspective` with these arguments
    reads: ``(c0, n_cols, r0, n_rows)`` -- columns ``c0 .. c0 + n_cols - 1`` (modulo
    ``W``: a region may wrap past the right edge; ``0 <= c0 < W``, ``n_cols <= W``) of rows
    ``r0 .. r0 + n_rows - 1``. Every bilinear neighbour is included, with a pixel to spare
    on each side.
    """
    w, h = image_size(size)
    fov = check_fov(fov)
    pitch = check_pitch(pitch)
    ph, pw = int(pano_shape[0]), int(pano_shape[1])
    lo, hi, rlo, rhi = _view_extent(w, h, round(fov, 9), round(pitch, 9), pw, ph)
    rel = (finite_number("yaw", yaw) - finite_number("pano_heading", pano_heading)) % 360.0
    shift = rel / 360.0 * pw
    c0 = math.floor(lo + shift) - 2
    n = min(pw, math.floor(hi + shift) + 3 - c0)
    r0 = max(0, math.floor(rlo) - 2)
    r1 = min(ph, math.floor(rhi) + 3)
    return c0 % pw, n, r0, r1 - r0


def remap_maps(
    size: int | tuple[int, int],
    fov: float,
    pitch: float,
    yaw: float,
    pano_shape: tuple[int, int],
    pano_heading: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The (cached) fixed-point ``cv2.remap`` grids of a perspective view of an
    equirectangular panorama of shape ``pano_shape = (H, W)``.
    """
    key = _plain_key(size, fov, pitch, yaw, pano_shape, pano_heading)
    if key is None:
        w, h = image_size(size)
        fov = check_fov(fov)
        pitch = check_pitch(pitch)
        rel = round(
            (finite_number("yaw", yaw) - finite_number("pano_heading", pano_heading)) % 360.0, 9
        )
        ph, pw = int(pano_shape[0]), int(pano_shape[1])
        key = (w, h, round(fov, 9), round(pitch, 9), rel, pw, ph)
    global _cache_bytes
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    w, h, _, _, rel, pw, ph = key
    maps = _build_maps(w, h, fov, pitch, rel, pw, ph)
    nbytes = maps[0].nbytes + maps[1].nbytes
    with _lock:
        if key not in _cache:
            _cache[key] = maps
            _cache_bytes += nbytes
        while _cache and (len(_cache) > CACHE_MAX_ENTRIES or _cache_bytes > CACHE_MAX_BYTES):
            _, old = _cache.popitem(last=False)
            _cache_bytes -= old[0].nbytes + old[1].nbytes
    return maps


def _plain_key(
    size: object, fov: object, pitch: object, yaw: object, shape: object, heading: object
) -> tuple[int, int, float, float, float, int, int] | None:
    """The grid cache's key of arguments of the plain types an environment passes -- an
    int or a pair of ints for ``size``, floats in range for the angles, a tuple of ints
    for the shape -- as :func:`remap_maps` makes it after checking them; None for
    anything else (then they are checked one by one, and bad ones named).
    """
    if type(size) is tuple and len(size) == 2:
        w, h = size
    elif type(size) is int:
        w = h = size
    else:
        return None
    if not (
        type(w) is int
        and type(h) is int
        and 0 < w <= 16384
        and 0 < h <= 16384
        and type(fov) is float
        and 0.0 < fov < 180.0
        and type(pitch) is float
        and -90.0 <= pitch <= 90.0
        and type(yaw) is float
        and type(heading) is float
        and type(shape) is tuple
        and len(shape) == 2
    ):
        return None
    ph, pw = shape
    if type(ph) is not int or type(pw) is not int:
        return None
    rel = yaw - heading
    if not -1e300 < rel < 1e300:  # inf or nan: checked (and named) the long way
        return None
    return (w, h, _round9(fov), _round9(pitch), _round9(rel % 360.0), pw, ph)


#: ``round(v, 9)`` of the floats seen (a rollout's angles recur; ``round`` to digits
#: formats the float, some twenty times dearer than a lookup); cleared when it has
#: :data:`ROUNDED_MAX` entries
_rounded: dict[float, float] = {}
ROUNDED_MAX = 65536


def _round9(v: float) -> float:
    """``round(v, 9)``, remembered (see :data:`_rounded`)."""
    got = _rounded.get(v)
    if got is None:
        got = round(v, 9)
        if len(_rounded) >= ROUNDED_MAX:
            _rounded.clear()
        _rounded[v] = got
    return got


def clear_camera_cache() -> None:
    """Drop every cached remap grid."""
    global _cache_bytes
    with _lock:
        _cache.clear()
        _cache_bytes = 0


def camera_cache_info() -> dict[str, int]:
    """``{"entries": n, "bytes": b}`` of the remap grid cache."""
    with _lock:
        return {"entries": len(_cache), "bytes": _cache_bytes}


def perspective(
    pano: np.ndarray,
    yaw: float,
    pitch: float = 0.0,
    fov: float = 90.0,
    size: int | tuple[int, int] = 512,
    pano_heading: float = 0.0,
) -> np.ndarray:
    """A perspective view of an equirectangular panorama.

    Args:
        pano: ``(H, 2H, 3)`` ``uint8`` equirectangular image (see the module docstring).
        yaw: compass bearing of the view's centre, degrees (0 north, 90 east).
        pitch: degrees above the horizon, in [-90, 90].
        fov: horizontal field of view, degrees, in (0, 180).
        size: output size, an int (square) or ``(w, h)``.
        pano_heading: bearing (degrees) that the panorama's centre column faces.

    Returns:
        ``(h, w, 3)`` ``uint8`` image.
    """
    if not _plain_equirect(pano):
        pano = check_equirect(pano)
    m1, m2 = remap_maps(size, fov, pitch, yaw, pano.shape[:2], pano_heading)
    return threads.for_image(
        m1.shape[0] * m1.shape[1],
        cv2.remap,
        pano,
        m1,
        m2,
        cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_WRAP,
    )


def perspective_batch(
    pano: np.ndarray,
    yaws: Sequence[float] | np.ndarray,
    pitch: float = 0.0,
    fov: float = 90.0,
    size: int | tuple[int, int] = 512,
    pano_heading: float = 0.0,
) -> np.ndarray:
    """Perspective views of one panorama at ``K`` yaws (degrees): ``(K, h, w, 3)`` uint8.
    Arguments as in :func:`perspective`.
    """
    pano = check_equirect(pano)
    yaws = np.atleast_1d(np.asarray(yaws, dtype=np.float64))
    if yaws.ndim != 1:
        raise RenderError(f"yaws must be a 1-D sequence of bearings, got shape {yaws.shape}")
    w, h = image_size(size)
    out = np.empty((len(yaws), h, w, 3), dtype=np.uint8)

    def draw() -> np.ndarray:
        for k, yaw in enumerate(yaws):
            m1, m2 = remap_maps((w, h), fov, pitch, float(yaw), pano.shape[:2], pano_heading)
            cv2.remap(pano, m1, m2, cv2.INTER_LINEAR, dst=out[k], borderMode=cv2.BORDER_WRAP)
        return out

    return threads.for_image(w * h, draw)
