"""The toy family's environment: walk a corridor of ten cells."""

from __future__ import annotations

# [doc:env-imports]
import numpy as np
from gymnasium import spaces

from tests.toy_family.tasks import CELLS, FAMILY, goal_cells, stops_reached
from urban_gym.envs.actions import ActionSet, ActionSpec, InvalidAction, Param
from urban_gym.envs.base import UrbanEnv
from urban_gym.envs.goals import landmarks_of
from urban_gym.envs.spaces import SharedMemoryText
from urban_gym.envs.text import clean_text, task_charset

# [/doc:env-imports]


# [doc:env]
class CorridorEnv(UrbanEnv):
    """Walk a corridor of ten cells, one metre apart (the toy family of docs/extending.md).

    Action table: 0 = walk one cell east, 1 = walk one cell west, 2 = stop (ends the
    episode); the language-model face takes ``walk`` with ``cells`` in [-2, 2] too.
    Observation: ``cell`` (metres from the west end), ``instruction``, ``action_mask``.
    Reward: 1.0 when the episode ends in success. Episode end: ``stop`` (``arrived``), or
    30 steps (``step_limit``, truncated). ``info`` adds nothing to the shared schema.
    Goal modes: ``vector``, ``landmarks`` and ``text`` (no ``image``: nothing is drawn).
    """

    family = FAMILY
    no_view_reason = "the corridor is not drawn in pixels"

    def __init__(
        self,
        suite=None,
        tasks=None,
        task_types=None,
        difficulties=None,
        render_mode=None,
        goal="none",
        track_visibility=False,
    ):
        self._init_base(render_mode, track_visibility, goal)
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
                **self.goal_spaces(),  # the entries of goal="vector", "text", ...
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

    def _goal_point(self):  # where goal="vector" points: the next cell to visit
        cells = goal_cells(self.task)
        left = cells[stops_reached(self.visited, cells) :] or cells[-1:]
        return float(left[0]), 0.0

    def _goal_landmarks(self, task):  # goal="landmarks": the corridor's cells, not a city
        cells = np.array([[c, 0.0] for c in range(CELLS)])
        return landmarks_of("corridor", cells, (0.0, 0.0, CELLS - 1.0, 0.0))

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
