"""``urban-gym demo``: one episode of each family through the language-model face.

On Helsinki, the demo starts the scripted chat-completions server
(:class:`~urban_gym.baselines.lmm.server.ScriptedServer`) on a free loopback port, and for
each family tells it which episode to script (``POST /v1/scripted/episode``), drives the
episode with the same client, prompt builder and agent loop a real model would get
(:func:`~urban_gym.baselines.lmm.agent.run_episode`), prints the episode's metrics and
writes a GIF. The envs are made by :func:`~urban_gym.wrappers.make_lmm_env`, so the model
gets each family's language-model views (sized for a multimodal model, not for RL). A GIF frame is the stack's ``render()`` -- the frame a
person watches, the one ``gymnasium.wrappers.RecordVideo`` would record: the map of a
:class:`~urban_gym.wrappers.map_observation.MapObservation` showing the task's area, its
markers and the agent's track, the env's own frame at its right -- with, under it, the
images the model was sent at their own resolution (so their signs read as the model's
do; a stack of views in rows of three), and a status line. The map is drawn
for the GIF only (``observe=False``); the model sees what its family's observation holds.
The server is stopped at the end. Episode records are appended to ``<out>/episodes.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from urban_gym.baselines.lmm.agent import LMMAgent, run_episode
from urban_gym.baselines.lmm.client import ChatClient, ClientConfig
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.render import frame as F
from urban_gym.wrappers.stacks import make_lmm_env


def demo_cases() -> dict[str, tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """Family -> (env id, gym.make kwargs, reset options): each registered family's demo
    episode (:mod:`urban_gym.tasks.families`: short, visual Helsinki episodes).
    """
    from urban_gym.tasks.families import FAMILIES

    out = {}
    for f in FAMILIES.values():
        d = f.demo()
        if d is not None:
            out[f.name] = (
                d.env_id,
                dict(d.env_kwargs),
                None if d.options is None else dict(d.options),
            )
    return out


PANEL = 256  # pixels: side of the GIF's map panel
#: the map beside the env's frame in the GIF: the task's area with its markers and track,
#: not part of the observation
WATCH_MAP: dict[str, Any] = {
    "view": "task",
    "size": PANEL,
    "markers": "task",
    "trajectory": True,
    "observe": False,
}
MAX_FRAMES = 120


def run_demo(
    out: str | Path = "demo_out",
    seed: int = 0,
    wrap: str = "mixed",
    families: Sequence[str] | None = None,
    gif: bool = True,
    cases: dict[str, tuple[str, dict[str, Any], dict[str, Any] | None]] | None = None,
    echo: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Run the demo (see the module docstring); returns the episode records."""
    cases = {**demo_cases(), **(cases or {})}
    families = list(cases) if families is None else list(families)
    unknown = [f for f in families if f not in cases]
    if unknown:
        from urban_gym.errors import InputError

        raise InputError(f"unknown families {unknown}; known: {', '.join(cases)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    records: list[dict[str, Any]] = []
    with ScriptedServer(wrap=wrap) as server:
        echo(f"scripted model server at {server.url} (replies: {wrap})")
        client = ChatClient(ClientConfig(base_url=server.url, model=server.model_name))
        try:
            for family in families:
                env_id, kwargs, options = cases[family]
                r = httpx.post(
                    server.url + "/scripted/episode",
                    timeout=300.0,
                    json={
                        "env_id": env_id,
                        "env_kwargs": kwargs,
                        "seed": seed,
                        "options": options,
                    },
                )
                if r.status_code != 200:
                    raise RuntimeError(f"the scripted server could not start {env_id}: {r.text}")
                env = make_lmm_env(
                    env_id,
                    env_kwargs={**kwargs, "render_mode": "rgb_array"} if gif else kwargs,
                    map_observation=WATCH_MAP if gif else False,
                    record_path=out / "episodes.jsonl",
                )
                movie = _Movie(env) if gif else None
                # family and GIF path go on the record line itself (the GIF is written next)
                fields = {"family": family}
                if movie is not None:
                    fields["gif"] = str(out / f"{family}.gif")
                rec = run_episode(
                    env,
                    LMMAgent(client),
                    seed=seed,
                    options=options,
                    on_step=movie.add if movie else None,
                    record_fields=fields,
                )
                env.close()
                if movie is not None:
                    movie.write(out / f"{family}.gif")
                records.append(rec)
                echo(format_record(rec))
        finally:
            client.close()
    echo(f"server stopped; episode records in {out / 'episodes.jsonl'}")
    return records


def format_record(rec: dict[str, Any]) -> str:
    """A few lines on one episode: task, outcome, metrics, tokens, GIF."""
    task = rec.get("task") or {}
    m = rec.get("metrics", {})
    shown = {
        k: (round(v, 3) if isinstance(v, float) else v)
        for k, v in m.items()
        if isinstance(v, (int, float, bool))
    }
    lines = [
        f"{rec.get('family', '?'):<13} {rec.get('env_id')}  task {task.get('id')} "
        f"({task.get('type')}, {task.get('difficulty')})",
        f"  {task.get('instruction', '')[:110]}",
        f"  termination={rec.get('termination')} success={rec.get('is_success')} "
        f"steps={rec.get('l')} tokens={rec.get('usage', {}).get('total_tokens', 0)}",
        "  metrics " + json.dumps(shown, ensure_ascii=False),
    ]
    if rec.get("gif"):
        lines.append(f"  gif {rec['gif']}")
    return "\n".join(lines)


def model_images(obs: Any) -> np.ndarray | None:
    """The images of an observation the language model is sent, at their own resolution:
    the ``view``, or the street ``views`` that hold an image, in rows of three (None when
    the observation has no image).
    """
    if not isinstance(obs, dict):
        return None
    view = obs.get("view")
    if isinstance(view, np.ndarray) and view.ndim == 3:
        return view
    views = obs.get("views")
    if isinstance(views, np.ndarray) and views.ndim == 4:
        shown = [v for v in views if v.any()]
        if shown:
            return F.grid(shown, 3, gap=4)
    return None


class _Movie:
    """Collects GIF frames: the stack's ``render()`` with a status line under it."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.frames: list[np.ndarray] = []

    def add(self, obs: Any, info: dict[str, Any]) -> None:
        frame = self.env.render()
        seen = model_images(obs)
        if seen is not None:
            frame = F.vstack([frame, seen], gap=4)
        self.frames.append(F.caption(frame, self._caption(info)))

    def _caption(self, info: dict[str, Any]) -> str:
        u = self.env.unwrapped
        steps = len(self.frames)
        status = "" if info.get("action_valid", True) else "  (invalid action)"
        return f"{u.task.family}  {u.task.id}  step {steps}{status}"

    def write(self, path: Path) -> Path:
        import imageio.v3 as iio

        frames = self.frames
        if len(frames) > MAX_FRAMES:
            keep = np.linspace(0, len(frames) - 1, MAX_FRAMES).round().astype(int)
            frames = [frames[i] for i in keep]
        frames = F.pad_frames(frames)  # a GIF has one size: pad narrower frames
        durations = [400] * (len(frames) - 1) + [1500]
        iio.imwrite(path, frames, duration=durations, loop=0)
        return path
