"""The shipped PoseGraph360 suite against 360CityArena's task statistics (Watanabe et al.,
section 3.3 and appendices A.3, B.1, B.3).

The paper's numbers are written out here, not imported, so that a change to the family's
constants cannot move the target: map navigation routes average 124 / 247 / 347 m with
3.3 / 6.4 / 9.0 decision points (easy / medium / hard); object counts 3.5 / 4.6 / 9.0; VLN
directions 4.4 / 5.9 / 7.4 steps; 50 steps per episode; rotations of 30 / 60 / 90
degrees by size; the Object Count prompt's examples are vending machines and planted
trees counted up to the next crosswalk or around a block. A suite's average is calibrated
when it lies within 15% of the paper's; every task's oracle must need at most 60% of the
step limit (30 of 50 steps) so that an agent has room to look around.

Route lengths and decision points are recomputed from the pose graph, not read from the
tasks; the oracle is run through the environment on every task (with the symbolic
observation, which steps the same dynamics without drawing pixels, well under a second).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from urban_gym.families.posegraph360 import tasks as T
from urban_gym.families.posegraph360.env import PoseGraph360Env
from urban_gym.families.posegraph360.oracle import PoseGraphOracle
from urban_gym.families.posegraph360.tasks.routes import _frame_distances
from urban_gym.families.posegraph360.world import State, load_posegraph
from urban_gym.render import perspective
from urban_gym.tasks.suite import load_suite

#: 360CityArena section 3.3 (easy, medium, hard).
ROUTE_M = {"easy": 124.0, "medium": 247.0, "hard": 347.0}
DECISIONS = {"easy": 3.3, "medium": 6.4, "hard": 9.0}
COUNTS = {"easy": 3.5, "medium": 4.6, "hard": 9.0}
VLN_STEPS = {"easy": 4.4, "medium": 5.9, "hard": 7.4}
#: appendix A.3: the step limit; 60% of it is the oracle's budget
STEP_LIMIT = 50
ORACLE_BUDGET = 30


@pytest.fixture(scope="module")
def suite():
    return load_suite(T.suite_path("helsinki"))


@pytest.fixture(scope="module")
def graph():
    return load_posegraph("helsinki")


@pytest.fixture(scope="module")
def routes(suite, graph):
    """Map-navigation tasks by difficulty: (route length m, decision points) from the graph."""
    out: dict[str, list[tuple[float, int]]] = {d: [] for d in ROUTE_M}
    for t in suite:
        if t.type == "map_navigation":
            info = T.route_info(graph, T.start_state(graph, t), T.goal_states(graph, t))
            out[t.difficulty].append((info.length, info.decisions))
    return out


def test_the_suite_is_the_papers_shape(suite):
    # section 3.2: seven task types of 25 tasks, each easy / medium / hard
    by_type = Counter(t.type for t in suite)
    assert by_type == dict.fromkeys(T.PAPER_TASK_TYPES, 25)
    for tt in T.PAPER_TASK_TYPES:
        assert {t.difficulty for t in suite if t.type == tt} == {"easy", "medium", "hard"}


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_map_navigation_route_length_is_the_papers(routes, difficulty):
    mean = np.mean([length for length, _ in routes[difficulty]])
    assert abs(mean / ROUTE_M[difficulty] - 1.0) <= 0.15, (difficulty, mean)


@pytest.mark.parametrize(
    "difficulty",
    [
        "easy",
        "medium",
        pytest.param(
            "hard",
            marks=pytest.mark.xfail(
                strict=True,
                reason="Helsinki's street junctions are 107 m apart on average, Akihabara's "
                "routes pass one every 38.6 m (347 m / 9.0): no 295-399 m route through "
                "Helsinki has 9 decision points, the suite averages about 7 (see "
                "test_the_hard_gap_is_the_citys)",
            ),
        ),
    ],
)
def test_map_navigation_decision_points_are_the_papers(routes, difficulty):
    mean = np.mean([dec for _, dec in routes[difficulty]])
    assert abs(mean / DECISIONS[difficulty] - 1.0) <= 0.15, (difficulty, mean)


def test_the_hard_gap_is_the_citys(graph, routes):
    """The hard tasks fall short of 9 decision points because the city has none such: its
    junctions lie more than twice as far apart as the paper's routes imply, and the suite
    keeps routes from the top of what the city offers -- above the 90th percentile of
    routes of the same length drawn at random.
    """
    metres_per_decision = ROUTE_M["hard"] / DECISIONS["hard"]  # 38.6 m
    assert graph.statistics()["mean_segment_m"] > 2 * metres_per_decision
    rng = np.random.default_rng(0)
    drawn: list[int] = []
    while len(drawn) < 300:
        c = int(rng.integers(graph.n_frames))
        goal = State(int(graph.frame_traj[c]), int(graph.frame_index[c]))
        goals = graph.goal_states(*graph.position(goal))
        dist = _frame_distances(graph, graph.distance_field(goals))
        cand = np.flatnonzero((dist >= 0.85 * 347.0) & (dist < 1.15 * 347.0))
        if len(cand):
            k = int(rng.choice(cand))
            start = State(int(graph.frame_traj[k]), int(graph.frame_index[k]))
            drawn.append(T.route_info(graph, start, goals).decisions)
    assert max(drawn) < 9
    ours = np.mean([dec for _, dec in routes["hard"]])
    assert ours > np.percentile(drawn, 90), (ours, np.percentile(drawn, 90))


def test_every_statistic_rises_from_easy_to_hard(suite, routes):
    def means(tt: str, key: str) -> list[float]:
        return [
            float(np.mean([t.meta[key] for t in suite if t.type == tt and t.difficulty == d]))
            for d in ("easy", "medium", "hard")
        ]

    for series in (
        [np.mean([v for v, _ in routes[d]]) for d in ("easy", "medium", "hard")],
        [np.mean([v for _, v in routes[d]]) for d in ("easy", "medium", "hard")],
        means("object_count", "count"),
        means("vln", "instruction_steps"),
    ):
        assert series[0] < series[1] < series[2], series


@pytest.mark.parametrize(
    ("task_type", "key", "paper"),
    [("object_count", "count", COUNTS), ("vln", "instruction_steps", VLN_STEPS)],
)
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_counts_and_directions_are_the_papers(suite, task_type, key, paper, difficulty):
    values = [t.meta[key] for t in suite if t.type == task_type and t.difficulty == difficulty]
    if key == "count":  # the count is the answer itself
        assert values == [
            int(t.answer) for t in suite if t.type == task_type and t.difficulty == difficulty
        ]
    if key == "instruction_steps":  # one numbered line per step
        assert values == [
            t.instruction.count("\n")
            for t in suite
            if t.type == task_type and t.difficulty == difficulty
        ]
    assert abs(np.mean(values) / paper[difficulty] - 1.0) <= 0.15


def oracle_episode(env, oracle, index):
    """The oracle's episode of task ``index``: ``(steps, last info)``."""
    env.reset(options={"task_index": index})
    oracle.reset(env)
    steps, done = 0, False
    while not done:
        _, _, term, trunc, info = env.step(oracle.act(env))
        steps, done = steps + 1, term or trunc
    return steps, info


