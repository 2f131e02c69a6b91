"""The harness's per-episode deadline: :class:`Deadlined` wraps an agent so that its
``act`` returns within the episode's wall-clock deadline or the episode ends.

Each ``act`` runs in a daemon thread and is waited for until the deadline; past it the
episode ends as the agent giving up (:class:`~urban_gym.errors.AgentGaveUp` with
termination ``episode_deadline``), so the env records the family's metrics of the episode
so far. A call that hangs is left behind in its thread (Python cannot stop a thread); the
run goes on with the next episode.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from urban_gym.errors import AgentGaveUp, InputError

#: The termination of an episode that ran past its deadline.
EPISODE_DEADLINE = "episode_deadline"


class Deadlined:
    """``agent`` with an episode deadline of ``deadline_s`` seconds from now; every other
    attribute is the agent's.
    """

    def __init__(self, agent: Any, deadline_s: float) -> None:
        if not (isinstance(deadline_s, (int, float)) and 0 < deadline_s < float("inf")):
            raise InputError(f"episode deadline {deadline_s!r} must be a finite number of s > 0")
        self._agent = agent
        self._deadline_s = float(deadline_s)
        self._end = time.monotonic() + self._deadline_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._agent, name)

    def _expired(self, doing: str) -> AgentGaveUp:
        return AgentGaveUp(
            EPISODE_DEADLINE,
            f"the episode deadline of {self._deadline_s:g} s passed {doing} (--episode-deadline)",
        )

    def act(self, obs: Any, info: Any) -> Any:
        """The agent's action, or :class:`AgentGaveUp` once the deadline has passed."""
        left = self._end - time.monotonic()
        if left <= 0:
            raise self._expired("between steps")
        box: dict[str, Any] = {}
        done = threading.Event()

        def call() -> None:
            try:
                box["action"] = self._agent.act(obs, info)
            except BaseException as exc:  # handed to the episode loop
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=call, name="agent-act", daemon=True).start()
        if not done.wait(left):
            raise self._expired("while the agent was acting")
        if "error" in box:
            raise box["error"]
        return box["action"]


__all__ = ["EPISODE_DEADLINE", "Deadlined"]
