"""Metrics of the urban navigation benchmarks, as plain functions with the field's formulas.

Distances are metres, times seconds. Every function is pure and deterministic; the
environments call them at episode end and put the results in ``info["metrics"]``.

References for the formulas (facts, re-implemented here):

* SPL: Anderson et al., "On Evaluation of Embodied Navigation Agents", 2018:
  ``SPL = S * l / max(p, l)`` with shortest length ``l`` and taken length ``p``.
* nDTW / SDTW: Ilharco et al., "General Evaluation for Instruction Conditioned Navigation
  Agents", 2019: ``nDTW = exp(-DTW(R, Q) / (|R| * d_th))``, ``SDTW = SR * nDTW``.
* Mean relative accuracy (MRA): Yang et al., "Thinking in Space", 2024 (360CityArena, its
  section 3.4, eq. 1, for object counts):
  ``MRA = 1/10 * sum_{theta in {0.50, 0.55, ..., 0.95}} 1[|y_hat - y| / y < 1 - theta]``;
  ``y_hat`` is the number the answer states, in digits or English words
  (:mod:`urban_gym.tasks.numbers`).
* Task completion (Touchdown, Chen et al. 2019, its navigation evaluation; VELMA,
  Schumann et al. 2024, reports the same TC): the final node is the goal or adjacent to it.
  Touchdown's shortest-path distance (SPD) is the graph distance from the final node to
  the goal, which a family computes on its graph.
* nDTW over graph distances (Ilharco et al. 2019 define it for graphs too): the step costs
  are shortest-path distances between nodes (:func:`ndtw_of_costs`), ``d_th`` in the
  same unit.
"""

from __future__ import annotations

import math
import operator
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from urban_gym.tasks.numbers import read_number

Point = tuple[float, float]
Judge = Callable[[str, Sequence[str]], bool]

MRA_THRESHOLDS: tuple[float, ...] = tuple(round(0.50 + 0.05 * k, 2) for k in range(10))


# ---------------------------------------------------------------- answers
def normalize_text(text: str) -> str:
    """Casefold, strip accents (ä -> a), turn punctuation into spaces, collapse spaces."""
    t = unicodedata.normalize("NFKD", str(text).casefold())
    t = "".join(ch for ch in t if not unicodedata.combining(ch))
    t = re.sub(r"[^\w]+", " ", t)
    return " ".join(t.split())


def exact_match(prediction: object, truth: object) -> bool:
    """360CityArena's exact_match: the final answer text, stripped of surrounding blanks,
    equals the ground-truth text exactly (``"x:2 y:4"`` matches only ``"x:2 y:4"``).
    """
    if prediction is None or truth is None:
        return False
    return str(prediction).strip() == str(truth).strip()


def normalized_match(prediction: object, truth: object) -> bool:
    """Equality after :func:`normalize_text` (numbers compare as numbers): a lenient
    companion of :func:`exact_match`, reported beside it, never instead of it.
    """
    if prediction is None:
        return False
    if isinstance(truth, (int, float)) and not isinstance(truth, bool):
        num = parse_number(prediction)
        return num is not None and num == float(truth)
    return normalize_text(str(prediction)) == normalize_text(str(truth))


def name_judge(prediction: str, candidates: Sequence[str]) -> bool:
    """The default fuzzy judge: the normalised prediction equals one of the normalised
    candidate names, or contains one of them as a whole-word phrase ("It is Cafe Aalto."
    matches "Cafe Aalto").
    """
    p = normalize_text(prediction)
    if not p:
        return False
    for c in candidates:
        n = normalize_text(c)
        if not n:
            continue
        if p == n or re.search(rf"(^| ){re.escape(n)}( |$)", p):
            return True
    return False


def fuzzy_match(
    prediction: object,
    truth: str,
    aliases: Iterable[str] = (),
    judge: Judge | None = None,
) -> bool:
    """Whether ``prediction`` names ``truth`` (or one of its ``aliases``) according to
    ``judge`` (default :func:`name_judge`; a language-model judge can be plugged in).
    """
    if prediction is None:
        return False
    return (judge or name_judge)(str(prediction), [truth, *aliases])


