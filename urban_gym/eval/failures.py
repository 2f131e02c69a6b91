"""Why an episode failed: the five causes of the 360CityArena failure analysis, as rules
computed from the episode's trace.

360CityArena labels each failed episode with its single dominant cause: **Action**
(low-level action errors: overshoot, wrong action, premature answer), **Grounding**
(self-localization or orientation inconsistent with the true pose), **Perception** (the
target was not recognised), **Explore** (stagnation or loops) and **Planning** (missed
instructions or requirements). The paper asks a model and a person; here each cause is a
written rule over the trace (:data:`RULES`), so the breakdown is reproducible, and a
model's labels can be compared with the rules (``urban-gym report --labeler lmm``, Cohen's
kappa).

Every rule that holds is reported; the **dominant** cause is the first of :data:`ORDER`
that holds (the most proximate one: an unreadable reply explains a failure before a missed
turn does). A failure no rule explains is ``Unclassified``; an episode that ended because
the agent or the env raised, or the model client gave up, is ``Error`` (an infrastructure
failure, not a behaviour). Successful episodes get no cause.

Distances are metres; ``r`` is the task's goal radius (0 when it has none: a goal that
is a set of graph nodes is reached at distance 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CAUSES: tuple[str, ...] = ("Action", "Grounding", "Perception", "Explore", "Planning")
#: Precedence of the dominant cause.
ORDER: tuple[str, ...] = ("Action", "Planning", "Perception", "Grounding", "Explore")
OTHER = "Unclassified"
ERROR = "Error"
ERROR_TERMINATIONS = frozenset(
    {"model_error", "agent_error", "env_error", "interrupted", "abandoned", "episode_deadline"}
)
AGENT_ENDED = frozenset({"answered", "arrived", "terminated_by_agent"})
BUDGET_ENDED = frozenset({"step_limit", "decision_limit", "transition_limit", "time_limit"})
INSTRUCTION_TYPES = frozenset({"vln", "IN", "instruction"})

#: Thresholds of the rules (see :data:`RULES`).
INVALID_SHARE = 0.25
INVALID_MIN = 3
PREMATURE_SHARE = 0.5
QUESTION_PREMATURE_STEPS = 2
AWAY_SHARE = 0.6
AWAY_MIN_MOVES = 3
CELL_M = 5.0
LOOP_SHARE = 0.3
LOOP_MIN_MOVES = 4
STILL_SHARE = 0.2
STILL_MIN_STEPS = 10
NDTW_MIN = 0.5
ADHERENCE_MIN = 0.5


@dataclass(frozen=True)
class Rule:
    """One rule: its cause, a short id and the rule in words (as the report prints it)."""

    cause: str
    id: str
    text: str


RULES: tuple[Rule, ...] = (
    Rule(
        "Action",
        "invalid_actions",
        f"at least {INVALID_MIN} steps and at least {INVALID_SHARE:.0%} of all steps were "
        "invalid or unreadable actions",
    ),
    Rule(
        "Action",
        "overshoot",
        "the agent came within the goal radius r at some step but ended outside it",
    ),
    Rule(
        "Action",
        "no_stop_at_goal",
        "the episode ended within r of the goal without the agent ending it (no ANSWER/stop "
        "at the goal: a wrong action)",
    ),
    Rule(
        "Action",
        "premature_answer",
        "the agent ended the episode itself with more than "
        f"{PREMATURE_SHARE:.0%} of the start distance still to go (goal tasks), or answered "
        f"a question wrongly within its first {QUESTION_PREMATURE_STEPS} steps",
    ),
    Rule(
        "Planning",
        "constraint_violated",
        "the episode ended as constraint_violated, or the metrics show a broken requirement: "
        "closure_compliance < 1, a pedestrian collision, pedestrian-network adherence < "
        f"{ADHERENCE_MIN}, or not every stop / deadline of a multi-stop task met",
    ),
    Rule(
        "Planning",
        "instruction_route_left",
        f"an instruction-following task (vln, IN, instruction) with nDTW < {NDTW_MIN}: the "
        "agent left the described route",
    ),
    Rule(
        "Perception",
        "goal_seen_not_reached",
        "the goal object was in view (info goal_visible, from the renderer's instance ids) "
        "at some step, yet the goal was not reached or the object not named",
    ),
    Rule(
        "Grounding",
        "wrong_self_localization",
        "a localization task answered with the wrong cell (the agent's own position)",
    ),
    Rule(
        "Grounding",
        "moving_away",
        f"at least {AWAY_MIN_MOVES} moves and at least {AWAY_SHARE:.0%} of them increased "
        "the distance to the goal, or the episode ended as away_from_goal: the agent's "
        "orientation did not match its true pose",
    ),
    Rule(
        "Grounding",
        "false_arrival",
        "the agent ended a goal task (ANSWER/stop) outside r although it had gone more than "
        "half of the way: it believed it was where it was not",
    ),
    Rule(
        "Explore",
        "stagnation",
        "the episode ended as stagnation (the same action again and again without moving)",
    ),
    Rule(
        "Explore",
        "loops",
        f"at least {LOOP_MIN_MOVES} moves and at least {LOOP_SHARE:.0%} of them returned to "
        f"a {CELL_M:g} m cell visited before (not the one just left)",
    ),
    Rule(
        "Explore",
        "low_coverage",
        f"at least {STILL_MIN_STEPS} steps of which at most {STILL_SHARE:.0%} changed the "
        "position (looking around in place)",
    ),
    Rule(
        "Explore",
        "budget_exhausted",
        "the step, decision or time budget ran out before the goal was reached",
    ),
)
RULES_BY_ID: dict[str, Rule] = {r.id: r for r in RULES}


@dataclass
class TraceFeatures:
    """What the rules read from a trace (distances in metres)."""

    steps: int
    invalid: int
    d_start: float | None
    d_min: float | None
    d_end: float | None
    seen_steps: int
    moves: int
    away_moves: int
    revisits: int


def trace_features(steps: Sequence[Mapping[str, Any]]) -> TraceFeatures:
    """The :class:`TraceFeatures` of a trace (step 0 = the reset)."""
    n = max(0, len(steps) - 1)
    invalid = sum(1 for s in steps[1:] if not s.get("valid", True))
    ds = [s.get("distance_to_goal_m") for s in steps]
    known = [d for d in ds if isinstance(d, (int, float))]
    seen = sum(1 for s in steps if s.get("goal_visible"))
    moves = away = revisits = 0
    cells: set[tuple[int, int]] = set()
    prev_xy = prev_cell = None
    prev_d = None
    for s in steps:
        p: Any = s.get("pose") or {}  # a record's pose dict
        xy = (p.get("x"), p.get("y"))
        d = s.get("distance_to_goal_m")
        if None in xy:
            continue
        cell = (math.floor(xy[0] / CELL_M), math.floor(xy[1] / CELL_M))
        if prev_xy is not None and math.dist(xy, prev_xy) > 1e-6:
            moves += 1
            if isinstance(d, (int, float)) and isinstance(prev_d, (int, float)) and d > prev_d:
                away += 1
            if cell in cells and cell != prev_cell:
                revisits += 1
        cells.add(cell)
        prev_xy, prev_cell, prev_d = xy, cell, d
    return TraceFeatures(
        steps=n,
        invalid=invalid,
        d_start=ds[0] if steps and isinstance(ds[0], (int, float)) else None,
        d_min=min(known) if known else None,
        d_end=ds[-1] if steps and isinstance(ds[-1], (int, float)) else None,
        seen_steps=seen,
        moves=moves,
        away_moves=away,
        revisits=revisits,
    )


def _metric(m: Mapping[str, Any], k: str) -> float | None:
    v = m.get(k)
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _action_hits(
    f: TraceFeatures, term: Any, r: float, goal: bool, ended: bool, hits: dict[str, str]
) -> None:
    """Add the Action rules that hold (invalid actions, overshoot, premature answers)."""
    eps = 1e-6
    if f.invalid >= INVALID_MIN and f.invalid >= INVALID_SHARE * max(1, f.steps):
        hits["invalid_actions"] = f"{f.invalid} of {f.steps} steps invalid"
    if goal and f.d_min is not None and f.d_end is not None:
        assert f.d_start is not None  # goal: a start distance is known
        if f.d_min <= r + eps < f.d_end:
            hits["overshoot"] = f"came within {f.d_min:.1f} m (r = {r:g} m), ended {f.d_end:.1f} m"
        if f.d_end <= r + eps and not ended:
            hits["no_stop_at_goal"] = f"ended {f.d_end:.1f} m from the goal as {term}"
        if ended and f.d_end > r + eps and f.d_end > PREMATURE_SHARE * f.d_start:
            hits["premature_answer"] = (
                f"ended by the agent {f.d_end:.1f} m from the goal (start {f.d_start:.1f} m)"
            )
        elif ended and f.d_end > r + eps:
            hits["false_arrival"] = f"claimed arrival {f.d_end:.1f} m from the goal"
    if not goal and ended and f.steps <= QUESTION_PREMATURE_STEPS:
        hits["premature_answer"] = f"answered after {f.steps} step(s)"


def _planning_hits(record: Mapping[str, Any], term: Any, hits: dict[str, str]) -> None:
    """Add the Planning rules that hold (constraints broken, instruction route left)."""
    m = record.get("metrics") or {}
    broken = []
    if term == "constraint_violated":
        broken.append("constraint_violated")
    for k, bad in (
        ("closure_compliance", lambda v: v < 1.0),
        ("collision_rate", lambda v: v > 0.0),
        ("network_adherence", lambda v: v < ADHERENCE_MIN),
        ("fraction_reached", lambda v: v < 1.0),
        ("on_time_rate", lambda v: v < 1.0),
    ):
        v = _metric(m, k)
        if v is not None and bad(v):
            broken.append(f"{k} = {v:.2f}")
    if broken:
        hits["constraint_violated"] = ", ".join(broken)
    ndtw = _metric(m, "ndtw")
    if record.get("task_type") in INSTRUCTION_TYPES and ndtw is not None and ndtw < NDTW_MIN:
        hits["instruction_route_left"] = f"nDTW {ndtw:.2f}"


def _explore_hits(f: TraceFeatures, term: Any, goal: bool, hits: dict[str, str]) -> None:
    """Add the Explore rules that hold (moving away, stagnation, loops, low coverage)."""
    if goal and (
        term == "away_from_goal"
        or (f.moves >= AWAY_MIN_MOVES and f.away_moves >= AWAY_SHARE * f.moves)
    ):
        hits["moving_away"] = f"{f.away_moves} of {f.moves} moves away from the goal ({term})"
    if term == "stagnation":
        hits["stagnation"] = "ended as stagnation"
    if f.moves >= LOOP_MIN_MOVES and f.revisits >= LOOP_SHARE * f.moves:
        hits["loops"] = f"{f.revisits} of {f.moves} moves back into visited cells"
    if f.steps >= STILL_MIN_STEPS and f.moves <= STILL_SHARE * f.steps:
        hits["low_coverage"] = f"moved on {f.moves} of {f.steps} steps"


def rule_hits(record: Mapping[str, Any], steps: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Rule id -> evidence (a short sentence with the numbers) of every rule that holds
    for a *failed* episode.

    Args:
        record: the episode's record (``episodes.jsonl`` line).
        steps: its per-step trace.

    Returns:
        The rules that hold, in the order of :data:`RULES` within each cause.
    """
    f = trace_features(steps)
    term = record.get("termination")
    info = record.get("task_info") or {}
    r = info.get("goal_radius_m") or 0.0
    goal = f.d_start is not None
    ended = term in AGENT_ENDED
    hits: dict[str, str] = {}
    _action_hits(f, term, r, goal, ended, hits)
    _planning_hits(record, term, hits)
    if f.seen_steps:
        hits["goal_seen_not_reached"] = f"goal in view on {f.seen_steps} step(s)"
    if record.get("task_type") == "localization" and ended:
        hits["wrong_self_localization"] = f"answered {record.get('answer')!r}"
    _explore_hits(f, term, goal, hits)
    if term in BUDGET_ENDED:
        hits["budget_exhausted"] = f"ended as {term} after {f.steps} steps"
    return hits


