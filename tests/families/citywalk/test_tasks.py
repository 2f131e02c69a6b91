"""CityWalk ladder: generated tasks carry checkable ground truth; the oracle solves them."""

from __future__ import annotations

import math
import re
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from urban_gym.families.citywalk.tasks import (
    DEFAULT_SUITE_PATH,
    INTENT_CATEGORIES,
    OU_OPTIONS,
    PAPER_BASE_COUNTS,
    TASK_TYPES,
    VARIANT_TYPES,
    EpisodeOutcome,
    check_task,
    evaluate,
    generate_tasks,
    route_legs,
    suite_statistics,
)
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.suite import load_suite
from urban_gym.world.routing import Router, polyline_length

TINY = "procedural:seed=3,blocks=2x2"
SMALL = "procedural:seed=7,blocks=4x4"


@pytest.fixture(scope="module")
def small_tasks(small_city):
    return generate_tasks(small_city, SMALL, per_type=3, variants_per_type=1, seed=0)


def test_all_thirteen_types_on_five_levels(small_tasks):
    assert len(TASK_TYPES) == 13
    counts = Counter(t.type for t in small_tasks)
    assert set(counts) == set(TASK_TYPES)
    assert {t.difficulty for t in small_tasks} == {"l1", "l2", "l3", "l4", "l5"}
    variants = [t for t in small_tasks if "variant" in t.meta]
    assert {t.type for t in variants} == set(VARIANT_TYPES)
    assert all(t.difficulty == "l5" for t in variants)
    assert all(
        t.constraints["conditions"]["weather"] in ("clear", "fog", "rain") for t in small_tasks
    )
    for t in small_tasks:
        check_task(t)
        assert TaskSpec.from_json(t.to_json()) == t


def test_every_start_lies_inside_the_city(small_city, small_tasks, helsinki, default_suite):
    """Starts placed in front of a facade at the city's edge once fell outside the map,
    where the walker cannot stand and the renderer refuses to draw."""
    for city, tasks in ((small_city, small_tasks), (helsinki, default_suite)):
        for t in tasks:
            assert city.contains(t.start["x"], t.start["y"]), t.id


def test_generation_is_deterministic_by_seed(tiny_city):
    a = generate_tasks(tiny_city, TINY, per_type=2, variants_per_type=0, seed=4)
    b = generate_tasks(tiny_city, TINY, per_type=2, variants_per_type=0, seed=4)
    c = generate_tasks(tiny_city, TINY, per_type=2, variants_per_type=0, seed=5)
    assert [t.to_json() for t in a] == [t.to_json() for t in b]
    assert [t.to_json() for t in a] != [t.to_json() for t in c]


def test_vr_answer_is_the_sign_straight_ahead(small_city, small_tasks):
    for t in (t for t in small_tasks if t.type == "VR"):
        p = small_city.pois[t.meta["poi_id"]]
        assert t.answer == p.name and t.answer in t.options and len(set(t.options)) == 4
        b = math.degrees(math.atan2(p.anchor[0] - t.start["x"], p.anchor[1] - t.start["y"])) % 360
        assert abs((b - t.start["heading"] + 180) % 360 - 180) < 1.0
        assert math.dist(p.anchor, (t.start["x"], t.start["y"])) <= 9.5


