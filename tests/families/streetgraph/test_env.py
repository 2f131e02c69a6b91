"""UrbanGym/StreetGraph-v0: worked examples on the hand-written fixture, contracts
(check_env, determinism, pickling, vector envs), oracle on the default suites."""

from __future__ import annotations

import math
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import urban_gym  # noqa: F401  (registers the ids)
from tests.families.streetgraph.streetgraph_fixture import node_lines, write_fixture
from urban_gym.baselines.oracles import make_oracle
from urban_gym.baselines.random_agent import RandomAgent
from urban_gym.families.streetgraph.env import StreetGraphEnv
from urban_gym.families.streetgraph.oracle import StreetGraphOracle
from urban_gym.families.streetgraph.tasks import DEFAULT_SUITES, touchdown_graph_spec
from urban_gym.tasks.spec import TaskError, TaskSpec


def _write_images(directory, ids, width=256):
    """Equirect PNGs whose red channel encodes the column (0..255 across the width)."""
    import cv2

    directory.mkdir(parents=True, exist_ok=True)
    img = np.zeros((width // 2, width, 3), np.uint8)
    img[:, :, 2] = np.arange(width, dtype=np.uint8)[None, :]  # BGR: red channel
    img[:, :, 1] = 40
    for pid in ids:
        cv2.imwrite(str(directory / f"{pid}.png"), img)
    return directory


@pytest.fixture()
def fixture_dir(tmp_path):
    # panorama X faces 30 degrees (its centre column looks north-north-east)
    nodes = [ln.replace("X,0,", "X,30,") if ln.startswith("X,") else ln for ln in node_lines()]
    d = write_fixture(tmp_path / "td", nodes=nodes)
    _write_images(d / "images", [ln.split(",")[0] for ln in nodes])
    return d


def od_task(d, goal, start="X", images=False):
    spec = {"source": "touchdown", "path": str(d), "images": str(d / "images") if images else None}
    return TaskSpec(
        id=f"od-{goal[0]}",
        family="streetgraph",
        type="origin_destination",
        difficulty="easy",
        city="fixture",
        instruction=f"Go to {goal[0]}.",
        start={"node": start, "heading": 0.0, "graph": spec},
        goal={"name": goal[0], "nodes": list(goal)},
    )


def route_task(d, route, images=False):
    spec = touchdown_graph_spec(d, d / "images" if images else None)
    return TaskSpec(
        id="route",
        family="streetgraph",
        type="instruction",
        difficulty="n/a",
        city="fixture",
        instruction="Walk east along the street and stop at the end.",
        start={"node": route[0], "heading": 90.0, "graph": spec},
        goal={"node": route[-1], "route": list(route)},
    )


def test_od_worked_example_spl_and_decision_accuracy(fixture_dir):
    env = StreetGraphEnv(tasks=[od_task(fixture_dir, ["c4"])], observation="symbolic")
    obs, info = env.reset(seed=0)
    # options at X by bearing: bend (26.57), straight (90), dip (104.04)
    np.testing.assert_allclose(obs["bearings"], [26.565, 90.0, 104.036], atol=1e-3)
    assert obs["action_mask"].tolist() == [1, 1, 1, 0]
    assert info["distance_to_goal_m"] == pytest.approx(40.0, abs=0.05)
    obs, r, term, trunc, info = env.step(1)  # straight to Y: still 40 m to go
    assert (
        info["node"] == "Y"
        and not term
        and info["distance_to_goal_m"] == pytest.approx(40.0, abs=0.05)
    )
    assert obs["heading"][0] == pytest.approx(90.0, abs=1e-3)
    np.testing.assert_allclose(obs["bearings"], [255.964, 270.0, 333.435], atol=1e-3)
    obs, r, term, trunc, info = env.step({"action": "go", "option": 2})  # the bend back
    assert term and not trunc and info["termination"] == "arrived" and info["node"] == "c4"
    m = info["metrics"]
    assert m["success"] == 1.0 and info["is_success"]
    assert m["distance_m"] == pytest.approx(80.0, abs=0.1)
    assert m["shortest_m"] == pytest.approx(40.0, abs=0.05)
    assert m["spl"] == pytest.approx(0.5, abs=1e-3)  # 40 / max(80, 40)
    assert m["decision_accuracy"] == 0.5  # first decision did not reduce 40 m, second did
    assert m["decisions"] == 2 and m["transitions"] == 8  # 4 hops + 4 hops (stops at c4)
    assert r == pytest.approx(1.0 + 0.001 * 40.0, abs=1e-4)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)


def test_instruction_worked_example(fixture_dir):
    env = StreetGraphEnv(
        tasks=[route_task(fixture_dir, ["X", "a1", "a2", "a3", "Y"])], observation="symbolic"
    )
    obs, info = env.reset(seed=0)
    # the route graph is not pruned: Y (with its spur) has 4 options, so D = 4; stop is last
    assert obs["action_mask"].tolist() == [1, 1, 1, 0, 1]
    assert obs["heading"][0] == 90.0
    env.step(1)  # one link east (link travel): a1
    assert env.graph.ids[env.node] == "a1"
    obs, *_ = env.step(0)  # a2 (options at a1: east 90, west 270)
    # at a2 the unpruned spur p1 is an option too: north 0, east 90, west 270
    np.testing.assert_allclose(obs["bearings"][:3], [0.0, 90.0, 270.0], atol=1e-3)
    obs, *_ = env.step(1)  # a3
    obs, r, term, trunc, info = env.step("stop")
    assert term and info["termination"] == "arrived"  # a3 is next to the goal Y
    m = info["metrics"]
    assert m["task_completion"] == 1.0 and m["success"] == 1.0 and m["spd"] == 1
    # DTW: X,a1,a2,a3 vs X,a1,a2,a3,Y -> Y matched to a3: 10 m; nDTW = exp(-10 / (5 * 25))
    assert m["ndtw"] == pytest.approx(math.exp(-10 / 125), abs=1e-3)
    assert m["sdtw"] == pytest.approx(m["ndtw"])
    env.reset(seed=0)
    _, _, term, _, info = env.step("stop")
    assert info["termination"] == "terminated_by_agent" and info["metrics"]["success"] == 0.0
    assert info["metrics"]["spd"] == 4


def test_oracle_follows_route(fixture_dir):
    env = StreetGraphEnv(
        tasks=[route_task(fixture_dir, ["X", "c1", "c2", "c3", "c4", "c5"])], observation="symbolic"
    )
    oracle = StreetGraphOracle()
    env.reset(seed=0)
    oracle.reset(env)
    done, n = False, 0
    while not done:
        obs, r, term, trunc, info = env.step(oracle.act(env))
        done, n = term or trunc, n + 1
    assert n == 6 and info["metrics"]["ndtw"] == pytest.approx(1.0) and info["is_success"]


def test_invalid_actions_are_steps_not_errors(fixture_dir):
    env = StreetGraphEnv(
        tasks=[od_task(fixture_dir, ["c4"])], observation="symbolic", max_decisions=4
    )
    env.reset(seed=0)
    for bad, text in (
        (3, "stop is not available"),
        ("fly", "unknown action 'fly'"),
        ({"action": "go", "option": 7}, "outside [0, 2]"),
        (99, "outside the action table"),
    ):
        obs, r, term, trunc, info = env.step(bad)
        assert info["action_valid"] is False and text in info["invalid_action"], info
        assert r == pytest.approx(-0.01) and info["node"] == "X"
    assert trunc and info["termination"] == "decision_limit" and info["invalid_actions"] == 4
    env.reset(seed=0)
    # a string number and a synonym are fine
    _, _, _, _, info = env.step({"action": "take", "index": "1"})
    assert info["action_valid"] and info["node"] == "Y"


def test_option_that_does_not_exist_here(fixture_dir):
    env = StreetGraphEnv(tasks=[route_task(fixture_dir, ["X", "a1", "a2"])], observation="symbolic")
    env.reset(seed=0)
    env.step(1)  # at a1: two options
    _, _, _, _, info = env.step({"action": "go", "option": 2})
    assert "option 2 does not exist here; the options are 0..1" in info["invalid_action"]


def test_transition_limit_cuts_a_street(fixture_dir):
    env = StreetGraphEnv(
        tasks=[od_task(fixture_dir, ["g2"])], observation="symbolic", max_transitions=6
    )
    env.reset(seed=0)
    _, _, term, trunc, info = env.step(0)  # the 8-hop bend, cut after 6 hops at c6
    assert trunc and not term and info["termination"] == "transition_limit"
    assert info["node"] == "c6" and info["metrics"]["transitions"] == 6
    assert info["metrics"]["distance_m"] == pytest.approx(60.0, abs=0.1)


def test_bad_construction_arguments(fixture_dir):
    t = od_task(fixture_dir, ["c4"])
    with pytest.raises(ValueError, match="observation='x'"):
        StreetGraphEnv(tasks=[t], observation="x")
    with pytest.raises(ValueError, match="max_decisions=0"):
        StreetGraphEnv(tasks=[t], max_decisions=0)
    with pytest.raises(TaskError, match="start node 'nowhere'"):
        StreetGraphEnv(tasks=[t.replace(start={**t.start, "node": "nowhere"})])
    with pytest.raises(TaskError, match="is a goal node"):
        StreetGraphEnv(tasks=[od_task(fixture_dir, ["X"])])
    with pytest.raises(TaskError, match="no such suite"):
        StreetGraphEnv(suite="/nonexistent/suite.jsonl")
    with pytest.raises(ValueError, match="max_degree=2"):
        StreetGraphEnv(tasks=[t], max_degree=2)


def test_views_look_along_each_option(fixture_dir):
    env = StreetGraphEnv(tasks=[od_task(fixture_dir, ["c4"], images=True)], image_size=32)
    assert env.images
    obs, _ = env.reset(seed=0)
    views = obs["views"]
    assert views.shape == (3, 32, 32, 3) and views.dtype == np.uint8
    # X's panorama centre column faces 30 degrees; column of bearing b is
    # ((b - 30) / 360 + 0.5) * 256 and its red value is that column index
    for view, b in zip(views, obs["bearings"]):
        expected = ((b - 30.0) / 360.0 + 0.5) * 256 - 0.5
        assert view[16, 15:17, 0].mean() == pytest.approx(expected, abs=2.0)
    frame = StreetGraphEnv(
        tasks=[od_task(fixture_dir, ["c4"], images=True)], image_size=32, render_mode="rgb_array"
    )
    frame.reset(seed=0)
    img = frame.render()
    assert img.ndim == 3 and img.shape[2] == 3 and img.dtype == np.uint8


def test_corrupt_image_names_the_file(fixture_dir):
    (fixture_dir / "images" / "X.png").write_bytes(b"not a png")
    env = StreetGraphEnv(tasks=[od_task(fixture_dir, ["c4"], images=True)], image_size=16)
    with pytest.raises(ValueError, match=r"X\.png"):
        env.reset(seed=0)


@pytest.mark.parametrize("images", [False, True])
def test_check_env_warnings_as_errors(fixture_dir, images):
    if images:
        tasks = [
            od_task(fixture_dir, ["c4"], images=True).to_dict(),
            route_task(fixture_dir, ["X", "a1", "a2"], images=True).to_dict(),
        ]
        env = gym.make(
            "UrbanGym/StreetGraph-v0", tasks=tasks, image_size=24, render_mode="rgb_array"
        ).unwrapped
    else:
        env = gym.make("UrbanGym/StreetGraph-v0", observation="symbolic").unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, skip_render_check=not images)


