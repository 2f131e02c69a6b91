"""One episode of any agent, step by step: the per-step trace and the episode record.

:class:`TraceRecorder` sits directly on the core env, under whatever face the agent acts
on, and keeps the action the core env received on each step (an action-table index, a
structured action, or ``{"unreadable": message}`` for a reply no action could be read
from). Those are exactly what :func:`replay` feeds a fresh env to re-run an episode.

:func:`run_episode` drives one episode and returns ``(record, steps)``. A step entry:

=====================  ===================================================================
``t``                  step number (0: the state after ``reset``)
``action``             the action the core env received (see above)
``valid``              whether it was carried out; ``invalid_action`` says why not
``reward``             the step's reward
``pose``               ``{"x", "y", "heading"}`` (metres, degrees)
``distance_to_goal_m`` metres along the ways (None: no goal position)
``goal_visible``       whether the goal object was in view (None when not tracked)
``reply``              language models: the reply ``text``, the parser's ``stage``
                       (``json``, ``fence``, ``braces``, ``bare``, ``""`` unreadable),
                       ``ok``, ``error`` and the reply's other ``fields`` (thought, memory)
``tokens``             language models: the reply's token usage
``timing``             wall-clock values (``latency_s``); left out when comparing runs
=====================  ===================================================================
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from urban_gym.envs.actions import UnreadableReply
from urban_gym.strict_json import json_safe

#: Bounds on what a trace keeps of an action or a reply (strict_json.json_safe).
LIMITS: dict[str, int] = {"max_depth": 16, "max_items": 100, "max_chars": 20_000}


_INT_MIN, _INT_MAX = -(2**63), 2**63
_MAX_CHARS = LIMITS["max_chars"]
_INF = math.inf


def core_action(action: Any) -> Any:
    """The JSON form of an action the core env received (see the module docstring)."""
    t = type(action)
    if t is int and _INT_MIN < action < _INT_MAX:
        return action
    if t is dict:  # the usual structured action: a copy, when its values are JSON already
        for k, v in action.items():
            if type(k) is not str or not _plain(v):
                return json_safe(action, **LIMITS)
        return action.copy()
    if isinstance(action, UnreadableReply):
        return {"unreadable": action.message}
    if isinstance(action, (bool, np.bool_)):
        return json_safe(action)
    if isinstance(action, (int, np.integer)):
        return json_safe(int(action))
    if isinstance(action, Mapping):
        flat = dict(action)
        for k, v in flat.items():
            if type(k) is not str or not _plain(v):
                return json_safe(flat, **LIMITS)
        return flat
    return json_safe(action, **LIMITS)


def _plain(v: Any) -> bool:
    """A JSON scalar that needs no conversion (finite float, short str, int, bool, None)."""
    t = type(v)
    if t is str:
        return len(v) <= _MAX_CHARS
    if t is int:
        return _INT_MIN < v < _INT_MAX
    if t is float:
        return -_INF < v < _INF
    return v is None or t is bool


def replay_action(action: Any) -> Any:
    """The action to give an env to repeat a recorded :func:`core_action`."""
    if isinstance(action, dict) and set(action) == {"unreadable"}:
        return UnreadableReply(str(action["unreadable"]))
    return action


class TraceRecorder(gym.Wrapper):
    """Keeps the action the core env received on the last step (``last_action``)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.last_action: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the env and forget the last action."""
        self.last_action = None
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any):
        """Keep the action's JSON form, then step the env."""
        self.last_action = core_action(action)
        return self.env.step(action)


def _distance(info: Mapping[str, Any]) -> float | None:
    d = info.get("distance_to_goal_m")
    if type(d) is not float:
        try:
            d = float(d)
        except (TypeError, ValueError):
            return None
    return d if -_INF < d < _INF else None


def _pose(info: Mapping[str, Any]) -> dict[str, float] | None:
    p = info.get("pose")
    if type(p) is dict and len(p) == 3:
        return {"x": p["x"], "y": p["y"], "heading": p["heading"]}
    if not isinstance(p, Mapping):
        return None
    return {k: float(p[k]) for k in ("x", "y", "heading") if k in p}


