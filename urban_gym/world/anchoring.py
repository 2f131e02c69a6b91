"""Anchor POIs to building facades and to the walkable network.

For a POI inside (or within :data:`MAX_BUILDING_DISTANCE_M` of) a building, every edge of
the building's outer ring is a candidate facade. For each candidate we probe a point
:data:`PROBE_M` metres outside the edge's midpoint. A
candidate is *blocked* when the probe falls inside another building (a shared wall in a
city block) and *remote* when the probe is more than :data:`MAX_ACCESS_M` metres from the
walkable network. The chosen facade minimises

    distance(POI, edge) + ACCESS_WEIGHT * distance(probe, network)

over unblocked, non-remote edges at least :data:`MIN_FACADE_M` long (falling back to the
whole ring if none qualifies). The sign anchor is the POI's foot on that edge, kept
:data:`END_MARGIN_M` from the corners.

The *front point* is where a person stands to see the sign and where "go to <POI>" ends:
the nearest crossing of the walkable network with the facade's outward normal from the
anchor, at least :data:`MIN_FRONT_M` and at most :data:`MAX_FRONT_M` metres out, outside
every building and with nothing built between it and the sign. When the normal meets no
such point (the street runs past a corner, say), it is the nearest walkable point to the
anchor pushed :data:`PROBE_M` outward that is outside buildings and in sight; failing that,
the plain nearest walkable point. Free-standing POIs use the same fallback from their
position.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import shapely

from urban_gym.world.features import POI, Building
from urban_gym.world.geo import bearing

MAX_BUILDING_DISTANCE_M = 12.0
PROBE_M = 1.5
MAX_ACCESS_M = 40.0
ACCESS_WEIGHT = 0.5
MIN_FACADE_M = 2.0
END_MARGIN_M = 1.0
SIGHT_START_M = 0.3
MIN_FRONT_M = 1.0
MAX_FRONT_M = 40.0


def outer_ring_edges(polygon) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges of a polygon's outer ring: start points ``(E, 2)``, end points ``(E, 2)`` and
    outward unit normals ``(E, 2)``.
    """
    ring = np.asarray(polygon.exterior.coords)
    p0, p1 = ring[:-1], ring[1:]
    d = p1 - p0
    length = np.hypot(d[:, 0], d[:, 1])
    length[length == 0] = 1e-12
    # CCW ring: interior on the left, so the outward normal is the right normal (dy, -dx)
    sign = 1.0 if polygon.exterior.is_ccw else -1.0
    normals = sign * np.stack([d[:, 1], -d[:, 0]], axis=1) / length[:, None]
    return p0, p1, normals