def _rollout(env, seed, steps=60):
    agent = RandomAgent(env.action_space, seed=seed)
    obs, info = env.reset(seed=seed)
    out = [(obs, info["node"])]
    for _ in range(steps):
        obs, r, term, trunc, info = env.step(agent.act(obs))
        out.append((obs, info["node"], r, term, trunc))
        if term or trunc:
            obs, info = env.reset()
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x[1:] == y[1:]
        for k in x[0]:
            assert np.array_equal(x[0][k], y[0][k]) if k != "instruction" else x[0][k] == y[0][k]


def test_determinism_by_seed():
    e1 = gym.make("UrbanGym/StreetGraph-v0", observation="symbolic")
    e2 = gym.make("UrbanGym/StreetGraph-v0", observation="symbolic")
    for seed in (0, 1, 2):
        _same(_rollout(e1, seed), _rollout(e2, seed))
    ids = {e1.reset(seed=s)[1]["task"].id for s in range(5)}
    assert len(ids) > 1  # the seed picks the task


def test_pickle_round_trip_mid_episode():
    env = StreetGraphEnv(observation="symbolic")
    env.reset(seed=3)
    for _ in range(3):
        env.step(0)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.graph is not None and clone.node == env.node
    for a in (1, 0, 1, 2):
        o1, r1, t1, u1, i1 = env.step(a)
        o2, r2, t2, u2, i2 = clone.step(a)
        assert i1["node"] == i2["node"] and r1 == r2 and (t1, u1) == (t2, u2)
        assert np.array_equal(o1["bearings"], o2["bearings"])
        if t1 or u1:
            break


