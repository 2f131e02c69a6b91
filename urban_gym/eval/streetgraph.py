"""Evaluate the oracle and the random agent on StreetGraph suites (``urban-gym
streetgraph-eval``): mean Success, SPL and Decision Accuracy (plus nDTW, SDTW, task
completion and SPD for instruction tasks) over every task of a suite."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from urban_gym.eval import episodes

#: Metrics averaged over episodes (those an episode lacks are skipped).
REPORTED = (
    "success",
    "spl",
    "decision_accuracy",
    "ndtw",
    "sdtw",
    "task_completion",
    "spd",
    "decisions",
    "distance_m",
    "shortest_m",
)


def run_agent(env: Any, agent: str, task_index: int, seed: int) -> dict[str, Any]:
    """One episode of ``agent`` (``"oracle"`` or ``"random"``) on task ``task_index``;
    returns the final ``info["metrics"]`` plus ``termination`` and ``task``."""
    info = episodes.run_episode(env, agent, task_index, seed)
    return {**info["metrics"], "termination": info["termination"], "task": info["task"].id}


def evaluate(
    env: Any,
    agent: str,
    seed: int = 0,
    episodes: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run ``agent`` once on each of the first ``episodes`` tasks of ``env`` (default
    all; episode ``i`` uses task ``i`` and seed ``seed + i``) and average the metrics.

    Returns ``{"agent", "episodes", "mean": {metric: value}, "terminations": {...}}``;
    decision accuracy is averaged over episodes that made at least one decision.
    """
    n = len(env.tasks) if episodes is None else min(int(episodes), len(env.tasks))
    rows = []
    for i in range(n):
        rows.append(run_agent(env, agent, i, seed + i))
        if progress is not None:
            progress(i + 1, n)
    mean: dict[str, float] = {}
    for k in REPORTED:
        vals = [float(r[k]) for r in rows if k in r and not math.isnan(float(r[k]))]
        if vals:
            mean[k] = float(np.mean(vals))
    return {
        "agent": agent,
        "episodes": n,
        "mean": mean,
        "terminations": dict(sorted(Counter(r["termination"] for r in rows).items())),
    }
