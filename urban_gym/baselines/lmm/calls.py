"""The requests of a language-model agent that are not an action: their kinds, how a
request says which kind it is, and how an episode names itself to the endpoint.

Some schemes (:mod:`urban_gym.baselines.lmm.schemes`) make calls besides the action of
each step: AgentNav's self-positioning every third decision, UrbanGround's final answer
after ``terminate``, Reflexion's reflection after a failed attempt, the GEPA optimiser's
prompt revision, Self-Reflection's review of each draft decision, and the perception,
reflection and planning calls of PReP (and of AgentNav's multi-agent prompt variant). Each such request opens its system message with a fixed heading
(:data:`CALL_HEADINGS`); the scripted server (:mod:`.server`) recognises it by that
heading (:func:`call_kind`) and answers from ground truth instead of stepping the
episode. The headings are plain Markdown headings, so a real model reads them as the
title of its instructions.

Every request of an episode in the harness carries the header :data:`EPISODE_HEADER`
(``{"seed": ..., "task_id": ...}`` as JSON): a real endpoint ignores it; the scripted
server keeps one env in lockstep per episode it names, so episodes may run concurrently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

#: The HTTP header naming the episode a request belongs to.
EPISODE_HEADER = "X-Urban-Gym-Episode"

#: Call kind -> the first line of its system message.
CALL_HEADINGS: dict[str, str] = {
    "self_positioning": "# Self-positioning",
    "final_answer": "# Final answer",
    "reflection": "# Reflection on a failed attempt",
    "prompt_revision": "# Revising the instructions",
    "draft_review": "# Reviewing a draft decision",
    "perception": "# Perception",
    "memory_reflection": "# Reflecting on what you remember",
    "planning": "# Route planning",
}


def call_kind(messages: Sequence[Any]) -> str | None:
    """The kind of a non-action request (its system message's first line is one of
    :data:`CALL_HEADINGS`), or None for an action request.
    """
    if not messages or not isinstance(messages[0], Mapping):
        return None
    if messages[0].get("role") != "system":
        return None
    content = messages[0].get("content")
    if not isinstance(content, str):
        return None
    first = content.split("\n", 1)[0].strip()
    for kind, heading in CALL_HEADINGS.items():
        if first == heading:
            return kind
    return None


def episode_header(seed: int | None, task_id: str | None, run: str | None = None) -> dict[str, str]:
    """The header naming an episode (``{EPISODE_HEADER: '{"seed": 3, "task_id": "t"}'}``);
    ASCII-only JSON, so any task id fits in an HTTP header. ``run`` (an agent's random
    nonce) tells apart two runs of the same episode against one server.
    """
    value: dict[str, object] = {"seed": seed, "task_id": task_id}
    if run is not None:
        value["run"] = run
    return {EPISODE_HEADER: json.dumps(value, sort_keys=True)}


def read_episode_header(value: str | None) -> tuple[int | None, str] | None:
    """``(seed, task_id)`` from the header's value; None when absent or malformed."""
    if not value:
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    if not isinstance(data, Mapping) or not isinstance(data.get("task_id"), str):
        return None
    seed = data.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        return None
    return seed, data["task_id"]


def user_text(messages: Sequence[Any]) -> str:
    """The text parts of the last user message."""
    for msg in reversed(messages):
        if isinstance(msg, Mapping) and msg.get("role") == "user":
            c = msg.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):
                return "\n".join(str(p.get("text", "")) for p in c if isinstance(p, Mapping))
    return ""