def step_entry(t: int, info: Mapping[str, Any], action: Any = None, reward: Any = 0.0) -> dict:
    """The trace entry of step ``t`` from its ``info`` (module docstring); values as the
    env gave them (metres and degrees, not rounded).
    """
    get = info.get
    e: dict[str, Any] = {"t": t}
    if t:
        e["action"] = action
        valid = get("action_valid", True)
        if valid is True:
            e["valid"] = True
        else:
            e["valid"] = bool(valid)
            if not e["valid"]:
                e["invalid_action"] = json_safe(str(get("invalid_action", "")), max_chars=500)
        r = reward if type(reward) is float else float(reward)
        e["reward"] = r if -_INF < r < _INF else None
    p = get("pose")
    if type(p) is dict and len(p) == 3:
        e["pose"] = {"x": p["x"], "y": p["y"], "heading": p["heading"]}
    else:
        e["pose"] = _pose(info)
    d = get("distance_to_goal_m")
    e["distance_to_goal_m"] = d if type(d) is float and -_INF < d < _INF else _distance(info)
    gv = get("goal_visible")
    e["goal_visible"] = gv if gv is None or gv is True or gv is False else bool(gv)
    return e


def _reply_entry(text: Any, info: Mapping[str, Any]) -> dict[str, Any]:
    r = info.get("reply") if isinstance(info.get("reply"), Mapping) else {}
    return {
        "text": json_safe(text, max_chars=LIMITS["max_chars"]),
        "stage": r.get("stage", ""),
        "ok": bool(r.get("ok", False)),
        "error": r.get("error", ""),
        "fields": json_safe(r.get("fields") or {}, **LIMITS),
    }


def _answer(steps: Sequence[Mapping[str, Any]]) -> str | None:
    """The answer of the last valid action that carried one (``text`` / ``answer``)."""
    for s in reversed(steps):
        a = s.get("action")
        if s.get("valid") and isinstance(a, Mapping):
            for k in ("text", "answer"):
                if a.get(k) is not None:
                    return str(a[k])
    return None


def task_summary(task: Any) -> dict[str, Any]:
    """The task fields of an episode record (family, type, difficulty, category, kind,
    ``task_info``).
    """
    from urban_gym.eval.categories import task_category, task_facts, task_kind

    return {
        "family": task.family,
        "task_type": task.type,
        "difficulty": task.difficulty,
        "category": task_category(task),
        "kind": task_kind(task),
        "task_info": task_facts(task),
    }


