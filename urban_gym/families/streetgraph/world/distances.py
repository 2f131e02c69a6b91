"""Distances and shortest paths to a goal on a street graph.

Distances to a goal (:meth:`StreetDistances.distances_to`) are one multi-source Dijkstra
over the reversed links, metres; :meth:`StreetDistances.hops_to` the same in link counts.
On a graph where every link has its reverse, the search runs over the contracted streets
only (between decision points) and fills the nodes inside streets with numpy.

:class:`StreetDistances` is a mixin of :class:`~urban_gym.families.streetgraph.world.StreetGraph`:
it reads the graph's arrays (``src``, ``dst``, ``length``, ``indptr``, ``ids``), its link
keys and its streets (``decision_points``, ``streets_from``), and keeps its own caches
among the graph's cached properties.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from urban_gym.families.streetgraph.world.elements import StreetGraphError

if TYPE_CHECKING:
    from urban_gym.families.streetgraph.world.elements import Street


class StreetDistances:
    """Distance queries of a :class:`~urban_gym.families.streetgraph.world.StreetGraph` (a mixin;
    see the module docstring).
    """

    if TYPE_CHECKING:  # what the mixin reads of StreetGraph
        ids: list[str]
        src: np.ndarray
        dst: np.ndarray
        length: np.ndarray
        indptr: np.ndarray

        @property
        def num_nodes(self) -> int:
            """The number of nodes."""

        @property
        def _link_key(self) -> np.ndarray: ...

        @property
        def _xy_list(self) -> list[tuple[float, ...]]: ...

        @property
        def decision_points(self) -> np.ndarray:
            """The decision points' node indices."""

        def streets_from(self, node: int) -> list[Street]:
            """The streets leaving ``node``."""

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
        with numpy (a few ms for 30k nodes); otherwise a plain Dijkstra over the links.
        """
        targets = sorted({int(t) for t in targets})
        if self._is_symmetric:
            return self._contracted_search(targets, hops=False)
        return self._link_dijkstra(targets)

    def hops_to(self, targets: Iterable[int]) -> np.ndarray:
        """``(N,)`` fewest links from every node to the nearest of ``targets``; -1 where
        unreachable.
        """
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
        the distance / hops to each; per decision point: its streets as (end, m, hops).
        """
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
        (``dist`` may be the result of :meth:`distances_to` for the same targets).
        """
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