def test_ou_answer_matches_the_relative_bearing(small_city, small_tasks):
    seen = set()
    for t in (t for t in small_tasks if t.type == "OU"):
        p = small_city.pois[t.meta["poi_id"]]
        b = math.degrees(math.atan2(p.anchor[0] - t.start["x"], p.anchor[1] - t.start["y"])) % 360
        assert t.meta["bearing"] == pytest.approx(b, abs=0.06)
        if t.meta["ou_form"] != "relative":
            direction = b if t.meta["ou_form"] == "compass" else p.facing
            k = int(((direction + 45) % 360) // 90)  # 0 north, 1 east, 2 south, 3 west
            assert t.answer == ("North", "East", "South", "West")[k]
            continue
        rel = (b - t.start["heading"] + 180) % 360 - 180
        quadrant = int(((rel + 45) % 360) // 90)  # 0 ahead, 1 right, 2 behind, 3 left
        assert t.answer == OU_OPTIONS[quadrant] and list(t.options) == list(OU_OPTIONS)
        assert abs((rel - 90 * quadrant + 180) % 360 - 180) <= 20.0 + 1e-6
        seen.add(t.answer)
    assert seen


def test_aeq_answer_is_the_only_one_of_its_kind_nearby(small_city, small_tasks):
    for t in (t for t in small_tasks if t.type == "AEQ"):
        b = small_city.pois[t.meta["poi_id"]]
        a = small_city.pois[t.meta["landmark_poi_id"]]
        assert t.answer == b.name and math.dist(a.anchor, b.anchor) <= 25.0
        same = [p for p in small_city.pois_within(*a.anchor, 80.0) if p.kind == b.kind]
        assert [p.id for p in same] == [b.id]
        for o in t.options:
            if o != t.answer:
                q = small_city.poi_by_name(o)
                assert q.kind == b.kind and math.dist(q.anchor, a.anchor) >= 150.0


def test_pts_and_iii_goals_are_the_nearest_by_walking(small_city, small_tasks):
    g = small_city.network
    router = Router(small_city)
    for t in (t for t in small_tasks if t.type in ("PTS", "III")):
        kinds = t.meta["kinds"]
        if t.type == "III":
            assert tuple(kinds) == INTENT_CATEGORIES[t.meta["intent"]]
        src = router.locate(t.start["x"], t.start["y"])
        fld = router.field(src)
        cands = [p for p in small_city.pois if p.kind in kinds]
        best = min(cands, key=lambda p: router.distance(fld, router.locate(*p.front)))
        assert t.goal["poi_id"] == best.id and best.kind in kinds
        # independent check with networkx on the goal's nearest node
        d_nx = nx.shortest_path_length(
            g, src.u, small_city.nearest_node(*best.front), weight="length"
        )
        assert d_nx <= t.meta["shortest_m"] + 2 * 60.0


def test_cn_closure_cuts_the_unconstrained_route(small_city, small_tasks):
    from shapely.geometry import LineString

    router = Router(small_city)
    for t in (t for t in small_tasks if t.type in ("CN", "DCR")):
        (cl,) = t.constraints["closures"]
        line = LineString(cl["points"])
        a = router.locate(t.start["x"], t.start["y"])
        b = router.locate(t.goal["x"], t.goal["y"])
        route = LineString(router.route(a, b))
        assert route.intersects(line)
        closed = router.with_closed(cl["closed_edges"])
        detour = closed.route(closed.locate(t.start["x"], t.start["y"]), b)
        assert detour and not LineString(detour).intersects(line)
        assert (cl["trigger"] is not None) == (t.type == "DCR")


def test_tws_deadlines_are_reachable_at_walking_speed(small_tasks):
    for t in (t for t in small_tasks if t.type == "TWS"):
        stops = t.goal["stops"]
        assert t.goal["ordered"] and 2 <= len(stops) <= 3
        deadlines = [s["deadline"] for s in stops]
        assert deadlines == sorted(deadlines) and deadlines[0] > t.start["clock"]
        # walking the whole route at 1.4 m/s is within the last deadline
        assert t.start["clock"] + t.meta["shortest_m"] / 1.4 <= deadlines[-1]


def test_route_legs_of_an_l_shaped_route():
    pts = [(0.0, 0.0), (0.0, 50.0), (40.0, 50.0)]  # north 50 m, then east 40 m: a right turn
    legs = route_legs(pts)
    assert len(legs) == 2
    assert legs[0]["length"] == pytest.approx(50.0) and legs[0]["bearing"] == pytest.approx(0.0)
    assert legs[1]["turn"] == pytest.approx(90.0) and legs[1]["length"] == pytest.approx(40.0)
    # a 10 m jog (shorter than a leg) is merged into one northward leg of 30 + 10 + 30 m
    legs = route_legs([(0.0, 0.0), (0.0, 30.0), (10.0, 30.0), (10.0, 60.0)])
    assert len(legs) == 1 and legs[0]["length"] == pytest.approx(70.0)
    assert legs[0]["bearing"] == pytest.approx(0.0)


def test_router_distances_match_networkx(small_city):
    router = Router(small_city)
    nodes = sorted(small_city.node_xy)[:5]
    for u in nodes:
        x, y = small_city.node_xy[u]
        fld = router.field(router.locate(x, y))
        for v in nodes:
            want = nx.shortest_path_length(small_city.network, u, v, weight="length")
            assert fld.dist[v] == pytest.approx(want, abs=1e-6)
    a = router.locate(*small_city.node_xy[nodes[0]])
    b = router.locate(*small_city.node_xy[nodes[-1]])
    assert polyline_length(router.route(a, b)) == pytest.approx(router.distance(router.field(a), b))


def test_evaluate_worked_example():
    t = TaskSpec(
        id="x",
        family="citywalk",
        type="CN",
        difficulty="l2",
        city=TINY,
        instruction="go",
        start={"x": 0.0, "y": 0.0, "heading": 0.0},
        goal={"x": 0.0, "y": 100.0, "radius": 15.0},
        constraints={
            "closures": [{"points": [[0, 0], [1, 1]]}],
            "conditions": {"time_of_day": "day", "weather": "rain", "seed": 0},
        },
        meta={"shortest_m": 100.0},
    )
    rec = EpisodeOutcome(
        positions=[(0.0, 0.0), (0.0, 50.0), (0.0, 90.0)],
        durations=[10.0, 20.0],
        on_network=[True, False],
        covered=[False, True],
        path_length=125.0,
        steps=2,
        start_distance=100.0,
        end_distance=10.0,
    )
    m = evaluate(t, rec)
    assert m["success"] == 1.0 and m["spl"] == pytest.approx(100.0 / 125.0)
    assert m["network_adherence"] == pytest.approx(10.0 / 30.0, abs=1e-4)
    assert m["rain_exposure_s"] == pytest.approx(10.0)  # the 10 s step was not covered
    assert m["closure_compliance"] == 1.0 and m["ended_closer"] == 1.0
    rec.closure_crossings = 1
    assert evaluate(t, rec)["success"] == 0.0


def test_check_task_rejects_bad_closures():
    t = TaskSpec(
        id="x",
        family="citywalk",
        type="CN",
        difficulty="l2",
        city=TINY,
        instruction="go",
        start={"x": 0, "y": 0, "heading": 0},
        goal={"x": 1.0, "y": 2.0},
        constraints={"closures": [{"points": [[1, 1], [1, 1]]}]},
    )
    with pytest.raises(TaskError, match="closure 0"):
        check_task(t)
    with pytest.raises(TaskError, match="unknown CityWalk task types"):
        generate_tasks(None, TINY, types=["ZZ"])  # type: ignore[arg-type]


def _nav_task(**changes) -> TaskSpec:
    t = TaskSpec(
        id="x",
        family="citywalk",
        type="SGN",
        difficulty="l2",
        city=TINY,
        instruction="go",
        start={"x": 0, "y": 0, "heading": 0},
        goal={"x": 1.0, "y": 2.0},
    )
    return t.replace(**changes)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"family": "streetgraph"}, "family='streetgraph' is not 'citywalk'"),
        ({"type": "ZZ"}, "type='ZZ' is not one of VR, OU"),
        ({"start": {"x": 0, "y": 0, "heading": True}}, "start.heading=True must be a finite"),
        ({"start": {"x": "0", "y": 0, "heading": 0}}, "start.x='0' must be a finite"),
        ({"type": "VR", "options": ["a", "b", "c"], "answer": "c"}, "4 options and an"),
        ({"goal": {"x": 1.0, "y": None}}, "goal.y=None must be a finite number"),
        ({"type": "MSP", "goal": {"stops": []}}, "goal.stops=[] must be a non-empty list"),
        ({"type": "MSP", "goal": {"stops": [{"x": 1, "y": "2"}]}}, "goal.stops[0]="),
        ({"constraints": {"closures": ["no"]}}, "closure 0 points=None"),
        ({"constraints": {"closures": [{"points": [[0, 0], [1, "1"]]}]}}, "closure 0 points="),
        (
            {"constraints": {"closures": [{"points": [[0, 0], [1, 1]], "trigger": [0, 0, 0]}]}},
            "closure 0 trigger=[0, 0, 0] must be [x, y, radius > 0]",
        ),
        ({"constraints": {"conditions": {"time_of_day": "noon"}}}, "time_of_day='noon'"),
        ({"constraints": {"conditions": {"weather": "snow"}}}, "weather='snow'"),
    ],
)
def test_check_task_names_each_bad_field(changes, message):
    assert check_task(_nav_task()) == _nav_task()  # the unchanged task is well formed
    with pytest.raises(TaskError, match=re.escape(message)):
        check_task(_nav_task(**changes))


