"""UrbanGym/PoseGraph360-v0 on the tiny procedural city, with real equirect frames read
from a capture folder (``tests/families/posegraph360/posegraph_frames.py``: the red channel of a frame
encodes the bearing each column looks along, so the view's centre pixel tells the camera
bearing).

Hand-checkable layout (see tests/families/posegraph360/test_world.py): the south spoke runs north
from the south junction (0, -106) to the centre (0, 0) in 36 frames 106/35 = 3.029 m
apart; at the centre the north, west and east spokes leave at bearings 0, 270 and 90.
"""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from tests.families.posegraph360.posegraph_frames import folder_graph, pixel_bearing
from urban_gym.baselines.random_agent import RandomAgent
from urban_gym.families.posegraph360 import tasks as T
from urban_gym.families.posegraph360.env import ANSWER_BASE, MOVE_TABLE, PoseGraph360Env
from urban_gym.families.posegraph360.oracle import PoseGraphOracle
from urban_gym.families.posegraph360.world import load_posegraph
from urban_gym.tasks.spec import TaskError, TaskSpec

TINY = "procedural:seed=3,blocks=2x2"
D = 106.0 / 35


@pytest.fixture(scope="module")
def graph(tiny_city, tmp_path_factory):
    return folder_graph(load_posegraph(TINY), tmp_path_factory.mktemp("frames"))


@pytest.fixture(scope="module")
def suite(tiny_city):
    return T.PoseGraphTaskGenerator(TINY, seed=0).suite(per_type=3)


def spoke(g, a, b):
    return next(t for t in g.trajectories if np.allclose(t.xy[0], a) and np.allclose(t.xy[-1], b))


def nav(g, start_traj, frame, goal_xy, yaw=0.0, type_="map_navigation"):
    t = g.trajectories[start_traj]
    x, y = (float(v) for v in t.xy[frame])
    return TaskSpec(
        id=f"hand-{start_traj}-{frame}",
        family="posegraph360",
        type=type_,
        difficulty="easy",
        city=TINY,
        instruction="Walk to the goal.",
        start={
            "trajectory": start_traj,
            "frame": frame,
            "x": x,
            "y": y,
            "heading": float(t.heading[frame]),
            "yaw": yaw,
            "pitch": 0.0,
        },
        goal={
            "x": goal_xy[0],
            "y": goal_xy[1],
            "radius": 10.0,
            "map": {"center": [0.0, 0.0], "extent": 300.0},
        },
        reference_images=("route_map",) if type_ == "map_navigation" else (),
    )


def make(graph, tasks, **kw):
    kw.setdefault("view_size", 32)
    return PoseGraph360Env(city=TINY, tasks=tasks, posegraph=graph, **kw)


