"""UrbanGym/CityWalk-v0: the env contract, hand-checkable steps, bad input."""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import urban_gym  # noqa: F401  (registers the ids)
from urban_gym.families.citywalk.actions import JUMP_DURATION, LOOK_DURATION
from urban_gym.families.citywalk.env import CityWalkEnv, citywalk_action_table
from urban_gym.families.citywalk.tasks import generate_tasks
from urban_gym.tasks.spec import TaskError, TaskSpec

TINY = "procedural:seed=3,blocks=2x2"


def _first_person_available() -> bool:
    try:
        from urban_gym.render import FirstPersonRenderer  # noqa: F401
    except ImportError:
        return False
    return True


needs_view = pytest.mark.skipif(
    not _first_person_available(), reason="urban_gym.render.FirstPersonRenderer not landed yet"
)


@pytest.fixture(scope="module")
def tiny_tasks(tiny_city):
    return generate_tasks(tiny_city, TINY, per_type=2, variants_per_type=1, seed=0)


def nav_task(x=0.0, y=0.0, heading=0.0, goal=(0.0, 53.0), **extra) -> TaskSpec:
    """A navigation task on the tiny city; (0, 0) is a crossing 11 m from any building."""
    d = dict(
        id="hand-nav",
        family="citywalk",
        type="SGN",
        difficulty="l2",
        city=TINY,
        instruction="Walk north to the next crossing and terminate.",
        start={"x": x, "y": y, "heading": heading, "pitch": 0.0, "clock": 36000},
        goal={"x": goal[0], "y": goal[1], "radius": 15.0, "show_on_map": True},
        limits={"max_steps": 150},
        meta={"shortest_m": 53.0},
    )
    d.update(extra)
    return TaskSpec(**d)


def make(tasks, **kw) -> CityWalkEnv:
    env = CityWalkEnv(tasks=list(tasks), view_size=None, **kw)
    env.reset(seed=0)
    return env


def move(direction="forward", duration=1.0, **kw):
    return {"action": "move", "dir": direction, "seconds": duration, **kw}


# ---------------------------------------------------------------- hand-checkable
def test_two_second_walk_north_moves_2_8_m():
    env = make([nav_task()])
    _, _, _, _, info = env.step(move("forward", 2.0))
    assert info["pose"]["x"] == pytest.approx(0.0, abs=1e-9)
    assert info["pose"]["y"] == pytest.approx(2.8)
    assert info["clock"] == pytest.approx(2.0)
    # on the street's centre line: a carriageway, off the *pedestrian* network
    assert not info["on_network"] and not info["hit_wall"]


def test_walking_into_a_wall_stops_at_it():
    # (0, -53) lies on a 16 m street; the west block's buildings start at x = -8
    env = make([nav_task(0.0, -53.0, 270.0)])
    env.step({"action": "sprint", "dir": "forward", "seconds": 2.0})
    obs, _, _, _, info = env.step({"action": "sprint", "dir": "forward", "seconds": 2.0})
    assert info["hit_wall"] and "bumped into a wall" in obs["notice"]
    assert info["pose"]["x"] == pytest.approx(-7.7, abs=1e-4)
    _, _, _, _, info = env.step({"action": "sprint", "direction": "forward", "duration": 1.0})
    assert info["pose"]["x"] == pytest.approx(-7.7, abs=1e-4)
    assert info["pose"]["y"] == pytest.approx(-53.0, abs=1e-9)


def test_clock_advances_by_action_durations_only():
    env = make([nav_task()])
    env.step(move("forward", 1.5))
    env.step({"action": "look", "yaw": 30})
    env.step({"action": "jump"})
    env.step({"action": "open_map"})
    env.step({"action": "map_zoom", "factor": 2})
    env.step({"action": "close_map"})
    _, _, _, _, info = env.step({"action": "move", "direction": "sideways", "duration": 1})
    assert not info["action_valid"]
    assert info["clock"] == pytest.approx(1.5 + LOOK_DURATION + JUMP_DURATION)
    assert info["clock_of_day"] == pytest.approx(36000 + 1.5 + LOOK_DURATION + JUMP_DURATION)


