"""Contracts shared by the three environment families.

Every urban_gym environment

* accepts in ``step`` either an ``int`` (an index into its documented discrete action
  table -- the RL face) or a structured action (a dict or a bare action name, validated by
  its :class:`~urban_gym.envs.actions.ActionSet` -- the language-model face);
* turns an action it cannot carry out into an *invalid-action step*: the state does not
  change (time and the step counter do advance), the reward is
  :data:`INVALID_ACTION_REWARD`, ``info["action_valid"]`` is False and
  ``info["invalid_action"]`` holds the message; the count is in
  ``info["invalid_actions"]``;
* ends an episode with ``info["termination"]`` set to one of :data:`TERMINATION_REASONS`,
  ``info["metrics"]`` holding the task's scores and ``info["is_success"]`` (read by
  stable-baselines3's success logging);
* keeps privileged state (true pose, node, distance to the goal, shortest path) in
  ``info`` and never in the observation;
* keeps the type of every ``info`` value on every step (a value that does not apply is an
  absent key or a sentinel such as -1, never ``None`` one step and a number the next), so
  that vector envs can batch infos;
* raises ``gymnasium.error.ResetNeeded`` from ``step`` before the first ``reset`` and after
  the episode ended.
"""

from __future__ import annotations

from typing import Any

TERMINATION_REASONS: tuple[str, ...] = (
    "answered",  # the agent gave its answer (question tasks)
    "arrived",  # the agent stopped at / reached the goal
    "terminated_by_agent",  # the agent ended the episode without an answer
    "step_limit",
    "decision_limit",
    "transition_limit",
    "stagnation",  # the same action repeated without progress
    "away_from_goal",  # too many consecutive moves away from the goal
    "constraint_violated",
    "time_limit",  # simulation clock ran out
    "model_error",  # the language-model client gave up (set by the baselines)
)

INVALID_ACTION_REWARD = -0.01


def check_reason(reason: str) -> str:
    """Return ``reason`` if it is one of :data:`TERMINATION_REASONS`, else raise."""
    if reason not in TERMINATION_REASONS:
        raise ValueError(f"termination reason {reason!r} is not one of {TERMINATION_REASONS}")
    return reason


def invalid_step_info(message: str, count: int) -> dict[str, Any]:
    """The ``info`` entries of an invalid-action step."""
    return {"action_valid": False, "invalid_action": message, "invalid_actions": count}
