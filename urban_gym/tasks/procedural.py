"""Unlimited tasks on procedural cities, made on the fly (``suite="procedural:..."``):
the part every family shares.

``Env(suite="procedural:blocks=2x2-8x8,split=train,cities=32")`` draws a new task at
every reset: a procedural city of the split (:func:`urban_gym.tasks.splits.seeds_of`:
train, val and test cities never share a seed), a square size between the two ``blocks``
bounds (the curriculum raises the upper bound with :meth:`ProceduralTasks.set_max_blocks`)
and a task in that city made by the family (:meth:`ProceduralTasks.draw_in`). A policy
never trains on a val or test city.

Keys of the spec (all optional): ``blocks`` (``4x4`` or ``2x2-8x8``; default ``4x4``),
``split`` (``train``, ``val`` or ``test``; default ``train``), ``cities`` (cities per
split, default 32), ``radius`` (a range of fractions of the city's diagonal, family use),
``block_size`` (m, 90), ``types`` (task types, ``+``-separated, family use).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.splits import SPLITS, seeds_of

if TYPE_CHECKING:
    from typing import Self  # Python 3.11; annotations are not evaluated on 3.10

#: Keys a ``procedural:`` suite spec may hold.
SPEC_KEYS: tuple[str, ...] = ("blocks", "split", "cities", "radius", "block_size", "types")
#: Tasks drawn (with a fixed seed) to stand for the source where a list is needed.
SAMPLE_TASKS = 16
#: Draws tried before a source gives up.
ATTEMPTS = 200


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
    """A task source of a ``procedural:`` suite spec (see the module docstring); a family
    subclasses it and fills :meth:`draw_in`.
    """

    spec: str
    blocks: tuple[int, int] = (4, 4)
    split: str = "train"
    cities: int = 32
    radius: tuple[float, float] = (0.2, 0.6)
    block_size: float = 90.0
    types: tuple[str, ...] = ()
    max_blocks: int = 0
    _worlds: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.max_blocks = self.max_blocks or self.blocks[1]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_worlds"] = {}  # rebuilt in the process that unpickles
        return state

    @classmethod
    def parse(cls, spec: str) -> Self:
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
            kw[key] = _value(spec, key, val)
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

    def draw(self, rng: np.random.Generator) -> TaskSpec:
        """A new task from ``rng``: city and size drawn here, the task by the family."""
        seeds = seeds_of(self.split, self.cities)
        for _ in range(ATTEMPTS):
            seed = seeds[int(rng.integers(len(seeds)))]
            n = int(rng.integers(self.blocks[0], self.max_blocks + 1))
            task = self.draw_in(self.city_spec(seed, n), seed, n, rng)
            if task is not None:
                return task
        raise TaskError(f"procedural suite {self.spec!r}: no task found in {ATTEMPTS} attempts")

    def draw_in(self, city: str, seed: int, n: int, rng: np.random.Generator) -> TaskSpec | None:
        """A task in procedural city ``city`` (seed ``seed``, ``n x n`` blocks), or None
        when this draw found none (the family's part).
        """
        raise NotImplementedError

    def sample(self, n: int = SAMPLE_TASKS) -> list[TaskSpec]:
        """``n`` tasks drawn with a fixed seed from the split's first two cities (the
        env's task list and spaces; few cities, so that making the env stays quick).
        """
        rng = np.random.default_rng(0)
        cities, self.cities = self.cities, min(self.cities, 2)
        try:
            return [self.draw(rng) for _ in range(n)]
        finally:
            self.cities = cities


def _value(spec: str, key: str, val: str) -> Any:
    if key == "blocks":
        return _range(val, "blocks", _square)
    if key == "radius":
        return _range(val, "radius", float)
    if key == "split":
        if val not in SPLITS:
            raise TaskError(f"procedural suite {spec!r}: split must be one of {SPLITS}")
        return val
    if key == "cities":
        return int(val)
    if key == "types":
        return tuple(filter(None, val.split("+")))
    return float(val)


__all__ = ["ATTEMPTS", "SAMPLE_TASKS", "SPEC_KEYS", "ProceduralTasks"]
