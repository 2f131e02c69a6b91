"""The agent protocol every evaluated agent follows, and the built-in agents.

The evaluation harness (:mod:`urban_gym.eval`) drives any agent the same way, whatever it
is -- the privileged oracle, a random policy, a language model, a trained policy, a
person:

.. code-block:: python

    face = agent.wrap(env)           # the stack the agent acts on (its "face")
    obs, info = face.reset(seed=..., options={"task_id": ...})
    agent.reset(face, task, seed=agent_seed)
    while not done:
        action = agent.act(obs, info)
        obs, reward, terminated, truncated, info = face.step(action)
    agent.close()                    # once, when the run is over

:class:`Agent` is that protocol. ``wrap(env)`` receives the core environment (an
``UrbanEnv`` made with ``gym.make``) and returns the stack the agent acts on: the env
itself (oracle, random), the language-model face (:func:`urban_gym.wrappers.make_lmm_env`)
or the RL face (:func:`urban_gym.wrappers.rl.make_rl_env`). ``config()`` is what the run's
manifest records about the agent (never a secret); ``usage()`` the token counts so far
(zeros for agents that use no model).

Agents are named by a spec string (:func:`load_agent`): ``oracle``, ``random``, ``lmm``
(:class:`urban_gym.baselines.lmm.agent.LMMAgent`), ``sb3:PATH``
(:class:`urban_gym.baselines.sb3_agent.SB3Agent`) or ``module:Class`` (any class with the
protocol, constructed with the spec's keyword arguments).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym

from urban_gym.errors import AgentGaveUp, InputError

#: The token counters of :meth:`Agent.usage`.
USAGE_KEYS: tuple[str, ...] = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "requests",
    "retries",
)


def zero_usage() -> dict[str, int]:
    """A usage dict with every counter of :data:`USAGE_KEYS` at 0."""
    return dict.fromkeys(USAGE_KEYS, 0)


@runtime_checkable
class Agent(Protocol):
    """What the evaluation harness needs of an agent (see the module docstring)."""

    kind: str

    def wrap(self, env: gym.Env) -> gym.Env:
        """The stack this agent acts on, built on the core ``env``."""
        ...

    def reset(self, env: gym.Env, task: Any, seed: int | None = None) -> None:
        """A new episode of ``task`` has started on ``env`` (the wrapped stack)."""
        ...

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        """The action for observation ``obs`` (``info``: the last ``info``)."""
        ...

    def close(self) -> None:
        """The run is over: release clients, files, models."""
        ...

    def config(self) -> dict[str, Any]:
        """What the manifest records about the agent (JSON-serialisable, no secrets)."""
        ...

    def usage(self) -> dict[str, int]:
        """Token counters so far (:data:`USAGE_KEYS`), zeros for agents without a model."""
        ...


class BaseAgent:
    """Defaults of the protocol: acts on the core env, no model, nothing to close."""

    kind = "agent"

    def wrap(self, env: gym.Env) -> gym.Env:
        """The env stack this agent acts on, built on ``env`` (the plain env by default)."""
        return env

    def reset(self, env: gym.Env, task: Any, seed: int | None = None) -> None:
        """Start an episode of ``task`` on ``env`` (after its reset); ``seed`` seeds the agent."""
        self.env = env

    def act(self, obs: Any, info: dict[str, Any]) -> Any:  # pragma: no cover - abstract
        """The action for observation ``obs`` and the env's last ``info``."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the agent holds (clients, models); the base holds nothing."""
        pass

    def config(self) -> dict[str, Any]:
        """What the run manifest records of this agent (never credentials)."""
        return {"kind": self.kind}

    def usage(self) -> dict[str, int]:
        """Token counters so far: zeros for an agent that calls no model."""
        return zero_usage()


class OracleAgent(BaseAgent):
    """The family's privileged oracle (:mod:`urban_gym.baselines.oracles`): structured
    actions from ground truth.
    """

    kind = "oracle"

    def reset(self, env: gym.Env, task: Any, seed: int | None = None) -> None:
        """Make the family's oracle for ``env`` and reset it."""
        from urban_gym.baselines.oracles import make_oracle

        self.env = env
        self.oracle = make_oracle(env)
        self.oracle.reset(env)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        """The oracle's structured action, from the env's privileged state."""
        return self.oracle.act(self.env)