def test_duration_above_two_seconds_is_clamped_and_reported():
    env = make([nav_task()])
    _, _, _, _, info = env.step(move("forward", 5.0))
    assert info["clamped"] == {"duration": 5.0, "to": 2.0}
    assert info["pose"]["y"] == pytest.approx(2.8)
    assert info["clock"] == pytest.approx(2.0)


def test_look_turns_and_sets_pitch_then_moves_along_the_new_heading():
    env = make([nav_task()])
    env.step({"action": "look", "yaw": 90, "pitch": 20})
    _, _, _, _, info = env.step(move("forward", 1.0))
    assert info["pose"]["heading"] == pytest.approx(90.0)
    assert info["pitch"] == pytest.approx(20.0)
    assert (info["pose"]["x"], info["pose"]["y"]) == pytest.approx((1.4, 0.0))


def test_crossing_a_closure_is_counted_and_breaks_success():
    closure = {
        "id": "c0",
        "points": [[-8.0, 5.0], [8.0, 5.0]],
        "label": "Test street",
        "closed_edges": [],
        "trigger": None,
    }
    env = make([nav_task(goal=(0.0, 20.0), constraints={"closures": [closure]})])
    _, _, _, _, info = env.step(move("forward", 2.0))  # y = 2.8: short of the line
    assert info["closure_crossings"] == 0
    # y = 5.6: across, and 14.4 m from the goal: arrived without terminate, but failed
    _, r, term, _, info = env.step(move("forward", 2.0))
    assert info["closure_crossings"] == 1
    assert term and info["termination"] == "arrived"
    assert info["metrics"]["closure_compliance"] == 0.0
    assert info["metrics"]["success"] == 0.0 and not info["is_success"]


def test_a_dynamic_closure_appears_with_a_one_time_notice():
    closure = {
        "id": "c0",
        "points": [[-8.0, 30.0], [8.0, 30.0]],
        "label": "Test street",
        "closed_edges": [],
        "trigger": [0.0, 30.0, 25.0],
    }
    env = make([nav_task(constraints={"closures": [closure]}, type="DCR", difficulty="l5")])
    obs, _, _, _, _ = env.step(move("forward", 1.0))  # y = 1.4: 28.6 m away
    assert "NOTICE" not in obs["notice"] and env.closure_active == [False]
    obs, _, _, _, _ = env.step({"action": "sprint", "dir": "forward", "seconds": 2.0})
    assert obs["notice"].startswith("NOTICE: a way ahead has just been closed")
    # the closure as a chain of waypoints: (-8, 30) -> (8, 30) is 16 m due east
    assert "Closed segment 1 (2 waypoints;" in obs["notice"]
    assert "waypoint 2 16 m east of waypoint 1" in obs["notice"]
    assert env.closures_appeared == [0]
    obs, _, _, _, _ = env.step(move("forward", 0.5))
    assert "NOTICE" not in obs["notice"] and env.closure_active == [True]
    assert env.closures_appeared == []


def test_pedestrian_contact_is_counted_in_the_episode(tiny_tasks):
    np_tasks = [t for t in tiny_tasks if t.type == "NP"]
    env = make(np_tasks[:1])
    assert env.crowd is not None and len(env.crowd) >= 20
    # stand still on a person's route until they walk into us
    p = env.crowd.people[0]
    x, y = (float(v) for v in p.position(4.0))
    env.walker = type(env.walker)(x, y, 0.0)
    total = 0
    for _ in range(12):
        _, _, _, _, info = env.step({"action": "jump"})
        total = info["pedestrian_contacts"]
    assert total >= 1


def test_multi_stop_progress_and_on_time(tiny_tasks):
    t = next(t for t in tiny_tasks if t.type == "TWS")
    env = make([t])
    n = len(t.goal["stops"])
    for i, stop in enumerate(t.goal["stops"]):
        env.walker = type(env.walker)(stop["x"], stop["y"] - 1.0, 0.0)
        obs, r, term, _, info = env.step(move("forward", 0.5))
        assert info["stops_reached"] == i + 1 and r >= 0.5
        assert term == (i == n - 1)  # the last stop ends the episode without terminate
    assert info["termination"] == "arrived"
    assert info["metrics"]["fraction_reached"] == 1.0 and info["metrics"]["on_time_rate"] == 1.0
    assert info["is_success"]


