"""Task specifications: data first, JSON-serialisable, stored one per line in JSONL suites.

A :class:`TaskSpec` says everything an environment needs to set up an episode and
everything an evaluator needs to score it. Family-specific content lives in plain dicts
(``start``, ``goal``, ``constraints``, ``limits``, ``meta``) whose keys each family
documents in its task generator module.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from urban_gym.errors import TaskError
from urban_gym.tasks.families import family_names
from urban_gym.world.jsondata import JSONDataError, check_value, loads_strict, show

DIFFICULTIES = ("easy", "medium", "hard", "l1", "l2", "l3", "l4", "l5", "n/a")


#: Largest per-task step limit (``limits.*``) accepted.
MAX_LIMIT_STEPS = 10_000_000


#: What a task type asks of the agent: answer a question, reach one goal, visit stops.
TASK_KINDS: tuple[str, ...] = ("question", "navigation", "multi_stop")


@dataclass(frozen=True)
class TaskType:
    """One line of a family's type table (``TASK_TYPES``: name -> TaskType).

    Attributes:
        name: the type's name, as tasks spell it in their ``type`` field.
        kind: one of :data:`TASK_KINDS`.
        description: what the agent does, in a few words.
        level: the difficulty every task of the type has (a ladder level such as ``l2``),
            or ``""`` when each task has its own.
    """

    name: str
    kind: str
    description: str = ""
    level: str = ""

    def __post_init__(self) -> None:
        if self.kind not in TASK_KINDS:
            raise TaskError(
                f"task type {self.name!r}: kind={self.kind!r} is not one of {', '.join(TASK_KINDS)}"
            )


@dataclass(frozen=True)
class TaskSpec:
    """One task.

    Attributes:
        id: unique id within its suite.
        family: the name of a registered family (:mod:`urban_gym.tasks.families`).
        type: the family's task type, e.g. ``localization`` or ``object_count``.
        difficulty: ``easy``/``medium``/``hard`` (or ladder level ``l1``..``l5``).
        city: the :func:`~urban_gym.world.load_city` spec of the world -- the one place a
            task names its world (a family keeps its graph parameters in one documented
            place besides, such as ``start["graph"]`` or a key of ``meta``).
        instruction: the text shown to the agent.
        start: the start state (family-specific, e.g. ``{"node": 12, "heading": 90.0}``).
        goal: what success means (family-specific, e.g. ``{"x": .., "y": .., "radius": 10}``).
        answer: the ground-truth answer for question tasks (None for pure navigation);
            one of ``options`` when the task has options.
        options: answer options for multiple-choice tasks (distinct non-empty strings).
        reference_images: names of the reference images the observation carries
            (``"landmark"``, ``"grid_map"``, ``"route_map"``); rendered by the env.
        constraints: e.g. road closures, time windows.
        limits: per-task overrides of the env's step limits, each a whole number of steps
            from 1 to :data:`MAX_LIMIT_STEPS`.
        meta: generator provenance and statistics (route length, decision points, ...).

    Construction checks every field by type and range and raises :class:`TaskError`
    naming the task, the field and the bad value; every field must be plain JSON data
    (:func:`urban_gym.world.jsondata.check_value`: 64-bit integers, finite floats, valid
    Unicode, at most 32 levels of nesting). Family-specific content is checked by the
    family's ``check_task``.
    """

    id: str
    family: str
    type: str
    difficulty: str
    city: str
    instruction: str
    start: dict[str, Any]
    goal: dict[str, Any] = field(default_factory=dict)
    answer: Any = None
    options: tuple[str, ...] = ()
    reference_images: tuple[str, ...] = ()
    constraints: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise TaskError(f"task id={show(self.id)} must be a non-empty string")
        for name in _FIELDS:
            try:
                check_value(getattr(self, name), name)
            except JSONDataError as exc:
                raise TaskError(f"task {self.id!r}: {exc}") from None
        for name, kind in _FIELD_TYPES.items():
            value = getattr(self, name)
            if not isinstance(value, kind):
                raise TaskError(
                    f"task {self.id!r}: {name}={show(value)} must be {_KIND_NAMES[kind]}"
                )
        for name in ("type", "city"):
            if not getattr(self, name).strip():
                raise TaskError(f"task {self.id!r}: {name} must not be empty")
        if self.family not in family_names():
            raise TaskError(
                f"task {self.id!r}: family={self.family!r} is not one of "
                + ", ".join(family_names())
            )
        if self.difficulty not in DIFFICULTIES:
            raise TaskError(
                f"task {self.id!r}: difficulty={self.difficulty!r} is not one of "
                + ", ".join(DIFFICULTIES)
            )
        for name in ("options", "reference_images"):
            value = getattr(self, name)
            if not isinstance(value, (list, tuple)) or not all(
                isinstance(v, str) and v for v in value
            ):
                raise TaskError(
                    f"task {self.id!r}: {name}={show(value)} must be a list of non-empty strings"
                )
            object.__setattr__(self, name, tuple(value))
        self._check_options()
        self._check_limits()

    def _check_options(self) -> None:
        if len(set(self.options)) != len(self.options):
            dup = sorted({o for o in self.options if self.options.count(o) > 1})
            raise TaskError(f"task {self.id!r}: options repeat {dup}")
        if self.options and self.answer is not None and self.answer not in self.options:
            raise TaskError(
                f"task {self.id!r}: answer={show(self.answer)} is not among its options "
                f"{show(list(self.options), 200)}"
            )

    def _check_limits(self) -> None:
        for key, value in self.limits.items():
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 1 <= value <= MAX_LIMIT_STEPS
            ):
                raise TaskError(
                    f"task {self.id!r}: limits.{key}={show(value)} must be a whole number of "
                    f"steps from 1 to {MAX_LIMIT_STEPS}"
                )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (tuples become lists)."""
        d = dataclasses.asdict(self)
        d["options"] = list(self.options)
        d["reference_images"] = list(self.reference_images)
        return d

    def to_json(self) -> str:
        """One line of strict JSON (keys sorted, non-ASCII text kept)."""
        try:
            return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:  # a dict field changed after construction
            raise TaskError(f"task {self.id!r} is not JSON data: {exc}") from None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskSpec:
        """Build from a dict; unknown or missing keys raise :class:`TaskError` naming them."""
        if not isinstance(d, dict):
            raise TaskError(f"a task must be a JSON object, got {type(d).__name__}")
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(d) - set(names))
        if unknown:
            raise TaskError(
                f"task {show(d.get('id'))}: unknown keys {unknown}; valid keys: {', '.join(names)}"
            )
        required = [
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        missing = [k for k in required if k not in d]
        if missing:
            raise TaskError(f"task {show(d.get('id'))}: missing keys {missing}")
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> TaskSpec:
        """Parse one JSON line (strict: see :mod:`urban_gym.world.jsondata`)."""
        try:
            d = loads_strict(text)
        except JSONDataError as exc:
            raise TaskError(f"task is not valid JSON data: {exc}") from None
        return cls.from_dict(d)

    def replace(self, **changes: Any) -> TaskSpec:
        """A copy of the task with ``changes`` applied to its fields."""
        return dataclasses.replace(self, **changes)


_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))
_FIELD_TYPES: dict[str, type] = {
    **dict.fromkeys(("family", "type", "difficulty", "city", "instruction"), str),
    **dict.fromkeys(("start", "goal", "constraints", "limits", "meta"), dict),
}
_KIND_NAMES: dict[type, str] = {str: "a string", dict: "a JSON object"}
