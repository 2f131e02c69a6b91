"""``urban-gym report --layout grounded``: the strict-JSON grounding protocol's main-table
columns for a run of PoseGraph360's grounded suite.

=====================  ===================================================================
table                  columns (each a mean over tasks with its 95% bootstrap interval)
=====================  ===================================================================
image, per task        Option Acc, BBox Acc@0.5, BBox mIoU
composite behaviour    Composite Acc, Temporal F1@0.5, mean tIoU
atomic behaviour       Atomic F1, Temporal F1@0.5, mean tIoU
landmark visibility    Count Acc, Segment F1@0.5, mean tIoU
dual                   Dual Semantic, Dual Evidence per pair group and overall (the unit
                       resampled is the pair; :mod:`urban_gym.eval.dual`)
=====================  ===================================================================

Every episode is scored twice from its answer text (:func:`urban_gym.eval.grounded.score_run`):
*original* under the strict contract and *compatible* after the protocol's compatibility
audit, one box scale for the whole run (pixel boxes refer to the run's view,
:func:`~urban_gym.families.posegraph360.report.view_frame`). A cell shows the original;
where the compatible result differs it follows as ``-> compatible``. A run whose agent ran
the protocol's low-reasoning mode (``--preset grounded:low``) is marked ``(T)``, as the
protocol marks such rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from urban_gym.eval.dual import dual_metrics
from urban_gym.eval.grounded import (
    ATOMIC,
    COMPOSITE,
    KIND_METRICS,
    OPTION_BOX,
    VISIBILITY,
    score_run,
)
from urban_gym.eval.layouts import ReportLayout, cell
from urban_gym.eval.report import fmt_ci

#: Task type -> the protocol's answer kind, in the protocol's table order.
KINDS: dict[str, str] = {
    "relative_position": OPTION_BOX,
    "future_observation": OPTION_BOX,
    "self_position": OPTION_BOX,
    "action_decision": OPTION_BOX,
    "composite_behaviour": COMPOSITE,
    "atomic_behaviour": ATOMIC,
    "landmark_visibility": VISIBILITY,
}
#: Column headings of each metric (the protocol's names).
HEADINGS = {
    "option_correct": "Option Acc",
    "bbox_hit": "BBox Acc@0.5",
    "bbox_iou": "BBox mIoU",
    "composite_correct": "Composite Acc",
    "atomic_f1": "Atomic F1",
    "temporal_f1": "Temporal F1@0.5",
    "mean_tiou": "mean tIoU",
    "count_correct": "Count Acc",
    "segment_f1": "Segment F1@0.5",
}
#: Metrics shown as percentages (the others as scores in [0, 1]).
RATES = {"option_correct", "bbox_hit", "composite_correct", "count_correct"}
MODES = ("original", "compatible")


def low_reasoning(manifest: Mapping[str, Any]) -> bool:
    """Whether the run's agent ran the protocol's low-reasoning mode (its preset row)."""
    preset = ((manifest.get("agent") or {}).get("config") or {}).get("preset") or {}
    return preset.get("name") == "grounded" and preset.get("row") == "low"


def results(run: Any, standard: Mapping[str, Any], resamples: int, seed: int) -> dict[str, Any]:
    """The layout's cells of one run: ``tasks`` (type -> mode -> metric -> cell),
    ``dual`` (mode -> :func:`~urban_gym.eval.dual.dual_metrics`), ``scale``, ``frame``,
    ``low_reasoning``.
    """
    from urban_gym.families.posegraph360.report import view_frame

    records = run.records
    frame = view_frame(run.manifest.get("env_kwargs") or {})
    scores = score_run(records, KINDS, frame)
    by_id = {mode: {} for mode in MODES}  # type: dict[str, dict[int, dict[str, float]]]
    for r, o, c in zip(records, scores.original, scores.compatible):
        for mode, s in (("original", o), ("compatible", c)):
            # no truth in the record: the family's own per-episode metrics, both ways
            by_id[mode][id(r)] = s if s is not None else dict(r.get("metrics") or {})

    def value(mode: str, name: str):
        def get(r: Mapping[str, Any]) -> float | None:
            v = by_id[mode].get(id(r), {}).get(name)
            return None if v is None else float(v)

        return get

    tasks: dict[str, Any] = {}
    for tt, kind in KINDS.items():
        recs = [r for r in records if r.get("task_type") == tt]
        if not recs:
            continue
        tasks[tt] = {
            mode: {
                name: cell(recs, value(mode, name), f"grounded:{tt}:{name}:{mode}", resamples, seed)
                for name in KIND_METRICS[kind]
            }
            for mode in MODES
        }
    dual = {
        mode: dual_metrics(
            records,
            value(mode, "semantic_ok"),
            value(mode, "evidence_ok"),
            resamples=resamples,
            seed=seed,
        )
        for mode in MODES
    }
    return {
        "tasks": tasks,
        "dual": dual,
        "scale": scores.scale,
        "frame": list(frame),
        "low_reasoning": low_reasoning(run.manifest),
    }


def _both(orig: Mapping[str, Any] | None, comp: Mapping[str, Any] | None, rate: bool) -> str:
    metric = "success" if rate else "score"
    a, b = (
        fmt_ci(dict(orig) if orig else None, metric),
        fmt_ci(dict(comp) if comp else None, metric),
    )
    return a if a == b else f"{a} -> {b}"


def _table(head: Sequence[str], body: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(row) + " |" for row in body),
        "",
    ]


def _name(name: str, res: Mapping[str, Any]) -> str:
    return f"{name} (T)" if res.get("low_reasoning") else name


def markdown(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The layout's tables across runs (see the module docstring)."""
    L = [
        "A cell is the original score (strict contract) with its 95% interval; where the "
        "compatible score (the protocol's compatibility audit, one box scale per run) "
        "differs, it follows after ->. (T): low reasoning effort.",
        "",
    ]
    image = [t for t, k in KINDS.items() if k == OPTION_BOX]
    body = []
    for n, r in rows:
        for tt in image:
            got = r.get("tasks", {}).get(tt)
            if got:
                body.append(
                    [
                        _name(n, r),
                        tt,
                        *(
                            _both(got["original"][m], got["compatible"][m], m in RATES)
                            for m in KIND_METRICS[OPTION_BOX]
                        ),
                    ]
                )
    if body:
        heads = [HEADINGS[m] for m in KIND_METRICS[OPTION_BOX]]
        L += ["### Image tasks", "", *_table(["run", "task", *heads], body)]
        scales = ", ".join(f"{n}: {r.get('scale')}" for n, r in rows)
        L += [f"Box scale of each run (stage 5): {scales}.", ""]
    for tt, kind in KINDS.items():
        if kind == OPTION_BOX:
            continue
        body = []
        for n, r in rows:
            got = r.get("tasks", {}).get(tt)
            if got:
                body.append(
                    [
                        _name(n, r),
                        *(
                            _both(got["original"][m], got["compatible"][m], m in RATES)
                            for m in KIND_METRICS[kind]
                        ),
                    ]
                )
        if body:
            heads = [HEADINGS[m] for m in KIND_METRICS[kind]]
            L += [f"### Video: {tt}", "", *_table(["run", *heads], body)]
    body = []
    for n, r in rows:
        d = r.get("dual") or {}
        if not d or not d["original"]["pairs"]:
            continue
        o, c = d["original"], d["compatible"]
        for g in [*o["groups"], "overall"]:
            og = o["overall"] if g == "overall" else o["groups"][g]
            cg = c["overall"] if g == "overall" else c["groups"].get(g, {})
            body.append(
                [
                    _name(n, r),
                    g,
                    str(og["dual_semantic"]["pairs"]),
                    _both(og["dual_semantic"], cg.get("dual_semantic"), True),
                    _both(og["dual_evidence"], cg.get("dual_evidence"), True),
                ]
            )
    if body:
        L += [
            "### Dual metrics (paired agent-state and world-state tasks)",
            "",
            *_table(["run", "group", "pairs", "Dual Semantic", "Dual Evidence"], body),
        ]
        unpaired = ", ".join(
            f"{n}: {sum(r['dual']['original']['unpaired'].values())}" for n, r in rows
        )
        L += [f"Episodes without a pair (left out): {unpaired}.", ""]
    return L


LAYOUT = ReportLayout(
    name="grounded",
    title="Strict-JSON grounding protocol: main-table columns",
    results=results,
    markdown=markdown,
    description="the grounded suite's image and video columns and dual metrics, "
    "original and compatible",
)

__all__ = ["HEADINGS", "KINDS", "LAYOUT", "low_reasoning", "markdown", "results"]
