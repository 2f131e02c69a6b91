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

An episode that ends from outside -- the model client gave up -- is closed with
:meth:`EpisodeMetrics.abort`, which writes the same record with that termination
(``model_error``). With ``path`` set, each finished record is appended to a JSONL file.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from urban_gym.envs.base import check_reason
from urban_gym.wrappers.state import read_clock, read_distance, read_node, read_pose


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

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        task = getattr(self.env.unwrapped, "task", None)
        spec = getattr(self.env, "spec", None)
        self._t0 = time.perf_counter()
        self.record = {
            "env_id": getattr(spec, "id", None),
            "task": task.to_dict() if hasattr(task, "to_dict") else None,
            "seed": seed,
            "options": _jsonable(options) if options else None,
            "start": self._state(info),
            "steps": [],
            "termination": None,
            "metrics": {},
        }
        self._return = 0.0
        self._invalid = 0
        self._unreadable = 0
        self._replies = 0
        self._open = True
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._open:
            self._record_step(action, reward, info)
            if terminated or truncated:
                reason = info.get("termination")
                if reason is None:
                    reason = "step_limit" if truncated else "terminated_by_agent"
                self._finish(reason, info, truncated=bool(truncated and not terminated))
                info["metrics"] = self.record["metrics"]
                info["episode"] = self.record
        return obs, reward, terminated, truncated, info

    def abort(self, reason: str = "model_error", message: str = "") -> dict[str, Any]:
        """End the current episode from outside (e.g. the model client gave up) and return
        its record, with ``termination`` = ``reason`` and ``is_success`` False."""
        check_reason(reason)
        if not self._open:
            return self.record
        info: dict[str, Any] = {"is_success": False}
        if message:
            self.record["error"] = message
        self._finish(reason, info, truncated=True)
        return self.record

    # ------------------------------------------------------------------ recording
    def _state(self, info: Mapping[str, Any]) -> dict[str, Any]:
        pose = read_pose(info)
        node = read_node(info)
        out: dict[str, Any] = {
            "pose": pose.to_dict() if pose is not None else None,
            "distance_to_goal": _round(read_distance(info)),
            "clock": _round(read_clock(info)),
        }
        if node is not None:
            out["node"] = _jsonable(node)
        return out

    def _record_step(self, action: Any, reward: SupportsFloat, info: Mapping[str, Any]) -> None:
        valid = bool(info.get("action_valid", True))
        self._invalid += 0 if valid else 1
        r = float(reward)
        self._return += r
        step: dict[str, Any] = {"t": len(self.record["steps"]) + 1}
        step.update(self._describe_action(action))
        step["valid"] = valid
        if not valid:
            step["invalid_action"] = str(info.get("invalid_action", ""))
        step["reward"] = _round(r, 6)
        step.update(self._state(info))
        reply = getattr(action, "reply", None)
        if reply is not None:
            self._replies += 1
            if not reply.ok and reply.stage == "":
                self._unreadable += 1
            entry = reply.to_dict()
            if self.keep_replies:
                entry["text"] = getattr(action, "text", "")
                if getattr(action, "text_truncated", False):
                    entry["text_truncated"] = True
            step["reply"] = entry
        self.record["steps"].append(step)

    def _describe_action(self, action: Any) -> dict[str, Any]:
        if isinstance(action, (int, np.integer)):
            table = getattr(self.env.unwrapped, "action_table", None)
            out: dict[str, Any] = {"action_index": int(action)}
            if table is not None and 0 <= int(action) < len(table):
                out["action"] = _jsonable(table[int(action)])
            return out
        if isinstance(action, Mapping):
            return {"action": _jsonable(dict(action))}
        return {"action": _jsonable(action)}

    def _finish(self, reason: str, info: Mapping[str, Any], truncated: bool) -> None:
        rec = self.record
        metrics = dict(_jsonable(info.get("metrics") or {}))
        steps = len(rec["steps"])
        metrics.update(
            {
                "steps": steps,
                "return": _round(self._return, 6),
                "invalid_actions": int(info.get("invalid_actions", self._invalid)),
                "unreadable_replies": self._unreadable,
                "model_replies": self._replies,
            }
        )
        metrics.setdefault("is_success", bool(info.get("is_success", False)))
        wall = time.perf_counter() - self._t0
        rec.update(
            {
                "termination": reason,
                "truncated": truncated,
                "is_success": bool(info.get("is_success", False)),
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
        self._open = False
        self.records.append(rec)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def _round(v: float | None, digits: int = 3) -> float | None:
    if v is None:
        return None
    return round(float(v), digits) if math.isfinite(float(v)) else None


def _jsonable(value: Any) -> Any:
    """A JSON-serialisable copy: numpy scalars/arrays to Python, tuples to lists, dataclass
    and other objects to their ``to_dict()`` or ``repr``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        return _jsonable(value.to_dict())
    return repr(value)
