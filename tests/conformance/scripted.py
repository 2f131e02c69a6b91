"""Episodes of the language-model agent against the loopback scripted server, read back
from what the server received (``ScriptedServer(record_requests=True)``)."""

from __future__ import annotations

from typing import Any

from urban_gym.baselines.lmm.agent import LMMAgent


def scripted_episode(core, server, task, steps: int, *, full: bool = False, **options: Any):
    """Up to ``steps`` steps of ``task`` on ``core`` by an :class:`LMMAgent` with
    ``options`` answered by ``server``: ``(requests, face description)``, the requests
    this agent sent (``{"messages", "kind", "episode"}``; ``kind`` None for an action
    request). ``full``: the episode must not end before the steps ran.
    """
    agent = LMMAgent(base_url=server.url, model="m", **options)
    start = len(server.recorded)
    try:
        face = agent.wrap(core)
        face.reset(seed=0, options={"task_id": task.id})
        agent.reset(face, task, seed=0)
        for _ in range(steps):
            _, _, terminated, truncated, _ = face.step(agent.act(None, {}))
            if terminated or truncated:
                assert not full, "the episode ended before the steps ran"
                break
        description = agent.describe_face(core)
    finally:
        agent.close()
    mine = [r for r in server.recorded[start:] if agent.nonce in (r["episode"] or "")]
    return mine, description
