"""CityNav's preprocessing of a street graph, each step returning a new graph and a report.

1. :func:`add_reverse_links` -- add ``v -> u`` wherever only ``u -> v`` exists (heading + 180).
2. :func:`prune_dead_ends` -- remove nodes with at most one neighbour, iteratively (a dead-end
   street disappears node by node); nodes in ``keep`` are never removed.
3. :func:`keep_largest_component` -- drop everything outside the largest connected component.
4. :func:`merge_parallel_streets` -- where two streets leave a decision point for the same
   end within :data:`PARALLEL_DEG` degrees of each other (a direct link beside a chain of
   panoramas, two chains round the same block side), keep one, so that every option at
   every decision point is a distinct street (two such options look along the same
   bearing and show the same image).
5. Contraction (:meth:`StreetGraph.contract <urban_gym.families.streetgraph.world.StreetGraph.contract>`)
   -- chains of degree-2 nodes become streets between decision points.

:func:`preprocess` runs them in order and returns a :class:`PreprocessReport`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from urban_gym.families.streetgraph.world.graph import StreetGraph


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


#: Streets from one node to the same end whose bearings differ by at most this are parallel.
PARALLEL_DEG = 10.0


def _angle(a: float, b: float) -> float:
    return abs((a - b + 180.0) % 360.0 - 180.0)


def parallel_streets(graph: StreetGraph, node: int, tolerance: float = PARALLEL_DEG) -> list:
    """Groups (lists of 2 or more :class:`Street`) of the streets leaving ``node`` that end
    at the same node with bearings within ``tolerance`` degrees of each other.
    """
    by_end: dict[int, list] = {}
    for st in graph.streets_from(node):
        by_end.setdefault(st.end, []).append(st)
    groups = []
    for same_end in by_end.values():
        rest = sorted(same_end, key=lambda st: (st.heading % 360.0, st.nodes[1]))
        while rest:
            head, *others = rest
            group = [head] + [o for o in others if _angle(o.heading, head.heading) <= tolerance]
            rest = [o for o in others if o not in group]
            if len(group) > 1:
                groups.append(group)
    return groups


def merge_parallel_streets(
    graph: StreetGraph, keep: Iterable[int] = (), tolerance: float = PARALLEL_DEG
) -> tuple[StreetGraph, dict[str, Any]]:
    """Keep one street of each group of parallel streets (:func:`parallel_streets`) at
    every decision point: the one with the most panoramas (then the shorter, then the
    lower first hop). A dropped direct link is removed both ways; a dropped chain loses
    its inner panoramas -- unless one of them is in ``keep`` (indices), then that chain is
    kept and another one dropped. Repeats until no decision point has parallel streets.

    Report: ``groups`` (parallel groups found), ``links_removed``, ``nodes_removed``.
    """
    protected = {int(k) for k in keep}
    groups_found = 0
    g = graph
    ids_kept = set(graph.ids[i] for i in protected)
    for _ in range(20):
        drop_links: set[tuple[int, int]] = set()
        drop_nodes: set[int] = set()
        for u in g.decision_points.tolist():
            for group in parallel_streets(g, u, tolerance):
                groups_found += 1
                order = sorted(
                    group,
                    key=lambda st: (
                        any(n in protected for n in st.nodes[1:-1]),
                        st.hops,
                        -st.length,
                        -st.nodes[1],
                    ),
                    reverse=True,
                )
                for st in order[1:]:
                    inner = st.nodes[1:-1]
                    if any(n in protected for n in inner):
                        continue
                    if inner:
                        drop_nodes.update(inner)
                    else:
                        drop_links.update({(st.start, st.end), (st.end, st.start)})
        if not drop_links and not drop_nodes:
            break
        n = g.num_nodes
        cut = np.array([a * n + b for a, b in drop_links], dtype=np.int64)
        lk = ~np.isin(g._link_key, cut)
        g = g.with_links(g.src[lk], g.dst[lk], g.heading[lk])
        if drop_nodes:
            mask = np.ones(n, dtype=bool)
            mask[list(drop_nodes)] = False
            g = g.subgraph(mask)
        protected = {g.index[i] for i in ids_kept if i in g.index}
    report = {
        "step": "merge_parallel_streets",
        "groups": groups_found,
        "links_removed": graph.num_links - g.num_links,
        "nodes_removed": graph.num_nodes - g.num_nodes,
    }
    return g, report


def connected_components(graph: StreetGraph) -> np.ndarray:
    """``(N,)`` component label of each node (ignoring link direction); label 0 is the
    largest component, then by decreasing size.
    """
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
    with a ``step`` name; ``before``/``after`` hold node and link counts.
    """

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
        """The report as plain JSON-able dicts."""
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
    merge_parallel: bool = True,
    keep: Iterable[str] = (),
) -> tuple[StreetGraph, PreprocessReport]:
    """CityNav preprocessing in order: add missing reverse links, prune dead ends
    iteratively (never the panoramas whose ids are in ``keep``), keep the largest component,
    merge parallel streets (:func:`merge_parallel_streets`), contract degree-2 chains into
    streets. Returns the new graph (with its streets cached)
    and a :class:`PreprocessReport`.
    """
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
    if merge_parallel:
        keep_idx = [g.index[p] for p in keep if p in g.index]
        g, r = merge_parallel_streets(g, keep_idx)
        steps.append(r)
    c = g.contract()
    steps.append({"step": "contract", **c})
    report = PreprocessReport(before, {"nodes": g.num_nodes, "links": g.num_links}, steps)
    g.meta = {**g.meta, "preprocess": report.to_dict()}
    return g, report