def test_check_task_accepts_each_kind():
    ok = [
        _nav_task(type="VR", options=["a", "b", "c", "d"], answer="c"),
        _nav_task(type="MSP", goal={"stops": [{"x": 1, "y": 2}, {"x": 3.5, "y": 4}]}),
        _nav_task(
            constraints={
                "closures": [{"points": [[0, 0], [1, 1]], "trigger": [0.5, 0.5, 10.0]}],
                "conditions": {"time_of_day": "night", "weather": "rain"},
            }
        ),
    ]
    for t in ok:
        assert check_task(t) is t


def test_intent_table_is_documented_and_served_by_real_kinds(helsinki):
    kinds = {p.kind for p in helsinki.pois}
    served = [i for i, ks in INTENT_CATEGORIES.items() if kinds & set(ks)]
    assert len(INTENT_CATEGORIES) >= 20 and len(served) >= 15
    assert all(i.endswith((".", "?", "!")) for i in INTENT_CATEGORIES)


# ---------------------------------------------------------------- default suite
@pytest.fixture(scope="module")
def default_suite():
    return load_suite(DEFAULT_SUITE_PATH)


def test_default_suite_shape(default_suite):
    stats = suite_statistics(default_suite)
    # UrbanGround's 810 base tasks (63 of VR, OU, AEQ, SGN, 62 of the others) and every
    # base task of VR, OU, AEQ and SGN under 4 conditions (4 x 252)
    assert stats["tasks"] == 1818 and stats["base_tasks"] == 810
    assert stats["by_level"] == {"l1": 189, "l2": 249, "l3": 124, "l4": 124, "l5": 1132}
    for code, row in stats["by_type"].items():
        n = 4 * PAPER_BASE_COUNTS[code] if code in VARIANT_TYPES else 0
        assert row["count"] == PAPER_BASE_COUNTS[code] + n
        assert row["variants"] == n, code
    assert all(t.city == "helsinki" and t.family == "citywalk" for t in default_suite)
    for t in default_suite:
        check_task(t)
    assert len({t.id for t in default_suite}) == 1818


