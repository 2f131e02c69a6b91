"""The harness's per-episode deadline: :class:`Deadlined` wraps an agent so that its
``act`` returns within the episode's wall-clock deadline or the episode ends.

Each ``act`` runs in the episode's one worker thread (a daemon, started at the first
``act`` and stopped by :meth:`Deadlined.stop_worker`) and is waited for until the deadline; past it the
episode ends as the agent giving up (:class:`~urban_gym.errors.AgentGaveUp` with
termination ``episode_deadline``), so the env records the family's metrics of the episode
so far. A call that hangs is left behind in its thread (Python cannot stop a thread); the
run goes on with the next episode.
"""

from __future__ import annotations

import queue
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
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None

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
        if self._worker is None:
            self._worker = threading.Thread(target=self._serve, name="agent-act", daemon=True)
            self._worker.start()
        self._jobs.put((obs, info, box, done))
        if not done.wait(left):
            raise self._expired("while the agent was acting")
        if "error" in box:
            raise box["error"]
        return box["action"]

    def _serve(self) -> None:
        """The worker: run each queued ``act`` until :meth:`stop_worker` queues None."""
        while (job := self._jobs.get()) is not None:
            obs, info, box, done = job
            try:
                box["action"] = self._agent.act(obs, info)
            except BaseException as exc:  # handed to the episode loop
                box["error"] = exc
            finally:
                done.set()

    def stop_worker(self) -> None:
        """End the worker once its current call returns (a hung call keeps it, a daemon)."""
        if self._worker is not None:
            self._jobs.put(None)
            self._worker = None


__all__ = ["EPISODE_DEADLINE", "Deadlined"]
