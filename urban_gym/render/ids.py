"""Instance ids: what each rendered pixel shows.

Renderers return an ``int32`` id image next to the colour image. An id encodes a kind and
an index into the city's lists:

* ``0`` -- sky (kind ``"sky"``, index 0);
* ``1`` -- ground: road, sidewalk, grass, water (kind ``"ground"``, index 0);
* ``1_000_000 + b`` -- building ``city.buildings[b]`` (kind ``"building"``);
* ``2_000_000 + p`` -- the signboard of POI ``city.pois[p]`` (kind ``"sign"``);
* ``3_000_000 + o`` -- street object ``city.objects[o]`` (kind ``"object"``);
* ``4_000_000 + k`` -- the ``k``-th pedestrian passed to the renderer (kind ``"pedestrian"``).

Indices must be below 1_000_000.
"""

from __future__ import annotations

import numpy as np

from urban_gym.errors import RenderError

SKY_ID = 0
GROUND_ID = 1
BUILDING_BASE = 1_000_000
SIGN_BASE = 2_000_000
OBJECT_BASE = 3_000_000
PEDESTRIAN_BASE = 4_000_000
#: Kinds in code order: ``decode_ids`` returns these codes.
KINDS: tuple[str, ...] = ("sky", "ground", "building", "sign", "object", "pedestrian")
_BASES = {
    "building": BUILDING_BASE,
    "sign": SIGN_BASE,
    "object": OBJECT_BASE,
    "pedestrian": PEDESTRIAN_BASE,
}
_SPAN = 1_000_000


def encode_id(kind: str, index: int = 0) -> int:
    """The id of item ``index`` of ``kind`` (one of :data:`KINDS`)."""
    if kind == "sky":
        return SKY_ID
    if kind == "ground":
        return GROUND_ID
    if kind not in _BASES:
        raise RenderError(f"id kind={kind!r} is not one of {KINDS}")
    if not 0 <= int(index) < _SPAN:
        raise RenderError(f"{kind} index={index!r} must be in [0, {_SPAN})")
    return _BASES[kind] + int(index)


def building_id(b: int) -> int:
    """Id of building ``b``."""
    return encode_id("building", b)


def sign_id(p: int) -> int:
    """Id of the signboard of POI ``p``."""
    return encode_id("sign", p)


def object_id(o: int) -> int:
    """Id of street object ``o``."""
    return encode_id("object", o)


def pedestrian_id(k: int) -> int:
    """Id of the ``k``-th pedestrian."""
    return encode_id("pedestrian", k)


def decode_id(i: int) -> tuple[str, int]:
    """``(kind, index)`` of an instance id, e.g. ``decode_id(2_000_017) == ("sign", 17)``.

    Raises :class:`RenderError` for a value that is no valid id (2..999_999, negative,
    5_000_000 or more).
    """
    i = int(i)
    if i == SKY_ID:
        return ("sky", 0)
    if i == GROUND_ID:
        return ("ground", 0)
    k, idx = divmod(i, _SPAN)
    if i < 0 or not 1 <= k <= 4:
        raise RenderError(f"instance id {i!r} is not a valid id (see urban_gym.render.ids)")
    return (KINDS[k + 1], idx)


def decode_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`decode_id`: ``(kind codes, indices)`` with codes indexing
    :data:`KINDS` (0 sky, 1 ground, 2 building, 3 sign, 4 object, 5 pedestrian).
    """
    a = np.asarray(ids, dtype=np.int64)
    k = a // _SPAN
    bad = (a < 0) | (k > 4) | ((k == 0) & (a > 1))
    if bad.any():
        raise RenderError(f"instance id {int(a[bad].flat[0])!r} is not a valid id")
    codes = np.where(k == 0, a, k + 1).astype(np.int8)
    idx = np.where(k == 0, 0, a % _SPAN)
    return codes, idx


def instance_boxes(ids: np.ndarray) -> dict[int, tuple[int, int, int, int]]:
    """Pixel bounding box ``(col0, row0, col1, row1)`` (end-exclusive) of every id in an
    id image, sky and ground included.
    """
    a = np.asarray(ids)
    if a.ndim != 2 or a.size == 0:
        raise RenderError(f"id image must be a non-empty 2-D array, got shape {a.shape}")
    uniq, inv = np.unique(a.ravel(), return_inverse=True)
    order = np.argsort(inv, kind="stable")
    starts = np.searchsorted(inv[order], np.arange(len(uniq)))
    rows, cols = np.divmod(order, a.shape[1])
    out: dict[int, tuple[int, int, int, int]] = {}
    r0 = np.minimum.reduceat(rows, starts)
    r1 = np.maximum.reduceat(rows, starts)
    c0 = np.minimum.reduceat(cols, starts)
    c1 = np.maximum.reduceat(cols, starts)
    for n, u in enumerate(uniq):
        out[int(u)] = (int(c0[n]), int(r0[n]), int(c1[n]) + 1, int(r1[n]) + 1)
    return out
