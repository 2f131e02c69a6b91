"""Unlimited origin-destination tasks on procedural cities, made on the fly
(``suite="procedural:..."``).

``StreetGraphEnv(suite="procedural:blocks=2x2-8x8,split=train,cities=32")`` draws a new
task at every reset: a procedural city of the split (:func:`urban_gym.tasks.splits.
seeds_of`: train, val and test cities never share a seed), a square size between the two
``blocks`` bounds (the curriculum raises the upper bound with
:meth:`ProceduralTasks.set_max_blocks`), a named destination of that city and a start
found by the CityNav crawler (:func:`~urban_gym.tasks.streetgraph.crawler.crawl`) at a
straight-line distance drawn from ``radius`` (fractions of the city's diagonal). A
policy never sees the same episode twice, and val/test cities are never trained on.

Keys of the spec (all optional): ``blocks`` (``4x4`` or ``2x2-8x8``; default ``4x4``),
``split`` (``train``, ``val`` or ``test``; default ``train``), ``cities`` (cities per
split, default 32), ``radius`` (``0.2-0.6`` of the diagonal), ``block_size`` (m, 90).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.splits import SPLITS, seeds_of
from urban_gym.tasks.streetgraph.crawler import (
    city_destinations,
    crawl,
    route_decision_points,
)
from urban_gym.tasks.streetgraph.generate import SuiteConfig, _od_task
from urban_gym.world.streetgraph import StreetGraphError, load_streetgraph

#: Keys a ``procedural:`` suite spec may hold.
SPEC_KEYS: tuple[str, ...] = ("blocks", "split", "cities", "radius", "block_size")
#: Tasks drawn (with a fixed seed) to stand for the source where a list is needed.
SAMPLE_TASKS = 16


def _range(text: str, what: str, cast: Any) -> tuple[Any, Any]:
    parts = text.split("-")
    try:
        vals = [cast(p) for p in parts]
    except ValueError:
        raise TaskError(f"procedural suite: {what}={text!r} is not a value or a range") from None
    if len(vals) == 1:
        return vals[0], vals[0]
    if len(vals) != 2 or vals[0] > vals[1]:
        raise TaskError(f"procedural suite: {what}={text!r} must be 'A' or 'A-B' with A <= B")
    return vals[0], vals[1]


def _square(text: str) -> int:
    w, _, h = text.partition("x")
    if not h or int(w) != int(h) or int(w) < 1:
        raise ValueError(text)
    return int(w)


@dataclasses.dataclass
class ProceduralTasks:
    """The task source of a ``procedural:`` suite spec (see the module docstring)."""

    spec: str
    blocks: tuple[int, int] = (4, 4)
    split: str = "train"
    cities: int = 32
    radius: tuple[float, float] = (0.2, 0.6)
    block_size: float = 90.0
    max_blocks: int = 0
    _worlds: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.max_blocks = self.max_blocks or self.blocks[1]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_worlds"] = {}  # rebuilt in the process that unpickles
        return state

    @classmethod
    def parse(cls, spec: str) -> ProceduralTasks:
        """The source of ``spec`` (``"procedural:key=value,..."``); :class:`TaskError`
        naming a bad key or value.
        """
        body = spec.split(":", 1)[1] if ":" in spec else ""
        kw: dict[str, Any] = {}
        for item in filter(None, body.split(",")):
            key, eq, val = item.partition("=")
            if not eq or key not in SPEC_KEYS:
                raise TaskError(
                    f"procedural suite {spec!r}: {item!r} is not key=value with a key of "
                    + ", ".join(SPEC_KEYS)
                )
            if key == "blocks":
                kw["blocks"] = _range(val, "blocks", _square)
            elif key == "radius":
                kw["radius"] = _range(val, "radius", float)
            elif key == "split":
                if val not in SPLITS:
                    raise TaskError(f"procedural suite {spec!r}: split must be one of {SPLITS}")
                kw["split"] = val
            elif key == "cities":
                kw["cities"] = int(val)
            else:
                kw["block_size"] = float(val)
        src = cls(spec, **kw)
        if src.cities < 1 or src.blocks[0] < 2 or not 0 < src.radius[0] <= src.radius[1] < 1:
            raise TaskError(
                f"procedural suite {spec!r}: cities >= 1, blocks >= 2x2 and a radius range "
                "inside (0, 1) of the diagonal are needed"
            )
        return src

    def set_max_blocks(self, n: int) -> None:
        """The curriculum: draw city sizes up to ``n x n`` (within the spec's bounds)."""
        self.max_blocks = max(self.blocks[0], min(int(n), self.blocks[1]))

    def city_spec(self, seed: int, n: int) -> str:
        """The ``load_city`` spec of city ``seed`` with ``n x n`` blocks."""
        extra = f",block_size={self.block_size:g}" if self.block_size != 90.0 else ""
        return f"procedural:seed={seed},blocks={n}x{n}{extra}"

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

    def draw(self, rng: np.random.Generator) -> TaskSpec:
        """A new task from ``rng``: city, size, destination and start all drawn."""
        seeds = seeds_of(self.split, self.cities)
        for _ in range(200):
            seed = seeds[int(rng.integers(len(seeds)))]
            n = int(rng.integers(self.blocks[0], self.max_blocks + 1))
            graph, dests, cfg = self._world(self.city_spec(seed, n))
            if not dests:
                continue
            dest = dests[int(rng.integers(len(dests)))]
            seed_node = int(dest.nodes[int(rng.integers(len(dest.nodes)))])
            radius = float(rng.uniform(*cfg.radius))
            try:
                res = crawl(graph, seed_node, radius, rng, cfg.crawler)
            except StreetGraphError:
                continue
            if res.start in dest.nodes:
                continue
            dist = graph.distances_to(dest.nodes)
            route = graph.shortest_path(res.start, dest.nodes, dist)
            dps = route_decision_points(graph, route)
            index = int(rng.integers(1_000_000))
            cfg = dataclasses.replace(cfg, name=f"proc-{self.split}-s{seed}-b{n}", seed=seed)
            return _od_task(
                cfg, graph, dest, res, route, float(dist[res.start]), dps, radius, index
            )
        raise TaskError(f"procedural suite {self.spec!r}: no task found in 200 attempts")

    def sample(self, n: int = SAMPLE_TASKS) -> list[TaskSpec]:
        """``n`` tasks drawn with a fixed seed (the env's task list and spaces)."""
        rng = np.random.default_rng(0)
        return [self.draw(rng) for _ in range(n)]


def procedural_source(spec: str) -> ProceduralTasks:
    """The task source of a ``suite="procedural:..."`` spec."""
    return ProceduralTasks.parse(spec)


__all__ = ["SPEC_KEYS", "ProceduralTasks", "procedural_source"]
