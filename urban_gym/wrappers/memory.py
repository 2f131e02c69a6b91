"""Memory texts carried from one step to the next for language-model agents.

:class:`ReflectionMemory`: the agent writes its memory each step (the ``memory`` field of
its reply, or a ``"memory"`` key in a dict action); the wrapper shows it back verbatim in
the next observation under ``"memory"``. A family may define memories of its own (named in
:meth:`~urban_gym.tasks.families.Family.lmm_memories`) from the helpers here: the charset,
the budget and its truncation rule.

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
from gymnasium import spaces

from urban_gym.envs.spaces import SharedMemoryText, dict_space
from urban_gym.envs.text import BASE_CHARSET
from urban_gym.errors import InputError
from urban_gym.strict_json import dumps

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


def reply_field(action: Any, name: str) -> tuple[bool, Any]:
    """``(found, value)`` of a reply field from a ReplyAction or a dict action."""
    reply = getattr(action, "reply", None)
    if reply is not None and name in getattr(reply, "fields", {}):
        return True, reply.fields[name]
    if isinstance(action, Mapping) and name in action:
        return True, action[name]
    return False, None


def strip_key(action: Any, name: str) -> Any:
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
            raise InputError(f"ReflectionMemory budget={budget!r} must be >= 1 character")
        base = dict_space(env, "ReflectionMemory")
        if key in base.spaces:
            raise InputError(f"the observation already has a {key!r} entry")
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
        found, text = reply_field(action, self.field)
        obs, reward, terminated, truncated, info = self.env.step(strip_key(action, self.field))
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
