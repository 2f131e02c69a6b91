"""CityWalk against UrbanGround: the action space of its Section 3.4 and its
Appendix F prompts -- every action and field with its range and clamping -- and the
episode rules, metrics and suite the paper describes.

The JSON examples below are the paper's schemas filled with values; the expected numbers
are worked out by hand in the comments (walk 1.4 m/s, sprint 3.0 m/s).
"""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

from urban_gym.families.citywalk.actions import citywalk_action_set
from urban_gym.families.citywalk.dynamics import WalkerState, low_obstacles, simulate_move
from urban_gym.families.citywalk.env import CityWalkEnv
from urban_gym.families.citywalk.network import PedestrianNetwork
from urban_gym.families.citywalk.tasks import DEFAULT_SUITE_PATH, TASK_TYPES
from urban_gym.families.citywalk.tasks.types import (
    DISTANCE_BIN_TYPES,
    PAPER_BASE_COUNTS,
    PAPER_BASE_TOTAL,
    VARIANT_CONDITIONS,
    VARIANT_TYPES,
)
from urban_gym.tasks.spec import TaskSpec
from urban_gym.tasks.suite import load_suite
from urban_gym.world import import_osm
from urban_gym.world.walkable import WalkGeometry
from urban_gym.wrappers.protocols import protocol_for

TINY = "procedural:seed=3,blocks=2x2"

#: The paper's action space: action -> {field: (low, high) or None for non-numbers}.
PAPER_ACTIONS: dict[str, dict[str, tuple[float, float] | None]] = {
    "move": {
        "dir": None,
        "seconds": (0.05, 2.0),
        "yaw_rate": (-180.0, 180.0),
        "pitch_rate": (-180.0, 180.0),
        "jump": None,
        "jump_at": None,  # [0, seconds]: checked against the move's own seconds
    },
    "sprint": {
        "dir": None,
        "seconds": (0.05, 2.0),
        "yaw_rate": (-180.0, 180.0),
        "pitch_rate": (-180.0, 180.0),
        "jump": None,
        "jump_at": None,
    },
    "look": {"yaw": (-180.0, 180.0), "pitch": (-90.0, 90.0)},
    "jump": {},
    "open_map": {},
    "map_select": {"x": (0.0, 1.0), "y": (0.0, 1.0)},
    "map_pan": {"east": (-2000.0, 2000.0), "north": (-2000.0, 2000.0)},
    "map_zoom": {"factor": (0.25, 4.0)},
    "map_orbit": {"yaw": (-180.0, 180.0), "pitch": (-90.0, 90.0)},
    "close_map": {},
    "terminate": {},
}


def nav_task(goal=(0.0, 53.0), **extra) -> TaskSpec:
    """A navigation task on the tiny city; (0, 0) is a crossing 11 m from any building."""
    d = dict(
        id="hand-nav",
        family="citywalk",
        type="SGN",
        difficulty="l2",
        city=TINY,
        instruction="Walk north and terminate.",
        start={"x": 0.0, "y": 0.0, "heading": 0.0, "pitch": 0.0, "clock": 36000},
        goal={"x": goal[0], "y": goal[1], "radius": 15.0, "show_on_map": True},
        limits={"max_steps": 150},
        meta={"shortest_m": 53.0},
    )
    d.update(extra)
    return TaskSpec(**d)


def question_task(**extra) -> TaskSpec:
    d = dict(
        id="hand-q",
        family="citywalk",
        type="OU",
        difficulty="l1",
        city=TINY,
        instruction="Where is it? A) ahead B) right C) behind D) left",
        start={"x": 0.0, "y": 0.0, "heading": 0.0, "pitch": 0.0, "clock": 36000},
        options=("ahead of you", "to your right", "behind you", "to your left"),
        answer="to your right",
        limits={"max_steps": 150},
    )
    d.update(extra)
    return TaskSpec(**d)


def make(*tasks, **kw) -> CityWalkEnv:
    env = CityWalkEnv(tasks=list(tasks), view_size=kw.pop("view_size", None), **kw)
    env.reset(seed=0)
    return env


