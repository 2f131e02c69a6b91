"""One episode of any agent, step by step: the per-step trace and the episode record.

:class:`TraceRecorder` sits directly on the core env, under whatever face the agent acts
on, and keeps the action the core env received on each step (an action-table index, a
structured action, or ``{"unreadable": message}`` for a reply no action could be read
from). Those are exactly what :func:`replay` feeds a fresh env to re-run an episode.

:func:`run_episode` drives one episode and returns ``(record, trace)``: the trace
(:class:`~urban_gym.eval.tracefile.EpisodeTrace`) keeps the steps column by column, plain
values and the numbers in one flat list (:func:`add_step`), cheap to keep and written as
one line (:meth:`urban_gym.eval.records.RunDir.write_trace`,
:mod:`urban_gym.eval.tracefile`); ``trace.steps()`` and
:meth:`~urban_gym.eval.records.RunDir.read_trace` give each step as an entry:

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
from typing import Any, cast

import gymnasium as gym
import numpy as np

from urban_gym.envs.actions import UnreadableReply
from urban_gym.errors import AgentGaveUp
from urban_gym.eval.records import episode_name
from urban_gym.eval.tracefile import EpisodeTrace
from urban_gym.strict_json import json_safe

#: Bounds on what a trace keeps of an action or a reply (strict_json.json_safe).
LIMITS: dict[str, int] = {"max_depth": 16, "max_items": 100, "max_chars": 20_000}


_INT_MIN, _INT_MAX = -(2**63), 2**63
_BOOLISH = frozenset(map(id, (None, True, False)))
_MAX_CHARS = LIMITS["max_chars"]
_INF = math.inf


def core_action(action: Any) -> Any:
    """The JSON form of an action the core env received (see the module docstring)."""
    t = type(action)
    if t is dict:  # the usual structured action: a copy, when its values are JSON already
        return action.copy() if _plain_items(action) else json_safe(action, **LIMITS)
    if t is int and _INT_MIN < action < _INT_MAX:
        return action
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


def _plain_items(d: dict, str_int_only: bool = False) -> bool:
    """Whether every key of ``d`` is a str and every value :func:`_plain` (inlined: this
    runs on every step) -- with ``str_int_only``, a str or an int.
    """
    for k, v in d.items():
        tv = type(v)
        if type(k) is not str:
            return False
        if tv is str:
            if len(v) > _MAX_CHARS:
                return False
        elif tv is int:
            if not _INT_MIN < v < _INT_MAX:
                return False
        elif str_int_only:
            return False
        elif tv is float:
            if not -_INF < v < _INF:
                return False
        elif v is not None and tv is not bool:
            return False
    return True


def action_key(action: dict) -> tuple:
    """What tells two dict actions apart in :attr:`EpisodeTrace.distinct
    <urban_gym.eval.tracefile.EpisodeTrace.distinct>`: their items, then the types of
    their values (``1 == 1.0 == True`` and ``0.0 == -0.0``, which JSON tells apart).
    """
    return (*action.items(), *map(type, action.values()))


def _distinct_action(action: dict, table: dict) -> dict | None:
    """The trace's copy of a dict action of str keys and str or int values -- one copy per
    distinct action of an episode, kept in ``table`` by :func:`action_key` (an action the
    agent gives again costs no new object, and its JSON is written once:
    :func:`~urban_gym.eval.tracefile.trace_line`) -- or None for any other dict.
    """
    try:
        key = action_key(action)
        a = table.get(key)
    except TypeError:  # a value that does not hash (a list): not a plain action
        return None
    if a is not None:
        return a
    if not _plain_items(action, str_int_only=True):
        return None
    a = table[key] = action.copy()
    return a


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


def _pose(info: Mapping[str, Any]) -> dict[str, float] | None:
    """The pose of an info that lacks one of the three numbers (None without a mapping)."""
    p = info.get("pose")
    if not isinstance(p, Mapping):
        return None
    return {k: float(p[k]) for k in ("x", "y", "heading") if k in p}


def add_step(
    trace: EpisodeTrace, info: Mapping[str, Any], action: Any, reward: Any, more: dict | None
) -> None:
    """Add a step to ``trace`` from its ``info``: the action the core env received (its
    JSON form), validity, goal visibility, the step's other entries (``more``: None or a
    dict) and its numbers (reward, pose, distance to the goal:
    :data:`~urban_gym.eval.tracefile.FLOAT_FIELDS`), as the env gave them (metres and
    degrees, not rounded).
    """
    get = info.get
    p: Any = get("pose")
    try:
        nums = (reward, p["x"], p["y"], p["heading"], get("distance_to_goal_m"))
    except (TypeError, KeyError, IndexError):  # no pose, or not the three numbers
        more = {**(more or {}), "pose": _pose(info)}
        nums = (reward, None, None, None, get("distance_to_goal_m"))
    valid = get("action_valid", True)
    if valid is not True:
        valid = bool(valid)
        if not valid:
            why = json_safe(str(get("invalid_action", "")), max_chars=500)
            more = {"invalid_action": why, **(more or {})}
    gv = get("goal_visible")
    if gv is not None and gv is not True and gv is not False:
        gv = bool(gv)
    if more:
        trace.more[len(trace.actions)] = more
    trace.actions.append(action)
    trace.valid.append(valid)
    trace.visible.append(gv)
    trace.floats += nums


def start_trace(info: Mapping[str, Any]) -> EpisodeTrace:
    """A trace holding step 0: the state after ``reset`` (no action, validity or reward)."""
    trace = EpisodeTrace()
    add_step(trace, {**info, "action_valid": True}, None, math.nan, None)
    trace.valid[0] = None
    return trace


def _reply_entry(text: Any, info: Mapping[str, Any]) -> dict[str, Any]:
    reply = info.get("reply")
    r: Mapping[str, Any] = reply if isinstance(reply, Mapping) else {}
    return {
        "text": json_safe(text, max_chars=LIMITS["max_chars"]),
        "stage": r.get("stage", ""),
        "ok": bool(r.get("ok", False)),
        "error": r.get("error", ""),
        "fields": json_safe(r.get("fields") or {}, **LIMITS),
    }


def _more(action: Any, info: Mapping[str, Any], notes: Mapping[str, Any] | None) -> tuple:
    """A step's entries beyond the fixed ones (reply, tokens, timing, a scheme's calls and
    notes) and the model's latency in seconds.
    """
    more: dict[str, Any] = {}
    if type(action) is str:
        more["reply"] = _reply_entry(action, info)
    lat = 0.0
    if notes:
        if notes.get("usage"):
            more["tokens"] = json_safe(notes["usage"])
        lat = float(notes.get("latency_s", 0.0) or 0.0)
        more["timing"] = {"latency_s": round(lat, 4)}
        for k in ("calls", "scheme"):  # a scheme's extra calls and its notes
            if notes.get(k):
                more[k] = json_safe(notes[k])
    return more or None, lat


def _answer(trace: EpisodeTrace) -> str | None:
    """The answer of the last valid action that carried one (``text`` / ``answer``)."""
    shared = list(trace.distinct.values())
    if shared and not any("text" in a or "answer" in a for a in shared):
        ids = {id(a) for a in shared}
        ids.add(id(None))
        if ids.issuperset(map(id, trace.actions)):  # every action one of them: none
            return None
    seen = None  # the last action looked at (steps often share one: _distinct_action)
    for a, valid in zip(reversed(trace.actions), reversed(trace.valid)):
        if a is seen or not valid:
            continue
        seen = a
        if (type(a) is dict or isinstance(a, Mapping)) and ("text" in a or "answer" in a):
            v = a.get("text")
            if v is None:
                v = a.get("answer")
            if v is not None:
                return str(v)
    return None


def _index_answer(trace: EpisodeTrace, face: Any) -> str | None:
    """The answer text of the last valid action when it is an index into the env's
    ``action_table`` (a discrete policy's answer head: a random or trained agent), else
    None.
    """
    for a, valid in zip(reversed(trace.actions), reversed(trace.valid)):
        if a is None or not valid:
            continue
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            return None
        table = getattr(getattr(face, "unwrapped", face), "action_table", None)
        if not isinstance(table, Sequence) or not 0 <= int(a) < len(table):
            return None
        entry = table[int(a)]
        text = entry.get("text") if isinstance(entry, Mapping) else None
        return None if text is None else str(text)
    return None


def task_summary(task: Any) -> dict[str, Any]:
    """The task fields of an episode record (family, city, type, difficulty, category,
    kind, ``task_info``).
    """
    from urban_gym.eval.categories import task_category, task_facts, task_kind

    return {
        "family": task.family,
        "city": getattr(task, "city", None),
        "task_type": task.type,
        "difficulty": task.difficulty,
        "category": task_category(task),
        "kind": task_kind(task),
        "task_info": task_facts(task),
    }


def _steps(
    face: gym.Env,
    recorder: TraceRecorder | None,
    agent: Any,
    obs: Any,
    info: Any,
    trace: EpisodeTrace,
    on_step: Any = None,
) -> tuple[str | None, str | None, float, Any]:
    """The steps of an episode after its reset, added to ``trace``; returns the
    termination (None: the env's own), the error, the model's latency and the last info.
    An agent that acts on the core env and has no step notes (a language model's tokens)
    and no ``on_step`` runs in :func:`_plain_steps`.
    """
    step_info = getattr(agent, "step_info", None)
    if not callable(step_info):
        step_info = None
    if recorder is None and step_info is None and on_step is None:
        return _plain_steps(face, agent, obs, info, trace)
    act, step = agent.act, face.step
    latency = 0.0
    while True:
        try:
            action = act(obs, info)
        except AgentGaveUp as exc:
            return (*_gave_up(face, exc, info), latency, _ended(face, exc, info))
        except Exception as exc:
            return "agent_error", f"{type(exc).__name__}: {exc}", latency, info
        notes = step_info() if step_info is not None else None
        try:
            obs, reward, terminated, truncated, info = step(action)
        except Exception as exc:
            return "env_error", f"{type(exc).__name__}: {exc}", latency, info
        more = None
        if notes or type(action) is str:
            more, lat = _more(action, info, notes)
            latency += lat
        a = core_action(action) if recorder is None else recorder.last_action
        add_step(trace, info, a, reward, more)
        if on_step is not None:
            try:
                on_step(obs, info)
            except Exception as exc:  # the driver's callback failed: the episode ends
                return "agent_error", f"{type(exc).__name__}: {exc}", latency, info
        if terminated or truncated:
            return None, None, latency, info


def _gave_up(face: gym.Env, exc: AgentGaveUp, info: Any) -> tuple[str | None, str]:
    """The termination and error of an episode its agent gave up: the env ends it with
    the agent's termination (None here: the env's own info says it); an env that cannot
    end an episode from outside (no ``end_episode``) leaves it to the record.
    """
    ends = callable(getattr(face.unwrapped, "end_episode", None))
    return (None if ends else exc.termination), str(exc)


def _ended(face: gym.Env, exc: AgentGaveUp, info: Any) -> Any:
    """The env's last info after the agent gave up (:func:`_gave_up`)."""
    end = getattr(face.unwrapped, "end_episode", None)
    return end(exc.termination) if callable(end) else info


def _plain_steps(
    face: gym.Env, agent: Any, obs: Any, info: Any, trace: EpisodeTrace
) -> tuple[str | None, str | None, float, Any]:
    """:func:`_steps` of an agent acting on the core env, without step notes -- the
    oracle, the random agent, a trained policy -- with the usual step (a valid action of
    JSON values; pose, distance and visibility as the info schema has them) added inline:
    this runs on every step, and a function call costs about as much as the rest.
    """
    act, step = agent.act, face.step
    actions, valid, visible = trace.actions.append, trace.valid.append, trace.visible.append
    floats, table = trace.floats, trace.distinct
    while True:
        try:
            action = act(obs, info)
        except AgentGaveUp as exc:
            return (*_gave_up(face, exc, info), 0.0, _ended(face, exc, info))
        except Exception as exc:
            return "agent_error", f"{type(exc).__name__}: {exc}", 0.0, info
        try:
            obs, reward, terminated, truncated, info = step(action)
        except Exception as exc:
            return "env_error", f"{type(exc).__name__}: {exc}", 0.0, info
        a = None
        if type(action) is dict:  # the action a step before gave, or a new one
            try:
                a = table.get((*action.items(), *map(type, action.values())))  # action_key
            except TypeError:
                pass
            if a is None:
                a = _distinct_action(action, table)
        if a is None:
            a = core_action(action)
        try:
            p = info["pose"]
            nums = (reward, p["x"], p["y"], p["heading"], info["distance_to_goal_m"])
            usual = info["action_valid"] is True
        except (TypeError, KeyError, IndexError):
            usual = False
        if usual:  # (goal visibility: None, True or False, else made one by run_episode)
            actions(a)
            valid(True)
            visible(info.get("goal_visible"))
            floats += nums
        else:
            add_step(trace, info, a, reward, None)
        if terminated or truncated:
            return None, None, 0.0, info


def run_episode(
    face: gym.Env,
    agent: Any,
    key: Any = None,
    *,
    task: Any = None,
    recorder: TraceRecorder | None = None,
    summary: Mapping[str, Any] | None = None,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    on_step: Any = None,
    deadline_s: float | None = None,
) -> tuple[dict[str, Any], EpisodeTrace]:
    """Run one episode of ``agent`` on its ``face`` (the stack ``agent.wrap(env)`` built);
    returns ``(record, trace)``: the episode record (the line a run folder's
    ``episodes.jsonl`` holds) and its :class:`~urban_gym.eval.tracefile.EpisodeTrace`
    (``trace.steps()`` gives the step entries). This is the one episode loop of urban_gym:
    the harness, human play, the demo and the examples all run their episodes here.

    Args:
        face: the env stack the agent acts on.
        agent: an agent of the harness's protocol
            (:class:`urban_gym.baselines.agents.Agent`).
        key: the run's :class:`~urban_gym.eval.records.EpisodeKey` (task id, seed, repeat,
            agent seed). None: reset with ``seed`` and ``options`` and name the episode
            by the task that reset picked (repeat 0, the agent seeded with ``seed``).
        task: the task of ``key`` (default: the one the env runs after its reset).
        recorder: the :class:`TraceRecorder` at the bottom of a face of wrappers, or
            None when the agent acts on the core env itself (its actions are then what
            the core env received).
        summary: the task fields of the record (default: :func:`task_summary`).
        seed: the reset seed when ``key`` is None.
        options: the reset options when ``key`` is None.
        on_step: ``on_step(obs, info)`` after the reset and after every step (e.g. to
            collect the frames of a GIF); an exception of it ends the episode as the
            agent's would.
        deadline_s: the episode's wall-clock deadline (seconds from the reset; None: none).
            An agent still acting when it passes -- a hung call included -- ends the
            episode with termination ``episode_deadline`` and the family's metrics so far
            (:class:`~urban_gym.eval.deadline.Deadlined`).

    The agent giving up (:class:`~urban_gym.errors.AgentGaveUp`, e.g. the model client)
    ends the episode with its termination (``model_error``) and the family's metrics of
    the episode so far; any other exception of the agent or the env ends it with
    ``agent_error`` / ``env_error``, ``is_success`` False and the error's text, and the
    run goes on. Ctrl-C (``KeyboardInterrupt``) stops the run.
    """
    t0 = time.perf_counter()
    usage0 = agent.usage()
    if key is not None:
        obs, info = face.reset(seed=key.seed, options={"task_id": key.task_id})
    else:
        obs, info = face.reset(seed=seed, options=options)
    if task is None:
        task = cast(Any, face.unwrapped).task  # every env of the harness is an UrbanEnv
    if key is None:
        from urban_gym.eval.records import EpisodeKey

        key = EpisodeKey(task.id, seed, 0, -1, seed)  # type: ignore[arg-type]
    agent.reset(face, task, seed=key.agent_seed)
    deadlined = None
    if deadline_s is not None:
        from urban_gym.eval.deadline import Deadlined

        agent = deadlined = Deadlined(agent, deadline_s)
    trace = start_trace(info)
    termination: str | None
    error: str | None
    try:
        if on_step is not None:
            on_step(obs, info)
    except Exception as exc:  # the driver's callback failed before the first step
        termination, error, latency = "agent_error", f"{type(exc).__name__}: {exc}", 0.0
    else:
        try:
            termination, error, latency, info = _steps(
                face, recorder, agent, obs, info, trace, on_step
            )
        finally:
            if deadlined is not None:
                deadlined.stop_worker()
    if not _BOOLISH.issuperset(map(id, trace.visible)):  # not None, True or False: a bool
        trace.visible[:] = [v if v is None else bool(v) for v in trace.visible]
    usage1 = agent.usage()
    if usage1 == usage0:
        tokens = dict.fromkeys(usage1, 0)
    else:
        tokens = {k: int(usage1.get(k, 0)) - int(usage0.get(k, 0)) for k in usage1}
    if termination is None:
        termination = str(info.get("termination", "unfinished"))
        metrics = info.get("metrics") or {}
        metrics = (
            metrics.copy()
            if type(metrics) is dict and _plain_items(metrics)
            else json_safe(metrics)
        )
        success = bool(info.get("is_success", False))
    else:
        metrics, success = {"success": 0.0}, False
    summary = dict(summary or task_summary(task))
    task_info = summary.pop("task_info")
    record: dict[str, Any] = {
        "task_id": key.task_id,
        "seed": key.seed,
        "repeat": key.repeat,
        "key": episode_name(key.task_id, key.seed, key.repeat) if key.seed is not None else None,
        "agent_seed": key.agent_seed,
        **summary,
        "termination": termination,
        "is_success": success,
        "metrics": metrics,
        "steps": len(trace) - 1,
        "invalid_actions": trace.valid.count(False),
        "unreadable_replies": _unreadable(trace),
        "answer": _answer(trace) or _index_answer(trace, face),
        "tokens": tokens,
        "goal_seen": (True in trace.visible) if trace.visible[0] is not None else None,
        "start": {"pose": trace.pose(0), "distance_to_goal_m": trace.distance(0)},
        "end": {"pose": trace.pose(-1), "distance_to_goal_m": trace.distance(-1)},
        "task_info": dict(task_info),
    }
    if error is not None:
        record["error"] = json_safe(error, max_chars=2000)
    record["timing"] = {
        "wall_s": round(time.perf_counter() - t0, 4),
        "model_latency_s": round(latency, 4),
        "finished_at": time.time(),
    }
    return record, trace


def _unreadable(trace: EpisodeTrace) -> int:
    """Replies from which no action could be read (their trace entry's parse stage "")."""
    if not trace.more:
        return 0
    return sum(
        1
        for m in trace.more.values()
        if isinstance(m.get("reply"), dict) and not m["reply"]["stage"]
    )


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
    "add_step",
    "run_episode",
    "start_trace",
    "task_summary",
]
