"""Oracle agents: privileged policies that solve generated tasks from ground truth.

An oracle reads the environment's privileged state (``env.unwrapped``: the world, the
task, the true pose) and returns *structured* actions (canonical dicts of the env's
``ActionSet``), so the same oracle can drive the RL face (through the action table) and
script the language-model path (``urban-gym serve-scripted``). Every generated task must
be solved by its family's oracle: that is the task suite's own test.

Each family module defines a class with ``reset(env)`` and ``act(env) -> dict``.
"""

from __future__ import annotations

from typing import Any, Protocol

from urban_gym.tasks.families import get_family


class Oracle(Protocol):
    """What every oracle is: ``reset`` at the start of an episode, then ``act`` per step."""

    def reset(self, env: Any) -> None:
        """Forget the previous episode's plan (call after ``env.reset``)."""

    def act(self, env: Any) -> dict[str, Any]:
        """The structured action (``{"action": name, ...params}``) for ``env``'s state now."""
        ...


def make_oracle(env: Any) -> Oracle:
    """The oracle of ``env``'s family (the ``oracle`` entry point of the family registered
    under ``env.unwrapped.task.family``, :mod:`urban_gym.tasks.families`).
    """
    return get_family(env.unwrapped.task.family).make_oracle()