def parse_number(value: object) -> float | None:
    """The number an answer states: digits inside text or English number words
    (``"There are four."`` -> 4.0, ``"about 12 trees"`` -> 12.0), the last one stated
    unless an answer marker such as ``total`` or ``answer`` points at another; None when
    it states none. The rules are :func:`urban_gym.tasks.numbers.read_number`'s.
    """
    return read_number(value)


def mean_relative_accuracy(prediction: object, truth: float) -> float:
    """MRA over thresholds 0.50..0.95 of the number ``prediction`` states
    (:func:`parse_number`: ``"There are four."`` is 4); an answer with no number scores 0;
    when ``truth == 0`` only an exact 0 scores (1.0).
    """
    y_hat = parse_number(prediction)
    if y_hat is None:
        return 0.0
    y = float(truth)
    if y == 0.0:
        return 1.0 if y_hat == 0.0 else 0.0
    rel = abs(y_hat - y) / abs(y)
    return sum(rel < 1.0 - th for th in MRA_THRESHOLDS) / len(MRA_THRESHOLDS)


# ---------------------------------------------------------------- positions
def coordinate_match(position: Point, goal: Point, radius: float) -> bool:
    """Final position within ``radius`` metres of ``goal``."""
    return math.dist(position, goal) <= radius


def success(reached: bool, constraints_kept: bool = True) -> float:
    """1.0 when the goal was reached and every constraint kept, else 0.0."""
    return 1.0 if (reached and constraints_kept) else 0.0


def spl(succeeded: float | bool, shortest: float, taken: float) -> float:
    """Success weighted by path length: ``S * l / max(p, l)``."""
    s = float(succeeded)
    if s == 0.0:
        return 0.0
    if shortest <= 0.0:
        return s
    return s * shortest / max(taken, shortest)


def decision_accuracy(remaining_before: Sequence[float], remaining_after: Sequence[float]) -> float:
    """Fraction of decisions after which the remaining shortest distance to the goal
    decreased. NaN when there were no decisions.
    """
    if len(remaining_before) != len(remaining_after):
        raise ValueError(
            f"decision_accuracy needs equal lengths, got {len(remaining_before)} and "
            f"{len(remaining_after)}"
        )
    if not remaining_before:
        return float("nan")
    # after < before, counted in C (an episode's end pays it for every decision)
    good = sum(map(operator.lt, remaining_after, remaining_before))
    return good / len(remaining_before)


def path_length(points: Sequence[Point]) -> float:
    """Length in metres of a polyline."""
    if len(points) < 2:
        return 0.0
    a = np.asarray(points, dtype=float)
    return float(np.hypot(*np.diff(a, axis=0).T).sum())


def dtw(query: Sequence[Point], reference: Sequence[Point]) -> float:
    """Dynamic time warping distance between two point sequences (Euclidean step cost)."""
    q = np.asarray(query, dtype=float).reshape(-1, 2)
    r = np.asarray(reference, dtype=float).reshape(-1, 2)
    if len(q) == 0 or len(r) == 0:
        return float("inf")
    cost = np.hypot(q[:, None, 0] - r[None, :, 0], q[:, None, 1] - r[None, :, 1]).tolist()
    return dtw_of_costs(cost)


def dtw_of_costs(cost: Sequence[Sequence[float]]) -> float:
    """Dynamic time warping distance from the step costs ``cost[i][j]`` between query
    element ``i`` and reference element ``j`` (e.g. graph distances between panoramas,
    as nDTW's graph form takes them).
    """
    if len(cost) == 0 or len(cost[0]) == 0:
        return float("inf")
    # the accumulated cost row by row, in Python floats (the same doubles as numpy's,
    # without its per-element indexing cost)
    inf = math.inf
    prev = [0.0] + [inf] * len(cost[0])
    for row in cost:
        cur = [inf]
        left = inf
        for j, c in enumerate(row):
            left = c + min(prev[j + 1], left, prev[j])
            cur.append(left)
        prev = cur
    return float(prev[-1])


def ndtw(query: Sequence[Point], reference: Sequence[Point], d_th: float) -> float:
    """Normalised DTW: ``exp(-DTW / (|R| * d_th))``, ``d_th`` the success threshold (m)."""
    if d_th <= 0:
        raise ValueError(f"d_th={d_th!r} must be positive")
    return math.exp(-dtw(query, reference) / (len(reference) * d_th))


