"""``urban-gym demo``: one episode of each family through the language-model face.

On Helsinki, the demo starts the scripted chat-completions server
(:class:`~urban_gym.baselines.lmm.server.ScriptedServer`) on a free loopback port, and for
each family tells it which episode to script (``POST /v1/scripted/episode``), drives the
episode with the same client, prompt builder and agent loop a real model would get
(:func:`~urban_gym.baselines.lmm.agent.run_episode`), prints the episode's metrics and
writes a GIF: the agent's view on the left, a map with its track on the right. The map is
drawn for the GIF only; the model sees what its family's observation holds. The server is
stopped at the end. Episode records are appended to ``<out>/episodes.jsonl``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from urban_gym.baselines.lmm.agent import LMMAgent, run_episode
from urban_gym.baselines.lmm.client import ChatClient, ClientConfig
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.wrappers.stacks import make_lm_env
from urban_gym.wrappers.state import read_pose, task_markers


def demo_cases() -> dict[str, tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """family -> (env id, gym.make kwargs, reset options): each registered family's demo
    episode (:mod:`urban_gym.tasks.families`: short, visual Helsinki episodes)."""
    from urban_gym.tasks.families import FAMILIES

    return {
        f.name: (
            f.demo_env_id,
            dict(f.demo_kwargs),
            None if f.demo_options is None else dict(f.demo_options),
        )
        for f in FAMILIES.values()
        if f.demo_env_id is not None
    }


PANEL = 256  # pixels: height of the GIF's panels
MAX_FRAMES = 120


def run_demo(
    out: str | Path = "demo_out",
    seed: int = 0,
    wrap: str = "mixed",
    families: Sequence[str] = ("posegraph360", "streetgraph", "citywalk"),
    gif: bool = True,
    cases: dict[str, tuple[str, dict[str, Any], dict[str, Any] | None]] | None = None,
    echo: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Run the demo (see the module docstring); returns the episode records."""
    cases = {**demo_cases(), **(cases or {})}
    unknown = [f for f in families if f not in cases]
    if unknown:
        from urban_gym.errors import UrbanGymError

        raise UrbanGymError(f"unknown families {unknown}; known: {', '.join(cases)}")
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
                env = make_lm_env(env_id, env_kwargs=kwargs, record_path=out / "episodes.jsonl")
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


class _Movie:
    """Collects GIF frames: the view (left) and a map with the track (right)."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.frames: list[np.ndarray] = []
        self.track: list[tuple[float, float]] = []
        self._renderer: Any = None
        self._window: tuple[tuple[float, float], float] | None = None

    def add(self, obs: Any, info: dict[str, Any]) -> None:
        pose = read_pose(info)
        if pose is not None:
            self.track.append((pose.x, pose.y))
        view = _view_image(obs)
        panels = [view] if view is not None else []
        panels.append(self._map(pose))
        frame = np.concatenate([_fit_height(p, PANEL) for p in panels], axis=1)
        self.frames.append(_caption(frame, self._caption(info)))

    def _caption(self, info: dict[str, Any]) -> str:
        u = self.env.unwrapped
        steps = len(self.frames)
        status = "" if info.get("action_valid", True) else "  (invalid action)"
        return f"{u.task.family}  {u.task.id}  step {steps}{status}"

    def _map(self, pose: Any) -> np.ndarray:
        from urban_gym.render import MapMarkers, MapRenderer

        u = self.env.unwrapped
        if self._renderer is None:
            city = getattr(u, "city", None)
            if city is None:
                from urban_gym.world import load_city

                city = load_city(u.task.city)
            self._renderer = MapRenderer(city)
        tm = task_markers(u.task)
        if self._window is None:
            pts = [p for p in (tm.start, tm.goal, *tm.destinations) if p is not None]
            if pose is not None:
                pts.append((pose.x, pose.y))
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            span = max(max(xs) - min(xs), max(ys) - min(ys), 60.0) * 1.3
            self._window = (((max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2), span / PANEL)
        center, mpp = self._window
        if pose is not None and math.dist(center, (pose.x, pose.y)) > mpp * PANEL * 0.45:
            center = (pose.x, pose.y)  # the agent left the window: follow it
        mk = MapMarkers(
            agent=(pose.x, pose.y, pose.heading) if pose is not None else None,
            start=tm.start,
            goal=tm.goal,
            destinations=tm.destinations,
            closures=tm.closures,
            trajectory=self.track if len(self.track) >= 2 else (),
        )
        return self._renderer.render(center, mpp, PANEL, markers=mk)

    def write(self, path: Path) -> Path:
        import imageio.v3 as iio

        frames = self.frames
        if len(frames) > MAX_FRAMES:
            keep = np.linspace(0, len(frames) - 1, MAX_FRAMES).round().astype(int)
            frames = [frames[i] for i in keep]
        width = max(f.shape[1] for f in frames)
        frames = [_pad_width(f, width) for f in frames]
        durations = [400] * (len(frames) - 1) + [1500]
        iio.imwrite(path, frames, duration=durations, loop=0)
        return path


def _view_image(obs: Any) -> np.ndarray | None:
    if not isinstance(obs, dict):
        return None
    if "view" in obs:
        return np.asarray(obs["view"])
    if "views" in obs:
        views = np.asarray(obs["views"])
        mask = np.asarray(obs.get("action_mask", np.ones(len(views)))).reshape(-1)
        keep = [v for i, v in enumerate(views) if i < len(mask) and mask[i] > 0] or list(views)
        gap = np.full((views.shape[1], 4, 3), 255, np.uint8)
        tiles: list[np.ndarray] = []
        for v in keep:
            tiles += [v, gap]
        return np.concatenate(tiles[:-1], axis=1)
    return None


def _fit_height(img: np.ndarray, h: int) -> np.ndarray:
    import cv2

    img = np.asarray(img, dtype=np.uint8)
    if img.shape[0] == h:
        return img
    w = max(1, round(img.shape[1] * h / img.shape[0]))
    return cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA)


def _pad_width(img: np.ndarray, w: int) -> np.ndarray:
    if img.shape[1] == w:
        return img
    pad = np.full((img.shape[0], w - img.shape[1], 3), 255, np.uint8)
    return np.concatenate([img, pad], axis=1)


def _caption(img: np.ndarray, text: str) -> np.ndarray:
    import cv2

    strip = np.full((22, img.shape[1], 3), 255, np.uint8)
    cv2.putText(
        strip,
        text.encode("ascii", "replace").decode(),
        (6, 16),
        cv2.FONT_HERSHEY_SIMPLEX,
        0.45,
        (20, 20, 20),
        1,
        cv2.LINE_AA,
    )
    return np.concatenate([img, strip], axis=0)
