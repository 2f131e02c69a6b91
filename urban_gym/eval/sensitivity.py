"""``urban-gym sensitivity RUN_DIR [RUN_DIR ...]``: do the runs' success rates and their
ranking depend on the success thresholds?

360CityArena (section 3.4) checks its coordinate_match thresholds this way: it rescores the
episodes with every success radius scaled 0.75x-1.5x and reports that the ranking of the
models stays stable (Kendall's tau >= 0.89 against the ranking at the paper's
thresholds), and that Map Navigation success moves by at most 2 points for epsilon 15-25 m.
This module does the same for any family that says which thresholds to vary
(:meth:`~urban_gym.tasks.families.Family.threshold_sweep`) and how a recorded episode
scores at another radius (:meth:`~urban_gym.tasks.families.Family.rescore`, from the
record alone: no episode is re-run).

For every run and every *variant* -- each scale of every radius at once, and each absolute
radius of a task type alone (the other types keep theirs) -- it gives the success rate
(episodes of a task averaged first, then every task once: the report's overall success)
and, for a type's radius, that type's success rate too. Across runs, Kendall's tau-b
(:func:`scipy.stats.kendalltau`, which counts ties) compares the runs' success rates at each
variant with those at the default thresholds (scale 1.0): 1 when the order of the runs is
the same, -1 when reversed. Tau needs two runs or more, and is undefined (None) when every
run has the same rate at either threshold.

Rescoring at scale 1.0 must give every episode's recorded success; ``reproduced`` counts
the episodes where it does not (0 for a family whose rescoring follows its evaluator).
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.errors import InputError
from urban_gym.eval.stats import task_means


@dataclass(frozen=True)
class Variant:
    """One setting of the thresholds: every radius times ``scale``, or -- for
    ``task_type`` -- that type's radius set to ``radius_m`` metres.
    """

    scale: float = 1.0
    task_type: str | None = None
    radius_m: float | None = None

    @property
    def label(self) -> str:
        """``"1.25x"``, ``"1.0x"`` or ``"map_navigation 15 m"``."""
        if self.task_type is None:
            s = f"{self.scale:g}"
            return f"{s if '.' in s or 'e' in s else s + '.0'}x"
        return f"{self.task_type} {self.radius_m:g} m"

    @property
    def is_default(self) -> bool:
        """Whether it is the thresholds the runs were scored with."""
        return self.task_type is None and self.scale == 1.0


DEFAULT = Variant()


def variants(sweep: Any) -> list[Variant]:
    """The variants of a :class:`~urban_gym.tasks.families.ThresholdSweep` (the default,
    scale 1.0, always among them).
    """
    scales = sorted({1.0, *(float(s) for s in sweep.scales)})
    for s in scales:
        if not (math.isfinite(s) and s > 0):
            raise InputError(f"radius scale {s!r} must be a positive number")
    out = [Variant(scale=s) for s in scales]
    for tt, radii in sweep.radii.items():
        for r in radii:
            if not (math.isfinite(float(r)) and float(r) > 0):
                raise InputError(f"radius {r!r} m of {tt} must be a positive number")
            out.append(Variant(task_type=str(tt), radius_m=float(r)))
    return out


def episode_success(family: Any, record: Mapping[str, Any], v: Variant) -> bool:
    """An episode's success under variant ``v``: rescored by its family where its success
    depends on a radius the variant changes, else its recorded ``is_success``.
    """
    if v.task_type is not None and record.get("task_type") != v.task_type:
        return bool(record.get("is_success"))
    s = family.rescore(record, v.scale, v.radius_m)
    return bool(record.get("is_success")) if s is None else bool(s)


def _rate(ids: Sequence[str], values: np.ndarray) -> float | None:
    if not len(ids):
        return None
    _, means = task_means(ids, values)
    return float(np.nanmean(means, axis=0)[0])


def run_rates(family: Any, records: Sequence[Mapping[str, Any]], vs: Sequence[Variant]):
    """A run's success rate under every variant (label -> rate), the rate of a variant's
    own task type (label -> rate, for type variants), and how many episodes rescored at the
    default thresholds differ from their recorded success.
    """
    ids = [str(r["task_id"]) for r in records]
    rates: dict[str, float | None] = {}
    type_rates: dict[str, float | None] = {}
    for v in vs:
        ok = np.array([[episode_success(family, r, v)] for r in records], dtype=np.float64)
        rates[v.label] = _rate(ids, ok)
        if v.task_type is not None:
            rows = [i for i, r in enumerate(records) if r.get("task_type") == v.task_type]
            type_rates[v.label] = _rate([ids[i] for i in rows], ok[rows])
    differ = sum(episode_success(family, r, DEFAULT) != bool(r.get("is_success")) for r in records)
    return rates, type_rates, int(differ)


def kendall_tau(a: Sequence[float | None], b: Sequence[float | None]) -> float | None:
    """Kendall's tau-b of two lists of rates (runs in the same order); None with fewer
    than two runs, a missing rate, or when either list is constant (tau is undefined).
    """
    if len(a) < 2 or any(x is None for x in (*a, *b)):
        return None
    from scipy.stats import kendalltau

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant input: NaN, reported as None
        tau = kendalltau(np.asarray(a, dtype=float), np.asarray(b, dtype=float)).statistic
    return None if tau is None or not math.isfinite(float(tau)) else round(float(tau), 4)


def sensitivity(
    run_dirs: Sequence[str | os.PathLike],
    names: Sequence[str] | None = None,
    scales: Sequence[float] | None = None,
    radii: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, Any]:
    """The threshold sensitivity of ``run_dirs`` (see the module docstring) as a dict:
    ``source``, ``variants`` (labels, the default first), ``runs`` (name, path, ``rates``,
    ``type_rates``, ``reproduced``), ``tau`` (label -> Kendall's tau against the default, or
    None) and ``notes``. ``scales`` / ``radii`` replace the family's sweep.
    """
    from urban_gym.eval.report import load_run, name_runs
    from urban_gym.tasks.families import FAMILIES, ThresholdSweep

    if not run_dirs:
        raise InputError("sensitivity needs one run folder or more")
    runs = [load_run(p) for p in run_dirs]
    name_runs(runs, names)
    fams = sorted({r.family for r in runs})
    if len(fams) != 1:
        raise InputError(
            f"the runs belong to different families ({', '.join(fams)}); their success "
            "thresholds are not the same, so compare runs of one family"
        )
    family = FAMILIES.get(fams[0])
    if family is None:
        raise InputError(f"the runs' family {fams[0]!r} is not registered")
    sweep = family.threshold_sweep()
    if sweep is None and not scales and not radii:
        raise InputError(
            f"family {fams[0]!r} declares no success radius to vary (Family.threshold_sweep)"
        )
    sweep = sweep or ThresholdSweep(scales=(), radii={})
    if scales or radii:
        sweep = ThresholdSweep(
            scales=tuple(scales) if scales else sweep.scales,
            radii={k: tuple(v) for k, v in radii.items()} if radii else sweep.radii,
            source=f"{sweep.source}; thresholds given on the command line".lstrip("; "),
        )
    vs = variants(sweep)
    out_runs = []
    for r in runs:
        rates, type_rates, differ = run_rates(family, r.records, vs)
        out_runs.append(
            {
                "name": r.name,
                "path": str(r.path),
                "episodes": len(r.records),
                "tasks": len({x["task_id"] for x in r.records}),
                "rates": rates,
                "type_rates": type_rates,
                "reproduced": differ == 0,
                "differ_at_default": differ,
            }
        )
    default = [x["rates"][DEFAULT.label] for x in out_runs]
    tau = {v.label: kendall_tau(default, [x["rates"][v.label] for x in out_runs]) for v in vs}
    notes = []
    if len(runs) < 2:
        notes.append("Kendall's tau ranks runs against each other: it needs two runs or more.")
    elif any(t is None for t in tau.values()):
        notes.append("tau is undefined (-) where every run has the same success rate.")
    task_sets = {frozenset(x["task_id"] for x in r.records) for r in runs}
    if len(task_sets) > 1:
        notes.append("the runs cover different tasks: their rates are over different tasks.")
    return {
        "family": fams[0],
        "source": sweep.source,
        "variants": [v.label for v in vs],
        "default": DEFAULT.label,
        "type_variants": {v.label: v.task_type for v in vs if v.task_type is not None},
        "runs": out_runs,
        "tau": tau,
        "notes": notes,
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def format_sensitivity(res: Mapping[str, Any]) -> str:
    """The result as text tables: success (%) per run and variant, Kendall's tau per
    variant, and each type variant's own type's success.
    """
    runs = res["runs"]
    labels = list(res["variants"])
    scale_labels = [v for v in labels if v not in res["type_variants"]]
    type_labels = [v for v in labels if v in res["type_variants"]]
    width = max([len("Kendall's tau vs 1.0x"), *(len(r["name"]) for r in runs)]) + 2
    lines = [
        f"Threshold sensitivity of {len(runs)} run(s), family {res['family']}"
        + (f" ({res['source']})" if res["source"] else ""),
        "Success (%) with every success radius scaled (tasks weighted equally):",
    ]

    def table(cols: list[str], cell) -> list[str]:
        w = [max(8, len(c) + 2) for c in cols]
        out = ["run".ljust(width) + "".join(c.rjust(k) for c, k in zip(cols, w))]
        for r in runs:
            out.append(
                r["name"].ljust(width) + "".join(cell(r, c).rjust(k) for c, k in zip(cols, w))
            )
        if len(runs) > 1:
            taus = ["-" if res["tau"][c] is None else f"{res['tau'][c]:.2f}" for c in cols]
            out.append(
                "Kendall's tau vs 1.0x".ljust(width) + "".join(t.rjust(k) for t, k in zip(taus, w))
            )
        return out

    lines += table(scale_labels, lambda r, c: _pct(r["rates"][c]))
    if type_labels:
        lines.append("")
        lines.append(
            "One task type's radius set alone: that type's success (%), all tasks' in brackets:"
        )
        lines += table(
            type_labels,
            lambda r, c: f"{_pct(r['type_rates'][c])} [{_pct(r['rates'][c])}]",
        )
    lines.append("")
    for r in runs:
        if r["reproduced"]:
            lines.append(
                f"{r['name']}: rescoring at 1.0x reproduces all {r['episodes']} recorded successes."
            )
        else:
            lines.append(
                f"{r['name']}: rescoring at 1.0x differs from the record in "
                f"{r['differ_at_default']} of {r['episodes']} episodes."
            )
    lines += res["notes"]
    return "\n".join(lines)


def plot_sensitivity(res: Mapping[str, Any], path: str | Path) -> Path:
    """Success (%) against the threshold, one line per run: every radius scaled (left)
    and each task type's own radius (right, that type's success), as a PNG at ``path``.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    labels = list(res["variants"])
    scale_labels = [v for v in labels if v not in res["type_variants"]]
    by_type: dict[str, list[str]] = {}
    for lab, tt in res["type_variants"].items():
        by_type.setdefault(tt, []).append(lab)
    n = 1 + len(by_type)
    fig, axes = plt.subplots(1, n, figsize=(4.6 * n, 3.6), squeeze=False)
    ax = axes[0][0]
    xs = [float(v.rstrip("x")) for v in scale_labels]
    for r in res["runs"]:
        ax.plot(
            xs, [100 * (r["rates"][v] or 0.0) for v in scale_labels], "-o", ms=3, label=r["name"]
        )
    ax.set_xlabel("success radius scale (x the task's own)")
    ax.set_ylabel("success (%)")
    ax.set_ylim(-2, 102)
    ax.set_title("every radius scaled", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    for ax, (tt, labs) in zip(axes[0][1:], by_type.items()):
        xs = [float(v.split()[-2]) for v in labs]
        for r in res["runs"]:
            ax.plot(
                xs, [100 * (r["type_rates"][v] or 0.0) for v in labs], "-o", ms=3, label=r["name"]
            )
        ax.set_xlabel(f"{tt} radius (m)")
        ax.set_ylabel(f"{tt} success (%)")
        ax.set_ylim(-2, 102)
        ax.set_title(f"{tt} alone", fontsize=9)
    fig.suptitle(f"Threshold sensitivity ({res['family']})", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = [
    "DEFAULT",
    "Variant",
    "episode_success",
    "format_sensitivity",
    "kendall_tau",
    "plot_sensitivity",
    "run_rates",
    "sensitivity",
    "variants",
]
