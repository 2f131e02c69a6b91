"""Unlimited origin-destination tasks on procedural cities, made on the fly
(``StreetGraphEnv(suite="procedural:blocks=2x2-8x8,split=train,cities=32")``; the spec
is read by :class:`urban_gym.tasks.procedural.ProceduralTasks`).

In a drawn city a task is a named destination and a start found by the CityNav crawler
(:func:`~urban_gym.families.streetgraph.tasks.crawler.crawl`) at a straight-line distance drawn
from ``radius`` (fractions of the city's diagonal, default 0.2-0.6).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from urban_gym.families.streetgraph.tasks.crawler import (
    city_destinations,
    crawl,
    route_decision_points,
)
from urban_gym.families.streetgraph.tasks.generate import SuiteConfig, _od_task
from urban_gym.families.streetgraph.world import StreetGraphError, load_streetgraph
from urban_gym.tasks import procedural as P
from urban_gym.tasks.spec import TaskSpec


@dataclasses.dataclass
class StreetGraphProceduralTasks(P.ProceduralTasks):
    """Origin-destination tasks drawn on the fly (see the module docstring)."""

    def _world(self, city: str) -> tuple[Any, list[Any], SuiteConfig]:
        got = self._worlds.get(city)
        if got is None:
            from urban_gym.world.loader import load_city

            cfg = SuiteConfig(f"proc-{self.split}", city, n=1)
            graph = load_streetgraph(cfg.graph_spec())
            c = load_city(city)
            dests = city_destinations(graph, c, reach=cfg.reach)
            diag = math.hypot(*c.extent)
            cfg = dataclasses.replace(cfg, radius=(self.radius[0] * diag, self.radius[1] * diag))
            got = self._worlds[city] = (graph, dests, cfg)
        return got

    def draw_in(self, city: str, seed: int, n: int, rng: np.random.Generator) -> TaskSpec | None:
        """A destination of ``city`` and a crawled start (None when the crawl fails)."""
        graph, dests, cfg = self._world(city)
        if not dests:
            return None
        dest = dests[int(rng.integers(len(dests)))]
        seed_node = int(dest.nodes[int(rng.integers(len(dest.nodes)))])
        radius = float(rng.uniform(*cfg.radius))
        try:
            res = crawl(graph, seed_node, radius, rng, cfg.crawler)
        except StreetGraphError:
            return None
        if res.start in dest.nodes:
            return None
        dist = graph.distances_to(dest.nodes)
        route = graph.shortest_path(res.start, dest.nodes, dist)
        dps = route_decision_points(graph, route)
        index = int(rng.integers(1_000_000))
        cfg = dataclasses.replace(cfg, name=f"proc-{self.split}-s{seed}-b{n}", seed=seed)
        return _od_task(cfg, graph, dest, res, route, float(dist[res.start]), dps, radius, index)


def procedural_source(spec: str) -> StreetGraphProceduralTasks:
    """The task source of a ``suite="procedural:..."`` spec."""
    return StreetGraphProceduralTasks.parse(spec)


#: The family's source class under the generic name.
ProceduralTasks = StreetGraphProceduralTasks

__all__ = ["ProceduralTasks", "StreetGraphProceduralTasks", "procedural_source"]
