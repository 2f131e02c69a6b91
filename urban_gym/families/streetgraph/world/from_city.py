"""Building a street graph from a :class:`~urban_gym.world.City`: panoramas every ~10 m
along the walkable street centrelines, as a capture car would take them.

:func:`city_panoramas` computes the nodes and links;
:meth:`StreetGraph.from_city <urban_gym.families.streetgraph.world.StreetGraph.from_city>` makes
the graph. Units: metres, degrees clockwise from north.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from urban_gym.families.streetgraph.world.elements import StreetGraphError
from urban_gym.world.geo import bearing


def city_panoramas(
    city: Any, spacing: float, kinds: Sequence[str] | None, city_spec: str | None
) -> dict[str, Any]:
    """The :class:`~urban_gym.families.streetgraph.world.StreetGraph` constructor arguments (by
    name) of ``city``'s streets: see
    :meth:`StreetGraph.from_city <urban_gym.families.streetgraph.world.StreetGraph.from_city>` for
    the parameters (``spacing`` in metres).
    """
    if not (spacing > 0 and math.isfinite(spacing)):
        raise StreetGraphError(f"spacing={spacing!r} must be a positive number of metres")
    net = city.network
    wanted = set(kinds) if kinds else None
    edges = [
        (min(u, v), max(u, v), d)
        for u, v, d in net.edges(data=True)
        if wanted is None or d.get("kind") in wanted
    ]
    used_kinds = sorted(wanted) if wanted else None
    if not edges:
        edges = [(min(u, v), max(u, v), d) for u, v, d in net.edges(data=True)]
        used_kinds = None
    if not edges:
        raise StreetGraphError(f"city {city.name!r} has no walkable network")
    edges.sort(key=lambda e: (e[0], e[1]))
    node_ids = sorted({e[0] for e in edges} | {e[1] for e in edges})
    ids: list[str] = [str(n) for n in node_ids]
    pos = {n: i for i, n in enumerate(node_ids)}
    xy: list[tuple[float, float]] = [(net.nodes[n]["x"], net.nodes[n]["y"]) for n in node_ids]
    a_list: list[int] = []
    b_list: list[int] = []
    for u, v, d in edges:
        g = d["geometry"]
        if d.get("start", u) != u:
            g = g.reverse()
        n_seg = max(1, int(round(g.length / spacing)))
        chain = [pos[u]]
        for k in range(1, n_seg):
            p = g.interpolate(g.length * k / n_seg)
            chain.append(len(ids))
            ids.append(f"{u}-{v}-{k}")
            xy.append((p.x, p.y))
        chain.append(pos[v])
        a_list.extend(chain[:-1])
        b_list.extend(chain[1:])
    xya = np.array(xy, dtype=np.float64)
    a = np.array(a_list, dtype=np.int64)
    b = np.array(b_list, dtype=np.int64)
    keep = a != b
    a, b = a[keep], b[keep]
    src = np.concatenate([a, b])
    dst = np.concatenate([b, a])
    # parallel edges between two network nodes without interior points: one link
    key = np.unique(src * len(ids) + dst)
    src, dst = key // len(ids), key % len(ids)
    dv = xya[dst] - xya[src]
    hd = bearing(dv[:, 0], dv[:, 1])
    meta = {
        "source": "city",
        "city": city_spec or city.meta.get("source") or city.name,
        "spacing_m": float(spacing),
        "kinds": used_kinds,
    }
    return {
        "ids": ids,
        "xy": xya,
        "pano_heading": np.zeros(len(ids)),
        "src": src,
        "dst": dst,
        "heading": hd,
        "frame": city.frame,
        "name": f"{city.name}-streets",
        "meta": meta,
    }
