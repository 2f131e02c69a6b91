"""A human run: the run folder, the episode keys, which session plays which key, and the
records -- the harness's own format, so that ``urban-gym report`` reads it like any run.

:class:`PlayRun` writes ``RUN_DIR/manifest.json`` (built by the harness's
:func:`~urban_gym.eval.runner.build_manifest`, with ``agent`` =
``{"spec": "human", "kind": "human", ...}``), and appends one record per finished (or
abandoned) episode to ``episodes.jsonl`` with its trace in ``traces/`` -- whole lines,
one writer, under a lock, so several people can play at once.

**Which task a session gets.** The run's episode keys are those of ``urban-gym eval``
(:func:`~urban_gym.eval.runner.episode_keys`: repeat by repeat, tasks in the env's order).
A session asking for a task gets the first key that is neither recorded nor being played
by another session. The order is fixed, so the same recorded set always leads to the same
next task.

**Resume.** Starting ``urban-gym play`` again on the same ``--out`` with the same env,
tasks and seeds checks the manifest (a different run is refused, as ``urban-gym eval``
refuses it), reads the records (cutting off a torn last line) and skips every recorded key.
Episodes that were running when the server stopped were recorded as abandoned when it
stopped; an episode cut off by a hard kill (no record) is offered again.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from urban_gym.eval.records import RunDir, record_key
from urban_gym.eval.runlock import RunLock
from urban_gym.eval.runner import build_manifest, episode_keys
from urban_gym.eval.trace import task_summary
from urban_gym.eval.worker import EpisodeKey, RunSpec, make_env
from urban_gym.play.session import HumanAgent, PlaySession, PlaySettings
from urban_gym.redact import redact_argv

#: The manifest's ``agent`` entry of every human run.
HUMAN_AGENT: dict[str, Any] = {
    "spec": "human",
    "kind": "human",
    "options": {},
    "config": {"kind": "human", "interface": "browser (urban-gym play)"},
}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class PlayRun:
    """A run of people playing ``env_id`` into the run folder ``out``.

    Args:
        env_id: a registered id.
        out: the run folder (created, or resumed when it holds the same run).
        env_kwargs: ``gym.make`` keyword arguments (``suite``, ``task_types``, ...).
        task_ids: only these tasks (default: all the env's tasks).
        seeds, seed, seeding: as ``urban-gym eval`` (repeats, base seed, scheme).
        track_visibility: record ``goal_visible`` per step (as ``urban-gym eval`` does).
        settings: when sessions count as abandoned (:class:`PlaySettings`).
        force: move a different run in ``out`` aside instead of refusing it.
        command: the command line, for the manifest.
    """

    def __init__(
        self,
        env_id: str,
        out: str | os.PathLike,
        env_kwargs: Mapping[str, Any] | None = None,
        task_ids: Sequence[str] | None = None,
        seeds: int = 1,
        seed: int = 0,
        seeding: str = "repeat",
        track_visibility: bool = True,
        settings: PlaySettings | None = None,
        force: bool = False,
        command: Sequence[str] | None = None,
    ) -> None:
        kwargs = dict(env_kwargs or {})
        if track_visibility:
            kwargs["track_visibility"] = True
        self.settings = settings or PlaySettings()
        self.run_dir = RunDir(out)
        self.spec = RunSpec(env_id=env_id, env_kwargs=kwargs, agent="human", run_dir=str(out))
        env = make_env(self.spec)
        self.env_id = env_id
        u: Any = env.unwrapped  # the family's UrbanEnv
        self.family = str(u.family)
        self._tasks = {t.id: t for t in u.tasks}
        self._summaries: dict[str, dict[str, Any]] = {}
        self.keys: list[EpisodeKey] = episode_keys(u.tasks, task_ids, seeds, seed, seeding)
        self._position = {k.key: i + 1 for i, k in enumerate(self.keys)}
        self.manifest = self._manifest(env, task_ids, seeds, seed, seeding)
        invocation = {
            "started": _now(),
            "command": redact_argv(command),  # credentials replaced
            "backend": "play",
            "settings": vars(self.settings),
            "urban_gym_version": self.manifest["urban_gym_version"],
            "git": self.manifest["git"],
            "python": platform.python_version(),
            "host": platform.node(),
        }
        self._runlock = RunLock(self.run_dir.path).acquire()  # one writer per run folder
        try:
            self.resumed = self.run_dir.start(self.manifest, invocation, force=force)
        except BaseException:
            self._runlock.release()
            raise
        self.done = {record_key(r) for r in self.run_dir.read_episodes(repair=True)}
        self.done_before = len([k for k in self.keys if k.key in self.done])
        self.active: dict[tuple[str, int, int], str] = {}
        self.sessions: dict[str, PlaySession] = {}
        self._pool = [env]
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._reaper = threading.Thread(target=self._reap, name="play-reaper", daemon=True)
        self._reaper.start()

    def _manifest(
        self, env: Any, task_ids: Sequence[str] | None, seeds: int, seed: int, seeding: str
    ) -> dict[str, Any]:
        kw = self.spec.env_kwargs
        # build_manifest names the agent by a spec the harness can load; a person is not one
        spec = RunSpec(self.spec.env_id, kw, "urban_gym.play.session:HumanAgent")
        task_filter = {
            "task_types": kw.get("task_types"),
            "difficulties": kw.get("difficulties"),
            "task_ids": list(task_ids) if task_ids is not None else None,
        }
        m = build_manifest(spec, env, HumanAgent(), self.keys, seeds, seed, seeding, task_filter)
        m["agent"] = dict(HUMAN_AGENT)
        return m

    # ------------------------------------------------------------------ tasks
    def task(self, key: EpisodeKey) -> Any:
        """The TaskSpec of ``key``."""
        return self._tasks[key.task_id]

    def summary(self, key: EpisodeKey) -> dict[str, Any]:
        """The task fields of ``key``'s record (family, type, category, ...)."""
        s = self._summaries.get(key.task_id)
        if s is None:
            s = self._summaries[key.task_id] = task_summary(self.task(key))
        return s

    def position(self, key: EpisodeKey) -> int:
        """``key``'s number in the run (1-based)."""
        return self._position[key.key]

    def progress(self) -> dict[str, int]:
        """Episodes of the run: ``total``, ``recorded``, ``playing``."""
        with self._lock:
            recorded = sum(1 for k in self.keys if k.key in self.done)
            return {"total": len(self.keys), "recorded": recorded, "playing": len(self.active)}

    def claim(self, session: PlaySession) -> EpisodeKey | None:
        """The next key for ``session`` (see the module docstring), or None when every key
        is recorded or being played.
        """
        with self._lock:
            for k in self.keys:
                if k.key not in self.done and k.key not in self.active:
                    self.active[k.key] = session.sid
                    return k
            return None

    def release(self, key: EpisodeKey) -> None:
        """Give ``key`` back unrecorded (its episode could not start)."""
        with self._lock:
            self.active.pop(key.key, None)

    def record(self, key: EpisodeKey, record: dict[str, Any], steps: list[dict]) -> None:
        """Write ``key``'s trace, then append its record (one whole line)."""
        with self._lock:
            record["trace"] = self.run_dir.write_trace(key.name, steps, small_ints=True)
            self.run_dir.append(record)
            self.done.add(key.key)
            self.active.pop(key.key, None)

    # ------------------------------------------------------------------ sessions
    def new_session(self) -> PlaySession:
        """A session with an env of its own (a pooled one when there is one)."""
        with self._lock:
            env = self._pool.pop() if self._pool else None
        if env is None:
            env = make_env(self.spec)
        s = PlaySession(self, env)
        with self._lock:
            self.sessions[s.token] = s
        return s

    def live_sessions(self, now: float | None = None) -> int:
        """Sessions that count against ``settings.max_sessions``: those playing an
        episode and those whose page was heard from within ``heartbeat_timeout_s``.
        """
        now = time.monotonic() if now is None else now
        limit = self.settings.heartbeat_timeout_s
        with self._lock:
            sessions = list(self.sessions.values())
        return sum(1 for s in sessions if s.phase == "playing" or now - s.last_seen < limit)

    def session(self, token: str | None) -> PlaySession | None:
        """The session of a cookie value, or None."""
        if not token:
            return None
        with self._lock:
            return self.sessions.get(token)

    def _reap(self) -> None:
        while not self._stop.wait(self.settings.reap_interval_s):
            self.reap(time.monotonic())

    def reap(self, now: float) -> list[str]:
        """Abandon the episodes of sessions that timed out; forget sessions idle between
        tasks for ``idle_timeout_s`` (their envs go back to the pool). Returns the ids of
        the sessions abandoned now.
        """
        out = []
        with self._lock:
            sessions = list(self.sessions.items())
        for token, s in sessions:
            reason = s.check_timeouts(now, self.settings)
            if reason is not None and s.abandon(reason):
                out.append(s.sid)
            elif s.phase != "playing" and now - s.last_seen > self.settings.idle_timeout_s:
                with self._lock:
                    self.sessions.pop(token, None)
                    self._pool.append(s.env)
        return out

    def latencies(self) -> dict[str, list[float]]:
        """Server milliseconds per command, by control id, over all sessions."""
        out: dict[str, list[float]] = {}
        with self._lock:
            sessions = list(self.sessions.values())
        for s in sessions:
            for control, ms in list(s.latencies):
                out.setdefault(control, []).append(ms)
        return out

    def close(self, reason: str = "the server stopped", timeout: float = 60.0) -> None:
        """Stop: every running episode is recorded as abandoned (``reason``), the records
        file is closed and the envs are released.
        """
        self._stop.set()
        with self._lock:
            sessions = list(self.sessions.values())
        for s in sessions:
            s.abandon(reason)
        for s in sessions:
            s.join(timeout)
        self.run_dir.close()
        self._runlock.release()
        envs = [s.env for s in sessions] + self._pool
        self._pool = []
        for env in envs:
            try:
                env.close()
            except Exception:  # pragma: no cover - closing is best effort
                pass

    @property
    def path(self) -> Path:
        """The run folder."""
        return self.run_dir.path


__all__ = ["HUMAN_AGENT", "PlayRun"]
