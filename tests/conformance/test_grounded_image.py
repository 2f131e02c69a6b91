"""The strict-JSON grounding protocol's four image tasks (its "Image Task Protocols",
"BBox Reference Convention" and "Matched-context Dual Metrics" sections) on the committed
Helsinki grounded suite: the truth boxes against the renderer's instance ids, the
oracle, chance level, the protocol's own JSON example and the future-observation rule
that the box is scored in the candidate the model chose.
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import lru_cache

import numpy as np
import pytest

from urban_gym.families.posegraph360.tasks import DEFAULT_SUITES
from urban_gym.families.posegraph360.tasks.evaluate import EpisodeOutcome, evaluate
from urban_gym.families.posegraph360.tasks.grounded_image import (
    ID_SIZE,
    IMAGE_TASK_TYPES,
    MAX_FOREIGN_SHARE,
    FrameIds,
    read_choice,
)
from urban_gym.tasks.suite import load_suite

#: The most of a truth box (share of its id pixels) that another POI's sign may fill: the
#: generator's bound (MAX_FOREIGN_SHARE, 5%), checked here on an independent render.
OTHER_SIGN_TOLERANCE = MAX_FOREIGN_SHARE
#: Seed example of the protocol's output schema.
SEED_EXAMPLE = '{"answer_option_id":"A","bbox_xyxy_norm":[0.1,0.2,0.3,0.4]}'


@lru_cache(maxsize=1)
def _tasks():
    return [
        t for t in load_suite(DEFAULT_SUITES["helsinki-grounded"]) if t.type in IMAGE_TASK_TYPES
    ]


def _score(task, answer):
    return evaluate(task, EpisodeOutcome(answer=answer, position=(0.0, 0.0), steps=1))


def test_the_suite_has_about_25_of_each_image_type_in_pairs():
    by_type = defaultdict(list)
    for t in _tasks():
        by_type[t.type].append(t)
    assert {k: len(v) for k, v in by_type.items()} == {k: 25 for k in IMAGE_TASK_TYPES}
    pairs = defaultdict(list)
    for t in _tasks():
        pairs[(t.meta["pair"]["group"], t.meta["pair"]["key"])].append(t)
    for (group, _), ts in pairs.items():
        assert sorted(t.meta["pair"]["state"] for t in ts) == ["agent", "world"]
        assert len({t.difficulty for t in ts}) == 1 and len({t.goal["poi"] for t in ts}) == 1
        agent = {"position": "relative_position", "action_observation": "future_observation"}
        assert next(t.type for t in ts if t.meta["pair"]["state"] == "agent") == agent[group]


def _views_of(task):
    """(bearing, truth box) of every view a task's boxes belong to."""
    if task.type != "future_observation":
        return [(task.goal["bearing"], task.goal["bbox"])]
    return [(c["bearing"], c["box"]) for c in task.goal["candidates"].values() if c["box"]]


def test_every_truth_box_encloses_its_sign_and_little_of_another():
    from urban_gym.render.ids import sign_id
    from urban_gym.world.loader import load_city

    city = load_city("helsinki")
    by_name = {p.name: p for p in city.pois}
    others = {sign_id(p.id) for p in city.pois}
    ids_of = FrameIds(city)  # rendered afresh, not the generator's cache
    w, h = ID_SIZE
    worst = 0.0
    n = 0
    for t in _tasks():
        sid = sign_id(by_name[t.goal["poi"]].id)
        for bearing, box in _views_of(t):
            ids = ids_of.view(float(t.start["x"]), float(t.start["y"]), bearing)
            rows, cols = np.nonzero(ids == sid)
            assert rows.size, t.id
            x0, y0, x1, y1 = (
                round(box[0] * w),
                round(box[1] * h),
                round(box[2] * w),
                round(box[3] * h),
            )
            assert cols.min() >= x0 and cols.max() < x1 and rows.min() >= y0 and rows.max() < y1, (
                t.id
            )
            assert 0.0 <= box[0] < box[2] <= 1.0 and 0.0 <= box[1] < box[3] <= 1.0
            inside = ids[y0:y1, x0:x1]
            foreign = np.isin(inside, list(others - {sid})).mean()
            worst = max(worst, float(foreign))
            n += 1
    print(f"{n} boxes, the most another sign fills: {worst:.3f}")
    assert n >= 100
    assert worst <= OTHER_SIGN_TOLERANCE


def test_the_oracle_scores_one_on_every_metric():
    from urban_gym.families.posegraph360.env import PoseGraph360Env
    from urban_gym.families.posegraph360.oracle import PoseGraphOracle

    env = PoseGraph360Env(
        suite="helsinki-grounded", task_types=list(IMAGE_TASK_TYPES), view_size=16, pano_width=64
    )
    oracle = PoseGraphOracle()
    keys = ("option_correct", "bbox_iou", "bbox_hit", "semantic_ok", "evidence_ok", "success")
    for i, t in enumerate(env.tasks):
        env.reset(options={"task_index": i})
        oracle.reset(env)
        _, _, term, _, info = env.step(oracle.act(env))
        assert term and info["termination"] == "answered"
        assert {k: info["metrics"][k] for k in keys} == {k: 1.0 for k in keys}, t.id
    assert len(env.tasks) == 100


