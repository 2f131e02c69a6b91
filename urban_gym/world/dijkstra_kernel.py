"""The compiled Dijkstra of :mod:`urban_gym.world.dijkstra` (numba).

Import this module only through :func:`urban_gym.world.dijkstra.shortest_from`'s kernel
loader, which falls back to the Python reference where numba is missing or cannot compile.
The functions are module-level so that numba's on-disk cache keeps them between processes.
The heap's comparison (distance, then push order) and the push-or-lower step are written
out where they are used: calling shared numba functions for them made a field 1.6x slower
(``benchmarks/bench_routing.py``: 0.55-0.59 ms against 0.35 ms on Helsinki).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

_JIT: dict[str, Any] = {"cache": True, "nogil": True}  # numba.njit keyword arguments


@numba.njit(**_JIT)
def sift_up(heap, pos, key, order, k, j):
    """Put node ``j`` at slot ``k`` (a new leaf or its slot before a decrease), moved up
    past the nodes that leave the heap after it (by distance, then push order).
    """
    dj, oj = key[j], order[j]
    while k > 0:
        par = (k - 1) >> 1
        q = heap[par]
        if key[q] < dj or (key[q] == dj and order[q] < oj):
            break
        heap[k] = q
        pos[q] = k
        k = par
    heap[k] = j
    pos[j] = k


@numba.njit(**_JIT)
def sift_down(heap, pos, key, order, size, j):
    """Put node ``j`` at the root of a heap of ``size`` slots, moved down."""
    dj, oj = key[j], order[j]
    k = 0
    while True:
        c = 2 * k + 1
        if c >= size:
            break
        q = heap[c]
        if c + 1 < size:
            r = heap[c + 1]
            if key[r] < key[q] or (key[r] == key[q] and order[r] < order[q]):
                c += 1
                q = r
        if dj < key[q] or (dj == key[q] and oj < order[q]):
            break
        heap[k] = q
        pos[q] = k
        k = c
    heap[k] = j
    pos[j] = k


@numba.njit(**_JIT)
def dijkstra(ptr, nbr, w, closed, s0, d0, s1, d1):
    """Distances (m) and predecessor indices (-1 a source end, -2 unreached) of the CSR
    network ``ptr``, ``nbr``, ``w`` from node ``s0`` at cost ``d0`` and ``s1`` at ``d1``,
    the entries flagged in ``closed`` unusable.

    An indexed binary heap holds each node once, lowered in place when a strictly shorter
    distance is found. It pops the nodes in the order the reference's heap of (distance,
    push counter, node, predecessor) entries does -- by distance, then by the counter of
    the push that gave that distance (``order``, counted over every push the reference
    makes) -- so the distances and the predecessors on ties are the reference's.
    """
    n = len(ptr) - 1
    dist = np.full(n, np.inf)
    pred = np.full(n, -2, np.int64)  # -2 unreached, -1 a source end
    key = np.full(n, np.inf)  # the tentative distance of a node in the heap
    order = np.zeros(n, np.int64)
    via = np.full(n, -1, np.int64)  # its tentative predecessor
    pos = np.full(n, -1, np.int64)  # its heap slot; -1 never pushed, -2 done
    heap = np.empty(n, np.int64)
    size = 0
    count = 0
    for m in range(2):
        j = s0 if m == 0 else s1
        d = d0 if m == 0 else d1
        if pos[j] == -1 or d < key[j]:
            key[j] = d
            order[j] = count
            via[j] = -1
            k = pos[j]
            if k == -1:
                k = size
                size += 1
            sift_up(heap, pos, key, order, k, j)
        count += 1
    while size:
        i = heap[0]
        size -= 1
        if size:
            sift_down(heap, pos, key, order, size, heap[size])
        pos[i] = -2
        d = key[i]
        dist[i] = d
        pred[i] = via[i]
        for k in range(ptr[i], ptr[i + 1]):
            j = nbr[k]
            if pos[j] == -2 or closed[k]:
                continue
            dj = d + w[k]
            if pos[j] == -1 or dj < key[j]:
                key[j] = dj
                order[j] = count
                via[j] = i
                s = pos[j]
                if s == -1:
                    s = size
                    size += 1
                sift_up(heap, pos, key, order, s, j)
            count += 1
    return dist, pred
