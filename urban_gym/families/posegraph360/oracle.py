"""The PoseGraph360 oracle: shortest path on the pose graph, ground-truth answers."""

from __future__ import annotations

from typing import Any

from urban_gym.families.posegraph360 import tasks as T


class PoseGraphOracle:
    """Solves PoseGraph360 tasks from privileged state.

    Question tasks (localization, object count, relational) are answered at once with
    the task's ground truth. Navigation tasks follow a shortest route on the pose graph
    (:func:`urban_gym.families.posegraph360.tasks.plan_actions`, re-planned from the true state
    every step, so it recovers from any state) and answer on the goal frame.
    ``act`` returns canonical structured actions of the env's ActionSet; map one to the
    RL face with ``env.unwrapped.action_index(action)``.
    """

    def __init__(self) -> None:
        self._task_id: str | None = None
        self._field: Any = None

    def reset(self, env: Any) -> None:
        """Forget the previous task's distance field."""
        self._task_id = None
        self._field = None

    def act(self, env: Any) -> dict[str, Any]:
        """The next structured action: the answer of a question, else a step along a shortest
        route to the goal.
        """
        u = env.unwrapped
        task = u.task
        if task.type in T.QUESTION_TYPES:
            return {"action": "ANSWER", "text": str(task.answer)}
        if self._task_id != task.id or self._field is None:
            self._task_id = task.id
            self._field = u.graph.distance_field(T.goal_states(u.graph, task))
        plan = T.plan_actions(
            u.graph,
            u.state,
            u.yaw,
            self._field.goals,
            u.forward_frames,
            field_=self._field,
            max_actions=1000,
        )
        return plan[0]
