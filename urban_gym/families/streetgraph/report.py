"""StreetGraph's sections of ``urban-gym report``: success by decision points, as CityNav
analyses route difficulty.

4 equal-count bins of the tasks' decision points (intersections on the shortest route)
with success and SPL; a Markdown table and a plot.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from urban_gym.eval.report import TaskTable, bins_of, fmt_ci


def decision_bins(
    table: TaskTable, recs: Sequence[dict[str, Any]], resamples: int, seed: int
) -> list[dict[str, Any]]:
    """4 equal-count bins of decision points (intersections on the shortest route),
    with success and SPL.
    """
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in recs:
        by_task[r["task_id"]].append(r)
    return bins_of(
        table,
        list(range(len(table.tasks))),
        lambda info: info.get("decision_points"),
        by_task,
        "decisions",
        resamples,
        seed,
        lambda rs: {},
    )


def sections(run: Any, table: TaskTable, resamples: int, seed: int) -> dict[str, Any]:
    """``decision_bins`` of a run."""
    return {"decision_bins": decision_bins(table, run.records, resamples, seed)}


def markdown(res: Mapping[str, Any]) -> list[str]:
    """The table of ``decision_bins`` (none when the run has no bins)."""
    if not res.get("decision_bins"):
        return []
    L = [
        "#### Success by decision points (4 equal-count bins)",
        "",
        "| bin | decision points | median | tasks | success (95% CI) | SPL (95% CI) |",
        "|---:|---|---:|---:|---|---|",
    ]
    for b in res["decision_bins"]:
        L.append(
            f"| {b['bin']} | {b['range'][0]:g}-{b['range'][1]:g} | {b['median']:g} | "
            f"{b['tasks']} | {fmt_ci(b['metrics'].get('success'))} | "
            f"{fmt_ci(b['metrics'].get('spl'), 'spl')} |"
        )
    L.append("")
    return L


def plots(plt: Any, out: Path, stem: str, name: str, res: Mapping[str, Any]) -> list[Path]:
    """Success by decision points."""
    from urban_gym.eval.plots import binned_success_plot

    if not res.get("decision_bins"):
        return []
    return [
        binned_success_plot(
            plt,
            out / f"{stem}_decision_points.png",
            {"success": res["decision_bins"]},
            xlabel="decision points (bin median)",
            title=f"{name}: success vs decision points",
            errorbars=True,
        )
    ]