# ---------------------------------------------------------------- the action space
def test_every_paper_action_and_field_is_in_the_schema_with_its_range():
    alts = citywalk_action_set().json_schema()["oneOf"]
    schema = {alt["properties"]["action"]["const"]: alt for alt in alts}
    for name, fields in PAPER_ACTIONS.items():
        assert name in schema, name
        props = schema[name]["properties"]
        assert set(fields) <= set(props), (name, set(fields) - set(props))
        for f, rng in fields.items():
            if rng is not None:
                assert (props[f]["minimum"], props[f]["maximum"]) == rng, (name, f)
        assert "action" in schema[name]["required"]
    assert schema["move"]["properties"]["dir"]["enum"] == ["forward", "backward", "left", "right"]
    assert schema["move"]["properties"]["jump"]["type"] == "boolean"
    assert set(schema["move"]["required"]) == {"action", "dir", "seconds"}


@pytest.mark.parametrize(
    "paper, ours",
    [
        (
            {"action": "move", "dir": "forward", "seconds": 1.5},
            {"action": "move", "direction": "forward", "duration": 1.5},
        ),
        (
            {"action": "sprint", "dir": "left", "seconds": 0.5, "yaw_rate": 30},
            {"action": "sprint", "direction": "left", "duration": 0.5, "yaw_rate": 30},
        ),
        ({"action": "map_orbit", "yaw": 45, "pitch": 0}, {"action": "map_orbit", "degrees": 45}),
    ],
)
def test_the_paper_json_is_canonical_and_ours_are_synonyms(paper, ours):
    aset = citywalk_action_set()
    assert aset.normalise(paper) == aset.normalise(ours)
    assert "dir" in aset.normalise(paper) or paper["action"] == "map_orbit"


def _numeric_cases():
    for name, fields in PAPER_ACTIONS.items():
        for f, rng in fields.items():
            if rng is None or f == "seconds":
                continue
            lo, hi = rng
            yield name, f, lo - 0.01
            yield name, f, hi + 0.01


@pytest.mark.parametrize("name, field, value", list(_numeric_cases()))
def test_a_value_outside_its_range_is_an_invalid_action_naming_the_field(name, field, value):
    env = make(nav_task())
    if name.startswith("map_"):
        env.step({"action": "open_map"})
    a = {"action": name, field: value}
    if name in ("move", "sprint"):
        a |= {"dir": "forward", "seconds": 1.0}
    if name == "map_select":
        a |= {"x": 0.5, "y": 0.5, field: value}
    _, r, _, _, info = env.step(a)
    assert not info["action_valid"] and f"{field}=" in info["invalid_action"]
    assert r == pytest.approx(-0.01)


def test_seconds_above_two_are_clamped_and_below_the_minimum_are_invalid():
    env = make(nav_task(goal=(0.0, 500.0)))
    _, _, _, _, info = env.step({"action": "move", "dir": "forward", "seconds": 7.5})
    # clamped: 2 s at 1.4 m/s = 2.8 m, and 2 s on the clock
    assert info["pose"]["y"] == pytest.approx(2.8) and info["clock"] == pytest.approx(2.0)
    assert info["clamped"] == {"duration": 7.5, "to": 2.0}
    _, _, _, _, info = env.step({"action": "sprint", "dir": "forward", "seconds": 0.04})
    assert not info["action_valid"] and "seconds=0.04" in info["invalid_action"]


def test_yaw_and_pitch_rates_turn_and_tilt_during_the_move():
    env = make(nav_task(goal=(0.0, 500.0)))
    a = {"action": "move", "dir": "forward", "seconds": 2.0, "yaw_rate": 45, "pitch_rate": -10}
    _, _, _, _, info = env.step(a)
    assert info["pose"]["heading"] == pytest.approx(90.0)  # 45 deg/s x 2 s
    assert info["pitch"] == pytest.approx(-20.0)  # -10 deg/s x 2 s


def test_look_turns_and_tilts_relative_to_the_current_view():
    """The paper's look "changes yaw and pitch": both are relative, like the rates."""
    env = make(nav_task())
    env.step({"action": "look", "yaw": 30, "pitch": 20})
    _, _, _, _, info = env.step({"action": "look", "yaw": -90, "pitch": 20})
    assert info["pose"]["heading"] == pytest.approx(300.0) and info["pitch"] == pytest.approx(40.0)
    env.step({"action": "look", "pitch": -90})
    _, _, _, _, info = env.step({"action": "look", "pitch": -90})
    assert info["pitch"] == -90.0  # the view's pitch stays within [-90, 90]
    assert info["pose"]["x"] == 0.0 and info["pose"]["y"] == 0.0  # no translation


