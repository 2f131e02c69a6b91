"""StreetGraph: a Street-View-style panorama graph for long-range navigation.

A :class:`StreetGraph` holds panorama *nodes* (a string id, latitude/longitude, metric
``x``/``y`` in a :class:`~urban_gym.world.geo.GeoFrame`, and the panorama's heading: the
compass bearing of its centre column) and directed *links* ``u -> v`` with a heading
(degrees clockwise from north) and a length (metres, the straight distance ``u``-``v``).
Arrays are numpy; links are stored sorted by ``(source, target)`` in CSR form.

Sources:

* :meth:`StreetGraph.from_city` -- nodes every ~10 m along the walkable street centrelines
  of a :class:`~urban_gym.world.city.City` (as a capture car would take them);
* :func:`read_touchdown` -- Touchdown-format ``nodes.txt`` (``panoid,pano_yaw_angle,lat,lng``)
  and ``links.txt`` (``start_panoid,heading,end_panoid``), with an optional folder of
  equirectangular images ``<panoid>.jpg|jpeg|png``.

Preprocessing (CityNav's recipe), each step returning a new graph and a report dict:

1. :func:`add_reverse_links` -- add ``v -> u`` wherever only ``u -> v`` exists (heading + 180).
2. :func:`prune_dead_ends` -- remove nodes with at most one neighbour, iteratively (a dead-end
   street disappears node by node); nodes in ``keep`` are never removed.
3. :func:`keep_largest_component` -- drop everything outside the largest connected component.
4. Contraction (:meth:`StreetGraph.contract`) -- chains of degree-2 nodes become *streets*
   between *decision points* (nodes whose neighbour count is not 2); a :class:`Street` keeps
   its node list and its length. The heading of an outgoing street is the bearing from its
   first node to the node three hops along it (or its last node when it is shorter):
   :data:`LOOKAHEAD_HOPS`.

:func:`preprocess` runs them in order and returns a :class:`PreprocessReport`.

Distances to a goal (:meth:`StreetGraph.distances_to`) are one multi-source Dijkstra over
the reversed links, metres; :meth:`StreetGraph.hops_to` the same in link counts.
"""

from __future__ import annotations

import heapq
import json
import math
import os
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.errors import UrbanGymError
from urban_gym.world.geo import GeoFrame
from urban_gym.world.jsondata import loads_strict, show

#: Hops along a street used for its outgoing heading (CityNav: the 3-hop lookahead).
LOOKAHEAD_HOPS = 3
#: Default panorama spacing along street centrelines (metres) for graphs built from a City.
DEFAULT_SPACING_M = 10.0
#: Network edge kinds a capture car / Street View walker would take, by preference.
DEFAULT_STREET_KINDS: tuple[str, ...] = ("road", "pedestrian")
#: Image file suffixes tried for ``<panoid>.<suffix>`` in an image folder.
IMAGE_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png")


class StreetGraphError(UrbanGymError):
    """A street graph file, route or query is malformed (the message names file, line and
    value where there is one)."""


@dataclass(frozen=True)
class Street:
    """A contracted street: the chain of panorama nodes from decision point ``nodes[0]`` to
    ``nodes[-1]`` (node indices), its ``length`` (metres, along the chain) and its outgoing
    ``heading`` (degrees, bearing from ``nodes[0]`` to the node :data:`LOOKAHEAD_HOPS`
    hops along, or the last node when the street is shorter)."""

    nodes: tuple[int, ...]
    length: float
    heading: float

    @property
    def start(self) -> int:
        return self.nodes[0]

    @property
    def end(self) -> int:
        return self.nodes[-1]

    @property
    def hops(self) -> int:
        return len(self.nodes) - 1