def _run_oracle(env, index):
    from urban_gym.families.citywalk.oracle import CityWalkOracle

    env.reset(seed=0, options={"task_index": index})
    oracle = CityWalkOracle()
    oracle.reset(env)
    while True:
        _, _, term, trunc, info = env.step(oracle.act(env))
        if term or trunc:
            return info


def test_oracle_solves_every_type_on_a_procedural_city(small_tasks):
    from urban_gym.families.citywalk.env import CityWalkEnv

    env = CityWalkEnv(tasks=small_tasks, view_size=None)
    results: dict[str, list[float]] = {}
    for i, t in enumerate(small_tasks):
        info = _run_oracle(env, i)
        results.setdefault(t.type, []).append(info["metrics"]["success"])
        assert info["metrics"].get("closure_crossings", 0) == 0
    assert set(results) == set(TASK_TYPES)
    assert all(np.mean(v) == 1.0 for v in results.values()), results


def test_oracle_solves_one_task_of_each_type_of_the_default_suite(default_suite):
    from urban_gym.families.citywalk.env import CityWalkEnv

    env = CityWalkEnv(tasks=default_suite, view_size=None)
    first: dict[str, int] = {}
    for i, t in enumerate(default_suite):
        first.setdefault(t.type + ("*" if "variant" in t.meta else ""), i)
    for key, i in first.items():
        info = _run_oracle(env, i)
        assert info["is_success"], (key, default_suite[i].id, info["metrics"])


