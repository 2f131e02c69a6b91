"""How well a pose graph agrees with a city's walkable network, and its printed reports.

:func:`validate_posegraph` compares node positions, path lengths and turn sequences
(:func:`turn_sequence`, :func:`edit_similarity`) against the city's network;
:func:`format_validation` and :func:`format_statistics` print what ``urban-gym
validate-posegraph`` and ``urban-gym info --posegraph`` show.

Units: metres, degrees clockwise from north (x east, y north).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np
from shapely.geometry import LineString

from urban_gym.families.posegraph360.world.elements import State
from urban_gym.families.posegraph360.world.graph import PoseGraph
from urban_gym.world.geo import angle_diff, bearing


def turn_sequence(
    points: Sequence[tuple[float, float]],
    min_turn: float = 50.0,
    chord: float = 12.0,
    step: float = 2.0,
) -> str:
    """Turns along a polyline as a string of ``L``/``R``: places where the bearing over
    the next ``chord`` metres differs from the bearing over the previous ``chord`` metres
    by at least ``min_turn`` degrees (one turn per peak; peaks closer than ``2 * chord``
    are merged).
    """
    if len(points) < 2:
        return ""
    line = LineString(points)
    L = float(line.length)
    if L < 2 * chord:
        return ""
    s = np.arange(chord, L - chord + 1e-9, step)
    change = []
    for v in s:
        a, b, c = (line.interpolate(w) for w in (v - chord, v, v + chord))
        change.append(
            float(angle_diff(bearing(c.x - b.x, c.y - b.y), bearing(b.x - a.x, b.y - a.y)))
        )
    ch = np.array(change)
    turns: list[tuple[float, float]] = []
    i = 0
    while i < len(ch):
        if abs(ch[i]) >= min_turn:
            j = i
            while (
                j + 1 < len(ch)
                and abs(ch[j + 1]) >= min_turn
                and np.sign(ch[j + 1]) == np.sign(ch[i])
            ):
                j += 1
            k = i + int(np.argmax(np.abs(ch[i : j + 1])))
            pos, val = float(s[k]), float(ch[k])
            if turns and pos - turns[-1][0] < 2 * chord and np.sign(val) == np.sign(turns[-1][1]):
                pass
            else:
                turns.append((pos, val))
            i = j + 1
        else:
            i += 1
    return "".join("R" if v > 0 else "L" for _, v in turns)


def edit_similarity(a: str, b: str) -> float:
    """``1 - Levenshtein(a, b) / max(len(a), len(b))`` (1.0 for two empty strings)."""
    if not a and not b:
        return 1.0
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i]
        for j, cb in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return 1.0 - prev[-1] / max(len(a), len(b))


def route_points(graph: PoseGraph, route: Sequence[State]) -> list[tuple[float, float]]:
    """Positions of a route's states, consecutive duplicates removed."""
    pts: list[tuple[float, float]] = []
    for s in route:
        p = graph.position(s)
        if not pts or math.dist(pts[-1], p) > 1e-6:
            pts.append(p)
    return pts


#: The bars of the review of 360CityArena: route-length disagreement at most 10% (checked at the
#: 95th percentile of the pairs) and a node-to-road median error of at most about 5 m.
MAX_LENGTH_DISAGREEMENT_P95 = 0.10
MAX_NODE_TO_STREET_MEDIAN_M = 5.0


class _Network:
    """Shortest walks on a network graph: all of the city's walkable network, or only the
    edges a pose graph was built from.
    """

    def __init__(self, city: Any, kinds: Sequence[str] | None, exclude: Sequence[str]) -> None:
        self.city = city
        G = city.network
        if kinds is not None:
            edges = [
                (u, v)
                for u, v, d in G.edges(data=True)
                if d.get("kind") in kinds and d.get("highway") not in exclude
            ]
            G = G.edge_subgraph(edges)
        self.G = G
        self.ids = np.array(list(G.nodes), dtype=np.int64)
        self.xy = np.array([city.node_xy[int(n)] for n in self.ids], dtype=float).reshape(-1, 2)

    def nearest(self, x: float, y: float) -> int:
        return int(self.ids[int(np.argmin(np.hypot(self.xy[:, 0] - x, self.xy[:, 1] - y)))])

    def walk(
        self, a_xy: np.ndarray, b_xy: np.ndarray
    ) -> tuple[float, list[tuple[float, float]]] | None:
        na, nb = self.nearest(*a_xy), self.nearest(*b_xy)
        try:
            path = nx.shortest_path(self.G, na, nb, weight="length")
        except nx.NetworkXNoPath:
            return None
        ln = float(sum(self.G.edges[u, v]["length"] for u, v in zip(path[:-1], path[1:])))
        pts: list[tuple[float, float]] = [tuple(a_xy)]
        for u, v in zip(path[:-1], path[1:]):
            pts += list(self.city.edge_geometry(u, v).coords)
        pts.append(tuple(b_xy))
        return ln, pts