class StreetGraph:
    """Panorama nodes and directed links (see the module docstring).

    Attributes:
        ids: panorama id of each node (index = node number).
        index: panorama id -> node number.
        xy: ``(N, 2)`` float64 metres (x east, y north) in :attr:`frame`.
        latlon: ``(N, 2)`` float64 degrees.
        pano_heading: ``(N,)`` degrees, bearing of each panorama's centre column.
        src, dst: ``(E,)`` int64 link ends, sorted by ``(src, dst)``.
        heading: ``(E,)`` link headings, degrees.
        length: ``(E,)`` link lengths, metres.
        indptr: ``(N + 1,)`` CSR offsets: links of node ``i`` are ``indptr[i]:indptr[i+1]``.
        frame: the geographic frame of ``xy``.
        name: a short name.
        image_dir: folder of equirectangular images (Touchdown graphs) or None.
        meta: provenance (``source``, ``city`` spec, spacing, load report, ...).
    """

    def __init__(
        self,
        ids: Sequence[str],
        xy: np.ndarray,
        pano_heading: np.ndarray,
        src: np.ndarray,
        dst: np.ndarray,
        heading: np.ndarray,
        frame: GeoFrame,
        *,
        latlon: np.ndarray | None = None,
        name: str = "streetgraph",
        image_dir: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.ids: list[str] = list(ids)
        n = len(self.ids)
        self.xy = np.asarray(xy, dtype=np.float64).reshape(n, 2)
        self.pano_heading = np.asarray(pano_heading, dtype=np.float64).reshape(n) % 360.0
        self.frame = frame
        if latlon is None:
            lat, lon = frame.to_latlon(self.xy[:, 0], self.xy[:, 1])
            latlon = np.column_stack([np.atleast_1d(lat), np.atleast_1d(lon)])
        self.latlon = np.asarray(latlon, dtype=np.float64).reshape(n, 2)
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        heading = np.asarray(heading, dtype=np.float64) % 360.0
        order = np.lexsort((dst, src))
        self.src, self.dst, self.heading = src[order], dst[order], heading[order]
        d = self.xy[self.dst] - self.xy[self.src]
        self.length = np.hypot(d[:, 0], d[:, 1])
        self.indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.src, minlength=n), out=self.indptr[1:])
        self.index: dict[str, int] = {p: i for i, p in enumerate(self.ids)}
        self.name = name
        self.image_dir = image_dir
        self.meta: dict[str, Any] = dict(meta or {})

    # ------------------------------------------------------------------ basics
    def __repr__(self) -> str:
        return f"StreetGraph({self.name!r}, nodes={self.num_nodes}, links={self.num_links})"

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for k in _CACHED:
            state.pop(k, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def num_nodes(self) -> int:
        return len(self.ids)

    @property
    def num_links(self) -> int:
        return int(len(self.src))

    @cached_property
    def out_degree(self) -> np.ndarray:
        """``(N,)`` number of outgoing links per node."""
        return np.diff(self.indptr)

    @cached_property
    def neighbours(self) -> list[list[int]]:
        """Out-neighbours of each node (node indices, ascending)."""
        d = self.dst.tolist()
        ip = self.indptr.tolist()
        return [d[ip[i] : ip[i + 1]] for i in range(self.num_nodes)]

    @cached_property
    def undirected_neighbours(self) -> list[list[int]]:
        """Neighbours of each node ignoring link direction (ascending)."""
        return _undirected_adjacency(self.num_nodes, self.src, self.dst)

    @cached_property
    def degree(self) -> np.ndarray:
        """``(N,)`` number of distinct neighbours ignoring direction (the degree used for
        dead ends and decision points)."""
        return np.array([len(a) for a in self.undirected_neighbours], dtype=np.int64)

    @cached_property
    def _link_key(self) -> np.ndarray:
        return self.src * self.num_nodes + self.dst

    def node(self, panoid: str) -> int:
        """Node index of panorama ``panoid``; :class:`StreetGraphError` naming it if unknown."""
        try:
            return self.index[panoid]
        except KeyError:
            raise StreetGraphError(
                f"no panorama {panoid!r} in street graph {self.name!r}"
            ) from None

    def has_link(self, u: int, v: int) -> bool:
        """Whether the directed link ``u -> v`` exists."""
        k = u * self.num_nodes + v
        i = int(np.searchsorted(self._link_key, k))
        return i < len(self._link_key) and int(self._link_key[i]) == k

    def link_heading(self, u: int, v: int) -> float:
        """Heading (degrees) of link ``u -> v``."""
        k = u * self.num_nodes + v
        i = int(np.searchsorted(self._link_key, k))
        if i >= len(self._link_key) or int(self._link_key[i]) != k:
            raise StreetGraphError(f"no link {self.ids[u]!r} -> {self.ids[v]!r}")
        return float(self.heading[i])

    def nearest_node(self, x: float, y: float) -> int:
        """Index of the node nearest to ``(x, y)`` (metres)."""
        d = (self.xy[:, 0] - x) ** 2 + (self.xy[:, 1] - y) ** 2
        return int(np.argmin(d))

    def nodes_within(self, geometry: Any, distance: float) -> list[int]:
        """Indices of nodes within ``distance`` metres of a shapely geometry (a building
        footprint, a park polygon, a point), ascending."""
        hits = self._node_tree.query(geometry, predicate="dwithin", distance=float(distance))
        return sorted(int(i) for i in hits)

    @cached_property
    def _node_tree(self) -> Any:
        import shapely

        return shapely.STRtree(shapely.points(self.xy))

    def path_length(self, nodes: Sequence[int]) -> float:
        """Length in metres of a node sequence (straight segments between nodes)."""
        if len(nodes) < 2:
            return 0.0
        p = self.xy[np.asarray(nodes, dtype=np.int64)]
        return float(np.hypot(*np.diff(p, axis=0).T).sum())

    def image_path(self, node: int) -> Path | None:
        """The image file of ``node`` in :attr:`image_dir` (first existing suffix), or None."""
        if self.image_dir is None:
            return None
        base = Path(self.image_dir) / self.ids[node]
        for suf in IMAGE_SUFFIXES:
            p = base.with_name(base.name + suf)
            if p.is_file():
                return p
        return None

    # ------------------------------------------------------------------ streets
    def is_decision_point(self, node: int) -> bool:
        """A node whose neighbour count is not 2 (an intersection or a dead end)."""
        return int(self.degree[node]) != 2

    def streets_from(self, node: int) -> list[Street]:
        """The streets leaving ``node``, one per outgoing link, in ascending order of the
        first hop's node index. Each follows degree-2 nodes until a decision point (or back
        to ``node`` around a loop). Works for any node, also mid-street ones. Cached."""
        cache = self._streets
        got = cache.get(node)
        if got is None:
            got = [self._walk(node, first) for first in self.neighbours[node]]
            cache[node] = got
        return got

    @cached_property
    def _streets(self) -> dict[int, list[Street]]:
        return {}

    def _walk(self, start: int, first: int) -> Street:
        deg = self._degree_list
        nb = self.undirected_neighbours
        xy = self._xy_list
        nodes = [start, first]
        prev, cur = start, first
        length = math.dist(xy[start], xy[first])
        while deg[cur] == 2 and cur != start:
            a, b = nb[cur]
            nxt = b if a == prev else a
            if nxt == prev:  # both neighbours equal prev cannot happen for degree 2
                break
            length += math.dist(xy[cur], xy[nxt])
            nodes.append(nxt)
            prev, cur = cur, nxt
        look = nodes[min(LOOKAHEAD_HOPS, len(nodes) - 1)]
        hd = _bearing(xy[look][0] - xy[start][0], xy[look][1] - xy[start][1])
        return Street(tuple(nodes), length, hd)

    @cached_property
    def _degree_list(self) -> list[int]:
        return self.degree.tolist()

    @cached_property
    def _xy_list(self) -> list[tuple[float, float]]:
        return [tuple(p) for p in self.xy.tolist()]

    @cached_property
    def decision_points(self) -> np.ndarray:
        """Indices of decision points (neighbour count != 2). A component that is a pure
        cycle of degree-2 nodes gets its lowest-index node as a decision point."""
        dp = np.flatnonzero(self.degree != 2)
        cyc = self._pure_cycle_reps()
        if cyc:
            dp = np.union1d(dp, np.array(cyc, dtype=np.int64))
        return dp

    def _pure_cycle_reps(self) -> list[int]:
        """Lowest-index node of each component that is a pure cycle of degree-2 nodes."""
        deg = self._degree_list
        nb = self.undirected_neighbours
        seen = bytearray(self.num_nodes)
        for d in np.flatnonzero(self.degree != 2).tolist():
            seen[d] = 1
            for first in nb[d]:
                prev, cur = d, first
                while deg[cur] == 2 and not seen[cur]:
                    seen[cur] = 1
                    a, b = nb[cur]
                    prev, cur = cur, (b if a == prev else a)
        reps = []
        for i in range(self.num_nodes):
            if seen[i]:
                continue
            reps.append(i)
            seen[i] = 1
            prev, cur = i, nb[i][0]
            while not seen[cur]:
                seen[cur] = 1
                a, b = nb[cur]
                prev, cur = cur, (b if a == prev else a)
        return reps

    def contract(self) -> dict[str, Any]:
        """Contract degree-2 chains into streets between decision points (cached for
        :meth:`streets_from`) and report what changed: ``decision_points``, ``streets``
        (directed), ``chain_nodes_absorbed`` (nodes inside streets), ``mean_street_length_m``,
        ``max_street_length_m``, ``max_out_streets`` (the largest number of options)."""
        dps = self.decision_points.tolist()
        lengths: list[float] = []
        most = 0
        for d in dps:
            streets = self.streets_from(d)
            most = max(most, len(streets))
            lengths.extend(s.length for s in streets)
        return {
            "decision_points": len(dps),
            "streets": len(lengths),
            "chain_nodes_absorbed": self.num_nodes - len(dps),
            "mean_street_length_m": round(float(np.mean(lengths)), 2) if lengths else 0.0,
            "max_street_length_m": round(float(np.max(lengths)), 2) if lengths else 0.0,
            "max_out_streets": most,
        }

    # ------------------------------------------------------------------ distances
    @cached_property
    def _reverse_adjacency(self) -> list[list[tuple[int, float]]]:
        """For each node, ``(predecessor, link length)`` over incoming links."""
        order = np.lexsort((self.src, self.dst))
        s = self.src[order].tolist()
        w = self.length[order].tolist()
        counts = np.bincount(self.dst, minlength=self.num_nodes)
        ip = np.zeros(self.num_nodes + 1, dtype=np.int64)
        np.cumsum(counts, out=ip[1:])
        ipl = ip.tolist()
        return [
            list(zip(s[ipl[i] : ipl[i + 1]], w[ipl[i] : ipl[i + 1]])) for i in range(self.num_nodes)
        ]

    def distances_to(self, targets: Iterable[int]) -> np.ndarray:
        """``(N,)`` shortest walking distance (metres, along links) from every node to the
        nearest of ``targets``; ``inf`` where unreachable.

        On a graph where every link has its reverse (after :func:`add_reverse_links`) this
        runs Dijkstra over the contracted streets only and fills the nodes inside streets
        with numpy (a few ms for 30k nodes); otherwise a plain Dijkstra over the links."""
        targets = sorted({int(t) for t in targets})
        if self._is_symmetric:
            return self._contracted_search(targets, hops=False)
        return self._link_dijkstra(targets)

    def hops_to(self, targets: Iterable[int]) -> np.ndarray:
        """``(N,)`` fewest links from every node to the nearest of ``targets``; -1 where
        unreachable."""
        targets = sorted({int(t) for t in targets})
        if self._is_symmetric:
            h = self._contracted_search(targets, hops=True)
            return np.where(np.isfinite(h), h, -1).astype(np.int64)
        return self._link_bfs(targets)

    @cached_property
    def _is_symmetric(self) -> bool:
        rev = self.dst * self.num_nodes + self.src
        return bool(np.isin(rev, self._link_key).all())

    @cached_property
    def _chains(self) -> dict[str, Any]:
        """Per node: the street (chain) it lies in, the decision points at both ends and
        the distance / hops to each; per decision point: its streets as (end, m, hops)."""
        n = self.num_nodes
        end_a = np.arange(n, dtype=np.int64)
        end_b = np.arange(n, dtype=np.int64)
        off_a = np.zeros(n)
        off_b = np.zeros(n)
        hop_a = np.zeros(n)
        hop_b = np.zeros(n)
        chain_of = np.full(n, -1, dtype=np.int64)
        members: list[list[int]] = []
        adj: dict[int, list[tuple[int, float, int]]] = {}
        xy = self._xy_list
        for d in self.decision_points.tolist():
            out = adj.setdefault(d, [])
            for st in self.streets_from(d):
                out.append((st.end, st.length, st.hops))
                inner = st.nodes[1:-1]
                if not inner or chain_of[inner[0]] >= 0:
                    continue
                cum = [0.0]
                for u, v in zip(st.nodes[:-1], st.nodes[1:]):
                    cum.append(cum[-1] + math.dist(xy[u], xy[v]))
                c = len(members)
                members.append(list(inner))
                idx = np.asarray(inner, dtype=np.int64)
                cm = np.asarray(cum[1:-1])
                hp = np.arange(1, len(inner) + 1, dtype=np.float64)
                chain_of[idx] = c
                end_a[idx], end_b[idx] = st.start, st.end
                off_a[idx], off_b[idx] = cm, st.length - cm
                hop_a[idx], hop_b[idx] = hp, st.hops - hp
        return {
            "end_a": end_a,
            "end_b": end_b,
            "off_a": off_a,
            "off_b": off_b,
            "hop_a": hop_a,
            "hop_b": hop_b,
            "chain_of": chain_of,
            "members": members,
            "adj": adj,
        }

    def _contracted_search(self, targets: list[int], hops: bool) -> np.ndarray:
        ch = self._chains
        adj = ch["adj"]
        ea, eb = ch["end_a"], ch["end_b"]
        oa, ob = (ch["hop_a"], ch["hop_b"]) if hops else (ch["off_a"], ch["off_b"])
        chain_of = ch["chain_of"]
        best: dict[int, float] = {}
        for t in targets:
            if chain_of[t] < 0:
                best[t] = 0.0
            else:
                for e, w in ((int(ea[t]), float(oa[t])), (int(eb[t]), float(ob[t]))):
                    if w < best.get(e, math.inf):
                        best[e] = w
        heap = [(w, e) for e, w in best.items()]
        heapq.heapify(heap)
        pop, push = heapq.heappop, heapq.heappush
        k = 2 if hops else 1
        while heap:
            d, u = pop(heap)
            if d > best[u]:
                continue
            for item in adj[u]:
                nd = d + item[k]
                v = item[0]
                if nd < best.get(v, math.inf):
                    best[v] = nd
                    push(heap, (nd, v))
        dp_dist = np.full(self.num_nodes, math.inf)
        if best:
            keys = np.fromiter(best.keys(), dtype=np.int64, count=len(best))
            dp_dist[keys] = np.fromiter(best.values(), dtype=np.float64, count=len(best))
        dist = np.minimum(oa + dp_dist[ea], ob + dp_dist[eb])
        dps = chain_of < 0
        dist[dps] = dp_dist[dps]
        for t in targets:
            c = int(chain_of[t])
            if c >= 0:
                idx = np.asarray(ch["members"][c], dtype=np.int64)
                dist[idx] = np.minimum(dist[idx], np.abs(oa[idx] - oa[t]))
        return dist

    def _link_dijkstra(self, targets: list[int]) -> np.ndarray:
        radj = self._reverse_adjacency
        dist = [math.inf] * self.num_nodes
        heap: list[tuple[float, int]] = []
        for t in targets:
            dist[t] = 0.0
            heap.append((0.0, t))
        heapq.heapify(heap)
        pop, push = heapq.heappop, heapq.heappush
        while heap:
            d, u = pop(heap)
            if d > dist[u]:
                continue
            for v, w in radj[u]:
                nd = d + w
                if nd < dist[v]:
                    dist[v] = nd
                    push(heap, (nd, v))
        return np.array(dist, dtype=np.float64)

    def _link_bfs(self, targets: list[int]) -> np.ndarray:
        radj = self._reverse_adjacency
        hops = [-1] * self.num_nodes
        q: deque[int] = deque()
        for t in targets:
            hops[t] = 0
            q.append(t)
        while q:
            u = q.popleft()
            h = hops[u] + 1
            for v, _ in radj[u]:
                if hops[v] < 0:
                    hops[v] = h
                    q.append(v)
        return np.array(hops, dtype=np.int64)

    def shortest_path(
        self, start: int, targets: Iterable[int], dist: np.ndarray | None = None
    ) -> list[int]:
        """Node indices of a shortest path from ``start`` to the nearest of ``targets``
        (``dist`` may be the result of :meth:`distances_to` for the same targets)."""
        tset = {int(t) for t in targets}
        if dist is None:
            dist = self.distances_to(tset)
        if not math.isfinite(dist[start]):
            raise StreetGraphError(
                f"no path from {self.ids[start]!r} to any of {len(tset)} target node(s)"
            )
        path = [start]
        cur = start
        ip, d, ln = self.indptr, self.dst, self.length
        while cur not in tset:
            lo, hi = int(ip[cur]), int(ip[cur + 1])
            cand = dist[d[lo:hi]] + ln[lo:hi]
            k = int(np.argmin(cand))
            cur = int(d[lo + k])
            path.append(cur)
        return path

    # ------------------------------------------------------------------ building
    def subgraph(self, keep: np.ndarray, name: str | None = None) -> StreetGraph:
        """The graph restricted to nodes where the boolean mask ``keep`` is True."""
        keep = np.asarray(keep, dtype=bool)
        new_index = np.full(self.num_nodes, -1, dtype=np.int64)
        kept = np.flatnonzero(keep)
        new_index[kept] = np.arange(len(kept))
        lk = keep[self.src] & keep[self.dst]
        return StreetGraph(
            [self.ids[i] for i in kept.tolist()],
            self.xy[kept],
            self.pano_heading[kept],
            new_index[self.src[lk]],
            new_index[self.dst[lk]],
            self.heading[lk],
            self.frame,
            latlon=self.latlon[kept],
            name=name or self.name,
            image_dir=self.image_dir,
            meta=self.meta,
        )

    def with_links(self, src: np.ndarray, dst: np.ndarray, heading: np.ndarray) -> StreetGraph:
        """The same nodes with a new link set."""
        return StreetGraph(
            self.ids,
            self.xy,
            self.pano_heading,
            src,
            dst,
            heading,
            self.frame,
            latlon=self.latlon,
            name=self.name,
            image_dir=self.image_dir,
            meta=self.meta,
        )

    @classmethod
    def from_city(
        cls,
        city: Any,
        spacing: float = DEFAULT_SPACING_M,
        kinds: Sequence[str] | None = DEFAULT_STREET_KINDS,
        city_spec: str | None = None,
    ) -> StreetGraph:
        """Panoramas every ~``spacing`` metres along the walkable network of ``city``.

        Edges whose ``kind`` is in ``kinds`` are used (all edges when ``kinds`` is None or
        when no edge has one of them). Network nodes become panoramas with id ``"<node>"``;
        each edge of length ``L`` gets ``round(L / spacing) - 1`` evenly spaced interior
        panoramas with ids ``"<u>-<v>-<k>"`` (``u < v``, ``k`` from 1 at ``u``). Links join
        consecutive panoramas both ways with the bearing between them. Panorama headings are
        0 (rendered panoramas are north-centred). ``city_spec`` (the :func:`load_city` spec)
        is stored in ``meta["city"]`` for rendering.
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
        hd = _bearing_array(dv[:, 0], dv[:, 1])
        meta = {
            "source": "city",
            "city": city_spec or city.meta.get("source") or city.name,
            "spacing_m": float(spacing),
            "kinds": used_kinds,
        }
        return cls(
            ids,
            xya,
            np.zeros(len(ids)),
            src,
            dst,
            hd,
            city.frame,
            name=f"{city.name}-streets",
            meta=meta,
        )

    def summary(self) -> dict[str, Any]:
        """Counts and sizes (printed by ``urban-gym streetgraph-info``)."""
        deg = self.degree
        x0, y0 = self.xy.min(axis=0) if self.num_nodes else (0.0, 0.0)
        x1, y1 = self.xy.max(axis=0) if self.num_nodes else (0.0, 0.0)
        und = int(np.count_nonzero(self.src < self.dst)) + int(
            np.count_nonzero(~np.isin(self.dst * self.num_nodes + self.src, self._link_key))
        )
        return {
            "name": self.name,
            "nodes": self.num_nodes,
            "links": self.num_links,
            "extent_m": (round(float(x1 - x0), 1), round(float(y1 - y0), 1)),
            "street_km": round(float(self.length.sum()) / 2000.0, 2),
            "undirected_edges": und,
            "degree_histogram": {
                int(k): int(v) for k, v in zip(*np.unique(deg, return_counts=True))
            },
            "mean_link_length_m": round(float(self.length.mean()), 2) if self.num_links else 0.0,
            "images": self.image_dir,
            "source": self.meta.get("source"),
        }


_CACHED = (
    "out_degree",
    "neighbours",
    "undirected_neighbours",
    "degree",
    "_link_key",
    "_node_tree",
    "_streets",
    "_degree_list",
    "_xy_list",
    "decision_points",
    "_reverse_adjacency",
    "_is_symmetric",
    "_chains",
)


def _bearing(dx: float, dy: float) -> float:
    return math.degrees(math.atan2(dx, dy)) % 360.0


def _bearing_array(dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    return np.degrees(np.arctan2(dx, dy)) % 360.0


def _undirected_adjacency(n: int, src: np.ndarray, dst: np.ndarray) -> list[list[int]]:
    a = np.concatenate([src, dst])
    b = np.concatenate([dst, src])
    key = np.unique(a * n + b)
    a, b = key // n, key % n
    ip = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=ip[1:])
    bl, ipl = b.tolist(), ip.tolist()
    return [bl[ipl[i] : ipl[i + 1]] for i in range(n)]


# ====================================================================== preprocessing
def add_reverse_links(graph: StreetGraph) -> tuple[StreetGraph, dict[str, Any]]:
    """Add ``v -> u`` (heading + 180 degrees) wherever only ``u -> v`` exists.

    Report: ``links_before``, ``reverse_links_added``, ``links_after``.
    """
    n = graph.num_nodes
    key = graph._link_key
    rev = graph.dst * n + graph.src
    missing = ~np.isin(rev, key)
    added = int(np.count_nonzero(missing))
    report = {
        "step": "add_reverse_links",
        "links_before": graph.num_links,
        "reverse_links_added": added,
        "links_after": graph.num_links + added,
    }
    if not added:
        return graph, report
    out = graph.with_links(
        np.concatenate([graph.src, graph.dst[missing]]),
        np.concatenate([graph.dst, graph.src[missing]]),
        np.concatenate([graph.heading, (graph.heading[missing] + 180.0) % 360.0]),
    )
    return out, report


def prune_dead_ends(
    graph: StreetGraph, keep: Iterable[int] = ()
) -> tuple[StreetGraph, dict[str, Any]]:
    """Remove nodes with at most one neighbour (ignoring direction), repeating until none
    is left; nodes in ``keep`` (indices) are never removed.

    Report: ``nodes_removed``, ``links_removed``, ``rounds`` (a round removes every current
    dead end; a dead-end street of k nodes takes k rounds), ``removed_per_round`` (first
    10 rounds).
    """
    n = graph.num_nodes
    nb = graph.undirected_neighbours
    deg = graph.degree.tolist()
    protected = bytearray(n)
    for k in keep:
        protected[int(k)] = 1
    alive = bytearray(b"\x01") * n
    frontier = [i for i in range(n) if deg[i] <= 1 and not protected[i]]
    rounds = 0
    per_round: list[int] = []
    removed = 0
    while frontier:
        rounds += 1
        nxt: list[int] = []
        count = 0
        for i in frontier:
            if not alive[i]:
                continue
            alive[i] = 0
            count += 1
            for j in nb[i]:
                if alive[j]:
                    deg[j] -= 1
                    if deg[j] <= 1 and not protected[j]:
                        nxt.append(j)
        removed += count
        per_round.append(count)
        frontier = nxt
    mask = np.frombuffer(bytes(alive), dtype=np.uint8).astype(bool)
    out = graph.subgraph(mask) if removed else graph
    report = {
        "step": "prune_dead_ends",
        "nodes_removed": removed,
        "links_removed": graph.num_links - out.num_links,
        "rounds": len([c for c in per_round if c]),
        "removed_per_round": per_round[:10],
    }
    return out, report


def connected_components(graph: StreetGraph) -> np.ndarray:
    """``(N,)`` component label of each node (ignoring link direction); label 0 is the
    largest component, then by decreasing size."""
    n = graph.num_nodes
    nb = graph.undirected_neighbours
    label = [-1] * n
    sizes: list[int] = []
    for s in range(n):
        if label[s] >= 0:
            continue
        c = len(sizes)
        label[s] = c
        stack = [s]
        size = 0
        while stack:
            u = stack.pop()
            size += 1
            for v in nb[u]:
                if label[v] < 0:
                    label[v] = c
                    stack.append(v)
        sizes.append(size)
    lab = np.array(label, dtype=np.int64)
    order = np.argsort(-np.array(sizes), kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[lab] if n else lab


def keep_largest_component(graph: StreetGraph) -> tuple[StreetGraph, dict[str, Any]]:
    """Keep only the largest connected component (ignoring direction).

    Report: ``components``, ``nodes_removed``, ``links_removed``.
    """
    if graph.num_nodes == 0:
        return graph, {
            "step": "keep_largest_component",
            "components": 0,
            "nodes_removed": 0,
            "links_removed": 0,
        }
    lab = connected_components(graph)
    mask = lab == 0
    out = graph.subgraph(mask) if not mask.all() else graph
    return out, {
        "step": "keep_largest_component",
        "components": int(lab.max()) + 1,
        "nodes_removed": int(graph.num_nodes - out.num_nodes),
        "links_removed": int(graph.num_links - out.num_links),
    }


@dataclass
class PreprocessReport:
    """What each preprocessing step changed: ``steps`` is a list of report dicts, each
    with a ``step`` name; ``before``/``after`` hold node and link counts."""

    before: dict[str, int]
    after: dict[str, int]
    steps: list[dict[str, Any]] = field(default_factory=list)

    def step(self, name: str) -> dict[str, Any]:
        """The report of step ``name``."""
        for s in self.steps:
            if s["step"] == name:
                return s
        raise KeyError(f"no preprocessing step {name!r}; ran: {[s['step'] for s in self.steps]}")

    def to_dict(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "steps": self.steps}

    def __str__(self) -> str:
        lines = [f"before: {self.before['nodes']} nodes, {self.before['links']} links"]
        for s in self.steps:
            body = ", ".join(f"{k} {v}" for k, v in s.items() if k != "step")
            lines.append(f"{s['step']}: {body}")
        lines.append(f"after: {self.after['nodes']} nodes, {self.after['links']} links")
        return "\n".join(lines)


def preprocess(
    graph: StreetGraph,
    *,
    reverse_links: bool = True,
    prune: bool = True,
    largest_component: bool = True,
    keep: Iterable[str] = (),
) -> tuple[StreetGraph, PreprocessReport]:
    """CityNav preprocessing in order: add missing reverse links, prune dead ends
    iteratively (never the panoramas whose ids are in ``keep``), keep the largest component,
    contract degree-2 chains into streets. Returns the new graph (with its streets cached)
    and a :class:`PreprocessReport`."""
    before = {"nodes": graph.num_nodes, "links": graph.num_links}
    steps: list[dict[str, Any]] = []
    g = graph
    if reverse_links:
        g, r = add_reverse_links(g)
        steps.append(r)
    if prune:
        keep_idx = [g.index[p] for p in keep if p in g.index]
        g, r = prune_dead_ends(g, keep_idx)
        steps.append(r)
    if largest_component:
        g, r = keep_largest_component(g)
        steps.append(r)
    c = g.contract()
    steps.append({"step": "contract", **c})
    report = PreprocessReport(before, {"nodes": g.num_nodes, "links": g.num_links}, steps)
    g.meta = {**g.meta, "preprocess": report.to_dict()}
    return g, report


# ====================================================================== Touchdown files
@dataclass
class LoadReport:
    """What a Touchdown loader read: line counts, skipped bad lines and their messages
    (first 20), duplicate links merged."""

    nodes: int = 0
    links: int = 0
    nodes_skipped: int = 0
    links_skipped: int = 0
    duplicate_links: int = 0
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "links": self.links,
            "nodes_skipped": self.nodes_skipped,
            "links_skipped": self.links_skipped,
            "duplicate_links": self.duplicate_links,
            "errors": self.errors[:20],
        }


def _read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file (a byte-order mark is dropped), split at ``\\n``
    only, so that line numbers are those an editor shows."""
    try:
        text = path.read_text(encoding="utf-8-sig")
        return [line.removesuffix("\r") for line in text.split("\n")]
    except FileNotFoundError:
        raise StreetGraphError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StreetGraphError(f"{path}: cannot read ({exc})") from None


def read_touchdown(
    path: str | os.PathLike,
    links: str | os.PathLike | None = None,
    images: str | os.PathLike | None = None,
    skip_bad_lines: bool = False,
    name: str | None = None,
) -> StreetGraph:
    """Read a Touchdown-format graph.

    Args:
        path: a directory holding ``nodes.txt`` and ``links.txt`` (and optionally an
            ``images/`` folder), or the ``nodes.txt`` file itself.
        links: the ``links.txt`` file when ``path`` is a nodes file.
        images: folder of equirectangular images ``<panoid>.jpg|jpeg|png``; default the
            directory's ``images/`` when it exists.
        skip_bad_lines: skip malformed lines (counted in ``meta["load"]``) instead of
            raising :class:`StreetGraphError` with file, line number and what is wrong.
        name: graph name (default: the directory name).

    ``nodes.txt`` lines are ``panoid,pano_yaw_angle,lat,lng`` (degrees); ``links.txt``
    lines ``start_panoid,heading,end_panoid`` (heading in degrees). Blank lines are
    ignored. A repeated link keeps its first heading and is counted as a duplicate.
    """
    p = Path(path)
    if p.is_dir():
        nodes_path, links_path = p / "nodes.txt", p / "links.txt"
        img = (
            Path(images)
            if images is not None
            else (p / "images" if (p / "images").is_dir() else None)
        )
        gname = name or p.name
    else:
        if links is None:
            raise StreetGraphError(f"{p}: not a directory; pass links= for the links file")
        nodes_path, links_path = p, Path(links)
        img = Path(images) if images is not None else None
        gname = name or p.parent.name
    if img is not None and not img.is_dir():
        raise StreetGraphError(f"image folder {img} does not exist")
    rep = LoadReport()

    def bad(file: Path, no: int, msg: str) -> None:
        text = f"{file}, line {no}: {msg}"
        if not skip_bad_lines:
            raise StreetGraphError(text)
        rep.errors.append(text)

    ids: list[str] = []
    yaw: list[float] = []
    lat: list[float] = []
    lng: list[float] = []
    first_line: dict[str, int] = {}
    for no, line in enumerate(_read_lines(nodes_path), start=1):
        if not line.strip():
            continue
        parts = [s.strip() for s in line.split(",")]
        if len(parts) != 4:
            bad(
                nodes_path,
                no,
                f"expected 4 fields panoid,pano_yaw_angle,lat,lng, got {len(parts)} in {line!r}",
            )
            rep.nodes_skipped += 1
            continue
        pid = parts[0]
        if no == 1 and parts[2].casefold() in ("lat", "latitude"):
            continue  # header line
        if not pid:
            bad(nodes_path, no, "empty panoid")
            rep.nodes_skipped += 1
            continue
        try:
            vals = [float(parts[1]), float(parts[2]), float(parts[3])]
        except ValueError:
            which = [
                k for k, s in zip(("pano_yaw_angle", "lat", "lng"), parts[1:]) if not _is_float(s)
            ]
            bad(
                nodes_path,
                no,
                f"{which[0]}={parts[1 + ('pano_yaw_angle', 'lat', 'lng').index(which[0])]!r} is not a number",
            )
            rep.nodes_skipped += 1
            continue
        if (
            not all(math.isfinite(v) for v in vals)
            or not (-90.0 <= vals[1] <= 90.0)
            or not (-180.0 <= vals[2] <= 180.0)
        ):
            bad(
                nodes_path,
                no,
                f"lat={parts[2]!r}, lng={parts[3]!r}, pano_yaw_angle={parts[1]!r} out of range",
            )
            rep.nodes_skipped += 1
            continue
        if pid in first_line:
            bad(nodes_path, no, f"duplicate panoid {pid!r} (first on line {first_line[pid]})")
            rep.nodes_skipped += 1
            continue
        first_line[pid] = no
        ids.append(pid)
        yaw.append(vals[0])
        lat.append(vals[1])
        lng.append(vals[2])
    if not ids:
        raise StreetGraphError(f"{nodes_path}: no valid nodes")
    rep.nodes = len(ids)
    index = {pid: i for i, pid in enumerate(ids)}
    src: list[int] = []
    dst: list[int] = []
    hd: list[float] = []
    seen: set[tuple[int, int]] = set()
    for no, line in enumerate(_read_lines(links_path), start=1):
        if not line.strip():
            continue
        parts = [s.strip() for s in line.split(",")]
        if len(parts) != 3:
            bad(
                links_path,
                no,
                f"expected 3 fields start_panoid,heading,end_panoid, got {len(parts)} in {line!r}",
            )
            rep.links_skipped += 1
            continue
        a, h, b = parts
        if no == 1 and h.casefold() == "heading":
            continue
        ia, ib = index.get(a), index.get(b)
        if ia is None or ib is None:
            which = "start_panoid" if ia is None else "end_panoid"
            bad(
                links_path,
                no,
                f"unknown {which} {(a if ia is None else b)!r} (not in {nodes_path.name})",
            )
            rep.links_skipped += 1
            continue
        try:
            hv = float(h)
        except ValueError:
            hv = math.nan
        if not math.isfinite(hv):
            bad(links_path, no, f"heading={h!r} is not a number")
            rep.links_skipped += 1
            continue
        if ia == ib:
            bad(links_path, no, f"link from {a!r} to itself")
            rep.links_skipped += 1
            continue
        if (ia, ib) in seen:
            rep.duplicate_links += 1
            continue
        seen.add((ia, ib))
        src.append(ia)
        dst.append(ib)
        hd.append(hv)
    rep.links = len(src)
    lat_a, lng_a = np.array(lat), np.array(lng)
    frame = GeoFrame(round(float(np.mean(lat_a)), 6), round(float(np.mean(lng_a)), 6))
    x, y = frame.to_xy(lat_a, lng_a)
    xy = np.column_stack([np.atleast_1d(x), np.atleast_1d(y)])
    meta = {
        "source": "touchdown",
        "nodes_file": str(nodes_path),
        "links_file": str(links_path),
        "load": rep.to_dict(),
    }
    return StreetGraph(
        ids,
        xy,
        np.array(yaw),
        np.array(src, dtype=np.int64),
        np.array(dst, dtype=np.int64),
        np.array(hd),
        frame,
        latlon=np.column_stack([lat_a, lng_a]),
        name=gname,
        image_dir=str(img) if img is not None else None,
        meta=meta,
    )


def _is_float(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def write_touchdown(graph: StreetGraph, directory: str | os.PathLike) -> Path:
    """Write ``nodes.txt`` and ``links.txt`` in Touchdown format into ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "nodes.txt", "w", encoding="utf-8") as f:
        for pid, yaw, (la, lo) in zip(
            graph.ids, graph.pano_heading.tolist(), graph.latlon.tolist()
        ):
            f.write(f"{pid},{yaw:.6g},{la:.8f},{lo:.8f}\n")
    ids = graph.ids
    with open(d / "links.txt", "w", encoding="utf-8") as f:
        for a, h, b in zip(graph.src.tolist(), graph.heading.tolist(), graph.dst.tolist()):
            f.write(f"{ids[a]},{h:.6g},{ids[b]}\n")
    return d


# ====================================================================== routes
@dataclass(frozen=True)
class Route:
    """One line of a Touchdown/map2seq route file: ``route_id``, the panorama ids of the
    reference path, the navigation text and the start heading (degrees)."""

    route_id: str
    panoids: tuple[str, ...]
    text: str
    start_heading: float
    line: int = 0


def read_routes(path: str | os.PathLike, skip_bad_lines: bool = False) -> tuple[list[Route], int]:
    """Read a JSON-lines route file (Touchdown / map2seq): each line an object with
    ``route_panoids`` (list of ids), ``navigation_text`` and ``start_heading``; the id is
    ``route_id``, ``id`` or the line number. Returns the routes and the number of skipped
    lines (only with ``skip_bad_lines``; otherwise a bad line raises naming file and line).

    Lines are strict JSON data (:func:`urban_gym.world.jsondata.loads_strict`): ``NaN``,
    integers beyond 64 bits and nesting deeper than 32 levels are bad lines, reported
    like any other. A UTF-8 byte-order mark is accepted."""
    p = Path(path)
    routes: list[Route] = []
    skipped = 0
    for no, line in enumerate(_read_lines(p), start=1):
        if not line.strip():
            continue
        try:
            obj = loads_strict(line)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
            pan = obj.get("route_panoids")
            if (
                not isinstance(pan, list)
                or len(pan) < 2
                or not all(isinstance(s, str) for s in pan)
            ):
                raise ValueError(
                    f"route_panoids={_short(pan)} must be a list of at least 2 panorama ids"
                )
            text = obj.get("navigation_text")
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"navigation_text={_short(text)} must be non-empty text")
            sh = obj.get("start_heading", 0.0)
            if isinstance(sh, bool) or not isinstance(sh, (int, float)) or not math.isfinite(sh):
                raise ValueError(f"start_heading={_short(sh)} must be a number of degrees")
            rid = obj.get("route_id", obj.get("id", no))
            if isinstance(rid, bool) or not isinstance(rid, (str, int)) or rid == "":
                raise ValueError(f"route_id={_short(rid)} must be a non-empty string or an integer")
            rid = str(rid)
        except (ValueError, json.JSONDecodeError) as exc:
            if not skip_bad_lines:
                raise StreetGraphError(f"{p}, line {no}: {exc}") from None
            skipped += 1
            continue
        routes.append(Route(rid, tuple(pan), text.strip(), float(sh) % 360.0, no))
    return routes, skipped


def check_route(graph: StreetGraph, route: Route) -> list[int]:
    """Node indices of ``route``; :class:`StreetGraphError` naming the route and the broken
    hop when a panorama is unknown or two consecutive ones are not linked."""
    idx: list[int] = []
    for k, pid in enumerate(route.panoids):
        i = graph.index.get(pid)
        if i is None:
            raise StreetGraphError(
                f"route {route.route_id!r} (line {route.line}): panorama {pid!r} at position {k} "
                f"is not in graph {graph.name!r}"
            )
        idx.append(i)
    for k in range(len(idx) - 1):
        if idx[k] != idx[k + 1] and not graph.has_link(idx[k], idx[k + 1]):
            raise StreetGraphError(
                f"route {route.route_id!r} (line {route.line}): no link from "
                f"{route.panoids[k]!r} to {route.panoids[k + 1]!r} (hop {k} -> {k + 1})"
            )
    return idx


def _short(value: Any, limit: int = 60) -> str:
    return show(value, limit)


# ====================================================================== loading by spec
_MEMO: dict[str, StreetGraph] = {}


def graph_key(spec: dict[str, Any]) -> str:
    """A canonical string key of a graph spec (see :func:`load_streetgraph`)."""
    return json.dumps(spec, sort_keys=True)


def load_streetgraph(spec: dict[str, Any]) -> StreetGraph:
    """Build (or fetch from this process's memo) the preprocessed graph a spec describes.

    ``spec`` keys: ``source`` = ``"city"`` (with ``city``: a :func:`load_city` spec,
    ``spacing``: metres, ``kinds``: edge kinds or None) or ``"touchdown"`` (with ``path``:
    the directory, ``images``: image folder or None); both take ``prune`` (default True),
    ``largest_component`` (default True), ``reverse_links`` (default True) and ``keep``
    (panorama ids never pruned). Unknown keys raise :class:`StreetGraphError` listing the
    valid ones.
    """
    key = graph_key(spec)
    got = _MEMO.get(key)
    if got is not None:
        return got
    common = {"source", "prune", "largest_component", "reverse_links", "keep"}
    source = spec.get("source")
    valid = {
        "city": common | {"city", "spacing", "kinds"},
        "touchdown": common | {"path", "images"},
    }
    if source not in valid:
        raise StreetGraphError(f"graph spec source={source!r} must be 'city' or 'touchdown'")
    unknown = sorted(set(spec) - valid[source])
    if unknown:
        raise StreetGraphError(
            f"graph spec: unknown keys {unknown}; valid keys: {', '.join(sorted(valid[source]))}"
        )
    if source == "city":
        from urban_gym.world.loader import load_city

        city = load_city(spec["city"])
        raw = StreetGraph.from_city(
            city,
            spacing=float(spec.get("spacing", DEFAULT_SPACING_M)),
            kinds=spec.get("kinds", list(DEFAULT_STREET_KINDS)),
            city_spec=spec["city"],
        )
    else:
        raw = read_touchdown(spec["path"], images=spec.get("images"))
    g, _ = preprocess(
        raw,
        reverse_links=spec.get("reverse_links", True),
        prune=spec.get("prune", True),
        largest_component=spec.get("largest_component", True),
        keep=spec.get("keep", ()),
    )
    g.meta["spec"] = dict(spec)
    _MEMO[key] = g
    return g


def clear_streetgraph_memo() -> None:
    """Forget the graphs built in this process."""
    _MEMO.clear()
