"""The episode record."""

from __future__ import annotations

import json

import pytest

from tests.wrappers.recording_env import RecordingEnv, RecordingOracle
from urban_gym.wrappers.episode_metrics import EpisodeMetrics


def run_oracle(env, seed):
    obs, info = env.reset(seed=seed)
    oracle = RecordingOracle()
    oracle.reset(env)
    while True:
        obs, r, term, trunc, info = env.step(oracle.act(env))
        if term or trunc:
            return info


def test_record_has_every_step_and_is_json(tmp_path):
    path = tmp_path / "episodes.jsonl"
    env = EpisodeMetrics(RecordingEnv(), path=path)
    info = run_oracle(env, seed=4)
    rec = info["episode"]
    u = env.unwrapped
    assert rec["termination"] == "arrived" and rec["is_success"] and info["metrics"]["success"] == 1
    assert rec["task"]["id"] == "rec-4" and rec["seed"] == 4
    assert rec["l"] == len(rec["steps"]) == u.steps == info["metrics"]["steps"]
    # the start pose, then one pose per step; the last is the goal
    assert len(rec["trajectory"]) == len(rec["steps"]) + 1
    gx, gy = u.xy(u.goal)
    assert rec["trajectory"][-1]["x"] == gx and rec["trajectory"][-1]["y"] == gy
    assert rec["steps"][-1]["distance_to_goal"] == 0.0
    assert [s["clock"] for s in rec["steps"]] == [float(i) for i in range(1, rec["l"] + 1)]
    assert all(s["valid"] for s in rec["steps"])
    assert json.loads(path.read_text().splitlines()[0]) == json.loads(json.dumps(rec))


def test_int_actions_are_recorded_with_their_structured_meaning():
    env = EpisodeMetrics(RecordingEnv(max_steps=3))
    env.reset(seed=0)
    env.step(4)
    env.step(99)  # out of the table: an invalid step
    *_, trunc, info = env.step(5)
    assert trunc and info["termination"] == "step_limit"
    steps = info["episode"]["steps"]
    assert (
        steps[0]["action"] == {"action": "turn", "angle": -90.0} and steps[0]["action_index"] == 4
    )
    assert not steps[1]["valid"] and "outside 0..7" in steps[1]["invalid_action"]
    assert info["metrics"]["invalid_actions"] == 1
    assert info["episode"]["truncated"] is True


def test_abort_writes_a_model_error_record(tmp_path):
    env = EpisodeMetrics(RecordingEnv(), path=tmp_path / "e.jsonl")
    env.reset(seed=1)
    env.step(4)
    rec = env.abort("model_error", "server down")
    assert rec["termination"] == "model_error" and rec["error"] == "server down"
    assert rec["l"] == 1 and not rec["is_success"]
    assert json.loads((tmp_path / "e.jsonl").read_text())["termination"] == "model_error"
    with pytest.raises(ValueError, match="not one of"):
        env.abort("exploded")
