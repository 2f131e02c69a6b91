"""CityWalk's sections of ``urban-gym report``: success by distance, as UrbanGround
analyses its navigation horizon.

Per navigation type (and all of them pooled), 4 equal-count bins of the tasks'
shortest-route length (ShortNav ``SGN`` and InstructionNav ``IN``: of the straight-line
start-to-goal distance, as UrbanGround bins them), with success and the share of episodes
that ended closer to the goal than they began; a Markdown table and a plot.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.eval.report import TaskTable, bins_of, fmt_ci, ordered


def _ended_closer(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """The share of ``recs`` that ended closer to the goal than they began."""
    vals = []
    for r in recs:
        m = (r.get("metrics") or {}).get("ended_closer")
        if isinstance(m, (int, float)):
            vals.append(float(m))
            continue
        a = (r.get("start") or {}).get("distance_to_goal_m")
        b = (r.get("end") or {}).get("distance_to_goal_m")
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            vals.append(float(b < a))
    return {"ended_closer": round(float(np.mean(vals)), 4) if vals else None}


#: Types binned by the straight-line start-to-goal distance (UrbanGround's
#: navigation-horizon analysis of ShortNav and InstructionNav, Section 4.3).
STRAIGHT_BIN_TYPES = ("SGN", "IN")


def _info_value(key: str) -> Callable[[dict[str, Any]], float | None]:
    """A task's ``task_info[key]`` (None where it has none)."""
    return lambda info: info.get(key)


def distance_bins(
    table: TaskTable, recs: Sequence[dict[str, Any]], resamples: int, seed: int
) -> dict[str, list[dict[str, Any]]]:
    """Per navigation type (and all of them pooled), 4 equal-count bins of the
    shortest-route length (metres; SGN and IN: of the straight-line start-to-goal
    distance), with success and the share of episodes that ended closer to the goal.
    """
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in recs:
        by_task[r["task_id"]].append(r)
    types: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(table.tasks):
        a = table.attrs[t]
        if a["kind"] == "navigation" and a["task_info"].get("shortest_m") is not None:
            types[str(a["task_type"])].append(i)
            types["all navigation"].append(i)
    out = {}
    for ty in ordered([k for k in types if k != "all navigation"], "by_type", "citywalk") + [
        "all navigation"
    ]:
        if ty in types:
            key = "straight_m" if ty in STRAIGHT_BIN_TYPES else "shortest_m"
            b = bins_of(
                table,
                types[ty],
                _info_value(key),
                by_task,
                f"distance/{ty}",
                resamples,
                seed,
                _ended_closer,
            )
            if b:
                out[ty] = b
    return out


def sections(run: Any, table: TaskTable, resamples: int, seed: int) -> dict[str, Any]:
    """``distance_bins`` of a run."""
    return {"distance_bins": distance_bins(table, run.records, resamples, seed)}


def markdown(res: Mapping[str, Any]) -> list[str]:
    """The table of ``distance_bins`` (none when the run has no bins)."""
    if not res.get("distance_bins"):
        return []
    L = [
        "#### Success by distance (4 equal-count bins per type: shortest-route length; "
        "SGN and IN: straight-line start-to-goal distance)",
        "",
        "| type | bin | distance m | median m | tasks | success (95% CI) | ended closer |",
        "|---|---:|---|---:|---:|---|---:|",
    ]
    for ty, bins in res["distance_bins"].items():
        for b in bins:
            ec = b.get("ended_closer")
            L.append(
                f"| {ty} | {b['bin']} | {b['range'][0]:g}-{b['range'][1]:g} | {b['median']:g} | "
                f"{b['tasks']} | {fmt_ci(b['metrics'].get('success'))} | "
                f"{'-' if ec is None else f'{100 * ec:.0f}%'} |"
            )
    L.append("")
    return L


def plots(plt: Any, out: Path, stem: str, name: str, res: Mapping[str, Any]) -> list[Path]:
    """Success by route length, one line per type."""
    from urban_gym.eval.plots import binned_success_plot

    if not res.get("distance_bins"):
        return []
    return [
        binned_success_plot(
            plt,
            out / f"{stem}_distance_bins.png",
            res["distance_bins"],
            xlabel="median shortest-route length of the bin (m)",
            title=f"{name}: success by route length (4 equal-count bins)",
            pooled="all navigation",
        )
    ]