def validate_posegraph(
    graph: PoseGraph,
    city: Any,
    pairs: int = 100,
    min_distance: float = 150.0,
    max_distance: float = 800.0,
    seed: int = 0,
    network: str = "auto",
) -> dict[str, Any]:
    """How well ``graph`` agrees with ``city``'s walkable network.

    * node-to-street distance: each junction's (and each frame's) distance to the
      nearest walkable network point, metres (median and 95th percentile);
    * for ``pairs`` random junction pairs ``min_distance``..``max_distance`` metres apart
      (straight line): the shortest route on the pose graph against the shortest walk on
      the reference network between the nearest network nodes -- the relative path-length
      disagreement ``|L_pose - L_net| / L_net`` (median, 95th percentile), the length
      ratio, and the agreement of the two turn sequences (:func:`turn_sequence`): the
      fraction of identical sequences and the mean :func:`edit_similarity`.

    ``network`` is the reference: ``"streets"`` -- the network edges the graph was built
    from (its ``meta`` ``kinds``/``exclude_highways``: a built graph must reproduce its
    own streets); ``"walkable"`` -- all of the walkable network (footways and paths too,
    which a street graph does not have: its routes are longer where a footpath cuts a
    corner); ``"auto"`` -- ``"streets"`` for a graph built from a city, else
    ``"walkable"`` (an imported capture). The result names it under ``network`` and
    adds ``walkable_length_disagreement_p95`` (the same pairs on the whole walkable
    network) for comparison.
    """
    kinds = graph.meta.get("kinds") if graph.meta.get("source") == "city" else None
    if network not in ("auto", "streets", "walkable"):
        raise ValueError(f"network={network!r} must be 'auto', 'streets' or 'walkable'")
    if network == "streets" and kinds is None:
        raise ValueError("network='streets' needs a graph built from a city (meta kinds)")
    use = "streets" if network == "auto" and kinds is not None else network
    use = "walkable" if use == "auto" else use
    ref = _Network(
        city, kinds if use == "streets" else None, graph.meta.get("exclude_highways", ())
    )
    full = ref if use == "walkable" else _Network(city, None, ())
    jxy = np.array([[j.x, j.y] for j in graph.junctions])
    _, jd = city.nearest_walkable_points(jxy)
    _, fd = city.nearest_walkable_points(graph.frame_xy)
    rng = np.random.default_rng(seed)
    rel: list[float] = []
    ratio: list[float] = []
    same: list[bool] = []
    sim: list[float] = []
    rel_full: list[float] = []
    tried = unreachable = 0
    n = len(graph.junctions)
    while len(rel) < pairs and tried < pairs * 50:
        tried += 1
        a, b = (int(v) for v in rng.integers(n, size=2))
        d = float(np.hypot(*(jxy[a] - jxy[b])))
        if not (min_distance <= d <= max_distance):
            continue
        goal_states = [State(k, 0) for k in graph.out_of[b]] + [
            State(k, graph.trajectories[k].last) for k in graph.into[b]
        ]
        if not graph.out_of[a]:
            continue
        field_ = graph.distance_field(goal_states)
        lp = field_.junction[a]
        if not math.isfinite(lp):
            unreachable += 1
            continue
        walk = ref.walk(jxy[a], jxy[b])
        if walk is None:
            unreachable += 1
            continue
        ln, pts_n = walk
        if ln <= 0:
            continue
        pts_p = route_points(graph, field_.route(State(graph.out_of[a][0], 0)))
        rel.append(abs(lp - ln) / ln)
        ratio.append(lp / ln)
        ts_p, ts_n = turn_sequence(pts_p), turn_sequence(pts_n)
        same.append(ts_p == ts_n)
        sim.append(edit_similarity(ts_p, ts_n))
        other = walk if full is ref else full.walk(jxy[a], jxy[b])
        if other is not None and other[0] > 0:
            rel_full.append(abs(lp - other[0]) / other[0])

    def pct(v, q):
        return float(np.percentile(v, q)) if len(v) else float("nan")

    return {
        "network": use,
        "junctions": n,
        "frames": graph.n_frames,
        "node_to_street_median_m": pct(jd, 50),
        "node_to_street_p95_m": pct(jd, 95),
        "frame_to_street_median_m": pct(fd, 50),
        "frame_to_street_p95_m": pct(fd, 95),
        "pairs": len(rel),
        "unreachable_pairs": unreachable,
        "length_disagreement_median": pct(rel, 50),
        "length_disagreement_p95": pct(rel, 95),
        "length_ratio_median": pct(ratio, 50),
        "turn_sequence_exact": float(np.mean(same)) if same else float("nan"),
        "turn_sequence_similarity": float(np.mean(sim)) if sim else float("nan"),
        "walkable_length_disagreement_p95": pct(rel_full, 95),
    }