def test_vector_envs_sync_and_async():
    for mode, kw in (("sync", {}), ("async", {"shared_memory": False})):
        v = gym.make_vec(
            "UrbanGym/StreetGraph-v0",
            num_envs=2,
            vectorization_mode=mode,
            vector_kwargs=kw,
            observation="symbolic",
        )
        obs, _ = v.reset(seed=0)
        # Helsinki's largest intersection has 4 streets (5 before parallel links were merged)
        assert obs["bearings"].shape == (2, 4) and obs["instruction"][0].startswith("Go to ")
        obs, r, term, trunc, info = v.step(np.zeros(2, dtype=np.int64))
        assert r.shape == (2,)
        v.close()


@pytest.mark.parametrize("suite", sorted(DEFAULT_SUITES))
def test_oracle_solves_every_default_task(suite):
    env = StreetGraphEnv(suite=suite, observation="symbolic")
    oracle = make_oracle(env.reset(seed=0) and env)
    assert isinstance(oracle, StreetGraphOracle)
    for i, task in enumerate(env.tasks):
        env.reset(seed=i, options={"task_index": i})
        oracle.reset(env)
        done = False
        while not done:
            _, _, term, trunc, info = env.step(oracle.act(env))
            done = term or trunc
        assert info["is_success"], (task.id, info["termination"])
        assert info["metrics"]["spl"] == pytest.approx(1.0)
        assert info["metrics"]["decision_accuracy"] == 1.0
        assert info["metrics"]["distance_m"] == pytest.approx(task.meta["route_length_m"], abs=0.1)


