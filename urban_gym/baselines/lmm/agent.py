"""The language-model agent and its episode loop.

The three parts are kept apart as in BALROG: the client (:mod:`.client`) knows HTTP, the
prompt builder (:mod:`.prompt`) knows which messages to send, and :class:`LMMAgent` knows
the loop: messages -> completion -> reply text -> ``env.step(reply)``.

:func:`run_episode` drives one episode of a language-model stack
(:func:`urban_gym.wrappers.make_lm_env`) and returns its episode record. When the client
gives up (:class:`~.client.ModelError`: server down, 500s after all retries) the episode
ends with termination ``model_error`` and the record is still written; so it is when
anything else interrupts the loop (see :func:`run_episode`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    record_fields: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run one episode of a language-model stack and return its episode record.

    ``on_step(obs, info)`` is called after the reset and after every step (e.g. to collect
    GIF frames). ``max_steps`` is a safety net for envs without a step limit (ends as
    ``step_limit``). The record -- the line written to the record file as well as the
    returned dict -- holds ``model`` (the configured model name), ``usage`` (this
    episode's ``prompt_tokens``, ``completion_tokens``, ``total_tokens``, ``requests``,
    ``retries``, ``failures``), ``model_latency_s`` (seconds spent waiting for
    completions) and ``record_fields``; each step's record holds ``model_usage`` (the
    tokens, latency in seconds and attempts of the reply it carried out).

    How the episode ends: the env ends it; the client gives up (:class:`ModelError`:
    ``model_error`` with the reason in ``error``); anything else raised in the loop
    (by the agent, ``on_step`` or the env) writes the record as ``agent_error`` /
    ``env_error`` (``interrupted`` for Ctrl-C) and is raised again.
    """
    metrics = find_wrapper(env, EpisodeMetrics)
    if metrics is None:
        raise ValueError("run_episode needs an EpisodeMetrics wrapper in the stack (make_lm_env)")
    usage0 = dict(agent.client.usage)
    latency = 0.0

    def annotate() -> None:
        usage = {k: agent.client.usage[k] - usage0.get(k, 0) for k in agent.client.usage}
        metrics.annotate(
            model=agent.client.config.model,
            usage=usage,
            model_latency_s=round(latency, 4),
            **dict(record_fields or {}),
        )

    obs, info = env.reset(seed=seed, options=options)
    annotate()
    record: dict[str, Any] | None = None
    try:
        agent.reset(env)
        if on_step is not None:
            on_step(obs, info)
        for _ in range(max_steps):
            try:
                reply = agent.act(env)
            except ModelError as exc:
                annotate()
                record = metrics.abort("model_error", str(exc))
                break
            last = agent.replies[-1] if agent.replies else {}
            latency += float(last.get("latency_s", 0.0))
            annotate()
            metrics.note_step(model_usage=last)
            obs, _, terminated, truncated, info = env.step(reply)
            if terminated or truncated:
                record = info["episode"]
            if on_step is not None:
                on_step(obs, info)
            if record is not None:
                break
        if record is None:
            annotate()
            record = metrics.abort("step_limit", f"run_episode stopped after {max_steps} steps")
    except BaseException as exc:
        if metrics.episode_open:  # an env error was already written by EpisodeMetrics
            annotate()
            reason = "agent_error" if isinstance(exc, Exception) else "interrupted"
            metrics.abort(reason, f"{type(exc).__name__}: {exc}")
        raise
    return record
