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
  parameters: with the world from ``task.city`` they are what
  :func:`~urban_gym.families.streetgraph.world.load_streetgraph` takes, see
  :func:`~urban_gym.families.streetgraph.tasks.evaluate.graph_spec`; the heading is
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

from urban_gym.families.streetgraph.tasks.crawler import (
    DIFFICULTY_DECISIONS,
    CrawlerParams,
    CrawlResult,
    Destination,
    city_destinations,
    crawl,
    difficulty_of,
    route_decision_points,
)
from urban_gym.families.streetgraph.tasks.evaluate import (
    EpisodeOutcome,
    check_task,
    evaluate,
    graph_of,
    graph_spec,
    reached,
)
from urban_gym.families.streetgraph.tasks.generate import (
    DEFAULT_SUITES,
    STALL_ATTEMPTS,
    SUITE_CONFIGS,
    SUITES_DIR,
    SuiteConfig,
    generate,
    generate_od_tasks,
    generate_od_with_report,
    load_default_suite,
    suite_path,
    suite_statistics,
    write_default_suite,
    write_suite,
)
from urban_gym.families.streetgraph.tasks.instructions import (
    instruction_tasks,
    touchdown_graph_spec,
)
from urban_gym.families.streetgraph.tasks.procedural import ProceduralTasks, procedural_source
from urban_gym.families.streetgraph.tasks.touchdown_od import touchdown_od_suite
from urban_gym.families.streetgraph.tasks.types import FAMILY, TASK_TYPES

__all__ = [
    "DEFAULT_SUITES",
    "DIFFICULTY_DECISIONS",
    "FAMILY",
    "STALL_ATTEMPTS",
    "SUITES_DIR",
    "SUITE_CONFIGS",
    "TASK_TYPES",
    "CrawlResult",
    "CrawlerParams",
    "Destination",
    "ProceduralTasks",
    "EpisodeOutcome",
    "SuiteConfig",
    "check_task",
    "city_destinations",
    "crawl",
    "difficulty_of",
    "evaluate",
    "generate",
    "generate_od_tasks",
    "generate_od_with_report",
    "graph_of",
    "graph_spec",
    "instruction_tasks",
    "touchdown_od_suite",
    "load_default_suite",
    "procedural_source",
    "reached",
    "route_decision_points",
    "suite_path",
    "suite_statistics",
    "touchdown_graph_spec",
    "write_default_suite",
    "write_suite",
]