def test_every_claim_of_sight_holds_in_the_start_views_pixels(default_suite, helsinki):
    """The claims "its sign is in sight from where you start" (SGN) and "the sign
    straight ahead of you" (VR) hold in the language-model start view (960x540, 90
    degrees, the env's own pedestrians drawn): 100 % of those tasks show at least
    MIN_SIGN_PIXELS pixels of the place's signboard in the renderer's instance ids."""
    from urban_gym.families.citywalk.env import CityWalkEnv
    from urban_gym.families.citywalk.tasks.context import MIN_SIGN_PIXELS, start_view_size
    from urban_gym.render import FirstPersonRenderer
    from urban_gym.render.ids import sign_id

    assert start_view_size() == (960, 540)
    # UrbanGround's 63 SGN and 63 VR base tasks (their condition variants start at the
    # same pose without pedestrians: tests/conformance/test_urbanground_tasks.py)
    claims = [
        i
        for i, t in enumerate(default_suite)
        if t.type in ("SGN", "VR") and "variant" not in t.meta
    ]
    assert len(claims) == 2 * 63
    env = CityWalkEnv(tasks=default_suite, view_size=None)
    fp = FirstPersonRenderer(helsinki, 960, 540, fov=90.0)
    shown = {}
    for i in claims:
        t = default_suite[i]
        env.reset(seed=0, options={"task_index": i})
        w = env.walker
        assert (w.x, w.y, w.heading) == pytest.approx(
            (t.start["x"], t.start["y"], t.start["heading"])
        )
        poi = t.goal["poi_id"] if t.type == "SGN" else t.meta["poi_id"]
        ids = fp.render(
            w.x, w.y, w.heading, w.pitch, pedestrians=env.pedestrian_positions(), ids=True
        ).ids
        shown[t.id] = int(np.count_nonzero(ids == sign_id(poi)))
    missing = {k: v for k, v in shown.items() if v < MIN_SIGN_PIXELS}
    assert not missing, missing


@pytest.mark.slow
def test_oracle_on_the_whole_default_suite(default_suite):
    """The oracle solves every task of the suite, of every type (about 2 min)."""
    from urban_gym.families.citywalk.env import CityWalkEnv

    env = CityWalkEnv(tasks=default_suite, view_size=None)
    failed = [t.id for i, t in enumerate(default_suite) if not _run_oracle(env, i)["is_success"]]
    assert not failed, failed
    assert {t.type for t in default_suite} == set(TASK_TYPES)


def _goal_places_that_moved(suite, city) -> list[str]:
    """The goal places of ``suite`` whose position (the POI's front point, to the
    millimetre) or name differ in ``city`` as imported here."""
    moved = []
    for t in suite:
        g = t.goal
        if "poi_id" not in g or "x" not in g:
            continue
        p = city.pois[g["poi_id"]]
        if (round(p.front[0], 3), round(p.front[1], 3)) != (g["x"], g["y"]) or p.name != g.get(
            "name"
        ):
            moved.append(f"{g['poi_id']} {p.name!r}: {g['x']}, {g['y']} -> {p.front}")
    return moved


