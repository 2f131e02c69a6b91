"""The three gymnasium.Env families of urban_gym and their registration ids.

Importing this package does not import the environment modules themselves; ``gym.make``
loads them through their string entry points.
"""

from urban_gym.envs.actions import ActionSet, ActionSpec, InvalidAction, Param
from urban_gym.envs.base import TERMINATION_REASONS
from urban_gym.envs.registration import ENV_SPECS, register_envs

__all__ = [
    "ENV_SPECS",
    "TERMINATION_REASONS",
    "ActionSet",
    "ActionSpec",
    "InvalidAction",
    "Param",
    "register_envs",
]
