"""The report's PNG plots (matplotlib, headless): success with 95% intervals by task type,
category and difficulty (one bar per run), a heatmap of success by category x difficulty
per run (360CityArena's Fig. 4 layout), the failure causes by category, the paired
differences, and the plots of each family's own sections
(:meth:`~urban_gym.tasks.families.Family.report_plots`, drawn with
:func:`binned_success_plot` and the like).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.eval.failures import ERROR, ORDER, OTHER
from urban_gym.tasks.families import FAMILIES

CAUSE_COLOURS = {
    "Action": "#d62728",
    "Planning": "#9467bd",
    "Perception": "#ff7f0e",
    "Grounding": "#1f77b4",
    "Explore": "#2ca02c",
    OTHER: "#7f7f7f",
    ERROR: "#000000",
}


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _bars(
    ax: Any, groups: Sequence[str], series: dict[str, dict[str, Any]], metric: str = "success"
) -> None:
    """Grouped bars with CI whiskers: ``series[run][group] = {"mean","low","high"}``."""
    k = max(1, len(series))
    w = 0.8 / k
    x = np.arange(len(groups))
    scale = 100.0 if metric == "success" else 1.0
    for j, (name, vals) in enumerate(series.items()):
        m = np.array([(vals.get(g) or {}).get("mean") or 0.0 for g in groups]) * scale
        lo = np.array([(vals.get(g) or {}).get("low") or 0.0 for g in groups]) * scale
        hi = np.array([(vals.get(g) or {}).get("high") or 0.0 for g in groups]) * scale
        ax.bar(x + (j - (k - 1) / 2) * w, m, w, label=name)
        ax.errorbar(
            x + (j - (k - 1) / 2) * w,
            m,
            yerr=[np.maximum(0, m - lo), np.maximum(0, hi - m)],
            fmt="none",
            ecolor="black",
            capsize=2,
            lw=0.8,
        )
    ax.set_xticks(x)
    ax.set_xticklabels(
        groups, rotation=30 if len(groups) > 4 else 0, ha="right" if len(groups) > 4 else "center"
    )
    ax.set_ylabel(f"{metric} (%)" if metric == "success" else metric)
    if metric == "success":
        ax.set_ylim(0, 105)
    if k > 1:
        ax.legend(fontsize=8)


def _by_family(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in report["runs"]:
        out.setdefault(r["env_id"], []).append(r)
    return out


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s).strip("_").lower()


def draw_plots(report: dict[str, Any], out: str | Path) -> list[Path]:
    """Draw every plot of ``report`` into ``out``; returns the files."""
    plt = _plt()
    out = Path(out)
    files: list[Path] = []
    res = report["results"]
    for env_id, runs in _by_family(report).items():
        slug = _slug(env_id.split("/")[-1])
        for grouping, title in (
            ("by_type", "task type"),
            ("by_category", "category"),
            ("by_difficulty", "difficulty"),
        ):
            groups: list[str] = []
            for r in runs:
                groups += [g for g in res[r["name"]][grouping] if g not in groups]
            series = {
                r["name"]: {
                    g: v["metrics"].get("success") for g, v in res[r["name"]][grouping].items()
                }
                for r in runs
            }
            width = min(14.0, max(5.0, 0.45 * len(groups) * max(1, len(runs)) + 2.0))
            fig, ax = plt.subplots(figsize=(width, 3.6))
            _bars(ax, groups, series)
            ax.set_title(f"{env_id}: success by {title} (95% CI)", fontsize=9)
            fig.tight_layout()
            files.append(out / f"{slug}_success_{grouping}.png")
            fig.savefig(files[-1], dpi=110)
            plt.close(fig)
        files += _failures(plt, out, slug, env_id, runs, res)
        fam = FAMILIES.get(str(runs[0].get("family", ""))) if runs else None
        for r in runs:
            cd = res[r["name"]].get("by_category_difficulty")
            if cd and cd["cells"]:
                path = out / f"{slug}_{_slug(r['name'])}_category_difficulty.png"
                files.append(category_difficulty_heatmap(plt, path, f"{env_id}: {r['name']}", cd))
            if fam is not None:
                stem = f"{slug}_{_slug(r['name'])}"
                files += fam.report_plots(plt, out, stem, r["name"], res[r["name"]])
    for c in report.get("comparisons", []):
        files.append(_comparison_plot(plt, out, c))
    return files


def _failures(plt, out: Path, slug: str, env_id: str, runs, res) -> list[Path]:
    rows = []
    for r in runs:
        f = res[r["name"]].get("failures")
        if not f or not f["failed"]:
            continue
        for cat, cnt in f["by_category"].items():
            rows.append((f"{r['name']}\n{cat}", cnt))
    if not rows:
        return []
    causes = [c for c in [*ORDER, OTHER, ERROR] if any(cnt.get(c) for _, cnt in rows)]
    fig, ax = plt.subplots(figsize=(min(14.0, max(6.5, 1.1 * len(rows) + 2.0)), 3.8))
    bottom = np.zeros(len(rows))
    for c in causes:
        share = np.array([100 * cnt.get(c, 0) / max(1, sum(cnt.values())) for _, cnt in rows])
        ax.bar(range(len(rows)), share, bottom=bottom, label=c, color=CAUSE_COLOURS.get(c))
        bottom += share
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([n for n, _ in rows], fontsize=7)
    ax.set_ylabel("failure share (%)")
    ax.set_title(f"{env_id}: dominant failure cause by category", fontsize=9)
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    p = out / f"{slug}_failures.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return [p]


def binned_success_plot(
    plt: Any,
    path: Path,
    series: dict[str, list[dict[str, Any]]],
    xlabel: str,
    title: str,
    pooled: str | None = None,
    errorbars: bool = False,
) -> Path:
    """Success (with its 95% CI) against the median of equal-count bins
    (:func:`urban_gym.eval.report.bins_of`), one line per entry of ``series`` (``pooled``:
    the entry drawn dashed; ``errorbars``: bars instead of bands); written to ``path``.
    """
    fig, ax = plt.subplots(figsize=(5, 3.4) if errorbars else (6, 3.6))
    for label, bs in series.items():
        x = [b["median"] for b in bs]
        s = [b["metrics"].get("success") or {} for b in bs]
        m = np.array([v.get("mean") or 0.0 for v in s]) * 100
        lo = np.array([v.get("low") or 0.0 for v in s]) * 100
        hi = np.array([v.get("high") or 0.0 for v in s]) * 100
        if errorbars:
            ax.errorbar(x, m, yerr=[m - lo, hi - m], fmt="-o", capsize=3)
            continue
        ax.plot(x, m, "k--" if label == pooled else "-o", label=label, ms=3)
        ax.fill_between(x, lo, hi, alpha=0.08)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("success (%)")
    ax.set_ylim(-2, 102)
    ax.set_title(title, fontsize=9)
    if not errorbars:
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def category_difficulty_heatmap(plt: Any, path: Path, title: str, cd: dict[str, Any]) -> Path:
    """A heatmap of success (%) by category (rows) x difficulty (columns) -- a report's
    ``by_category_difficulty`` -- each cell labelled with its success and task count
    (blank: no task); written to ``path``.
    """
    cats, diffs = cd["categories"], cd["difficulties"]
    grid = np.full((len(cats), len(diffs)), np.nan)
    for i, c in enumerate(cats):
        for j, d in enumerate(diffs):
            g = cd["cells"].get(c, {}).get(d)
            m = (g or {}).get("metrics", {}).get("success") or {}
            if m.get("mean") is not None:
                grid[i, j] = 100.0 * m["mean"]
    fig, ax = plt.subplots(figsize=(1.6 * len(diffs) + 3.0, 0.55 * len(cats) + 1.4))
    im = ax.imshow(grid, cmap="viridis", vmin=0, vmax=100, aspect="auto")
    for i, c in enumerate(cats):
        for j, d in enumerate(diffs):
            g = cd["cells"].get(c, {}).get(d)
            if g is None or np.isnan(grid[i, j]):
                continue
            colour = "white" if grid[i, j] < 60 else "black"
            ax.text(
                j,
                i,
                f"{grid[i, j]:.0f}%\nn={g['tasks']}",
                ha="center",
                va="center",
                fontsize=7,
                color=colour,
            )
    ax.set_xticks(range(len(diffs)))
    ax.set_xticklabels(diffs)
    ax.set_yticks(range(len(cats)))
    ax.set_yticklabels(cats, fontsize=8)
    fig.colorbar(im, ax=ax, label="success (%)")
    ax.set_title(f"{title}: success by category and difficulty", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _comparison_plot(plt, out: Path, c: dict[str, Any]) -> Path:
    types = list(c.get("success_by_type", {}))
    d = [c["success_by_type"][t] for t in types] + [c["metrics"]["success"]["diff"]]
    labels = [*types, "overall"]
    m = np.array([(v.get("mean") or 0.0) for v in d]) * 100
    lo = np.array([(v.get("low") or 0.0) for v in d]) * 100
    hi = np.array([(v.get("high") or 0.0) for v in d]) * 100
    fig, ax = plt.subplots(figsize=(6, 0.35 * len(labels) + 1.2))
    y = np.arange(len(labels))
    ax.errorbar(m, y, xerr=[m - lo, hi - m], fmt="o", capsize=3)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel(f"success difference, {c['b']} - {c['a']} (pp, 95% CI)")
    fig.tight_layout()
    p = out / f"paired_{_slug(c['b'])}_vs_{_slug(c['a'])}.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


__all__ = ["binned_success_plot", "category_difficulty_heatmap", "draw_plots"]
