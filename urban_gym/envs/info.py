"""The ``info`` schema: the keys every urban_gym environment returns, with the same meaning
and the same type, after ``reset`` and after every ``step``.

=======================  ===================================================================
key                      value
=======================  ===================================================================
``pose``                 ``{"x", "y", "heading"}``: the agent's true position (metres, x east,
                         y north, in the city's local frame) and the direction it faces --
                         the centre of its view (degrees clockwise from north, in [0, 360))
``distance_to_goal_m``   the shortest walking distance to the goal (or the next stop) along
                         the family's ways, metres; :data:`NO_GOAL` (``math.inf``) when the
                         task has no goal position (questions) or the goal cannot be
                         reached. Always a float, so vector envs can batch it; strict JSON
                         records write ``inf`` as ``null``
``steps``                steps taken in this episode (invalid ones included)
``invalid_actions``      invalid-action steps in this episode
``action_valid``         whether the last action was carried out (True after ``reset``)
``invalid_action``       why it was not (the message shown to the agent); ``""`` when it was
``task_id``              the id of the episode's task
=======================  ===================================================================

At the end of an episode (``terminated or truncated``) also:

=======================  ===================================================================
``termination``          why it ended: one of :data:`~urban_gym.envs.base.TERMINATION_REASONS`
``is_success``           whether the task was solved (read by stable-baselines3's logging)
``metrics``              the task's scores: its family's ``evaluate(task, outcome)``
=======================  ===================================================================

With ``track_visibility=True`` (the evaluation harness turns it on) also, on every
``info``:

=======================  ===================================================================
``goal_visible``         whether the task's goal object is in view now (privileged; from the
                         renderer's instance ids, :mod:`urban_gym.envs.visibility`); False
                         for tasks without a goal object
=======================  ===================================================================

A family adds its own keys (a graph node, the simulation clock, the camera's pitch, ...)
under its own names; they never take a schema key's name. Every value keeps its type on
every step and every task: Gymnasium's vector envs batch each key into an array typed by
the first value they see.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypedDict

from urban_gym.errors import InfoSchemaError

#: ``distance_to_goal_m`` of a task without a goal position (or with an unreachable one).
NO_GOAL = math.inf


class Pose(TypedDict):
    """The agent's true pose: metres (x east, y north) and degrees clockwise from north."""

    x: float
    y: float
    heading: float


class StepInfo(TypedDict):
    """The keys of every ``info`` (see the module docstring)."""

    pose: Pose
    distance_to_goal_m: float
    steps: int
    invalid_actions: int
    action_valid: bool
    invalid_action: str
    task_id: str


class EndInfo(StepInfo):
    """The keys of the last ``info`` of an episode: :class:`StepInfo` and three more."""

    termination: str
    is_success: bool
    metrics: dict[str, Any]


#: Key -> type of every ``info`` (:class:`StepInfo`).
STEP_KEYS: dict[str, type] = {
    "pose": dict,
    "distance_to_goal_m": float,
    "steps": int,
    "invalid_actions": int,
    "action_valid": bool,
    "invalid_action": str,
    "task_id": str,
}
#: Key -> type of the keys added at the end of an episode.
END_KEYS: dict[str, type] = {"termination": str, "is_success": bool, "metrics": dict}
#: Key -> type of the keys present only when the env was made to compute them
#: (``track_visibility=True``).
OPTIONAL_KEYS: dict[str, type] = {"goal_visible": bool}
#: The keys of ``pose``.
POSE_KEYS: tuple[str, ...] = ("x", "y", "heading")


def schema_problems(info: Mapping[str, Any], end: bool = False) -> list[str]:
    """What is wrong with ``info`` against the schema (``end``: an episode's last info,
    which must also hold :data:`END_KEYS`); an empty list when nothing is.
    """
    wanted = {**STEP_KEYS, **(END_KEYS if end else {})}
    out: list[str] = []
    for key, kind in wanted.items():
        if key not in info:
            out.append(f"missing {key!r}")
        elif type(info[key]) is not kind:
            out.append(f"{key!r} is {type(info[key]).__name__}, not {kind.__name__}")
    for key, kind in OPTIONAL_KEYS.items():
        if key in info and type(info[key]) is not kind:
            out.append(f"{key!r} is {type(info[key]).__name__}, not {kind.__name__}")
    pose = info.get("pose")
    if isinstance(pose, Mapping):
        if tuple(pose) != POSE_KEYS:
            out.append(f"'pose' has keys {list(pose)}, not {list(POSE_KEYS)}")
        for k in POSE_KEYS:
            v = pose.get(k)
            if type(v) is not float or not math.isfinite(v):
                out.append(f"pose[{k!r}] = {v!r} is not a finite float")
        h = pose.get("heading")
        if type(h) is float and not 0.0 <= h < 360.0:
            out.append(f"pose['heading'] = {h!r} is not in [0, 360)")
    d = info.get("distance_to_goal_m")
    if type(d) is float and (math.isnan(d) or d < 0.0):
        out.append(f"distance_to_goal_m = {d!r} is not a distance (>= 0 or inf)")
    if info.get("action_valid") is True and info.get("invalid_action") != "":
        out.append("invalid_action must be '' on a valid step")
    if info.get("action_valid") is False and not info.get("invalid_action"):
        out.append("an invalid step must say why in invalid_action")
    return out


def check_info(info: Mapping[str, Any], end: bool = False) -> None:
    """Raise :class:`InfoSchemaError` listing every problem of ``info`` (see
    :func:`schema_problems`).
    """
    problems = schema_problems(info, end)
    if problems:
        raise InfoSchemaError("info does not follow the schema: " + "; ".join(problems))


def make_pose(x: float, y: float, heading: float) -> Pose:
    """A :class:`Pose` of plain floats, the heading wrapped into [0, 360)."""
    h = float(heading) % 360.0
    return {"x": float(x), "y": float(y), "heading": 0.0 if h >= 360.0 else h}


__all__ = [
    "END_KEYS",
    "NO_GOAL",
    "OPTIONAL_KEYS",
    "POSE_KEYS",
    "STEP_KEYS",
    "EndInfo",
    "InfoSchemaError",
    "Pose",
    "StepInfo",
    "check_info",
    "make_pose",
    "schema_problems",
]
