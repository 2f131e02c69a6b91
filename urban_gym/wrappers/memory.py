"""Memory texts carried from one step to the next for language-model agents.

* :class:`ReflectionMemory` (PoseGraph360-style agents): the agent writes its memory each
  step (the ``memory`` field of its reply, or a ``"memory"`` key in a dict action); the
  wrapper shows it back verbatim in the next observation under ``"memory"``.
* :class:`AgentNavMemory` (StreetGraph, after CityNav's AgentNav): the Markovian memory
  (the agent's own state m_t, carried to the next step), the decision history (the compass
  direction chosen at each intersection) and previous visits (on returning to an
  intersection: how often it was visited and the choices made there before).

Memory texts are ``gymnasium.spaces.Text`` entries of the observation. Their charset is
:data:`MEMORY_CHARSET` (printable ASCII, Latin-1 letters, common punctuation, arrows) plus
every character of the wrapped env's own ``Text`` entries, so the city's names in any
script survive (see :func:`memory_charset`); other characters are replaced by ``?`` so the
observation stays inside its space.

**Truncation rule.** A memory longer than its character budget keeps its *end*: the most
recent notes survive, the oldest are cut, and the text starts with :data:`TRUNCATION_MARK`
so the agent sees that something was cut. Each cut is counted in
``info["memory_truncations"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urban_gym.envs.spaces import SharedMemoryText
from urban_gym.envs.text import BASE_CHARSET
from urban_gym.errors import UrbanGymError
from urban_gym.strict_json import dumps
from urban_gym.wrappers.state import read_node

#: Characters allowed in memory texts whatever the env (others become "?").
MEMORY_CHARSET = BASE_CHARSET | frozenset("→←↑↓")


def memory_charset(space: spaces.Dict) -> frozenset[str]:
    """:data:`MEMORY_CHARSET` plus the characters of every ``Text`` entry of ``space`` (the
    wrapped env's instruction: its city's names, in whatever script).
    """
    chars = set(MEMORY_CHARSET)
    for sub in space.spaces.values():
        if isinstance(sub, spaces.Text):
            chars |= sub.character_set
    return frozenset(chars)


#: Prefix of a memory cut to its budget.
TRUNCATION_MARK = "[...] "


#: Bounds for writing a non-string memory (a dict, a list...) as JSON text.
_MEMORY_JSON_LIMITS = {"max_depth": 16, "max_items": 500, "max_chars": 20_000}


def memory_text(value: Any) -> str:
    """A memory value as text: a string as it is, None as ``""``, anything else as one
    line of JSON, bounded (16 levels of nesting, 500 entries per container, 20,000
    characters per string; :func:`urban_gym.strict_json.dumps`), so that a value nested
    5,000 deep or an integer of 5,000 digits is text, not an exception.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return dumps(value, **_MEMORY_JSON_LIMITS)


def clean_text(text: Any, charset: frozenset[str] = MEMORY_CHARSET) -> str:
    """``text`` (see :func:`memory_text`) with characters outside ``charset`` replaced
    by ``?``.
    """
    s = memory_text(text)
    if all(c in charset for c in s):
        return s
    return "".join(c if c in charset else "?" for c in s)


def fit_budget(text: str, budget: int) -> tuple[str, bool]:
    """``(text, cut)``: ``text`` itself if it fits in ``budget`` characters, else its last
    characters after :data:`TRUNCATION_MARK`, exactly ``budget`` long.
    """
    if len(text) <= budget:
        return text, False
    if budget <= len(TRUNCATION_MARK):
        return text[len(text) - budget :], True
    keep = budget - len(TRUNCATION_MARK)
    return TRUNCATION_MARK + text[len(text) - keep :], True


def _dict_space(env: gym.Env, who: str) -> spaces.Dict:
    space = env.observation_space
    if not isinstance(space, spaces.Dict):
        raise UrbanGymError(f"{who} needs a Dict observation space, got {type(space).__name__}")
    return space


