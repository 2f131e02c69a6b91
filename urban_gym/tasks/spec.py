"""Task specifications: data first, JSON-serialisable, stored one per line in JSONL suites.

A :class:`TaskSpec` says everything an environment needs to set up an episode and
everything an evaluator needs to score it. Family-specific content lives in plain dicts
(``start``, ``goal``, ``constraints``, ``limits``, ``meta``) whose keys each family
documents in its task generator module.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urban_gym.errors import UrbanGymError

FAMILIES = ("posegraph360", "streetgraph", "citywalk")
DIFFICULTIES = ("easy", "medium", "hard", "l1", "l2", "l3", "l4", "l5", "n/a")


class TaskError(UrbanGymError):
    """A task spec or suite file is malformed."""


@dataclass(frozen=True)
class TaskSpec:
    """One task.

    Attributes:
        id: unique id within its suite.
        family: ``posegraph360``, ``streetgraph`` or ``citywalk``.
        type: the family's task type, e.g. ``localization`` or ``object_count``.
        difficulty: ``easy``/``medium``/``hard`` (or ladder level ``l1``..``l5``).
        city: the :func:`~urban_gym.world.load_city` spec of the world.
        instruction: the text shown to the agent.
        start: the start state (family-specific, e.g. ``{"node": 12, "heading": 90.0}``).
        goal: what success means (family-specific, e.g. ``{"x": .., "y": .., "radius": 10}``).
        answer: the ground-truth answer for question tasks (None for pure navigation).
        options: answer options for multiple-choice tasks.
        reference_images: names of the reference images the observation carries
            (``"landmark"``, ``"grid_map"``, ``"route_map"``); rendered by the env.
        constraints: e.g. road closures, time windows.
        limits: per-task overrides of the env's step limits.
        meta: generator provenance and statistics (route length, decision points, ...).
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
            raise TaskError(f"task id={self.id!r} must be a non-empty string")
        if self.family not in FAMILIES:
            raise TaskError(
                f"task {self.id!r}: family={self.family!r} is not one of {', '.join(FAMILIES)}"
            )
        if self.difficulty not in DIFFICULTIES:
            raise TaskError(
                f"task {self.id!r}: difficulty={self.difficulty!r} is not one of "
                + ", ".join(DIFFICULTIES)
            )
        if not isinstance(self.start, dict):
            raise TaskError(f"task {self.id!r}: start={self.start!r} must be an object")
        object.__setattr__(self, "options", tuple(self.options))
        object.__setattr__(self, "reference_images", tuple(self.reference_images))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (tuples become lists)."""
        d = dataclasses.asdict(self)
        d["options"] = list(self.options)
        d["reference_images"] = list(self.reference_images)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskSpec:
        """Build from a dict; unknown or missing keys raise :class:`TaskError` naming them."""
        if not isinstance(d, dict):
            raise TaskError(f"a task must be a JSON object, got {type(d).__name__}")
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(d) - set(names))
        if unknown:
            raise TaskError(
                f"task {d.get('id')!r}: unknown keys {unknown}; valid keys: {', '.join(names)}"
            )
        required = [
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        missing = [k for k in required if k not in d]
        if missing:
            raise TaskError(f"task {d.get('id')!r}: missing keys {missing}")
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> TaskSpec:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise TaskError(f"task is not valid JSON: {exc}") from exc

    def replace(self, **changes: Any) -> TaskSpec:
        return dataclasses.replace(self, **changes)


def save_suite(path: str | Path, tasks: Iterable[TaskSpec]) -> Path:
    """Write tasks as JSONL (one task per line, keys sorted)."""
    p = Path(path)
    tasks = list(tasks)
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise TaskError(f"duplicate task ids {dup[:5]} in suite {p}")
    p.parent.mkdir(parents=True, exist_ok=True)
    lines = [t.to_json() for t in tasks]
    p.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    return p


def load_suite(path: str | Path) -> list[TaskSpec]:
    """Read a JSONL suite; a malformed line raises :class:`TaskError` with its line number."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise TaskError(f"{p}: no such suite file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{p}: cannot read suite ({exc})") from exc
    tasks: list[TaskSpec] = []
    seen: set[str] = set()
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            t = TaskSpec.from_json(line)
        except TaskError as exc:
            raise TaskError(f"{p}, line {no}: {exc}") from exc
        except TypeError as exc:
            raise TaskError(f"{p}, line {no}: {exc}") from exc
        if t.id in seen:
            raise TaskError(f"{p}, line {no}: duplicate task id {t.id!r}")
        seen.add(t.id)
        tasks.append(t)
    return tasks
