"""``urban-gym report --layout urbanground``: CityWalk's results as UrbanGround lays
them out (Section 4, Tables 1-4 and Figure 8), one row per run, every cell a mean over
tasks with its 95% percentile-bootstrap interval (:func:`urban_gym.eval.layouts.cell`).

* **Table 1** (Section 4.2) -- answer accuracy and pedestrian-network adherence (PNA) of
  VR, OU and AEQ, and their instance-count-weighted overall (the three types' tasks
  pooled).
* **Table 2** (Section 4.3) -- success of the eight navigation types, grouped as the paper
  groups them: destination provided (SN = SGN, LN = LGN, IN, CN), inferred (PS = PTS,
  II = III), multiple (TW = TWS, MS = MSP); overall = the eight types' tasks pooled.
* **Table 3** (Section 4.4) -- L1 question accuracy (VR, OU, AEQ pooled) and SGN success
  per condition: clear day, dusk, night, fog, rain. A condition's column holds the
  condition variants (``task_info.variant``); the clear-day column the base tasks those
  variants vary (``task_info.base_task``: matched instances), or every base task of the
  types when the run's records do not say which.
* **Table 4** (Section 4.4) -- the dynamic tasks: road closure (DCR) SR, PNA and CCR (the
  share of episodes that never crossed a closure), pedestrians (NP) SR, PNA and PCR (the
  share of episodes with at least one pedestrian contact).
* **Figure 8's measures** (Section 4.3) -- the share of LGN episodes that ended closer to
  the goal than they began, and the mean fraction of MSP destinations reached.
* **The LongNav failure taxonomy** (Section 4.3; our rules:
  :mod:`urban_gym.families.citywalk.longnav`) of failed LGN and NP episodes, beside the
  five failure causes of the standard report for the same episodes.

Tables 1 and 2 count base tasks only (not the condition variants); PNA is the mean over
episodes that spent action time (an episode that never moved has no PNA).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from urban_gym.eval.layouts import ReportLayout, cell, metric_value
from urban_gym.eval.report import fmt_ci
from urban_gym.families.citywalk.longnav import (
    LABELS,
    PROGRESS_FRACTION,
    RULES_TEXT,
    TAXONOMY_TYPES,
    UNCLASSIFIED,
    record_failure,
)
from urban_gym.families.citywalk.tasks.types import DEFAULT_MAX_STEPS, VARIANT_CONDITIONS

Record = Mapping[str, Any]
Value = Callable[[Record], float | None]

#: Table 1's question types.
QUESTION_TYPES: tuple[str, ...] = ("VR", "OU", "AEQ")
#: Table 2: groups of (our type, the paper's column).
NAVIGATION_GROUPS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("destination provided", (("SGN", "SN"), ("LGN", "LN"), ("IN", "IN"), ("CN", "CN"))),
    ("destination inferred", (("PTS", "PS"), ("III", "II"))),
    ("multiple destinations", (("TWS", "TW"), ("MSP", "MS"))),
)
NAVIGATION_TYPES: tuple[str, ...] = tuple(t for _, g in NAVIGATION_GROUPS for t, _ in g)
#: Table 3's columns: (heading, the variant's name; None: the base tasks, clear day).
CONDITIONS: tuple[tuple[str, str | None], ...] = (
    ("clear day", None),
    *(
        (tod if weather == "clear" else weather, f"{tod}-{weather}")
        for tod, weather in VARIANT_CONDITIONS
    ),
)
#: Table 4: (type, heading, its own measure's column and metric).
DYNAMIC: tuple[tuple[str, str, str, str], ...] = (
    ("DCR", "road closure (DCR)", "CCR", "closure_compliance"),
    ("NP", "pedestrians (NP)", "PCR", "pedestrian_collision"),
)


def _info(r: Record) -> Mapping[str, Any]:
    return r.get("task_info") or {}


def _is_base(r: Record) -> bool:
    return _info(r).get("variant") is None


def _metric(name: str) -> Value:
    return lambda r: metric_value(r, name)


def _accuracy(r: Record) -> float | None:
    v = metric_value(r, "answer_accuracy")
    return v if v is not None else metric_value(r, "success")


def _ended_closer(r: Record) -> float | None:
    v = metric_value(r, "ended_closer")
    if v is not None:
        return v
    a = (r.get("start") or {}).get("distance_to_goal_m")
    b = (r.get("end") or {}).get("distance_to_goal_m")
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return 1.0 if b < a else 0.0
    return None


class _Cells:
    """The records of one run, and cells of them under named bootstrap streams."""

    def __init__(self, records: Sequence[Record], resamples: int, seed: int) -> None:
        self.by_type: dict[str, list[Record]] = defaultdict(list)
        for r in records:
            self.by_type[str(r.get("task_type"))].append(r)
        self.resamples, self.seed = resamples, seed

    def of(self, types: Sequence[str], keep: Callable[[Record], bool]) -> list[Record]:
        return [r for t in types for r in self.by_type.get(t, []) if keep(r)]

    def cell(self, recs: Sequence[Record], value: Value, stream: str) -> dict[str, Any]:
        return cell(recs, value, f"urbanground/{stream}", self.resamples, self.seed)


def table1(c: _Cells) -> dict[str, Any]:
    """Answer accuracy and PNA per question type and overall (base tasks)."""
    out: dict[str, Any] = {}
    for ty in (*QUESTION_TYPES, "overall"):
        recs = c.of(QUESTION_TYPES if ty == "overall" else (ty,), _is_base)
        out[ty] = {
            "accuracy": c.cell(recs, _accuracy, f"t1/{ty}/accuracy"),
            "pna": c.cell(recs, _metric("network_adherence"), f"t1/{ty}/pna"),
        }
    return out


def table2(c: _Cells) -> dict[str, Any]:
    """Success per navigation type (paper's column names) and overall (base tasks)."""
    out: dict[str, Any] = {}
    for _, cols in NAVIGATION_GROUPS:
        for ty, col in cols:
            out[col] = c.cell(c.of((ty,), _is_base), _metric("success"), f"t2/{ty}")
    out["overall"] = c.cell(c.of(NAVIGATION_TYPES, _is_base), _metric("success"), "t2/overall")
    return out


def table3(c: _Cells) -> dict[str, Any]:
    """L1 question accuracy and SGN success per condition (matched instances)."""
    out: dict[str, Any] = {}
    for what, types, value in (
        ("qa_accuracy", QUESTION_TYPES, _accuracy),
        ("sgn_success", ("SGN",), _metric("success")),
    ):
        variants = c.of(types, lambda r: not _is_base(r))
        bases = {_info(r).get("base_task") for r in variants} - {None}
        matched = bool(bases)
        row: dict[str, Any] = {}
        for heading, variant in CONDITIONS:
            if variant is None:
                recs = [
                    r for r in c.of(types, _is_base) if not matched or r.get("task_id") in bases
                ]
            else:
                recs = [r for r in variants if _info(r).get("variant") == variant]
            row[heading] = c.cell(recs, value, f"t3/{what}/{heading}")
        out[what] = {"matched": matched, "cells": row}
    return out


def table4(c: _Cells) -> dict[str, Any]:
    """SR, PNA and the type's own rate (CCR or PCR) of the dynamic tasks."""
    out: dict[str, Any] = {}
    for ty, _, col, metric in DYNAMIC:
        recs = c.of((ty,), lambda r: True)
        out[ty] = {
            "SR": c.cell(recs, _metric("success"), f"t4/{ty}/sr"),
            "PNA": c.cell(recs, _metric("network_adherence"), f"t4/{ty}/pna"),
            col: c.cell(recs, _metric(metric), f"t4/{ty}/{col}"),
        }
    return out


def figure8(c: _Cells) -> dict[str, Any]:
    """LGN's share of episodes ending closer; MSP's mean fraction of stops reached."""
    return {
        "lgn_ended_closer": c.cell(c.of(("LGN",), _is_base), _ended_closer, "f8/lgn"),
        "msp_fraction_reached": c.cell(
            c.of(("MSP",), _is_base), _metric("fraction_reached"), "f8/msp"
        ),
    }


def taxonomy(run: Any, results: Mapping[str, Any]) -> dict[str, Any]:
    """The LongNav label of every failed LGN/NP episode (from its trace), counted per
    type, and crossed with the episode's dominant failure cause where the standard
    report computed them.
    """
    from urban_gym.errors import UrbanGymError

    max_steps = (run.manifest.get("env_kwargs") or {}).get("max_steps") or DEFAULT_MAX_STEPS
    dominant = {
        e.get("key"): e.get("dominant")
        for e in ((results.get("failures") or {}).get("episodes") or [])
    }
    episodes = []
    for r in run.records:
        if r.get("is_success") or r.get("task_type") not in TAXONOMY_TYPES:
            continue
        try:
            steps = run.dir.read_trace(r)
        except UrbanGymError:
            steps = []
        lab = record_failure(r, steps, int(max_steps))
        episodes.append(
            {
                "key": r.get("key"),
                "task_type": r.get("task_type"),
                **lab,
                "cause": dominant.get(r.get("key")),
            }
        )
    by_type: dict[str, Counter] = defaultdict(Counter)
    cross: dict[str, Counter] = defaultdict(Counter)
    for e in episodes:
        by_type[e["task_type"]][e["label"]] += 1
        by_type["all"][e["label"]] += 1
        if e["cause"] is not None:
            cross[e["label"]][e["cause"]] += 1
    return {
        "failed": len(episodes),
        "by_type": {t: dict(by_type[t]) for t in (*TAXONOMY_TYPES, "all") if t in by_type},
        "by_cause": {k: dict(v) for k, v in cross.items()},
        "episodes": episodes,
    }


def results(run: Any, res: Mapping[str, Any], resamples: int, seed: int) -> dict[str, Any]:
    """The layout's cells of one run (see the module docstring)."""
    c = _Cells(run.records, resamples, seed)
    return {
        "table1": table1(c),
        "table2": table2(c),
        "table3": table3(c),
        "table4": table4(c),
        "figure8": figure8(c),
        "taxonomy": taxonomy(run, res),
    }


# --------------------------------------------------------------------------- markdown
def _ci(x: Mapping[str, Any] | None) -> str:
    return fmt_ci(dict(x) if x else None, "success")


def _n(rows: Sequence[tuple[str, Mapping[str, Any]]], get: Callable[[Mapping], Any]) -> str:
    """Tasks per column of the first run, as a note under a table."""
    return str(get(rows[0][1]).get("tasks", 0)) if rows else "0"


def _table(head: Sequence[str], body: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|---|" + "---|" * (len(head) - 1),
        *("| " + " | ".join(b) + " |" for b in body),
        "",
    ]


def markdown(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Tables 1-4, Figure 8's measures and the taxonomy, a row per run."""
    rows = [(n, r) for n, r in rows if r]
    if not rows:
        return ["No run has this layout's results.", ""]
    L = [
        "UrbanGround's tables (Section 4): every cell a mean over tasks with its 95% "
        "bootstrap interval; overall = the types' tasks pooled (instance-count-weighted). "
        "Tables 1-2: base tasks (no condition variants). PNA: the share of action time on "
        "the pedestrian network, over episodes that moved.",
        "",
        "### Table 1: answer accuracy and PNA (L1 questions)",
        "",
    ]
    cols = [*QUESTION_TYPES, "overall"]
    head = ["run", *(f"{t} {m}" for t in cols for m in ("acc", "PNA"))]
    body = [
        [n, *(_ci(r["table1"][t][m]) for t in cols for m in ("accuracy", "pna"))] for n, r in rows
    ]
    L += _table(head, body)
    L += [_tasks_note(rows, [(t, lambda r, t=t: r["table1"][t]["accuracy"]) for t in cols]), ""]
    L += ["### Table 2: navigation success", ""]
    groups = "; ".join(f"{g}: {', '.join(c for _, c in cs)}" for g, cs in NAVIGATION_GROUPS)
    L += [f"Grouped as in the paper -- {groups}.", ""]
    t2cols = [col for _, cs in NAVIGATION_GROUPS for _, col in cs] + ["overall"]
    L += _table(["run", *t2cols], [[n, *(_ci(r["table2"][c]) for c in t2cols)] for n, r in rows])
    L += [_tasks_note(rows, [(c, lambda r, c=c: r["table2"][c]) for c in t2cols]), ""]
    L += table3_markdown(rows)
    L += table4_markdown(rows)
    L += ["### Figure 8: progress without completion", ""]
    L += _table(
        ["run", "LGN episodes ending closer", "MSP destinations reached (mean fraction)"],
        [
            [n, _ci(r["figure8"]["lgn_ended_closer"]), _ci(r["figure8"]["msp_fraction_reached"])]
            for n, r in rows
        ],
    )
    L += taxonomy_markdown(rows)
    return L


def _tasks_note(rows: Sequence[tuple[str, Mapping[str, Any]]], cols: list) -> str:
    return f"Tasks ({rows[0][0]}): " + ", ".join(f"{h} {_n(rows, g)}" for h, g in cols) + "."


def table3_markdown(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Table 3: a row per run and measure, a column per condition."""
    heads = [h for h, _ in CONDITIONS]
    L = ["### Table 3: accuracy and short-navigation success by condition", ""]
    body = []
    for n, r in rows:
        for what, label in (("qa_accuracy", "L1 accuracy"), ("sgn_success", "SGN success")):
            cells = r["table3"][what]["cells"]
            body.append([n, label, *(_ci(cells[h]) for h in heads)])
    L += _table(["run", "measure", *heads], body)
    first = rows[0][1]["table3"]
    matched = all(first[w]["matched"] for w in ("qa_accuracy", "sgn_success"))
    L.append(
        "Clear day: the base tasks the condition variants vary (matched instances)."
        if matched
        else "Clear day: every base task of the types (the records do not name the base "
        "task of each variant)."
    )
    L.append(
        _tasks_note(
            rows,
            [(h, lambda r, h=h: r["table3"]["qa_accuracy"]["cells"][h]) for h in heads],
        ).replace("Tasks", "L1 tasks")
    )
    return [*L, ""]


def table4_markdown(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Table 4: SR, PNA and CCR of DCR; SR, PNA and PCR of NP."""
    L = ["### Table 4: dynamic environments", ""]
    head = ["run"]
    for _, heading, col, _ in DYNAMIC:
        head += [f"{heading} {m}" for m in ("SR", "PNA", col)]
    body = [
        [n, *(_ci(r["table4"][ty][m]) for ty, _, col, _ in DYNAMIC for m in ("SR", "PNA", col))]
        for n, r in rows
    ]
    L += _table(head, body)
    L.append(
        "CCR: the share of road-closure episodes that never crossed a closure; PCR: the "
        "share of pedestrian episodes with at least one pedestrian contact."
    )
    return [*L, ""]


def taxonomy_markdown(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The taxonomy's counts per run and type, crossed with the five causes."""
    cols = [*LABELS, UNCLASSIFIED]
    L = [
        "### LongNav failure taxonomy (failed LGN and NP episodes)",
        "",
        "Our rules (UrbanGround names the four kinds; its definitions are not in our copy): "
        "d0 the walking distance to the goal at the start, G = max(success radius, "
        f"{100 * PROGRESS_FRACTION:.0f}% of d0), best = d0 - the smallest distance, "
        "kept = d0 - the last; the first rule that holds:",
        "",
        *(f"{i}. `{k}`: {t}" for i, (k, t) in enumerate(RULES_TEXT, 1)),
        "",
    ]
    body = []
    for n, r in rows:
        tx = r["taxonomy"]
        for ty, cnt in tx["by_type"].items():
            total = sum(cnt.values())
            body.append(
                [
                    n,
                    ty,
                    str(total),
                    *(f"{cnt.get(c, 0)} ({100 * cnt.get(c, 0) / total:.0f}%)" for c in cols),
                ]
            )
    if not body:
        return [*L, "No failed LGN or NP episodes.", ""]
    L += _table(["run", "type", "failed", *cols], body)
    for n, r in rows:
        pre = Counter(
            e["progress"] for e in r["taxonomy"]["episodes"] if e["label"] == "premature_stop"
        )
        if pre:
            L.append(
                f"{n}: progress of the premature stops -- "
                + ", ".join(f"{k} {pre[k]}" for k in (*LABELS[1:], UNCLASSIFIED) if pre[k])
                + "."
            )
    L.append("")
    causes = sorted({c for _, r in rows for v in r["taxonomy"]["by_cause"].values() for c in v})
    if causes:
        L += ["Beside the five failure causes (dominant cause of the same episodes):", ""]
        cross = []
        for n, r in rows:
            for lab in cols:
                cnt = r["taxonomy"]["by_cause"].get(lab)
                if cnt:
                    cross.append([n, lab, *(str(cnt.get(c, 0)) for c in causes)])
        L += _table(["run", "taxonomy", *causes], cross)
    return L


#: The layout ``urban-gym report --layout urbanground`` uses.
LAYOUT = ReportLayout(
    name="urbanground",
    title="UrbanGround's tables",
    results=results,
    markdown=markdown,
    description="UrbanGround's Tables 1-4, Figure 8's measures, the LongNav failure taxonomy",
)

__all__ = [
    "CONDITIONS",
    "DYNAMIC",
    "LAYOUT",
    "NAVIGATION_GROUPS",
    "QUESTION_TYPES",
    "markdown",
    "results",
    "table1",
    "table2",
    "table3",
    "table4",
]
