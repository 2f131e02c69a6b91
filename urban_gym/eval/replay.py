"""GIFs of the best and the worst episode of every task type, by replaying them.

A record holds the episode's key and its trace the actions the core env received
(:mod:`urban_gym.eval.trace`), so an episode can be re-run exactly without its agent: the
run's env (the manifest's id and kwargs) is made with ``render_mode="rgb_array"``, reset
with the key's seed and task, and stepped with the recorded actions; every frame is its
``render()``. :func:`urban_gym.eval.trace.replay` checks the replay against the record
(pose at every step, termination, metrics) and the report says whether it was exact.

A replay never calls the run's judge: a folder is data, and its manifest could name any
endpoint, prompt file or cache. The env of a replay (:func:`replay_env`) is built from the
manifest's env id and kwargs alone; a run scored by a language-model judge is re-scored
from its records (:class:`RecordedVerdicts`: the verdict an episode's record holds).

Best = success first, then the highest score, then the fewest steps; worst = the reverse
(failures with the lowest score and the most steps); ties go to the first key.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

MAX_FRAMES = 120


def pick_episodes(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``(task type, "best"|"worst", record)`` per task type (one entry when the type has
    one episode).
    """
    by_type: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        by_type[str(r.get("task_type"))].append(r)

    def merit(r: Mapping[str, Any]) -> tuple:
        m = r.get("metrics") or {}
        score = m.get("score", m.get("spl", 0.0))
        score = float(score) if isinstance(score, (int, float)) else 0.0
        return (bool(r.get("is_success")), score, -int(r.get("steps", 0)))

    out = []
    for ty, rs in by_type.items():
        ordered = sorted(rs, key=merit, reverse=True)  # stable: ties keep file order
        out.append((ty, "best", ordered[0]))
        worst = sorted(rs, key=merit)[0]
        if worst is not ordered[0]:
            out.append((ty, "worst", worst))
    return out


def replay_gif(
    run: Any, record: Mapping[str, Any], path: str | Path, env: Any = None
) -> dict[str, Any]:
    """Replay ``record`` of ``run`` (:class:`urban_gym.eval.report.Run`) and write its GIF
    to ``path``; returns ``{"path", "exact", "problems", "frames"}``.
    """
    from urban_gym.eval.trace import replay
    from urban_gym.render import frame as F

    steps = run.dir.read_trace(record)
    own = env is None
    if own:
        env = replay_env(run)
    frames: list[np.ndarray] = []
    n = len(steps)

    def grab(e: Any, info: Mapping[str, Any]) -> None:
        t = len(frames)
        ok = "" if info.get("action_valid", True) else "  (invalid action)"
        end = f"  -> {info['termination']}" if "termination" in info else ""
        frames.append(F.caption(e.render(), f"{record['task_id']}  step {t}/{n - 1}{ok}{end}"))

    try:
        exact, _, problems = replay(env, record, steps, on_step=grab)
    finally:
        if own:
            env.close()
    write_gif(frames, path)
    return {"path": str(path), "exact": exact, "problems": problems, "frames": len(frames)}


def write_gif(frames: Sequence[np.ndarray], path: str | Path) -> Path:
    """Frames as a looping GIF (at most :data:`MAX_FRAMES`, evenly kept; the last shown
    longer).
    """
    import imageio.v3 as iio

    from urban_gym.render import frame as F

    frames = list(frames)
    if len(frames) > MAX_FRAMES:
        keep = np.linspace(0, len(frames) - 1, MAX_FRAMES).round().astype(int)
        frames = [frames[i] for i in keep]
    frames = F.pad_frames(frames)
    durations = [350] * (len(frames) - 1) + [1500]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(path, frames, duration=durations, loop=0)
    return path


def episode_gifs(runs: Sequence[Any], out: str | Path) -> list[dict[str, Any]]:
    """Best and worst episode GIFs per task type of every run, in ``out/gifs``."""
    out = Path(out)
    made = []
    for run in runs:
        env = replay_env(run)
        try:
            for ty, which, rec in pick_episodes(run.records):
                name = f"{_slug(run.name)}_{_slug(ty)}_{which}.gif"
                g = replay_gif(run, rec, out / "gifs" / name, env=env)
                g.update(run=run.name, task_type=ty, which=which, key=rec.get("key"))
                g["path"] = f"gifs/{name}"
                made.append(g)
        finally:
            env.close()
    return made


