"""Building a pose graph from a :class:`~urban_gym.world.City`'s streets.

:func:`street_trajectories` selects the street edges of the walkable network (network kinds
``road`` and ``pedestrian``, no service roads), joins chains of degree-2 nodes into
segments, merges junctions joined by very short segments, prunes short stubs and parallel
duplicates, and samples each segment as two trajectories (one per direction) of frames;
:meth:`PoseGraph.from_city <urban_gym.families.posegraph360.world.PoseGraph.from_city>` makes the graph.

Units: metres, degrees clockwise from north (x east, y north).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
from shapely.geometry import LineString

from urban_gym.families.posegraph360.world.elements import (
    Junction,
    PoseGraphError,
    Trajectory,
    end_bearings,
)
from urban_gym.world.geo import bearing


def street_trajectories(
    city: Any,
    spacing: float,
    kinds: Sequence[str],
    exclude_highways: Sequence[str],
    merge_radius: float,
    min_stub: float,
) -> tuple[list[Junction], list[Trajectory]]:
    """The junctions and trajectories of a City's streets (see
    :meth:`PoseGraph.from_city <urban_gym.families.posegraph360.world.PoseGraph.from_city>` for the
    parameters, metres).
    """
    if not (0.5 <= spacing <= 50.0):
        raise PoseGraphError(f"spacing={spacing!r} must be in [0.5, 50] metres")
    G = city.network
    edges = [
        (u, v)
        for u, v, d in G.edges(data=True)
        if d.get("kind") in kinds and d.get("highway") not in exclude_highways
    ]
    if not edges:
        raise PoseGraphError(f"city {city.name!r} has no street edges of kinds {list(kinds)}")
    H = G.edge_subgraph(edges)
    comp = max(nx.connected_components(H), key=lambda c: (len(c), -min(c)))
    H = H.subgraph(comp)
    segs = _chains(city, H)
    junction_xy = {n: city.node_xy[n] for s in segs for n in (s.u, s.v)}
    segs, clusters = _merge_and_prune(segs, junction_xy, merge_radius, min_stub)
    return _assemble(segs, clusters, spacing)


@dataclass
class _Seg:
    u: int
    v: int
    coords: list[tuple[float, float]]
    names: Counter = field(default_factory=Counter)
    edges: list[tuple[int, int]] = field(default_factory=list)

    @property
    def length(self) -> float:
        return float(LineString(self.coords).length) if len(self.coords) > 1 else 0.0


def _chains(city: Any, H: nx.Graph) -> list[_Seg]:
    """Maximal chains of degree-2 nodes between junction nodes (degree != 2)."""
    junctions = {n for n, d in H.degree() if d != 2}
    for comp in nx.connected_components(H):  # pure cycles get one junction
        if not junctions & comp:
            junctions.add(min(comp))
    segs: list[_Seg] = []
    used: set[frozenset] = set()
    for a in sorted(junctions):
        for b in sorted(H.neighbors(a)):
            key = frozenset((a, b))
            if key in used:
                continue
            seg = _Seg(a, a, list(city.edge_geometry(a, b).coords))
            prev, cur = a, b
            while True:
                used.add(frozenset((prev, cur)))
                d = H.edges[prev, cur]
                seg.names[d.get("name")] += d["length"]
                seg.edges.append((prev, cur))
                if prev != a or len(seg.edges) > 1:
                    seg.coords += list(city.edge_geometry(prev, cur).coords)[1:]
                if cur in junctions:
                    break
                nxt = [n for n in H.neighbors(cur) if n != prev]
                prev, cur = cur, nxt[0]
            seg.v = cur
            segs.append(seg)
    return segs


def _merge_and_prune(
    segs: list[_Seg], xy: dict[int, tuple[float, float]], merge_radius: float, min_stub: float
) -> tuple[list[_Seg], dict[int, list[int]]]:
    """Merge junctions joined by short segments, prune short stubs, dissolve degree-2
    junctions. Returns the segments (ends are cluster ids) and cluster -> member nodes.
    """
    out, members = _merge_short_segments(segs, xy, merge_radius)
    out = _prune(out, merge_radius, min_stub)
    return _largest_part(out, members)


def _merge_short_segments(
    segs: list[_Seg], xy: dict[int, tuple[float, float]], merge_radius: float
) -> tuple[list[_Seg], dict[int, list[int]]]:
    """Merge the junctions joined by segments shorter than ``merge_radius`` into clusters
    (at their mean position): the other segments with their ends moved to the cluster
    centres (tiny loops inside a cluster dropped), and cluster -> member nodes.
    """
    parent = {n: n for n in xy}

    def find(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    keep = []
    for s in segs:
        if s.u != s.v and s.length < merge_radius:
            a, b = find(s.u), find(s.v)
            if a != b:
                parent[max(a, b)] = min(a, b)
        else:
            keep.append(s)
    members: dict[int, list[int]] = defaultdict(list)
    for n in xy:
        members[find(n)].append(n)
    centre = {
        c: (float(np.mean([xy[m][0] for m in ms])), float(np.mean([xy[m][1] for m in ms])))
        for c, ms in members.items()
    }
    out: list[_Seg] = []
    for s in keep:
        cu, cv = find(s.u), find(s.v)
        coords = list(s.coords)
        if math.dist(coords[0], centre[cu]) > 0.01:
            coords.insert(0, centre[cu])
        if math.dist(coords[-1], centre[cv]) > 0.01:
            coords.append(centre[cv])
        if cu == cv and LineString(coords).length < 2 * merge_radius:
            continue  # a tiny loop inside a merged junction
        out.append(_Seg(cu, cv, coords, s.names, s.edges))
    return out, members


def _prune(out: list[_Seg], merge_radius: float, min_stub: float) -> list[_Seg]:
    """Drop parallel duplicates and dead-end stubs shorter than ``min_stub``, and dissolve
    degree-2 junctions, until nothing changes.
    """
    changed = True
    while changed:
        changed = False
        deg: Counter[int] = Counter()
        for s in out:
            deg[s.u] += 1
            deg[s.v] += 1
        dup = _parallel_duplicates(out, 2.0 * merge_radius)
        if dup:
            out = [s for s in out if id(s) not in dup]
            changed = True
            continue
        stubs = [
            s
            for s in out
            if s.u != s.v and (deg[s.u] == 1) != (deg[s.v] == 1) and s.length < min_stub
        ]
        if stubs:
            drop = {id(s) for s in stubs}
            out = [s for s in out if id(s) not in drop]
            changed = True
            continue
        for c in sorted(deg):
            if deg[c] != 2:
                continue
            pair = [s for s in out if c in (s.u, s.v)]
            if len(pair) != 2:  # a self-loop counts twice
                continue
            a, b = pair
            ca = a.coords if a.v == c else a.coords[::-1]
            ua = a.u if a.v == c else a.v
            cb = b.coords if b.u == c else b.coords[::-1]
            vb = b.v if b.u == c else b.u
            merged = _Seg(ua, vb, ca + cb[1:], a.names + b.names, a.edges + b.edges)
            out = [s for s in out if s is not a and s is not b] + [merged]
            changed = True
            break
    return out


def _largest_part(
    out: list[_Seg], members: dict[int, list[int]]
) -> tuple[list[_Seg], dict[int, list[int]]]:
    """The segments of the largest connected part, and its clusters."""
    g = nx.MultiGraph()
    for i, s in enumerate(out):
        g.add_edge(s.u, s.v, key=i)
    if g.number_of_nodes() == 0:
        raise PoseGraphError("no street segments are left after merging and pruning")
    comp = max(nx.connected_components(g), key=lambda c: (len(c), -min(c)))
    out = [s for s in out if s.u in comp]
    return out, {c: members[c] for c in comp}


def _parallel_duplicates(segs: list[_Seg], within: float) -> set[int]:
    """Ids of segments that run alongside a shorter segment joining the same two
    junctions (Hausdorff distance below ``within`` metres): parallel carriageways and
    ways mapped twice, which a camera would capture once.
    """
    groups: dict[frozenset, list[_Seg]] = defaultdict(list)
    for s in segs:
        groups[frozenset((s.u, s.v))].append(s)
    drop: set[int] = set()
    for g in groups.values():
        if len(g) < 2:
            continue
        kept: list[LineString] = []
        for s in sorted(g, key=lambda s: (s.length, s.coords[1])):
            line = LineString(s.coords)
            if any(line.hausdorff_distance(k) < within for k in kept):
                drop.add(id(s))
            else:
                kept.append(line)
    return drop


def _sample(coords: np.ndarray, spacing: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Frames every ~``spacing`` m along a polyline: positions, headings, offsets."""
    line = LineString(coords)
    L = float(line.length)
    n = max(1, int(round(L / spacing)))
    offs = np.linspace(0.0, L, n + 1)
    xy = np.array([line.interpolate(s).coords[0] for s in offs])
    h = np.empty(len(offs))
    for i, s in enumerate(offs):
        a = line.interpolate(max(0.0, s - 1.5))
        b = line.interpolate(min(L, s + 1.5))
        h[i] = bearing(b.x - a.x, b.y - a.y)
    return xy, h, offs