def ndtw_of_costs(cost: Sequence[Sequence[float]], d_th: float) -> float:
    """Normalised DTW from step costs (:func:`dtw_of_costs`; a column per reference element):
    ``exp(-DTW / (|R| * d_th))`` with ``d_th`` in the costs' unit.
    """
    if d_th <= 0:
        raise ValueError(f"d_th={d_th!r} must be positive")
    if len(cost) == 0 or len(cost[0]) == 0:
        return 0.0
    return math.exp(-dtw_of_costs(cost) / (len(cost[0]) * d_th))


def sdtw(
    succeeded: float | bool, query: Sequence[Point], reference: Sequence[Point], d_th: float
) -> float:
    """Success weighted by nDTW."""
    return float(succeeded) * ndtw(query, reference, d_th)


def task_completion(
    final_node: object, goal_node: object, goal_neighbours: Iterable[object]
) -> bool:
    """Touchdown's task completion: the final node is the goal or one of its neighbours."""
    return final_node == goal_node or final_node in set(goal_neighbours)


# ---------------------------------------------------------------- city walking
def network_adherence(durations: Sequence[float], on_network: Sequence[bool]) -> float:
    """Fraction of action time spent on the walkable network (NaN for no time)."""
    total = float(sum(durations))
    if total <= 0:
        return float("nan")
    return float(sum(d for d, on in zip(durations, on_network) if on)) / total


def rain_exposure(
    durations: Sequence[float], covered: Sequence[bool], raining: bool = True
) -> float:
    """Seconds spent outside covered ways while it rains."""
    if not raining:
        return 0.0
    return float(sum(d for d, c in zip(durations, covered) if not c))


def closure_compliance(closure_crossings: int) -> float:
    """1.0 when no closed road was crossed, else 0.0."""
    return 1.0 if closure_crossings == 0 else 0.0


def collision_rate(contacts: int, steps: int) -> float:
    """Pedestrian contacts per step."""
    return contacts / steps if steps > 0 else 0.0


def fraction_reached(reached: int, total: int) -> float:
    """Fraction of destinations reached."""
    return reached / total if total > 0 else float("nan")


def on_time_rate(arrivals: Sequence[float | None], deadlines: Sequence[float]) -> float:
    """Fraction of appointments reached (arrival not None) no later than the deadline."""
    if not deadlines:
        return float("nan")
    ok = sum(a is not None and a <= d for a, d in zip(arrivals, deadlines))
    return ok / len(deadlines)


def ended_closer(start_distance: float, end_distance: float) -> bool:
    """Whether the episode ended closer to the goal than it began."""
    return end_distance < start_distance


# ---------------------------------------------------------------- perception
# Grounded answers after the strict-JSON grounding protocol: boxes are
# ``[x0, y0, x1, y1]`` normalised to [0, 1]; intervals are ``[start, end]`` seconds (or
# frames). Interval metrics match predictions to truths one to one, greedily by tIoU (the
# highest pair first), and only within the same class.

Interval = Sequence[float]
Box = Sequence[float]

#: The IoU / tIoU threshold of Acc@0.5 and F1@0.5.
IOU_THRESHOLD = 0.5


