"""The language-model agent and its episode loop.

The three parts are kept apart as in BALROG: the client (:mod:`.client`) knows HTTP, the
prompt builder (:mod:`.prompt`) knows which messages to send, and :class:`LMMAgent` knows
the loop: messages -> completion -> reply text -> ``env.step(reply)``.

:func:`run_episode` drives one episode of a language-model stack
(:func:`urban_gym.wrappers.make_lm_env`) and returns its episode record. When the client
gives up (:class:`~.client.ModelError`: server down, 500s after all retries) the episode
ends with termination ``model_error`` and the record is still written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

from urban_gym.baselines.lmm.client import ChatClient, ModelError
from urban_gym.baselines.lmm.prompt import PromptBuilder, prompt_builder_for
from urban_gym.wrappers.episode_metrics import EpisodeMetrics
from urban_gym.wrappers.stacks import family_of, find_wrapper


class LMMAgent:
    """Asks the model for one reply per step.

    Args:
        client: the chat-completions client.
        prompt_builder: which messages to send (default: the family's, chosen at reset).
    """

    def __init__(self, client: ChatClient, prompt_builder: PromptBuilder | None = None) -> None:
        self.client = client
        self.prompt_builder = prompt_builder
        self._builder_given = prompt_builder is not None
        self.replies: list[dict[str, Any]] = []

    def reset(self, env: gym.Env) -> None:
        if not self._builder_given:
            self.prompt_builder = prompt_builder_for(family_of(env))
        assert self.prompt_builder is not None
        self.prompt_builder.reset()
        self.replies = []

    def act(self, env: gym.Env) -> str:
        """The model's reply text for the env's current observation (may raise
        :class:`ModelError`)."""
        assert self.prompt_builder is not None, "call reset(env) first"
        messages = self.prompt_builder.build(env)
        resp = self.client.chat(messages)
        self.prompt_builder.record(resp.text)
        self.replies.append(
            {"usage": resp.usage, "latency_s": round(resp.latency_s, 4), "attempts": resp.attempts}
        )
        return resp.text


def run_episode(
    env: gym.Env,
    agent: LMMAgent,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    max_steps: int = 10_000,
    on_step: Callable[[Any, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run one episode of a language-model stack and return its episode record.

    ``on_step(obs, info)`` is called after the reset and after every step (e.g. to collect
    GIF frames). The record gains ``usage`` (tokens and requests of this episode).
    ``max_steps`` is a safety net for envs without a step limit (ends as ``step_limit``).
    """
    metrics = find_wrapper(env, EpisodeMetrics)
    if metrics is None:
        raise ValueError("run_episode needs an EpisodeMetrics wrapper in the stack (make_lm_env)")
    usage0 = dict(agent.client.usage)
    obs, info = env.reset(seed=seed, options=options)
    agent.reset(env)
    if on_step is not None:
        on_step(obs, info)
    record: dict[str, Any] | None = None
    for _ in range(max_steps):
        try:
            reply = agent.act(env)
        except ModelError as exc:
            record = metrics.abort("model_error", str(exc))
            break
        obs, _, terminated, truncated, info = env.step(reply)
        if on_step is not None:
            on_step(obs, info)
        if terminated or truncated:
            record = info["episode"]
            break
    if record is None:
        record = metrics.abort("step_limit", f"run_episode stopped after {max_steps} steps")
    record["usage"] = {k: agent.client.usage[k] - usage0.get(k, 0) for k in agent.client.usage}
    record["model"] = agent.client.config.model
    return record