class RecordedVerdicts:
    """The answer judge of a replay: the verdict each episode's record holds
    (``is_success``), by the key the env was reset with (task id and seed), instead of a
    call to the judge the run was scored by.
    """

    def __init__(self, records: Sequence[Mapping[str, Any]]) -> None:
        self.verdicts = {
            (str(r.get("task_id")), r.get("seed")): r.get("is_success") is True for r in records
        }
        self.verdict = False

    def start(self, task_id: Any, seed: Any) -> None:
        """Answer for the episode of ``task_id`` and ``seed`` (its record's verdict)."""
        self.verdict = self.verdicts.get((str(task_id), seed), False)

    def __call__(self, prediction: str, candidates: Sequence[str]) -> bool:
        """The recorded verdict of the episode being replayed."""
        return self.verdict


def replay_env(run: Any, render_mode: str | None = "rgb_array") -> Any:
    """A fresh core env to replay the episodes of ``run`` (:class:`urban_gym.eval.report.
    Run`): the manifest's env id and kwargs (``track_visibility`` aside), and -- for a run
    scored by a language-model judge -- :class:`RecordedVerdicts` as its answer judge.
    Nothing of the manifest's judge setting is used: no endpoint, prompt file or cache;
    an env id that is not registered (``module:Id`` would import a module) and a suite
    file other than the recorded one are a :class:`~urban_gym.errors.RecordsError`.
    """
    import gymnasium as gym

    from urban_gym.errors import RecordsError
    from urban_gym.eval.judging import run_judge
    from urban_gym.eval.worker import RunSpec, make_env

    m = run.manifest
    env_id, kwargs = m.get("env_id"), m.get("env_kwargs") or {}
    if not isinstance(env_id, str) or not isinstance(kwargs, dict):
        raise RecordsError(
            f"{run.path}: the manifest's env_id {env_id!r} and env_kwargs {kwargs!r} do not "
            "name an env (a string and an object expected)"
        )
    if env_id not in gym.registry:  # "module:Id" would import a module the folder names
        raise RecordsError(
            f"{run.path}: the manifest's env_id {env_id!r} is not a registered id; a replay "
            "makes only registered ids"
        )
    kwargs = {k: v for k, v in kwargs.items() if k not in ("track_visibility", "answer_judge")}
    _check_suite(run, kwargs.get("suite"))
    verdicts = None
    if run_judge(m)["kind"] != "rules":
        verdicts = RecordedVerdicts(run.records)
        kwargs["answer_judge"] = verdicts
    env = make_env(RunSpec(env_id, kwargs, "oracle"), render_mode=render_mode)
    if verdicts is None:
        return env
    judge = verdicts

    class _Verdicts(gym.Wrapper):
        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
            judge.start((options or {}).get("task_id"), seed)
            return self.env.reset(seed=seed, options=options)

    return _Verdicts(env)


def _check_suite(run: Any, suite: Any) -> None:
    """A suite file the manifest's kwargs name is replayed only when it is the file the
    run recorded (its SHA-256 in the manifest's ``suite``); else a
    :class:`~urban_gym.errors.RecordsError` -- a folder does not choose which of this
    machine's files an env reads.
    """
    from urban_gym.errors import RecordsError
    from urban_gym.eval.records import sha256_file

    if not isinstance(suite, str) or not Path(suite).is_file():
        return  # a suite's name, inline tasks, or nothing
    recorded = (run.manifest.get("suite") or {}).get("sha256")
    if not recorded or sha256_file(suite) != recorded:
        raise RecordsError(
            f"{run.path}: the manifest names the suite file {suite!r} without the SHA-256 "
            "of that file as the run recorded it; a replay reads only the recorded suite"
        )


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in str(s)).strip("_").lower()


__all__ = [
    "MAX_FRAMES",
    "RecordedVerdicts",
    "episode_gifs",
    "pick_episodes",
    "replay_env",
    "replay_gif",
    "write_gif",
]
