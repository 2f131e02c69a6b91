"""Dijkstra on a city's walkable network, compiled with numba where it can be.

:func:`shortest_from` is what :meth:`urban_gym.world.routing.Router.field` runs: the
same search as its pure-Python reference (:func:`shortest_from_python`) -- a binary heap
of ``(distance, push counter, node, predecessor)`` entries, neighbours pushed in the order
the network lists its edges -- kept as an indexed heap of nodes lowered in place
(:mod:`urban_gym.world.dijkstra_kernel`: one slot per node instead of one entry per push),
which pops the nodes in the reference's order, so both give the same distances *and* the
same predecessor on ties. The network is packed once per city into CSR arrays
(:class:`PackedNetwork`).

Where numba is missing or the kernel cannot compile, a :class:`RuntimeWarning` says so once
and the Python reference runs instead (about 30x slower on Helsinki's 3,742 nodes).
"""

from __future__ import annotations

import heapq
import threading
import warnings
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

_state: dict[str, object] = {"kernel": None, "failed": False}
_lock = threading.Lock()


@dataclass(frozen=True)
class PackedNetwork:
    """A network as CSR arrays: node ``ids`` (index -> id), ``index`` (id -> index), and for
    node ``i`` the neighbours ``nbr[ptr[i]:ptr[i + 1]]`` with edge lengths ``w`` (m) in the
    order the adjacency lists them.
    """

    ids: list[int]
    index: dict[int, int]
    ptr: np.ndarray
    nbr: np.ndarray
    w: np.ndarray


_PACKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pack(owner: object, adj: dict[int, list[tuple[int, float]]]) -> PackedNetwork:
    """The :class:`PackedNetwork` of adjacency ``adj`` (node -> [(neighbour, length)]),
    built once per ``owner`` (a city) and kept while it lives.
    """
    hit = _PACKED.get(owner)
    if hit is not None:
        return hit
    ids = list(adj)  # every edge is listed from both ends, so every node is a key
    index = {n: i for i, n in enumerate(ids)}
    ptr = np.zeros(len(ids) + 1, np.int64)
    nbr: list[int] = []
    w: list[float] = []
    for i, n in enumerate(ids):
        for m, length in adj.get(n, ()):
            nbr.append(index[m])
            w.append(length)
        ptr[i + 1] = len(nbr)
    packed = PackedNetwork(ids, index, ptr, np.asarray(nbr, np.int64), np.asarray(w, np.float64))
    _PACKED[owner] = packed
    return packed


def closed_mask(net: PackedNetwork, closed: frozenset[tuple[int, int]]) -> np.ndarray:
    """``bool`` per CSR entry: whether that edge (either direction) is in ``closed``."""
    mask = np.zeros(len(net.nbr), np.bool_)
    if not closed:
        return mask
    index = net.index
    for a, b in closed:
        for p, q in ((a, b), (b, a)):
            i = index.get(p)
            j = index.get(q)
            if i is None or j is None:
                continue
            lo, hi = int(net.ptr[i]), int(net.ptr[i + 1])
            hits = np.flatnonzero(net.nbr[lo:hi] == j)
            mask[lo + hits] = True
    return mask


def _kernel():
    if _state["kernel"] is None and not _state["failed"]:
        with _lock:
            if _state["kernel"] is None and not _state["failed"]:
                try:
                    _state["kernel"] = _compile()
                except Exception as exc:  # noqa: BLE001 - any failure means the Python path
                    _state["failed"] = True
                    warnings.warn(
                        f"urban_gym: the compiled Dijkstra is not available "
                        f"({type(exc).__name__}: {exc}); routing runs in Python (same "
                        "routes, slower). Install numba to use it.",
                        RuntimeWarning,
                        stacklevel=3,
                    )
    return _state["kernel"]


def _compile():
    from urban_gym.world.dijkstra_kernel import dijkstra

    # compile now (and fail here, not inside an episode)
    one = np.zeros(2, np.int64)
    dijkstra(one, np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.bool_), 0, 0.0, 0, 0.0)
    return dijkstra