def test_schedule_status_counts_minutes_left_then_overdue(tiny_tasks):
    t = next(t for t in tiny_tasks if t.type == "TWS")
    env = make([t])
    first = t.goal["stops"][0]
    start = float(t.start["clock"])
    left = int((first["deadline"] - start) // 60)  # whole minutes before the first deadline
    assert f"{left} minutes left" in env._status()
    env.clock.advance(first["deadline"] - start + 61.0)  # 1 min 1 s past the deadline
    assert "OVERDUE by 2 minutes" in env._status()
    p = env.stops_progress()
    assert (p.next, p.minutes_left, p.minutes_overdue, p.completed) == (0, None, 2, 0)


def test_question_answer_ends_the_episode(tiny_tasks):
    t = next(t for t in tiny_tasks if t.type == "OU")
    env = make([t])
    right = "ABCD"[list(t.options).index(t.answer)]
    obs, _, term, _, info = env.step({"action": "terminate"})
    assert not term and info["answer_turn"] and '"answer"' in obs["notice"]
    _, r, term, _, info = env.step({"action": "answer", "answer": right, "reason": "seen"})
    assert term and info["termination"] == "answered" and info["is_success"] and r == 1.0
    env.reset(seed=0)
    env.step({"action": "terminate"})
    wrong = next(L for L in "ABCD" if L != right)
    _, r, term, _, info = env.step({"action": "answer", "option": wrong.lower()})
    assert term and not info["is_success"] and info["metrics"]["answer_accuracy"] == 0.0
    env.reset(seed=0)
    env.step({"action": "terminate"})
    _, _, term, _, info = env.step({"action": "answer", "answer": t.answer})  # option text
    assert info["is_success"]


# ---------------------------------------------------------------- map mode
def test_map_actions_only_in_map_mode_and_back():
    env = make([nav_task()])
    table = citywalk_action_table()
    i_move, i_open, i_close = 0, 13, 14
    assert table[i_open]["action"] == "open_map" and table[i_close]["action"] == "close_map"
    obs, _, _, _, info = env.step({"action": "map_pan", "east": 10})
    assert not info["action_valid"] and "only in map mode" in info["invalid_action"]
    assert "Invalid action" in obs["notice"]
    obs, _, _, _, info = env.step(i_open)
    assert info["map_mode"] and obs["action_mask"][i_move] == 0 and obs["action_mask"][i_close] == 1
    _, _, _, _, info = env.step(move())
    assert not info["action_valid"] and "map mode" in info["invalid_action"]
    env.step({"action": "map_pan", "east": 100, "north": -50})
    assert env.map.center == pytest.approx((100.0, -50.0))
    env.step({"action": "map_zoom", "factor": 0.25})  # below 1: closer
    assert env.map.mpp == pytest.approx(0.5)
    env.step({"action": "map_orbit", "yaw": 90})
    assert env.map.rotation == pytest.approx(90.0)
    env.step({"action": "map_select", "x": 0.5, "y": 0.5})
    assert env.map.selected == pytest.approx((100.0, -50.0))  # the centre of the map
    assert info["pose"]["y"] == 0.0  # nothing moved
    _, _, _, _, info = env.step(i_close)
    assert not info["map_mode"]


def test_the_map_is_drawn_again_only_when_something_on_it_changed(monkeypatch):
    from urban_gym.render.map import MapRenderer

    env = CityWalkEnv(tasks=[nav_task()], view_size=64)
    env.reset(seed=0)
    drawn = []
    real = MapRenderer.render
    monkeypatch.setattr(
        MapRenderer, "render", lambda self, *a, **k: drawn.append(1) or real(self, *a, **k)
    )
    first, *_ = env.step({"action": "open_map"})
    again, _, _, _, info = env.step(move())  # invalid in map mode: nothing moved
    assert not info["action_valid"] and len(drawn) == 1
    np.testing.assert_array_equal(again["view"], first["view"])
    again["view"][:] = 0  # the agent's copy, not the kept image
    zoomed, *_ = env.step({"action": "map_zoom", "factor": 0.5})  # the map state, in place
    assert len(drawn) == 2 and not np.array_equal(zoomed["view"], first["view"])
    back, *_ = env.step({"action": "map_zoom", "factor": 2})
    assert len(drawn) == 3
    np.testing.assert_array_equal(back["view"], first["view"])


def test_map_markers_show_destinations_and_active_closures_never_a_route():
    closure = {
        "id": "c0",
        "points": [[-8.0, 30.0], [8.0, 30.0]],
        "closed_edges": [],
        "trigger": [0.0, 30.0, 10.0],
    }
    env = make([nav_task(constraints={"closures": [closure]})])
    m = env.map_markers()
    assert list(m.destinations) == [(0.0, 53.0)] and list(m.closures) == []
    assert m.trajectory == () and m.goal is None
    env.closure_active = [True]
    assert len(env.map_markers().closures) == 1


def test_map_markers_are_made_again_only_when_what_they_show_changed():
    env = make([nav_task()])
    env.step({"action": "open_map"})
    m = env.map_markers()
    env.step({"action": "map_zoom", "factor": 0.5})
    assert env.map_markers() is m  # a zoom moves nothing the markers show
    env.step({"action": "map_select", "x": 0.25, "y": 0.5})
    marked = env.map_markers()
    assert marked is not m and marked.selected == env.map.selected is not None
    env.step({"action": "close_map"})
    env.step(move("forward", 1.0))
    moved = env.map_markers()
    assert moved.agent[:2] == pytest.approx((0.0, 1.4)) and moved.selected is None
    env.reset(seed=0)  # a new episode at the same start: its own markers
    again = env.map_markers()
    assert again is not m and again.agent == m.agent


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "action, fragment",
    [
        ({"action": "move", "direction": "up", "duration": 1}, "dir="),
        ({"action": "move", "direction": "forward", "duration": "soon"}, "not a number"),
        ({"action": "move", "direction": "forward", "duration": 0.01}, "outside"),
        ({"action": "move", "direction": "forward", "duration": 1, "yaw_rate": 500}, "yaw_rate"),
        ({"action": "look", "pitch": 120}, "pitch"),
        ({"action": "fly"}, "unknown action"),
        ({"action": "answer", "answer": "B"}, "asks no question"),
        ({"action": "close_map"}, "only in map mode"),
        ("not json at all", "unknown action"),
        (42, "outside"),
        ([1, 2], "must be an object"),
    ],
)
def test_bad_actions_are_invalid_steps(action, fragment):
    env = make([nav_task()])
    obs, r, term, trunc, info = env.step(action)
    assert not info["action_valid"] and fragment in info["invalid_action"]
    assert r == pytest.approx(-0.01) and not term and not trunc
    assert info["pose"] == {"x": 0.0, "y": 0.0, "heading": 0.0} and info["pitch"] == 0.0
    assert info["clock"] == 0.0 and info["invalid_actions"] == 1
    assert env.steps == 1