def test_a_standalone_jump_moves_nothing_and_takes_its_time():
    env = make(nav_task())
    _, _, _, _, info = env.step({"action": "jump"})
    assert (info["pose"]["x"], info["pose"]["y"]) == (0.0, 0.0)
    assert info["clock"] == pytest.approx(0.6) and info["eye_rise"] == 0.0  # landed


def test_a_jump_in_a_move_raises_the_eye_and_jump_at_must_lie_in_the_move():
    env = make(nav_task(goal=(0.0, 500.0)), view_size=32)
    # jump 1.7 s into a 2 s move: 0.3 s after take-off, the middle of a 0.6 s jump
    a = {"action": "move", "dir": "forward", "seconds": 2.0, "jump": True, "jump_at": 1.7}
    obs, _, _, _, info = env.step(a)
    assert info["eye_rise"] == pytest.approx(0.5) and info["jump_height"] == 0.5
    assert info["pose"]["y"] == pytest.approx(2.8)
    flat = make(nav_task(goal=(0.0, 500.0)), view_size=32)
    obs2, *_ = flat.step({"action": "move", "dir": "forward", "seconds": 2.0})
    assert not np.array_equal(obs["view"], obs2["view"])  # the view from 2.1 m, not 1.6 m
    _, _, _, _, info = env.step({**a, "seconds": 1.0, "jump_at": 1.5})
    assert not info["action_valid"] and "jump_at=1.5" in info["invalid_action"]


def test_on_the_ground_a_bench_stops_the_walker_and_a_jump_clears_it(tiny_city):
    from urban_gym.world.features import StreetObject

    bench = StreetObject(0, "n1", "bench", (0.0, 2.0))
    c = tiny_city
    city = type(c)(c.name, c.frame, c.buildings, c.pois, [bench], c.areas, c.network, c.meta)
    air = WalkGeometry.for_city(city)
    ground = low_obstacles(city, air)
    w = WalkerState(0.0, 0.0, 0.0)
    walk = simulate_move(ground, w, "forward", 1.4, 2.0)
    # the bench's square reaches down to y = 1.6; the walker's 0.3 m disc stops at 1.3
    assert walk.hit_wall and walk.state.y == pytest.approx(1.3, abs=0.01)
    hop = simulate_move(ground, w, "forward", 3.0, 1.0, jump_at=0.3, air=air)
    # in the air from 0.3 s to 0.9 s, i.e. y 0.9..2.7 m: over the bench (1.6..2.4 m)
    assert not hop.hit_wall and hop.state.y == pytest.approx(3.0)


def test_map_zoom_above_one_moves_farther_and_below_one_closer():
    env = make(nav_task())
    env.step({"action": "open_map"})
    env.step({"action": "map_zoom", "factor": 2.0})
    assert env.map.mpp == pytest.approx(4.0)  # 2 m/px at opening, x 2: farther
    env.step({"action": "map_zoom", "factor": 0.25})
    assert env.map.mpp == pytest.approx(1.0)


def test_map_orbit_turns_and_tilts_the_map_camera_and_draws_it_obliquely():
    env = make(nav_task(), view_size=64)
    top, *_ = env.step({"action": "open_map"})
    obs, _, _, _, info = env.step({"action": "map_orbit", "yaw": 30, "pitch": 45})
    assert env.map.rotation == pytest.approx(30.0) and env.map.tilt == pytest.approx(45.0)
    assert "tilted 45 degrees" in obs["status"]
    env.step({"action": "map_orbit", "yaw": 0, "pitch": 90})
    assert env.map.tilt == 60.0  # at most 60 degrees from straight down
    env.step({"action": "map_orbit", "yaw": -30, "pitch": -90})
    assert env.map.tilt == 0.0 and env.map.rotation == pytest.approx(0.0)
    flat, *_ = env.step({"action": "map_orbit", "yaw": 0, "pitch": 0})
    tilted, *_ = env.step({"action": "map_orbit", "yaw": 0, "pitch": 40})
    assert np.array_equal(flat["view"], top["view"])
    assert not np.array_equal(tilted["view"], top["view"])
    # the centre of a tilted map is still the map's centre on the ground
    env.step({"action": "map_select", "x": 0.5, "y": 0.5})
    assert env.map.selected == pytest.approx(env.map.center, abs=1e-6)


