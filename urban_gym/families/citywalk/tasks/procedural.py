"""CityWalk tasks on procedural cities, drawn on the fly
(``CityWalkEnv(suite="procedural:blocks=2x2-8x8,split=train,types=SGN")``; the spec is
read by :class:`urban_gym.tasks.procedural.ProceduralTasks`).

Each drawn city gets a pool of :data:`POOL` tasks of the spec's ``types`` (default
``SGN``, the short-range goal navigation of 30-110 m) from the family's generators
(:func:`~urban_gym.families.citywalk.tasks.generate_tasks`, seeded by the city seed); a draw picks
a city and size, then a task of its pool. With the default 32 cities per split and four
sizes that is thousands of training tasks, and no val or test city is ever trained on.
Task ids name the split, the city seed and size: ``citywalk-proc-<split>-s<seed>-b<n>-<id>``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from urban_gym.tasks import procedural as P
from urban_gym.tasks.spec import TaskSpec

#: Tasks generated per type in one city.
POOL = 20
#: The pools made in this process: (city, types, split) -> tasks (shared by the sources of
#: every env of the process, so in-process vector envs generate each pool once).
_POOLS: dict[tuple[str, tuple[str, ...], str], list[TaskSpec]] = {}


@dataclasses.dataclass
class CityWalkProceduralTasks(P.ProceduralTasks):
    """CityWalk tasks drawn on the fly (see the module docstring)."""

    def _pool(self, city: str, seed: int, n: int) -> list[TaskSpec]:
        key = (city, self.types, self.split)
        got = _POOLS.get(key)
        if got is None:
            from urban_gym.families.citywalk.tasks.generate import generate_tasks
            from urban_gym.tasks.report import SuiteGenerationError
            from urban_gym.world.loader import load_city

            types = self.types or ("SGN",)
            try:
                made = generate_tasks(load_city(city), city, POOL, 0, seed, types)
            except SuiteGenerationError:
                made = []
            prefix = f"citywalk-proc-{self.split}-s{seed}-b{n}-"
            got = _POOLS[key] = [dataclasses.replace(t, id=prefix + t.id) for t in made]
        return got

    def draw_in(self, city: str, seed: int, n: int, rng: np.random.Generator) -> TaskSpec | None:
        """A task of ``city``'s pool (None when the city supplies none)."""
        pool = self._pool(city, seed, n)
        return pool[int(rng.integers(len(pool)))] if pool else None


def procedural_source(spec: str) -> CityWalkProceduralTasks:
    """The task source of a ``suite="procedural:..."`` spec."""
    return CityWalkProceduralTasks.parse(spec)


__all__ = ["POOL", "CityWalkProceduralTasks", "procedural_source"]
