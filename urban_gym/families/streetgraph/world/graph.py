"""StreetGraph: a Street-View-style panorama graph for long-range navigation.

A :class:`StreetGraph` holds panorama *nodes* (a string id, latitude/longitude, metric
``x``/``y`` in a :class:`~urban_gym.world.geo.GeoFrame`, and the panorama's heading: the
compass bearing of its centre column) and directed *links* ``u -> v`` with a heading
(degrees clockwise from north) and a length (metres, the straight distance ``u``-``v``).
Arrays are numpy; links are stored sorted by ``(source, target)`` in CSR form.

Contraction (:meth:`StreetGraph.contract`): chains of degree-2 nodes become *streets*
between *decision points* (nodes whose neighbour count is not 2); a
:class:`~urban_gym.families.streetgraph.world.elements.Street` keeps its node list and its length.
The heading of an outgoing street is the bearing from its first node to the node three
hops along it (or its last node when it is shorter): :data:`LOOKAHEAD_HOPS`. Distances to
a goal come from :class:`~urban_gym.families.streetgraph.world.distances.StreetDistances`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.families.streetgraph.world.distances import StreetDistances
from urban_gym.families.streetgraph.world.elements import (
    DEFAULT_SPACING_M,
    DEFAULT_STREET_KINDS,
    IMAGE_SUFFIXES,
    LOOKAHEAD_HOPS,
    Street,
    StreetGraphError,
)
from urban_gym.families.streetgraph.world.from_city import city_panoramas
from urban_gym.world.geo import GeoFrame, bearing


class StreetGraph(StreetDistances):
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
        """The number of panorama nodes."""
        return len(self.ids)

    @property
    def num_links(self) -> int:
        """The number of directed links."""
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
        dead ends and decision points).
        """
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
        footprint, a park polygon, a point), ascending.
        """
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
        to ``node`` around a loop). Works for any node, also mid-street ones. Cached.
        """
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
        hd = bearing(xy[look][0] - xy[start][0], xy[look][1] - xy[start][1])
        return Street(tuple(nodes), length, hd)

    @cached_property
    def _degree_list(self) -> list[int]:
        return self.degree.tolist()

    @cached_property
    def _xy_list(self) -> list[tuple[float, ...]]:
        return [tuple(p) for p in self.xy.tolist()]

    @cached_property
    def decision_points(self) -> np.ndarray:
        """Indices of decision points (neighbour count != 2). A component that is a pure
        cycle of degree-2 nodes gets its lowest-index node as a decision point.
        """
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
        ``max_street_length_m``, ``max_out_streets`` (the largest number of options).
        """
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
        return cls(**city_panoramas(city, spacing, kinds, city_spec))

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


def _undirected_adjacency(n: int, src: np.ndarray, dst: np.ndarray) -> list[list[int]]:
    a = np.concatenate([src, dst])
    b = np.concatenate([dst, src])
    key = np.unique(a * n + b)
    a, b = key // n, key % n
    ip = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=ip[1:])
    bl, ipl = b.tolist(), ip.tolist()
    return [bl[ipl[i] : ipl[i + 1]] for i in range(n)]