def test_random_agent_scores_are_bounded():
    env = StreetGraphEnv(suite="helsinki", observation="symbolic")
    for i in range(5):
        agent = RandomAgent(env.action_space, seed=i)
        obs, _ = env.reset(seed=i)
        done = False
        while not done:
            obs, _, term, trunc, info = env.step(agent.act(obs))
            done = term or trunc
        m = info["metrics"]
        assert 0.0 <= m["spl"] <= m["success"] <= 1.0
        assert 0.0 <= m["decision_accuracy"] <= 1.0
        assert m["decisions"] <= 150 and m["transitions"] <= 2000


def test_views_rendered_from_a_city(tiny_city):
    from urban_gym.families.streetgraph.tasks import SuiteConfig, generate_od_tasks

    cfg = SuiteConfig("tiny", "procedural:seed=3,blocks=2x2", n=1, radius=(60.0, 100.0))
    tasks = generate_od_tasks(cfg)
    day = StreetGraphEnv(tasks=tasks, image_size=32)
    night = StreetGraphEnv(tasks=tasks, image_size=32, conditions={"time_of_day": "night"})
    assert day.images and day.pano_width == 256
    v_day = day.reset(seed=0)[0]["views"]
    v_night = night.reset(seed=0)[0]["views"]
    k = len(day.options)
    assert v_day.shape == (day.max_degree, 32, 32, 3)
    assert v_day[:k].std() > 5.0 and not v_day[k:].any()  # real pictures, zero padding
    assert v_night[:k].mean() < v_day[:k].mean()
    # each option's view is cached: a second observation of the node does not re-render
    assert len(day._views) == 1
    with pytest.raises(ValueError, match="conditions"):
        StreetGraphEnv(tasks=tasks, conditions={"season": "winter"})


def test_map_markers_never_reveal_the_destination():
    import gymnasium as gym

    env = gym.make("UrbanGym/StreetGraph-v0", observation="symbolic").unwrapped
    env.reset(seed=0)
    m = env.map_markers()
    assert m.goal is None and not m.destinations and m.start is None


def test_the_distance_cache_counts_its_bytes_without_walking_the_floats():
    # an entry holds the distances, the hops (instruction tasks) and the distances as a
    # list of floats: its size is the arrays' bytes plus 8 a float, and a pickled env
    # (the size function travels with the cache) comes back working
    env = StreetGraphEnv(observation="symbolic")
    env.reset(seed=0)
    d, hops, floats = env.goal_distances, env.goal_hops, env._goal_d
    assert floats == d.tolist()
    want = d.nbytes + (hops.nbytes if hops is not None else 0) + 8 * len(floats)
    assert env._dist_cache.nbytes == want
    back = pickle.loads(pickle.dumps(env))
    back.reset(seed=0)
    assert back._dist_cache.nbytes == want
