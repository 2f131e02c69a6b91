"""The gymnasium.Env families of urban_gym, the template they subclass
(:class:`~urban_gym.envs.base.UrbanEnv`), their ``info`` schema
(:mod:`urban_gym.envs.info`), the action sets, spaces and goal modes they share.

The families register their ids (:mod:`urban_gym.families`); ``gym.make`` loads an env
module through its string entry point.
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

__all__ = [
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
]
