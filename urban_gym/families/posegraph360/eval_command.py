"""``urban-gym posegraph360-eval``: the oracle and the random agent on a PoseGraph360 suite
(a thin alias of ``urban-gym eval``): the mean score and success per task type, the
terminations, and the tasks an agent failed (with why).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

#: Metrics averaged per task type (those an episode lacks are skipped).
REPORTED = ("score", "success", "spl", "mra", "decision_accuracy", "ndtw", "steps")
ENV_ID = "UrbanGym/PoseGraph360-v0"


def evaluate(
    env_kwargs: dict[str, Any],
    agent: str,
    seed: int = 0,
    episodes: int | None = None,
    progress: bool = False,
    out: str | None = None,
) -> dict[str, Any]:
    """Run ``agent`` once on each of the first ``episodes`` tasks of the env made with
    ``env_kwargs`` (default all; episode ``i`` runs task ``i`` with seed ``seed + i``),
    through the harness; returns :func:`summarize` of the records.
    """
    from urban_gym.eval.legacy import alias_records

    task_ids = None
    if episodes is not None:
        import gymnasium as gym

        env = gym.make(ENV_ID, **env_kwargs)
        u: Any = env.unwrapped  # the family's UrbanEnv
        task_ids = [t.id for t in u.tasks[: max(0, int(episodes))]]
        env.close()
    records = alias_records(ENV_ID, env_kwargs, agent, seed, "task", task_ids, out, progress)
    return summarize(agent, records)


def summarize(agent: str, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``{"agent", "episodes", "by_type": {type: {metric: mean, "n": count}}, "overall":
    {...}, "terminations": {...}, "failures": [(task, termination, score)]}`` of a run's
    records.
    """
    rows = [
        {
            **r["metrics"],
            "termination": r["termination"],
            "task": r["task_id"],
            "type": r["task_type"],
            "difficulty": r["difficulty"],
        }
        for r in records
    ]
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_type[r["type"]].append(r)

    def means(rs: list[dict[str, Any]]) -> dict[str, float]:
        out: dict[str, float] = {"n": float(len(rs))}
        for k in REPORTED:
            v = [float(r[k]) for r in rs if r.get(k) is not None and not math.isnan(float(r[k]))]
            if v:
                out[k] = float(np.mean(v))
        return out

    failures = [
        (r["task"], r["termination"], round(float(r.get("score") or 0.0), 3))
        for r in rows
        if float(r.get("success") or 0.0) < 1.0
    ]
    return {
        "agent": agent,
        "episodes": len(rows),
        "by_type": {t: means(rs) for t, rs in by_type.items()},
        "overall": means(rows),
        "terminations": dict(Counter(r["termination"] for r in rows)),
        "failures": failures,
    }


def format_results(results: list[dict[str, Any]]) -> str:
    """Results of :func:`evaluate` for several agents as a Markdown table (score and
    success per task type), then the terminations and the failed tasks per agent.
    """
    from urban_gym.families.posegraph360.tasks import TASK_TYPES

    agents = [r["agent"] for r in results]
    head = "| task type | n | " + " | ".join(f"{a} score | {a} success" for a in agents) + " |"
    lines = [head, "|---|---|" + "---|---|" * len(agents)]
    types = [t for t in TASK_TYPES if any(t in r["by_type"] for r in results)]
    for t in [*types, "overall"]:
        cells = []
        n = 0
        for r in results:
            m = r["overall"] if t == "overall" else r["by_type"].get(t, {})
            n = int(m.get("n", n))
            cells.append(
                f"{m.get('score', float('nan')):.3f} | {m.get('success', float('nan')):.3f}"
            )
        lines.append(f"| {t} | {n} | " + " | ".join(cells) + " |")
    for r in results:
        lines.append("")
        lines.append(f"{r['agent']}: terminations {r['terminations']}")
        if r["agent"] == "oracle":
            if r["failures"]:
                lines.append(f"oracle failures ({len(r['failures'])}):")
                lines += [f"  {t} ({why}, score {s})" for t, why, s in r["failures"]]
            else:
                lines.append("oracle failures: none")
    return "\n".join(lines)
