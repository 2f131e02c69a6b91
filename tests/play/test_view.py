"""The page state is the agent's observation and nothing more."""

from __future__ import annotations

import base64
import json

import cv2
import gymnasium as gym
import numpy as np
import pytest

import urban_gym  # noqa: F401
from urban_gym.play.view import compass_text, data_url, page_state


def _decode(url: str) -> np.ndarray:
    head, b64 = url.split(",", 1)
    assert head == "data:image/jpeg;base64"
    buf = np.frombuffer(base64.b64decode(b64), np.uint8)
    return cv2.imdecode(buf, cv2.IMREAD_COLOR)[:, :, ::-1]


def test_data_url_round_trip_keeps_the_colour():
    img = np.zeros((16, 24, 3), np.uint8)
    img[:] = (200, 30, 60)
    back = _decode(data_url(img))
    assert back.shape == (16, 24, 3)
    assert np.abs(back.astype(int) - (200, 30, 60)).max() <= 6
    assert compass_text(90.0) == "90° (east)" and compass_text(-45) == "315° (north-west)"


def test_posegraph_page_holds_the_view_and_reference_but_no_answer():
    env = gym.make("UrbanGym/PoseGraph360-Procedural-v0")
    obs, info = env.reset(seed=0, options={"task_id": "localization-easy-000"})
    state = page_state(env, obs)
    assert [i["name"] for i in state["images"]] == ["view", "reference"]
    assert state["images"][0]["width"] == obs["view"].shape[1] == 128
    assert state["texts"][0]["text"] == obs["instruction"]
    # answer heads are masked beyond the task's options, branches away from junctions
    assert "ANSWER" in state["available"] and "W" in state["available"]
    text = json.dumps(state)
    task = env.unwrapped.task
    assert str(task.answer) not in text  # the ground truth 'x:2 y:4'
    assert "pose" not in text and "distance" not in text
    # a landmark task has a black reference (none): it is left out
    obs, _ = env.reset(seed=0, options={"task_id": "vln-easy-000"})
    assert not obs["reference"].any()
    assert [i["name"] for i in page_state(env, obs)["images"]] == ["view"]
    env.close()


def test_streetgraph_page_lists_the_unmasked_options_with_bearings():
    env = gym.make("UrbanGym/StreetGraph-v0", image_size=64)
    obs, _ = env.reset(seed=0, options={"task_index": 0})
    state = page_state(env, obs)
    mask = obs["action_mask"]
    n = int(mask[:-1].sum())
    assert [o["index"] for o in state["options"]] == [i for i in range(n) if mask[i]]
    for o in state["options"]:
        assert o["bearing"] == pytest.approx(float(obs["bearings"][o["index"]]), abs=0.05)
        assert _decode(o["src"]).shape == (64, 64, 3)
    assert state["heading"] == compass_text(float(obs["heading"][0]))
    assert state["images"] == [] and state["available"] == ["go"]  # origin-destination: no stop
    env.close()


def test_citywalk_page_shows_status_notice_map_mode_and_letters():
    env = gym.make("UrbanGym/CityWalk-v0", task_types=["VR"])
    obs, _ = env.reset(seed=0, options={"task_index": 0})
    u = env.unwrapped
    state = page_state(env, obs)
    names = [t["name"] for t in state["texts"]]
    assert names[:2] == ["instruction", "status"]
    assert state["letters"] == []  # the letters come in the answer turn, after terminate
    assert state["map_mode"] is False and "move" in state["available"]
    obs, *_ = env.step({"action": "move", "direction": "up", "duration": 1})  # invalid
    state = page_state(env, obs)
    assert state["texts"][-1]["name"] == "notice" and "Invalid action" in state["texts"][-1]["text"]
    obs, *_ = env.step({"action": "open_map"})
    state = page_state(env, obs)
    assert state["map_mode"] is True and "map_pan" in state["available"]
    assert "move" not in state["available"]
    obs, *_ = env.step({"action": "terminate"})  # ends exploration: the answer turn
    state = page_state(env, obs)
    assert state["letters"] == ["A", "B", "C", "D"][: len(u.task.options)]
    assert state["available"] == ["answer"]
    env.close()
