"""Tiny environments that follow urban_gym's env contract, for testing the wrappers.

:class:`RecordingEnv` -- a 5 x 5 grid of places 10 m apart; the agent walks to a goal
cell and stops (or answers the goal cell's label). It has the contract's two faces: a
``Discrete`` action table (RL face) and structured actions validated by an
:class:`~urban_gym.envs.actions.ActionSet` (language-model face); a bad action is an
invalid-action step. It records every action it receives in ``received``.

:class:`RecordingGraphEnv` -- a StreetGraph-like square of four intersections; the agent
chooses an outgoing street by index (``bearings`` in the observation, ``node`` in info).
"""

from __future__ import annotations

import math
import string
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urban_gym.envs.actions import ActionSet, ActionSpec, InvalidAction, Param
from urban_gym.envs.base import INVALID_ACTION_REWARD, invalid_step_info
from urban_gym.tasks.spec import TaskSpec

CHARSET = frozenset(string.printable)
N = 5  # grid side
SPACING = 10.0  # metres between places
DIRS = {"north": (0, 1), "east": (1, 0), "south": (0, -1), "west": (-1, 0)}
HEADING = {"north": 0.0, "east": 90.0, "south": 180.0, "west": 270.0}

ACTIONS = ActionSet(
    [
        ActionSpec(
            "move",
            "walk to the neighbouring place(s) in a compass direction",
            (
                Param(
                    "direction",
                    "enum",
                    "compass direction",
                    tuple(DIRS),
                    value_synonyms={
                        "n": "north",
                        "e": "east",
                        "s": "south",
                        "w": "west",
                        "up": "north",
                        "right": "east",
                        "down": "south",
                        "left": "west",
                    },
                ),
                Param(
                    "steps",
                    "int",
                    "places to walk",
                    low=1,
                    high=3,
                    required=False,
                    default=1,
                    key_synonyms=("distance", "n"),
                ),
            ),
            synonyms=("walk", "go"),
        ),
        ActionSpec(
            "turn",
            "turn on the spot",
            (
                Param(
                    "angle",
                    "float",
                    "clockwise turn",
                    low=-180,
                    high=180,
                    unit="degrees",
                    key_synonyms=("degrees",),
                ),
            ),
        ),
        ActionSpec(
            "answer",
            "answer the question (ends the episode)",
            (Param("text", "str", "the answer", key_synonyms=("value",)),),
        ),
        ActionSpec("stop", "stop here (ends the episode)", synonyms=("done",)),
    ]
)

TABLE: list[dict[str, Any]] = [
    *({"action": "move", "direction": d, "steps": 1} for d in DIRS),
    {"action": "turn", "angle": -90.0},
    {"action": "turn", "angle": 90.0},
    {"action": "stop"},
    {"action": "answer", "text": "x:0 y:0"},
]


