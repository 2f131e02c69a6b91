"""Origin-destination suites: their configurations, generation with a per-type report, the
committed default suites and their statistics (destinations:
:mod:`~urban_gym.families.streetgraph.tasks.destinations`).
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

from urban_gym.families.streetgraph.tasks.crawler import (
    CrawlerParams,
    city_destinations,
    crawl,
    difficulty_of,
    route_decision_points,
)
from urban_gym.families.streetgraph.tasks.destinations import (
    destination_census,
    format_census,
    pick_destinations,
    task_destinations,
)
from urban_gym.families.streetgraph.world import (
    StreetGraph,
    StreetGraphError,
    load_streetgraph,
)
from urban_gym.tasks.report import GeneratedSuite, GenerationReport, Misses, TypeReport
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.suite import counts, load_suite, meta_values, quantiles, save_suite
from urban_gym.tasks.wording import end_sentence

#: Folder of the committed default suites.
SUITES_DIR = Path(__file__).resolve().parent.parent / "suites"


@dataclass(frozen=True)
class SuiteConfig:
    """How a default origin-destination suite is generated (all lengths in metres).

    ``radius`` is the range the crawler's target radial distance is drawn from (capped at
    95% of the farthest node from the seed); tasks whose shortest route is shorter than
    ``min_route_m`` or has fewer than ``min_decisions`` decision points are redrawn.
    ``destinations`` says which places tasks go to: ``notable`` (the places OpenStreetMap
    marks as notable, when the city has at least ``min_notable`` of them in reach of the
    graph, else every named place) or ``any`` (see
    :mod:`~urban_gym.families.streetgraph.tasks.destinations`).
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
    destinations: str = "notable"
    min_notable: int = 10
    #: A graph spec of its own (e.g. a Touchdown graph) instead of the city's streets.
    graph: dict[str, Any] | None = None

    def graph_spec(self) -> dict[str, Any]:
        """The graph spec of this suite's city (see
        :func:`~urban_gym.families.streetgraph.world.load_streetgraph`), or :attr:`graph`.
        """
        if self.graph is not None:
            return dict(self.graph)
        return {
            "source": "city",
            "city": self.city,
            "spacing": self.spacing,
            "kinds": list(self.kinds),
        }


#: How the committed default suites are generated (``urban_gym/families/streetgraph/suites/<name>.jsonl``).
SUITE_CONFIGS: dict[str, SuiteConfig] = {
    "helsinki": SuiteConfig("helsinki", "helsinki", n=100, seed=0, radius=(900.0, 1600.0)),
    # London's and Munich's extracts (about 1.7 km across their street graphs) hold routes
    # over 2 km but none with 50 decision points (the most is 44): every route is over 2 km
    # with 30 or more decisions, the closest to CityNav's these cities allow.
    "london": SuiteConfig(
        "london", "london", radius=(1600.0, 2600.0), min_route_m=2000.0, min_decisions=30
    ),
    "munich": SuiteConfig(
        "munich", "munich", radius=(1600.0, 2600.0), min_route_m=2000.0, min_decisions=30
    ),
    # Sao Paulo's grid is sparse (about 11 decision points per km of route): CityNav's 50
    # decisions need routes of 3.5 km and more.
    "sao_paulo": SuiteConfig(
        "sao_paulo", "sao_paulo", radius=(2800.0, 4000.0), min_route_m=2000.0, min_decisions=50
    ),
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
    """Path of the committed default suite ``name`` (a key of :data:`SUITE_CONFIGS`)."""
    if name not in SUITE_CONFIGS:
        raise TaskError(f"no default StreetGraph suite {name!r}; known: {', '.join(SUITE_CONFIGS)}")
    return SUITES_DIR / f"{name}.jsonl"


#: The committed suites: name -> path.
DEFAULT_SUITES: dict[str, Path] = {name: suite_path(name) for name in SUITE_CONFIGS}


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
    destinations: Sequence[Any] | None = None,
) -> tuple[list[TaskSpec], GenerationReport]:
    """Generate up to ``config.n`` origin-destination tasks (see the module docstring) and
    a report saying how many were made and, when fewer, what the city lacks.

    ``graph`` and ``city`` default to loading ``config``'s graph spec and city;
    ``destinations`` (:class:`~urban_gym.families.streetgraph.tasks.crawler.Destination`) replace the
    city's named places (then ``city`` is not needed).
    ``progress`` is an optional callable ``progress(done, attempts)`` called after each task.
    Deterministic for a config. Generation stops after ``200 * n`` attempts or
    :data:`STALL_ATTEMPTS` failed ones in a row; a city where no task can be made (no
    uniquely named place near the graph, no intersection far enough from one) raises
    :class:`~urban_gym.tasks.report.SuiteGenerationError` naming what it lacks.
    """
    spec = config.graph_spec()
    if graph is None:
        graph = load_streetgraph(spec)
    if city is None and destinations is None:
        from urban_gym.world.loader import load_city

        city = load_city(config.city)
    report = GenerationReport("streetgraph", str(getattr(city, "name", config.city)))
    row = report.add(TypeReport("origin_destination", config.n))
    if destinations is not None:
        dests = list(destinations)
    else:
        dests = city_destinations(graph, city, reach=config.reach)
    dests = pick_destinations(dests, config.destinations, config.min_notable)[0]
    if not dests and destinations is not None:
        row.reason = "no destination was given (no named node, no POI in reach of the graph)"
        report.check_any()
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
        tasks.append(_od_task(config, graph, dest, res, route, length, dps, radius, len(tasks)))
        last = attempts
        if progress is not None:
            progress(len(tasks), attempts)
    row.made, row.attempts = len(tasks), attempts
    if len(tasks) < config.n:
        row.reason = misses.reason()
    report.check_any()
    return tasks, report


