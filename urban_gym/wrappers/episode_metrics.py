"""The episode record: every step written down, the scores at the end.

:class:`EpisodeMetrics` records for each step the action (and the structured action it
stands for), whether it was carried out, the reward, the true pose, the distance to the goal
and the simulation clock (read from ``info`` with :mod:`urban_gym.wrappers.state`), and,
when the action came from a language model, the reply and what the parser read from it. On
the step that ends the episode it adds to ``info``:

* ``info["metrics"]`` -- the env's task scores plus ``steps``, ``return``,
  ``invalid_actions``, ``unreadable_replies`` and ``model_replies``;
* ``info["episode"]`` -- the complete JSON-serialisable record (task, seed, termination,
  metrics, steps, trajectory), with Gymnasium's ``r``/``l``/``t`` keys so that tools that
  read ``RecordEpisodeStatistics`` output keep working.

**Nothing is lost.** With ``path`` set, each finished record is appended to a JSONL file as
one whole, flushed line of strict JSON (:func:`urban_gym.strict_json.append_line`). A
record is written however the episode ends:

* the env ends it (its ``termination``), or the caller does with :meth:`abort` (the model
  client gave up: ``model_error``; an exception in the agent loop: ``agent_error``;
  Ctrl-C: ``interrupted``);
* the wrapped env's ``step`` raises: the record ends with ``env_error`` (``interrupted``
  for ``KeyboardInterrupt``) and the error's text, and the exception is raised again;
* ``reset`` or ``close`` comes before the end of an episode that took a step: the record
  ends with ``unfinished``.

What a step keeps of an action or a reply is bounded (:data:`STEP_LIMITS`: nesting depth,
entries per container, characters per string) and converted by
:func:`urban_gym.strict_json.json_safe`, so a reply nested 500 deep or an action nested
5,000 deep is recorded as a marker string at the cut, never as a ``RecursionError`` after
the env step was applied; lone surrogates are replaced by U+FFFD, ``NaN``/``Infinity``
become ``null``, integers beyond 64 bits become strings.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from urban_gym.envs.actions import UnreadableReply
from urban_gym.envs.base import TERMINATION_REASONS
from urban_gym.strict_json import append_line, json_safe
from urban_gym.wrappers.state import read_clock, read_distance, read_node, read_pose

#: Terminations that only the record knows (the env never reports them); see the module
#: docstring. ``model_error`` is among :data:`~urban_gym.envs.base.TERMINATION_REASONS`.
RECORD_REASONS: tuple[str, ...] = ("agent_error", "env_error", "interrupted", "unfinished")

#: Bounds of what a step record keeps of an action, a reply or an error message
#: (arguments of :func:`urban_gym.strict_json.json_safe`).
STEP_LIMITS: dict[str, int] = {"max_depth": 24, "max_items": 200, "max_chars": 20_000}


def check_record_reason(reason: str) -> str:
    """Return ``reason`` if it is an env termination reason or one of
    :data:`RECORD_REASONS`, else raise ``ValueError``.
    """
    if reason not in TERMINATION_REASONS and reason not in RECORD_REASONS:
        raise ValueError(
            f"termination reason {reason!r} is not one of {TERMINATION_REASONS + RECORD_REASONS}"
        )
    return reason


class EpisodeMetrics(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Record every step and put the metrics and the episode record into the last ``info``.

    Args:
        env: any urban_gym env.
        path: optional JSONL file; each finished episode's record is appended to it.
        keep_replies: keep model reply texts in the record (cut to 20,000 characters each).

    Attributes:
        record: the record of the current (or last) episode.
        records: all finished records of this wrapper's lifetime (most recent last).
    """

    def __init__(
        self, env: gym.Env, path: str | Path | None = None, keep_replies: bool = True
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, path=path, keep_replies=keep_replies)
        gym.Wrapper.__init__(self, env)
        self.path = Path(path) if path is not None else None
        self.keep_replies = keep_replies
        self.record: dict[str, Any] = {}
        self.records: list[dict[str, Any]] = []
        self._open = False
        self._t0 = 0.0
        self._unwritten: list[dict[str, Any]] = []
        self._step_notes: dict[str, Any] = {}

    @property
    def episode_open(self) -> bool:
        """True between a reset and the end of that episode."""
        return self._open

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the env and start a new record (an unfinished episode is recorded first)."""
        if self._open and self.record.get("steps"):
            self._finish("unfinished", {}, True, "reset before the episode ended")
        self._open = False
        obs, info = self.env.reset(seed=seed, options=options)
        self._t0 = time.perf_counter()
        self.record = {
            "env_id": _guard(lambda: getattr(getattr(self.env, "spec", None), "id", None)),
            "task": _guard(self._task_dict),
            "seed": json_safe(seed),
            "options": json_safe(options, **STEP_LIMITS) if options else None,
            "start": self._state(info),
            "steps": [],
            "termination": None,
            "metrics": {},
        }
        self._return = 0.0
        self._invalid = 0
        self._unreadable = 0
        self._replies = 0
        self._step_notes = {}
        self._open = True
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the env and add the step to the record; the episode's end writes it out."""
        try:
            obs, reward, terminated, truncated, info = self.env.step(action)
        except BaseException as exc:
            if self._open:
                self.record["failed_action"] = self._describe_action(action)
                reason = "env_error" if isinstance(exc, Exception) else "interrupted"
                self._finish(reason, {}, True, f"{type(exc).__name__}: {exc}")
            raise
        if self._open:
            self._record_step(action, reward, info)
            if terminated or truncated:
                reason = info.get("termination")
                if not isinstance(reason, str):
                    reason = "step_limit" if truncated else "terminated_by_agent"
                self._finish(reason, info, bool(truncated and not terminated))
                info["metrics"] = self.record["metrics"]
                info["episode"] = self.record
        return obs, reward, terminated, truncated, info

    def abort(self, reason: str = "model_error", message: str = "") -> dict[str, Any]:
        """End the current episode from outside (e.g. the model client gave up) and return
        its record, with ``termination`` = ``reason`` (an env termination reason or one of
        :data:`RECORD_REASONS`) and ``is_success`` False. After the end of the episode it
        only returns the last record (writing it if an interrupt kept it from the file).
        """
        check_record_reason(reason)
        if self._open:
            self._finish(reason, {"is_success": False}, True, message)
        else:
            self._flush()
        return self.record

    def annotate(self, **fields: Any) -> None:
        """Add ``fields`` (e.g. ``usage``, ``model``) to the current episode's record, so
        that the line written at its end holds them. Values are stored JSON-safe.
        """
        for k, v in fields.items():
            self.record[str(k)] = json_safe(v)

    def note_step(self, **fields: Any) -> None:
        """Add ``fields`` to the record of the next step (e.g. the model's tokens and
        latency for the reply about to be stepped).
        """
        self._step_notes.update({str(k): json_safe(v, **STEP_LIMITS) for k, v in fields.items()})

    def close(self) -> None:
        """Write the record of an episode left open (termination ``unfinished``) and any
        record an interrupt kept from the file, then close the env.
        """
        try:
            if self._open and self.record.get("steps"):
                self._finish("unfinished", {}, True, "closed before the episode ended")
            self._open = False
            self._flush()
        finally:
            super().close()

    # ------------------------------------------------------------------ recording
    def _task_dict(self) -> Any:
        task = getattr(self.env.unwrapped, "task", None)
        return json_safe(task.to_dict()) if hasattr(task, "to_dict") else None

    def _state(self, info: Any) -> dict[str, Any]:
        try:
            pose = read_pose(info)
            node = read_node(info)
            out: dict[str, Any] = {
                "pose": json_safe(pose.to_dict()) if pose is not None else None,
                "distance_to_goal": _round(read_distance(info)),
                "clock": _round(read_clock(info)),
            }
            if node is not None:
                out["node"] = json_safe(node, **STEP_LIMITS)
            return out
        except Exception as exc:
            return {
                "pose": None,
                "distance_to_goal": None,
                "clock": None,
                "state_error": _error_text(exc),
            }

    def _record_step(self, action: Any, reward: SupportsFloat, info: Mapping[str, Any]) -> None:
        t = len(self.record["steps"]) + 1
        valid = _guard(lambda: bool(info.get("action_valid", True)), True)
        self._invalid += 0 if valid else 1
        r = _finite(reward)
        self._return += r
        step: dict[str, Any] = {"t": t}
        step.update(self._describe_action(action))
        step["valid"] = valid
        if not valid:
            step["invalid_action"] = json_safe(str(info.get("invalid_action", "")), **STEP_LIMITS)
        step["reward"] = _round(r, 6)
        step.update(self._state(info))
        reply = getattr(action, "reply", None)
        if reply is not None:
            self._replies += 1
            if not getattr(reply, "ok", False) and getattr(reply, "stage", "") == "":
                self._unreadable += 1
            step["reply"] = self._describe_reply(action, reply)
        if self._step_notes:
            step.update(self._step_notes)
            self._step_notes = {}
        self.record["steps"].append(step)

    def _describe_action(self, action: Any) -> dict[str, Any]:
        try:
            if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
                a = int(action)
                out: dict[str, Any] = {"action_index": json_safe(a)}
                table = getattr(self.env.unwrapped, "action_table", None)
                if table is not None and 0 <= a < len(table):
                    out["action"] = json_safe(table[a], **STEP_LIMITS)
                return out
            if isinstance(action, UnreadableReply):  # no action: the reply entry says why
                return {"action": None}
            return {"action": json_safe(action, **STEP_LIMITS)}
        except Exception as exc:  # an action type whose inspection fails
            return {"action": f"<{type(action).__name__}>", "record_error": _error_text(exc)}

    def _describe_reply(self, action: Any, reply: Any) -> Any:
        try:
            entry = dict(reply.to_dict())
        except Exception as exc:  # the parser's summary failed: keep what can be read
            entry = {k: getattr(reply, k, None) for k in ("ok", "action", "error", "stage")}
            entry["fields"] = getattr(reply, "fields", None)
            entry["record_error"] = _error_text(exc)
        if self.keep_replies:
            entry["text"] = getattr(action, "text", "")
            if getattr(action, "text_truncated", False):
                entry["text_truncated"] = True
        return json_safe(entry, **STEP_LIMITS)

    def _finish(
        self, reason: str, info: Mapping[str, Any], truncated: bool, error: str = ""
    ) -> None:
        """Close the record with ``reason`` and write it (never raises before writing)."""
        self._open = False
        rec = self.record
        if error:
            rec["error"] = json_safe(error, **STEP_LIMITS)
        metrics = _guard(lambda: json_safe(info.get("metrics") or {}), {})
        if not isinstance(metrics, dict):
            metrics = {"env_metrics": metrics}
        steps = len(rec["steps"])
        is_success = _guard(lambda: bool(info.get("is_success", False)), False)
        invalid = _guard(lambda: json_safe(int(info.get("invalid_actions", self._invalid))))
        metrics.update(
            {
                "steps": steps,
                "return": _round(self._return, 6),
                "invalid_actions": invalid if isinstance(invalid, int) else self._invalid,
                "unreadable_replies": self._unreadable,
                "model_replies": self._replies,
            }
        )
        metrics.setdefault("is_success", is_success)
        wall = time.perf_counter() - self._t0
        rec.update(
            {
                "termination": json_safe(reason, **STEP_LIMITS),
                "truncated": bool(truncated),
                "is_success": is_success,
                "metrics": metrics,
                "end": rec["steps"][-1] if rec["steps"] else rec["start"],
                "trajectory": [
                    s["pose"] for s in [rec["start"], *rec["steps"]] if s.get("pose") is not None
                ],
                "r": _round(self._return, 6),
                "l": steps,
                "t": round(wall, 4),
            }
        )
        self.records.append(rec)
        if self.path is not None:
            self._unwritten.append(rec)
        self._flush()

    def _flush(self) -> None:
        """Append the records not yet in the file, oldest first, each as one line."""
        while self._unwritten and self.path is not None:
            append_line(self.path, self._unwritten[0])
            self._unwritten.pop(0)


def _round(v: Any, digits: int = 3) -> float | None:
    f = _guard(lambda: float(v)) if v is not None else None
    return round(f, digits) if isinstance(f, float) and np.isfinite(f) else None


def _finite(v: Any) -> float:
    """``float(v)``, or NaN when ``v`` is not a number (the return is then not recorded)."""
    return _guard(lambda: float(v), float("nan"))


def _error_text(exc: BaseException) -> str:
    return json_safe(f"{type(exc).__name__}: {_guard(lambda: str(exc), '')}", max_chars=500)


def _guard(fn: Any, default: Any = None) -> Any:
    """``fn()``, or ``default`` when it raises (reading an env's odd values never fails)."""
    try:
        return fn()
    except Exception:
        return default
