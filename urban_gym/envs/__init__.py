"""The gymnasium.Env families of urban_gym, the template they subclass
(:class:`~urban_gym.envs.base.UrbanEnv`), their ``info`` schema
(:mod:`urban_gym.envs.info`) and their registration ids.

Importing this package does not import the environment modules themselves; ``gym.make``
loads them through their string entry points.
"""

from urban_gym.envs.actions import (
    ActionSet,
    ActionSpec,
    InvalidAction,
    NormalisedAction,
    Param,
    UnreadableReply,
)
from urban_gym.envs.base import TERMINATION_REASONS, UrbanEnv
from urban_gym.envs.info import EndInfo, Pose, StepInfo, check_info
from urban_gym.envs.registration import ENV_SPECS, register_envs

__all__ = [
    "ENV_SPECS",
    "TERMINATION_REASONS",
    "ActionSet",
    "ActionSpec",
    "EndInfo",
    "InvalidAction",
    "NormalisedAction",
    "Param",
    "Pose",
    "StepInfo",
    "UnreadableReply",
    "UrbanEnv",
    "check_info",
    "register_envs",
]
