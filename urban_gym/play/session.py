"""One person's browser session: its own env, the episode it plays, and the agent that
stands in for the person inside the evaluation harness.

Each episode runs in a thread of its own through the harness's
:func:`urban_gym.eval.trace.run_episode` -- the very loop every agent runs in -- with a
:class:`HumanAgent` whose ``act`` publishes what the page should show and then waits for
the person's next command. So a person's episode produces the same record and trace as
any agent's: the actions the env received, their validity, the pose at every step, and in
``timing`` the person's thinking time per step (``latency_s``, summed in
``model_latency_s``).

**Abandonment.** A session is abandoned when its page was closed (the page's ``pagehide``
beacon, then no request within ``leave_grace_s``), stopped answering (no heartbeat for
``heartbeat_timeout_s``: a crashed browser, a lost connection), was idle (no action for
``idle_timeout_s``) or when the server stops. The waiting ``act`` then raises
:class:`~urban_gym.baselines.agents.AgentGaveUp` with termination ``abandoned`` and the
harness ends the episode there: it is recorded with ``termination: "abandoned"``,
``is_success: false``, the family's metrics of the episode so far, its trace, and the
reason in ``error``. Nothing is lost, and the key is done: a resumed run does not offer it
again.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from urban_gym.baselines.agents import AgentGaveUp, BaseAgent
from urban_gym.errors import SessionBusy
from urban_gym.play.controls import to_action
from urban_gym.play.view import page_state

if TYPE_CHECKING:
    from urban_gym.eval.worker import EpisodeKey

#: The termination of an episode a person left unfinished (``envs.base.TERMINATION_REASONS``).
ABANDONED = "abandoned"
#: The longest an HTTP request waits for the env's next frame (seconds).
STEP_WAIT_S = 120.0


@dataclass(frozen=True)
class PlaySettings:
    """When a session counts as abandoned (seconds; see the module docstring), and how
    many pages may play at once (``max_sessions``: a new page beyond it is refused while
    the others are alive).
    """

    idle_timeout_s: float = 1800.0
    heartbeat_timeout_s: float = 120.0
    leave_grace_s: float = 15.0
    reap_interval_s: float = 1.0
    max_sessions: int = 8


class HumanAgent(BaseAgent):
    """The person behind a :class:`PlaySession`, as the harness's agent protocol sees it:
    ``act`` shows the observation on the page and returns the structured action of the
    person's next command (or raises ``AgentGaveUp("abandoned", reason)``).
    """

    kind = "human"

    def __init__(self, session: PlaySession | None = None) -> None:
        self.session = session
        self._think_s = 0.0

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        """Publish ``obs`` to the page, wait for the person's command, return its action."""
        if self.session is None:
            raise RuntimeError("a HumanAgent acts only inside a PlaySession")
        action, self._think_s = self.session._await_command(obs, info)
        return action

    def step_info(self) -> dict[str, Any]:
        """The person's thinking time of the last step (from the frame to the command, s)."""
        return {"latency_s": self._think_s}

    def config(self) -> dict[str, Any]:
        """What the manifest records: a person at the browser page."""
        return {"kind": "human", "interface": "browser (urban-gym play)"}