def test_unknown_answer_is_invalid(tiny_tasks):
    env = make([next(t for t in tiny_tasks if t.type == "VR")])
    _, _, term, _, info = env.step({"action": "answer", "answer": "A"})
    assert not term and "during exploration" in info["invalid_action"]
    env.step({"action": "terminate"})
    _, _, term, _, info = env.step({"action": "answer", "answer": "E"})
    assert not term and "not one of the options" in info["invalid_action"]


def test_step_limit_truncates():
    env = make([nav_task(limits={"max_steps": 3})])
    for _ in range(2):
        assert not env.step({"action": "jump"})[3]
    _, _, term, trunc, info = env.step({"action": "jump"})
    assert trunc and not term and info["termination"] == "step_limit"
    assert info["metrics"]["success"] == 0.0 and info["metrics"]["ended_closer"] == 0.0


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"constraints": {"closures": [{"points": [[0, 0]]}]}}, "closure 0"),
        ({"constraints": {"closures": [{"points": [[0, 0], [1, "x"]]}]}}, "closure 0"),
        ({"start": {"x": "a", "y": 0, "heading": 0}}, "start.x"),
        ({"goal": {"y": 3}}, "goal.x"),
        ({"type": "XYZ"}, "type='XYZ'"),
        ({"constraints": {"conditions": {"weather": "snow"}}}, "weather='snow'"),
    ],
)
def test_bad_tasks_fail_before_the_episode(change, fragment):
    with pytest.raises(TaskError, match=fragment.replace("[", r"\[")):
        CityWalkEnv(tasks=[nav_task().replace(**change)], view_size=None)