def _od_task(
    config: SuiteConfig,
    graph: StreetGraph,
    dest: Any,
    res: Any,
    route: list[int],
    length: float,
    dps: int,
    radius: float,
    index: int,
) -> TaskSpec:
    """Task ``index`` of a suite: from the crawler's start ``res`` to ``dest`` along the
    shortest ``route`` (``length`` m, ``dps`` decision points; the crawler aimed at
    ``radius`` m).
    """
    # the start heading is one of the start's streets, drawn from its own generator: the
    # crawler's arrival heading points away from the destination and would give it away
    hrng = np.random.default_rng([config.seed, index])
    streets = graph.streets_from(res.start)
    heading = round(float(streets[int(hrng.integers(len(streets)))].heading), 2)
    return TaskSpec(
        id=f"streetgraph-{config.name}-{index:03d}",
        family="streetgraph",
        type="origin_destination",
        difficulty=difficulty_of(dps),
        city=config.city,
        instruction=end_sentence(f"Go to {dest.called or dest.name}"),
        start={"node": graph.ids[res.start], "heading": heading, "graph": config.graph_spec()},
        goal={
            "name": dest.name,
            "kind": dest.kind,
            "category": dest.category,
            "osm_id": dest.osm_id,
            "nodes": [graph.ids[n] for n in dest.nodes],
            "position": [round(dest.position[0], 2), round(dest.position[1], 2)],
            "notable": dest.notable,
            "address": dest.address,
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


def write_default_suite(name: str, progress: Any = None) -> Path:
    """Regenerate and write the committed default suite ``name``."""
    tasks = generate_od_tasks(SUITE_CONFIGS[name], progress=progress)
    return save_suite(suite_path(name), tasks)


def write_suite(
    city: str = "helsinki",
    out: str | os.PathLike | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> Path:
    """:func:`generate`, returning only the path written."""
    return generate(city, out, seed, per_type).path


def generate(
    city: str = "helsinki",
    out: str | os.PathLike | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> GeneratedSuite:
    """``urban-gym generate-suite --family streetgraph``: write an origin-destination suite.

    ``city`` a key of :data:`SUITE_CONFIGS` (``"helsinki"``, ``"london"``, ...,
    ``"procedural"``, or the procedural suite's city spec) uses the default suites' settings (:data:`SUITE_CONFIGS`); with the defaults (``seed`` 0,
    ``per_type`` None = 100, ``out`` None) this regenerates the committed file exactly.
    Any other city spec gets a crawler radius of 30-55% of the city's diagonal and needs
    ``out``. Returns the path written, the tasks and the report (fewer tasks than asked
    when the city lacks what they need; see :func:`generate_od_with_report`).
    """
    by_city = {c.city: c for c in SUITE_CONFIGS.values()}
    cfg = SUITE_CONFIGS.get(city) or by_city.get(city)
    if cfg is None:
        if out is None:
            raise TaskError(
                f"city {city!r} has no committed StreetGraph suite; pass an output path"
            )
        from urban_gym.world.loader import load_city

        diag = math.hypot(*load_city(city).extent)
        cfg = dataclasses.replace(
            SUITE_CONFIGS["helsinki"], name="custom", city=city, radius=(0.3 * diag, 0.55 * diag)
        )
    changes: dict[str, Any] = {"seed": int(seed)}
    if per_type is not None:
        if per_type < 1:
            raise TaskError(f"per_type={per_type!r} must be a positive number of tasks")
        changes["n"] = int(per_type)
    cfg = dataclasses.replace(cfg, **changes)
    path = Path(out) if out is not None else suite_path(cfg.name)
    tasks, report = generate_od_with_report(cfg)
    notes = format_census(*suite_census(cfg, tasks))
    return GeneratedSuite(save_suite(path, tasks), tasks, report, notes)


def suite_census(config: SuiteConfig, tasks: Sequence[TaskSpec] = ()) -> tuple[dict, str]:
    """The destination census of ``config``'s city and graph
    (:func:`~urban_gym.families.streetgraph.tasks.destinations.destination_census`), with
    ``tasks``' destinations, and the line saying which places tasks go to.
    """
    from urban_gym.world.loader import load_city

    graph = load_streetgraph(config.graph_spec())
    dests = city_destinations(graph, load_city(config.city), reach=config.reach)
    line = pick_destinations(dests, config.destinations, config.min_notable)[1]
    return destination_census(dests, tasks), line


def suite_statistics(tasks: Sequence[TaskSpec]) -> dict[str, Any]:
    """Route length and decision-point distributions of an origin-destination suite:
    min / quartiles / max, the mean, counts per difficulty, and its destinations (``goals``:
    notable ones, kinds, address sources).
    """
    od = [t for t in tasks if t.type == "origin_destination"]
    if not od:
        return {"tasks": 0}
    return {
        "tasks": len(od),
        "destinations": len({t.goal["name"] for t in od}),
        "route_length_m": quantiles(meta_values(od, "route_length_m")),
        "decision_points": quantiles(meta_values(od, "decision_points")),
        "difficulty": counts(od, "difficulty"),
        "goals": task_destinations(od),
    }
