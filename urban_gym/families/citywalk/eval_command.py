"""``urban-gym citywalk-eval``: the CityWalk suite with the oracle and the random agent,
scored per task type (a thin alias of ``urban-gym eval``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from urban_gym.families.citywalk.tasks import TASK_TYPES

#: Metrics averaged per type in the report (when the type has them).
REPORTED = (
    "success",
    "spl",
    "answer_accuracy",
    "network_adherence",
    "closure_compliance",
    "collision_rate",
    "pedestrian_collision",
    "fraction_reached",
    "on_time_rate",
    "ended_closer",
    "ndtw",
    "rain_exposure_s",
    "steps",
)
ENV_ID = "UrbanGym/CityWalk-NoView-v0"


def evaluate(
    suite: str | None = None,
    agents: Iterable[str] = ("oracle", "random"),
    seed: int = 0,
    types: Iterable[str] | None = None,
    progress: bool = True,
    out: str | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """Mean metrics per agent and task type (``L5-variants`` of L1/SGN reported as
    ``<TYPE>*``): ``{agent: {type: {metric: mean, "n": count}}}``. Every episode resets
    with ``seed``; the random agent of task ``i`` uses ``seed * 100003 + i``.
    """
    from urban_gym.eval.legacy import alias_records

    kwargs: dict[str, Any] = {}
    if suite is not None:
        kwargs["suite"] = str(suite)
    if types is not None:
        kwargs["task_types"] = list(types)
    return {
        agent: summarize(alias_records(ENV_ID, kwargs, agent, seed, "repeat", None, out, progress))
        for agent in agents
    }


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean metrics per type (variants as ``<TYPE>*``) of one agent's records."""
    rows: dict[str, list[dict[str, float]]] = {}
    for r in records:
        key = r["task_type"] + ("*" if (r.get("task_info") or {}).get("variant") else "")
        rows.setdefault(key, []).append(r["metrics"])
    return {k: _means(v) for k, v in _ordered(rows).items()}


def _ordered(rows: dict[str, Any]) -> dict[str, Any]:
    order = [*TASK_TYPES, *(f"{t}*" for t in TASK_TYPES)]
    return {k: rows[k] for k in order if k in rows}


def _means(ms: list[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {"n": float(len(ms))}
    for k in REPORTED:
        vals = [m[k] for m in ms if m.get(k) is not None and not math.isnan(m[k])]
        if vals:
            out[k] = float(np.mean(vals))
    return out


def format_report(res: dict[str, dict[str, dict[str, float]]]) -> str:
    """A Markdown table: one row per type, success, SPL and -- beside them, as UrbanGround
    reports it -- the pedestrian-collision rate (share of episodes with a contact) per agent.
    """
    agents = list(res)
    cols = " | ".join(f"{a} success | {a} SPL | {a} PCR" for a in agents)
    head = "| type | level | n | " + cols + " |"
    lines = [head, "|" + "---|" * (3 + 3 * len(agents))]
    types = list(next(iter(res.values()))) if res else []
    for t in types:
        code = t.rstrip("*")
        level = "L5" if t.endswith("*") else TASK_TYPES[code].level.upper()
        cells = [t, level, f"{int(res[agents[0]][t]['n'])}"]
        for a in agents:
            r = res[a].get(t, {})
            cells.append(f"{100 * r.get('success', float('nan')):.1f}%")
            cells.append(f"{r['spl']:.3f}" if "spl" in r else "-")
            pcr = r.get("pedestrian_collision")
            cells.append(f"{100 * pcr:.1f}%" if pcr is not None else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