def test_bad_arguments_name_the_value(tmp_path):
    with pytest.raises(TaskError, match="view_size=3000"):
        CityWalkEnv(tasks=[nav_task()], view_size=3000)
    with pytest.raises(TaskError, match="no such suite"):
        CityWalkEnv(suite=tmp_path / "missing.jsonl", view_size=None)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(TaskError, match="line 1"):
        CityWalkEnv(suite=bad, view_size=None)
    with pytest.raises(TaskError, match="task_types"):
        CityWalkEnv(tasks=[nav_task()], task_types=["NOPE"], view_size=None)


# ---------------------------------------------------------------- contract
def test_check_env_passes_without_view(tiny_tasks):
    env = CityWalkEnv(tasks=tiny_tasks, view_size=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, skip_render_check=True)


def test_registered_no_view_env_on_the_default_suite():
    env = gym.make("UrbanGym/CityWalk-NoView-v0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert info["task"].city == "helsinki" and len(env.unwrapped.tasks) == 1818
    assert env.observation_space.contains(obs)
    env.close()


@needs_view
def test_check_env_passes_with_the_view(tiny_tasks):
    env = gym.make(
        "UrbanGym/CityWalk-v0",
        tasks=tiny_tasks,
        view_size=64,
        render_mode="rgb_array",
        render_size=96,
    ).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env)
    obs, _ = env.reset(seed=1)
    assert obs["view"].shape == (64, 64, 3) and obs["view"].dtype == np.uint8
    frame = env.render()
    assert frame.shape == (96, 3 * 96, 3)
    obs, *_ = env.step({"action": "open_map"})
    assert obs["view"].shape == (64, 64, 3)


@needs_view
def test_non_square_view_is_the_middle_rows_of_the_square_one():
    # the horizontal field of view fixes the focal length by the width, so a 96x64 view
    # shows rows 16..80 of the 96x96 view from the same pose
    wide = CityWalkEnv(tasks=[nav_task()], view_size=(96, 64))
    square = CityWalkEnv(tasks=[nav_task()], view_size=96)
    assert wide.observation_space["view"].shape == (64, 96, 3)
    obs, _ = wide.reset(seed=0)
    ref, _ = square.reset(seed=0)
    assert obs["view"].shape == (64, 96, 3) and wide.observation_space.contains(obs)
    np.testing.assert_array_equal(obs["view"], ref["view"][16:80])
    obs, *_ = wide.step({"action": "open_map"})
    assert obs["view"].shape == (64, 96, 3)
    wide.step({"action": "map_select", "x": 1.0, "y": 0.5})
    # the middle of the right edge of the map: half the width (48 px) east of its centre
    half_w = 48 * wide.map.mpp
    assert wide.map.selected == pytest.approx((wide.map.center[0] + half_w, wide.map.center[1]))
    for bad in ((96,), (0, 64), (96, 3000), 2.5, (96.0, 64)):
        with pytest.raises(TaskError, match="view_size="):
            CityWalkEnv(tasks=[nav_task()], view_size=bad)


def _rollout(env, seed, n=60):
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    out = [(obs["instruction"], info["pose"])]
    for _ in range(n):
        a = int(rng.choice(np.flatnonzero(obs["action_mask"][:21])))
        obs, r, term, trunc, info = env.step(a)
        out.append((obs["status"], obs["notice"], r, info["pose"], info["pedestrian_contacts"]))
        if term or trunc:
            obs, info = env.reset()
    return out


def test_determinism_by_seed(tiny_tasks):
    a = CityWalkEnv(tasks=tiny_tasks, view_size=None)
    b = CityWalkEnv(tasks=tiny_tasks, view_size=None)
    assert _rollout(a, 5) == _rollout(b, 5)
    assert _rollout(a, 5) != _rollout(a, 6)


def test_pickle_round_trip_mid_episode(tiny_tasks):
    env = CityWalkEnv(tasks=[t for t in tiny_tasks if t.type == "NP"], view_size=None)
    env.reset(seed=2)
    for _ in range(5):
        env.step(move("forward", 1.0, yaw_rate=20))
    clone = pickle.loads(pickle.dumps(env))
    for a in (move("left", 0.7), {"action": "jump"}, {"action": "look", "yaw": -45}, move()):
        r1 = env.step(a)
        r2 = clone.step(a)
        assert (
            r1[4]["pose"] == r2[4]["pose"] and r1[1] == r2[1] and r1[0]["status"] == r2[0]["status"]
        )


