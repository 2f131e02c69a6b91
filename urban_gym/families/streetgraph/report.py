"""StreetGraph's sections of ``urban-gym report``: success by decision points, as CityNav
analyses route difficulty, and the instruction-following metrics Touchdown and VELMA
report.

* 4 equal-count bins of the tasks' decision points (intersections on the shortest route)
  with success and SPL; a Markdown table and a plot.
* For runs of instruction tasks (``UrbanGym/StreetGraph-Touchdown-v0``): task completion
  (TC), shortest-path distance (SPD, links from the final panorama to the goal), SPL,
  nDTW and SDTW, each a mean over tasks with its 95% bootstrap interval.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.eval import stats
from urban_gym.eval.report import TaskTable, bins_of, fmt_ci, summarize_rows

#: The instruction-following metrics (Touchdown, VELMA) and their column titles.
INSTRUCTION_METRICS: tuple[tuple[str, str], ...] = (
    ("task_completion", "TC"),
    ("spd", "SPD (links)"),
    ("spl", "SPL"),
    ("ndtw", "nDTW"),
    ("sdtw", "SDTW"),
)


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


def instruction_metrics(
    recs: Sequence[dict[str, Any]], resamples: int, seed: int
) -> dict[str, Any] | None:
    """Means over tasks (a task's episodes averaged first) of :data:`INSTRUCTION_METRICS`
    with 95% bootstrap intervals, over the records of instruction tasks (those whose
    metrics have ``task_completion``); None when there are none. An SPD of -1 (no way to
    the goal) counts as missing.
    """
    mine = [r for r in recs if "task_completion" in (r.get("metrics") or {})]
    if not mine:
        return None
    names = [m for m, _ in INSTRUCTION_METRICS]

    def value(r: dict[str, Any], m: str) -> float:
        v = r["metrics"].get(m)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return math.nan
        return math.nan if m == "spd" and v < 0 else float(v)

    ids = [r["task_id"] for r in mine]
    v = np.array([[value(r, m) for m in names] for r in mine], dtype=np.float64)
    tasks, means = stats.task_means(ids, v)
    table = TaskTable([str(t) for t in tasks], means, names, {}, Counter(ids))
    out, _ = summarize_rows(table, np.arange(len(tasks)), "instruction", resamples, seed)
    return out


def sections(run: Any, table: TaskTable, resamples: int, seed: int) -> dict[str, Any]:
    """``decision_bins`` of a run, and ``instruction`` (:func:`instruction_metrics`) when
    it has instruction tasks.
    """
    out: dict[str, Any] = {"decision_bins": decision_bins(table, run.records, resamples, seed)}
    inst = instruction_metrics(run.records, resamples, seed)
    if inst is not None:
        out["instruction"] = inst
    return out


def markdown(res: Mapping[str, Any]) -> list[str]:
    """The tables of ``instruction`` and ``decision_bins`` (each only when the run has it)."""
    return instruction_markdown(res) + bins_markdown(res)


def instruction_markdown(res: Mapping[str, Any]) -> list[str]:
    """The instruction-following table (TC and SPD as Touchdown defines them; nDTW)."""
    inst = res.get("instruction")
    if not inst:
        return []
    heads = " | ".join(title for _, title in INSTRUCTION_METRICS)
    cells = " | ".join(
        fmt_ci(inst["metrics"].get(m), "success" if m == "task_completion" else m)
        for m, _ in INSTRUCTION_METRICS
    )
    return [
        "#### Instruction following (Touchdown's task completion and SPD; nDTW)",
        "",
        f"| tasks | episodes | {heads} |",
        "|---:|---:|" + "---|" * len(INSTRUCTION_METRICS),
        f"| {inst['tasks']} | {inst['episodes']} | {cells} |",
        "",
    ]


def bins_markdown(res: Mapping[str, Any]) -> list[str]:
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