def _assemble(
    segs: list[_Seg], clusters: dict[int, list[int]], spacing: float
) -> tuple[list[Junction], list[Trajectory]]:
    """Junctions (renumbered) and two trajectories per segment, one per direction, with a
    frame every ~``spacing`` metres.
    """
    used = sorted({c for s in segs for c in (s.u, s.v)})
    jid = {c: i for i, c in enumerate(used)}
    junctions = []
    for c in used:
        first = next(s for s in segs if c in (s.u, s.v))
        p = first.coords[0] if first.u == c else first.coords[-1]
        junctions.append(Junction(jid[c], float(p[0]), float(p[1]), tuple(sorted(clusters[c]))))
    segs = sorted(
        segs, key=lambda s: (jid[s.u], jid[s.v], round(s.coords[1][0], 3), round(s.coords[1][1], 3))
    )
    trajs: list[Trajectory] = []
    for k, s in enumerate(segs):
        street = None
        named = [(v, n) for n, v in s.names.items() if n]
        if named:
            street = max(named)[1]
        coords = np.asarray(s.coords, dtype=float)
        for direction in (0, 1):
            cc = coords if direction == 0 else coords[::-1]
            xy, h, offs = _sample(cc, spacing)
            dep, arr = end_bearings(xy, offs)
            tid = len(trajs)
            edges = tuple(s.edges) if direction == 0 else tuple((b, a) for a, b in s.edges[::-1])
            trajs.append(
                Trajectory(
                    tid,
                    jid[s.u] if direction == 0 else jid[s.v],
                    jid[s.v] if direction == 0 else jid[s.u],
                    xy,
                    h,
                    offs,
                    tuple((str(tid), i) for i in range(len(xy))),
                    street,
                    tid + 1 if direction == 0 else tid - 1,
                    k,
                    dep,
                    arr,
                    edges,
                )
            )
    return junctions, trajs