def test_info_keeps_privileged_state_out_of_the_observation():
    env = make([nav_task()])
    obs, _, _, _, info = env.step(move())
    assert set(obs) == {"instruction", "status", "notice", "action_mask"}
    assert info["distance_to_goal_m"] == pytest.approx(53.0 - 1.4, abs=0.01)
    assert "1.4" not in obs["status"] and "0.0" not in obs["status"]


def test_make_vec_sync_and_async(tiny_tasks):
    # Gymnasium 1.x reads Text observations from shared memory as padding, so the async
    # vector env is used without shared memory.
    for mode, extra in (("sync", {}), ("async", {"shared_memory": False})):
        v = gym.make_vec(
            "UrbanGym/CityWalk-NoView-v0",
            num_envs=2,
            vectorization_mode=mode,
            vector_kwargs=extra,
            tasks=tiny_tasks[:4],
        )
        try:
            obs, _ = v.reset(seed=0)
            obs, r, term, trunc, _ = v.step(np.array([0, 5]))
            assert [s.split(" | ")[1] for s in obs["status"]] == ["step 1/150", "step 1/150"]
            assert obs["action_mask"].shape == (2, 26)
        finally:
            v.close()


def test_the_distance_to_the_goal_is_walked_again_only_after_a_move(monkeypatch):
    """A step that does not move the walker (a look) keeps the walking distance it had;
    a move computes it again -- and both equal the distance computed from scratch."""
    import urban_gym.families.citywalk.env as cw

    env = make([nav_task()])
    calls = []
    real = cw.walking_distance

    def counted(*a):
        calls.append(a[-2:])
        return real(*a)

    monkeypatch.setattr(cw, "walking_distance", counted)
    _, _, _, _, before = env.step({"action": "look", "yaw": 0.0, "pitch": 10.0})
    assert calls == []  # same place as after reset: not walked again
    _, _, _, _, after = env.step(move("forward", 2.0))
    assert len(calls) == 1 and calls[0] == pytest.approx((0.0, 2.8))
    assert after["distance_to_goal_m"] == pytest.approx(before["distance_to_goal_m"] - 2.8)
    fld = env._fields[hash(env.current_target())]
    scratch = real(env.city, env.geometry, env.router, fld, env.walker.x, env.walker.y)
    assert after["distance_to_goal_m"] == scratch


@needs_view
def test_an_episodes_first_view_is_drawn_once_for_every_env_of_the_process(monkeypatch):
    """Tasks repeat, and so do their first views: an episode's first view that any env of
    the process drew before (same city, view settings and start) is the kept image -- equal
    to a fresh draw -- not a new cast; other view settings and later steps draw."""
    import urban_gym.families.citywalk.env as cw
    from urban_gym.render import Conditions, FirstPersonRenderer

    monkeypatch.setattr(cw, "_START_VIEWS", type(cw._START_VIEWS)())
    task = nav_task(heading=30.0)
    drawn = []
    real = FirstPersonRenderer.render
    monkeypatch.setattr(
        FirstPersonRenderer, "render", lambda self, *a, **k: drawn.append(1) or real(self, *a, **k)
    )
    one = CityWalkEnv(tasks=[task], view_size=48)
    first, _ = one.reset(seed=0)
    two = CityWalkEnv(tasks=[task], view_size=48)
    kept, _ = two.reset(seed=1)
    assert len(drawn) == 1
    renderer = FirstPersonRenderer(one.city, 48, 48, 90.0)
    fresh = real(renderer, 0.0, 0.0, 30.0, 0.0, conditions=Conditions(), pedestrians=[]).rgb
    np.testing.assert_array_equal(first["view"], fresh)
    np.testing.assert_array_equal(kept["view"], fresh)
    kept["view"][:] = 0  # the agent's copy, not the kept image
    again, _ = one.reset(seed=5)
    np.testing.assert_array_equal(again["view"], fresh)
    CityWalkEnv(tasks=[task], view_size=48, fov=60.0).reset(seed=0)
    assert len(drawn) == 2  # another field of view: its own draw
    two.step({"action": "look", "yaw": 30.0, "pitch": 0.0})
    assert len(drawn) == 3
