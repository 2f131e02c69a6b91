"""How a StreetGraph agent moves: the options at a node, travelling a street, the goal
distances.

:class:`StreetGraphDynamics` is the part of
:class:`~urban_gym.families.streetgraph.env.StreetGraphEnv` that changes the agent's place
(a mixin); the functions are shared with the batched vector env
(:mod:`urban_gym.families.streetgraph.batch`), which lists a node's options in the same
order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from urban_gym.caching import LRUCache
from urban_gym.families.streetgraph.tasks import reached
from urban_gym.families.streetgraph.world import Street, StreetGraph

if TYPE_CHECKING:
    from urban_gym.tasks.spec import TaskSpec

#: Goals whose distance arrays an env keeps (LRU).
DISTANCE_CACHE = 128


class StreetGraphDynamics:
    """The moves of :class:`~urban_gym.families.streetgraph.env.StreetGraphEnv` (a mixin)."""

    if TYPE_CHECKING:  # the env's state that the moves read and change
        task: TaskSpec
        graph: StreetGraph
        node: int
        heading: float
        max_degree: int
        max_transitions: int
        transitions: int
        distance_m: float
        trajectory: list[int]
        link_travel: bool
        goal_nodes: frozenset[int]
        _graph_key: str
        _dist_cache: LRUCache
        _node_cache: dict[int, tuple[list[Street], np.ndarray, list[float]]]
        _bearings: np.ndarray
        _option_bearings: list[float]

        def _graph_of(self, task: TaskSpec) -> StreetGraph: ...

    def _distances(
        self, t: TaskSpec, goal: tuple[int, ...]
    ) -> tuple[np.ndarray, np.ndarray | None, list[float]]:
        """Shortest distances (m) to the goal from every node, and for instruction tasks
        the hop counts, computed once per goal (LRU of :data:`DISTANCE_CACHE` goals); the
        distances also as a list of Python floats (what a step reads, without numpy's
        per-element cost).
        """

        def compute() -> tuple[np.ndarray, np.ndarray | None, list[float]]:
            g = self._graph_of(t)
            hops = g.hops_to(goal) if t.type == "instruction" else None
            d = g.distances_to(goal)
            return d, hops, d.tolist()

        return self._dist_cache.get_or_create((self._graph_key, goal), compute)

    def _options_at(self, node: int) -> list[Street]:
        """The streets leaving ``node`` in increasing bearing (cached per graph and node
        together with the padded bearing vector).
        """
        got = self._node_cache.get(node)
        if got is None:
            opts = ordered_streets(self.graph, node)
            bearings = option_bearings(opts, self.max_degree)
            bearings.setflags(write=False)
            got = (opts, bearings, [float(b) for b in bearings[: len(opts)]])
            self._node_cache[node] = got
        self._bearings = got[1]
        self._option_bearings = got[2]
        return got[0]

    def _travel(self, street: Street) -> None:
        xy = self.graph._xy_list
        nodes = street.nodes
        hops = len(nodes) - 1
        moved_from = self.transitions
        od = self.task.type == "origin_destination"
        if (
            not self.link_travel
            and moved_from + hops <= self.max_transitions
            and (not od or self.goal_nodes.isdisjoint(nodes))
        ):
            # the whole street: its length and node list are known
            self.distance_m += street.length
            self.transitions = moved_from + hops
            self.trajectory.extend(nodes[1:])
            last, prev = nodes[-1], nodes[-2]
        else:
            path = nodes[1:2] if self.link_travel else nodes[1:]
            last = prev = self.node
            for n in path:
                if self.transitions >= self.max_transitions:
                    break
                self.distance_m += math.dist(xy[last], xy[n])
                self.transitions += 1
                self.trajectory.append(n)
                prev, last = last, n
                if od and n in self.goal_nodes:
                    break
        if self.transitions > moved_from:
            (x0, y0), (x1, y1) = xy[prev], xy[last]
            if (x0, y0) != (x1, y1):
                # geo.bearing of two floats, inline (the hottest line of a symbolic step)
                self.heading = math.degrees(math.atan2(x1 - x0, y1 - y0)) % 360.0
        self.node = last

    def _instruction_success(self) -> bool:
        return reached(self.task, self.node, self.graph)


def distance_cache() -> LRUCache[
    tuple[str, tuple[int, ...]], tuple[np.ndarray, np.ndarray | None, list[float]]
]:
    """A new cache of goal distances (``(graph key, goal nodes)`` -> distances, hops, the
    distances as floats), :data:`DISTANCE_CACHE` goals at most.
    """
    return LRUCache(max_items=DISTANCE_CACHE, size=distances_nbytes)


def ordered_streets(graph: StreetGraph, node: int) -> list[Street]:
    """The streets leaving ``node``: the options of the node, in increasing bearing (ties
    by the first hop's node).
    """
    return sorted(graph.streets_from(node), key=lambda s: (round(s.heading, 6), s.nodes[1]))


def option_bearings(options: Sequence[Street], max_degree: int) -> np.ndarray:
    """The observation's ``bearings`` of ``options``: each street's compass bearing
    (degrees in [0, 359.999], float32), zeros up to ``max_degree``.
    """
    bearings = np.zeros(max_degree, dtype=np.float32)
    for i, st in enumerate(options):
        bearings[i] = min(np.float32(st.heading % 360.0), np.float32(359.999))
    return bearings


def distances_nbytes(value: tuple[np.ndarray, np.ndarray | None, list[float]]) -> int:
    """Bytes of a cached ``(distances, hops, distances as floats)`` entry: the arrays and
    8 bytes a float, without walking the list (the cache's default size function would
    visit every float: milliseconds a new goal on the Touchdown graph).
    """
    d, hops, floats = value
    return d.nbytes + (hops.nbytes if hops is not None else 0) + 8 * len(floats)


def finite(x: float) -> float:
    """``x``, or 0 where it is not finite."""
    return x if math.isfinite(x) else 0.0
