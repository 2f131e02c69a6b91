"""StreetGraph tasks: origin-destination pairs with named destinations, and instruction
tasks from Touchdown/map2seq route files.

Origin-destination tasks (``type="origin_destination"``)
---------------------------------------------------------
A *destination* is a real named place of the city -- a POI (its building footprint, or a
3 m disc around it when it has no building) or a named green area (a park polygon) --
mapped to the set of panorama nodes within ``reach`` metres of that polygon
(:func:`city_destinations`). Reaching any node of the set is success. Only names that
are unique in the city are used, so "go to <name>" has one answer.

Starts are sampled with the CityNav crawler (:func:`crawl`), seeded at a destination node
and walking *away* from it:

* along a corridor (only one way on, not counting the way back) it simply follows the
  street to the next decision point;
* at a junction it chooses among the streets not yet tried from that junction with
  probability proportional to ``exp(cos(theta_i) / T) * gamma ** n_v``, where ``theta_i`` is
  the angle between the street's 3-hop heading and the bearing from the seed to the current
  node (a random bearing while still at the seed), ``n_v`` is how often the street's end has
  been visited already, and the temperature ``T`` anneals geometrically from ``t_start`` at
  the seed to ``t_end`` at the target radial distance ``R``:
  ``T = t_start * (t_end / t_start) ** min(r / R, 1)``;
* it is a depth-first search: each junction is pushed on a stack when left; when no
  untried street is left (a dead end, or everything tried), it backtracks to the most recent
  junction with an untried street;
* it stops at the first node whose straight-line distance from the seed is at least ``R``
  *and* whose degree is at least ``min_degree`` (an intersection by default).

All randomness comes from the ``numpy.random.Generator`` passed in: the same seed gives the
same tasks. ``TaskSpec`` fields of these tasks:

* ``start``: ``{"node": <panoid>, "heading": <degrees>, "graph": <graph spec>}`` (the graph
  spec is what :func:`~urban_gym.world.streetgraph.load_streetgraph` takes; the heading is
  the bearing of one of the start's streets drawn at random -- not the crawler's arrival
  heading, which points away from the destination);
* ``goal``: ``{"name", "kind" ("poi" | "area"), "category", "osm_id", "nodes": [panoids],
  "position": [x, y]}``;
* ``meta``: ``route_length_m`` (shortest walking distance), ``decision_points`` (decision
  points on that shortest route before the destination = the oracle's decisions),
  ``radial_distance_m``, ``target_radius_m``, ``crawler`` (parameters), ``seed``.
* ``difficulty`` by decision points: ``easy`` <= 10, ``medium`` 11..25, ``hard`` > 25.

Instruction tasks (``type="instruction"``)
-----------------------------------------
One per route of a Touchdown/map2seq JSON-lines file (:func:`instruction_tasks`):
``start = {"node": route[0], "heading": start_heading, "graph": spec}``, ``goal = {"node":
route[-1], "route": [panoids]}``, ``instruction`` = the navigation text.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.tasks.report import GeneratedSuite, GenerationReport, Misses, TypeReport
from urban_gym.tasks.spec import TaskError, TaskSpec, load_suite, save_suite
from urban_gym.world.streetgraph import (
    StreetGraph,
    StreetGraphError,
    check_route,
    load_streetgraph,
    read_routes,
)

#: Folder of the committed default suites.
SUITES_DIR = Path(__file__).resolve().parent.parent / "data" / "suites"

#: Difficulty thresholds on the number of decision points along the shortest route.
DIFFICULTY_DECISIONS = {"easy": 10, "medium": 25}


@dataclass(frozen=True)
class CrawlerParams:
    """Parameters of the CityNav start crawler (see the module docstring).

    Attributes:
        t_start: softmax temperature at the seed (high: nearly uniform choices).
        t_end: temperature at the target radius (low: nearly straight away from the seed).
        gamma: revisit penalty base in (0, 1]; a street whose end was visited ``n`` times
            is weighted by ``gamma ** n``.
        min_degree: the start must have at least this many neighbours.
    """

    t_start: float = 1.0
    t_end: float = 0.1
    gamma: float = 0.2
    min_degree: int = 3

    def __post_init__(self) -> None:
        if not (self.t_start > 0 and self.t_end > 0):
            raise TaskError(
                f"crawler temperatures t_start={self.t_start!r}, t_end={self.t_end!r} must be > 0"
            )
        if not (0.0 < self.gamma <= 1.0):
            raise TaskError(f"crawler gamma={self.gamma!r} must be in (0, 1]")
        if self.min_degree < 1:
            raise TaskError(f"crawler min_degree={self.min_degree!r} must be >= 1")


@dataclass(frozen=True)
class CrawlResult:
    """Where the crawler stopped: ``start`` (node index), the walked ``path`` (node indices,
    after backtracking), ``radial_distance`` (metres from the seed), ``arrival_heading``
    (degrees, the last hop's bearing), ``junction_choices`` and ``backtracks``."""

    start: int
    path: tuple[int, ...]
    radial_distance: float
    arrival_heading: float
    junction_choices: int
    backtracks: int


def crawl(
    graph: StreetGraph,
    seed_node: int,
    radius: float,
    rng: np.random.Generator,
    params: CrawlerParams | None = None,
) -> CrawlResult:
    """Walk away from ``seed_node`` until ``radius`` metres (straight line) and a node of
    degree >= ``params.min_degree`` (see the module docstring). Raises
    :class:`StreetGraphError` when the search exhausts the graph first."""
    p = params or CrawlerParams()
    if not (radius > 0 and math.isfinite(radius)):
        raise TaskError(f"crawler radius={radius!r} must be a positive number of metres")
    xy = graph.xy
    deg = graph.degree
    ox, oy = float(xy[seed_node, 0]), float(xy[seed_node, 1])
    away0 = float(rng.uniform(0.0, 360.0))
    log_gamma = math.log(p.gamma)
    visits: dict[int, int] = {seed_node: 1}
    tried: dict[int, set[int]] = {}
    stack: list[tuple[int, int | None, int]] = []  # (junction, arrived-from, path length)
    path = [seed_node]
    cur, prev = seed_node, None
    choices = backtracks = 0

    def radial(n: int) -> float:
        return math.hypot(xy[n, 0] - ox, xy[n, 1] - oy)

    def done(n: int) -> bool:
        return radial(n) >= radius and int(deg[n]) >= p.min_degree

    if done(cur):
        return CrawlResult(cur, tuple(path), radial(cur), away0, 0, 0)
    while True:
        done_set = tried.setdefault(cur, set())
        cands = [
            s for s in graph.streets_from(cur) if s.nodes[1] != prev and s.nodes[1] not in done_set
        ]
        if not cands:
            if not stack:
                far = float(np.hypot(xy[:, 0] - ox, xy[:, 1] - oy).max())
                raise StreetGraphError(
                    f"crawler from {graph.ids[seed_node]!r} exhausted the graph without reaching "
                    f"a degree->={p.min_degree} node {radius:.0f} m away (farthest node {far:.0f} m)"
                )
            cur, prev, keep = stack.pop()
            del path[keep:]
            backtracks += 1
            continue
        r = radial(cur)
        if len(cands) == 1:
            street = cands[0]
        else:
            choices += 1
            away = math.degrees(math.atan2(xy[cur, 0] - ox, xy[cur, 1] - oy)) if r >= 1.0 else away0
            t = p.t_start * (p.t_end / p.t_start) ** min(r / radius, 1.0)
            logw = np.array(
                [
                    math.cos(math.radians(s.heading - away)) / t + visits.get(s.end, 0) * log_gamma
                    for s in cands
                ]
            )
            w = np.exp(logw - logw.max())
            street = cands[int(rng.choice(len(cands), p=w / w.sum()))]
        done_set.add(street.nodes[1])
        stack.append((cur, prev, len(path)))
        for k in range(1, len(street.nodes)):
            n = street.nodes[k]
            path.append(n)
            if done(n):
                a = street.nodes[k - 1]
                hd = math.degrees(math.atan2(xy[n, 0] - xy[a, 0], xy[n, 1] - xy[a, 1])) % 360.0
                return CrawlResult(n, tuple(path), radial(n), hd, choices, backtracks)
        visits[street.end] = visits.get(street.end, 0) + 1
        prev, cur = street.nodes[-2], street.end


# ====================================================================== destinations
@dataclass(frozen=True)
class Destination:
    """A named destination: ``nodes`` are the graph node indices within reach of its
    ``polygon`` (shapely geometry, metres)."""

    name: str
    kind: str
    category: str
    osm_id: str
    position: tuple[float, float]
    nodes: tuple[int, ...]


def city_destinations(
    graph: StreetGraph, city: Any, reach: float = 25.0, point_radius: float = 3.0
) -> list[Destination]:
    """Named destinations of ``city`` mapped to node sets of ``graph``.

    POIs use their building footprint (or a ``point_radius`` m disc at their anchor when
    they have no building); named green areas use their polygon. A destination's nodes are
    the graph nodes within ``reach`` metres of that polygon; places with no node in reach
    and names shared by several places (compared case-insensitively) are left out.
    Sorted by name.
    """
    from shapely.geometry import Point

    cands: list[tuple[str, str, str, str, Any, tuple[float, float]]] = []
    for poi in city.pois:
        if poi.building_id is not None:
            poly = city.buildings[poi.building_id].polygon
        else:
            poly = Point(poi.anchor).buffer(point_radius)
        cands.append((poi.name, "poi", poi.kind, poi.osm_id, poly, tuple(poi.anchor)))
    for area in city.areas:
        if area.kind == "green" and area.name:
            c = area.polygon.representative_point()
            cands.append((area.name, "area", "green", area.osm_id, area.polygon, (c.x, c.y)))
    counts: dict[str, int] = {}
    for c in cands:
        k = c[0].casefold().strip()
        counts[k] = counts.get(k, 0) + 1
    out = []
    for name, kind, cat, osm_id, poly, pos in cands:
        if not name.strip() or counts[name.casefold().strip()] != 1:
            continue
        nodes = graph.nodes_within(poly, reach)
        if nodes:
            out.append(
                Destination(name, kind, cat, osm_id, (float(pos[0]), float(pos[1])), tuple(nodes))
            )
    out.sort(key=lambda d: d.name)
    return out


def difficulty_of(decision_points: int) -> str:
    """``easy`` / ``medium`` / ``hard`` by :data:`DIFFICULTY_DECISIONS`."""
    if decision_points <= DIFFICULTY_DECISIONS["easy"]:
        return "easy"
    if decision_points <= DIFFICULTY_DECISIONS["medium"]:
        return "medium"
    return "hard"


def route_decision_points(graph: StreetGraph, route: Sequence[int]) -> int:
    """Decision points (nodes with degree != 2) on ``route`` before its last node."""
    deg = graph.degree
    return int(sum(int(deg[n]) != 2 for n in route[:-1]))


@dataclass(frozen=True)
class SuiteConfig:
    """How a default origin-destination suite is generated (all lengths in metres).

    ``radius`` is the range the crawler's target radial distance is drawn from (capped at
    95% of the farthest node from the seed); tasks whose shortest route is shorter than
    ``min_route_m`` or has fewer than ``min_decisions`` decision points are redrawn.
    """

    name: str
    city: str
    n: int = 100
    seed: int = 0
    radius: tuple[float, float] = (600.0, 1200.0)
    min_route_m: float = 0.0
    min_decisions: int = 0
    spacing: float = 10.0
    kinds: tuple[str, ...] = ("road", "pedestrian")
    reach: float = 25.0
    crawler: CrawlerParams = CrawlerParams()

    def graph_spec(self) -> dict[str, Any]:
        return {
            "source": "city",
            "city": self.city,
            "spacing": self.spacing,
            "kinds": list(self.kinds),
        }


#: The committed default suites (``urban_gym/data/suites/streetgraph_<name>.jsonl``).
DEFAULT_SUITES: dict[str, SuiteConfig] = {
    "helsinki": SuiteConfig("helsinki", "helsinki", n=100, seed=0, radius=(900.0, 1600.0)),
    "procedural": SuiteConfig(
        "procedural",
        "procedural:seed=11,blocks=40x40,block_size=40",
        n=100,
        seed=0,
        radius=(1700.0, 2400.0),
        min_route_m=2000.0,
        min_decisions=50,
    ),
}


def suite_path(name: str) -> Path:
    """Path of the committed default suite ``name`` (``helsinki`` or ``procedural``)."""
    if name not in DEFAULT_SUITES:
        raise TaskError(
            f"no default StreetGraph suite {name!r}; known: {', '.join(DEFAULT_SUITES)}"
        )
    return SUITES_DIR / f"streetgraph_{name}.jsonl"


def load_default_suite(name: str) -> list[TaskSpec]:
    """The committed default suite ``name``."""
    return load_suite(suite_path(name))


#: Origin-destination generation gives up after this many failed attempts in a row.
STALL_ATTEMPTS = 2000


def generate_od_tasks(
    config: SuiteConfig,
    graph: StreetGraph | None = None,
    city: Any = None,
    progress: Any = None,
) -> list[TaskSpec]:
    """The tasks of :func:`generate_od_with_report`."""
    return generate_od_with_report(config, graph, city, progress)[0]


def generate_od_with_report(
    config: SuiteConfig,
    graph: StreetGraph | None = None,
    city: Any = None,
    progress: Any = None,
) -> tuple[list[TaskSpec], GenerationReport]:
    """Generate up to ``config.n`` origin-destination tasks (see the module docstring) and
    a report saying how many were made and, when fewer, what the city lacks.

    ``graph`` and ``city`` default to loading ``config``'s graph spec and city.
    ``progress`` is an optional callable ``progress(done, attempts)`` called after each task.
    Deterministic for a config. Generation stops after ``200 * n`` attempts or
    :data:`STALL_ATTEMPTS` failed ones in a row; a city where no task can be made (no
    uniquely named place near the graph, no intersection far enough from one) raises
    :class:`~urban_gym.tasks.report.SuiteGenerationError` naming what it lacks.
    """
    spec = config.graph_spec()
    if graph is None:
        graph = load_streetgraph(spec)
    if city is None:
        from urban_gym.world.loader import load_city

        city = load_city(config.city)
    report = GenerationReport("streetgraph", str(getattr(city, "name", config.city)))
    row = report.add(TypeReport("origin_destination", config.n))
    dests = city_destinations(graph, city, reach=config.reach)
    if not dests:
        row.reason = (
            f"no uniquely named place (POI or named park) within {config.reach:.0f} m of the "
            f"street graph (the city has {len(city.pois)} named POIs)"
        )
        report.check_any()
    if not bool(np.any(graph.degree >= config.crawler.min_degree)):
        row.reason = (
            f"the street graph has no intersection of {config.crawler.min_degree} or more "
            "streets (the crawler starts from one)"
        )
        report.check_any()
    rng = np.random.default_rng(config.seed)
    order = [int(i) for i in rng.permutation(len(dests))]
    tasks: list[TaskSpec] = []
    attempts = last = 0
    dist_cache: dict[int, np.ndarray] = {}
    max_attempts = 200 * config.n
    misses = Misses()
    k = 0
    while len(tasks) < config.n:
        if attempts >= max_attempts or attempts - last >= STALL_ATTEMPTS:
            break
        attempts += 1
        di = order[k % len(order)]
        k += 1
        dest = dests[di]
        seed_node = int(dest.nodes[int(rng.integers(len(dest.nodes)))])
        far = float(np.hypot(*(graph.xy - graph.xy[seed_node]).T).max())
        radius = min(float(rng.uniform(*config.radius)), 0.95 * far)
        try:
            res = crawl(graph, seed_node, radius, rng, config.crawler)
        except StreetGraphError:
            misses(
                f"no intersection of {config.crawler.min_degree} or more streets "
                f"{config.radius[0]:.0f} m or more (or most of the way across the graph) from "
                "a named place"
            )
            continue
        if res.start in dest.nodes:
            misses("no start outside the named place's reach", 1)
            continue
        if di not in dist_cache:
            dist_cache[di] = graph.distances_to(dest.nodes)
        dist = dist_cache[di]
        route = graph.shortest_path(res.start, dest.nodes, dist)
        length = float(dist[res.start])
        dps = route_decision_points(graph, route)
        if length < config.min_route_m or dps < config.min_decisions:
            misses(
                f"no route of {config.min_route_m:.0f} m or more with {config.min_decisions} or "
                "more decision points to a named place",
                2,
            )
            continue
        tid = f"streetgraph-{config.name}-{len(tasks):03d}"
        # the start heading is one of the start's streets, drawn from its own generator: the
        # crawler's arrival heading points away from the destination and would give it away
        hrng = np.random.default_rng([config.seed, len(tasks)])
        streets = graph.streets_from(res.start)
        heading = round(float(streets[int(hrng.integers(len(streets)))].heading), 2)
        tasks.append(
            TaskSpec(
                id=tid,
                family="streetgraph",
                type="origin_destination",
                difficulty=difficulty_of(dps),
                city=config.city,
                instruction=f"Go to {dest.name}.",
                start={"node": graph.ids[res.start], "heading": heading, "graph": spec},
                goal={
                    "name": dest.name,
                    "kind": dest.kind,
                    "category": dest.category,
                    "osm_id": dest.osm_id,
                    "nodes": [graph.ids[n] for n in dest.nodes],
                    "position": [round(dest.position[0], 2), round(dest.position[1], 2)],
                },
                meta={
                    "route_length_m": round(length, 1),
                    "decision_points": dps,
                    "route_nodes": len(route),
                    "radial_distance_m": round(res.radial_distance, 1),
                    "target_radius_m": round(radius, 1),
                    "crawler": asdict(config.crawler),
                    "seed": config.seed,
                },
            )
        )
        last = attempts
        if progress is not None:
            progress(len(tasks), attempts)
    row.made, row.attempts = len(tasks), attempts
    if len(tasks) < config.n:
        row.reason = misses.reason()
    report.check_any()
    return tasks, report


def write_default_suite(name: str, progress: Any = None) -> Path:
    """Regenerate and write the committed default suite ``name``."""
    tasks = generate_od_tasks(DEFAULT_SUITES[name], progress=progress)
    return save_suite(suite_path(name), tasks)


def write_suite(
    city: str = "helsinki",
    out: str | os.PathLike | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> Path:
    """:func:`generate_suite`, returning only the path written."""
    return generate_suite(city, out, seed, per_type).path


def generate_suite(
    city: str = "helsinki",
    out: str | os.PathLike | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> GeneratedSuite:
    """``urban-gym generate-suite --family streetgraph``: write an origin-destination suite.

    ``city`` ``"helsinki"`` or ``"procedural"`` (or the procedural suite's city spec) use
    the default suites' settings (:data:`DEFAULT_SUITES`); with the defaults (``seed`` 0,
    ``per_type`` None = 100, ``out`` None) this regenerates the committed file exactly.
    Any other city spec gets a crawler radius of 30-55% of the city's diagonal and needs
    ``out``. Returns the path written, the tasks and the report (fewer tasks than asked
    when the city lacks what they need; see :func:`generate_od_with_report`).
    """
    by_city = {c.city: c for c in DEFAULT_SUITES.values()}
    cfg = DEFAULT_SUITES.get(city) or by_city.get(city)
    if cfg is None:
        if out is None:
            raise TaskError(
                f"city {city!r} has no committed StreetGraph suite; pass an output path"
            )
        from urban_gym.world.loader import load_city

        diag = math.hypot(*load_city(city).extent)
        cfg = dataclasses.replace(
            DEFAULT_SUITES["helsinki"], name="custom", city=city, radius=(0.3 * diag, 0.55 * diag)
        )
    changes: dict[str, Any] = {"seed": int(seed)}
    if per_type is not None:
        if per_type < 1:
            raise TaskError(f"per_type={per_type!r} must be a positive number of tasks")
        changes["n"] = int(per_type)
    cfg = dataclasses.replace(cfg, **changes)
    path = Path(out) if out is not None else suite_path(cfg.name)
    tasks, report = generate_od_with_report(cfg)
    return GeneratedSuite(save_suite(path, tasks), tasks, report)


def suite_statistics(tasks: Sequence[TaskSpec]) -> dict[str, Any]:
    """Route length and decision-point distributions of an origin-destination suite:
    min / quartiles / max, the mean, and counts per difficulty."""
    od = [t for t in tasks if t.type == "origin_destination"]
    if not od:
        return {"tasks": 0}
    lengths = np.array([t.meta["route_length_m"] for t in od], dtype=float)
    dps = np.array([t.meta["decision_points"] for t in od], dtype=float)

    def q(a: np.ndarray) -> dict[str, float]:
        p = np.percentile(a, [0, 25, 50, 75, 100])
        return {
            "min": round(float(p[0]), 1),
            "q25": round(float(p[1]), 1),
            "median": round(float(p[2]), 1),
            "q75": round(float(p[3]), 1),
            "max": round(float(p[4]), 1),
            "mean": round(float(a.mean()), 1),
        }

    diff: dict[str, int] = {}
    for t in od:
        diff[t.difficulty] = diff.get(t.difficulty, 0) + 1
    return {
        "tasks": len(od),
        "destinations": len({t.goal["name"] for t in od}),
        "route_length_m": q(lengths),
        "decision_points": q(dps),
        "difficulty": dict(sorted(diff.items())),
    }


# ====================================================================== instruction tasks
def touchdown_graph_spec(
    path: str | os.PathLike, images: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Graph spec for instruction tasks on a Touchdown graph: reverse links are added, but
    no node is pruned (routes are defined on the full graph)."""
    return {
        "source": "touchdown",
        "path": str(Path(path).resolve()),
        "images": str(Path(images).resolve()) if images is not None else None,
        "prune": False,
        "largest_component": False,
    }


def instruction_tasks(
    graph_dir: str | os.PathLike,
    routes_file: str | os.PathLike,
    images: str | os.PathLike | None = None,
    skip_bad_lines: bool = False,
    id_prefix: str = "route",
) -> list[TaskSpec]:
    """Instruction tasks from a Touchdown/map2seq route file on the Touchdown graph in
    ``graph_dir``. A route that is not a path in the graph raises
    :class:`StreetGraphError` naming the route and the broken hop (or is skipped with
    ``skip_bad_lines``; the skipped count is in each task's ``meta["skipped_routes"]``)."""
    spec = touchdown_graph_spec(graph_dir, images)
    graph = load_streetgraph(spec)
    routes, skipped = read_routes(routes_file, skip_bad_lines=skip_bad_lines)
    good = []
    for r in routes:
        try:
            idx = check_route(graph, r)
        except StreetGraphError:
            if not skip_bad_lines:
                raise
            skipped += 1
            continue
        good.append((r, idx))
    tasks = []
    for r, idx in good:
        tasks.append(
            TaskSpec(
                id=f"{id_prefix}-{r.route_id}",
                family="streetgraph",
                type="instruction",
                difficulty="n/a",
                city=f"touchdown:{spec['path']}",
                instruction=r.text,
                start={"node": r.panoids[0], "heading": r.start_heading, "graph": spec},
                goal={"node": r.panoids[-1], "route": list(r.panoids)},
                meta={
                    "route_id": r.route_id,
                    "route_length_m": round(graph.path_length(idx), 1),
                    "route_hops": len(idx) - 1,
                    "line": r.line,
                    "skipped_routes": skipped,
                },
            )
        )
    return tasks