class RecordingEnv(gym.Env):
    """Walk to the goal place and stop (``task="navigate"``) or name its cell
    (``task="question"``). Positions: ``x = x0 + i * 10``, ``y = y0 + j * 10`` metres,
    ``(x0, y0)`` the south-west place (inside ``city``'s bounds when a city is given).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        family: str = "posegraph360",
        task: str = "navigate",
        max_steps: int = 30,
        city: Any = None,
        render_mode: str | None = None,
        image_shape: tuple[int, int] = (24, 32),
    ) -> None:
        self.family, self.task_kind, self.max_steps = family, task, max_steps
        self.city = city
        self.render_mode = render_mode
        self.action_set = ACTIONS
        self.action_table = [dict(a) for a in TABLE]
        self.action_space = spaces.Discrete(len(TABLE))
        self.image_shape = tuple(image_shape)
        self.observation_space = spaces.Dict(
            {
                "view": spaces.Box(0, 255, (*self.image_shape, 3), np.uint8),
                "instruction": spaces.Text(200, min_length=0, charset=CHARSET),
                "action_mask": spaces.Box(0, 1, (len(TABLE),), np.int8),
            }
        )
        if city is not None:
            bx0, by0, bx1, by1 = city.bounds
            self.origin = ((bx0 + bx1) / 2 - 20.0, (by0 + by1) / 2 - 20.0)
        else:
            self.origin = (0.0, 0.0)
        self.received: list[Any] = []
        self.task: TaskSpec | None = None

    # ------------------------------------------------------------------ helpers
    def xy(self, cell: tuple[int, int]) -> tuple[float, float]:
        return (self.origin[0] + cell[0] * SPACING, self.origin[1] + cell[1] * SPACING)

    def _distance(self) -> float:
        (ax, ay), (gx, gy) = self.xy(self.pos), self.xy(self.goal)
        return math.hypot(gx - ax, gy - ay)

    def _obs(self) -> dict[str, Any]:
        view = np.zeros((*self.image_shape, 3), np.uint8)
        view[..., 0] = 40 * self.pos[0]
        view[..., 1] = 40 * self.pos[1]
        view[..., 2] = int(self.heading / 360.0 * 255)
        mask = np.ones(len(TABLE), np.int8)
        for k, (dx, dy) in enumerate(DIRS.values()):
            i, j = self.pos[0] + dx, self.pos[1] + dy
            mask[k] = int(0 <= i < N and 0 <= j < N)
        return {"view": view, "instruction": self.task.instruction, "action_mask": mask}

    def _info(self) -> dict[str, Any]:
        x, y = self.xy(self.pos)
        return {
            "pose": {"x": x, "y": y, "heading": self.heading},
            "distance_to_goal_m": self._distance(),
            "steps": self.steps,
            "invalid_actions": self.invalid,
            "action_valid": True,
            "invalid_action": "",
            "task_id": self.task.id,
            "clock": self.clock,
            "task": self.task,
        }

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        cells = [(i, j) for i in range(N) for j in range(N)]
        a, b = self.np_random.choice(len(cells), size=2, replace=False)
        self.pos, self.goal = cells[int(a)], cells[int(b)]
        self.heading, self.clock, self.steps, self.invalid = 0.0, 0.0, 0, 0
        gx, gy = self.xy(self.goal)
        sx, sy = self.xy(self.pos)
        label = f"x:{self.goal[0]} y:{self.goal[1]}"
        instruction = (
            f"Walk to the place at cell {label} and stop there."
            if self.task_kind == "navigate"
            else f"Which cell is the goal? Answer like {label!r}."
        )
        self.task = TaskSpec(
            id=f"rec-{seed}",
            family=self.family,
            type=self.task_kind,
            difficulty="easy",
            city="procedural:seed=3,blocks=2x2",
            instruction=instruction,
            start={"x": sx, "y": sy, "heading": 0.0},
            goal={"x": gx, "y": gy, "radius": 1.0},
            answer=label if self.task_kind == "question" else None,
        )
        return self._obs(), self._info()

    def step(self, action: Any):
        self.received.append(action)
        self.steps += 1
        self.clock += 1.0
        try:
            act = self._structured(action)
        except InvalidAction as exc:
            self.invalid += 1
            info = {**self._info(), **invalid_step_info(str(exc), self.invalid)}
            return self._end_if_limit(self._obs(), INVALID_ACTION_REWARD, info)
        name = act["action"]
        if name == "move":
            dx, dy = DIRS[act["direction"]]
            i, j = self.pos[0] + dx * act["steps"], self.pos[1] + dy * act["steps"]
            if not (0 <= i < N and 0 <= j < N):
                self.invalid += 1
                msg = f"move: {act['direction']} x{act['steps']} leaves the grid"
                info = {**self._info(), **invalid_step_info(msg, self.invalid)}
                return self._end_if_limit(self._obs(), INVALID_ACTION_REWARD, info)
            before = self._distance()
            self.pos = (i, j)
            self.heading = HEADING[act["direction"]]
            reward = 0.1 * (before - self._distance()) / SPACING
            return self._end_if_limit(self._obs(), reward, self._info())
        if name == "turn":
            self.heading = (self.heading + act["angle"]) % 360.0
            return self._end_if_limit(self._obs(), 0.0, self._info())
        if name == "stop":
            ok = self.pos == self.goal and self.task_kind == "navigate"
            return self._end(ok, "arrived" if ok else "terminated_by_agent")
        ok = self.task_kind == "question" and act["text"].strip() == self.task.answer
        return self._end(ok, "answered")

    def _structured(self, action: Any) -> dict[str, Any]:
        if isinstance(action, (int, np.integer)):
            if not 0 <= int(action) < len(TABLE):
                raise InvalidAction(f"action index {action} is outside 0..{len(TABLE) - 1}")
            return dict(TABLE[int(action)])
        return self.action_set.normalise(action)

    def _end_if_limit(self, obs, reward, info):
        if self.steps >= self.max_steps:
            info.update(
                termination="step_limit",
                is_success=False,
                metrics={"success": 0.0, "distance_to_goal": self._distance()},
            )
            return obs, reward, False, True, info
        return obs, reward, False, False, info

    def _end(self, ok: bool, reason: str):
        info = self._info()
        info.update(
            termination=reason,
            is_success=ok,
            metrics={"success": float(ok), "distance_to_goal": self._distance()},
        )
        return self._obs(), (1.0 if ok else 0.0), True, False, info

    def render(self):
        if self.render_mode == "rgb_array":
            return np.repeat(np.repeat(self._obs()["view"], 4, axis=0), 4, axis=1)
        return None


class RecordingOracle:
    """Walks straight to the goal (largest axis first, up to 3 places a step), then stops
    or answers."""

    def reset(self, env: Any) -> None:
        self.env = env.unwrapped

    def act(self, env: Any) -> dict[str, Any]:
        u = env.unwrapped
        (i, j), (gi, gj) = u.pos, u.goal
        if (i, j) == (gi, gj):
            if u.task_kind == "question":
                return {"action": "answer", "text": u.task.answer}
            return {"action": "stop"}
        if u.task_kind == "question":
            return {"action": "answer", "text": u.task.answer}
        if abs(gi - i) >= abs(gj - j):
            return {
                "action": "move",
                "direction": "east" if gi > i else "west",
                "steps": min(3, abs(gi - i)),
            }
        return {
            "action": "move",
            "direction": "north" if gj > j else "south",
            "steps": min(3, abs(gj - j)),
        }


# --------------------------------------------------------------------------- graph env

#: A square of four intersections 100 m apart: 0 (SW), 1 (SE), 2 (NE), 3 (NW).
GRAPH_XY = {0: (0.0, 0.0), 1: (100.0, 0.0), 2: (100.0, 100.0), 3: (0.0, 100.0)}
GRAPH_OUT = {0: [1, 3], 1: [2, 0], 2: [3, 1], 3: [0, 2]}

GRAPH_ACTIONS = ActionSet(
    [
        ActionSpec(
            "go",
            "take the street with this option number",
            (Param("option", "int", "option number", low=0, high=1),),
        ),
        ActionSpec("stop", "declare arrival"),
    ]
)


class RecordingGraphEnv(gym.Env):
    """Start at intersection 0, reach intersection 2 and stop. Option ``k`` at node ``n``
    leads to ``GRAPH_OUT[n][k]``; ``bearings`` holds each option's compass bearing."""

    metadata = {"render_modes": []}

    def __init__(self) -> None:
        self.action_set = GRAPH_ACTIONS
        self.action_table = [
            {"action": "go", "option": 0},
            {"action": "go", "option": 1},
            {"action": "stop"},
        ]
        self.action_space = spaces.Discrete(3)
        self.observation_space = spaces.Dict(
            {
                "views": spaces.Box(0, 255, (2, 16, 16, 3), np.uint8),
                "bearings": spaces.Box(0.0, 360.0, (2,), np.float32),
                "destination": spaces.Text(100, min_length=0, charset=CHARSET),
                "action_mask": spaces.Box(0, 1, (3,), np.int8),
            }
        )
        self.received: list[Any] = []
        self.task = None

    def _bearings(self) -> np.ndarray:
        x, y = GRAPH_XY[self.node]
        out = []
        for m in GRAPH_OUT[self.node]:
            mx, my = GRAPH_XY[m]
            out.append(math.degrees(math.atan2(mx - x, my - y)) % 360.0)
        return np.asarray(out, np.float32)

    def _obs(self):
        return {
            "views": np.full((2, 16, 16, 3), 60 * self.node, np.uint8),
            "bearings": self._bearings(),
            "destination": "the north-east corner",
            "action_mask": np.ones(3, np.int8),
        }

    def _info(self):
        x, y = GRAPH_XY[self.node]
        return {
            "pose": {"x": x, "y": y, "heading": 0.0},
            "distance_to_goal_m": math.inf,
            "steps": self.steps,
            "invalid_actions": self.invalid,
            "action_valid": True,
            "invalid_action": "",
            "task_id": "square",
            "node": self.node,
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.node, self.invalid, self.steps = 0, 0, 0
        self.task = TaskSpec(
            id="graph",
            family="streetgraph",
            type="od",
            difficulty="easy",
            city="procedural:seed=3,blocks=2x2",
            instruction="go to 2",
            start={"node": 0},
            goal={"nodes": [2]},
        )
        return self._obs(), self._info()

    def step(self, action):
        self.received.append(action)
        self.steps += 1
        try:
            a = (
                self.action_table[int(action)]
                if isinstance(action, (int, np.integer))
                else self.action_set.normalise(action)
            )
        except InvalidAction as exc:
            self.invalid += 1
            return (
                self._obs(),
                -0.01,
                False,
                False,
                {**self._info(), **invalid_step_info(str(exc), self.invalid)},
            )
        if a["action"] == "stop":
            ok = self.node == 2
            info = {
                **self._info(),
                "termination": "arrived" if ok else "terminated_by_agent",
                "is_success": ok,
                "metrics": {"success": float(ok)},
            }
            return self._obs(), float(ok), True, False, info
        self.node = GRAPH_OUT[self.node][a["option"]]
        trunc = self.steps >= 20
        info = self._info()
        if trunc:
            info.update(termination="decision_limit", is_success=False, metrics={"success": 0.0})
        return self._obs(), 0.0, False, trunc, info


#: Registered so that ``urban-gym serve-scripted`` can make it by id in a subprocess
#: (``gym.make("tests.wrappers.recording_env:UrbanGymTest/Recording-v0")``).
RECORDING_ID = "UrbanGymTest/Recording-v0"
if RECORDING_ID not in gym.registry:
    gym.register(RECORDING_ID, entry_point="tests.wrappers.recording_env:RecordingEnv")


def episode(agent, seed, env=None, **kw):
    """One episode of ``agent`` on a :class:`RecordingEnv` (or ``env``) in the one
    episode loop (:func:`urban_gym.eval.trace.run_episode`): ``(record, steps)``, the
    steps as the trace holds them (step 0 the reset)."""
    from urban_gym.eval.trace import TraceRecorder, run_episode

    recorder = TraceRecorder(env if env is not None else RecordingEnv())
    face = agent.wrap(recorder)
    rec, trace = run_episode(face, agent, seed=seed, recorder=recorder, **kw)
    return rec, trace.steps()
