"""``urban-gym streetgraph-eval``: the oracle and the random agent on a StreetGraph suite (a
thin alias of ``urban-gym eval``): mean Success, SPL and Decision Accuracy (plus nDTW, SDTW,
task completion and SPD for instruction tasks) over every task of a suite.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

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
ENV_ID = "UrbanGym/StreetGraph-v0"


def evaluate(
    env_kwargs: dict[str, Any],
    agent: str,
    seed: int = 0,
    task_ids: Sequence[str] | None = None,
    progress: bool = False,
    out: str | None = None,
) -> dict[str, Any]:
    """Run ``agent`` once on each task (``task_ids``: these; episode ``i`` uses task ``i``
    and seed ``seed + i``) through the harness; returns :func:`summarize`.
    """
    from urban_gym.eval.legacy import alias_records

    records = alias_records(ENV_ID, env_kwargs, agent, seed, "task", task_ids, out, progress)
    return summarize(agent, records)


def summarize(agent: str, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``{"agent", "episodes", "mean": {metric: value}, "terminations": {...}}``;
    decision accuracy is averaged over episodes that made at least one decision.
    """
    rows = [r["metrics"] for r in records]
    mean: dict[str, float] = {}
    for k in REPORTED:
        vals = [float(r[k]) for r in rows if r.get(k) is not None and not math.isnan(float(r[k]))]
        if vals:
            mean[k] = float(np.mean(vals))
    return {
        "agent": agent,
        "episodes": len(rows),
        "mean": mean,
        "terminations": dict(sorted(Counter(r["termination"] for r in records).items())),
    }