def classify(record: Mapping[str, Any], steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"dominant": cause, "causes": [causes that hold], "rules": {rule id: evidence}}``
    of an episode; ``dominant`` None for a success, ``Error`` for an infrastructure
    failure, ``Unclassified`` when no rule holds.
    """
    if record.get("is_success"):
        return {"dominant": None, "causes": [], "rules": {}}
    if record.get("termination") in ERROR_TERMINATIONS:
        return {
            "dominant": ERROR,
            "causes": [ERROR],
            "rules": {"error": str(record.get("error", record.get("termination")))[:200]},
        }
    hits = rule_hits(record, steps)
    causes = [c for c in ORDER if any(RULES_BY_ID[h].cause == c for h in hits)]
    return {"dominant": causes[0] if causes else OTHER, "causes": causes, "rules": hits}


def rules_markdown() -> str:
    """The rules as a Markdown list (for the report)."""
    lines = [
        "Each failed episode is checked against these rules (computed from its trace; r = "
        "goal radius, distances along the ways). Its dominant cause is the first cause in "
        f"the order {' > '.join(ORDER)} with a rule that holds; {OTHER} when none holds; "
        f"{ERROR} when the agent, the env or the model client failed.",
        "",
    ]
    for r in RULES:
        lines.append(f"- **{r.cause}** `{r.id}`: {r.text}.")
    return "\n".join(lines)


__all__ = [
    "CAUSES",
    "ERROR",
    "ORDER",
    "OTHER",
    "RULES",
    "Rule",
    "TraceFeatures",
    "classify",
    "rule_hits",
    "rules_markdown",
    "trace_features",
]
