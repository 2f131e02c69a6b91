"""The grounded track's video tasks against the strict-JSON grounding protocol (seed 004:
"Video Task Protocols", "Class-aware Temporal Matching").

Ground truth is recomputed independently: the env replays each walk's script with its own
moves (W SMALL, A/D SMALL, Q/E), and labels and visibility are read from its ``info``
(pose, pitch, ``goal_visible``) frame by frame.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from urban_gym.families.posegraph360.env import PoseGraph360Env
from urban_gym.families.posegraph360.tasks import (
    DEFAULT_SUITES,
    VIDEO_TASK_TYPES,
    EpisodeOutcome,
    check_task,
    evaluate,
)
from urban_gym.families.posegraph360.tasks import video as V
from urban_gym.tasks import metrics
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.suite import load_suite

ACTIONS = {
    "W": {"action": "W", "size": "SMALL"},
    "A": {"action": "A", "size": "SMALL"},
    "D": {"action": "D", "size": "SMALL"},
    "Q": {"action": "Q"},
    "E": {"action": "E"},
}


@pytest.fixture(scope="module")
def video_tasks() -> list[TaskSpec]:
    return [
        t for t in load_suite(DEFAULT_SUITES["helsinki-grounded"]) if t.type in VIDEO_TASK_TYPES
    ]


def _score(task: TaskSpec, answer) -> dict[str, float]:
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return evaluate(task, EpisodeOutcome(answer=text, position=(0.0, 0.0)))


def test_the_suite_has_paired_video_tasks(video_tasks):
    by_type = {tt: [t for t in video_tasks if t.type == tt] for tt in VIDEO_TASK_TYPES}
    assert all(len(ts) >= 20 for ts in by_type.values()), {k: len(v) for k, v in by_type.items()}
    keys = {tt: {t.meta["pair"]["key"] for t in ts} for tt, ts in by_type.items()}
    # every behaviour walk has its visibility question (the pair of the dual metrics)
    assert keys["composite_behaviour"] == keys["atomic_behaviour"] == keys["landmark_visibility"]
    for t in video_tasks:
        state = "world" if t.type == "landmark_visibility" else "agent"
        assert t.meta["pair"]["group"] == "video" and t.meta["pair"]["state"] == state
        assert t.meta["fps"] == V.FPS and t.goal["video"]["frames"] == V.VIDEO_FRAMES
        if t.type != "landmark_visibility":
            assert 2 <= len(t.goal["behaviours"]) <= 4, t.id


def test_every_interval_agrees_with_the_replayed_walk(video_tasks):
    """Replay each walk through the env; labels from its poses, visibility from
    ``info["goal_visible"]`` at a 640x480 view: the intervals must be the task's.
    """
    vis = [t for t in video_tasks if t.type == "landmark_visibility"]
    env = PoseGraph360Env(
        tasks=vis, view_size=V.FRAME_SIZE, observation="symbolic", track_visibility=True
    )
    by_key = {t.meta["pair"]["key"]: t for t in video_tasks if t.type != "landmark_visibility"}
    checked = 0
    for i, t in enumerate(vis):
        _, info = env.reset(options={"task_index": i})
        infos = [info]
        script = t.goal["video"]["script"]
        for a in script:
            if a != "-":
                _, _, _, _, info = env.step(ACTIONS[a])
                assert info["action_valid"], (t.id, a)
            infos.append(info)
        poses = [(i["pose"]["x"], i["pose"]["y"], i["pose"]["heading"], i["pitch"]) for i in infos]
        seen = [i["goal_visible"] for i in infos]
        assert len(poses) == t.goal["video"]["frames"]
        assert V.visible_intervals(seen) == t.goal["intervals_sec"], t.id
        labels = V.step_labels(poses)
        assert all(len(ls) == 1 for ls in labels), (t.id, labels)
        for other in ("atomic_behaviour", "composite_behaviour"):
            bt = [
                u
                for u in video_tasks
                if u.type == other and u.meta["pair"]["key"] == t.meta["pair"]["key"]
            ]
            assert len(bt) == 1
            want = (
                V.atomic_intervals(labels)
                if other == "atomic_behaviour"
                else V.composite_intervals(labels)
            )
            assert bt[0].goal["behaviours"] == want, bt[0].id
        checked += 1
    assert checked == len(vis) and set(by_key) <= {t.meta["pair"]["key"] for t in vis}


def test_labels_by_hand():
    # 3 m steps at 1 fps along north; then a 30-degree turn left, a 24-degree tilt, a stop
    poses = [
        (0, 0, 0, 0),
        (0, 3, 0, 0),
        (0, 6, 0, 0),
        (0, 6, 330, 0),
        (0, 6, 0, 0),
        (0, 6, 0, 24),
        (0, 6, 0, 24),
    ]
    labels = V.step_labels(poses)
    assert [set(ls) for ls in labels] == [
        {"walk_forward"},
        {"walk_forward"},
        {"turn_left"},
        {"turn_right"},
        {"look_up"},
        {"stop"},
    ]
    assert V.atomic_intervals(labels)["walk_forward"] == [[0.0, 2.0]]
    assert V.composite_intervals(labels) == {"look_left_and_back": [[2.0, 4.0]]}
    # walking backwards is not walking forward; a slow drift is neither walk nor stop
    assert V.step_labels([(0, 3, 0, 0), (0, 0, 0, 0)]) == [frozenset()]
    assert V.step_labels([(0, 0, 0, 0), (0, 0.5, 0, 0)]) == [frozenset()]
    # visibility: frames 1-2 and 5 (last) of 6 at 1 fps
    assert V.visible_intervals([False, True, True, False, False, True]) == [[0.5, 2.5], [4.5, 5.0]]
    assert V.visible_intervals([True, False]) == [[0.0, 0.5]]


def test_the_oracle_scores_one_on_every_metric(video_tasks):
    from urban_gym.families.posegraph360.oracle import PoseGraphOracle

    env = PoseGraph360Env(
        tasks=video_tasks[:3] + video_tasks[-3:], view_size=16, pano_width=64, frame_size=(32, 24)
    )
    oracle = PoseGraphOracle()
    for i in range(len(env.tasks)):
        obs, _ = env.reset(options={"task_index": i})
        assert obs["frames"].shape == (V.VIDEO_FRAMES, 24, 32, 3) and obs["frames"].any()
        oracle.reset(env)
        _, _, term, _, info = env.step(oracle.act(env))
        m = info["metrics"]
        assert term and info["is_success"] and info["steps"] == 1
        keys = {"semantic_ok", "evidence_ok", "success", "mean_tiou"}
        keys |= (
            {"count_correct", "segment_f1"}
            if env.task.type == "landmark_visibility"
            else {"temporal_f1"}
        )
        assert all(m[k] == 1.0 for k in keys), (env.task.id, m)
    for t in video_tasks:  # the stored answers score 1 everywhere
        m = _score(t, t.answer)
        extra = {"composite_behaviour": "composite_correct", "atomic_behaviour": "atomic_f1"}
        assert m["success"] == m["evidence_ok"] == m["mean_tiou"] == 1.0, t.id
        if t.type in extra:
            assert m[extra[t.type]] == 1.0 and m["temporal_f1"] == 1.0


def _behaviour_task(tt: str, truth: dict, options: dict) -> TaskSpec:
    return TaskSpec(
        id="hand",
        family="posegraph360",
        type=tt,
        difficulty="easy",
        city="helsinki",
        instruction="?",
        start={"x": 0.0, "y": 0.0},
        answer="{}",
        goal={"options": options, "behaviours": truth},
    )


def test_seed_behaviour_example_scores_by_hand():
    seed = '{"answers":[{"option_id":"A","intervals_sec":[[0.0,1.2]]},{"option_id":"C","intervals_sec":[[3.4,5.0]]}]}'
    options = {"A": "walk_then_stop", "B": "stop_then_walk", "C": "look_up_and_back"}
    # exact truth: everything 1
    t = _behaviour_task(
        "composite_behaviour",
        {"walk_then_stop": [[0.0, 1.2]], "look_up_and_back": [[3.4, 5.0]]},
        options,
    )
    m = _score(t, seed)
    assert m["composite_correct"] == m["temporal_f1"] == m["mean_tiou"] == 1.0
    # truth C at [3.0, 5.0]: tIoU 1.6/2.0 = 0.8 (match); truth A at [0.0, 3.0]: 1.2/3 = 0.4 (no match)
    t = _behaviour_task(
        "composite_behaviour",
        {"walk_then_stop": [[0.0, 3.0]], "look_up_and_back": [[3.0, 5.0]]},
        options,
    )
    m = _score(t, seed)
    assert m["composite_correct"] == 1.0 and m["temporal_f1"] == pytest.approx(0.5)
    assert m["mean_tiou"] == pytest.approx((0.4 + 0.8) / 2)
    assert m["evidence_ok"] == 1.0 and m["semantic_ok"] == 1.0
    # atomic: truth {A, B}: label-set F1 2*1/(2+2) = 0.5; intervals: 1 TP of 2 + 2 -> 0.5
    t = _behaviour_task(
        "atomic_behaviour",
        {"walk_then_stop": [[0.0, 1.2]], "stop_then_walk": [[2.0, 3.0]]},
        options,
    )
    m = _score(t, seed)
    assert m["atomic_f1"] == pytest.approx(0.5) and m["temporal_f1"] == pytest.approx(0.5)
    assert m["semantic_ok"] == 0.0 and m["success"] == 0.0


def test_one_to_one_matching_by_hand():
    options = {"A": "turn_left", "B": "turn_right"}
    t = _behaviour_task("atomic_behaviour", {"turn_left": [[0.0, 2.0]]}, options)
    # two predictions on one truth: one TP, one FP -> F1 = 2*1/(2+1)
    two = {"answers": [{"option_id": "A", "intervals_sec": [[0.0, 2.0], [0.2, 2.0]]}]}
    assert _score(t, two)["temporal_f1"] == pytest.approx(2 / 3)
    assert metrics.temporal_f1([[0.0, 2.0], [0.2, 2.0]], [[0.0, 2.0]]) == pytest.approx(2 / 3)
    # the right interval under the wrong class: an FP (B) and an FN (A) -> F1 = 0
    wrong = {"answers": [{"option_id": "B", "intervals_sec": [[0.0, 2.0]]}]}
    m = _score(t, wrong)
    assert m["temporal_f1"] == 0.0 and m["mean_tiou"] == 0.0 and m["atomic_f1"] == 0.0
    # an unknown option id is an extra class: its interval is a false positive
    extra = {
        "answers": [
            {"option_id": "A", "intervals_sec": [[0.0, 2.0]]},
            {"option_id": "Z", "intervals_sec": [[3, 4]]},
        ]
    }
    assert _score(t, extra)["temporal_f1"] == pytest.approx(2 / 3)
    # reversed ends are put in order; unreadable text scores 0
    assert (
        _score(t, {"answers": [{"option_id": "A", "intervals_sec": [[2.0, 0.0]]}]})["temporal_f1"]
        == 1.0
    )
    m = _score(t, "no json here")
    assert m["temporal_f1"] == m["atomic_f1"] == m["success"] == 0.0


def test_seed_visibility_example_scores_by_hand():
    seed = '{"visible_count":2,"visible_intervals_sec":[[0.0,9.1],[17.7,26.8]]}'
    t = TaskSpec(
        id="hand",
        family="posegraph360",
        type="landmark_visibility",
        difficulty="easy",
        city="helsinki",
        instruction="?",
        start={"x": 0.0, "y": 0.0},
        answer="{}",
        goal={"intervals_sec": [[0.0, 9.1], [17.7, 26.8]]},
    )
    m = _score(t, seed)
    assert m["count_correct"] == m["segment_f1"] == m["mean_tiou"] == m["success"] == 1.0
    # truth: one interval [0, 9.1]; the second prediction is an extra (FP); count wrong
    t1 = t.replace(goal={"intervals_sec": [[0.0, 9.1]]})
    m = _score(t1, seed)
    assert m["count_correct"] == 0.0 and m["segment_f1"] == pytest.approx(2 / 3)
    assert m["mean_tiou"] == pytest.approx(0.5) and m["evidence_ok"] == 1.0
    # count and intervals are scored independently: a right count with shifted intervals
    shifted = {"visible_count": 2, "visible_intervals_sec": [[5.0, 14.1], [22.7, 31.8]]}
    m = _score(t, shifted)  # tIoU 4.1/14.1 < 0.5 each
    assert m["count_correct"] == 1.0 and m["segment_f1"] == 0.0 and m["evidence_ok"] == 0.0


def test_old_type_name_gets_a_clear_error():
    t = TaskSpec(
        id="old",
        family="posegraph360",
        type="landmark_intervals",
        difficulty="easy",
        city="helsinki",
        instruction="?",
        start={"x": 0.0, "y": 0.0},
        answer="{}",
    )
    with pytest.raises(TaskError, match="renamed 'landmark_visibility'"):
        check_task(t)


def test_frames_show_the_walk(video_tasks):
    """The frames observation is the walk seen frame by frame: a turn changes the frame,
    a stop repeats it.
    """
    t = next(
        t
        for t in video_tasks
        if "-" in t.goal["video"]["script"] and "A" in t.goal["video"]["script"]
    )
    env = PoseGraph360Env(tasks=[t], view_size=16, pano_width=128, frame_size=(32, 24))
    obs, _ = env.reset()
    frames = obs["frames"]
    for k, a in enumerate(t.goal["video"]["script"]):
        same = np.array_equal(frames[k], frames[k + 1])
        assert same == (a == "-"), (t.id, k, a)