def test_map_and_first_person_actions_only_in_their_mode():
    env = make(nav_task())
    for a in ({"action": "map_pan", "east": 10}, {"action": "close_map"}):
        _, _, _, _, info = env.step(a)
        assert "only in map mode" in info["invalid_action"]
    env.step({"action": "open_map"})
    _, _, _, _, info = env.step({"action": "jump"})
    assert "not possible in map mode" in info["invalid_action"]
    _, _, term, _, info = env.step({"action": "terminate"})  # terminate works in both
    assert term


# ---------------------------------------------------------------- the prompt
def test_the_prompt_shows_the_paper_schema_and_no_example_above_the_cap():
    text = protocol_for("citywalk").system_prompt(citywalk_action_set())
    for f in ("`dir`", "`seconds`", "`yaw_rate`", "`pitch_rate`", "`jump_at`", "`factor`"):
        assert f in text
    assert "`direction`" not in text and "`duration`" not in text
    assert "30.025" not in text and "Example reply" not in text
    assert '"action": "<name>"' in text  # the action's name under "action", not "name"
    assert '{"answer": "A|B|C|D", "reason": "..."}' in text


def test_the_paper_replies_parse_as_they_are():
    p, aset = protocol_for("citywalk"), citywalk_action_set()
    reply = {
        "observation": "a crossing ahead",
        "reason": "walk to it",
        "action": {"action": "move", "dir": "forward", "seconds": 2.0, "jump": False},
    }
    got = p.parse(json.dumps(reply), aset)
    assert got.action == aset.normalise({"action": "move", "dir": "forward", "seconds": 2.0})
    got = p.parse('{"answer": "C", "reason": "the sign says so"}', aset)
    assert got.action == {"action": "answer", "answer": "C", "reason": "the sign says so"}


# ---------------------------------------------------------------- episode rules
def test_terminate_ends_exploration_then_a_separate_turn_takes_the_answer():
    env = make(question_task())
    env.step({"action": "look", "yaw": 90})
    obs, r, term, trunc, info = env.step({"action": "terminate"})
    assert not term and not trunc and info["answer_turn"]
    assert '{"answer": "A|B|C|D"' in obs["notice"]
    _, _, _, _, info = env.step({"action": "look", "yaw": 90})  # exploration is over
    assert "exploration is over" in info["invalid_action"]
    _, r, term, _, info = env.step({"action": "answer", "answer": "B", "reason": "right"})
    assert term and info["termination"] == "answered" and info["is_success"] and r == 1.0


def test_a_question_at_the_turn_limit_still_gets_its_answer_turn():
    env = make(question_task(limits={"max_steps": 2}))
    env.step({"action": "jump"})
    obs, _, term, trunc, info = env.step({"action": "jump"})
    assert not (term or trunc) and info["answer_turn"] and "turn limit" in obs["notice"]
    _, _, term, _, info = env.step({"action": "answer", "answer": "A"})
    assert term and info["termination"] == "answered" and not info["is_success"]


def test_navigation_ends_on_arrival_without_terminate_and_at_150_steps():
    env = make(nav_task(goal=(0.0, 20.0)))
    _, _, term, _, info = env.step({"action": "sprint", "dir": "forward", "seconds": 2.0})
    # 6 m north: 14 m from the goal, inside its 15 m
    assert term and info["termination"] == "arrived" and info["is_success"]
    env = make(nav_task(goal=(0.0, 500.0)))
    assert env.max_steps == 150
    for _ in range(149):
        env.step({"action": "look", "yaw": 10})
    _, _, term, trunc, info = env.step({"action": "look", "yaw": 10})
    assert trunc and not term and info["termination"] == "step_limit"