def test_a_random_answer_hits_the_chance_each_option_count_implies():
    rng = np.random.default_rng(7)
    hits, chance = [], []
    for t in _tasks():
        letters = list(t.goal["choices"])
        chance.append(1.0 / len(letters))
        for _ in range(40):
            hits.append(_score(t, str(rng.choice(letters)))["option_correct"])
    # 5 sectors, 4 candidates, 6 direction-distance options, 5 turns: 0.2042
    assert np.mean(chance) == pytest.approx((1 / 5 + 1 / 4 + 1 / 6 + 1 / 5) / 4)
    assert abs(np.mean(hits) - np.mean(chance)) < 0.02
    # and the truth letters spread over the options (no constant answer wins)
    for tt in IMAGE_TASK_TYPES:
        truths = [t.goal["option"] for t in _tasks() if t.type == tt]
        assert max(truths.count(k) for k in set(truths)) <= 0.7 * len(truths), tt


def test_the_seeds_json_example_parses_and_scores():
    assert read_choice(SEED_EXAMPLE) == ("A", [0.1, 0.2, 0.3, 0.4])
    task = next(t for t in _tasks() if t.type == "self_position")
    own = task.replace(goal={**task.goal, "option": "A", "bbox": [0.1, 0.2, 0.3, 0.4]})
    m = _score(own, SEED_EXAMPLE)
    assert (m["option_correct"], m["bbox_iou"], m["bbox_hit"], m["success"]) == (1, 1, 1, 1)
    # by hand: overlap 0.1 x 0.2 = 0.02 over 0.04 + 0.04 - 0.02 = 0.06 -> IoU 1/3
    shifted = own.replace(goal={**own.goal, "option": "B", "bbox": [0.2, 0.2, 0.4, 0.4]})
    m = _score(shifted, SEED_EXAMPLE)
    assert m["option_correct"] == 0 and m["bbox_iou"] == pytest.approx(1 / 3)
    assert m["bbox_hit"] == 0 and m["evidence_ok"] == 0
    # in prose, in a fence, with a synonym key, or reversed corners: the same reading
    assert _score(own, f"Sure: {SEED_EXAMPLE} done")["bbox_iou"] == 1.0
    assert _score(own, f"```json\n{SEED_EXAMPLE}\n```")["bbox_iou"] == 1.0
    assert _score(own, '{"choice": "A", "box": [0.3, 0.4, 0.1, 0.2]}')["bbox_iou"] == 1.0
    for bad in ("not json", "{}", '{"answer_option_id": 3}', '{"bbox": [0, 0, 2, 2]}', None):
        m = _score(own, bad)
        assert m["bbox_iou"] == 0.0 and m["success"] == 0.0, bad


def test_future_observation_scores_the_box_in_the_chosen_candidate():
    task = next(t for t in _tasks() if t.type == "future_observation")
    right = task.goal["option"]
    cands = task.goal["candidates"]
    other = next(k for k, c in cands.items() if k != right and c["box"])
    box_other = cands[other]["box"]
    wrong = _score(task, json.dumps({"answer_option_id": other, "bbox_xyxy_norm": box_other}))
    assert wrong["option_correct"] == 0.0 and wrong["bbox_iou"] == pytest.approx(1.0)
    invalid = json.dumps({"answer_option_id": "Z", "bbox_xyxy_norm": cands[right]["box"]})
    m = _score(task, invalid)
    assert m["option_correct"] == 0.0 and m["bbox_iou"] == 0.0
    blank = next((k for k, c in cands.items() if not c["box"]), None)
    if blank is not None:  # a candidate without the sign: no box can earn credit there
        m = _score(task, json.dumps({"answer_option_id": blank, "bbox_xyxy_norm": [0, 0, 1, 1]}))
        assert m["bbox_iou"] == 0.0
    ok = _score(task, json.dumps({"answer_option_id": right, "bbox_xyxy_norm": box_other}))
    assert ok["option_correct"] == 1.0 and ok["bbox_iou"] < 1.0


def test_a_malformed_answer_in_the_env_scores_zero_without_a_crash():
    from urban_gym.families.posegraph360.env import PoseGraph360Env

    env = PoseGraph360Env(
        suite="helsinki-grounded", task_types=["future_observation"], view_size=16, pano_width=64
    )
    obs, _ = env.reset(options={"task_index": 0})
    assert obs["reference"].any()  # the sheet of candidate images
    _, _, term, _, info = env.step({"action": "ANSWER", "text": "the second one {oops"})
    assert term and info["metrics"]["option_correct"] == 0.0 and info["metrics"]["bbox_iou"] == 0.0
