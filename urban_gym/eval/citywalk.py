"""Running the CityWalk suite with the oracle and the random agent, scored per task type.

``urban-gym citywalk-eval`` prints the table; :func:`evaluate` returns it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.envs.citywalk import CityWalkEnv
from urban_gym.eval import episodes
from urban_gym.eval.episodes import AGENTS
from urban_gym.tasks.citywalk import TASK_TYPES
from urban_gym.tasks.spec import TaskSpec

#: Metrics averaged per type in the report (when the type has them).
REPORTED = (
    "success",
    "spl",
    "answer_accuracy",
    "network_adherence",
    "closure_compliance",
    "collision_rate",
    "fraction_reached",
    "on_time_rate",
    "ended_closer",
    "ndtw",
    "rain_exposure_s",
    "steps",
)


def run_episode(env: CityWalkEnv, agent: str, task_index: int, seed: int = 0) -> dict[str, Any]:
    """One episode of task ``task_index`` driven by ``agent`` (``oracle`` or ``random``);
    returns the final ``info`` (with ``metrics``)."""
    return episodes.run_episode(env, agent, task_index, seed, agent_seed=seed * 100003 + task_index)


def evaluate(
    suite: str | Path | None = None,
    tasks: Sequence[TaskSpec] | None = None,
    agents: Iterable[str] = AGENTS,
    seed: int = 0,
    types: Iterable[str] | None = None,
    progress: bool = True,
) -> dict[str, dict[str, dict[str, float]]]:
    """Mean metrics per agent and task type (``L5-variants`` of L1/SGN reported as
    ``<TYPE>*``): ``{agent: {type: {metric: mean, "n": count}}}``."""
    env = CityWalkEnv(
        suite=suite,
        tasks=list(tasks) if tasks is not None else None,
        task_types=list(types) if types is not None else None,
        view_size=None,
    )
    out: dict[str, dict[str, dict[str, float]]] = {}
    for agent in agents:
        rows: dict[str, list[dict[str, float]]] = {}
        it: Iterable[int] = range(len(env.tasks))
        if progress:
            try:
                from tqdm import tqdm

                it = tqdm(it, desc=f"citywalk {agent}", unit="episode")
            except ImportError:  # pragma: no cover
                pass
        for i in it:
            t = env.tasks[i]
            info = run_episode(env, agent, i, seed)
            key = t.type + ("*" if "variant" in t.meta else "")
            rows.setdefault(key, []).append(info["metrics"])
        out[agent] = {k: _means(v) for k, v in _ordered(rows).items()}
    return out


def _ordered(rows: dict[str, Any]) -> dict[str, Any]:
    order = [*TASK_TYPES, *(f"{t}*" for t in TASK_TYPES)]
    return {k: rows[k] for k in order if k in rows}


def _means(ms: list[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {"n": float(len(ms))}
    for k in REPORTED:
        vals = [m[k] for m in ms if k in m and not math.isnan(m[k])]
        if vals:
            out[k] = float(np.mean(vals))
    return out


def format_report(res: dict[str, dict[str, dict[str, float]]]) -> str:
    """A Markdown table: one row per type, success (and SPL / answer accuracy) per agent."""
    agents = list(res)
    head = "| type | level | n | " + " | ".join(f"{a} success | {a} SPL" for a in agents) + " |"
    lines = [head, "|" + "---|" * (3 + 2 * len(agents))]
    types = list(next(iter(res.values()))) if res else []
    for t in types:
        code = t.rstrip("*")
        level = "L5" if t.endswith("*") else TASK_TYPES[code].level.upper()
        cells = [t, level, f"{int(res[agents[0]][t]['n'])}"]
        for a in agents:
            r = res[a].get(t, {})
            cells.append(f"{100 * r.get('success', float('nan')):.1f}%")
            cells.append(f"{r['spl']:.3f}" if "spl" in r else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