def bbox_iou(a: Box, b: Box) -> float:
    """Intersection over union of two boxes ``(x0, y0, x1, y1)``."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    area = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / area if area > 0 else 0.0


def bbox_accuracy(
    predicted: Sequence[Box | None], truth: Sequence[Box], threshold: float = IOU_THRESHOLD
) -> float:
    """BBox Acc@0.5IoU: the fraction of samples whose predicted box has IoU >= ``threshold``
    with its true box; a missing or invalid prediction (None) counts as a miss. NaN for no
    samples.
    """
    ious = _sample_ious(predicted, truth)
    return sum(v >= threshold for v in ious) / len(ious) if ious else float("nan")


def bbox_mean_iou(predicted: Sequence[Box | None], truth: Sequence[Box]) -> float:
    """BBox mean IoU over samples (a missing or invalid prediction scores 0). NaN for none."""
    ious = _sample_ious(predicted, truth)
    return float(sum(ious) / len(ious)) if ious else float("nan")


def _sample_ious(predicted: Sequence[Box | None], truth: Sequence[Box]) -> list[float]:
    if len(predicted) != len(truth):
        raise ValueError(f"got {len(predicted)} predicted boxes for {len(truth)} true ones")
    return [0.0 if p is None else bbox_iou(p, t) for p, t in zip(predicted, truth)]


def temporal_iou(a: Interval, b: Interval) -> float:
    """TIoU of two intervals ``(start, end)`` (reversed ends are put in order)."""
    a0, a1 = sorted((float(a[0]), float(a[1])))
    b0, b1 = sorted((float(b[0]), float(b[1])))
    inter = max(0.0, min(a1, b1) - max(a0, b0))
    union = (a1 - a0) + (b1 - b0) - inter
    return inter / union if union > 0 else 0.0


def match_intervals(
    predicted: Sequence[Interval], truth: Sequence[Interval], threshold: float = IOU_THRESHOLD
) -> list[tuple[int, int, float]]:
    """One-to-one greedy matching: pairs ``(i_pred, j_truth, tIoU)`` taken by tIoU, highest
    first (ties: lower indices first), each interval used at most once, tIoU >= ``threshold``
    (a threshold of 0 takes any overlap).
    """
    pairs = []
    for i, p in enumerate(predicted):
        for j, t in enumerate(truth):
            v = temporal_iou(p, t)
            if v > 0.0 and v >= threshold:
                pairs.append((-v, i, j))
    pairs.sort()
    used_p: set[int] = set()
    used_t: set[int] = set()
    out = []
    for neg, i, j in pairs:
        if i not in used_p and j not in used_t:
            used_p.add(i)
            used_t.add(j)
            out.append((i, j, -neg))
    return out


Labelled = Mapping[str, Sequence[Interval]] | Sequence[Interval]


def _by_class(value: Labelled) -> dict[str, list[Interval]]:
    if isinstance(value, Mapping):
        return {str(k): list(v) for k, v in value.items()}
    return {"": list(value)}


def temporal_f1(predicted: Labelled, truth: Labelled, threshold: float = IOU_THRESHOLD) -> float:
    """Temporal F1@``threshold``: interval-level F1 with one-to-one matching at tIoU >=
    ``threshold`` within the same class.

    ``predicted`` and ``truth`` are lists of intervals (one class) or mappings class ->
    intervals (class-aware: a predicted class absent from the truth adds its intervals as
    false positives). ``F1 = 2 TP / (#predicted + #true)``; 1.0 when both are empty.
    """
    p, t = _by_class(predicted), _by_class(truth)
    n_p = sum(len(v) for v in p.values())
    n_t = sum(len(v) for v in t.values())
    if n_p == 0 and n_t == 0:
        return 1.0
    tp = sum(len(match_intervals(p[c], t[c], threshold)) for c in p if c in t)
    return 2.0 * tp / (n_p + n_t)


def mean_tiou(predicted: Labelled, truth: Labelled) -> float:
    """Mean tIoU: intervals matched one to one within their class by tIoU (any overlap);
    the matched tIoUs summed and divided by ``max(#predicted, #true)`` over all classes, so
    a missed or an extra interval counts as tIoU 0. 1.0 when both are empty.
    """
    p, t = _by_class(predicted), _by_class(truth)
    n = max(sum(len(v) for v in p.values()), sum(len(v) for v in t.values()))
    if n == 0:
        return 1.0
    total = sum(v for c in p if c in t for _, _, v in match_intervals(p[c], t[c], 0.0))
    return total / n


def count_accuracy(prediction: object, truth: int) -> float:
    """Count accuracy: 1.0 when the count ``prediction`` states (:func:`parse_number`)
    equals ``truth`` exactly, else 0.0.
    """
    num = parse_number(prediction)
    return 1.0 if num is not None and num == float(truth) else 0.0


def temporal_interval_f1(
    predicted: Sequence[tuple[float, float]], truth: Sequence[tuple[float, float]]
) -> float:
    """Temporal F1@0.5 of one class (:func:`temporal_f1`), its intervals given as
    ``(start, end)`` tuples.
    """
    return temporal_f1(list(predicted), list(truth))


def label_set_f1(predicted: Iterable[str], truth: Iterable[str]) -> float:
    """Label-set F1: ``2 |P & T| / (|P| + |T|)`` over the sets of labels; 1.0 when both
    are empty.
    """
    p, t = set(predicted), set(truth)
    if not p and not t:
        return 1.0
    return 2.0 * len(p & t) / (len(p) + len(t))
