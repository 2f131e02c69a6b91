"""The geometry a top-down map is drawn from, prepared once per city.

The rings of a city's buildings, areas and network edges are kept in flat coordinate
arrays (:class:`Rings`), so a window's worth is turned into pixels with one numpy
operation, beside STRtrees that find what a window shows. :func:`shared_geometry` builds
them once per city and process; every map renderer of the city (the N envs of a batched
vector env each hold one) reads them, read-only.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np
import shapely
from shapely.geometry.polygon import orient

from urban_gym.world.city import City


class Rings:
    """Many polygon rings / polylines stored in one coordinate array, so a window's worth
    is transformed to pixels with one numpy operation.
    """

    def __init__(self, items: list[list[np.ndarray]]) -> None:
        flat = [r for rings in items for r in rings]
        self.xy = np.concatenate(flat) if flat else np.zeros((0, 2))
        lens = np.array([len(r) for r in flat], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(lens)])
        per_item = np.array([len(rings) for rings in items], dtype=np.int64)
        self.first = np.concatenate([[0], np.cumsum(per_item)])
        # the same offsets as Python ints: a window's rings are cut in a Python loop
        self._starts: list[int] = self.starts.tolist()
        self._first: list[int] = self.first.tolist()

    def rings(self, idx, to_px) -> list[np.ndarray]:
        """The pixel rings of items ``idx`` (sorted), via ``to_px`` on the needed span."""
        items: list[int] = np.asarray(idx, dtype=np.int64).tolist()
        if not items:
            return []
        starts, first = self._starts, self._first
        lo, hi = starts[first[items[0]]], starts[first[items[-1] + 1]]
        px = to_px(self.xy[lo:hi])
        return [
            px[starts[k] - lo : starts[k + 1] - lo]
            for i in items
            for k in range(first[i], first[i + 1])
        ]


#: city -> the geometry its map renderers draw from (:func:`prepared_geometry`)
_PREPARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PREPARED_LOCK = threading.Lock()


def prepared_geometry(city: City) -> dict[str, Any]:
    """What :class:`MapRenderer` draws ``city`` from: the rings of its buildings, areas and
    network edges with their STRtrees, the areas' kinds, the edges' kinds and widths and
    the POI anchors.
    """
    b_rings: list[list[np.ndarray]] = []
    for b in city.buildings:
        p = orient(b.polygon, 1.0)
        rings = [np.asarray(p.exterior.coords)[:-1]]
        rings += [np.asarray(r.coords)[:-1] for r in p.interiors]
        b_rings.append(rings)
    a_rings, a_kind = [], []
    for a in city.areas:
        rings = []
        for g in getattr(a.polygon, "geoms", [a.polygon]):
            rings.append(np.asarray(g.exterior.coords)[:-1])
            rings += [np.asarray(r.coords)[:-1] for r in g.interiors]
        a_rings.append(rings)
        a_kind.append(a.kind)
    edges = list(city.network.edges(data=True))
    return {
        "b": Rings(b_rings),
        "b_tree": shapely.STRtree([b.polygon for b in city.buildings]),
        "a": Rings(a_rings),
        "a_kind": a_kind,
        "a_tree": shapely.STRtree([a.polygon for a in city.areas]),
        "e": Rings([[np.asarray(d["geometry"].coords)] for _, _, d in edges]),
        "e_road": np.array([d["kind"] == "road" for _, _, d in edges], dtype=bool),
        "e_width": np.array([float(d.get("width") or 3.0) for _, _, d in edges]),
        "e_tree": shapely.STRtree([d["geometry"] for _, _, d in edges]),
        "poi_xy": np.array([p.anchor for p in city.pois], dtype=float).reshape(-1, 2),
        "poi_lang": {},  # POI index -> its sign's language, filled as labels need it
    }


def shared_geometry(city: City) -> dict[str, Any]:
    """:func:`prepared_geometry` of ``city``, built once per city and process and shared,
    read-only, by its renderers.
    """
    with _PREPARED_LOCK:
        shared = _PREPARED.get(city)
        if shared is None:
            shared = _PREPARED[city] = prepared_geometry(city)
    return shared