def test_a_pedestrian_contact_is_reported_beside_success_and_never_fails(tiny_city):
    from urban_gym.families.citywalk.tasks import generate_tasks

    t = generate_tasks(tiny_city, TINY, per_type=1, variants_per_type=0, seed=0, types=["NP"])[0]
    assert "max_contacts" not in t.constraints
    env = make(t)
    p = env.crowd.people[0]
    x, y = (float(v) for v in p.position(2.0))
    env.walker = WalkerState(x, y, 0.0)
    for _ in range(6):
        env.step({"action": "jump"})
    assert env.record.contacts >= 1
    g = t.goal
    env.walker = WalkerState(g["x"], g["y"] - 1.0, 0.0)
    _, _, term, _, info = env.step({"action": "move", "dir": "forward", "seconds": 0.1})
    assert term and info["is_success"]
    assert info["metrics"]["pedestrian_collision"] == 1.0 and info["metrics"]["collision_rate"] > 0


def test_place_search_succeeds_at_any_suitable_place_within_15_m():
    t = nav_task(type="PTS", difficulty="l3", goal=(0.0, 200.0))
    t.goal["alternatives"] = [[0.0, 14.0, 7]]
    env = make(t, arrival="position")  # the radius alone (the view rule: test_urbanground_tasks)
    _, _, term, _, info = env.step({"action": "move", "dir": "forward", "seconds": 0.05})
    # 0.07 m north: 13.93 m from the alternative place, 200 m from the nearest-first goal
    assert term and info["is_success"] and info["metrics"]["distance_to_goal_m"] < 15.0


# ---------------------------------------------------------------- pedestrian network
@pytest.fixture(scope="module")
def ped_town(tmp_path_factory):
    """Roads with and without sidewalk tags, a separate sidewalk, a living street and a
    footbridge (layer 1) over the bare road without a shared node, all joined by a footway
    along their west ends; a bench and a building.
    """
    from tests.world.osm_fixture import OsmWriter

    w = OsmWriter()
    k, a, e, c, i = (w.node(-100, y) for y in (-40, 0, 8, 60, 120))
    w.way([a, w.node(100, 0)], {"highway": "residential", "name": "Bare", "width": "10"})
    w.way([e, w.node(100, 8)], {"highway": "footway", "footway": "sidewalk", "name": "Walk"})
    tagged = {"highway": "residential", "sidewalk": "both", "width": "10", "name": "Tagged"}
    w.way([c, w.node(100, 60)], tagged)
    w.way([i, w.node(100, 120)], {"highway": "living_street", "width": "6", "name": "Living"})
    g = w.node(50, -40)
    w.way([g, w.node(50, 40)], {"highway": "footway", "bridge": "yes", "layer": "1", "name": "Br"})
    w.way([k, a, e, c, i], {"highway": "footway", "name": "West"})
    w.way([k, g], {"highway": "footway", "name": "South"})
    w.node(0.0, 30.0, {"amenity": "bench"})
    w.rect(-90.0, 20.0, -70.0, 40.0, {"building": "yes"})
    return import_osm(w.write(tmp_path_factory.mktemp("ped") / "ped.osm"))


def _way(city, name):
    """The middle (x, y) of the named way and its unit normal (metres)."""
    (d,) = [d for _, _, d in city.network.edges(data=True) if d.get("name") == name]
    line = d["geometry"]
    m = line.interpolate(0.5, normalized=True)
    q = line.interpolate(0.5 * line.length + 1.0)
    tx, ty = q.x - m.x, q.y - m.y
    n = math.hypot(tx, ty)
    return (m.x, m.y), (-ty / n, tx / n), d


def test_only_pedestrian_ways_count_as_the_pedestrian_network(ped_town):
    net = PedestrianNetwork.for_city(ped_town)
    walk = WalkGeometry.for_city(ped_town)
    (x, y), _, _ = _way(ped_town, "Bare")
    assert walk.on_network(x, y) and not net.contains(x, y)  # a carriageway: off
    (x, y), _, _ = _way(ped_town, "Walk")
    assert net.contains(x, y)  # a sidewalk mapped as its own way
    (x, y), (nx, ny), _ = _way(ped_town, "Tagged")
    # a 10 m road with sidewalk=both: the outer 2 m on each side, not the carriageway
    assert net.contains(x + 4.5 * nx, y + 4.5 * ny) and net.contains(x - 4.5 * nx, y - 4.5 * ny)
    assert not net.contains(x, y) and not net.contains(x + 2.0 * nx, y + 2.0 * ny)
    (x, y), _, _ = _way(ped_town, "Living")
    assert net.contains(x, y)  # a living street
    (x, y), _, _ = _way(ped_town, "Br")
    assert net.contains(x, y)  # the footbridge


