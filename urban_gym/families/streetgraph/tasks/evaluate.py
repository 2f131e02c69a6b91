"""Checking a StreetGraph task's family fields and scoring an episode.

A task names its world in ``task.city`` and its graph parameters in ``start["graph"]``
(:func:`graph_spec`): for a graph built from a city (``source="city"``) the city is
``task.city`` (a ``start["graph"]["city"]`` that names another one is an error); a
Touchdown graph (``source="touchdown"``) is its own world -- its panoramas are the
capture in ``start["graph"]["path"]`` -- and ``task.city`` names it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from urban_gym.families.streetgraph.tasks.types import FAMILY, TASK_TYPES
from urban_gym.families.streetgraph.world import StreetGraph, load_streetgraph
from urban_gym.tasks import metrics as M
from urban_gym.tasks.spec import TaskError, TaskSpec


def graph_spec(task: TaskSpec) -> dict[str, Any]:
    """The :func:`~urban_gym.families.streetgraph.world.load_streetgraph` spec of a task's graph:
    its ``start["graph"]`` parameters with the world taken from ``task.city`` (see the
    module docstring).
    """
    spec = task.start.get("graph")
    if not isinstance(spec, dict):
        raise TaskError(f"task {task.id!r}: start.graph={spec!r} must be a graph spec object")
    if spec.get("source") != "city":
        return spec
    city = spec.get("city", task.city)
    if city != task.city:
        raise TaskError(
            f"task {task.id!r}: start.graph.city={city!r} names another world than "
            f"task.city={task.city!r}"
        )
    return spec if "city" in spec else {**spec, "city": task.city}


def graph_of(task: TaskSpec) -> StreetGraph:
    """The (memoised) preprocessed graph of a task."""
    return load_streetgraph(graph_spec(task))


def check_task(task: TaskSpec) -> TaskSpec:
    """``task`` if it is a well-formed StreetGraph task on its graph (the start node, the
    goal nodes or route panoramas exist there), else :class:`TaskError` naming what is
    wrong. Loads the task's graph (memoised).
    """
    if task.family != FAMILY:
        raise TaskError(f"task {task.id!r} has family {task.family!r}, not {FAMILY!r}")
    if task.type not in TASK_TYPES:
        raise TaskError(
            f"task {task.id!r}: type {task.type!r} must be one of {', '.join(TASK_TYPES)}"
        )
    g = graph_of(task)
    if task.start.get("node") not in g.index:
        raise TaskError(
            f"task {task.id!r}: start node {task.start.get('node')!r} is not in graph {g.name!r}"
        )
    if task.type == "origin_destination":
        _check_goal_nodes(task, g)
    else:
        route = task.goal.get("route")
        if not isinstance(route, list) or len(route) < 2:
            raise TaskError(
                f"task {task.id!r}: goal.route={route!r} must list the route's panoramas"
            )
        missing = [n for n in route if n not in g.index]
        if missing:
            raise TaskError(
                f"task {task.id!r}: route panoramas {missing[:3]} are not in graph {g.name!r}"
            )
    return task


def _check_goal_nodes(task: TaskSpec, g: StreetGraph) -> None:
    nodes = task.goal.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise TaskError(f"task {task.id!r}: goal.nodes={nodes!r} must be a non-empty list")
    missing = [n for n in nodes if n not in g.index]
    if missing:
        raise TaskError(f"task {task.id!r}: goal nodes {missing[:3]} are not in graph {g.name!r}")
    if task.start["node"] in nodes:
        raise TaskError(f"task {task.id!r}: the start node {task.start['node']!r} is a goal node")
    address = task.goal.get("address")
    if address is not None and not (
        isinstance(address, dict) and isinstance(address.get("text"), str)
    ):
        raise TaskError(
            f"task {task.id!r}: goal.address={address!r} must be null or an object with a "
            "'text' string"
        )


@dataclass
class EpisodeOutcome:
    """What an episode did, as the evaluator needs it (node indices are those of the
    task's graph, :func:`graph_of`; distances in metres).

    Attributes:
        node: the final panorama.
        trajectory: every panorama visited, the start first.
        distance_m: the distance walked.
        shortest_m: the shortest walking distance from the start to the goal.
        remaining_m: the shortest walking distance from ``node`` to the goal.
        remaining_hops: links from ``node`` to the goal (instruction tasks; -1 otherwise).
        before, after: the remaining shortest distance before and after each decision
            (a change under 1 mm counts as none).
        decisions, transitions, invalid_actions: counts of the episode.
        dtw_threshold: nDTW's success distance ``d_th`` (metres, or links with
            ``dtw_distance="hops"``).
        dtw_distance: nDTW's step cost: ``"euclidean"`` (metres between panoramas) or
            ``"hops"`` (fewest links from the agent's panorama to the reference one, the
            graph distance Touchdown's SPD counts).
        graph: the task's graph (:func:`graph_of`) when the caller holds it (an env does),
            else None: :func:`evaluate` looks it up by the task's graph spec.
    """

    node: int
    trajectory: list[int]
    distance_m: float
    shortest_m: float
    remaining_m: float
    remaining_hops: int = -1
    before: list[float] = field(default_factory=list)
    after: list[float] = field(default_factory=list)
    decisions: int = 0
    transitions: int = 0
    invalid_actions: int = 0
    dtw_threshold: float = 25.0
    dtw_distance: str = "euclidean"
    graph: StreetGraph | None = field(default=None, repr=False, compare=False)


def reached(task: TaskSpec, node: int, g: StreetGraph | None = None) -> bool:
    """Whether ``node`` fulfils the task: a destination node (origin-destination), or the
    route's last panorama or a neighbour of it (instruction: Touchdown's task completion).
    """
    g = graph_of(task) if g is None else g
    if task.type == "origin_destination":
        # the node's panorama id among the goal's (ids and indices map one to one)
        return g.ids[node] in task.goal["nodes"]
    goal = g.index[task.goal["route"][-1]]
    return M.task_completion(node, goal, g.undirected_neighbours[goal])


def evaluate(task: TaskSpec, outcome: EpisodeOutcome) -> dict[str, Any]:
    """The episode's metrics: ``success``, ``spl``, ``decision_accuracy`` (a decision is
    correct when the remaining shortest distance shrank), ``distance_m``, ``shortest_m``,
    ``remaining_m``, ``decisions``, ``transitions``, ``invalid_actions``; instruction
    tasks add ``task_completion``, ``spd`` (links from the final panorama to the goal),
    ``ndtw`` and ``sdtw`` (:mod:`urban_gym.tasks.metrics`).
    """
    g = outcome.graph if outcome.graph is not None else graph_of(task)
    success = M.success(reached(task, outcome.node, g))
    m: dict[str, Any] = {
        "success": success,
        "spl": M.spl(success, outcome.shortest_m, outcome.distance_m),
        "decision_accuracy": M.decision_accuracy(outcome.before, outcome.after),
        "distance_m": round(outcome.distance_m, 3),
        "shortest_m": round(outcome.shortest_m, 3),
        "remaining_m": round(outcome.remaining_m, 3),
        "decisions": outcome.decisions,
        "transitions": outcome.transitions,
        "invalid_actions": outcome.invalid_actions,
    }
    if task.type == "instruction":
        d_th = outcome.dtw_threshold
        m["task_completion"] = success
        m["spd"] = int(outcome.remaining_hops)
        if outcome.dtw_distance == "hops":
            route = [g.index[n] for n in task.goal["route"]]
            m["ndtw"] = M.ndtw_of_costs(hop_costs(g, outcome.trajectory, route), d_th)
        else:
            xy = g.xy
            query = [tuple(xy[n]) for n in outcome.trajectory]
            ref = [tuple(xy[g.index[n]]) for n in task.goal["route"]]
            m["ndtw"] = M.ndtw(query, ref, d_th)
        m["sdtw"] = success * m["ndtw"]
    return m


def hop_costs(g: StreetGraph, query: list[int], reference: list[int]) -> list[list[float]]:
    """``cost[i][j]``: the fewest links from ``query[i]`` to ``reference[j]`` (node
    indices of ``g``; ``inf`` where there is no way), nDTW's graph step costs.
    """
    cols: dict[int, list[float]] = {}
    for r in set(reference):
        hops = g.hops_to((r,))
        cols[r] = [float(h) if h >= 0 else math.inf for h in hops[query].tolist()]
    return [[cols[r][i] for r in reference] for i in range(len(query))]
