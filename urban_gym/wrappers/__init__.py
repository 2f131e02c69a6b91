"""Wrappers: the map observation, memory texts, the episode record, the language-model face
and the RL face. Each wrapper does one thing; they are imported lazily (attribute access
loads the module), so ``import urban_gym.wrappers`` stays cheap.

========================  ====================================================
name                      module
========================  ====================================================
MapObservation            :mod:`urban_gym.wrappers.map_observation`
ReflectionMemory          :mod:`urban_gym.wrappers.memory`
AgentNavMemory            :mod:`urban_gym.wrappers.memory`
LMMInterface    :mod:`urban_gym.wrappers.lmm_interface`
ReplyAction               :mod:`urban_gym.wrappers.lmm_interface`
parse_reply, ParsedReply  :mod:`urban_gym.wrappers.parsing`
protocol_for              :mod:`urban_gym.wrappers.protocols`
DropTextObservation       :mod:`urban_gym.wrappers.rl`
EncodeTextObservation     :mod:`urban_gym.wrappers.rl`
ResizeImageObservation    :mod:`urban_gym.wrappers.rl`
ExposeActionMask          :mod:`urban_gym.wrappers.rl`
make_rl_env               :mod:`urban_gym.wrappers.rl`
make_lmm_env               :mod:`urban_gym.wrappers.stacks`
lmm_env_kwargs             :mod:`urban_gym.wrappers.stacks`
========================  ====================================================
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY: dict[str, str] = {
    "MapObservation": "map_observation",
    "ReflectionMemory": "memory",
    "AgentNavMemory": "memory",
    "LMMInterface": "lmm_interface",
    "ReplyAction": "lmm_interface",
    "parse_reply": "parsing",
    "ParsedReply": "parsing",
    "protocol_for": "protocols",
    "PromptProtocol": "protocols",
    "DropTextObservation": "rl",
    "EncodeTextObservation": "rl",
    "EncodeAngleObservation": "rl",
    "ResizeImageObservation": "rl",
    "ExposeActionMask": "rl",
    "make_rl_env": "rl",
    "make_lmm_env": "stacks",
    "lmm_env_kwargs": "stacks",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        mod = importlib.import_module(f"urban_gym.wrappers.{_LAZY[name]}")
        return getattr(mod, name)
    raise AttributeError(f"module 'urban_gym.wrappers' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