def view_bearing(obs) -> float:
    """Bearing seen at the view's centre (mean of the 2x2 central pixels)."""
    v = obs["view"].astype(float)
    h, w = v.shape[:2]
    return pixel_bearing(v[h // 2 - 1 : h // 2 + 1, w // 2 - 1 : w // 2 + 1].mean(axis=(0, 1)))


def same_bearing(a: float, b: float, tol: float = 4.0) -> bool:
    return abs((a - b + 180.0) % 360.0 - 180.0) <= tol


def test_check_env_with_warnings_as_errors(graph, suite):
    env = gym.make(
        "UrbanGym/PoseGraph360-Procedural-v0",
        tasks=suite,
        posegraph=graph,
        view_size=32,
        render_mode="rgb_array",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    assert env.action_space.n == 42 and len(env.unwrapped.action_table) == 42
    frame = env.unwrapped.render()
    assert frame.dtype == np.uint8 and frame.shape[1] == 64  # view + reference side by side


def test_moves_and_camera_by_hand(graph):
    south = spoke(graph, (0, -106), (0, 0))
    env = make(graph, [nav(graph, south.id, 0, (0.0, 106.0))])
    obs, info = env.reset(seed=0)
    assert (info["pose"]["x"], info["pose"]["y"]) == pytest.approx((0.0, -106.0)) and info[
        "junction"
    ] >= 0
    assert same_bearing(view_bearing(obs), 0.0)
    # W MEDIUM: 3 frames = 9.09 m north
    obs, r, term, trunc, info = env.step(1)
    assert info["state"] == {"trajectory": south.id, "frame": 3}
    assert (info["pose"]["x"], info["pose"]["y"]) == pytest.approx((0.0, -106.0 + 3 * D))
    assert info["distance_to_goal_m"] == pytest.approx(212.0 - 3 * D)
    # W LARGE: 9 more frames; W SMALL: 1 more
    _, _, _, _, info = env.step({"action": "W", "size": "LARGE"})
    _, _, _, _, info = env.step("W")
    assert info["state"]["frame"] == 13
    # A MEDIUM: camera yaw -60° -> bearing 300°, seen in the view's red channel
    obs, _, _, _, info = env.step(5)
    assert info["yaw_offset"] == -60.0 and info["pose"]["heading"] == pytest.approx(300.0)
    assert same_bearing(view_bearing(obs), 300.0)
    # D without size: +24°; D LARGE: +90°
    obs, _, _, _, info = env.step({"action": "D"})
    assert info["yaw_offset"] == -36.0
    obs, _, _, _, info = env.step({"action": "look_right", "size": "L"})
    assert info["yaw_offset"] == 54.0 and same_bearing(view_bearing(obs), 54.0)
    # Q / E tilt by 24° without a size (as A / D turn), S resets the view
    _, _, _, _, info = env.step("Q")
    assert info["pitch"] == 24.0
    _, _, _, _, info = env.step("S")
    assert (info["yaw_offset"], info["pitch"]) == (0.0, 0.0)
    assert info["state"]["frame"] == 13  # looking does not move
    assert info["invalid_actions"] == 0


def test_pitch_limits_are_masked(graph):
    south = spoke(graph, (0, -106), (0, 0))
    env = make(graph, [nav(graph, south.id, 5, (0.0, 106.0))])
    obs, _ = env.reset(seed=0)
    for _ in range(4):  # 24°, 48°, 72°, then 90° (the limit stops the fourth tilt)
        obs, *_ = env.step(11)
    assert obs["action_mask"][11] == 0 and obs["action_mask"][12] == 1
    _, r, _, _, info = env.step(11)
    assert info["action_valid"] is False and "limit +90" in info["invalid_action"]
    assert r == pytest.approx(-0.01) and info["pitch"] == 90.0


def test_end_of_street_and_branches(graph):
    south = spoke(graph, (0, -106), (0, 0))
    north = spoke(graph, (0, 0), (0, 106))
    west = spoke(graph, (0, 0), (-106, 0))
    env = make(graph, [nav(graph, south.id, 30, (0.0, 106.0))])
    obs, info = env.reset(seed=0)
    assert obs["action_mask"][14:17].tolist() == [0, 0, 0]
    # a branch in the middle of a street is an invalid-action step
    obs, r, _, _, info = env.step({"action": "LEFT"})
    assert info["action_valid"] is False and "not at a junction" in info["invalid_action"]
    assert info["state"]["frame"] == 30
    # W LARGE from frame 30 stops at the last frame (35), the centre junction
    obs, _, _, _, info = env.step(2)
    assert info["state"]["frame"] == 35 and info["junction"] >= 0
    assert info["branches"] == {
        "LEFT": west.id,
        "RIGHT": spoke(graph, (0, 0), (106, 0)).id,
        "UP": north.id,
    }
    assert obs["action_mask"][14:17].tolist() == [1, 1, 1]
    # red branch arrows are drawn into the view at a junction (and only there)
    plain = make(graph, [nav(graph, south.id, 30, (0.0, 106.0))], draw_branches=False)
    plain.reset(seed=0)
    bare, *_ = plain.step(2)
    drawn = np.any(obs["view"] != bare["view"], axis=2)
    assert drawn.sum() > 20 and drawn[: 32 // 2].sum() == 0  # in the lower half only
    assert obs["view"][drawn][:, 0].max() >= 200  # red
    # W at the end of the street does not move
    _, _, _, _, info = env.step(0)
    assert info["state"]["frame"] == 35 and "choose a branch" in info["message"]
    assert info["action_valid"] is True
    # LEFT takes the west spoke; the camera looks along it (bearing 270)
    obs, _, _, _, info = env.step(14)
    assert info["state"] == {"trajectory": west.id, "frame": 0}
    assert info["pose"]["heading"] == pytest.approx(270.0) and info["yaw_offset"] == 0.0
    # turning round (A LARGE twice) makes the east spoke UP; UP then takes it
    env.step(6)
    _, _, _, _, info = env.step(6)
    assert info["branches"]["UP"] == spoke(graph, (0, 0), (106, 0)).id


def test_mask_noops_masks_what_would_not_change_the_state(graph):
    """``mask_noops=True``: W at the end of a street, the branch the agent stands on and S
    with the camera along the street are masked (so the end of one street and the start of
    the next, the same place seen the same way, differ in the mask); by default they are
    valid and do nothing."""
    south = spoke(graph, (0, -106), (0, 0))
    west = spoke(graph, (0, 0), (-106, 0))
    task = nav(graph, south.id, 30, (0.0, 106.0))
    env = make(graph, [task], mask_noops=True)
    obs, _ = env.reset(seed=0)
    assert obs["action_mask"][:3].tolist() == [1, 1, 1] and obs["action_mask"][13] == 0
    obs, _, _, _, info = env.step(2)  # to the end of the south spoke, the centre junction
    end = obs["action_mask"]
    assert info["state"]["frame"] == 35 and end[:3].tolist() == [0, 0, 0]
    assert end[14:17].tolist() == [1, 1, 1]
    _, r, _, _, info = env.step(0)
    assert info["action_valid"] is False and "W would not move" in info["invalid_action"]
    assert r == pytest.approx(-0.01)
    obs, _, _, _, info = env.step(14)  # LEFT: frame 0 of the west spoke, looking west
    assert info["state"] == {"trajectory": west.id, "frame": 0}
    start = obs["action_mask"]
    assert start[:3].tolist() == [1, 1, 1] and start[15] == 0  # UP is the west spoke itself
    assert info["branches"]["UP"] == west.id
    _, _, _, _, info = env.step(15)
    assert info["action_valid"] is False and "already on that street" in info["invalid_action"]
    obs, _, _, _, info = env.step(4)  # A SMALL: S now resets the camera
    assert obs["action_mask"][13] == 1
    default = make(graph, [task])
    obs, _ = default.reset(seed=0)
    obs, *_ = default.step(2)
    assert obs["action_mask"][:3].tolist() == [1, 1, 1] and obs["action_mask"][13] == 1


def test_bad_actions_are_invalid_steps(graph):
    south = spoke(graph, (0, -106), (0, 0))
    env = make(graph, [nav(graph, south.id, 3, (0.0, 106.0))])
    env.reset(seed=0)
    cases = [
        ({"action": "fly"}, "unknown action 'fly'"),
        ({"action": "W", "size": "HUGE"}, "size='HUGE' is not allowed"),
        ({"action": "W", "answer": "moving on"}, "size='moving on' is not allowed"),
        ({"action": "Q", "size": "HUGE"}, "size='HUGE' is not allowed"),
        (99, "outside the action table [0, 41]"),
        (ANSWER_BASE + 3, "only 1 answer option"),
        (3.5, "must be an object"),
    ]
    for k, (a, msg) in enumerate(cases, start=1):
        _, r, term, trunc, info = env.step(a)
        assert info["action_valid"] is False and msg in info["invalid_action"], (a, info)
        assert info["invalid_actions"] == k and not term and not trunc
        assert info["state"] == {"trajectory": south.id, "frame": 3}


def test_stopping_conditions(graph):
    south = spoke(graph, (0, -106), (0, 0))
    # step limit: truncation after step_limit steps
    env = make(graph, [nav(graph, south.id, 3, (0.0, 106.0))], step_limit=4)
    env.reset(seed=0)
    for a in (3, 7, 3, 7):
        _, _, term, trunc, info = env.step(a)
    assert trunc and not term and info["termination"] == "step_limit"
    assert info["metrics"]["success"] == 0.0 and info["is_success"] is False
    # stagnation: the same action 20 times without moving
    env = make(graph, [nav(graph, south.id, 3, (0.0, 106.0))])
    env.reset(seed=0)
    for k in range(20):
        _, _, term, trunc, info = env.step(3)
        assert term == (k == 19)
    assert info["termination"] == "stagnation" and info["steps"] == 20
    # away from goal: on the north spoke walking away from a goal at the south junction
    north = spoke(graph, (0, 0), (0, 106))
    env = make(graph, [nav(graph, north.id, 1, (0.0, -106.0))])
    env.reset(seed=0)
    for k in range(5):
        _, _, term, _, info = env.step(0)
        assert term == (k == 4)
    assert info["termination"] == "away_from_goal" and info["state"]["frame"] == 6
    # answer: ends the episode; success only within 10 m of the goal
    env = make(graph, [nav(graph, south.id, 32, (0.0, 0.0))])
    env.reset(seed=0)
    _, r, term, _, info = env.step(ANSWER_BASE)
    assert term and info["termination"] == "answered"
    assert info["metrics"]["distance_to_goal"] == pytest.approx(3 * D)  # 9.09 m < 10 m
    assert info["is_success"] and r == 1.0 and info["metrics"]["spl"] == 1.0
    with pytest.raises(Exception, match="after the episode ended"):
        env.step(0)


def test_reward_shaping_progress_and_charged(graph):
    """Start on the south spoke at frame 3, goal at the north junction (0, 106): the route
    is 106 - 3 D m to the centre plus 106 m up the north spoke. W LARGE earns 9 D / 100
    with either shaping; a wrong ANSWER then ends with 0, or, charged, with minus the
    distance left / 100."""
    south = spoke(graph, (0, -106), (0, 0))
    task = nav(graph, south.id, 3, (0.0, 106.0))
    left = 212.0 - 3 * D
    for shaping, end in ((False, 0.0), (True, 0.0), ("progress", 0.0), ("charged", -1.0)):
        env = make(graph, [task], reward_shaping=shaping)
        env.reset(seed=0)
        _, r, *_ = env.step(2)
        assert r == pytest.approx(0.0 if shaping is False else 9 * D / 100)
        _, r, term, _, info = env.step(ANSWER_BASE)
        assert term and not info["is_success"]
        assert r == pytest.approx(end * (left - 9 * D) / 100), shaping
    # a successful answer is never charged
    env = make(graph, [nav(graph, south.id, 32, (0.0, 0.0))], reward_shaping="charged")
    env.reset(seed=0)
    _, r, _, _, info = env.step(ANSWER_BASE)
    assert info["is_success"] and r == 1.0
    with pytest.raises(Exception, match="reward_shaping='always'"):
        make(graph, [task], reward_shaping="always")


def test_same_seed_same_observations_and_pickle(graph, suite):
    def rollout(env, seed, n=12):
        obs, _ = env.reset(seed=seed)
        agent = RandomAgent(env.action_space, seed=seed)
        out = [obs]
        for _ in range(n):
            obs, _, term, trunc, _ = env.step(agent.act(obs))
            out.append(obs)
            if term or trunc:
                break
        return out

    a, b = make(graph, suite), make(graph, suite)
    for x, y in zip(rollout(a, 7), rollout(b, 7)):
        assert x.keys() == y.keys()
        for k in x:
            assert np.array_equal(x[k], y[k]) if k != "instruction" else x[k] == y[k]
    env = make(graph, suite)
    env.reset(seed=3)
    env.step(1)
    clone = pickle.loads(pickle.dumps(env))
    for a_ in (2, 5, 0):
        o1, r1, *_, i1 = env.step(a_)
        o2, r2, *_, i2 = clone.step(a_)
        assert np.array_equal(o1["view"], o2["view"]) and r1 == r2 and i1["state"] == i2["state"]


def test_observation_contents(graph, suite):
    env = make(graph, suite, location_prior=True, reference_size=48, map_size=40)
    loc = next(t for t in suite if t.type == "localization")
    obs, info = env.reset(seed=0, options={"task_id": loc.id})
    assert obs["map"].shape == (40, 40, 3) and obs["reference"].shape == (48, 48, 3)
    assert obs["reference"].std() > 0 and obs["instruction"] == loc.instruction
    assert obs["action_mask"][ANSWER_BASE:].sum() == 25
    routes = next(t for t in suite if t.type == "map_navigation")
    obs, _ = env.reset(seed=0, options={"task_id": routes.id})
    ref = obs["reference"].astype(int)
    blue = (ref[..., 2] > 150) & (ref[..., 0] < 100)
    red = (ref[..., 0] > 150) & (ref[..., 2] < 100) & (ref[..., 1] < 100)
    assert blue.sum() > 0 and red.sum() > 0  # start and goal markers
    assert obs["action_mask"][ANSWER_BASE:].tolist() == [1] + [0] * 24
    img = next(t for t in suite if t.type == "landmark_image")
    obs, _ = env.reset(seed=0, options={"task_id": img.id})
    assert obs["reference"].std() > 0
    count = next(t for t in suite if t.type == "object_count")
    obs, _ = env.reset(seed=0, options={"task_id": count.id})
    assert not obs["reference"].any()  # no reference image for counts
    # the RL face: every table entry is a structured action the ActionSet accepts
    for i, a in enumerate(MOVE_TABLE):
        assert env.unwrapped.action_index(a) == i
    assert env.unwrapped.action_index({"action": "ANSWER", "text": count.answer}) == (
        ANSWER_BASE + int(count.answer)
    )


def test_oracle_solves_every_task_through_both_faces(graph, suite):
    env = make(graph, suite)
    oracle = PoseGraphOracle()
    for t in suite:
        for face in ("structured", "index"):
            env.reset(seed=0, options={"task_id": t.id})
            oracle.reset(env)
            for _ in range(60):
                a = oracle.act(env)
                if face == "index":
                    a = env.unwrapped.action_index(a)
                _, r, term, trunc, info = env.step(a)
                if term or trunc:
                    break
            assert info["termination"] == "answered" and info["is_success"], (t.id, face, info)
            assert info["metrics"]["score"] == 1.0 and info["invalid_actions"] == 0


def test_task_selection_errors(graph, suite, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(suite[0].to_json() + "\n{not json\n")
    with pytest.raises(TaskError, match="line 2: task is not valid JSON"):
        PoseGraph360Env(city=TINY, suite=str(bad), posegraph=graph)
    env = make(graph, suite)
    with pytest.raises(TaskError, match="task_id='nope'"):
        env.reset(options={"task_id": "nope"})
    with pytest.raises(TaskError, match="task_types"):
        make(graph, suite, task_types=["teleport"])
    with pytest.raises(TaskError, match="no such suite"):
        PoseGraph360Env(city=TINY, suite="/no/such/suite.jsonl", posegraph=graph)
    with pytest.raises(Exception, match="view_size"):
        make(graph, suite, view_size=4)


def test_real_capture_round_trip(helsinki, tmp_path):
    """Render one Helsinki street segment (both directions) to an mp4 plus a lat/lon pose
    CSV as a 360° camera would record it, import it with junction detection, and run an
    episode on the imported graph."""
    from urban_gym.families.posegraph360.world import RenderedFrames, export_capture
    from urban_gym.render.panorama import PanoramaRenderer

    g = load_posegraph("helsinki")
    t = min((t for t in g.trajectories if 40.0 <= t.length <= 60.0), key=lambda t: t.id)
    renderer = PanoramaRenderer(helsinki, width=128, height=64)
    src = RenderedFrames(lambda x, y: renderer.render(x, y).rgb)
    video, poses = export_capture(
        g.with_source(src), tmp_path, [t.id, t.reverse], kind="video", geo=helsinki.frame
    )
    assert video.suffix == ".mp4" and "lat" in poses.read_text().splitlines()[0]
    x0, y0 = (float(v) for v in t.xy[0])
    x1, y1 = (float(v) for v in t.xy[-1])
    task = TaskSpec(
        id="capture-walk",
        family="posegraph360",
        type="landmark_name",
        difficulty="easy",
        city="helsinki",
        instruction="Walk to the end of this street and answer there.",
        start={"x": x0, "y": y0, "heading": float(t.heading[0])},
        goal={"x": x1, "y": y1, "radius": 10.0},
    )
    env = PoseGraph360Env(
        city="helsinki", tasks=[task], capture=str(video), poses=str(poses), view_size=32
    )
    imported = env.unwrapped.graph
    assert len(imported.junctions) == 2 and len(imported.trajectories) == 2
    assert imported.trajectories[0].reverse == 1
    assert imported.n_frames == 2 * t.n_frames
    # lat/lon -> metres round trip: the imported frames lie on the original ones (< 1 cm)
    assert np.abs(imported.trajectories[0].xy - t.xy).max() < 0.01
    obs, info = env.reset(seed=0)
    assert obs["view"].std() > 5  # a real picture from the video, not a blank frame
    oracle = PoseGraphOracle()
    oracle.reset(env)
    for _ in range(20):
        obs, r, term, trunc, info = env.step(oracle.act(env))
        if term or trunc:
            break
    assert info["termination"] == "answered" and info["is_success"]
    assert (info["pose"]["x"], info["pose"]["y"]) == pytest.approx((x1, y1), abs=0.01)


def test_frames_rendered_on_demand_and_cached(suite):
    from urban_gym.families.posegraph360.world import RenderedFrames

    # worlds are shared per process by their settings: cache_mb=16 gives this test its own
    kw = {"tasks": suite, "view_size": 32, "pano_width": 128, "cache_mb": 16}
    env = gym.make("UrbanGym/PoseGraph360-Procedural-v0", **kw)
    src = env.unwrapped.graph.source
    assert isinstance(src, RenderedFrames)
    assert gym.make("UrbanGym/PoseGraph360-Procedural-v0", **kw).unwrapped.graph.source is src
    obs, _ = env.reset(seed=0, options={"task_index": 3})
    assert obs["view"].std() > 5  # the panorama renderer drew a street
    # a frame costs its pixels and its map of drawn tiles (one byte a tile)
    from urban_gym.families.posegraph360.world.frames import TILE_COLS, TILE_ROWS

    frame_bytes = 64 * 128 * 3 + TILE_ROWS * TILE_COLS
    # the start frame is kept apart from the frames a walk passes
    assert len(src.kept) == 1 and src.kept.nbytes == frame_bytes
    n = len(src.cache)
    env.step(0)
    assert len(src.cache) == n + 1 and src.cache.nbytes == (n + 1) * frame_bytes
    drawn = src._new
    again, _ = env.reset(seed=0, options={"task_index": 3})  # the same start frame again
    assert src._new == drawn and len(src.kept) == 1 and len(src.cache) == n + 1
    assert np.array_equal(again["view"], obs["view"])


def test_start_frames_outlive_the_frames_a_walk_passes(suite):
    # room for two frames: a walk of five pushes out all but the last two it passed, and
    # the episode's start frame stays (kept apart) for the next episode of the task
    from urban_gym.families.posegraph360.world.frames import TILE_COLS, TILE_ROWS

    two = 2 * (64 * 128 * 3 + TILE_ROWS * TILE_COLS) / 2**20
    kw = {"tasks": suite, "view_size": 32, "pano_width": 128, "cache_mb": two}
    env = gym.make("UrbanGym/PoseGraph360-Procedural-v0", **kw).unwrapped
    src = env.graph.source
    env.reset(seed=0, options={"task_index": 3})
    start = env.graph.position(env.state)
    for _ in range(5):
        env.step(0)  # W SMALL: the next frame
    assert len(src.cache) == 2 and len(src.kept) == 1
    assert (round(start[0], 2), round(start[1], 2)) in src.kept
    drawn = src._new
    env.reset(seed=0, options={"task_index": 3})
    env.step(env.action_index({"action": "D", "size": "LARGE"}))  # a new view of the start
    assert src._new == drawn  # its frame was not drawn again


def test_views_are_fresh_arrays_even_when_repeated(suite):
    env = gym.make(
        "UrbanGym/PoseGraph360-Procedural-v0", tasks=suite, view_size=32, pano_width=128
    ).unwrapped
    obs, _ = env.reset(seed=0, options={"task_index": 3})
    first = obs["view"].copy()
    obs["view"][:] = 0  # an agent writing into its observation
    a = env.action_index({"action": "D", "size": "LARGE"})
    b = env.action_index({"action": "A", "size": "LARGE"})
    env.step(a)
    again, *_ = env.step(b)  # the turn undone: the same view as at the start
    assert np.array_equal(again["view"], first) and again["view"].flags.writeable


def test_pluggable_answer_judge(graph, suite):
    rel = next(t for t in suite if t.type == "relational")
    strict = make(graph, [rel])
    strict.reset(seed=0)
    _, r, _, _, info = strict.step({"action": "ANSWER", "text": "the shop with the red sign"})
    assert r == 0.0 and not info["is_success"]
    lenient = make(graph, [rel], answer_judge=lambda prediction, names: "red sign" in prediction)
    lenient.reset(seed=0)
    _, r, _, _, info = lenient.step({"action": "ANSWER", "text": "the shop with the red sign"})
    assert r == 1.0 and info["is_success"] and info["metrics"]["fuzzy_match"] == 1.0


def test_map_markers_reveal_only_what_the_task_shows(graph, suite):
    """A map may show a map-navigation task's start and goal and the localization grid,
    never the goal of a landmark search (that is what the agent must find)."""
    env = make(graph, suite)
    by_type = {t.type: t for t in suite}
    env.reset(seed=0, options={"task_id": by_type["map_navigation"].id})
    m = env.map_markers()
    goal = by_type["map_navigation"].goal
    assert m.goal == (goal["x"], goal["y"]) and m.start is not None
    env.reset(seed=0, options={"task_id": by_type["localization"].id})
    m = env.map_markers()
    assert m.grid is not None and m.goal is None and m.start is None
    for kind in ("landmark_name", "landmark_image", "vln", "object_count", "relational"):
        env.reset(seed=0, options={"task_id": by_type[kind].id})
        m = env.map_markers()
        assert m.goal is None and m.start is None and not m.destinations, kind


def test_the_location_map_draws_the_agent_as_a_red_arrow(graph, suite):
    """360CityArena's prompt tells the model the map marks it with a red arrow (its
    appendix B.1): the map of the current location draws it red, not the core's amber.
    """
    from urban_gym.families.posegraph360.env import LOCATION_ARROW
    from urban_gym.render.map import STYLE

    env = make(graph, suite, location_prior=True)
    env.reset(seed=0)
    img = env.location_map()
    assert (img == LOCATION_ARROW).all(axis=-1).sum() > 8
    assert not (img == STYLE["agent_fill"]).all(axis=-1).any()
    assert LOCATION_ARROW[0] > 200 and max(LOCATION_ARROW[1:]) < 60  # red


def test_rendered_panoramas_are_as_wide_as_the_view_needs():
    from urban_gym.families.posegraph360.env import view_pano_width

    # 4 x the view's width for a 90 degree view: its centre pixels meet about 1.27 panorama
    # pixels each (4 / pi); a 60 degree view needs tan(45)/tan(30) = 1.73 times more
    assert view_pano_width(84, 90.0) == 336
    assert view_pano_width(512, 90.0) == 2048
    assert view_pano_width(100, 60.0) == 694  # 4 * 100 / tan(30 deg) = 692.8 -> even 694
    assert view_pano_width(16, 90.0) == 256  # never below 256
    city = "procedural:seed=3,blocks=2x2"
    env = PoseGraph360Env(city=city, view_size=84)
    assert env._world["pano_width"] == 336
    env.reset(seed=0)
    assert env.graph.source.panorama(("t", 0), 0.0, 0.0)[0].shape == (168, 336, 3)
    assert PoseGraph360Env(city=city, view_size=84, pano_width=512)._world["pano_width"] == 512


def test_a_suite_of_several_cities_runs_each_task_in_its_own_world(tiny_city, graph):
    """Tasks of two procedural cities in one suite (what a held-out procedural split
    is): each episode runs in its task's city, a city seen before is not loaded again,
    and a pickled env comes back in the world of its current task."""
    other = "procedural:seed=4,blocks=2x2"
    a = T.PoseGraphTaskGenerator(TINY, seed=0).generate("map_navigation", 6)[:2]
    b = [
        t.replace(id=f"other-{t.id}")
        for t in T.PoseGraphTaskGenerator(other, seed=0).generate("map_navigation", 6)[:2]
    ]
    env = gym.make("UrbanGym/PoseGraph360-v0", tasks=a + b, view_size=16, pano_width=64)
    u = env.unwrapped
    oracle = PoseGraphOracle()
    views, graphs = {}, {}
    for t in (a[0], b[0], a[1], b[1]):
        obs, info = env.reset(seed=0, options={"task_id": t.id})
        assert u.city_spec == t.city and u.graph.meta["city_spec"] == t.city
        assert (info["pose"]["x"], info["pose"]["y"]) == pytest.approx(
            (t.start["x"], t.start["y"]), abs=0.01
        )
        views[t.id], graphs[t.city] = obs["view"], u.graph
        oracle.reset(env)
        while True:
            obs, _, term, trunc, info = env.step(u.action_index(oracle.act(env)))
            if term or trunc:
                break
        assert info["termination"] == "answered" and info["is_success"], t.id
    assert graphs[TINY] is not graphs[other]
    obs, _ = env.reset(seed=0, options={"task_id": a[0].id})
    assert u.graph is graphs[TINY] and np.array_equal(obs["view"], views[a[0].id])
    env.reset(seed=0, options={"task_id": b[1].id})
    clone = pickle.loads(pickle.dumps(u))
    assert clone.city_spec == other and clone.graph.meta["city_spec"] == other
    assert np.array_equal(clone._observation()["view"], u._observation()["view"])
    with pytest.raises(TaskError, match="city='procedural:seed=3,blocks=2x2', but the tasks"):
        gym.make("UrbanGym/PoseGraph360-v0", city=TINY, tasks=a + b, view_size=16)
    fixed = make(graph, a)  # a given pose graph is one world: it runs its own city's tasks
    with pytest.raises(TaskError, match="runs the given pose graph"):
        fixed.reset(options={"task": b[0]})


def test_symbolic_observation_shows_where_the_streets_go(graph, suite):
    """``observation="symbolic"``: no pixels; at the centre junction, looking north from
    the end of the south spoke, LEFT / UP / RIGHT lead west / north / east (270 / 0 /
    90 degrees); in the middle of a street there are no branches."""
    from urban_gym.envs.goals import GoalModeError

    env = gym.make(
        "UrbanGym/PoseGraph360-Procedural-v0",
        tasks=suite,
        posegraph=graph,
        observation="symbolic",
        goal="vector",
    )
    assert sorted(env.observation_space.spaces) == [
        "action_mask",
        "branch_bearings",
        "goal_vector",
        "heading",
        "instruction",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    south = spoke(graph, (0, -106), (0, 0))
    env = make(graph, [nav(graph, south.id, 30, (0.0, 106.0))], observation="symbolic")
    obs, _ = env.reset(seed=0)
    assert obs["branch_bearings"].tolist() == [0.0, 0.0, 0.0]
    assert obs["heading"][0] == pytest.approx(0.0, abs=1e-4)
    obs, *_ = env.step(2)  # to the centre junction
    assert obs["branch_bearings"] == pytest.approx([270.0, 0.0, 90.0], abs=1e-3)
    obs, *_ = env.step(7)  # D: camera +24 degrees; the sectors turn with it
    assert obs["heading"][0] == pytest.approx(24.0)
    assert obs["branch_bearings"] == pytest.approx([270.0, 0.0, 90.0], abs=1e-3)
    assert env.render_mode is None and env._frame().shape[0] > 32  # frames still drawn
    with pytest.raises(GoalModeError, match="observation='symbolic' renders no views"):
        make(graph, suite, observation="symbolic", goal="image")
    with pytest.raises(Exception, match="observation='pixels'"):
        make(graph, suite, observation="pixels")
    with pytest.raises(Exception, match="location_prior"):
        make(graph, suite, observation="symbolic", location_prior=True)


def _obs_equal(a, b):
    return a.keys() == b.keys() and all(
        a[k] == b[k] if k == "instruction" else np.array_equal(a[k], b[k]) for k in a
    )


@pytest.mark.parametrize("observation", ["images", "symbolic"])
def test_the_end_of_a_street_and_the_start_of_the_next_look_the_same(graph, observation):
    """At the centre junction, looking north: at the last frame of the south spoke (W does
    nothing, UP takes the north spoke) and at frame 0 of the north spoke (W walks, UP does
    nothing) the observation is the same -- unless ``mask_noops`` masks what does nothing."""
    south = spoke(graph, (0, -106), (0, 0))
    north = spoke(graph, (0, 0), (0, 106))
    for noops in (False, True):
        kw = {"observation": observation, "goal": "vector", "mask_noops": noops}
        env = make(graph, [nav(graph, south.id, 35, (0.0, 106.0))], **kw)
        end, _ = env.reset(seed=0)
        start, *_, info = env.step(15)  # UP
        assert info["state"] == {"trajectory": north.id, "frame": 0}
        assert _obs_equal(end, start) != noops
        if noops:
            assert end["action_mask"][2] == 0 and start["action_mask"][2] == 1


def greedy(obs):
    """A memoryless rule on the goal vector and the mask: ANSWER under 18 m; W LARGE while
    W moves; at the end of a street the branch nearest the goal's bearing, or turn round."""
    gv, m = obs["goal_vector"], obs["action_mask"]
    rel = np.degrees(np.arctan2(gv[0], gv[1]))  # goal bearing relative to the camera
    if 10 * np.expm1(gv[2] * np.log1p(200.0)) < 18.0:
        return ANSWER_BASE
    if m[2]:
        return 2
    branches = {14: -90.0, 15: 0.0, 16: 90.0}
    best = min((a for a in branches if m[a]), key=lambda a: abs(rel - branches[a]), default=None)
    if best is None or (abs(rel - branches[best]) > 60 and abs(rel) > 100):
        return 6  # A LARGE: look for the branch behind
    return best


def test_a_greedy_rule_on_the_goal_vector_solves_held_out_tasks_with_mask_noops():
    """With ``mask_noops`` the symbolic observation and the goal vector are enough for a
    memoryless rule: it solves every drawn held-out task (without it, it stagnates)."""
    spec = "procedural:blocks=3x3-5x5,split=test,cities=4,block_size=45"
    kw = {"suite": spec, "observation": "symbolic", "goal": "vector"}
    for noops, want in ((True, {"answered"}), (False, {"stagnation"})):
        env = gym.make("UrbanGym/PoseGraph360-v0", mask_noops=noops, **kw)
        ends = []
        for s in range(10):
            obs, _ = env.reset(seed=s)
            while True:
                obs, _, term, trunc, info = env.step(greedy(obs))
                if term or trunc:
                    break
            ends.append((info["termination"], info["is_success"]))
        assert {t for t, _ in ends} == want and all(ok for _, ok in ends) == noops, ends


def test_an_env_given_another_frame_source_draws_from_it(suite):
    from urban_gym.families.posegraph360.world import RenderedFrames

    env = gym.make(
        "UrbanGym/PoseGraph360-Procedural-v0", tasks=suite, view_size=32, pano_width=128
    ).unwrapped
    first, _ = env.reset(seed=0, options={"task_index": 3})
    grey = np.full((64, 128, 3), 77, np.uint8)
    env.graph = env.graph.with_source(RenderedFrames(lambda x, y: grey))
    again, _ = env.reset(seed=0, options={"task_index": 3})
    # the same task and camera, but the new source's pixels (a junction's arrows aside),
    # not the views kept for the old one
    assert not np.array_equal(again["view"], first["view"])
    assert (again["view"] == 77).all(axis=2).mean() > 0.5