@pytest.mark.slow
def test_default_suite_regenerates_identically(default_suite, helsinki, tmp_path):
    # The suite is a function of the imported world and the seed. The import is not
    # bit-identical on every CPU: its projection (world/geo.py) runs numpy's float64
    # sin, cos, sinh, arctanh, ..., which numpy computes with its own SIMD kernels on a CPU
    # with AVX-512 and with the C library elsewhere -- results that differ in the last bit
    # -- and such a bit can flip a tie when a POI is anchored to a facade. Where goal
    # places of the committed suite sit elsewhere in this import, the suite cannot
    # regenerate identically here, and the test says so instead of comparing; wherever the
    # import matches, it compares byte for byte.
    from urban_gym.families.citywalk.tasks import write_suite

    moved = _goal_places_that_moved(default_suite, helsinki)
    if moved:
        pytest.skip(
            f"this CPU imports Helsinki with {len(moved)} goal places of the committed suite "
            f"elsewhere (first: {moved[0]}); the suite regenerates identically only from the "
            "same import"
        )
    path = write_suite("helsinki", tmp_path / "s.jsonl", seed=0)
    assert path.read_text(encoding="utf-8") == DEFAULT_SUITE_PATH.read_text(encoding="utf-8")


def test_router_handles_negative_node_ids():
    # OSM imports create split nodes with negative ids (-1 included)
    from shapely.geometry import LineString

    from urban_gym.world.city import City
    from urban_gym.world.geo import GeoFrame

    g = nx.Graph()
    pos = {-2: (0.0, 0.0), -1: (10.0, 0.0), 0: (20.0, 0.0), 5: (20.0, 10.0)}
    for n, (x, y) in pos.items():
        g.add_node(n, x=x, y=y)
    for u, v in ((-2, -1), (-1, 0), (0, 5)):
        line = LineString([pos[u], pos[v]])
        g.add_edge(
            u,
            v,
            geometry=line,
            start=u,
            length=line.length,
            kind="footway",
            covered=False,
            width=2.0,
            name=None,
        )
    city = City("neg", GeoFrame(60.0, 25.0), [], [], [], [], g)
    router = Router(city)
    a, b = router.locate(2.0, 0.0), router.locate(20.0, 7.0)
    pts = router.route(a, b)
    assert pts[0] == pytest.approx((2.0, 0.0)) and pts[-1] == pytest.approx((20.0, 7.0))
    assert polyline_length(pts) == pytest.approx(25.0)
    assert router.route_nodes(router.field(a), 5) == [-1, 0, 5]


def test_cli_generates_and_evaluates_a_suite(tmp_path, capsys):
    from urban_gym.cli import main

    out = tmp_path / "cw.jsonl"
    assert (
        main(
            [
                "generate-suite",
                "--family",
                "citywalk",
                "--city",
                TINY,
                "--out",
                str(out),
                "--per-type",
                "1",
            ]
        )
        == 0
    )
    # 13 types + the one VR, OU, AEQ and SGN task under each of 4 conditions
    assert "wrote 29 citywalk tasks" in capsys.readouterr().out
    assert len(load_suite(out)) == 29
    assert main(["citywalk-eval", "--suite", str(out), "--types", "OU,SGN"]) == 0
    table = capsys.readouterr().out
    assert "| OU | L1 | 1 | 100.0% |" in table and "| SGN | L2 | 1 | 100.0% |" in table
    assert main(["generate-suite", "--family", "nope"]) == 2


def test_a_new_citys_suite_never_overwrites_another_citys() -> None:
    """``generate-suite --family citywalk --city X`` without ``--out`` writes X's own file
    beside the committed suites; it once fell back to Helsinki's file."""
    from urban_gym.families.citywalk.tasks.generate import city_suite_path
    from urban_gym.families.citywalk.tasks.types import DEFAULT_SUITE_PATH

    assert city_suite_path("vienna") == DEFAULT_SUITE_PATH.with_name("vienna.jsonl")
    assert city_suite_path("New York/../x") == DEFAULT_SUITE_PATH.with_name("New_York_.._x.jsonl")
    assert city_suite_path("new york").parent == DEFAULT_SUITE_PATH.parent
    assert city_suite_path("helsinki") == DEFAULT_SUITE_PATH