class PlaySession:
    """One browser session (a cookie): its env, its episode thread and the page state;
    ``run`` is the :class:`~urban_gym.play.run.PlayRun` it belongs to.

    Phases: ``new`` (no episode yet), ``playing``, ``between`` (the last episode is
    recorded; the person presses "next task"), ``done`` (no task left in the run).
    """

    def __init__(self, run: Any, env: Any) -> None:
        self.run = run
        self.env = env
        self.token = secrets.token_urlsafe(18)
        self.sid = secrets.token_hex(4)
        self.family = str(env.unwrapped.family)
        self.agent = HumanAgent(self)
        self._cond = threading.Condition()
        self.phase = "new"
        self.key: EpisodeKey | None = None
        self.version = 0
        self._view: dict[str, Any] = {}
        self._feedback = ""
        self._steps = 0
        self._waiting = False
        self._command: Any = None
        self._abandon: str | None = None
        self._shown_at = 0.0
        self._thread: threading.Thread | None = None
        self._oracle: Any = None
        self.last: dict[str, Any] | None = None
        now = time.monotonic()
        self.last_seen = now
        self.last_action = now
        self.leaving_since: float | None = None
        self.latencies: list[tuple[str, float]] = []

    # ------------------------------------------------------------------ page side
    def touch(self) -> None:
        """A request of the page arrived: the page is alive (cancels a leave)."""
        with self._cond:
            self.last_seen = time.monotonic()
            self.leaving_since = None

    def leave(self) -> None:
        """The page is being closed or reloaded (its ``pagehide`` beacon)."""
        with self._cond:
            self.leaving_since = time.monotonic()

    def state(self) -> dict[str, Any]:
        """The page state now (JSON-ready)."""
        with self._cond:
            return self._state()

    def _state(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "session": self.sid,
            "phase": self.phase,
            "version": self.version,
            "progress": self.run.progress(),
            "last": self.last,
        }
        if self.phase == "playing" and self.key is not None:
            out.update(
                {
                    "task": {"number": self.run.position(self.key), "of": len(self.run.keys)},
                    "step": self._steps,
                    "feedback": self._feedback,
                    "ready": self._waiting,
                    **self._view,
                }
            )
        return out

    def start_next(self, timeout: float = STEP_WAIT_S) -> dict[str, Any]:
        """Start the next task of the run (none left: phase ``done``); returns the first
        frame's state.
        """
        with self._cond:
            if self.phase == "playing":
                return self._state()
            key = self.run.claim(self)
            if key is None:
                self.phase = "done"
                self.version += 1
                return self._state()
            self.key, self.phase, self._steps, self._feedback = key, "playing", 0, ""
            self._abandon, self._waiting, self._command, self._oracle = None, False, None, None
            self._view = {}
            v = self.version
            self._thread = threading.Thread(
                target=self._play, args=(key,), name=f"play-{self.sid}", daemon=True
            )
            self._thread.start()
            self._cond.wait_for(lambda: self.version > v, timeout)
            return self._state()

    def command(self, control: object, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """Carry out one command of the page; returns the state with the new frame and
        ``server_ms`` (milliseconds from here to the frame being ready).
        """
        t0 = time.perf_counter()
        with self._cond:
            self.last_seen = self.last_action = time.monotonic()
            self.leaving_since = None
            if self.phase != "playing" or not self._waiting:
                raise SessionBusy(
                    "no step can be taken now (the last one is still running, or no task is "
                    f"being played: {self.phase})"
                )
            action = to_action(self.family, control, params, self.env)
            v = self.version
            self._command = action
            self._waiting = False
            self._cond.notify_all()
            self._cond.wait_for(lambda: self.version > v, STEP_WAIT_S)
            ms = (time.perf_counter() - t0) * 1000.0
            self.latencies.append((str(control), ms))
            out = self._state()
        out["server_ms"] = round(ms, 2)
        return out

    def abandon(self, reason: str) -> bool:
        """End the running episode as abandoned (``reason`` goes into the record's
        ``error``); False when no episode is running.
        """
        with self._cond:
            if self.phase != "playing" or self._abandon is not None:
                return False
            self._abandon = reason
            self._cond.notify_all()
            return True

    def check_timeouts(self, now: float, s: PlaySettings) -> str | None:
        """The reason this session's episode must be abandoned now, or None."""
        with self._cond:
            if self.phase != "playing":
                return None
            if self.leaving_since is not None and now - self.leaving_since > s.leave_grace_s:
                return "the page was closed"
            if now - self.last_seen > s.heartbeat_timeout_s:
                return f"the page stopped answering (no request for {s.heartbeat_timeout_s:g} s)"
            if now - self.last_action > s.idle_timeout_s:
                return f"no action for {s.idle_timeout_s:g} s"
            return None

    def oracle_action(self) -> dict[str, Any]:
        """The privileged oracle's next structured action in this session's state.

        For tests and benchmarks that play the page with the oracle's choices (the page
        never sees it); call it only while the page waits for a command.
        """
        with self._cond:
            if self.phase != "playing" or not self._waiting:
                raise SessionBusy("the oracle can only be asked while the page waits for a command")
            if self._oracle is None:
                from urban_gym.baselines.oracles import make_oracle

                self._oracle = make_oracle(self.env)
                self._oracle.reset(self.env)
            return dict(self._oracle.act(self.env))

    def join(self, timeout: float | None = None) -> None:
        """Wait for the episode thread (if any) to finish."""
        t = self._thread
        if t is not None:
            t.join(timeout)

    # ------------------------------------------------------------------ episode side
    def _await_command(self, obs: Any, info: Mapping[str, Any]) -> tuple[Any, float]:
        """Called by :class:`HumanAgent` in the episode thread (see the module docstring)."""
        view = page_state(self.env, obs)
        with self._cond:
            self._steps = int(info.get("steps", 0))
            self._view = view
            valid = info.get("action_valid", True)
            self._feedback = "" if valid else str(info.get("invalid_action", "invalid action"))
            self._waiting = True
            self._command = None
            self._shown_at = time.perf_counter()
            self.version += 1
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._command is not None or self._abandon is not None)
            self._waiting = False
            if self._abandon is not None:
                raise AgentGaveUp(ABANDONED, f"abandoned: {self._abandon}")
            action, self._command = self._command, None
            return action, time.perf_counter() - self._shown_at

    def _play(self, key: EpisodeKey) -> None:
        """The episode thread: one harness episode, then its record."""
        from urban_gym.eval.trace import run_episode

        last: dict[str, Any]
        try:
            record, steps = run_episode(
                self.env, self.agent, key, task=self.run.task(key), summary=self.run.summary(key)
            )
            record["session"] = self.sid
            self.run.record(key, record, steps)
            last = {
                "number": self.run.position(key),
                "termination": record["termination"],
                "steps": record["steps"],
            }
        except Exception as exc:  # a reset that failed: the key stays unrecorded
            self.run.release(key)
            last = {"number": self.run.position(key), "error": f"{type(exc).__name__}: {exc}"}
        with self._cond:
            self.phase, self.key, self._waiting = "between", None, False
            self.last = last
            self.version += 1
            self._cond.notify_all()


__all__ = ["ABANDONED", "HumanAgent", "PlaySession", "PlaySettings", "SessionBusy"]