def test_every_task_needs_at_most_60_percent_of_the_step_limit(suite):
    """The oracle, run through the environment on all 175 tasks, answers correctly within
    30 of the 50 steps, in exactly the steps the generator recorded for the task.
    """
    env = PoseGraph360Env(observation="symbolic")
    assert env.limits["step_limit"] == STEP_LIMIT
    assert [t.id for t in env.tasks] == [t.id for t in suite]
    oracle = PoseGraphOracle()
    used: dict[str, int] = {}
    for i, task in enumerate(env.tasks):
        steps, info = oracle_episode(env, oracle, i)
        assert info["termination"] == "answered" and info["is_success"], task.id
        assert steps == task.meta["oracle_steps"], (task.id, steps, task.meta["oracle_steps"])
        used[task.id] = steps
    assert max(used.values()) <= ORACLE_BUDGET
    # map navigation and VLN, the route-following types, use the room the budget leaves
    worst = max(v for k, v in used.items() if k.startswith(("map_navigation", "vln")))
    assert 20 <= worst <= ORACLE_BUDGET


def test_the_oracle_steps_are_the_same_with_pixels(suite):
    """A sample, one task per type, stepped with rendered views (small ones): the same
    step counts as the symbolic runs above.
    """
    env = PoseGraph360Env(view_size=16, pano_width=64)
    oracle = PoseGraphOracle()
    for tt in T.PAPER_TASK_TYPES:
        i = next(k for k, t in enumerate(env.tasks) if t.type == tt and t.difficulty == "hard")
        steps, info = oracle_episode(env, oracle, i)
        assert info["is_success"] and steps == env.task.meta["oracle_steps"] <= ORACLE_BUDGET