class RandomPolicyAgent(BaseAgent):
    """Uniformly random valid action indices
    (:class:`~urban_gym.baselines.random_agent.RandomAgent`), seeded per episode by the
    harness (``reset(..., seed=)``).
    """

    kind = "random"

    def reset(self, env: gym.Env, task: Any, seed: int | None = None) -> None:
        """A random policy over ``env``'s valid table entries, seeded with ``seed``."""
        from urban_gym.baselines.random_agent import RandomAgent

        self.env = env
        self.policy = RandomAgent(env.action_space, seed=seed)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        """A uniformly random valid action index."""
        return self.policy.act(obs)


#: Spec -> entry point of the built-in agents.
BUILTIN_AGENTS: dict[str, str] = {
    "oracle": "urban_gym.baselines.agents:OracleAgent",
    "random": "urban_gym.baselines.agents:RandomPolicyAgent",
    "sb3": "urban_gym.baselines.sb3_agent:SB3Agent",
    "lmm": "urban_gym.baselines.lmm.agent:LMMAgent",
}


def agent_kind(spec: str) -> str:
    """The kind named by an agent spec: ``oracle``, ``random``, ``lmm``, ``sb3`` or
    ``custom`` (``module:Class``); :class:`UrbanGymError` naming a bad spec.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"agent spec {spec!r} must be a non-empty string")
    if spec in BUILTIN_AGENTS:
        return spec
    if spec.startswith("sb3:"):
        if not spec[4:]:
            raise InputError("agent spec 'sb3:' needs a checkpoint path: sb3:PATH")
        return "sb3"
    module, _, cls = spec.partition(":")
    if module and cls and "/" not in module:
        return "custom"
    raise InputError(
        f"agent spec {spec!r} is not one of: oracle, random, lmm, sb3:PATH, module:Class"
    )


def load_agent(spec: str, options: Mapping[str, Any] | None = None) -> Agent:
    """A new agent from its spec (see the module docstring); ``options`` are keyword
    arguments of its class (e.g. the client settings of ``lmm``).
    """
    kind = agent_kind(spec)
    kwargs = dict(options or {})
    if kind == "sb3":
        module, _, name = BUILTIN_AGENTS["sb3"].partition(":")
        return getattr(importlib.import_module(module), name)(spec[4:], **kwargs)
    entry = BUILTIN_AGENTS.get(spec, spec)
    module, _, name = entry.partition(":")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"agent {spec!r}: cannot load {entry!r} ({exc})") from exc
    try:
        agent = cls(**kwargs)
    except TypeError as exc:
        raise InputError(f"agent {spec!r}: bad options {sorted(kwargs)} ({exc})") from exc
    missing = [m for m in ("reset", "act") if not callable(getattr(agent, m, None))]
    if missing:
        raise InputError(f"agent {spec!r}: {type(agent).__name__} has no {missing} method")
    return _complete(agent, kind)


def _complete(agent: Any, kind: str) -> Agent:
    """Give a user's agent class the optional parts of the protocol it lacks (and a
    ``reset`` that takes ``seed`` when its own does not).
    """
    import inspect

    if not isinstance(getattr(agent, "kind", None), str):
        agent.kind = kind
    try:
        params: Mapping[str, inspect.Parameter] = inspect.signature(agent.reset).parameters
    except (TypeError, ValueError):
        params = {}
    takes_seed = "seed" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())
    if not takes_seed:
        own_reset = agent.reset
        agent.reset = lambda env, task, seed=None: own_reset(env, task)
    for name, default in (
        ("wrap", lambda env: env),
        ("close", lambda: None),
        ("usage", zero_usage),
        ("config", lambda: {"kind": agent.kind, "class": type(agent).__qualname__}),
    ):
        if not callable(getattr(agent, name, None)):
            setattr(agent, name, default)
    return agent


__all__ = [
    "BUILTIN_AGENTS",
    "AgentGaveUp",
    "USAGE_KEYS",
    "Agent",
    "BaseAgent",
    "OracleAgent",
    "RandomPolicyAgent",
    "agent_kind",
    "load_agent",
    "zero_usage",
]
