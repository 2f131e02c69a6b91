"""Oracle agents: privileged policies that solve generated tasks from ground truth.

An oracle reads the environment's privileged state (``env.unwrapped``: the world, the
task, the true pose) and returns *structured* actions (canonical dicts of the env's
``ActionSet``), so the same oracle can drive the RL face (through the action table) and
script the language-model path (``urban-gym serve-scripted``). Every generated task must
be solved by its family's oracle: that is the task suite's own test.

Each family module defines a class with ``reset(env)`` and ``act(env) -> dict``.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol


class Oracle(Protocol):
    def reset(self, env: Any) -> None: ...

    def act(self, env: Any) -> dict[str, Any]: ...


#: family -> "module:Class"
ORACLES: dict[str, str] = {
    "posegraph360": "urban_gym.baselines.oracles.posegraph360:PoseGraphOracle",
    "streetgraph": "urban_gym.baselines.oracles.streetgraph:StreetGraphOracle",
    "citywalk": "urban_gym.baselines.oracles.citywalk:CityWalkOracle",
}


def make_oracle(env: Any) -> Oracle:
    """The oracle for ``env``'s family (read from ``env.unwrapped.task.family``)."""
    family = env.unwrapped.task.family
    if family not in ORACLES:
        raise ValueError(f"no oracle for family {family!r}; known: {', '.join(ORACLES)}")
    mod, cls = ORACLES[family].split(":")
    return getattr(importlib.import_module(mod), cls)()
