"""``urban-gym report RUN_DIR [RUN_DIR ...]``: tables with confidence intervals, paired
comparisons, failure causes, a leaderboard, plots and GIFs -- for any run of any agent.

:func:`build_report` reads the run folders (:mod:`urban_gym.eval.records`) and returns the
report as a dict (written as ``report.json``); :func:`format_markdown` turns it into
``report.md``; :mod:`urban_gym.eval.plots` draws the PNGs and :mod:`urban_gym.eval.replay`
the GIFs. What the report holds per run:

* success (``is_success``), and where the family has them the task score (``score``: a
  family's headline number, such as MRA for counts) and SPL -- overall (count-weighted: every
  task counts once), macro-averaged over task types, and per task type, difficulty and
  category (:mod:`urban_gym.eval.categories`) and per category x difficulty
  (:func:`category_difficulty`: 360CityArena's Fig. 4 layout; a heatmap among the plots);
  every figure with a 95% percentile-bootstrap
  interval over tasks (:mod:`urban_gym.eval.stats`: 10,000 resamples, seeded);
* terminations, tokens;
* the family's own sections (:meth:`~urban_gym.tasks.families.Family.report_sections`:
  success by route length or by decision points in equal-count bins (:func:`bins_of`),
  grounded boxes scored over the run, ...), with their Markdown and plots;
* failure causes (:mod:`urban_gym.eval.failures`): the dominant cause of every failed
  episode by category and type, with the rules written out; optionally a model's labels
  and their agreement with the rules (Cohen's kappa);
* with ``layout=NAME``, a family's layout of the results as its paper's tables
  (:mod:`urban_gym.eval.layouts`), a section after the leaderboard.

Every report states the judge that scored each run's ``fuzzy_match`` answers (rules, or a
language model with its prompt's SHA-256: :mod:`urban_gym.eval.judging`) and says so
when the runs it compares were judged differently.

Across runs: a leaderboard, and a paired comparison of each run with the first (the
baseline) on the tasks both ran -- the mean per-task difference with a paired-bootstrap
interval and McNemar's exact test on success (pairs matched by task and repeat).
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.errors import InputError, UrbanGymError
from urban_gym.eval import stats
from urban_gym.eval.failures import ERROR, ORDER, OTHER, RULES, classify
from urban_gym.eval.judging import judge_label, judges_summary, run_judge
from urban_gym.eval.layouts import STANDARD, resolve_layout
from urban_gym.eval.records import RunDir

#: Metrics reported (when a family has them), in order.
METRICS: tuple[str, ...] = ("success", "score", "spl")
GROUPINGS: tuple[tuple[str, str], ...] = (
    ("by_type", "task_type"),
    ("by_difficulty", "difficulty"),
    ("by_category", "category"),
)
DIFFICULTY_ORDER = ("easy", "medium", "hard", "l1", "l2", "l3", "l4", "l5")
BINS = 4


@dataclass
class Run:
    """A run folder read for the report: its manifest, records and display name."""

    path: Path
    manifest: dict[str, Any]
    records: list[dict[str, Any]]
    name: str = ""
    dir: RunDir = field(init=False)

    def __post_init__(self) -> None:
        self.dir = RunDir(self.path)

    @property
    def family(self) -> str:
        """The run's family (manifest, else its first record's)."""
        return str(
            self.manifest.get("family") or (self.records[0]["family"] if self.records else "")
        )


def load_run(path: str | os.PathLike) -> Run:
    """Read a run folder (manifest and whole records; a torn last line is ignored)."""
    d = RunDir(path)
    manifest = d.read_manifest()
    records = d.read_episodes(repair=False)
    if not records:
        raise InputError(f"{d.path}: no episode records yet")
    return Run(Path(path), manifest, records)


def run_label(manifest: dict[str, Any]) -> str:
    """A short name for a run: the agent spec, the model of a language model, the
    checkpoint's file name of a policy.
    """
    agent = manifest.get("agent") or {}
    cfg = agent.get("config") or {}
    spec = str(agent.get("spec", "?"))
    if agent.get("kind") == "lmm" and cfg.get("model"):
        return f"lmm:{cfg['model']}"
    if agent.get("kind") == "sb3":
        return f"sb3:{Path(spec[4:]).name}"
    return spec


def name_runs(runs: Sequence[Run], names: Sequence[str] | None = None) -> None:
    """Give each run a unique display name (``names``, or the agent and -- for
    duplicates -- the folder name).
    """
    if names:
        if len(names) != len(runs):
            raise InputError(f"{len(names)} names for {len(runs)} runs")
        for r, n in zip(runs, names):
            r.name = n
        return
    base = [run_label(r.manifest) for r in runs]
    counts = Counter(base)
    for r, b in zip(runs, base):
        r.name = b if counts[b] == 1 else f"{b} ({r.path.name})"


# --------------------------------------------------------------------------- tables
def _metric_value(rec: dict[str, Any], metric: str) -> float:
    if metric == "success":
        return 1.0 if rec.get("is_success") else 0.0
    v = (rec.get("metrics") or {}).get(metric)
    if isinstance(v, bool):
        return float(v)
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else math.nan


@dataclass
class TaskTable:
    """Per-task means of a run's records (tasks in first-seen order): the table every
    section of the report is computed from (a family's own sections too).
    """

    tasks: list[str]
    values: np.ndarray  # tasks x metrics
    metrics: list[str]
    attrs: dict[str, dict[str, Any]]  # task id -> task_type, difficulty, category, ...
    episodes: Counter


def task_table(records: Sequence[dict[str, Any]]) -> TaskTable:
    """The :class:`TaskTable` of a run's records."""
    metrics = [m for m in METRICS if any(not math.isnan(_metric_value(r, m)) for r in records)]
    v = np.array([[_metric_value(r, m) for m in metrics] for r in records], dtype=np.float64)
    ids = [r["task_id"] for r in records]
    tasks, means = stats.task_means(ids, v.reshape(len(records), len(metrics)))
    attrs: dict[str, dict[str, Any]] = {}
    for r in records:
        attrs.setdefault(
            r["task_id"],
            {
                "task_type": r.get("task_type"),
                "city": r.get("city"),
                "difficulty": r.get("difficulty"),
                "category": r.get("category"),
                "kind": r.get("kind"),
                "task_info": r.get("task_info") or {},
            },
        )
    return TaskTable([str(t) for t in tasks], means, metrics, attrs, Counter(ids))


def summarize_rows(
    table: TaskTable, rows: np.ndarray, stream: str, resamples: int, seed: int
) -> tuple[dict[str, Any], np.ndarray]:
    """Means and CIs of the tasks ``rows`` of ``table`` (bootstrap stream ``stream``);
    also returns the resampled means.
    """
    v = table.values[rows]
    samples = stats.bootstrap_means(v, resamples, stats.stream_seed(seed, stream))
    lo, hi = stats.percentile_ci(samples)
    with warnings.catch_warnings():  # a metric no task of the group has: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        est = np.nanmean(v, axis=0) if len(v) else np.full(len(table.metrics), np.nan)
    out: dict[str, Any] = {
        "tasks": int(len(rows)),
        "episodes": int(sum(table.episodes[table.tasks[i]] for i in rows)),
        "metrics": {},
    }
    for j, m in enumerate(table.metrics):
        if not np.isnan(v[:, j]).all():
            out["metrics"][m] = {"mean": _f(est[j]), "low": _f(lo[j]), "high": _f(hi[j])}
    return out, samples


def _f(x: Any) -> float | None:
    x = float(x)
    return round(x, 6) if math.isfinite(x) else None


def ordered(keys: Sequence[str], grouping: str, family: str) -> list[str]:
    """``keys`` of a grouping in the order the report lists them: difficulties easy to
    hard, task types in the family's type table's order, categories in the family's
    order (:meth:`~urban_gym.tasks.families.Family.category_order`); others sorted after.
    """
    from urban_gym.tasks.families import FAMILIES

    fam = FAMILIES.get(family)
    if grouping == "by_difficulty":
        table: list[str] = list(DIFFICULTY_ORDER)
    elif grouping == "by_type":
        table = list(fam.tasks().TASK_TYPES) if fam is not None else []
    elif grouping == "by_category":
        table = list(fam.category_order()) if fam is not None else []
    else:
        table = []
    return sorted(keys, key=lambda k: (table.index(k) if k in table else 99, k))


def run_results(run: Run, resamples: int = stats.RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """Everything the report says about one run except failures (see the module
    docstring).
    """
    recs = run.records
    table = task_table(recs)
    all_rows = np.arange(len(table.tasks))
    out: dict[str, Any] = {"metrics": table.metrics}
    out["overall"], _ = summarize_rows(table, all_rows, "overall", resamples, seed)
    for grouping, attr in GROUPINGS:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(table.tasks):
            groups[str(table.attrs[t][attr])].append(i)
        res: dict[str, Any] = {}
        samples: list[np.ndarray] = []
        for g in ordered(list(groups), grouping, run.family):
            res[g], s = summarize_rows(
                table, np.array(groups[g]), f"{grouping}/{g}", resamples, seed
            )
            samples.append(s)
        out[grouping] = res
        if grouping == "by_type":
            out["macro"] = _macro(res, samples, table.metrics)
    cities: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(table.tasks):
        city = table.attrs[t].get("city")
        if city is not None:
            cities[str(city)].append(i)
    out["cities"] = sorted(cities)
    if len(cities) > 1:  # a run over several cities: results per city (CityNav's layout)
        out["by_city"] = {
            c: summarize_rows(table, np.array(rows), f"by_city/{c}", resamples, seed)[0]
            for c, rows in sorted(cities.items())
        }
    out["by_category_difficulty"] = category_difficulty(table, run.family, resamples, seed)
    out["terminations"] = dict(Counter(r.get("termination") for r in recs).most_common())
    tokens = sum(int((r.get("tokens") or {}).get("total_tokens", 0) or 0) for r in recs)
    out["tokens"] = {
        "total": tokens,
        "per_episode": round(tokens / len(recs), 1),
        "prompt": sum(int((r.get("tokens") or {}).get("prompt_tokens", 0) or 0) for r in recs),
        "completion": sum(
            int((r.get("tokens") or {}).get("completion_tokens", 0) or 0) for r in recs
        ),
    }
    out["steps"] = {"mean": round(float(np.mean([r.get("steps", 0) for r in recs])), 2)}
    out["errors"] = sum(1 for r in recs if r.get("error") is not None)
    fam = _family(run.family)
    if fam is not None:
        out.update(fam.report_sections(run, table, resamples, seed))
    return out


def category_difficulty(
    table: TaskTable, family: str, resamples: int = stats.RESAMPLES, seed: int = 0
) -> dict[str, Any]:
    """Results per task category x difficulty (the layout of 360CityArena's Fig. 4:
    success per category, split by difficulty): ``{"categories": [...], "difficulties":
    [...], "cells": {category: {difficulty: summary}}}`` with each cell's
    :func:`summarize_rows` (tasks, episodes, means with 95% CIs); a pair no task has is
    left out of ``cells``. Categories and difficulties in the report's order
    (:func:`ordered`).
    """
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, t in enumerate(table.tasks):
        a = table.attrs[t]
        groups[(str(a["category"]), str(a["difficulty"]))].append(i)
    cats = ordered(list(dict.fromkeys(c for c, _ in groups)), "by_category", family)
    diffs = ordered(list(dict.fromkeys(d for _, d in groups)), "by_difficulty", family)
    cells: dict[str, dict[str, Any]] = {}
    for c in cats:
        row: dict[str, Any] = {}
        for d in diffs:
            if (c, d) in groups:
                stream = f"by_category_difficulty/{c}/{d}"
                row[d], _ = summarize_rows(table, np.array(groups[(c, d)]), stream, resamples, seed)
        cells[c] = row
    return {"categories": cats, "difficulties": diffs, "cells": cells}


def _family(name: str) -> Any:
    from urban_gym.tasks.families import FAMILIES

    return FAMILIES.get(name)


def _macro(
    by_type: dict[str, Any], samples: list[np.ndarray], metrics: list[str]
) -> dict[str, Any]:
    """Mean over task types of the per-type means; its CI from the same resamples (each
    type resampled within itself).
    """
    out: dict[str, Any] = {"types": len(by_type), "metrics": {}}
    if not samples:
        return out
    stack = np.stack(samples)  # types x resamples x metrics
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        macro = np.nanmean(stack, axis=0)
    lo, hi = stats.percentile_ci(macro)
    for j, m in enumerate(metrics):
        vals = [g["metrics"][m]["mean"] for g in by_type.values() if m in g["metrics"]]
        if vals:
            out["metrics"][m] = {
                "mean": _f(np.mean(vals)),
                "low": _f(lo[j]),
                "high": _f(hi[j]),
            }
    return out


def bins_of(
    table: TaskTable,
    tasks: list[int],
    value: Callable[[dict[str, Any]], float | None],
    recs_by_task: dict[str, list[dict[str, Any]]],
    stream: str,
    resamples: int,
    seed: int,
    extra: Callable[[list[dict[str, Any]]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """:data:`BINS` equal-count bins of ``tasks`` (rows of ``table``) by ``value`` of their
    ``task_info`` (tasks without a value left out; no bins for fewer tasks than bins): per
    bin its value range and median, :func:`summarize_rows` of its tasks and ``extra`` of
    its episodes' records.
    """
    got = [(i, value(table.attrs[table.tasks[i]]["task_info"])) for i in tasks]
    pts = [(i, v) for i, v in got if v is not None]
    if len(pts) < BINS:
        return []
    which = stats.equal_count_bins([v for _, v in pts], BINS)
    out = []
    for b in range(BINS):
        rows = [i for (i, _), w in zip(pts, which) if w == b]
        vals = [v for (_, v), w in zip(pts, which) if w == b]
        s, _ = summarize_rows(table, np.array(rows), f"{stream}/{b}", resamples, seed)
        recs = [r for i in rows for r in recs_by_task[table.tasks[i]]]
        out.append(
            {
                "bin": b + 1,
                "range": [round(min(vals), 1), round(max(vals), 1)],
                "median": round(float(np.median(vals)), 1),
                **s,
                **extra(recs),
            }
        )
    return out


# --------------------------------------------------------------------------- failures
def failure_breakdown(run: Run, keep_episodes: bool = True) -> dict[str, Any]:
    """The failure cause of every failed episode (from its trace), counted overall, by
    category and by type; rule hit counts.
    """
    labels = []
    for r in run.records:
        if r.get("is_success"):
            continue
        try:
            steps = run.dir.read_trace(r)
        except UrbanGymError:
            steps = []
        c = classify(r, steps)
        labels.append(
            {
                "key": r.get("key"),
                "task_type": r.get("task_type"),
                "category": r.get("category"),
                "dominant": c["dominant"],
                "causes": c["causes"],
                "rules": c["rules"],
            }
        )
    causes = [*ORDER, OTHER, ERROR]

    def count(items: list[dict[str, Any]]) -> dict[str, int]:
        cnt = Counter(x["dominant"] for x in items)
        return {c: cnt.get(c, 0) for c in causes if cnt.get(c, 0)}

    by_cat: dict[str, list] = defaultdict(list)
    by_type: dict[str, list] = defaultdict(list)
    for x in labels:
        by_cat[str(x["category"])].append(x)
        by_type[str(x["task_type"])].append(x)
    out = {
        "failed": len(labels),
        "dominant": count(labels),
        "by_category": {
            k: count(v) for k, v in sorted(by_cat.items(), key=lambda kv: _cat_key(run, kv[0]))
        },
        "by_type": {
            k: count(v)
            for k, v in zip(
                ordered(list(by_type), "by_type", run.family),
                [by_type[k] for k in ordered(list(by_type), "by_type", run.family)],
            )
        },
        "rule_hits": dict(Counter(h for x in labels for h in x["rules"]).most_common()),
    }
    if keep_episodes:
        out["episodes"] = labels
    return out


def _cat_key(run: Run, cat: str) -> tuple:
    return (ordered([cat], "by_category", run.family).index(cat), cat)


# --------------------------------------------------------------------------- comparisons
def compare(
    a: Run, b: Run, resamples: int = stats.RESAMPLES, seed: int = 0
) -> dict[str, Any] | None:
    """Paired comparison of run ``b`` against run ``a`` on their common tasks (None when
    they share none): mean per-task difference b - a with paired-bootstrap CIs (overall
    and per type), McNemar's exact test on success over episodes paired by (task, repeat).
    """
    ta, tb = task_table(a.records), task_table(b.records)
    common = [t for t in ta.tasks if t in set(tb.tasks)]
    if not common:
        return None
    ia = {t: i for i, t in enumerate(ta.tasks)}
    ib = {t: i for i, t in enumerate(tb.tasks)}
    metrics = [m for m in ta.metrics if m in tb.metrics]
    out: dict[str, Any] = {"a": a.name, "b": b.name, "tasks": len(common), "metrics": {}}
    for m in metrics:
        ja, jb = ta.metrics.index(m), tb.metrics.index(m)
        da = {t: float(ta.values[ia[t], ja]) for t in common}
        db = {t: float(tb.values[ib[t], jb]) for t in common}
        out["metrics"][m] = {
            "a": _f(_nanmean(list(da.values()))),
            "b": _f(_nanmean(list(db.values()))),
            "diff": _rounded(
                stats.paired_bootstrap(da, db, resamples, stats.stream_seed(seed, f"paired/{m}"))
            ),
        }
    by_type: dict[str, Any] = {}
    types = ordered(list({str(ta.attrs[t]["task_type"]) for t in common}), "by_type", a.family)
    j = ta.metrics.index("success")
    for ty in types:
        ts = [t for t in common if str(ta.attrs[t]["task_type"]) == ty]
        da = {t: float(ta.values[ia[t], j]) for t in ts}
        db = {t: float(tb.values[ib[t], tb.metrics.index("success")]) for t in ts}
        by_type[ty] = _rounded(
            stats.paired_bootstrap(da, db, resamples, stats.stream_seed(seed, f"paired/type/{ty}"))
        )
    out["success_by_type"] = by_type
    ea = {(r["task_id"], int(r["repeat"])): bool(r.get("is_success")) for r in a.records}
    pairs = [
        (ea[(r["task_id"], int(r["repeat"]))], bool(r.get("is_success")))
        for r in b.records
        if (r["task_id"], int(r["repeat"])) in ea
    ]
    out["mcnemar"] = stats.mcnemar(pairs)
    return out


def _nanmean(values: Sequence[float]) -> float:
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else math.nan


def _rounded(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (_f(v) if isinstance(v, float) else v) for k, v in d.items()}


def leaderboard(runs: Sequence[Run], results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per run, best overall success first."""
    rows = []
    for r in runs:
        res = results[r.name]
        rows.append(
            {
                "run": r.name,
                "env_id": r.manifest.get("env_id"),
                "tasks": res["overall"]["tasks"],
                "episodes": res["overall"]["episodes"],
                "success": res["overall"]["metrics"].get("success"),
                "macro_success": res["macro"]["metrics"].get("success"),
                "score": res["overall"]["metrics"].get("score"),
                "spl": res["overall"]["metrics"].get("spl"),
                "tokens_per_episode": res["tokens"]["per_episode"],
            }
        )
    rows.sort(key=lambda x: -((x["success"] or {}).get("mean") or 0.0))
    return rows


# --------------------------------------------------------------------------- the report
def build_report(
    run_dirs: Sequence[str | os.PathLike],
    names: Sequence[str] | None = None,
    resamples: int = stats.RESAMPLES,
    seed: int = 0,
    failures: bool = True,
    labeler: Callable[[Run, dict[str, Any]], dict[str, Any]] | None = None,
    layout: str | None = None,
) -> dict[str, Any]:
    """The report of ``run_dirs`` as a dict (``report.json``); see the module docstring.
    ``labeler(run, failure_breakdown)`` adds a model's failure labels to a run;
    ``layout`` names a family's layout (:mod:`urban_gym.eval.layouts`), whose cells go
    into each run's ``results[...]["layout"]``.
    """
    t0 = time.perf_counter()
    runs = [load_run(p) for p in run_dirs]
    lay = resolve_layout(layout, [r.family for r in runs])
    name_runs(runs, names)
    results: dict[str, Any] = {}
    for r in runs:
        res = run_results(r, resamples, seed)
        if failures:
            res["failures"] = failure_breakdown(r)
            if labeler is not None:
                res["labeler"] = labeler(r, res["failures"])
        if lay is not None:
            res["layout"] = lay.results(r, res, resamples, seed)
        results[r.name] = res
    comparisons = []
    for b in runs[1:]:
        c = compare(runs[0], b, resamples, seed)
        if c is not None:
            comparisons.append(c)
    return {
        "runs": [
            {
                "name": r.name,
                "path": str(r.path),
                "env_id": r.manifest.get("env_id"),
                "env_kwargs": r.manifest.get("env_kwargs"),
                "family": r.family,
                "agent": r.manifest.get("agent"),
                "seeds": r.manifest.get("seeds"),
                "episodes": len(r.records),
                "planned_episodes": r.manifest.get("episodes"),
                "complete": len(r.records) == r.manifest.get("episodes"),
                "suite": r.manifest.get("suite"),
                "judge": run_judge(r.manifest),
            }
            for r in runs
        ],
        "judges": judges_summary([run_judge(r.manifest) for r in runs]),
        "layout": lay.name if lay is not None else STANDARD,
        "settings": {
            "bootstrap": "percentile",
            "resamples": resamples,
            "seed": seed,
            "level": stats.LEVEL,
            "unit": "task (episodes of a task averaged first)",
        },
        "results": results,
        "comparisons": comparisons,
        "leaderboard": leaderboard(runs, results),
        "rules": [{"cause": x.cause, "id": x.id, "text": x.text} for x in RULES],
        "build_s": round(time.perf_counter() - t0, 3),
    }


def check_output_folder(out: str | os.PathLike, own_link_ok: bool = True) -> Path:
    """``out`` as a folder a report may write into: :class:`InputError` when anything
    inside it is a symbolic link (a run folder someone shared could hold
    ``report/report.md`` pointing at a file of yours, which writing the report would
    overwrite) or -- unless ``own_link_ok`` (a folder the user named) -- when ``out``
    itself is one.
    """
    out = Path(out)
    if not own_link_ok and out.is_symlink():
        raise InputError(f"output folder {out} is a symbolic link; give --out a folder")
    if out.exists():
        for p in [out, *out.rglob("*")]:
            if p != out and p.is_symlink():
                raise InputError(
                    f"{p} is a symbolic link; a report writes only regular files inside "
                    f"its output folder (remove it, or give --out a new folder)"
                )
    return out


def write_report(
    report: dict[str, Any], out: str | os.PathLike, plots: bool = True
) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` (and the PNGs) into ``out``; returns the
    paths. ``out`` must hold no symbolic link (:func:`check_output_folder`).
    """
    from urban_gym.strict_json import json_safe

    out = check_output_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "report.json", "md": out / "report.md"}
    if plots:
        from urban_gym.eval.plots import draw_plots

        report["plots"] = [str(p.relative_to(out)) for p in draw_plots(report, out)]
    paths["json"].write_text(
        json.dumps(json_safe(report), indent=1, ensure_ascii=False, allow_nan=False) + "\n",
        encoding="utf-8",
    )
    paths["md"].write_text(format_markdown(report), encoding="utf-8")
    return paths


# --------------------------------------------------------------------------- markdown
def fmt_ci(x: dict[str, Any] | None, metric: str = "success") -> str:
    """``"57.1% [49.0, 64.6]"`` for rates, ``"0.412 [0.35, 0.47]"`` for scores."""
    if not x or x.get("mean") is None:
        return "-"
    pct = metric == "success"
    m, lo = x["mean"], x.get("low")
    hi: Any = x.get("high")  # given with "low"
    if pct:
        s = f"{100 * m:.1f}%"
        return s + (f" [{100 * lo:.1f}, {100 * hi:.1f}]" if lo is not None else "")
    s = f"{m:.3f}"
    return s + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None else "")


def _diff_ci(x: dict[str, Any] | None, pct: bool = True) -> str:
    if not x or x.get("mean") is None:
        return "-"
    if pct:
        return f"{100 * x['mean']:+.1f} pp [{100 * x['low']:+.1f}, {100 * x['high']:+.1f}]"
    return f"{x['mean']:+.3f} [{x['low']:+.3f}, {x['high']:+.3f}]"


def city_table(report: dict[str, Any]) -> list[str]:
    """Success per run and city (CityNav's per-city layout) when the runs span several
    cities; nothing otherwise. A run on one city gives its overall figure in that city's
    column; a run over several, its per-city results.
    """
    results = [(r["name"], report["results"][r["name"]]) for r in report["runs"]]
    cities = sorted({c for _, res in results for c in res.get("cities") or ()})
    if len(cities) < 2:
        return []
    L = ["## Success by city", "", "| run | " + " | ".join(cities) + " |"]
    L.append("|---|" + "---|" * len(cities))
    for name, res in results:
        own = res.get("cities") or []
        cells = []
        for c in cities:
            if res.get("by_city") and c in res["by_city"]:
                g = res["by_city"][c]
            elif own == [c]:
                g = res["overall"]
            else:
                cells.append("-")
                continue
            cells.append(fmt_ci(g["metrics"].get("success")))
        L.append(f"| {name} | " + " | ".join(cells) + " |")
    return [*L, ""]


def _group_table(title: str, groups: dict[str, Any], metrics: list[str], label: str) -> list[str]:
    head = f"| {label} | tasks | episodes | " + " | ".join(f"{m} (95% CI)" for m in metrics) + " |"
    lines = [f"#### {title}", "", head, "|---|---:|---:|" + "---|" * len(metrics)]
    for g, v in groups.items():
        cells = [fmt_ci(v["metrics"].get(m), m) for m in metrics]
        lines.append(f"| {g} | {v['tasks']} | {v['episodes']} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def format_markdown(report: dict[str, Any]) -> str:
    """``report.md``: runs, leaderboard, per-run tables, comparisons, failure causes."""
    s = report["settings"]
    L = ["# Evaluation report", ""]
    L.append(
        f"Every figure is a mean with its 95% {s['bootstrap']}-bootstrap interval "
        f"({s['resamples']:,} resamples, seed {s['seed']}; the unit resampled is the task: "
        "a task's episodes over several seeds are averaged first). Success is `is_success`; "
        "score is the family's headline score where it has one (e.g. MRA for object "
        "counts); overall = every task once (count-weighted), macro = the mean of "
        "the task types' means."
    )
    L.append("")
    L += [judges_text(report), ""]
    L += ["## Runs", ""]
    L.append("| run | env | agent | fuzzy-match judge | tasks | seeds | episodes | complete |")
    L.append("|---|---|---|---|---:|---:|---:|---|")
    for r in report["runs"]:
        ag = r["agent"] or {}
        res = report["results"][r["name"]]
        done = "yes" if r["complete"] else f"no ({r['episodes']}/{r['planned_episodes']})"
        L.append(
            f"| {r['name']} | {r['env_id']} | {ag.get('spec')} | {judge_label(r.get('judge'))} "
            f"| {res['overall']['tasks']} | {r['seeds']} | {r['episodes']} | {done} |"
        )
    L += ["", "## Leaderboard", ""]
    L.append("| # | run | env | tasks | success | macro success | score | SPL | tokens/ep |")
    L.append("|---:|---|---|---:|---|---|---|---|---:|")
    for i, x in enumerate(report["leaderboard"], 1):
        L.append(
            f"| {i} | {x['run']} | {x['env_id']} | {x['tasks']} | {fmt_ci(x['success'])} | "
            f"{fmt_ci(x['macro_success'])} | {fmt_ci(x['score'], 'score')} | "
            f"{fmt_ci(x['spl'], 'spl')} | {x['tokens_per_episode']:g} |"
        )
    L.append("")
    L += city_table(report)
    L += layout_markdown(report)
    for r in report["runs"]:
        L += _run_section(r, report["results"][r["name"]])
    if report["comparisons"]:
        L += ["## Paired comparisons", ""]
        L.append(
            "Each run against the first (the baseline), on the tasks both ran: the mean "
            "per-task difference (second minus first) with its paired-bootstrap 95% "
            "interval; McNemar's exact test on success over episodes paired by task and "
            "repeat (b = only the baseline succeeded, c = only the other run)."
        )
        L.append("")
        for c in report["comparisons"]:
            L += _comparison_section(c)
    L += ["## Failure-cause rules", "", _rules_text(report), ""]
    if report.get("gifs"):
        L += ["## Best and worst episodes", ""]
        for g in report["gifs"]:
            exact = "exact replay" if g.get("exact") else f"replay differs: {g.get('problems')}"
            L.append(f"- {g['run']} / {g['task_type']} / {g['which']}: `{g['path']}` ({exact})")
        L.append("")
    if report.get("plots"):
        L += ["## Plots", ""] + [f"![{p}]({p})" for p in report["plots"]] + [""]
    return "\n".join(L)


def layout_markdown(report: dict[str, Any]) -> list[str]:
    """The section of the report's layout (``report["layout"]``): its title and its
    tables across the runs; nothing for the standard layout.
    """
    lay = resolve_layout(report.get("layout"), [str(r.get("family")) for r in report["runs"]])
    if lay is None:
        return []
    rows = [(r["name"], report["results"][r["name"]].get("layout") or {}) for r in report["runs"]]
    return [f"## {lay.title}", "", *lay.markdown(rows)]


def judges_text(report: dict[str, Any]) -> str:
    """The sentence that says which judge scored the runs' ``fuzzy_match`` answers, and
    whether the runs differ in it (then their fuzzy_match results are not comparable).
    """
    runs = report["runs"]
    j = report.get("judges") or judges_summary([r.get("judge") for r in runs])
    if j["same"]:
        who = "every run" if len(runs) > 1 else "the run"
        return f"Fuzzy-match judge ({who}): {j['labels'][0] if j['labels'] else 'rules'}."
    each = "; ".join(f"{r['name']}: {lab}" for r, lab in zip(runs, j["labels"]))
    return (
        f"**The runs differ in their fuzzy-match judge** ({each}): their fuzzy_match "
        "answers were scored by different judges, so those results are not comparable."
    )


def _rules_text(report: dict[str, Any]) -> str:
    from urban_gym.eval.failures import rules_markdown

    return rules_markdown()


def _run_section(r: dict[str, Any], res: dict[str, Any]) -> list[str]:
    ms = res["metrics"]
    L = [f"## {r['name']} on {r['env_id']}", ""]
    ag = (r.get("agent") or {}).get("config") or {}
    if ag:
        L.append(
            "Agent: " + ", ".join(f"{k}={v}" for k, v in ag.items() if v not in (None, {}, ""))
        )
        L.append("")
    L.append("| | tasks | episodes | " + " | ".join(f"{m} (95% CI)" for m in ms) + " |")
    L.append("|---|---:|---:|" + "---|" * len(ms))
    for label, g in (
        ("overall (count-weighted)", res["overall"]),
        ("macro over types", res["macro"]),
    ):
        tasks = g.get("tasks", g.get("types", ""))
        eps = g.get("episodes", "")
        L.append(
            f"| {label} | {tasks}{' types' if 'types' in g else ''} | {eps} | "
            + " | ".join(fmt_ci(g["metrics"].get(m), m) for m in ms)
            + " |"
        )
    L.append("")
    L += _group_table("By category", res["by_category"], ms, "category")
    L += _group_table("By difficulty", res["by_difficulty"], ms, "difficulty")
    if res.get("by_category_difficulty"):
        L += category_difficulty_table(res)
    L += _group_table("By task type", res["by_type"], ms, "type")
    if res.get("by_city"):
        L += _group_table("By city", res["by_city"], ms, "city")
    L.append(
        "Terminations: "
        + ", ".join(f"{k} {v}" for k, v in res["terminations"].items())
        + f". Mean steps {res['steps']['mean']}; tokens {res['tokens']['total']:,} "
        f"({res['tokens']['per_episode']:g} per episode); errors {res['errors']}."
    )
    L.append("")
    fam = _family(str(r.get("family", "")))
    if fam is not None:
        L += fam.report_markdown(res)
    f = res.get("failures")
    if f:
        L += _failure_section(f)
    lab = res.get("labeler")
    if lab:
        L += _labeler_section(lab)
    return L


def category_difficulty_table(res: dict[str, Any]) -> list[str]:
    """Markdown of a run's success by category (rows) x difficulty (columns), each cell
    ``"57.1% [49.0, 64.6] (n=7)"`` (``n``: tasks); the ``all`` column is the category's,
    the ``all`` row the difficulty's.
    """
    cd = res["by_category_difficulty"]
    diffs = cd["difficulties"]

    def cell(g: dict[str, Any] | None) -> str:
        if not g:
            return "-"
        return f"{fmt_ci(g['metrics'].get('success'))} (n={g['tasks']})"

    L = [
        "#### Success by category and difficulty",
        "",
        "| category | " + " | ".join(diffs) + " | all |",
        "|---|" + "---|" * (len(diffs) + 1),
    ]
    for c in cd["categories"]:
        row = cd["cells"].get(c, {})
        cells = [cell(row.get(d)) for d in diffs] + [cell(res["by_category"].get(c))]
        L.append(f"| {c} | " + " | ".join(cells) + " |")
    total = [cell(res["by_difficulty"].get(d)) for d in diffs] + [cell(res["overall"])]
    L.append("| all | " + " | ".join(total) + " |")
    return [*L, ""]


def _failure_section(f: dict[str, Any]) -> list[str]:
    causes = [c for c in [*ORDER, OTHER, ERROR] if f["dominant"].get(c)]
    L = [f"#### Failure causes ({f['failed']} failed episodes; dominant cause, rules below)", ""]
    if not f["failed"]:
        return [*L, "No failed episodes.", ""]
    L.append("| category | failed | " + " | ".join(causes) + " |")
    L.append("|---|---:|" + "---:|" * len(causes))
    for cat, cnt in [*f["by_category"].items(), ("all", f["dominant"])]:
        n = sum(cnt.values())
        cells = [f"{cnt.get(c, 0)} ({100 * cnt.get(c, 0) / n:.0f}%)" if n else "0" for c in causes]
        L.append(f"| {cat} | {n} | " + " | ".join(cells) + " |")
    L.append("")
    if f.get("rule_hits"):
        L.append(
            "Rules that held (an episode can match several): "
            + ", ".join(f"`{k}` {v}" for k, v in f["rule_hits"].items())
        )
        L.append("")
    return L


def _labeler_section(lab: dict[str, Any]) -> list[str]:
    inputs = lab.get("inputs") or {}
    seen = "the text trace (actions, distances, thoughts)"
    if inputs.get("images"):
        seen += (
            f", and the agent's views and location maps of {inputs.get('steps', 0)} steps "
            f"over {inputs.get('episodes', 0)} episodes (evenly spaced, always the last; "
            f"at most {inputs.get('budget_bytes', 0):,} bytes of images per episode)"
        )
    L = [
        f"#### Model labels vs rules ({lab.get('model')}, {lab.get('labeled')} failed episodes)",
        "",
        f"The model saw {seen}.",
        "",
        f"Cohen's kappa {lab.get('kappa'):.3f}; raw agreement {100 * lab.get('agreement', 0):.1f}%."
        if lab.get("kappa") is not None
        else "No labels.",
        "",
    ]
    conf = lab.get("confusion") or {}
    if conf:
        cols = sorted({c for row in conf.values() for c in row})
        L.append("| rules \\ model | " + " | ".join(cols) + " |")
        L.append("|---|" + "---:|" * len(cols))
        for k, row in conf.items():
            L.append(f"| {k} | " + " | ".join(str(row.get(c, 0)) for c in cols) + " |")
        L.append("")
    return L


def _comparison_section(c: dict[str, Any]) -> list[str]:
    L = [f"### {c['b']} vs {c['a']} ({c['tasks']} common tasks)", ""]
    L.append("| metric | " + f"{c['a']} | {c['b']} | difference (95% CI) |")
    L.append("|---|---|---|---|")
    for m, v in c["metrics"].items():
        pct = m == "success"
        a = "-" if v["a"] is None else (f"{100 * v['a']:.1f}%" if pct else f"{v['a']:.3f}")
        b = "-" if v["b"] is None else (f"{100 * v['b']:.1f}%" if pct else f"{v['b']:.3f}")
        L.append(f"| {m} | {a} | {b} | {_diff_ci(v['diff'], pct)} |")
    mc = c["mcnemar"]
    L.append("")
    L.append(
        f"McNemar (success, {mc['pairs']} paired episodes): both {mc['both']}, neither "
        f"{mc['neither']}, only {c['a']} (b) {mc['a_only']}, only {c['b']} (c) {mc['b_only']}; "
        f"exact two-sided p = {mc['p']:.4g}."
    )
    L.append("")
    if c.get("success_by_type"):
        L.append("| type | success difference (95% CI) | tasks |")
        L.append("|---|---|---:|")
        for ty, v in c["success_by_type"].items():
            L.append(f"| {ty} | {_diff_ci(v)} | {v['n']} |")
        L.append("")
    return L


__all__ = [
    "METRICS",
    "Run",
    "build_report",
    "compare",
    "TaskTable",
    "bins_of",
    "category_difficulty",
    "category_difficulty_table",
    "failure_breakdown",
    "fmt_ci",
    "format_markdown",
    "judges_text",
    "layout_markdown",
    "leaderboard",
    "check_output_folder",
    "load_run",
    "name_runs",
    "ordered",
    "run_label",
    "run_results",
    "summarize_rows",
    "task_table",
    "write_report",
]
