"""Evaluate the oracle and the random agent on a PoseGraph360 suite
(``urban-gym posegraph360-eval``): the mean score and success per task type, the
terminations, and the tasks an agent failed (with why)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from urban_gym.eval import episodes

#: Metrics averaged per task type (those an episode lacks are skipped).
REPORTED = ("score", "success", "spl", "mra", "decision_accuracy", "ndtw", "steps")


def run_episode(env: Any, agent: str, task_index: int, seed: int) -> dict[str, Any]:
    """One episode of ``agent`` (``"oracle"`` or ``"random"``) on task ``task_index``;
    returns the final metrics plus ``termination``, ``task`` and ``type``."""
    info = episodes.run_episode(env, agent, task_index, seed)
    t = env.unwrapped.task
    return {
        **info["metrics"],
        "termination": info["termination"],
        "task": t.id,
        "type": t.type,
        "difficulty": t.difficulty,
    }


def evaluate(
    env: Any,
    agent: str,
    seed: int = 0,
    episodes: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Run ``agent`` once on each of the first ``episodes`` tasks of ``env`` (default all;
    episode ``i`` runs task ``i`` with seed ``seed + i``).

    Returns ``{"agent", "episodes", "by_type": {type: {metric: mean, "n": count}},
    "overall": {...}, "terminations": {...}, "failures": [(task, termination, score)]}``.
    """
    u = env.unwrapped
    n = len(u.tasks) if episodes is None else min(int(episodes), len(u.tasks))
    it: Any = range(n)
    if progress:
        try:
            from tqdm import tqdm

            it = tqdm(it, desc=f"posegraph360 {agent}", leave=False)
        except ImportError:  # pragma: no cover - tqdm is a dependency of eval
            pass
    rows = [run_episode(env, agent, i, seed + i) for i in it]
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_type[r["type"]].append(r)

    def means(rs: list[dict[str, Any]]) -> dict[str, float]:
        out: dict[str, float] = {"n": float(len(rs))}
        for k in REPORTED:
            v = [float(r[k]) for r in rs if k in r and not math.isnan(float(r[k]))]
            if v:
                out[k] = float(np.mean(v))
        return out

    failures = [
        (r["task"], r["termination"], round(float(r["score"]), 3))
        for r in rows
        if float(r.get("success", 0.0)) < 1.0
    ]
    return {
        "agent": agent,
        "episodes": n,
        "by_type": {t: means(rs) for t, rs in by_type.items()},
        "overall": means(rows),
        "terminations": dict(Counter(r["termination"] for r in rows)),
        "failures": failures,
    }


def format_results(results: list[dict[str, Any]]) -> str:
    """Results of :func:`evaluate` for several agents as a Markdown table (score and
    success per task type), then the terminations and the failed tasks per agent."""
    from urban_gym.tasks.posegraph360 import TASK_TYPES

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
