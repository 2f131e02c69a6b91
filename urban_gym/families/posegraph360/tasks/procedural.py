"""PoseGraph360 tasks on procedural cities, drawn on the fly
(``PoseGraph360Env(suite="procedural:blocks=2x2-6x6,split=train")``; the spec is read by
:class:`urban_gym.tasks.procedural.ProceduralTasks`).

A draw picks a city of the split and a size (the shared part), then a task type of the
spec's ``types`` (default ``map_navigation``; any of 360CityArena's seven, joined with
``+``) and a difficulty, and asks the city's :class:`PoseGraphTaskGenerator` (made once
per city, seeded by the city seed) for one task with the draw's generator
(:meth:`PoseGraphTaskGenerator.make_one`); a difficulty the draw cannot make (a 2x2 city
has no route with 8 decision points) gives way to the others. Procedural cities of one
size share their street grid -- a seed changes the buildings, places and parks, not the
streets -- so the draw's generator is mixed with the city seed: the same draw in two
cities of one size gives different starts and goals. So the tasks are unlimited
-- a new start and goal at every reset -- and each one passed the generator's oracle
check: the oracle's plan fits the step limit and never makes
:data:`~urban_gym.families.posegraph360.tasks.types.AWAY_LIMIT` moves in a row away from the goal.
No val or test city is ever trained on.

Task ids name the split, the city seed and size, the type, the difficulty and the
frames that make the task (goal then start for map navigation):
``posegraph360-proc-<split>-s<seed>-b<n>-<type>-<difficulty>-<key>``; the same task
drawn twice has the same id.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from urban_gym.families.posegraph360.tasks.generate import PoseGraphTaskGenerator
from urban_gym.families.posegraph360.tasks.types import DIFFICULTY_LEVELS, PAPER_TASK_TYPES
from urban_gym.tasks import procedural as P
from urban_gym.tasks.spec import TaskError, TaskSpec

#: The task type of a spec without ``types``.
DEFAULT_TYPES: tuple[str, ...] = ("map_navigation",)


@dataclasses.dataclass
class PoseGraph360ProceduralTasks(P.ProceduralTasks):
    """PoseGraph360 tasks drawn on the fly (see the module docstring)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.types = self.types or DEFAULT_TYPES
        bad = [t for t in self.types if t not in PAPER_TASK_TYPES]
        if bad:
            raise TaskError(
                f"procedural suite {self.spec!r}: types {bad} are not PoseGraph360 task "
                f"types made on the fly; valid: {', '.join(PAPER_TASK_TYPES)}"
            )

    def _generator(self, city: str, seed: int) -> PoseGraphTaskGenerator:
        got = self._worlds.get(city)
        if got is None:
            got = self._worlds[city] = PoseGraphTaskGenerator(city, seed=seed)
        return got

    def draw_in(self, city: str, seed: int, n: int, rng: np.random.Generator) -> TaskSpec | None:
        """A task of a drawn type in ``city`` (None when no difficulty could be made)."""
        gen = self._generator(city, seed)
        # the city seed joins the draw: cities of one size share their street grid (a seed
        # changes buildings and places), so the same draw must not give the same task
        rng = np.random.default_rng([int(rng.integers(2**32)), seed, n])
        task_type = self.types[int(rng.integers(len(self.types)))]
        for k in rng.permutation(len(DIFFICULTY_LEVELS)):
            t = gen.make_one(task_type, DIFFICULTY_LEVELS[int(k)], rng)
            if t is not None:
                key = "-".join(str(v) for v in t.meta["key"])
                meta = {k2: v for k2, v in t.meta.items() if k2 != "key"}
                name = f"posegraph360-proc-{self.split}-s{seed}-b{n}-{t.type}-{t.difficulty}"
                return t.replace(id=f"{name}-{key}", meta={**meta, "split": self.split})
        return None


def procedural_source(spec: str) -> PoseGraph360ProceduralTasks:
    """The task source of a ``suite="procedural:..."`` spec."""
    return PoseGraph360ProceduralTasks.parse(spec)


__all__ = ["DEFAULT_TYPES", "PoseGraph360ProceduralTasks", "procedural_source"]
