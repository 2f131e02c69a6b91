"""Matched-context dual metrics of the strict-JSON grounding protocol: Dual Semantic
Accuracy and Dual Evidence Accuracy over paired agent-state / world-state questions.

A grounded task names its context in ``meta["pair"]`` (kept in an episode record's
``task_info["pair"]``): ``{"group", "key", "state"}`` with ``state`` ``"agent"`` or
``"world"``. Tasks with the same ``group`` and ``key`` share one context -- the same
scene, landmark and difficulty for an image pair, the same source walk for video -- and
form one *pair* when it holds at least one agent-state and one world-state task (a video
context holds two agent-state behaviour tasks and one world-state visibility task).

Per pair and repeat (episodes of the same ``repeat`` index are matched; a pair lacking a
repeat on one side is not scored for it):

* **dual semantic** = 1 when every task of the pair has its semantic output right
  (``semantic_ok``), else 0;
* **dual evidence** = 1 when every task has its localisation right (``evidence_ok``: the
  IoU >= 0.5 box of an image task, sample-level F1@0.5 >= 0.5 of a video task).

An episode without the metric (an error) counts as not right. Tasks without a pair, or
whose context lacks the other state, are *unpaired*: left out and counted. Accuracy is the
mean over pairs, per group and overall (every pair weighs the same); its 95% interval is
the report's percentile bootstrap with the pair as the unit resampled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from urban_gym.eval import stats

#: The two states of a pair.
STATES = ("agent", "world")
#: The groups the protocol pairs (image position, image action-observation, video).
GROUPS = ("position", "action_observation", "video")

#: ``record -> 0/1 or None``: how a record says its output was right.
Judge = Callable[[Mapping[str, Any]], float | None]


def record_pair(record: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """``(group, key, state)`` of an episode record's ``task_info["pair"]``, None when it
    has none or it is malformed (a state other than agent/world).
    """
    p = (record.get("task_info") or {}).get("pair")
    if not isinstance(p, Mapping):
        return None
    g, k, s = p.get("group"), p.get("key"), p.get("state")
    if not isinstance(g, str) or k is None or s not in STATES:
        return None
    return g, str(k), str(s)


def metric_ok(name: str) -> Judge:
    """A :data:`Judge` reading the record's metric ``name`` (a finite 0/1 number)."""

    def judge(record: Mapping[str, Any]) -> float | None:
        v = (record.get("metrics") or {}).get(name)
        if isinstance(v, bool):
            return float(v)
        if isinstance(v, (int, float)) and math.isfinite(v):
            return float(v)
        return None

    return judge


@dataclass(frozen=True)
class PairOutcome:
    """One scored pair (one repeat of one context).

    Attributes:
        group: the pair's group (``position`` ...).
        key: the context key.
        repeat: the repeat index of its episodes.
        tasks: the task ids of the pair.
        semantic: 1.0 when every task's semantic output was right, else 0.0.
        evidence: 1.0 when every task's localisation was right, else 0.0.
    """

    group: str
    key: str
    repeat: int
    tasks: tuple[str, ...]
    semantic: float
    evidence: float


def pair_outcomes(
    records: Iterable[Mapping[str, Any]],
    semantic: Judge | None = None,
    evidence: Judge | None = None,
) -> tuple[list[PairOutcome], dict[str, int]]:
    """The scored pairs of ``records`` and the unpaired episodes per group
    (``"-"``: episodes with no pair at all). ``semantic`` / ``evidence`` read whether a
    record's output was right (default: its ``semantic_ok`` / ``evidence_ok`` metrics).
    """
    sem = semantic or metric_ok("semantic_ok")
    evi = evidence or metric_ok("evidence_ok")
    contexts: dict[tuple[str, str], dict[int, list[Mapping[str, Any]]]] = {}
    unpaired: dict[str, int] = {}
    for r in records:
        p = record_pair(r)
        if p is None:
            unpaired["-"] = unpaired.get("-", 0) + 1
            continue
        rep = int(r.get("repeat") or 0)
        contexts.setdefault((p[0], p[1]), {}).setdefault(rep, []).append(r)
    out: list[PairOutcome] = []
    for (group, key), by_repeat in sorted(contexts.items()):
        for rep, recs in sorted(by_repeat.items()):
            states = {record_pair(r)[2] for r in recs}  # type: ignore[index]
            if states != set(STATES):
                unpaired[group] = unpaired.get(group, 0) + len(recs)
                continue
            out.append(
                PairOutcome(
                    group,
                    key,
                    rep,
                    tuple(sorted(str(r.get("task_id")) for r in recs)),
                    float(all((sem(r) or 0.0) >= 1.0 for r in recs)),
                    float(all((evi(r) or 0.0) >= 1.0 for r in recs)),
                )
            )
    return out, unpaired


def _cell(values: list[float], stream: str, resamples: int, seed: int) -> dict[str, Any]:
    if not values:
        return {"mean": None, "low": None, "high": None, "pairs": 0}
    v = np.asarray(values, dtype=np.float64)
    samples = stats.bootstrap_means(v, resamples, stats.stream_seed(seed, stream))
    lo, hi = stats.percentile_ci(samples)
    return {
        "mean": round(float(v.mean()), 6),
        "low": round(float(lo[0]), 6),
        "high": round(float(hi[0]), 6),
        "pairs": len(values),
    }


def dual_metrics(
    records: Iterable[Mapping[str, Any]],
    semantic: Judge | None = None,
    evidence: Judge | None = None,
    resamples: int = stats.RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Dual Semantic and Dual Evidence Accuracy of ``records`` (see the module docstring):
    ``{"groups": {group: {"dual_semantic": cell, "dual_evidence": cell}}, "overall":
    {...}, "pairs": n, "unpaired": {group: episodes}}``; a cell is ``{"mean", "low",
    "high", "pairs"}`` (the three numbers None without pairs). Groups are listed in
    :data:`GROUPS` order, then any other group by name.
    """
    pairs, unpaired = pair_outcomes(records, semantic, evidence)
    present = {p.group for p in pairs}
    order = [g for g in GROUPS if g in present] + sorted(present - set(GROUPS))
    groups: dict[str, Any] = {}
    for g in order:
        ps = [p for p in pairs if p.group == g]
        groups[g] = {
            "dual_semantic": _cell([p.semantic for p in ps], f"dual:{g}:s", resamples, seed),
            "dual_evidence": _cell([p.evidence for p in ps], f"dual:{g}:e", resamples, seed),
        }
    return {
        "groups": groups,
        "overall": {
            "dual_semantic": _cell([p.semantic for p in pairs], "dual:all:s", resamples, seed),
            "dual_evidence": _cell([p.evidence for p in pairs], "dual:all:e", resamples, seed),
        },
        "pairs": len(pairs),
        "unpaired": dict(sorted(unpaired.items())),
    }


__all__ = [
    "GROUPS",
    "STATES",
    "PairOutcome",
    "dual_metrics",
    "metric_ok",
    "pair_outcomes",
    "record_pair",
]