def run_episode(
    face: gym.Env,
    recorder: TraceRecorder | None,
    agent: Any,
    key: Any,
    task: Any,
    summary: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the episode of ``key`` (an :class:`~urban_gym.eval.worker.EpisodeKey`) with
    ``agent`` on its ``face``; returns ``(record, steps)``. ``recorder`` is the
    :class:`TraceRecorder` at the bottom of a face of wrappers, or None when the agent acts
    on the core env itself (its actions are then what the core env received).

    The agent giving up (:class:`~urban_gym.baselines.agents.AgentGaveUp`, e.g. the model
    client) ends the episode with its termination (``model_error``) and the family's
    metrics of the episode so far; any other exception of the agent or the env ends it
    with ``agent_error`` / ``env_error``, ``is_success`` False and the error's text, and
    the run goes on. Ctrl-C (``KeyboardInterrupt``) stops the run.
    """
    from urban_gym.baselines.agents import AgentGaveUp

    t0 = time.perf_counter()
    usage0 = agent.usage()
    obs, info = face.reset(seed=key.seed, options={"task_id": key.task_id})
    agent.reset(face, task, seed=key.agent_seed)
    steps = [step_entry(0, info)]
    termination: str | None = None
    error: str | None = None
    latency = 0.0
    step_info = getattr(agent, "step_info", None)
    if not callable(step_info):
        step_info = None
    act, step, append = agent.act, face.step, steps.append
    t = 0
    while True:
        try:
            action = act(obs, info)
        except AgentGaveUp as exc:
            info = face.unwrapped.end_episode(exc.termination)
            error = str(exc)
            break
        except Exception as exc:
            termination, error = "agent_error", f"{type(exc).__name__}: {exc}"
            break
        notes = step_info() if step_info is not None else None
        try:
            obs, reward, terminated, truncated, info = step(action)
        except Exception as exc:
            termination, error = "env_error", f"{type(exc).__name__}: {exc}"
            break
        t += 1
        e = step_entry(
            t, info, core_action(action) if recorder is None else recorder.last_action, reward
        )
        if type(action) is str:
            e["reply"] = _reply_entry(action, info)
        if notes:
            if notes.get("usage"):
                e["tokens"] = json_safe(notes["usage"])
            lat = float(notes.get("latency_s", 0.0) or 0.0)
            latency += lat
            e["timing"] = {"latency_s": round(lat, 4)}
            for k in ("calls", "scheme"):  # a scheme's extra calls and its notes
                if notes.get(k):
                    e[k] = json_safe(notes[k])
        append(e)
        if terminated or truncated:
            break
    usage1 = agent.usage()
    tokens = {k: int(usage1.get(k, 0)) - int(usage0.get(k, 0)) for k in usage1}
    if termination is None:
        termination = str(info.get("termination", "unfinished"))
        metrics = json_safe(info.get("metrics") or {})
        success = bool(info.get("is_success", False))
    else:
        metrics, success = {"success": 0.0}, False
    last = steps[-1]
    record: dict[str, Any] = {
        "task_id": key.task_id,
        "seed": key.seed,
        "repeat": key.repeat,
        "key": key.name,
        "agent_seed": key.agent_seed,
        **{k: v for k, v in (summary or task_summary(task)).items() if k != "task_info"},
        "termination": termination,
        "is_success": success,
        "metrics": metrics,
        "steps": len(steps) - 1,
        "invalid_actions": sum(1 for s in steps[1:] if not s.get("valid", True)),
        "answer": _answer(steps),
        "tokens": tokens,
        "goal_seen": any(s.get("goal_visible") for s in steps)
        if steps[0].get("goal_visible") is not None
        else None,
        "start": {"pose": steps[0]["pose"], "distance_to_goal_m": steps[0]["distance_to_goal_m"]},
        "end": {"pose": last["pose"], "distance_to_goal_m": last["distance_to_goal_m"]},
        "task_info": dict((summary or task_summary(task))["task_info"]),
    }
    if error is not None:
        record["error"] = json_safe(error, max_chars=2000)
    record["timing"] = {
        "wall_s": round(time.perf_counter() - t0, 4),
        "model_latency_s": round(latency, 4),
        "finished_at": time.time(),
    }
    return record, steps


def replay(
    env: gym.Env, record: Mapping[str, Any], steps: Sequence[Mapping[str, Any]], on_step=None
):
    """Re-run a recorded episode on ``env`` (a fresh core env of the run, e.g. with
    ``render_mode="rgb_array"``) from its key and recorded actions; ``on_step(env, info)``
    is called after the reset and every step. Returns ``(exact, last info, problems)``:
    ``exact`` when the replay ended as recorded (same termination, steps, success,
    metrics, and the same pose at every step).
    """
    obs, info = env.reset(seed=int(record["seed"]), options={"task_id": record["task_id"]})
    if on_step is not None:
        on_step(env, info)
    problems: list[str] = []
    if _pose(info) != steps[0].get("pose"):
        problems.append("start pose differs")
    done = False
    for s in steps[1:]:
        if done:
            problems.append(f"episode ended before step {s['t']}")
            break
        obs, reward, terminated, truncated, info = env.step(replay_action(s.get("action")))
        done = terminated or truncated
        if on_step is not None:
            on_step(env, info)
        if _pose(info) != s.get("pose"):
            problems.append(f"step {s['t']}: pose {_pose(info)} != recorded {s.get('pose')}")
            break
    if record.get("termination") in ("agent_error", "env_error"):
        return not problems, info, problems
    if not done and record.get("termination") not in ("model_error", "abandoned"):
        problems.append("the replay did not end")
    if done and info.get("termination") != record.get("termination"):
        problems.append(
            f"termination {info.get('termination')!r} != recorded {record.get('termination')!r}"
        )
    if done and json_safe(info.get("metrics") or {}) != record.get("metrics"):
        problems.append("metrics differ")
    return not problems, info, problems


__all__ = [
    "LIMITS",
    "TraceRecorder",
    "core_action",
    "replay",
    "replay_action",
    "run_episode",
    "step_entry",
    "task_summary",
]