def validation_failures(
    v: dict[str, Any], max_p95: float = MAX_LENGTH_DISAGREEMENT_P95
) -> list[str]:
    """What makes a :func:`validate_posegraph` result fail the review's bars (empty: it
    passes): the path-length disagreement's 95th percentile above ``max_p95``, a median
    node-to-street distance above :data:`MAX_NODE_TO_STREET_MEDIAN_M`, or no pair
    compared at all.
    """
    out = []
    if not v["node_to_street_median_m"] <= MAX_NODE_TO_STREET_MEDIAN_M:
        out.append(
            f"node-to-street median {v['node_to_street_median_m']:.1f} m > "
            f"{MAX_NODE_TO_STREET_MEDIAN_M:.0f} m"
        )
    if not v["pairs"]:
        out.append("no start/goal pair could be compared")
    elif not v["length_disagreement_p95"] <= max_p95:
        out.append(
            f"path-length disagreement p95 {100 * v['length_disagreement_p95']:.1f} % > "
            f"{100 * max_p95:.0f} % (against the {v['network']} network)"
        )
    return out


def format_validation(v: dict[str, Any]) -> str:
    """:func:`validate_posegraph`'s result as a Markdown table."""
    rows = [
        ("reference network", str(v.get("network", "walkable"))),
        ("junctions / frames", f"{v['junctions']} / {v['frames']}"),
        (
            "node-to-street distance, median / p95",
            f"{v['node_to_street_median_m']:.2f} m / {v['node_to_street_p95_m']:.2f} m",
        ),
        (
            "frame-to-street distance, median / p95",
            f"{v['frame_to_street_median_m']:.2f} m / {v['frame_to_street_p95_m']:.2f} m",
        ),
        ("start/goal pairs (unreachable)", f"{v['pairs']} ({v['unreachable_pairs']})"),
        (
            "path-length disagreement abs(Lp - Ln) / Ln, median / p95",
            f"{100 * v['length_disagreement_median']:.1f} % / "
            f"{100 * v['length_disagreement_p95']:.1f} %",
        ),
        ("path-length ratio Lp/Ln, median", f"{v['length_ratio_median']:.3f}"),
        (
            "path-length disagreement p95 against all walkable ways (footpaths too)",
            f"{100 * v.get('walkable_length_disagreement_p95', float('nan')):.1f} %",
        ),
        ("turn sequences identical", f"{100 * v['turn_sequence_exact']:.1f} %"),
        ("turn-sequence similarity (1 - edit distance)", f"{v['turn_sequence_similarity']:.3f}"),
    ]
    out = ["| measure | value |", "|---|---|"]
    out += [f"| {a} | {b} |" for a, b in rows]
    return "\n".join(out)


def format_statistics(s: dict[str, Any]) -> str:
    """:meth:`PoseGraph.statistics` as the lines ``urban-gym info --posegraph`` prints."""
    w, h = s["extent_m"]
    hist = ", ".join(f"{k}: {v}" for k, v in s["degree_histogram"].items())
    return "\n".join(
        [
            f"pose graph         {s['name']} (frames every {s['spacing_m']:g} m)",
            f"nodes (junctions)  {s['junctions']}",
            f"edges (segments)   {s['segments']}",
            f"video segments     {s['trajectories']} (one per segment and direction)",
            f"mean branching     {s['mean_branching']:.2f}",
            f"degree histogram   {hist}",
            f"dead ends          {s['dead_ends']}",
            f"streets            {s['streets']} named",
            f"frames             {s['frames']}",
            f"street length      {s['length_km']:.2f} km (mean segment {s['mean_segment_m']:.0f} m)",
            f"extent             {w:.0f} m east-west x {h:.0f} m north-south",
        ]
    )
