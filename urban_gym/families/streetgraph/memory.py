"""CityNav's AgentNav memory for StreetGraph's language-model face (``memory="agentnav"``).

:class:`AgentNavMemory` keeps three texts: the Markovian memory (the agent's own state m_t,
carried to the next step), the decision history (the compass direction chosen at each
intersection) and previous visits (on returning to an intersection: how often it was
visited and the choices made there before). Charset, budget and truncation follow
:mod:`urban_gym.wrappers.memory`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urban_gym.envs.spaces import SharedMemoryText, dict_space
from urban_gym.wrappers.memory import (
    clean_text,
    compass_name,
    fit_budget,
    memory_charset,
    reply_field,
    strip_key,
)
from urban_gym.wrappers.state import read_node


class AgentNavMemory(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """AgentNav's three memory texts for intersection-graph navigation.

    Args:
        env: an intersection-graph env: Dict observations with the compass bearing of each
            option under ``bearings_key``, actions that choose an option index, and the
            current intersection in ``info["node"]``.
        budget: the most characters of each text (same truncation rule as above).
        field: the reply field that carries the Markovian memory m_t.
        bearings_key: the observation key with the options' bearings (degrees).
        option_param: the action parameter holding the chosen option's index.

    Observation entries added (``Text``): ``memory`` (m_t as written last step),
    ``decision_history`` (``"1. north-east (45°)"`` per decision, oldest first),
    ``previous_visits`` (empty unless this intersection was visited before, then e.g.
    ``"You have been here 2 times before; you went: north (0°), east (90°)."``).
    The intersection identity comes from ``info`` -- privileged, used as AgentNav uses
    its own visit log: the agent only learns that it is back, not where it is.
    ``info["memory_truncations"]`` counts the texts cut to the budget, once per
    observation in which a text was cut.
    """

    def __init__(
        self,
        env: gym.Env,
        budget: int = 2000,
        field: str = "memory",
        bearings_key: str = "bearings",
        option_param: str = "option",
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, budget=budget, field=field, bearings_key=bearings_key, option_param=option_param
        )
        gym.Wrapper.__init__(self, env)
        base = dict_space(env, "AgentNavMemory")
        self.budget, self.field = int(budget), field
        self.bearings_key, self.option_param = bearings_key, option_param
        self.charset = memory_charset(base)
        text = SharedMemoryText(self.budget, min_length=0, charset=self.charset)
        self.observation_space = spaces.Dict(
            {**base.spaces, "memory": text, "decision_history": text, "previous_visits": text}
        )
        self._reset_state()

    def _reset_state(self) -> None:
        self.memory = ""
        self.decisions: list[str] = []
        self.visits: dict[Any, list[str]] = {}
        self.truncations = 0
        self._node: Any = None
        self._bearings: np.ndarray | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the env and the memory of visited intersections."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._reset_state()
        self._node = read_node(info)
        self._bearings = self._read_bearings(obs)
        return self._add(obs), self._info(info)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the env and note the choice made at the intersection."""
        found, text = reply_field(action, self.field)
        choice = self._choice(action)
        obs, reward, terminated, truncated, info = self.env.step(strip_key(action, self.field))
        if info.get("action_valid", True) and choice is not None:
            label = self._label(choice)
            self.decisions.append(label)
            self.visits.setdefault(self._key(self._node), []).append(label)
        if found and text is not None:
            self.memory, cut = fit_budget(clean_text(text, self.charset), self.budget)
            self.truncations += int(cut)
        self._node = read_node(info)
        self._bearings = self._read_bearings(obs)
        return self._add(obs), reward, terminated, truncated, self._info(info)

    # ------------------------------------------------------------------ helpers
    def _read_bearings(self, obs: Mapping[str, Any]) -> np.ndarray | None:
        v = obs.get(self.bearings_key) if isinstance(obs, Mapping) else None
        return None if v is None else np.asarray(v, dtype=float).reshape(-1)

    def _choice(self, action: Any) -> int | None:
        if isinstance(action, (int, np.integer)):
            table = getattr(self.env.unwrapped, "action_table", None)
            if table is not None and 0 <= int(action) < len(table):
                action = table[int(action)]
            else:
                return int(action)
        if isinstance(action, Mapping):
            v = action.get(self.option_param)
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                return int(v)
            if isinstance(v, float) and v.is_integer():
                return int(v)
        return None

    def _label(self, choice: int) -> str:
        b = self._bearings
        if b is not None and 0 <= choice < len(b) and np.isfinite(b[choice]):
            deg = float(b[choice]) % 360.0
            return f"{compass_name(deg)} ({deg:.0f}°)"
        return f"option {choice}"

    @staticmethod
    def _key(node: Any) -> Any:
        return node if isinstance(node, (int, str, float, tuple)) else repr(node)

    def _texts(self) -> dict[str, str]:
        history = "\n".join(f"{i}. {d}" for i, d in enumerate(self.decisions, start=1))
        before = self.visits.get(self._key(self._node), [])
        visits = ""
        if before:
            n = len(before)
            visits = (
                f"You have been at this intersection {n} time{'s' if n > 1 else ''} before; "
                "you went: " + ", ".join(before) + "."
            )
        out = {}
        for k, v in (("decision_history", history), ("previous_visits", visits)):
            text, cut = fit_budget(clean_text(v, self.charset), self.budget)
            self.truncations += int(cut)
            out[k] = text
        out["memory"] = self.memory
        return out

    def _add(self, obs: Mapping[str, Any]) -> dict[str, Any]:
        return {**obs, **self._texts()}

    def _info(self, info: dict[str, Any]) -> dict[str, Any]:
        info["memory_truncations"] = self.truncations
        info["decisions"] = len(self.decisions)
        return info
