"""PoseGraph360 task generators (ground truth from the city), difficulty bands, the
oracle plan, and the evaluator's metrics on worked examples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from shapely.geometry import LineString

from urban_gym.families.posegraph360 import tasks as T
from urban_gym.families.posegraph360.world import State, load_posegraph
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.suite import load_suite, save_suite
from urban_gym.world.grid import GridOverlay

TINY = "procedural:seed=3,blocks=2x2"


@pytest.fixture(scope="module")
def gen(tiny_city):
    return T.PoseGraphTaskGenerator(TINY, seed=0)


@pytest.fixture(scope="module")
def tiny_suite(gen):
    return gen.suite(per_type=3)


def test_suite_is_deterministic_and_round_trips(gen, tiny_suite, tmp_path):
    again = T.PoseGraphTaskGenerator(TINY, seed=0).suite(per_type=3)
    assert [t.to_json() for t in again] == [t.to_json() for t in tiny_suite]
    other = T.PoseGraphTaskGenerator(TINY, seed=1).suite(per_type=3)
    assert [t.to_json() for t in other] != [t.to_json() for t in tiny_suite]
    p = save_suite(tmp_path / "s.jsonl", tiny_suite)
    assert load_suite(p) == tiny_suite
    counts = {tt: sum(t.type == tt for t in tiny_suite) for tt in T.PAPER_TASK_TYPES}
    # the tiny city is too small for hard VLN routes (6+ instruction steps)
    # the 2x2-block city has no route with 5+ decision points (medium and hard map
    # navigation are graded by decision points) and no 7-step directions
    short = ("vln", "map_navigation")
    assert all(counts[tt] == 3 for tt in T.PAPER_TASK_TYPES if tt not in short)
    assert counts["vln"] >= 2 and counts["map_navigation"] >= 1
    for t in tiny_suite:
        T.check_task(t)
        assert t.family == "posegraph360" and t.meta["posegraph"] == {"spacing": 3.0}


def test_difficulty_bands_hold(tiny_suite):
    g = load_posegraph(TINY)
    for t in tiny_suite:
        b = T.THRESHOLDS
        if t.type in ("landmark_name", "landmark_image"):
            lo, hi = b["landmark"][t.difficulty]
            assert lo <= t.meta["route_length"] <= hi
        elif t.type == "map_navigation":
            # graded by route length: the paper's average +-15% (124 / 247 / 347 m)
            lo, hi = b["map_navigation"][t.difficulty]
            assert lo <= t.meta["route_length"] < hi
            assert t.goal["radius"] == 20.0
        elif t.type == "vln":
            lo, hi = b["vln"][t.difficulty]
            assert lo <= t.meta["instruction_steps"] < hi
            assert t.instruction.count("\n") == t.meta["instruction_steps"]
        elif t.type == "object_count":
            lo, hi = b["object_count"][t.difficulty]
            assert lo <= int(t.answer) < hi
        elif t.type == "relational":
            lo, hi = b["relational"][t.difficulty]
            assert lo <= t.meta["route_length"] < hi
        if t.type in T.NAVIGATION_TYPES:
            # the route length recorded is the one the graph gives
            d = g.distance_field(T.goal_states(g, t)).distance(T.start_state(g, t))
            assert d == pytest.approx(t.meta["route_length"], abs=0.06)
        # every task's oracle needs at most 60% of the step limit: 30 of 50 steps
        assert 1 <= t.meta["oracle_steps"] <= 30


def test_localization_answer_is_the_grid_cell_of_the_start(tiny_suite):
    g = load_posegraph(TINY)
    x0, y0, x1, y1 = g.bounds  # the tiny graph spans 212 m both ways
    assert (x1 - x0, y1 - y0) == pytest.approx((212.0, 212.0))
    grid = GridOverlay((x0 - 5, y0 - 5, x1 + 5, y1 + 5))
    assert T.localization_grid(g) == grid
    for t in (t for t in tiny_suite if t.type == "localization"):
        assert t.answer == grid.label_of(t.start["x"], t.start["y"])
        assert len(t.options) == 25 and t.answer in t.options
        assert t.reference_images == ("grid_map",)
        # 5 cells of 44.4 m: margin to the border by band
        i, j = grid.cell_of(t.start["x"], t.start["y"])
        a, b, c, d = grid.cell_bounds(i, j)
        margin = min(t.start["x"] - a, c - t.start["x"], t.start["y"] - b, d - t.start["y"])
        lo, hi = T.THRESHOLDS["localization"][t.difficulty]
        assert lo <= margin / (grid.cell_size[0] / 2) < hi


def test_landmark_pairs_share_targets_and_goal_is_in_front_of_the_place(tiny_city, tiny_suite):
    names = [t for t in tiny_suite if t.type == "landmark_name"]
    images = [t for t in tiny_suite if t.type == "landmark_image"]
    assert [(t.start, t.goal) for t in names] == [(t.start, t.goal) for t in images]
    for t in names:
        poi = tiny_city.poi_by_name(t.goal["poi"])
        assert poi.name in t.instruction
        assert math.dist(poi.anchor, (t.goal["x"], t.goal["y"])) <= T.MAX_POI_OFFSET_M
    for t in images:
        assert t.reference_images == ("landmark",) and t.goal["poi"] not in t.instruction
        v = t.goal["view"]
        # the photo looks from the goal frame at the sign
        ax, ay = t.goal["anchor"]
        b = math.degrees(math.atan2(ax - t.goal["x"], ay - t.goal["y"])) % 360
        assert v["bearing"] == pytest.approx(b, abs=0.01)


def test_vln_directions_end_at_the_place(tiny_suite, tiny_city):
    for t in (t for t in tiny_suite if t.type == "vln"):
        lines = t.instruction.splitlines()[1:]
        assert lines[0].startswith("1. ")
        assert lines[-1].startswith(f"{len(lines)}. Stop in front of {t.goal['poi']}")
        assert tiny_city.poi_by_name(t.goal["poi"]) is not None


def test_object_counts_are_the_mapped_objects(tiny_city):
    g = load_posegraph(TINY)
    # the south spoke from the south junction to the centre, 106 m: the procedural city
    # puts one crossing on each street arm 10 m out from every intersection, so two lie
    # on this stretch; those of the cross streets project onto its ends and do not count
    t = next(
        t
        for t in g.trajectories
        if np.allclose(t.xy[0], (0, -106)) and np.allclose(t.xy[-1], (0, 0))
    )
    line = LineString(t.xy)
    assert T.count_objects(tiny_city, "crossing", line) == 2
    # street lamps: every mapped lamp within 15 m whose foot is inside the stretch
    manual = sum(
        1
        for o in tiny_city.objects
        if o.kind == "street_lamp" and abs(o.position[0]) <= 15 and -106 < o.position[1] < 0
    )
    assert T.count_objects(tiny_city, "street_lamp", line) == manual


def test_count_tasks_ground_truth(gen, tiny_suite, tiny_city):
    for t in (t for t in tiny_suite if t.type == "object_count"):
        assert t.answer == str(t.meta["count"]) and t.answer in t.options
        assert t.goal["kind"] in T.COUNT_KINDS
        assert T.COUNT_KINDS[t.goal["kind"]] in t.instruction


def _place(offset, side, name, ref=0):
    class P:
        pass

    p = P()
    p.name = name
    return T.Place(p, State(0, 0), 1.0, ref, side, offset)


def test_relations_from_facade_order():
    # a street walked east (ref trajectory 0); the right side is south. Facing a south-side
    # place you look south, so your left hand points east (forwards along the street).
    a, x, b = _place(10, "right", "A"), _place(20, "right", "X"), _place(30, "right", "B")
    n1, n2 = _place(21, "left", "N1"), _place(45, "left", "N2")
    by_side = {(0, "right"): [a, x, b], (0, "left"): [n1, n2]}
    assert T.relation_of(x, "left", by_side, None).poi.name == "B"
    assert T.relation_of(x, "right", by_side, None).poi.name == "A"
    assert T.relation_of(x, "across", by_side, None).poi.name == "N1"
    # on the north side it is the other way round: facing north, the left hand points west
    assert T.relation_of(n2, "left", by_side, None).poi.name == "N1"
    assert T.relation_of(n1, "right", by_side, None).poi.name == "N2"
    assert T.relation_of(n1, "left", by_side, None) is None  # nothing further west
    # ambiguous: two places at the same spot next to X
    by_side[(0, "right")].append(_place(30.5, "right", "B2"))
    assert T.relation_of(x, "left", by_side, None) is None


def test_relational_tasks(tiny_suite, tiny_city):
    for t in (t for t in tiny_suite if t.type == "relational"):
        assert t.answer in t.options and len(set(t.options)) == 5
        assert t.goal["reference"] in t.instruction
        assert T.relation_phrase(t.goal["relation"]) in t.instruction


def test_plan_actions_reaches_the_goal(tiny_suite):
    g = load_posegraph(TINY)
    for t in (t for t in tiny_suite if t.type in T.NAVIGATION_TYPES):
        plan = T.plan_actions(g, T.start_state(g, t), 0.0, T.goal_states(g, t))
        assert plan[-1] == {"action": "ANSWER", "text": "arrived"}
        assert len(plan) == t.meta["oracle_steps"]
        names = {a["action"] for a in plan}
        assert names <= {"W", "A", "D", "LEFT", "UP", "RIGHT", "ANSWER"}


def outcome(**kw):
    base = {"answer": None, "position": (0.0, 0.0)}
    base.update(kw)
    return T.EpisodeOutcome(**base)


def nav_task(radius=10.0, type_="map_navigation"):
    return TaskSpec(
        id="n",
        family="posegraph360",
        type=type_,
        difficulty="easy",
        city=TINY,
        instruction="go",
        start={"x": 0.0, "y": 0.0},
        goal={"x": 100.0, "y": 0.0, "radius": radius},
    )


def test_evaluate_navigation_worked_examples():
    t = nav_task(20.0)
    path = [(0.0, 0.0), (50.0, 0.0), (60.0, 30.0), (60.0, 0.0), (85.0, 0.0)]
    # answered 15 m short of the goal: inside 20 m; path 50 + 31.62 + 30 + 25 = 136.62 m
    m = T.evaluate(
        t,
        outcome(
            answer="arrived",
            position=(85.0, 0.0),
            path=path,
            shortest_length=100.0,
            departures=[(100.0, 97.0), (40.0, 43.0)],
        ),
    )
    assert m["success"] == 1.0 and m["coordinate_match"] == 1.0 and m["score"] == 1.0
    assert m["distance_to_goal"] == pytest.approx(15.0)
    assert m["path_length"] == pytest.approx(136.62, abs=0.01)
    assert m["spl"] == pytest.approx(100.0 / 136.62, abs=1e-3)
    assert m["decision_accuracy"] == 0.5
    # the same place without ANSWER scores nothing; with a 10 m radius it is too far
    assert T.evaluate(t, outcome(position=(85.0, 0.0)))["success"] == 0.0
    assert (
        T.evaluate(nav_task(10.0), outcome(answer="here", position=(85.0, 0.0)))["success"] == 0.0
    )


def test_evaluate_vln_ndtw_and_sdtw_worked_example():
    # the walk strays 10 m sideways at its middle point: DTW 0 + 10 + 0 = 10 m over 3
    # reference points with a 10 m radius, nDTW = exp(-10 / 30); SDTW = success * nDTW
    t = nav_task(10.0, "vln")
    ref = [(0.0, 0.0), (50.0, 0.0), (100.0, 0.0)]
    walk = [(0.0, 0.0), (50.0, 10.0), (100.0, 0.0)]
    kw = {"position": (100.0, 0.0), "path": walk, "reference_path": ref}
    m = T.evaluate(t, outcome(answer="arrived", **kw))
    assert m["success"] == 1.0
    assert m["ndtw"] == pytest.approx(math.exp(-1 / 3)) and m["sdtw"] == m["ndtw"]
    m = T.evaluate(t, outcome(**kw))  # no ANSWER: no success, the same path scores nDTW
    assert m["success"] == 0.0 and m["sdtw"] == 0.0
    assert m["ndtw"] == pytest.approx(math.exp(-1 / 3))


def test_evaluate_questions_worked_examples():
    count = TaskSpec(
        id="c",
        family="posegraph360",
        type="object_count",
        difficulty="hard",
        city=TINY,
        instruction="?",
        start={"x": 0, "y": 0},
        answer="10",
    )
    # |8 - 10| / 10 = 0.2 < 1 - theta for theta in 0.50..0.75: 6 of 10 thresholds
    assert T.evaluate(count, outcome(answer="8"))["mra"] == pytest.approx(0.6)
    assert T.evaluate(count, outcome(answer="about 10 trees"))["score"] == 1.0
    assert T.evaluate(count, outcome(answer="15"))["mra"] == pytest.approx(0.0)  # 0.5 ≮ 0.5
    # 0.1 < 1 - theta for theta in 0.50..0.85 (not 0.90: 0.1 < 0.1 fails): 8 of 10
    assert T.evaluate(count, outcome(answer="11"))["mra"] == pytest.approx(0.8)
    zero = count.replace(answer="0")
    assert T.evaluate(zero, outcome(answer="0"))["mra"] == 1.0
    assert T.evaluate(zero, outcome(answer="1"))["mra"] == 0.0
    assert T.evaluate(count, outcome())["mra"] == 0.0  # not answered
    loc = count.replace(type="localization", answer="x:2 y:3")
    # 360CityArena's exact_match: only the answer text itself scores; another spelling of
    # the same cell is reported as grid_match
    assert T.evaluate(loc, outcome(answer="x:2 y:3"))["success"] == 1.0
    m = T.evaluate(loc, outcome(answer="I think x=2, y=3"))
    assert m["success"] == 0.0 and m["grid_match"] == 1.0
    assert T.evaluate(loc, outcome(answer="x:3 y:2"))["success"] == 0.0
    rel = count.replace(type="relational", answer="Kahvila Aalto", goal={"aliases": ["Aalto Café"]})
    assert T.evaluate(rel, outcome(answer="It is kahvila aalto."))["fuzzy_match"] == 1.0
    assert T.evaluate(rel, outcome(answer="Aalto Cafe"))["fuzzy_match"] == 1.0
    assert T.evaluate(rel, outcome(answer="Kahvila Laine"))["fuzzy_match"] == 0.0
    # a pluggable judge
    assert T.evaluate(rel, outcome(answer="x", judge=lambda p, c: True))["success"] == 1.0


def test_bad_tasks_are_clear_errors():
    t = nav_task()
    with pytest.raises(TaskError, match="family='streetgraph'"):
        T.check_task(t.replace(family="streetgraph"))
    with pytest.raises(TaskError, match="type='teleport'"):
        T.check_task(t.replace(type="teleport"))
    with pytest.raises(TaskError, match="goal.radius"):
        T.check_task(t.replace(goal={"x": 1.0, "y": 2.0}))
    with pytest.raises(TaskError, match="needs an answer"):
        T.check_task(t.replace(type="object_count"))
    with pytest.raises(TaskError, match="type 'teleport'"):
        T.PoseGraphTaskGenerator(TINY).generate("teleport", 3)


def test_statistics_table(tiny_suite):
    rows = T.suite_statistics(tiny_suite)
    counts = [r for r in rows if r["type"] == "object_count"]
    assert [r["difficulty"] for r in counts] == ["easy", "medium", "hard"]
    assert counts[0]["count"] < counts[1]["count"] < counts[2]["count"]
    assert counts[0]["paper"] == {"count": 3.5}  # 360CityArena's own average
    text = T.format_statistics(rows)
    lines = text.splitlines()
    assert lines[0].startswith("| type | difficulty | tasks |")
    # header, rule, rows, the legend and the object kinds counted
    assert len(lines) == 4 + len(rows) and lines[-1].startswith("object count kinds")
    # the paper's average in brackets with our deviation and the +-15% check
    easy = counts[0]["count"]
    dev = easy / 3.5 - 1.0
    mark = "ok" if abs(dev) <= 0.15 else "OFF"
    assert f" {easy:.1f} [3.5 {dev:+.0%} {mark}] |" in text


def test_task_start_is_the_episode_start(tiny_suite):
    # what an episode starts from: the start state, and for a navigation task its goal
    # field, the distance and geodesic from the start and the reference route, which
    # runs from the start along the recorded route's length
    import math

    g = load_posegraph(TINY)
    kinds = set()
    for t in tiny_suite:
        s = T.task_start(g, t)
        state, field_, dist, geo, ref = s.state, s.field, s.distance, s.geodesic, s.route
        assert state == T.start_state(g, t)
        if t.type not in T.NAVIGATION_TYPES:
            assert (field_, ref) == (None, ()) and math.isnan(dist) and math.isnan(geo)
            kinds.add("question")
            continue
        kinds.add("navigation")
        assert dist == g.distance_field(T.goal_states(g, t)).distance(state)
        assert dist == pytest.approx(t.meta["route_length"], abs=0.06) and geo <= dist
        assert ref[0] == pytest.approx(g.position(state))
        length = sum(math.dist(a, b) for a, b in zip(ref, ref[1:]))
        assert length == pytest.approx(dist, rel=0.01)  # frame to frame, within 1%
    assert kinds == {"question", "navigation"}


def test_generate_suite_prints_ours_beside_the_papers(tmp_path, capsys):
    """``urban-gym generate-suite --family posegraph360`` prints, per type and difficulty,
    the suite's averages with 360CityArena's in brackets, our deviation and the +-15%
    check, the oracle's steps and the object kinds counted.
    """
    from urban_gym.cli import main

    out = tmp_path / "tiny.jsonl"
    args = ["--family", "posegraph360", "--city", TINY, "--per-type", "3", "--out", str(out)]
    assert main(["generate-suite", *args]) == 0
    printed = capsys.readouterr().out
    tasks = load_suite(out)
    rows = {(r["type"], r["difficulty"]): r for r in T.suite_statistics(tasks)}
    easy = rows[("map_navigation", "easy")]
    length, dev = easy["route_length_m"], easy["route_length_m"] / 124.0 - 1.0
    # the paper's 124 m beside ours, e.g. "| 126 [124 +2% ok] |"
    assert f"| {length:.0f} [124 {dev:+.0%} ok] |" in printed
    decisions = easy["decision_points"]
    mark = "ok" if abs(decisions / 3.3 - 1.0) <= 0.15 else "OFF"
    assert f"| {decisions:.1f} [3.3 {decisions / 3.3 - 1.0:+.0%} {mark}] |" in printed
    assert "oracle steps (mean / most, of 50)" in printed
    assert "every task's oracle needs at most 30 of the 50 steps" in printed
    assert "object count kinds (tasks; easy/medium/hard): " in printed
    assert f"wrote {len(tasks)} posegraph360 tasks" in printed
