"""Why a long-range navigation episode failed: UrbanGround's LongNav failure taxonomy
(Section 4.3) as written rules over the distance to the goal along the episode.

UrbanGround names four kinds of failure -- premature stopping, absent progress, lost
progress, and retained but incomplete progress -- and defines them in appendices this
project does not have. **The rules below are our definitions**, applied to failed episodes
of long-range goal navigation (``LGN``) and navigation among pedestrians (``NP``, LGN's
routes with pedestrians). They read the walking distance to the goal (metres) after reset
and after every step (the trace's ``distance_to_goal_m``; non-finite values left out):
``d0`` at the start, ``d_best`` the smallest, ``d_end`` the last. With

* ``R`` the task's success radius (``goal_radius_m``, 15 m by default),
* ``G = max(R, 10% of d0)`` the least gain that counts as *meaningful progress*
  (:data:`PROGRESS_FRACTION`),
* ``best = d0 - d_best`` the best progress, ``kept = d0 - d_end`` the progress at the end,

each failed episode gets one label, the first rule that holds:

1. ``premature_stop`` -- the agent ended the episode itself (``terminated_by_agent``) with
   steps left (fewer steps than the step limit), away from the goal (the episode failed);
2. ``absent_progress`` -- it never got meaningfully closer: ``best < G``;
3. ``lost_progress`` -- it got meaningfully closer but gave it back: ``kept < G`` or
   ``kept < 50% of best`` (:data:`RETAIN_FRACTION`);
4. ``retained_incomplete`` -- it ended meaningfully closer, keeping at least half its best
   progress (``kept >= G`` and ``kept >= 50% of best``), outside the radius.

An episode without a finite start distance is ``unclassified``. Whatever the label, the
episode's progress class (rules 2-4 alone) is kept too, so a premature stop can be told
apart by the progress it had made.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

#: The labels, in the order the rules try them (then ``unclassified``).
LABELS: tuple[str, ...] = (
    "premature_stop",
    "absent_progress",
    "lost_progress",
    "retained_incomplete",
)
UNCLASSIFIED = "unclassified"
#: Types whose failed episodes the taxonomy labels.
TAXONOMY_TYPES: tuple[str, ...] = ("LGN", "NP")
#: Meaningful progress: at least this fraction of the start distance (and at least R).
PROGRESS_FRACTION = 0.10
#: Progress is retained when at least this fraction of the best progress is kept.
RETAIN_FRACTION = 0.5
DEFAULT_RADIUS_M = 15.0
#: The rules as the report prints them.
RULES_TEXT: tuple[tuple[str, str], ...] = (
    (
        "premature_stop",
        "the agent chose terminate with steps left while outside the success radius",
    ),
    ("absent_progress", "never got meaningfully closer: best < G"),
    (
        "lost_progress",
        f"got meaningfully closer, then gave it back: kept < G or "
        f"kept < {100 * RETAIN_FRACTION:.0f}% of best",
    ),
    (
        "retained_incomplete",
        f"ended meaningfully closer (kept >= G and >= {100 * RETAIN_FRACTION:.0f}% of best), "
        "outside the radius",
    ),
)


def progress_class(distances: Sequence[float], radius_m: float = DEFAULT_RADIUS_M) -> str:
    """The progress class of a failed episode's distances to the goal (metres, from the
    start): ``absent_progress``, ``lost_progress`` or ``retained_incomplete`` (rules 2-4
    of the module docstring), ``unclassified`` without a finite start distance.
    """
    d = [float(x) for x in distances if x is not None and math.isfinite(float(x))]
    if not d or distances[0] is None or not math.isfinite(float(distances[0])):
        return UNCLASSIFIED
    d0 = d[0]
    gain = max(radius_m, PROGRESS_FRACTION * d0)
    best = d0 - min(d)
    kept = d0 - d[-1]
    if best < gain:
        return "absent_progress"
    if kept < gain or kept < RETAIN_FRACTION * best:
        return "lost_progress"
    return "retained_incomplete"


def longnav_failure(
    distances: Sequence[float],
    termination: str | None,
    steps: int,
    max_steps: int | None = None,
    radius_m: float = DEFAULT_RADIUS_M,
) -> dict[str, Any]:
    """The taxonomy label of a failed episode (module docstring): ``{"label", "progress",
    "start_m", "best_m", "end_m", "threshold_m"}``. ``distances``: metres to the goal after
    reset and after each step; ``steps``: the episode's steps; ``max_steps``: its step limit
    (None: unknown, any terminate counts as having steps left).
    """
    finite = [float(x) for x in distances if x is not None and math.isfinite(float(x))]
    progress = progress_class(distances, radius_m)
    stopped = termination == "terminated_by_agent" and (max_steps is None or steps < max_steps)
    label = "premature_stop" if stopped and progress != UNCLASSIFIED else progress
    d0 = finite[0] if progress != UNCLASSIFIED else None
    return {
        "label": label,
        "progress": progress,
        "start_m": None if d0 is None else round(d0, 3),
        "best_m": round(min(finite), 3) if finite and d0 is not None else None,
        "end_m": round(finite[-1], 3) if finite and d0 is not None else None,
        "threshold_m": None if d0 is None else round(max(radius_m, PROGRESS_FRACTION * d0), 3),
    }


def record_failure(
    record: Mapping[str, Any], steps: Sequence[Mapping[str, Any]], max_steps: int | None
) -> dict[str, Any]:
    """:func:`longnav_failure` of an episode record and its trace's steps (the start
    distance falls back to the record's ``start``, the end to its ``end`` when the trace
    has no distances).
    """
    d = [s.get("distance_to_goal_m") for s in steps]
    if not any(isinstance(x, (int, float)) and math.isfinite(x) for x in d):
        d = [(record.get("start") or {}).get("distance_to_goal_m")]
        d.append((record.get("end") or {}).get("distance_to_goal_m"))
    radius = (record.get("task_info") or {}).get("goal_radius_m") or DEFAULT_RADIUS_M
    return longnav_failure(
        [math.nan if x is None else float(x) for x in d],
        record.get("termination"),
        int(record.get("steps") or 0),
        max_steps,
        float(radius),
    )


__all__ = [
    "LABELS",
    "PROGRESS_FRACTION",
    "RETAIN_FRACTION",
    "RULES_TEXT",
    "TAXONOMY_TYPES",
    "UNCLASSIFIED",
    "longnav_failure",
    "progress_class",
    "record_failure",
]