def test_elevation_tags_are_imported_and_a_bridge_does_not_join_the_road_below(ped_town):
    g = ped_town.network
    _, _, br = _way(ped_town, "Br")
    assert br["bridge"] and br["layer"] == 1 and not br["tunnel"]
    _, _, road = _way(ped_town, "Bare")
    assert road["layer"] == 0 and road["sidewalk"] == "" and not road["bridge"]
    assert _way(ped_town, "Tagged")[2]["sidewalk"] == "both"
    # the bridge crosses over the road without a shared node: no edge joins the two
    (bu, bv) = [(u, v) for u, v, d in g.edges(data=True) if d.get("name") == "Br"][0]
    (ru, rv) = [(u, v) for u, v, d in g.edges(data=True) if d.get("name") == "Bare"][0]
    assert not {bu, bv} & {ru, rv}
    assert road["geometry"].crosses(br["geometry"])
    assert Counter(o.kind for o in ped_town.objects)["bench"] == 1


# ---------------------------------------------------------------- the suite
@pytest.fixture(scope="module")
def suite():
    return load_suite(DEFAULT_SUITE_PATH)


def test_the_suite_has_the_paper_counts_as_far_as_helsinki_supports_them(suite):
    assert sum(PAPER_BASE_COUNTS.values()) == PAPER_BASE_TOTAL == 810
    assert set(PAPER_BASE_COUNTS) == set(TASK_TYPES)
    base = Counter(t.type for t in suite if "variant" not in t.meta)
    for code, n in PAPER_BASE_COUNTS.items():
        assert 0 < base[code] <= n, code
    assert sum(base.values()) >= 0.9 * PAPER_BASE_TOTAL


def test_condition_variants_are_the_base_tasks_under_other_conditions(suite):
    by_id = {t.id: t for t in suite}
    variants = [t for t in suite if "variant" in t.meta]
    assert {t.type for t in variants} == set(VARIANT_TYPES)
    conds = Counter(t.meta["variant"] for t in variants)
    assert set(conds) == {f"{a}-{b}" for a, b in VARIANT_CONDITIONS}
    assert len(set(conds.values())) == 1  # every base task under every condition
    for v in variants:
        b = by_id[v.meta["base_task"]]
        assert (v.start["x"], v.start["y"], v.start["heading"]) == (
            b.start["x"],
            b.start["y"],
            b.start["heading"],
        )
        assert v.goal == b.goal and v.options == b.options and v.answer == b.answer
        tod, weather = v.meta["variant"].split("-")
        assert v.constraints["conditions"]["time_of_day"] == tod
        assert v.constraints["conditions"]["weather"] == weather


def test_short_and_instruction_navigation_fall_in_4_equal_count_distance_bins(suite):
    for code in DISTANCE_BIN_TYPES:
        base = [t for t in suite if t.type == code and "variant" not in t.meta]
        sizes = Counter(t.meta["distance_bin"] for t in base)
        assert sorted(sizes) == [1, 2, 3, 4] and max(sizes.values()) - min(sizes.values()) <= 1
        # bins are ordered by the straight-line start-to-goal distance
        top = [
            max(t.meta["crow_m"] for t in base if t.meta["distance_bin"] == b) for b in (1, 2, 3)
        ]
        low = [
            min(t.meta["crow_m"] for t in base if t.meta["distance_bin"] == b) for b in (2, 3, 4)
        ]
        assert all(x <= y for x, y in zip(top, low))
        for t in base:
            crow = math.dist((t.start["x"], t.start["y"]), (t.goal["x"], t.goal["y"]))
            assert t.meta["crow_m"] == pytest.approx(crow, abs=0.06)


def test_place_search_tasks_list_every_suitable_place_in_reach(suite):
    pts = [t for t in suite if t.type in ("PTS", "III")]
    assert pts and any(t.goal.get("alternatives") for t in pts)
    for t in pts:
        for x, y, _ in t.goal.get("alternatives", []):
            assert math.dist((x, y), (t.start["x"], t.start["y"])) > 30.0