def test_object_count_asks_for_the_papers_example_kinds(suite):
    counts = [t for t in suite if t.type == "object_count"]
    kinds = Counter(t.goal["kind"] for t in counts)
    # appendix B.3's examples: vending machines and (planted) trees; the crosswalk that
    # ends the paper's example range is counted as a kind of its own too
    assert kinds["vending_machine"] >= 1 and kinds["tree"] >= 1 and kinds["crossing"] >= 1
    assert any("vending machines" in t.instruction for t in counts)
    # the kinds share the tasks: none takes a third of them (crosswalks took 15 of 25)
    assert max(kinds.values()) < len(counts) / 3, kinds
    # the paper's two example ranges: up to the next crosswalk, around the block to the left
    ranges = Counter(t.goal["range"] for t in counts)
    assert ranges["crosswalk"] >= 1 and ranges["block_left"] >= 1, ranges
    assert any("up to the next crosswalk" in t.instruction for t in counts)
    assert any("around the block to your left" in t.instruction for t in counts)


def test_vending_machines_only_where_the_city_has_that_many(suite):
    """Helsinki's vending machines (mostly parking-ticket machines, about one per block
    side) appear only among the easy counts: no range of the suite's kinds holds 5.
    """
    for t in suite:
        if t.type == "object_count" and t.goal["kind"] == "vending_machine":
            assert t.difficulty == "easy" and 3 <= int(t.answer) <= 4


def _tilt(env: PoseGraph360Env, action: str, size: str | None) -> float:
    _, _, _, _, info = env.step({"action": action, "size": size})
    assert info["action_valid"] is True
    return float(info["pitch"])


def test_a_large_tilt_looks_straight_up_or_down():
    """Appendix B.1: Q/E rotate by SMALL 30, MEDIUM 60, LARGE 90 degrees -- a LARGE tilt
    from level looks at the sky (the top row of the panorama), from there a LARGE E back
    to level, and another at the ground; the views are plain images, not NaN or noise.
    """
    env = PoseGraph360Env(view_size=32, pano_width=256)
    env.reset(options={"task_index": 0})
    assert _tilt(env, "Q", "LARGE") == 90.0
    assert _tilt(env, "E", "LARGE") == 0.0
    assert _tilt(env, "E", "LARGE") == -90.0
    assert _tilt(env, "Q", "MEDIUM") == -30.0 and _tilt(env, "Q", "SMALL") == 0.0
    pano, heading = env.graph.panorama(env.state)
    top = pano[:4].reshape(-1, 3).mean(axis=0)
    bottom = pano[-4:].reshape(-1, 3).mean(axis=0)
    for pitch, pole in ((90.0, top), (-90.0, bottom)):
        view = perspective(pano, 30.0, pitch, 90.0, 32, pano_heading=heading)
        centre = view[12:20, 12:20].reshape(-1, 3).astype(float).mean(axis=0)
        assert np.all(np.abs(centre - pole) < 12.0), (pitch, centre, pole)
        # the pole looks the same from any bearing: the view turns, it does not break up
        turned = perspective(pano, 210.0, pitch, 90.0, 32, pano_heading=heading)
        assert np.abs(turned[12:20, 12:20].astype(float).mean() - centre.mean()) < 12.0
        # and a hair below the limit draws nearly the same picture
        near = perspective(pano, 30.0, pitch * 0.999, 90.0, 32, pano_heading=heading)
        assert np.abs(near.astype(float) - view.astype(float)).mean() < 3.0