def _foot(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Foot of points ``p`` on segments ``a``-``b`` (row-wise): the parameter ``t`` in
    [0, 1] and the foot point.
    """
    d = b - a
    dd = np.einsum("ij,ij->i", d, d)
    dd[dd == 0] = 1e-12
    t = np.clip(np.einsum("ij,ij->i", p - a, d) / dd, 0.0, 1.0)
    return t, a + t[:, None] * d


def anchor_pois(
    pois: list[POI],
    buildings: list[Building],
    building_tree: shapely.STRtree,
    edge_tree: shapely.STRtree,
    no_building: set[int] | frozenset[int] = frozenset(),
) -> None:
    """Fill ``building_id``, ``facade``, ``anchor``, ``facing`` and ``front`` of each POI in
    place. POIs that already carry a ``building_id`` (building features) keep it; POIs
    whose list index is in ``no_building`` stay free-standing.
    """
    if not pois:
        return
    pts = shapely.points([p.position for p in pois])
    # 1. assign buildings to point POIs
    inside_poi, inside_bld = building_tree.query(pts, predicate="within")
    first_inside: dict[int, int] = {}
    for pi, bi in zip(inside_poi.tolist(), inside_bld.tolist()):
        first_inside.setdefault(pi, bi)
    for i in no_building:
        first_inside.pop(i, None)
    need = [
        i
        for i, p in enumerate(pois)
        if p.building_id is None and i not in first_inside and i not in no_building
    ]
    near: dict[int, int] = {}
    if need:
        qi, bi = building_tree.query_nearest(
            pts[need], max_distance=MAX_BUILDING_DISTANCE_M, all_matches=False
        )
        for a, b in zip(qi.tolist(), bi.tolist()):
            near[need[a]] = b
    for i, p in enumerate(pois):
        if p.building_id is None and i not in no_building:
            b = first_inside.get(i, near.get(i))
            p.building_id = None if b is None else int(b)

    # 2. facade candidates: every outer-ring edge of every hosting building, with its
    #    access distance and blocked flag evaluated once per edge in one batch
    with_b = [i for i, p in enumerate(pois) if p.building_id is not None]
    hosts = sorted({cast(int, pois[i].building_id) for i in with_b})  # with_b: not None
    if hosts:
        rings = [outer_ring_edges(buildings[b].polygon) for b in hosts]
        A = np.concatenate([r[0] for r in rings])
        B = np.concatenate([r[1] for r in rings])
        N = np.concatenate([r[2] for r in rings])
        starts = np.cumsum([0] + [len(r[0]) for r in rings])
        span = {b: (int(starts[k]), int(starts[k + 1])) for k, b in enumerate(hosts)}
        seg_len = np.hypot(*(B - A).T)
        probe_pts = shapely.points((A + B) / 2.0 + PROBE_M * N)
        _, access = edge_tree.query_nearest(probe_pts, return_distance=True, all_matches=False)
        blocked = np.zeros(len(A), dtype=bool)
        hit_probe, _ = building_tree.query(probe_pts, predicate="within")
        blocked[hit_probe] = True
        bad = blocked | (access > MAX_ACCESS_M) | (seg_len < MIN_FACADE_M)
        for i in with_b:
            p = pois[i]
            lo, hi = span[cast(int, p.building_id)]  # with_b: not None
            a, b, n, L = A[lo:hi], B[lo:hi], N[lo:hi], seg_len[lo:hi]
            P = np.broadcast_to(np.asarray(p.position, dtype=float), a.shape)
            t, foot = _foot(P, a, b)
            score = np.hypot(*(P - foot).T) + ACCESS_WEIGHT * access[lo:hi]
            score = np.where(bad[lo:hi], score + 1e6 + 10.0 * access[lo:hi], score)
            k = int(np.argmin(score))
            length = float(L[k])
            margin = min(END_MARGIN_M, length / 2.0)
            s_along = min(max(float(t[k]) * length, margin), length - margin)
            anchor = a[k] + (b[k] - a[k]) * (s_along / max(length, 1e-12))
            p.facade = ((float(a[k][0]), float(a[k][1])), (float(b[k][0]), float(b[k][1])))
            p.anchor = (float(anchor[0]), float(anchor[1]))
            p.facing = bearing(float(n[k][0]), float(n[k][1]))
    # 3. front points: straight in front of the sign where possible, else the nearest
    #    walkable point that is outside buildings and in sight of the anchor
    fronts = find_fronts(pois, edge_tree, building_tree)
    for p, f in zip(pois, fronts):
        p.front = (float(f[0]), float(f[1]))
        if p.facade is None:
            dx, dy = p.front[0] - p.anchor[0], p.front[1] - p.anchor[1]
            p.facing = bearing(dx, dy) if abs(dx) + abs(dy) > 1e-6 else 0.0


def find_fronts(
    pois: list[POI], edge_tree: shapely.STRtree, building_tree: shapely.STRtree
) -> np.ndarray:
    """Front points ``(K, 2)`` for POIs whose ``anchor`` (and ``facing`` if they have a
    facade) are set. See the module docstring for the rule.
    """
    for p in pois:
        if p.facade is None:
            p.anchor = (float(p.position[0]), float(p.position[1]))
    anchors = np.array([p.anchor for p in pois], dtype=float).reshape(-1, 2)
    out = np.full(anchors.shape, np.nan)
    # (a) along the outward normal: the nearest crossing with the network that is outside
    #     every building and has a clear line of sight to the sign
    with_f = np.array([p.facade is not None for p in pois])
    idx = np.flatnonzero(with_f)
    if len(idx):
        normals = np.array([_facing_vec(pois[i].facing) for i in idx])
        a = anchors[idx]
        start = a + SIGHT_START_M * normals
        rays = shapely.linestrings(np.stack([start, a + MAX_FRONT_M * normals], axis=1))
        ri, ei = edge_tree.query(rays, predicate="intersects")
        if len(ri):
            hits = shapely.intersection(rays[ri], edge_tree.geometries.take(ei))
            coords, which = shapely.get_coordinates(hits, return_index=True)
            pair = ri[which]
            t = np.einsum("ij,ij->i", coords - a[pair], normals[pair])
            ok = t >= MIN_FRONT_M
            pair, coords, t = pair[ok], coords[ok], t[ok]
            ok = _outside_and_in_sight(start[pair], coords, building_tree)
            pair, coords, t = pair[ok], coords[ok], t[ok]
            for k in _smallest_per_group(pair, t):
                out[idx[pair[k]]] = coords[k]
    # (b) otherwise: the nearest walkable point outside buildings and in sight
    rest = np.flatnonzero(np.isnan(out[:, 0]))
    if len(rest):
        probe = anchors[rest].copy()
        for j, i in enumerate(rest):
            if pois[i].facade is not None:
                vx, vy = _facing_vec(pois[i].facing)
                probe[j] += (PROBE_M * vx, PROBE_M * vy)
        out[rest] = _nearest_visible(probe, edge_tree, building_tree)
    return out


def _outside_and_in_sight(start: np.ndarray, pts: np.ndarray, building_tree) -> np.ndarray:
    """Per row: ``pts`` is outside every building and the segment from ``start`` does not
    cross one.
    """
    ok = np.ones(len(pts), dtype=bool)
    if not len(pts):
        return ok
    seg = shapely.linestrings(np.stack([start, pts], axis=1))
    hit, _ = building_tree.query(seg, predicate="intersects")
    ok[hit] = False
    return ok


def _nearest_visible(probe: np.ndarray, edge_tree, building_tree) -> np.ndarray:
    """Nearest walkable point to each probe that is outside buildings and in sight of the
    probe, trying edges by increasing distance; the plain nearest point if none is.
    """
    pts = shapely.points(probe)
    out = _nearest_on_network(probe, edge_tree)
    qi, ei = edge_tree.query(pts, predicate="dwithin", distance=MAX_FRONT_M)
    if not len(qi):
        return out
    geoms = edge_tree.geometries.take(ei)
    near = shapely.get_coordinates(shapely.shortest_line(pts[qi], geoms))[1::2]
    dist = np.hypot(*(near - probe[qi]).T)
    ok = _outside_and_in_sight(probe[qi], near, building_tree)
    qi, near, dist = qi[ok], near[ok], dist[ok]
    for k in _smallest_per_group(qi, dist):
        out[qi[k]] = near[k]
    return out


def _smallest_per_group(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Row indices holding the smallest ``value`` of each distinct ``group``."""
    order = np.lexsort((value, group))
    first = np.ones(len(order), dtype=bool)
    first[1:] = group[order][1:] != group[order][:-1]
    return order[first]


def _facing_vec(b: float) -> tuple[float, float]:
    r = np.radians(b)
    return float(np.sin(r)), float(np.cos(r))


def _nearest_on_network(xy: np.ndarray, edge_tree: shapely.STRtree) -> np.ndarray:
    pts = shapely.points(xy)
    idx = edge_tree.nearest(pts)
    geoms = edge_tree.geometries.take(idx)
    return shapely.get_coordinates(shapely.shortest_line(pts, geoms))[1::2]
