"""Grounded answers of a run, scored twice: *original* (the strict contract) and
*compatible* (the protocol's deterministic compatibility audit).

The strict-JSON grounding protocol has three answer shapes (``kind``):

=================  ======================================================================
kind               canonical answer
=================  ======================================================================
``option_box``     ``{"answer_option_id": "A", "bbox_xyxy_norm": [x0, y0, x1, y1]}``
``composite``,     ``{"answers": [{"option_id": "A", "intervals_sec": [[t0, t1], ...]},
``atomic``         ...]}``
``visibility``     ``{"visible_count": 2, "visible_intervals_sec": [[t0, t1], ...]}``
=================  ======================================================================

**Original** (:func:`read_original`): stage 1 only -- the answer text, stripped, is one
JSON object with the canonical keys and types; a box counts only when it is normalised,
ordered and has area as given (:func:`urban_gym.tasks.grounding.strict_box`).

**Compatible** (:func:`read_compatible`): the five stages. Reasoning blocks are removed
(:func:`urban_gym.wrappers.parsing.strip_reasoning`); stages 1-3 find JSON values (whole
text, fenced blocks, balanced objects in prose:
:func:`urban_gym.wrappers.parsing.json_candidates`) and the first that fits the kind's
schema wins; stage 4 maps the documented synonym keys (:data:`OPTION_KEYS`,
:data:`BOX_KEYS`, any case) and unwraps a singleton ``answers`` array (or a one-element
list) holding one image prediction; stage 5 reads every box of the run in one coordinate
scale (:func:`urban_gym.tasks.grounding.resolve_scale`: [0, 1], the documented [0, 1000],
or pixels of the run's view when the whole run fits it; a run mixing scales is
ambiguous, and then only boxes valid as given count) and orders reversed corners. Video keys have no documented synonyms and stay
canonical. Still invalid: ambiguous scales, non-finite, out-of-range or degenerate boxes,
intervals that are not two finite numbers, and text without a recoverable JSON object. No
answer is repaired on its own: one rule set for the whole run.

**Scores** per episode (:func:`score_answer`), the names the family's evaluation writes:
``option_correct``, ``bbox_iou``, ``bbox_hit`` (IoU >= 0.5) for images -- the box is
compared with the target's box in the candidate the model chose when the task gives one
per candidate (``task_info["candidate_bboxes"]``; an unknown candidate gets no
localisation credit); ``composite_correct`` (exact label set) or ``atomic_f1`` (label-set
F1), ``temporal_f1`` (F1@0.5, one-to-one within a class, extra classes false positives)
and ``mean_tiou`` for behaviours; ``count_correct``, ``segment_f1`` and ``mean_tiou`` for
visibility; and ``semantic_ok`` / ``evidence_ok`` for the dual metrics
(:mod:`urban_gym.eval.dual`; a video task's evidence is its F1@0.5 >= 0.5).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from urban_gym.tasks import metrics
from urban_gym.tasks.grounding import (
    PROTOCOL_IMAGE_SIZE,
    compatible_box,
    read_box,
    resolve_scale,
    strict_box,
)
from urban_gym.wrappers.parsing import json_candidates, strip_reasoning

OPTION_BOX, COMPOSITE, ATOMIC, VISIBILITY = "option_box", "composite", "atomic", "visibility"
#: The answer shapes (module docstring).
KINDS = (OPTION_BOX, COMPOSITE, ATOMIC, VISIBILITY)
#: Keys of the chosen option, canonical first (the protocol's stage 4 synonyms).
OPTION_KEYS = ("answer_option_id", "choice", "answer")
#: Keys of the box, canonical first (the protocol's documented aliases).
BOX_KEYS = ("bbox_xyxy_norm", "bbox", "bounding_box", "box", "bbox_norm")
#: The metrics each kind scores (besides ``semantic_ok`` and ``evidence_ok``).
KIND_METRICS: dict[str, tuple[str, ...]] = {
    OPTION_BOX: ("option_correct", "bbox_hit", "bbox_iou"),
    COMPOSITE: ("composite_correct", "temporal_f1", "mean_tiou"),
    ATOMIC: ("atomic_f1", "temporal_f1", "mean_tiou"),
    VISIBILITY: ("count_correct", "segment_f1", "mean_tiou"),
}


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"answer kind {kind!r} is not one of {', '.join(KINDS)}")


# ------------------------------------------------------------------ reading
def _intervals(value: Any) -> list[list[float]] | None:
    """``[[t0, t1], ...]`` of finite numbers (ends put in order), else None."""
    if not isinstance(value, list):
        return None
    out = []
    for iv in value:
        if not isinstance(iv, (list, tuple)) or len(iv) != 2:
            return None
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in iv):
            return None
        a, b = float(iv[0]), float(iv[1])
        if not (math.isfinite(a) and math.isfinite(b)):
            return None
        out.append([min(a, b), max(a, b)])
    return out


def _option(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip().upper() if len(value.strip()) == 1 else value.strip()
    return None


def _labels(value: Any) -> dict[str, list[list[float]]] | None:
    """``{option: intervals}`` from a canonical ``answers`` list, else None."""
    if not isinstance(value, list):
        return None
    out: dict[str, list[list[float]]] = {}
    for item in value:
        if not isinstance(item, Mapping):
            return None
        opt, ivs = _option(item.get("option_id")), _intervals(item.get("intervals_sec"))
        if opt is None or ivs is None:
            return None
        out.setdefault(opt, []).extend(ivs)
    return out


def _canonical(value: Any, kind: str) -> dict[str, Any] | None:
    """The canonical reading of a JSON object of ``kind`` with the canonical keys only."""
    if not isinstance(value, Mapping):
        return None
    if kind == OPTION_BOX:
        opt = _option(value.get("answer_option_id"))
        box = value.get("bbox_xyxy_norm")
        if opt is None and box is None:
            return None
        return {"option": opt, "box": box}
    if kind in (COMPOSITE, ATOMIC):
        labels = _labels(value.get("answers"))
        return None if labels is None else {"labels": labels}
    c = value.get("visible_count")
    count = int(c) if isinstance(c, int) and not isinstance(c, bool) else None
    ivs = _intervals(value.get("visible_intervals_sec"))
    if count is None and ivs is None:
        return None
    return {"count": count, "intervals": ivs}


def read_original(text: Any, kind: str) -> dict[str, Any] | None:
    """The strict reading of an answer (stage 1, canonical keys): ``{"option", "box"}``
    (box as given), ``{"labels": {option: intervals}}`` or ``{"count", "intervals"}``;
    None when the text is not one such JSON object.
    """
    _check_kind(kind)
    if isinstance(text, Mapping):
        return _canonical(text, kind)
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text.strip())
    except (ValueError, RecursionError):
        return None
    return _canonical(value, kind)


def _synonyms(value: Any, kind: str) -> Any:
    """Stage 4 for an image answer: a singleton list or ``answers`` array unwrapped, the
    documented option and box aliases mapped to the canonical keys (any case).
    """
    if kind != OPTION_BOX:
        return value
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, Mapping):
        return value
    low = {str(k).strip().casefold(): v for k, v in value.items()}
    inner = low.get("answers")
    if isinstance(inner, list) and len(inner) == 1 and isinstance(inner[0], Mapping):
        low = {str(k).strip().casefold(): v for k, v in inner[0].items()}
    opt = next((low[k] for k in OPTION_KEYS if isinstance(low.get(k), str)), None)
    box = next((low[k] for k in BOX_KEYS if k in low), None)
    return {"answer_option_id": opt, "bbox_xyxy_norm": box}


@dataclass
class Reading:
    """A compatible reading: the canonical answer (None: unreadable) and its stage."""

    answer: dict[str, Any] | None
    stage: str = ""


def read_compatible(text: Any, kind: str) -> Reading:
    """The tolerant reading of an answer (stages 1-4; module docstring). Boxes come back
    as given: the run's scale (stage 5) is applied by :func:`score_run`.
    """
    _check_kind(kind)
    if isinstance(text, Mapping):
        got = _canonical(_synonyms(text, kind), kind)
        return Reading(got, "json" if got is not None else "")
    if not isinstance(text, str):
        return Reading(None)
    visible = strip_reasoning(text).strip()
    for stage, value in json_candidates(visible):
        got = _canonical(_synonyms(value, kind), kind)
        if got is not None:
            return Reading(got, stage)
    return Reading(None)


# ------------------------------------------------------------------ scoring
def _zero(kind: str) -> dict[str, float]:
    out = {name: 0.0 for name in KIND_METRICS[kind]}
    out.update(semantic_ok=0.0, evidence_ok=0.0)
    return out


def score_answer(
    kind: str,
    answer: dict[str, Any] | None,
    truth: dict[str, Any],
    box: tuple[float, float, float, float] | None = None,
    candidate_boxes: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, float]:
    """The episode's scores (module docstring) of a read ``answer`` against the read
    ``truth`` (both :func:`read_original` shapes). For an image answer ``box`` is its box
    already in [0, 1] (None: no valid box); ``candidate_boxes`` the target's box per
    candidate when the box is scored in the chosen candidate.
    """
    _check_kind(kind)
    if answer is None:
        return _zero(kind)
    if kind == OPTION_BOX:
        ok = float(answer.get("option") is not None and answer["option"] == truth["option"])
        if candidate_boxes is not None:
            target = candidate_boxes.get(str(answer.get("option")))
        else:
            target = truth.get("box")
        iou = metrics.bbox_iou(box, target) if box is not None and target is not None else 0.0
        hit = float(iou >= metrics.IOU_THRESHOLD)
        return {
            "option_correct": ok,
            "bbox_hit": hit,
            "bbox_iou": iou,
            "semantic_ok": ok,
            "evidence_ok": hit,
        }
    if kind in (COMPOSITE, ATOMIC):
        p, t = answer["labels"], truth["labels"]
        f1 = metrics.temporal_f1(p, t)
        out = {"temporal_f1": f1, "mean_tiou": metrics.mean_tiou(p, t)}
        if kind == COMPOSITE:
            sem = float(set(p) == set(t))
            out["composite_correct"] = sem
        else:
            out["atomic_f1"] = metrics.label_set_f1(list(p), list(t))
            sem = float(out["atomic_f1"] == 1.0)
        out.update(semantic_ok=sem, evidence_ok=float(f1 >= 0.5))
        return out
    ivs, truth_ivs = answer.get("intervals"), truth.get("intervals") or []
    count = answer.get("count")
    seg = metrics.temporal_f1(ivs, truth_ivs) if ivs is not None else 0.0
    ok = float(count is not None and count == truth.get("count"))
    return {
        "count_correct": ok,
        "segment_f1": seg,
        "mean_tiou": metrics.mean_tiou(ivs, truth_ivs) if ivs is not None else 0.0,
        "semantic_ok": ok,
        "evidence_ok": float(seg >= 0.5),
    }


@dataclass
class RunScores:
    """A run's grounded episodes scored both ways (one entry per record given, None for a
    record :func:`score_run` does not score: no kind, or no readable truth).

    Attributes:
        scale: the run's box scale (:data:`urban_gym.tasks.grounding.SCALES`).
        frame: ``(width, height)`` of the view pixel boxes refer to.
        original: per record, its scores under the strict contract.
        compatible: per record, its scores after the compatibility audit.
        stages: per record, where its compatible answer was found (``""``: nowhere).
    """

    scale: str
    frame: tuple[int, int]
    original: list[dict[str, float] | None] = field(default_factory=list)
    compatible: list[dict[str, float] | None] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)


def score_run(
    records: Sequence[Mapping[str, Any]],
    kinds: Mapping[str, str],
    frame: tuple[int, int] = PROTOCOL_IMAGE_SIZE,
    documented: str | None = None,
) -> RunScores:
    """Score every grounded record of a run both ways (module docstring).

    Args:
        records: the run's episode records (``task_type``, ``answer``, ``task_info``
            with ``truth`` -- the task's canonical answer -- and, for a box scored in
            the chosen candidate, ``candidate_bboxes``).
        kinds: task type -> answer kind (:data:`KINDS`); other types are not scored.
        frame: the view's ``(width, height)`` in pixels, for pixel boxes.
        documented: the model's documented box scale, if any (``"per_mille"`` ...).
    """
    for t, k in kinds.items():
        if k not in KINDS:
            raise ValueError(f"task type {t!r}: answer kind {k!r} is not one of {KINDS}")
    truths: list[dict[str, Any] | None] = []
    readings: list[Reading] = []
    for r in records:
        kind = kinds.get(str(r.get("task_type")))
        info = r.get("task_info") or {}
        truth = read_original(info.get("truth"), kind) if kind else None
        truths.append(truth)
        readings.append(read_compatible(r.get("answer"), kind) if kind and truth else Reading(None))
    boxes = [
        g.answer.get("box")
        if g.answer and kinds.get(str(r.get("task_type"))) == OPTION_BOX
        else None
        for r, g in zip(records, readings)
    ]
    scale = resolve_scale(boxes, frame, documented)
    out = RunScores(scale, frame)
    for r, truth, g, raw in zip(records, truths, readings, boxes):
        kind = kinds.get(str(r.get("task_type")))
        out.stages.append(g.stage)
        if kind is None or truth is None:
            out.original.append(None)
            out.compatible.append(None)
            continue
        cands = (r.get("task_info") or {}).get("candidate_bboxes")
        cands = cands if isinstance(cands, Mapping) else None
        strict = read_original(r.get("answer"), kind)
        sbox = strict_box(strict.get("box")) if strict and kind == OPTION_BOX else None
        out.original.append(score_answer(kind, strict, truth, sbox, cands))
        cbox = compatible_box(raw, scale, frame) if raw is not None else None
        out.compatible.append(score_answer(kind, g.answer, truth, cbox, cands))
    return out


__all__ = [
    "ATOMIC",
    "BOX_KEYS",
    "COMPOSITE",
    "KINDS",
    "KIND_METRICS",
    "OPTION_BOX",
    "OPTION_KEYS",
    "VISIBILITY",
    "Reading",
    "RunScores",
    "read_box",
    "read_compatible",
    "read_original",
    "score_answer",
    "score_run",
]