def _reply_field(action: Any, name: str) -> tuple[bool, Any]:
    """``(found, value)`` of a reply field from a ReplyAction or a dict action."""
    reply = getattr(action, "reply", None)
    if reply is not None and name in getattr(reply, "fields", {}):
        return True, reply.fields[name]
    if isinstance(action, Mapping) and name in action:
        return True, action[name]
    return False, None


def _strip_key(action: Any, name: str) -> Any:
    """A plain dict action without ``name`` (ReplyActions and others pass unchanged)."""
    if type(action) is dict and name in action:
        return {k: v for k, v in action.items() if k != name}
    return action


class ReflectionMemory(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """The agent's own memory, kept verbatim into the next observation.

    Args:
        env: an env with a Dict observation space.
        budget: the most characters kept (see the truncation rule in the module docstring).
        key: the observation key of the memory text.
        field: the reply field (or dict-action key) the agent writes its memory in.

    An action that does not write the field, or writes it empty (``""`` or only blanks),
    leaves the memory unchanged: 360CityArena's reply format says an empty ``memory`` means
    "do not update". ``info`` gains
    ``memory_truncations`` (count this episode) and ``memory_chars``.
    """

    def __init__(
        self, env: gym.Env, budget: int = 2000, key: str = "memory", field: str = "memory"
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, budget=budget, key=key, field=field)
        gym.Wrapper.__init__(self, env)
        if int(budget) < 1:
            raise UrbanGymError(f"ReflectionMemory budget={budget!r} must be >= 1 character")
        base = _dict_space(env, "ReflectionMemory")
        if key in base.spaces:
            raise UrbanGymError(f"the observation already has a {key!r} entry")
        self.budget, self.key, self.field = int(budget), key, field
        self.charset = memory_charset(base)
        self.observation_space = spaces.Dict(
            {**base.spaces, key: SharedMemoryText(self.budget, min_length=0, charset=self.charset)}
        )
        self.memory = ""
        self.truncations = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the env and empty the memory."""
        obs, info = self.env.reset(seed=seed, options=options)
        self.memory, self.truncations = "", 0
        return self._add(obs), self._info(info)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the env; the reply's memory field, if any and not empty, replaces the memory."""
        found, text = _reply_field(action, self.field)
        obs, reward, terminated, truncated, info = self.env.step(_strip_key(action, self.field))
        if found and text is not None and not (isinstance(text, str) and not text.strip()):
            self.write(text)
        return self._add(obs), reward, terminated, truncated, self._info(info)

    def write(self, text: Any) -> str:
        """Replace the memory with ``text`` (a non-string as JSON, see :func:`memory_text`;
        cleaned and fitted to the budget).
        """
        self.memory, cut = fit_budget(clean_text(text, self.charset), self.budget)
        self.truncations += int(cut)
        return self.memory

    def _add(self, obs: Mapping[str, Any]) -> dict[str, Any]:
        return {**obs, self.key: self.memory}

    def _info(self, info: dict[str, Any]) -> dict[str, Any]:
        info["memory_truncations"] = self.truncations
        info["memory_chars"] = len(self.memory)
        return info


class AgentNavMemory(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """AgentNav's three memory texts for intersection-graph navigation (StreetGraph).

    Args:
        env: a StreetGraph-like env: Dict observations with the compass bearing of each
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
        base = _dict_space(env, "AgentNavMemory")
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
        found, text = _reply_field(action, self.field)
        choice = self._choice(action)
        obs, reward, terminated, truncated, info = self.env.step(_strip_key(action, self.field))
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


_COMPASS = (
    "north",
    "north-east",
    "east",
    "south-east",
    "south",
    "south-west",
    "west",
    "north-west",
)


def compass_name(bearing: float) -> str:
    """The 8-point compass name of a bearing in degrees (0 = north, 90 = east)."""
    return _COMPASS[int(((bearing % 360.0) + 22.5) // 45.0) % 8]
