"""The toy family's tasks: its task package (the names every family exports).

Task types: ``reach`` (walk to a cell and stop there) and ``patrol`` (visit two cells in
the given order, then stop; the type added in the doc's "Add a task type"). The metric
:func:`stops_in_order` is the one added in its "Add a metric".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# [doc:tasks-imports]
import numpy as np

from urban_gym.tasks import metrics
from urban_gym.tasks.report import GeneratedSuite, GenerationReport, TypeReport
from urban_gym.tasks.spec import TaskError, TaskSpec, TaskType
from urban_gym.tasks.suite import save_suite

# [/doc:tasks-imports]

CELLS = 10  # cells 0..9, one metre apart

# [doc:package]
FAMILY = "toy_corridor"

TASK_TYPES = {
    "reach": TaskType("reach", "navigation", "walk to a cell and stop there", "easy"),
    # [doc:type-line]
    "patrol": TaskType("patrol", "multi_stop", "visit two cells in order, then stop", "medium"),
    # [/doc:type-line]
}

DEFAULT_SUITES = {"corridor": Path(__file__).parent / "suites" / "corridor.jsonl"}


def check_task(task: TaskSpec) -> TaskSpec:
    """``task`` if its corridor fields are well formed, else a TaskError naming the value."""
    where = f"task {task.id!r}"
    if task.type not in TASK_TYPES:
        raise TaskError(f"{where}: type={task.type!r} is not one of {', '.join(TASK_TYPES)}")
    cells = [task.start.get("cell")]
    cells += [task.goal.get("cell")] if task.type == "reach" else task.goal.get("stops", [])
    if len(cells) < 2 or not all(isinstance(c, int) and 0 <= c < CELLS for c in cells):
        raise TaskError(f"{where}: start/goal cells {cells!r} must be whole numbers in 0..9")
    return task


def generate(
    city: str = "corridor",
    out: str | Path | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> GeneratedSuite:
    """Write ``per_type`` (default 4) tasks of each type to ``out`` (None: the default suite)."""
    n = 4 if per_type is None else int(per_type)
    rng = np.random.default_rng(seed)
    report = GenerationReport(FAMILY, city)
    tasks: list[TaskSpec] = []
    for name, make in GENERATORS.items():
        row = report.add(TypeReport(name, n))
        for k in range(n):
            tasks.append(make(rng, city, k))
            row.made += 1
            row.attempts += 1
    path = save_suite(out if out is not None else DEFAULT_SUITES["corridor"], tasks)
    return GeneratedSuite(path, tasks, report.check_any())


# [/doc:package]


# [doc:evaluate]
def evaluate(task: TaskSpec, outcome: dict[str, Any]) -> dict[str, float]:
    """The episode's scores: ``success`` (the type's scorer), ``spl``, ``steps``, and for
    a patrol ``stops_in_order``."""
    ok = SCORERS[task.type](task, outcome)
    scores = {
        "success": metrics.success(ok),
        "spl": metrics.spl(ok, route_length(task), outcome["walked_m"]),
        "steps": float(outcome["steps"]),
    }
    if task.type == "patrol":
        scores["stops_in_order"] = stops_in_order(outcome["visited"], task.goal["stops"])
    return scores


# [/doc:evaluate]


def route_length(task: TaskSpec) -> float:
    """The shortest walk of ``task`` in metres: through its goal cells in order."""
    cells = [task.start["cell"], *goal_cells(task)]
    return float(sum(abs(b - a) for a, b in zip(cells[:-1], cells[1:])))


def goal_cells(task: TaskSpec) -> list[int]:
    """The cells to visit in order: the goal cell, or the stops."""
    return [task.goal["cell"]] if task.type == "reach" else list(task.goal["stops"])


# [doc:type-reach]
def _gen_reach(rng: np.random.Generator, city: str, k: int) -> TaskSpec:
    goal = int(rng.integers(1, CELLS))
    return TaskSpec(
        id=f"reach-{k}",
        family=FAMILY,
        type="reach",
        difficulty="easy",
        city=city,
        instruction=f"Walk to cell {goal} and stop there.",
        start={"cell": 0},
        goal={"cell": goal},
    )


def _score_reach(task: TaskSpec, outcome: dict[str, Any]) -> bool:
    return outcome["stopped"] and outcome["cell"] == task.goal["cell"]


# [/doc:type-reach]


# [doc:type-patrol]
def _gen_patrol(rng: np.random.Generator, city: str, k: int) -> TaskSpec:
    start = int(rng.integers(0, CELLS))
    a, b = (int(c) for c in rng.choice([c for c in range(CELLS) if c != start], 2, False))
    return TaskSpec(
        id=f"patrol-{k}",
        family=FAMILY,
        type="patrol",
        difficulty="medium",
        city=city,
        instruction=f"Visit cell {a}, then cell {b}, then stop.",
        start={"cell": start},
        goal={"stops": [a, b]},
    )


def _score_patrol(task: TaskSpec, outcome: dict[str, Any]) -> bool:
    return outcome["stopped"] and stops_in_order(outcome["visited"], task.goal["stops"]) == 1.0


# [/doc:type-patrol]

# [doc:type-tables]
GENERATORS = {"reach": _gen_reach, "patrol": _gen_patrol}
SCORERS = {"reach": _score_reach, "patrol": _score_patrol}
# [/doc:type-tables]


# [doc:metric]
def stops_reached(visited: list[int], stops: list[int]) -> int:
    """How many of ``stops`` were reached in their order along ``visited`` (cells in the
    order walked): a stop counts once the ones before it were reached."""
    reached = 0
    for cell in visited:
        if reached < len(stops) and cell == stops[reached]:
            reached += 1
    return reached


def stops_in_order(visited: list[int], stops: list[int]) -> float:
    """The share of ``stops`` reached in their order, in [0, 1] (1 for no stops)."""
    return stops_reached(visited, stops) / len(stops) if stops else 1.0


# [/doc:metric]
