"""Render a scheme's messages for a fixed observation (no model, no server): the first
turn of a task, images replaced by ``<image>`` so the text can be stored and compared."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from urban_gym.baselines.lmm.agent import LMMAgent

#: family -> (env id, small gym.make kwargs)
ENVS = {
    "posegraph360": ("UrbanGym/PoseGraph360-v0", {"view_size": 32, "pano_width": 128}),
    "streetgraph": ("UrbanGym/StreetGraph-v0", {"image_size": 32}),
    "citywalk": ("UrbanGym/CityWalk-v0", {"view_size": 32}),
}


def first_task(env: Any, task_type: str | None) -> Any:
    tasks = env.unwrapped.tasks
    return next(t for t in tasks if task_type is None or t.type == task_type)


def render(
    scheme: str | None,
    family: str,
    task_type: str | None = None,
    config: dict | None = None,
    prompts: dict | None = None,
) -> list[dict[str, Any]]:
    """The messages of the first step of the first task of ``task_type``."""
    env_id, kw = ENVS[family]
    core = gym.make(env_id, **kw)
    opts: dict[str, Any] = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    if scheme is not None:
        opts.update(scheme=scheme, scheme_config=config, prompts=prompts)
    agent = LMMAgent(**opts)
    try:
        stack = agent.wrap(core)
        task = first_task(core, task_type)
        stack.reset(seed=0, options={"task_id": task.id})
        agent.reset(stack, task, seed=0)
        messages = agent.prompt_builder.build(stack)
        return [_textual(m) for m in messages]
    finally:
        agent.close()
        core.close()


def _textual(message: dict[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, list):
        content = [
            p if p.get("type") == "text" else {"type": "image_url", "image_url": "<image>"}
            for p in content
        ]
    return {"role": message["role"], "content": content}


def text_of(messages: list[dict[str, Any]]) -> str:
    """All texts of the messages, joined."""
    out = []
    for m in messages:
        c = m["content"]
        out += [c] if isinstance(c, str) else [p["text"] for p in c if p.get("type") == "text"]
    return "\n".join(out)
