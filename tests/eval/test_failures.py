"""Each failure-cause rule on a constructed trace (distances in metres, r = goal radius)."""

from __future__ import annotations

import pytest

from urban_gym.eval.failures import RULES, classify, rule_hits, rules_markdown


def trace(ds, xs=None, seen=(), invalid=()):
    """Steps with distances ``ds``, x positions ``xs`` (default: moving 10 m a step)."""
    xs = xs if xs is not None else [10.0 * t for t in range(len(ds))]
    out = []
    for t, (d, x) in enumerate(zip(ds, xs)):
        s = {
            "t": t,
            "pose": {"x": x, "y": 0.0, "heading": 0.0},
            "distance_to_goal_m": d,
            "goal_visible": t in seen,
        }
        if t:
            s.update(action=0, valid=t not in invalid)
        out.append(s)
    return out


def record(term="step_limit", task_type="landmark_name", r=10.0, **kw):
    return {
        "is_success": False,
        "termination": term,
        "task_type": task_type,
        "metrics": kw.pop("metrics", {}),
        "task_info": {"goal_radius_m": r},
        **kw,
    }


CASES = [
    # (rule, cause, record, trace)
    ("invalid_actions", "Action", record(), trace([50] * 11, xs=[0] * 11, invalid={2, 4, 6})),
    ("overshoot", "Action", record(), trace([30, 20, 8, 15, 25])),
    ("no_stop_at_goal", "Action", record(), trace([30, 20, 5])),
    ("premature_answer", "Action", record("answered"), trace([100, 90, 80])),
    (
        "premature_answer",
        "Action",
        record("answered", "relational", None),
        trace([None, None], xs=[0, 0]),
    ),
    ("constraint_violated", "Planning", record("constraint_violated"), trace([50, 40, 30])),
    (
        "constraint_violated",
        "Planning",
        record(metrics={"closure_compliance": 0.5}),
        trace([50, 40, 30]),
    ),
    (
        "instruction_route_left",
        "Planning",
        record(task_type="vln", metrics={"ndtw": 0.3}),
        trace([50, 40, 30]),
    ),
    ("goal_seen_not_reached", "Perception", record(), trace([50, 40, 30, 20], seen={2})),
    (
        "goal_seen_not_reached",
        "Perception",
        record("answered", "relational", None),
        trace([None] * 5, xs=[0, 3, 6, 9, 12], seen={3}),
    ),
    (
        "wrong_self_localization",
        "Grounding",
        record("answered", "localization", None),
        trace([None] * 6),
    ),
    ("moving_away", "Grounding", record(), trace([20, 30, 40, 50, 60, 50])),
    ("moving_away", "Grounding", record("away_from_goal"), trace([20, 30])),
    ("false_arrival", "Grounding", record("answered"), trace([100, 60, 30])),
    ("stagnation", "Explore", record("stagnation"), trace([50] * 21, xs=[0] * 21)),
    ("loops", "Explore", record(), trace([50] * 6, xs=[0, 10, 0, 10, 0, 10])),
    ("low_coverage", "Explore", record(), trace([50] * 12, xs=[0] * 11 + [10])),
    ("budget_exhausted", "Explore", record(), trace([90, 80, 70, 60])),
]


@pytest.mark.parametrize("rule, cause, rec, steps", CASES, ids=[c[0] for c in CASES])
def test_each_rule_on_a_constructed_trace(rule, cause, rec, steps):
    hits = rule_hits(rec, steps)
    assert rule in hits, hits
    c = classify(rec, steps)
    assert c["dominant"] == cause and cause in c["causes"], c


def test_rules_do_not_fire_without_their_evidence():
    # walking straight to 15 m (r = 10) and running out of steps: only the budget rule
    assert set(rule_hits(record(), trace([60, 45, 30, 15]))) == {"budget_exhausted"}
    # 2 invalid of 10 steps: below 25%
    assert "invalid_actions" not in rule_hits(record(), trace([50] * 11, invalid={1, 2}))
    # 2 of 5 moves away from the goal: below 60%
    assert "moving_away" not in rule_hits(record(), trace([50, 60, 50, 60, 50, 40]))


def test_the_dominant_cause_follows_the_order():
    # overshoot (Action) and goal seen (Perception) and the budget (Explore): Action wins
    c = classify(record(), trace([30, 5, 30], seen={1}))
    assert c["causes"] == ["Action", "Perception", "Explore"] and c["dominant"] == "Action"


def test_successes_errors_and_unexplained_failures():
    assert classify({"is_success": True}, [])["dominant"] is None
    err = record("model_error", error="server down")
    assert classify(err, trace([50]))["dominant"] == "Error"
    # a question answered wrongly after some looking around, the target never in view
    q = record("answered", "object_count", None)
    assert classify(q, trace([None] * 6, xs=[0, 3, 6, 9, 12, 15]))["dominant"] == "Unclassified"


def test_every_rule_is_written_down():
    text = rules_markdown()
    for r in RULES:
        assert f"`{r.id}`" in text and r.text in text
