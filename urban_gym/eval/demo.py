"""``urban-gym demo``: one episode of each family through the language-model face.

On Helsinki, for each family the demo starts the scripted chat-completions server
(:class:`~urban_gym.baselines.lmm.server.ScriptedServer`) on a free loopback port, runs
one episode of the language-model agent a real model would get
(:class:`~urban_gym.baselines.lmm.agent.LMMAgent`: client, prompt builder, the
family's language-model face with its views sized for a multimodal model) in the one
episode loop (:func:`~urban_gym.eval.trace.run_episode`), prints the episode's metrics and
writes a GIF. A GIF frame is the stack's ``render()`` -- the frame a
person watches, the one ``gymnasium.wrappers.RecordVideo`` would record: the map of a
:class:`~urban_gym.wrappers.map_observation.MapObservation` showing the task's area, its
markers and the agent's track, the env's own frame at its right -- with, under it, the
images the model was sent at their own resolution (so their signs read as the model's
do; a stack of views in rows of three), and a status line. The map is drawn
for the GIF only (``observe=False``); the model sees what its family's observation holds.
Each server is stopped after its episode. The episode records (the harness's) are appended
to ``<out>/episodes.jsonl`` and their traces to ``<out>/traces/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.baselines.lmm.agent import LMMAgent
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.eval.records import RunDir
from urban_gym.eval.trace import run_episode
from urban_gym.render import frame as F
from urban_gym.wrappers.stacks import lmm_env_kwargs


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
    run_dir = RunDir(out)
    try:
        for family in families:
            env_id, kwargs, options = cases[family]
            record = _episode(run_dir, family, env_id, kwargs, options, seed, wrap, gif, echo)
            records.append(record)
            echo(format_record(record))
    finally:
        run_dir.close()
    echo(f"episode records in {out / 'episodes.jsonl'} (traces in {out / 'traces'})")
    return records


def _episode(
    run_dir: RunDir,
    family: str,
    env_id: str,
    kwargs: dict[str, Any],
    options: dict[str, Any] | None,
    seed: int,
    wrap: str,
    gif: bool,
    echo: Callable[[str], None],
) -> dict[str, Any]:
    """One family's episode: its scripted server, the agent, the harness's loop, the GIF."""
    import gymnasium as gym

    kwargs = lmm_env_kwargs(env_id, kwargs)
    with ScriptedServer(env_id=env_id, env_kwargs=kwargs, wrap=wrap) as server:
        echo(f"{family}: scripted model server at {server.url} (replies: {wrap})")
        agent = LMMAgent(
            base_url=server.url, model=server.model_name, map=WATCH_MAP if gif else None
        )
        env = gym.make(env_id, **({**kwargs, "render_mode": "rgb_array"} if gif else kwargs))
        face = agent.wrap(env)
        movie = _Movie(face) if gif else None
        try:
            record, trace = run_episode(
                face, agent, seed=seed, options=options, on_step=movie.add if movie else None
            )
        finally:
            agent.close()
            face.close()
    record["env_id"] = env_id
    if movie is not None:
        record["gif"] = str(movie.write(run_dir.path / f"{family}.gif"))
    record["trace"] = run_dir.write_trace(record["key"], trace)
    run_dir.append(record)
    return record


def format_record(rec: dict[str, Any]) -> str:
    """A few lines on one episode: task, outcome, metrics, tokens, GIF."""
    m = rec.get("metrics", {})
    shown = {
        k: (round(v, 3) if isinstance(v, float) else v)
        for k, v in m.items()
        if isinstance(v, (int, float, bool))
    }
    lines = [
        f"{rec.get('family', '?'):<13} {rec.get('env_id')}  task {rec.get('task_id')} "
        f"({rec.get('task_type')}, {rec.get('difficulty')})",
        f"  termination={rec.get('termination')} success={rec.get('is_success')} "
        f"steps={rec.get('steps')} tokens={(rec.get('tokens') or {}).get('total_tokens', 0)}",
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
