"""A toy task family defined entirely inside ``tests/``: walk a corridor.

The corridor has ten cells, 0 to 9, one metre apart from west to east. Its task package
(the names every family exports), its environment, its oracle and its registration are
all in this module, and nothing under ``urban_gym/`` knows of it: ``docs/extending.md``
is written from the regions marked ``# [doc:NAME]`` here and in ``tests/test_extending.py``
(that test checks that every snippet of the doc is, character for character, a region of
the code).

Task types: ``reach`` (walk to a cell and stop there) and ``patrol`` (visit two cells in
the given order, then stop; the type added in the doc's "Add a task type"). The metric
:func:`stops_in_order` is the one added in its "Add a metric".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# [doc:imports]
import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urban_gym.envs.actions import ActionSet, ActionSpec, InvalidAction, Param
from urban_gym.envs.base import UrbanEnv
from urban_gym.envs.spaces import SharedMemoryText
from urban_gym.envs.text import clean_text, task_charset
from urban_gym.tasks import metrics
from urban_gym.tasks.families import Family, register_family, unregister_family
from urban_gym.tasks.report import GeneratedSuite, GenerationReport, TypeReport
from urban_gym.tasks.spec import TaskError, TaskSpec, TaskType
from urban_gym.tasks.suite import save_suite

# [/doc:imports]

ENV_ID = "Toy/Corridor-v0"
CELLS = 10  # cells 0..9, one metre apart

# [doc:package]
FAMILY = "toy_corridor"

TASK_TYPES = {
    "reach": TaskType("reach", "navigation", "walk to a cell and stop there", "easy"),
    # [doc:type-line]
    "patrol": TaskType("patrol", "multi_stop", "visit two cells in order, then stop", "medium"),
    # [/doc:type-line]
}

DEFAULT_SUITES = {"corridor": Path(__file__).parent / "data" / "toy_corridor.jsonl"}


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


# [doc:env]
class CorridorEnv(UrbanEnv):
    """Walk a corridor of ten cells, one metre apart (the toy family of docs/extending.md).

    Action table: 0 = walk one cell east, 1 = walk one cell west, 2 = stop (ends the
    episode); the language-model face takes ``walk`` with ``cells`` in [-2, 2] too.
    Observation: ``cell`` (metres from the west end), ``instruction``, ``action_mask``.
    Reward: 1.0 when the episode ends in success. Episode end: ``stop`` (``arrived``), or
    30 steps (``step_limit``, truncated). ``info`` adds nothing to the shared schema.
    """

    family = FAMILY

    def __init__(
        self, suite=None, tasks=None, task_types=None, difficulties=None, render_mode=None
    ):
        self._init_base(render_mode)
        self.tasks = self._load_tasks(suite, tasks, task_types, difficulties)
        self.action_table = [
            {"action": "walk", "cells": 1},
            {"action": "walk", "cells": -1},
            {"action": "stop"},
        ]
        cells = Param("cells", "int", "cells to walk: + east, - west", low=-2, high=2)
        self.action_set = ActionSet(
            [ActionSpec("walk", "walk along the corridor", (cells,)), ActionSpec("stop", "stop")]
        )
        self.action_space = spaces.Discrete(len(self.action_table))
        self._charset = task_charset(self.tasks)
        self.observation_space = spaces.Dict(
            {
                "cell": spaces.Box(0.0, CELLS - 1.0, (1,), np.float32),
                "instruction": SharedMemoryText(256, min_length=0, charset=self._charset),
                "action_mask": spaces.Box(0, 1, (len(self.action_table),), np.int8),
            }
        )
        self.task = self.tasks[0]

    def _start_episode(self, task):
        self.cell, self.heading, self.stopped = task.start["cell"], 90.0, False
        self.visited, self.walked = [self.cell], 0

    def _apply(self, action):
        if action["action"] == "stop":
            self.stopped = True
            return
        to = self.cell + action["cells"]
        if action["cells"] == 0 or not 0 <= to < CELLS:
            raise InvalidAction(f"cells={action['cells']} from cell {self.cell} leaves 0..9")
        self.heading = 90.0 if to > self.cell else 270.0
        self.walked += abs(to - self.cell)
        self.visited += list(range(self.cell, to, 1 if to > self.cell else -1))[1:] + [to]
        self.cell = to

    def _check_end(self, valid):
        if self.stopped:
            return "arrived", False
        return ("step_limit", True) if self.steps >= 30 else (None, False)

    def _observe(self):
        return {
            "cell": np.array([self.cell], np.float32),
            "instruction": clean_text(self.task.instruction, self._charset),
            "action_mask": self._mask(),
        }

    def _mask(self):
        return np.array([self.cell < CELLS - 1, self.cell > 0, True], np.int8)

    def _pose(self):
        return float(self.cell), 0.0, self.heading

    def _distance_to_goal(self):
        cells = goal_cells(self.task)
        path = [self.cell, *cells[stops_reached(self.visited, cells) :]]
        return float(sum(abs(b - a) for a, b in zip(path[:-1], path[1:])))

    def _outcome(self):
        return {
            "cell": self.cell,
            "stopped": self.stopped,
            "steps": self.steps,
            "walked_m": float(self.walked),
            "visited": list(self.visited),
        }

    def _end_reward(self, metrics, valid):
        return metrics["success"]

    def render(self):
        """The corridor as a line of text (``[ ]`` the agent, ``*`` the cells to visit)."""
        from urban_gym.render.frame import text_panel

        if self.render_mode != "rgb_array":
            return None
        todo = set(goal_cells(self.task))
        marks = [
            f"[{c}]" if c == self.cell else f"*{c}" if c in todo else f" {c}" for c in range(CELLS)
        ]
        return text_panel(" ".join(marks), 320)


# [/doc:env]


# [doc:oracle]
class CorridorOracle:
    """Walks straight to the next cell to visit, then stops."""

    def reset(self, env):
        """Nothing to plan."""

    def act(self, env):
        """The next structured action."""
        u = env.unwrapped
        cells = goal_cells(u.task)
        reached = stops_reached(u.visited, cells)
        if reached == len(cells):
            return {"action": "stop"}
        return {"action": "walk", "cells": 1 if cells[reached] > u.cell else -1}


# [/doc:oracle]


# [doc:register]
def register() -> Family:
    """Register the family and its env id (again after :func:`unregister`)."""
    family = register_family(
        Family(
            name=FAMILY,
            package="tests.toy_family",
            env="tests.toy_family:CorridorEnv",
            oracle="tests.toy_family:CorridorOracle",
            protocol="generic",  # the prompt protocol of its language-model face
        ),
        replace=True,
    )
    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point="tests.toy_family:CorridorEnv")
    return family


# [/doc:register]


def unregister() -> None:
    """Remove the family and its id (the registries are process-wide)."""
    unregister_family(FAMILY)
    gym.registry.pop(ENV_ID, None)