class NodeValues(Mapping):
    """A read-only mapping node id -> value over the nodes a search reached, backed by
    one array per network (``values[i]`` for node ``ids[i]``; ``reached[i]`` says whether
    node ``i`` has a value). Compares equal to a dict with the same items.
    """

    __slots__ = ("_net", "_index", "_as_ids", "_values", "_reached")

    def __init__(
        self, net: PackedNetwork, values: np.ndarray, reached: np.ndarray, as_ids: bool = False
    ) -> None:
        self._net = net
        self._index = net.index
        self._as_ids = as_ids  # values are node indices (-1: None) to give as node ids
        self._values = values
        self._reached = reached

    def _value(self, i: int):
        v = self._values[i]
        if not self._as_ids:
            return float(v)
        return None if v < 0 else self._net.ids[int(v)]

    def __getitem__(self, node):
        i = self._index.get(node)
        if i is None or not self._reached[i]:
            raise KeyError(node)
        return self._value(i)

    def get(self, node, default=None):
        """The value of ``node``, or ``default`` where the search did not reach it."""
        i = self._index.get(node)
        if i is None or not self._reached[i]:
            return default
        return self._value(i)

    def __contains__(self, node) -> bool:
        i = self._index.get(node)
        return i is not None and bool(self._reached[i])

    def __iter__(self):
        ids = self._net.ids
        return (ids[i] for i in np.flatnonzero(self._reached).tolist())

    def __len__(self) -> int:
        return int(np.count_nonzero(self._reached))

    def nbytes(self) -> int:
        """Bytes held by this mapping's own arrays."""
        return int(self._values.nbytes + self._reached.nbytes)


def shortest_from(
    net: PackedNetwork,
    closed: np.ndarray,
    u: int,
    du: float,
    v: int,
    dv: float,
) -> tuple[Mapping, Mapping]:
    """Distances (m) and predecessors of every node reachable from node ``u`` at initial
    cost ``du`` and node ``v`` at ``dv`` (the two ends of a source edge), with the CSR
    entries flagged in ``closed`` unusable: ``(dist, pred)`` read-only mappings keyed by
    node id (:class:`NodeValues`, or dicts from the Python path); the predecessor of a
    source end is None.
    """
    k = _kernel()
    if k is None:
        return shortest_from_python(net, closed, u, du, v, dv)
    iu, iv = net.index[u], net.index[v]
    dist_a, pred_a = k(net.ptr, net.nbr, net.w, closed, iu, float(du), iv, float(dv))
    reached = pred_a > -2
    return NodeValues(net, dist_a, reached), NodeValues(net, pred_a, reached, as_ids=True)


def shortest_from_python(
    net: PackedNetwork, closed: np.ndarray, u: int, du: float, v: int, dv: float
) -> tuple[dict[int, float], dict[int, int | None]]:
    """:func:`shortest_from` in pure Python (the reference of the compiled kernel)."""
    ptr, nbr, w = net.ptr.tolist(), net.nbr.tolist(), net.w.tolist()
    cl = closed.tolist()
    ids = net.ids
    dist: dict[int, float] = {}
    pred: dict[int, int | None] = {}
    done = [False] * len(ids)
    heap: list[tuple[float, int, int, int]] = [(du, 0, net.index[u], -1), (dv, 1, net.index[v], -1)]
    heapq.heapify(heap)
    count = 2
    push, pop = heapq.heappush, heapq.heappop
    while heap:
        d, _, i, p = pop(heap)
        if done[i]:
            continue
        done[i] = True
        dist[ids[i]] = d
        pred[ids[i]] = None if p < 0 else ids[p]
        for k in range(ptr[i], ptr[i + 1]):
            j = nbr[k]
            if not done[j] and not cl[k]:
                push(heap, (d + w[k], count, j, i))
                count += 1
    return dist, pred


__all__ = [
    "NodeValues",
    "PackedNetwork",
    "closed_mask",
    "pack",
    "shortest_from",
    "shortest_from_python",
]
