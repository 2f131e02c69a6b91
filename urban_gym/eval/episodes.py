"""One evaluation episode with a built-in agent, shared by the families' evaluators.

``agent`` is ``"oracle"`` (the family's privileged oracle from
:mod:`urban_gym.baselines.oracles`, acting on ``env.unwrapped``) or ``"random"``
(:class:`~urban_gym.baselines.random_agent.RandomAgent` over the valid table entries).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

AGENTS = ("oracle", "random")


def make_policy(env: Any, agent: str, seed: int) -> Callable[[Any], Any]:
    """A policy ``observation -> action`` for ``env`` after its ``reset``."""
    if agent == "oracle":
        from urban_gym.baselines.oracles import make_oracle

        oracle = make_oracle(env)
        oracle.reset(env)
        return lambda _obs: oracle.act(env)
    if agent == "random":
        from urban_gym.baselines.random_agent import RandomAgent

        return RandomAgent(env.action_space, seed=seed).act
    raise ValueError(f"agent={agent!r} is not one of {', '.join(AGENTS)}")


def run_episode(
    env: Any,
    agent: str,
    task_index: int,
    seed: int = 0,
    agent_seed: int | None = None,
) -> dict[str, Any]:
    """Reset ``env`` to task ``task_index`` with ``seed``, run ``agent`` until the episode
    ends and return the final ``info`` (``metrics``, ``termination``, ``task``, ...).
    ``agent_seed`` seeds the random agent (default: ``seed``).

    When ``env`` records episodes (an :class:`~urban_gym.wrappers.episode_metrics.
    EpisodeMetrics` in its stack) and the agent raises, the record is written with
    termination ``agent_error`` (``interrupted`` for Ctrl-C) before the exception goes on.
    """
    obs, _ = env.reset(seed=seed, options={"task_index": task_index})
    try:
        policy = make_policy(env, agent, seed if agent_seed is None else agent_seed)
        while True:
            obs, _, terminated, truncated, info = env.step(policy(obs))
            if terminated or truncated:
                return info
    except BaseException as exc:
        _end_record(env, exc)
        raise


def _end_record(env: Any, exc: BaseException) -> None:
    """Write the open episode record of ``env``'s EpisodeMetrics (if any) for ``exc``."""
    from urban_gym.wrappers.episode_metrics import EpisodeMetrics
    from urban_gym.wrappers.stacks import find_wrapper

    metrics = find_wrapper(env, EpisodeMetrics)
    if metrics is not None and metrics.episode_open:
        reason = "agent_error" if isinstance(exc, Exception) else "interrupted"
        metrics.abort(reason, f"{type(exc).__name__}: {exc}")
