"""The family registry (:mod:`urban_gym.tasks.families`): every family exports the same
names, every former table reads the registry, and a family defined outside the package --
here a toy corridor family whose task package, env and oracle are this very module --
plugs in with ``register_family`` alone."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from urban_gym.envs.actions import ActionSet, ActionSpec, InvalidAction, Param
from urban_gym.envs.base import UrbanEnv
from urban_gym.envs.info import check_info
from urban_gym.errors import UrbanGymError
from urban_gym.tasks.families import (
    FAMILIES,
    PACKAGE_EXPORTS,
    Family,
    get_family,
    register_family,
    unregister_family,
)
from urban_gym.tasks.spec import TaskError, TaskSpec, TaskType

# --------------------------------------------------------------------------- the toy family
# A corridor of cells 1 m apart; walk to the goal cell and stop there.
FAMILY = "toy_corridor"
TASK_TYPES = {"reach": TaskType("reach", "navigation", "walk to a cell of the corridor")}
DEFAULT_SUITES: dict[str, Path] = {}


def check_task(task: TaskSpec) -> TaskSpec:
    if task.type not in TASK_TYPES or not isinstance(task.goal.get("cell"), int):
        raise TaskError(f"task {task.id!r}: not a corridor task")
    return task


def generate(city: str, out: Any = None, seed: int = 0, per_type: int | None = None) -> list:
    rng = np.random.default_rng(seed)
    return [
        TaskSpec(
            id=f"reach-{k}",
            family=FAMILY,
            type="reach",
            difficulty="easy",
            city=city,
            instruction="Walk to the goal cell and stop.",
            start={"cell": 0},
            goal={"cell": int(rng.integers(1, 6))},
        )
        for k in range(per_type or 3)
    ]


def evaluate(task: TaskSpec, outcome: dict[str, Any]) -> dict[str, float]:
    ok = outcome["cell"] == task.goal["cell"] and outcome["stopped"]
    return {"success": float(ok), "steps": float(outcome["steps"])}


class CorridorEnv(UrbanEnv):
    """Walk a corridor (toy family of the registry test)."""

    family = FAMILY
    cache_attributes = ("_scratch",)

    def __init__(self, tasks=None, render_mode=None) -> None:
        self._init_base(render_mode)
        self.tasks = self._load_tasks(tasks=tasks or generate("corridor"))
        self.action_table = [{"action": "step", "cells": 1}, {"action": "stop"}]
        self.action_set = ActionSet(
            [
                ActionSpec("step", "walk on", (Param("cells", "int", "how far", low=1, high=2),)),
                ActionSpec("stop", "stop here"),
            ]
        )
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Dict({"action_mask": spaces.Box(0, 1, (2,), np.int8)})
        self.task = self.tasks[0]
        self._scratch = {}

    def _start_episode(self, task):
        self.cell, self.stopped = int(task.start["cell"]), False

    def _apply(self, action):
        if action["action"] == "stop":
            self.stopped = True
        elif self.cell + action["cells"] > 9:
            raise InvalidAction("the corridor ends at cell 9")
        else:
            self.cell += action["cells"]

    def _check_end(self, valid):
        if self.stopped:
            return "arrived", False
        return ("step_limit", True) if self.steps >= 20 else (None, False)

    def _observe(self):
        return {"action_mask": self._mask()}

    def _pose(self):
        return float(self.cell), 0.0, 90.0

    def _distance_to_goal(self):
        return float(abs(self.task.goal["cell"] - self.cell))

    def _outcome(self):
        return {"cell": self.cell, "stopped": self.stopped, "steps": self.steps}

    def _end_reward(self, metrics, valid):
        return metrics["success"]


class CorridorOracle:
    def reset(self, env):
        pass

    def act(self, env):
        u = env.unwrapped
        return (
            {"action": "stop"} if u.cell == u.task.goal["cell"] else {"action": "step", "cells": 1}
        )


@pytest.fixture
def toy_family():
    fam = register_family(
        Family(
            name=FAMILY,
            package=__name__,
            env=f"{__name__}:CorridorEnv",
            oracle=f"{__name__}:CorridorOracle",
        )
    )
    if "Toy/Corridor-v0" not in gym.registry:
        gym.register("Toy/Corridor-v0", entry_point=f"{__name__}:CorridorEnv")
    yield fam
    unregister_family(FAMILY)


# --------------------------------------------------------------------------- tests
def test_every_family_exports_the_same_names():
    for fam in FAMILIES.values():
        mod = fam.tasks_module()
        missing = [n for n in PACKAGE_EXPORTS if not hasattr(mod, n)]
        assert not missing, (fam.name, missing)
        assert mod.FAMILY == fam.name
        assert all(isinstance(t, TaskType) and t.name == n for n, t in mod.TASK_TYPES.items())
        assert all(Path(p).is_file() for p in mod.DEFAULT_SUITES.values())
        assert fam.env_class().family == fam.name


def test_the_former_tables_read_the_registry(toy_family):
    from urban_gym.baselines.lmm.prompt import prompt_builder_for
    from urban_gym.wrappers.protocols import protocol_for

    assert protocol_for("citywalk").name == FAMILIES["citywalk"].protocol == "observe_reason_act"
    assert prompt_builder_for("citywalk").history == 2 and prompt_builder_for(FAMILY).history == 0
    assert protocol_for(FAMILY).name == "generic"
    with pytest.raises(UrbanGymError, match="unknown task family 'nowhere'; registered: "):
        get_family("nowhere")
    with pytest.raises(UrbanGymError, match="already registered"):
        register_family(Family(name=FAMILY, package="x", env="a:B", oracle="a:C"))


def test_a_family_defined_outside_the_package_plugs_in(toy_family):
    from urban_gym.baselines.oracles import make_oracle
    from urban_gym.eval.episodes import run_episode
    from urban_gym.wrappers.stacks import family_of, make_lm_env

    env = gym.make("Toy/Corridor-v0")
    assert family_of(env) == FAMILY
    _, info = env.reset(seed=0, options={"task_index": 1})
    check_info(info)
    assert isinstance(make_oracle(env), CorridorOracle)
    info = run_episode(env, "oracle", task_index=1)
    assert info["is_success"] and info["termination"] == "arrived"
    assert info["steps"] == env.unwrapped.tasks[1].goal["cell"] + 1
    # the language-model face of the toy env: a reply in, an invalid step for a bad one
    lm = make_lm_env("Toy/Corridor-v0", memory=None)
    lm.reset(seed=0)
    *_, info = lm.step('{"action": {"name": "step", "cells": 7}}')
    assert not info["action_valid"] and "cells=7 is outside [1, 2]" in info["invalid_action"]
    *_, info = lm.step('{"action": {"name": "step", "cells": 2}}')
    assert info["action_valid"] and info["pose"]["x"] == 2.0
    assert math.isfinite(info["distance_to_goal_m"])
    # a task of the family is a valid TaskSpec now, and not once it is unregistered
    unregister_family(FAMILY)
    with pytest.raises(TaskError, match="family='toy_corridor' is not one of"):
        generate("corridor")
