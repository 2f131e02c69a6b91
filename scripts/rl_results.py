"""Figures and tables of docs/rl_results.md from ``urban-gym train`` runs and harness runs.

Learning curves (``curves``): success and SPL on the held-out test tasks against training
steps, read from each run's ``evals.jsonl``; several runs of one setting (training seeds)
give their mean and a 95% band (Student's t over the seeds: ``mean +- t(0.975, n-1) *
sd / sqrt(n)``); a single run shows its own 95% interval (Wilson for success, +- 1.96
standard errors for SPL).

Tables (``table``): one row per harness run folder (``urban-gym eval``), success and SPL
with percentile-bootstrap 95% intervals over tasks (:func:`urban_gym.eval.stats.mean_ci`,
the same as ``urban-gym report``), with the command and wall time from a rows file.

    python scripts/rl_results.py curves --out docs/images/rl_streetgraph.png
        --title "StreetGraph procedural" --group "goal=vector@RUN_s0,RUN_s1,RUN_s2"
    python scripts/rl_results.py table ROWS.jsonl
    python scripts/rl_results.py breakdown HARNESS_RUN SUITE.jsonl --by size

Breakdowns (``breakdown``): one harness run's successes and failures by the tasks' city
size (``blocks=NxN`` of a procedural city) or difficulty, with each failure's termination,
final distance to the goal (m) and the length of the oracle's plan.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

# Student's t quantile t(0.975, df) for small df (seeds - 1)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571}


def read_evals(run: Path, split: str = "test") -> list[dict]:
    """The evaluations of one training run on ``split``, in step order."""
    rows = [json.loads(x) for x in (run / "evals.jsonl").read_text().splitlines() if x]
    return sorted((r for r in rows if r["split"] == split), key=lambda r: r["timesteps"])


def band(runs: list[list[dict]], key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, low, high of ``key`` over runs (evaluation i of every run together)."""
    n = min(len(r) for r in runs)
    vals = np.array([[r[i][key] for i in range(n)] for r in runs])
    mean = vals.mean(axis=0)
    if len(runs) == 1:
        lo = np.array([r[f"{key}_low"] for r in runs[0][:n]])
        hi = np.array([r[f"{key}_high"] for r in runs[0][:n]])
        return mean, lo, hi
    half = T975.get(len(runs) - 1, 1.96) * vals.std(axis=0, ddof=1) / math.sqrt(len(runs))
    return mean, np.clip(mean - half, 0, 1), np.clip(mean + half, 0, 1)


def curves(args: argparse.Namespace) -> None:
    """Write the learning-curve PNG of the runs given (one setting per ``--group``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: list[tuple[str, list[Path]]] = []
    for g in args.group:
        label, _, paths = g.rpartition("@")
        groups.append((label, [Path(p) for p in paths.split(",")]))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for label, paths in groups:
        runs = [read_evals(p) for p in paths]
        n = min(len(r) for r in runs)
        steps = np.array([runs[0][i]["timesteps"] for i in range(n)])
        for ax, key in zip(axes, ("success", "spl")):
            m, lo, hi = band(runs, key)
            tag = f"{label} ({len(runs)} seed{'s' if len(runs) > 1 else ''})"
            ax.plot(steps, m, marker="o", ms=3, label=tag)
            ax.fill_between(steps, lo, hi, alpha=0.2)
    if args.random is not None:
        for ax in axes:
            ax.axhline(args.random, color="grey", ls="--", lw=1, label="random (harness)")
    for ax, key in zip(axes, ("success", "SPL")):
        ax.set_xlabel("training env steps")
        ax.set_ylabel(f"{key} on held-out test tasks")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(args.title, fontsize=11)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


def table(args: argparse.Namespace) -> None:
    """Print the markdown table of the harness runs listed in the rows file."""
    from urban_gym.eval.stats import mean_ci

    print("| split | agent | episodes | success [95% CI] | SPL [95% CI] | wall (s) | command |")
    print("|---|---|---|---|---|---|---|")
    for line in Path(args.rows).read_text().splitlines():
        row = json.loads(line)
        eps = [
            json.loads(x)
            for x in (Path(row["out"]) / "episodes.jsonl").read_text().split("\n")
            if x
        ]
        s = mean_ci([float(e["is_success"]) for e in eps])
        p = mean_ci([float(e["metrics"].get("spl") or 0.0) for e in eps])
        print(
            f"| {row['split']} | {row['agent']} | {len(eps)} | "
            f"{s['mean']:.2f} [{s['low']:.2f}, {s['high']:.2f}] | "
            f"{p['mean']:.2f} [{p['low']:.2f}, {p['high']:.2f}] | {row['wall_s']:.0f} | "
            f"`{row['command']}` |"
        )


def _group(task: dict, by: str) -> str:
    if by == "size":
        return task["city"].split("blocks=")[1].split(",")[0]
    return task["difficulty"]


def breakdown(args: argparse.Namespace) -> None:
    """Print one harness run's success by city size or difficulty, and its failures."""
    tasks = {}
    for line in Path(args.suite).read_text().splitlines():
        if line:
            t = json.loads(line)
            tasks[t["id"]] = t
    eps = [json.loads(x) for x in (Path(args.run) / "episodes.jsonl").read_text().split("\n") if x]
    groups: dict[str, list[bool]] = {}
    for e in eps:
        groups.setdefault(_group(tasks[e["task_id"]], args.by), []).append(bool(e["is_success"]))
    for name in sorted(groups):
        print(f"{args.by} {name}: {sum(groups[name])} of {len(groups[name])}")
    for e in eps:
        if not e["is_success"]:
            d = e["metrics"].get("distance_to_goal")
            where = f"{d:.1f} m from the goal" if d is not None else ""
            steps = tasks[e["task_id"]].get("meta", {}).get("oracle_steps")
            where += f" (the oracle's plan: {steps} steps)" if steps is not None else ""
            print(
                f"failed {e['task_id']} ({_group(tasks[e['task_id']], args.by)}): {e['termination']} {where}"
            )


def main() -> None:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("curves")
    c.add_argument("--out", required=True)
    c.add_argument("--title", default="")
    c.add_argument("--random", type=float, default=None, help="random success line")
    c.add_argument("--group", action="append", required=True, help="LABEL@run1,run2,...")
    t = sub.add_parser("table")
    t.add_argument("rows")
    b = sub.add_parser("breakdown")
    b.add_argument("run", help="a harness run folder (urban-gym eval --out)")
    b.add_argument("suite", help="the suite it ran")
    b.add_argument("--by", choices=("size", "difficulty"), default="size")
    args = ap.parse_args()
    {"curves": curves, "table": table, "breakdown": breakdown}[args.cmd](args)


if __name__ == "__main__":
    main()
