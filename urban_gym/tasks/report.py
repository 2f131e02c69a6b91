"""What a suite generator made of a city, type by type, and why it made less.

Every family's generator fills a :class:`GenerationReport`: for each task type, how many
tasks were asked for, how many were made, how many attempts it took and -- when fewer
were made -- the reason, phrased as what the city lacks (``"VR: 0 of 20 -- no named POI
on a building facade"``). A city that supports no type at all raises
:class:`SuiteGenerationError`, whose message is the whole report.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urban_gym.errors import SuiteGenerationError
from urban_gym.tasks.spec import TaskSpec


@dataclass
class TypeReport:
    """One task type (or one variant group, e.g. ``VR`` at dusk/night): ``requested``
    tasks, ``made`` tasks after ``attempts`` tries, and ``reason`` -- why fewer were made
    (None when all were).
    """

    type: str
    requested: int
    made: int = 0
    attempts: int = 0
    reason: str | None = None

    @property
    def complete(self) -> bool:
        """All requested tasks were made."""
        return self.made >= self.requested

    def format(self) -> str:
        """``"VR: 20 of 20"`` or ``"VR: 0 of 20 -- <reason>"``."""
        head = f"{self.type}: {self.made} of {self.requested}"
        if self.complete or not self.reason:
            return head
        return f"{head} \u2014 {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return {
            "type": self.type,
            "requested": self.requested,
            "made": self.made,
            "attempts": self.attempts,
            "reason": self.reason,
        }


@dataclass
class GenerationReport:
    """The per-type outcome of generating one family's suite for one city."""

    family: str
    city: str
    types: list[TypeReport] = field(default_factory=list)

    def add(self, row: TypeReport) -> TypeReport:
        """Append ``row`` and return it."""
        self.types.append(row)
        return row

    @property
    def made(self) -> int:
        """Tasks made over all types."""
        return sum(r.made for r in self.types)

    @property
    def requested(self) -> int:
        """Tasks requested over all types."""
        return sum(r.requested for r in self.types)

    @property
    def incomplete(self) -> list[TypeReport]:
        """The types that made fewer tasks than requested."""
        return [r for r in self.types if not r.complete]

    def check_any(self) -> GenerationReport:
        """``self`` when at least one task was made, else :class:`SuiteGenerationError`."""
        if self.made == 0:
            raise SuiteGenerationError(self)
        return self

    def format(self) -> str:
        """One line per type (see :meth:`TypeReport.format`), indented."""
        return "\n".join(f"  {r.format()}" for r in self.types)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return {
            "family": self.family,
            "city": self.city,
            "made": self.made,
            "requested": self.requested,
            "types": [r.to_dict() for r in self.types],
        }


class Misses:
    """Why the attempts at one task type failed: reasons, each phrased as what the city
    lacks, counted per *stage* (how far into its checks the attempt got: 0 for the
    first check of a generator, higher for later ones).

    :meth:`reason` is the most frequent reason of the deepest stage reached: the attempts
    that got furthest say best what is missing (an attempt that found a route but no
    detour around a closure says more than the many that found no route).
    """

    def __init__(self) -> None:
        self.counts: Counter[tuple[int, str]] = Counter()

    def __call__(self, reason: str, stage: int = 0) -> None:
        """Record one failed attempt, its ``reason`` and ``stage``."""
        self.counts[(stage, reason)] += 1

    def reason(self, default: str = "no attempt succeeded") -> str:
        """The most frequent reason of the deepest stage (ties: the first recorded), or
        ``default`` when nothing was recorded.
        """
        if not self.counts:
            return default
        deepest = max(stage for stage, _ in self.counts)
        best = max((k for k in self.counts if k[0] == deepest), key=lambda k: self.counts[k])
        return best[1]


@dataclass
class GeneratedSuite:
    """A suite written to ``path``: its ``tasks`` and the generation ``report``;
    ``notes`` is extra text for a person (for example a statistics table).
    """

    path: Path
    tasks: list[TaskSpec]
    report: GenerationReport
    notes: str = ""


__all__ = ["GeneratedSuite", "GenerationReport", "Misses", "SuiteGenerationError", "TypeReport"]
